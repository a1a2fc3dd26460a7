//go:build cgo && !js

package webgpu

import (
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/runtime/backend"
)

// TestRunQueuedReleases chains 100 queued runs of relu(a*b+c), each
// feeding its kept output to the next as a and releasing the one before,
// on a pool that keeps nothing: every buffer a run gives back is released
// to wgpu while the queued kernels may still use it (wgpu keeps it alive
// until they are done), and every run allocates afresh. The last output
// is cpuref's chain, bit for bit.
func TestRunQueuedReleases(t *testing.T) {
	const n, steps = 1000, 100
	d := openPooled(t, -1)
	ctx := context.Background()
	exe := reluMulAdd(t, d, n)
	e := exe.(*executable)
	p := e.p
	x, b, c := irtest.Values(1, n, 3), irtest.Values(2, n, 1), irtest.Values(3, n, 1)
	for i := range b {
		b[i] /= 4 // |b| ≤ 3/4: the chain stays finite
	}
	want := x
	for range steps { // cpuref, step by step
		bl := ir.NewBuilder()
		a := bl.Input(ir.Shape{n}, want)
		bl.Output("y", a.Mul(bl.Input(ir.Shape{n}, b)).Add(bl.Input(ir.Shape{n}, c)).Relu())
		g, err := bl.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		want = cpuref.Eval(g)[g.Outputs[0].ID]
	}
	upload := func(data []float32) backend.Buffer {
		buf, err := d.Alloc(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Upload(ctx, buf, data); err != nil {
			t.Fatal(err)
		}
		return buf
	}
	var in []int // the program's input buffers, in the graph's order: a, b, c
	for i, pb := range p.Buffers {
		if pb.Input {
			in = append(in, i)
		}
	}
	cur, bb, cb := upload(x), upload(b), upload(c)
	defer bb.Release()
	defer cb.Release()
	for step := range steps {
		call := &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: []backend.Dest{{Keep: true}}, Stats: &backend.Stats{}}
		call.Args[in[0]].Buf, call.Args[in[1]].Buf, call.Args[in[2]].Buf = cur, bb, cb
		if err := e.RunQueued(ctx, call); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if call.Stats.GPUTimed {
			t.Fatalf("step %d: a queued run has a GPU time: it waited", step)
		}
		cur.Release()
		cur = call.Dests[0].Buf
	}
	got := make([]float32, n)
	if err := d.Read(ctx, cur, got); err != nil {
		t.Fatal(err)
	}
	cur.Release()
	for i, v := range got {
		if math.Float32bits(v) != math.Float32bits(want[i]) {
			t.Fatalf("y[%d] = %v after %d queued runs, cpuref %v", i, v, steps, want[i])
		}
	}
	if zeros := countZero(want); zeros == n {
		t.Fatal("the chain dies out")
	}
}

func countZero(s []float32) int {
	k := 0
	for _, v := range s {
		if v == 0 {
			k++
		}
	}
	return k
}
