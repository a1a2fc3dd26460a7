package glsl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen"
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
	cases = append(append(cases, irtest.Typed16()...), irtest.TypedU64()...) // refused by name: int16, uint16 and uint64 are not the GLSL typed path's
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

// TestTypedReduceLoopBound: a typed reduction's pass is made up to the
// leaves an output whose fragment loops stay within ir.LoopBudget
// (codegen.TypedSerialLeaves: its output word's elements, each a loop
// over the leaves) and refused one leaf past it, unsupported, naming the
// node and the bound; before, any count was made, and llvmpipe would end
// the loops of a larger one silently after 65535 iterations. Those made
// compile with glslangValidator where it is installed.
func TestTypedReduceLoopBound(t *testing.T) {
	var paths []string
	dir := t.TempDir()
	for _, c := range []struct {
		dt ir.DType
		op ir.Op
	}{{ir.F32, ir.OpSum}, {ir.F16, ir.OpSum}, {ir.BF16, ir.OpMax}, {ir.I64, ir.OpSum}, {ir.I32, ir.OpProd}, {ir.U8, ir.OpMax}, {ir.I8, ir.OpSum}} {
		s := codegen.TypedSerialLeaves(c.dt, c.dt)
		for _, leaves := range []int{s, s + 1} {
			for _, rows := range []int{1, 3} { // one output, and several sharing words
				b := ir.NewBuilder()
				var x ir.Tensor
				if c.dt.IsFloat() {
					x = b.TypedInput("x", c.dt, ir.Shape{rows, leaves}, make([]float32, rows*leaves), nil)
				} else {
					x = b.TypedInput("x", c.dt, ir.Shape{rows, leaves}, nil, make([]int64, rows*leaves))
				}
				var y ir.Tensor
				switch c.op { // keepdims: the reduction node is the output
				case ir.OpSum:
					y = x.SumAxes(true, 1)
				case ir.OpMax:
					y = x.MaxAxes(true, 1)
				case ir.OpProd:
					y = x.ProdAxes(true, 1)
				}
				b.Output("y", y)
				g, err := b.Build(ir.Limits{MaxElements: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%v of %v over %d leaves, %d rows", c.op, c.dt, leaves, rows)
				ps, err := TypedNode(g, int(y.ID()))
				if leaves == s {
					if err != nil {
						t.Errorf("%s: %v", what, err)
						continue
					}
					path := filepath.Join(dir, fmt.Sprintf("bound%d.frag", len(paths)))
					if err := os.WriteFile(path, []byte(ps.Source), 0o644); err != nil {
						t.Fatal(err)
					}
					paths = append(paths, path)
					continue
				}
				var e *ir.Error
				if !errors.As(err, &e) || e.Code != ir.CodeUnsupported || e.Node != int(y.ID()) || !strings.Contains(e.Error(), fmt.Sprintf("at most %d leaves", s)) {
					t.Errorf("%s: %v, want unsupported naming node %d and the bound %d", what, err, y.ID(), s)
				}
			}
		}
	}
	bin, err := exec.LookPath("glslangValidator")
	if err != nil {
		return
	}
	if out, err := exec.Command(bin, append([]string{"-S", "frag"}, paths...)...).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
