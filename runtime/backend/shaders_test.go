package backend

import (
	"slices"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

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

// TestProgramKeyCoversBlocks: a sum cut into blocks is different code from
// the whole sum, so it must not share its key.
func TestProgramKeyCoversBlocks(t *testing.T) {
	b := ir.NewBuilder()
	b.Output("s", b.Input(ir.Shape{1 << 16}, irtest.Values(1, 1<<16, 3)).Sum())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := *p.Program() // the sum cut into 16 blocks, each written to its own element
	q.Kernels, q.Buffers = slices.Clone(q.Kernels), slices.Clone(q.Buffers)
	q.Kernels[0].Blocks = 16
	q.Buffers[q.Kernels[0].Outputs[0]].Len, q.Buffers[q.Kernels[0].Outputs[0]].Shape = 16, ir.Shape{16}
	split, err := ir.Seal(&q)
	if err != nil {
		t.Fatal(err)
	}
	if ProgramKey("wgsl", p) == ProgramKey("wgsl", split) {
		t.Error("Blocks is not part of the key")
	}
}

// compileChain lowers relu((x*y + k) * k) over n elements.
func compileChain(t *testing.T, n int, k float32) *ir.Sealed {
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
