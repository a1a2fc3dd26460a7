package glsl

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestTypedPassesCompile: the typed pass of every node of irtest's typed
// suites (every op over every dtype, the limits, the faults) and of random
// typed graphs compiles with the Khronos reference compiler as GLSL ES
// 3.00, or is refused with unsupported naming its node.
func TestTypedPassesCompile(t *testing.T) {
	bin, err := exec.LookPath("glslangValidator")
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_GLSL") != "" {
			t.Fatal("glslangValidator not found and GPUCC_REQUIRE_GLSL is set")
		}
		t.Skip("glslangValidator not found (Debian: glslang-tools)")
	}
	dir := t.TempDir()
	cases := append(append(irtest.TypedLimits(), irtest.TypedFaults()...), irtest.Typed()...)
	for seed := range 8 {
		cases = append(cases, irtest.Case{Name: "random", Graph: irtest.RandomTyped(uint64(seed), 12)})
	}
	seen := map[string]bool{}
	compiled, refused := 0, 0
	var paths []string
	for _, c := range cases {
		for i, n := range c.Graph.Nodes {
			if n.Op == ir.OpInput {
				continue
			}
			ps, err := TypedNode(c.Graph, i)
			if err != nil {
				if e, ok := err.(*ir.Error); !ok || e.Code != ir.CodeUnsupported || e.Node != i {
					t.Fatalf("%s node %d: %v", c.Name, i, err)
				}
				refused++
				continue
			}
			if seen[ps.Source] {
				continue
			}
			seen[ps.Source] = true
			path := filepath.Join(dir, fmt.Sprintf("typed%d.frag", compiled))
			if err := os.WriteFile(path, []byte(ps.Source), 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, path)
			compiled++
		}
	}
	if out, err := exec.Command(bin, append([]string{"-S", "frag"}, paths...)...).CombinedOutput(); err != nil { // one process for all
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%d distinct typed passes compile, %d nodes refused", compiled, refused)
}
