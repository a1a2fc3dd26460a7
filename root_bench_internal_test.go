package gpucc

import (
	"context"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// nullExe is a backend executable that runs nothing: each kept output
// gets one reused buffer, each host output is left as it is.
type nullExe struct{ kept nullBuf }

type nullBuf struct{ n int }

func (b *nullBuf) Len() int { return b.n }
func (*nullBuf) Release()   {}

func (x *nullExe) Run(_ context.Context, call *backend.Call) error {
	for i := range call.Dests {
		if call.Dests[i].Keep {
			call.Dests[i].Buf = &x.kept
		}
	}
	return nil
}
func (*nullExe) Release() {}

// BenchmarkRootRun is the root layer's own cost of a warm RunWith of
// relu(a*b+c) over 1024 on resident inputs keeping its output, its
// backend's run a no-op (nullExe): checking the inputs and options,
// making the call and the Result, adopting the kept tensor, the timings.
// It runs on cpu's runtime, whose tensors the inputs are.
func BenchmarkRootRun(b *testing.B) {
	const n = 1024
	zero := make([]float32, n)
	bl := ir.NewBuilder()
	x, y, z := bl.Input(ir.Shape{n}, zero), bl.Input(ir.Shape{n}, zero), bl.Input(ir.Shape{n}, zero)
	bl.Output("out", x.Mul(y).Add(z).Relu())
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rt, err := Open(ctx, Options{Backend: "cpu"})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		b.Fatal(err)
	}
	in := Inputs{}
	for _, name := range []string{"input0", "input1", "input2"} {
		d, err := rt.Upload(ctx, ir.Shape{n}, zero)
		if err != nil {
			b.Fatal(err)
		}
		in[name] = d
	}
	real := exe.exe
	exe.exe = &nullExe{kept: nullBuf{n}}
	defer func() { exe.exe = real }()
	keep := RunOptions{Keep: []string{"out"}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := exe.RunWith(ctx, in, keep)
		if err != nil {
			b.Fatal(err)
		}
		rt.mu.Lock()
		res.Kept["out"].buf = nil // the null buffer is not the runtime's to release
		delete(rt.tensors, res.Kept["out"])
		rt.live -= res.Kept["out"].Bytes()
		rt.mu.Unlock()
	}
}
