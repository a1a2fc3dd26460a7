package runtime

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestWGSLParams checks that the parameter block rebuilt on a codegen cache
// hit is the one wgsl.Generate makes, for every suite and random graph.
func TestWGSLParams(t *testing.T) {
	cases := irtest.Suite()
	for seed := range 40 {
		cases = append(cases, irtest.Case{Name: fmt.Sprint("random/", seed), Graph: irtest.Random(uint64(seed), 12)})
	}
	for _, c := range cases {
		p, _, err := passes.Compile(c.Graph, passes.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for i := range p.Kernels {
			s, err := wgsl.Generate(p, &p.Kernels[i])
			if err != nil {
				t.Fatal(err)
			}
			if got := wgslParams(&p.Kernels[i]); !bytes.Equal(got, s.Params) {
				t.Errorf("%s kernel %s: params\n got %x\nwant %x", c.Name, p.Kernels[i].Name, got, s.Params)
			}
		}
	}
}

// TestProgramKeyIgnoresConstants: graphs that differ only in constants
// and input data share generated code; a different shape does not.
func TestProgramKeyIgnoresConstants(t *testing.T) {
	a, b, c := compileChain(t, 100, 2), compileChain(t, 100, 3), compileChain(t, 101, 2)
	if ProgramKey("wgsl", a) != ProgramKey("wgsl", b) {
		t.Error("constants changed the key")
	}
	if ProgramKey("wgsl", a) == ProgramKey("wgsl", c) {
		t.Error("a different shape kept the key")
	}
	if ProgramKey("wgsl", a) == ProgramKey("c", a) {
		t.Error("the target is not part of the key")
	}
}

// compileChain lowers relu((x*y + k) * k) over n elements.
func compileChain(t *testing.T, n int, k float32) *ir.Program {
	t.Helper()
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{n}, irtest.Values(1, n, 3))
	y := b.Input(ir.Shape{n}, irtest.Values(2, n, 3))
	b.Output("out", x.Mul(y).AddScalar(k).MulScalar(k).Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
