package gpucc_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
)

// indexExtremes are int64 indices whose 32-bit words mislead a check of
// one word: the int64 limits, each side of 2^31 and 2^32, and values whose
// low word read as an int32 is an index in range (0xffffffff is -1,
// 0xfffffffb is -5, 2^32+3 is 3) while the value is far outside it.
var indexExtremes = []int64{math.MinInt64, math.MinInt64 + 1, math.MaxInt64, math.MaxInt64 - 1,
	-1 << 31, 1 << 31, 1<<31 - 1, -1<<31 - 1, 1 << 32, -1 << 32, 1<<32 + 3, -1<<32 + 4,
	0xffffffff, 0xfffffffb, 0xfffffffe, 0x7fffffff00000001, -0x7fffffff00000001}

// TestScatterIndexExtremes: scatters (ScatterElements along each axis and
// ScatterND, under none and add) and gathers (Gather, GatherElements) of
// run-time int64 indices give cpu's bits, or fail with cpu's code, on
// every typed backend, run after run on one executable: each of
// indexExtremes at one position among valid indices, the same index at
// every position (the duplicates all land on one element), and every
// valid negative index; a scatter of one candidate an element (a KV
// cache's row: the linear scatter's apply pass alone) among them.
func TestScatterIndexExtremes(t *testing.T) {
	const rows, cols, k = 3, 5, 4
	var runs [][]int64
	base := make([]int64, rows*k)
	for j := range base {
		base[j] = int64(j*3%(2*cols) - cols) // from -cols to cols-1
	}
	runs = append(runs, base)
	for _, e := range indexExtremes {
		one := slices.Clone(base)
		one[1] = e
		all := make([]int64, len(base))
		for j := range all {
			all[j] = e
		}
		runs = append(runs, one, all, base)
	}
	for _, v := range []int64{-cols, cols - 1, -1, 0} {
		all := make([]int64, len(base))
		for j := range all {
			all[j] = v
		}
		runs = append(runs, all)
	}
	type variant struct {
		name  string
		shape ir.Shape // of the index input
		build func(b *ir.Builder, x, idx ir.Tensor) ir.Tensor
	}
	upd := func(b *ir.Builder, s ir.Shape) ir.Tensor {
		v := make([]float32, s.Len())
		for j := range v {
			v[j] = float32(j)*0.75 - 3
		}
		v[1] = float32(math.Copysign(0, -1))
		v[2] = math.Float32frombits(1)
		return b.TypedInput("u", ir.F32, s, v, nil)
	}
	variants := []variant{
		{"scatter_elements/axis1/none", ir.Shape{rows, k}, func(b *ir.Builder, x, i ir.Tensor) ir.Tensor {
			return x.ScatterElements(i, upd(b, ir.Shape{rows, k}), 1, ir.ScatterNone)
		}},
		{"scatter_elements/axis1/add", ir.Shape{rows, k}, func(b *ir.Builder, x, i ir.Tensor) ir.Tensor {
			return x.ScatterElements(i, upd(b, ir.Shape{rows, k}), 1, ir.ScatterAdd)
		}},
		{"scatter_nd/none", ir.Shape{rows * k, 1}, func(b *ir.Builder, x, i ir.Tensor) ir.Tensor {
			return x.Reshape(ir.Shape{rows * cols}).ScatterND(i, upd(b, ir.Shape{rows * k}), ir.ScatterNone)
		}},
		{"scatter_nd/add", ir.Shape{rows * k, 1}, func(b *ir.Builder, x, i ir.Tensor) ir.Tensor {
			return x.Reshape(ir.Shape{rows * cols}).ScatterND(i, upd(b, ir.Shape{rows * k}), ir.ScatterAdd)
		}},
		{"scatter_elements/axis1/one_candidate/none", ir.Shape{rows, 1}, func(b *ir.Builder, x, i ir.Tensor) ir.Tensor {
			return x.ScatterElements(i, upd(b, ir.Shape{rows, 1}), 1, ir.ScatterNone)
		}},
		{"scatter_elements/axis1/one_candidate/add", ir.Shape{rows, 1}, func(b *ir.Builder, x, i ir.Tensor) ir.Tensor {
			return x.ScatterElements(i, upd(b, ir.Shape{rows, 1}), 1, ir.ScatterAdd)
		}},
		{"gather_elements/axis1", ir.Shape{rows, k}, func(b *ir.Builder, x, i ir.Tensor) ir.Tensor {
			return x.GatherElements(i, 1)
		}},
		{"gather/axis1", ir.Shape{rows * k}, func(b *ir.Builder, x, i ir.Tensor) ir.Tensor {
			return x.Gather(i, 1)
		}},
	}
	ctx := context.Background()
	cpu := open(t, "cpu", func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} })
	for _, v := range variants {
		b := ir.NewBuilder()
		data := make([]float32, rows*cols)
		for j := range data {
			data[j] = float32(j)*0.5 - 2
		}
		data[4] = 3e38
		x := b.TypedInput("x", ir.F32, ir.Shape{rows, cols}, data, nil)
		i := b.TypedInput("i", ir.I64, v.shape, nil, base[:v.shape.Len()])
		b.Output("y", v.build(b, x, i))
		g, err := b.Build(ir.Limits{NonFinite: true})
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		ref, err := cpu.Compile(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		for _, be := range typedBackends {
			t.Run(be+"/"+v.name, func(t *testing.T) {
				exe, err := open(t, be, func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} }).Compile(ctx, g)
				if err != nil {
					t.Fatal(err)
				}
				defer exe.Release()
				for r, idx := range runs {
					idx = idx[:v.shape.Len()]
					in := gpucc.Inputs{"i": gpucc.Tensor{Shape: v.shape, DType: ir.I64, Ints: idx}}
					want, werr := ref.Run(ctx, in)
					got, gerr := exe.Run(ctx, in)
					if werr != nil || gerr != nil {
						if werr == nil || gerr == nil || gpucc.CodeOf(werr) != gpucc.CodeOf(gerr) {
							t.Fatalf("run %d (%v): %v, cpu %v", r, idx, gerr, werr)
						}
						continue
					}
					w, o := want.Outputs["y"], got.Outputs["y"]
					if !slices.Equal(gpucctest.BitsOf(o.Data), gpucctest.BitsOf(w.Data)) {
						t.Fatalf("run %d (%v): %v, cpu %v", r, idx, o.Data, w.Data)
					}
				}
			})
		}
		ref.Release()
	}
}
