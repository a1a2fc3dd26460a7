package gpucc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestTypedWideReductions: typed reductions on webgpu give cpu's bits at
// and past wgsl.SerialLeaves (one invocation's loop up to it, a workgroup
// of wgsl.WideThreads past it) up to wgsl.MaxTypedLeaves, and are refused
// by name past that. Lavapipe cut one invocation's loops short after 65535
// iterations in all: a float16 sum of 2^15 ones gave 0 (2026-12-04). The
// cases: sums, maxes and products over float16, bfloat16 and every
// integer width, one output and several (two and four elements a storage
// word, the last word part full), leaves at 8192, 8193, 2^15 and an odd
// count, normal random values (where another tree's rounding shows) and
// irtest's extremes (NaN, ±Inf, -0, subnormals, wrap-around), and 2^21
// float16 leaves, the bound.
func TestTypedWideReductions(t *testing.T) {
	lim := ir.Limits{NonFinite: true, MaxElements: 1 << 22}
	opt := func(o *gpucc.Options) { o.Limits = lim }
	cpu, gpu := open(t, "cpu", opt), open(t, "webgpu", opt)
	type red struct {
		dt     ir.DType
		op     ir.Op
		shape  ir.Shape
		random bool // normal random values, else irtest's extremes
	}
	cases := []red{
		{ir.F16, ir.OpSum, ir.Shape{wgsl.SerialLeaves}, true},
		{ir.F16, ir.OpSum, ir.Shape{wgsl.SerialLeaves + 1}, true},
		{ir.F16, ir.OpSum, ir.Shape{wgsl.SerialLeaves + 1}, false},
		{ir.F16, ir.OpSum, ir.Shape{1 << 15}, true},
		{ir.F16, ir.OpSum, ir.Shape{3, 12345}, true},
		{ir.F16, ir.OpSum, ir.Shape{3, 10000}, false},
		{ir.BF16, ir.OpSum, ir.Shape{3, 1 << 15}, true},
		{ir.BF16, ir.OpSum, ir.Shape{2, 1 << 14}, false},
		{ir.F16, ir.OpMax, ir.Shape{2, 12345}, true},
		{ir.BF16, ir.OpMax, ir.Shape{3, 9000}, false},
		{ir.F16, ir.OpProd, ir.Shape{2, 9000}, false},
		{ir.I64, ir.OpSum, ir.Shape{70000}, false},
		{ir.I32, ir.OpMax, ir.Shape{3, 9999}, false},
		{ir.U8, ir.OpSum, ir.Shape{5, 9000}, false},
		{ir.I8, ir.OpProd, ir.Shape{3, 9000}, false},
		{ir.U32, ir.OpSum, ir.Shape{2, 8200}, false},
		{ir.F16, ir.OpSum, ir.Shape{wgsl.MaxTypedLeaves}, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v-%v-%v-random=%v", c.dt, c.op, c.shape, c.random), func(t *testing.T) {
			b := ir.NewBuilder()
			var x ir.Tensor
			if c.random {
				r := rand.New(rand.NewPCG(uint64(c.shape.Len()), 32))
				v := make([]float32, c.shape.Len())
				for i := range v {
					v[i] = c.dt.Round(float32(r.NormFloat64()))
				}
				x = b.TypedInput("x", c.dt, c.shape, v, nil)
			} else {
				x = irtest.TypedInput(b, c.dt, c.shape, 7)
			}
			out := ir.Shape{}
			if len(c.shape) == 2 {
				out = ir.Shape{c.shape[0], 1}
			}
			b.Output("r", x.ApplyShaped(c.op, out))
			g, err := b.Build(lim)
			if err != nil {
				t.Fatal(err)
			}
			sameTyped(t, cpu, gpu, g)
		})
	}
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.F16, ir.Shape{wgsl.MaxTypedLeaves + 1}, make([]float32, wgsl.MaxTypedLeaves+1), nil)
	b.Output("r", x.ApplyShaped(ir.OpSum, ir.Shape{}))
	g, err := b.Build(lim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gpu.Compile(context.Background(), g); gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "leaves") {
		t.Errorf("a sum of %d leaves: %v, want unsupported naming the leaves", wgsl.MaxTypedLeaves+1, err)
	}
}
