package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/aot"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestExplainAttentionOrder: --explain names an attention kernel's
// rounding order, which the shapes alone decide: the full-row order below
// ir.AttentionOnlineFrom keys and for heads wider than
// ir.AttentionOnlineMaxHead, the online order (key blocks of
// ir.AttentionBlock) otherwise.
func TestExplainAttentionOrder(t *testing.T) {
	from := ir.AttentionOnlineFrom
	if from > 1<<14 {
		t.Skipf("the online order is off by default (ir.AttentionOnlineFrom = %d)", from)
	}
	online := fmt.Sprintf("order  online softmax, key blocks of %d", ir.AttentionBlock)
	wide := ir.AttentionOnlineMaxHead + 4
	cases := []struct {
		name       string
		keys, head int
		want       string
	}{
		{"first online", from, 4, online},
		{"wide head", max(from, 8), wide, "order  full rows"},
	}
	if from > 1 {
		cases = append(cases, struct {
			name       string
			keys, head int
			want       string
		}{"last full-row", from - 1, 4, "order  full rows"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := irtest.AttentionCase{S: 2, T: c.keys, D: c.head, E: c.head, Scale: 0.5}.Graph(1)
			path := filepath.Join(t.TempDir(), "attention.json")
			if err := os.WriteFile(path, ir.Encode(g), 0o644); err != nil {
				t.Fatal(err)
			}
			out, v, code := gpucc(t, "", "build", path, "-o", t.TempDir(), "--explain", "--targets", "wgsl")
			if code != 0 {
				t.Fatalf("exit %d: %s %v", code, out, v)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("--explain lacks %q:\n%s", c.want, out)
			}
		})
	}
}

// TestExplainAttentionSplit: under ir.AttentionSplit (a knob the
// benchmarks set in-process, so the build runs here, not in a child),
// --explain shows the split order's two kernels: the parts, each in
// workgroups of its own, and their combine.
func TestExplainAttentionSplit(t *testing.T) {
	old := ir.AttentionSplit
	ir.AttentionSplit = 3
	t.Cleanup(func() { ir.AttentionSplit = old })
	g := irtest.AttentionCase{S: 2, T: 100, D: 8, E: 8, Scale: 0.5}.Graph(1)
	b, err := aot.Build(g, aot.Options{GraphName: "attention.json", Targets: []string{"wgsl"}, Limits: ir.DefaultLimits()})
	if err != nil {
		t.Fatal(err)
	}
	out := explainPlan(b.Plan.Program, b.Manifest)
	for _, want := range []string{"in 2 parts of 64 keys combined", "parts  each part of each row tile a workgroup", "attention_combine", "order  the split order's combine of 2 parts"} {
		if !strings.Contains(out, want) {
			t.Errorf("--explain lacks %q:\n%s", want, out)
		}
	}
}
