package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestExplainAttentionOrder: --explain names an attention kernel's
// rounding order, which the shapes alone decide: the full-row order below
// ir.AttentionOnlineFrom keys, the online order (key blocks of
// ir.AttentionBlock) from it on.
func TestExplainAttentionOrder(t *testing.T) {
	from := ir.AttentionOnlineFrom
	if from > 1<<14 {
		t.Skipf("the online order is off by default (ir.AttentionOnlineFrom = %d)", from)
	}
	for _, c := range []struct {
		keys int
		want string
	}{
		{from - 1, "order  full rows"},
		{from, fmt.Sprintf("order  online softmax, key blocks of %d", ir.AttentionBlock)},
	} {
		t.Run(fmt.Sprint(c.keys), func(t *testing.T) {
			g := irtest.AttentionCase{S: 2, T: c.keys, D: 4, E: 4, Scale: 0.5}.Graph(1)
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
