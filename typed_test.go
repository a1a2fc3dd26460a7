package gpucc_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	_ "github.com/gpucc/gpucc/runtime/all"
)

// TestTypedExecutable: a typed graph compiles on the cpu backend and runs
// many times with typed host inputs (int64 ids, a float16 tensor), each
// run cpuref.EvalTyped's bits; inputs of the wrong dtype, shape or range
// are invalid_input; a division by zero is integer_fault; the compiled
// backends refuse the graph by name.
func TestTypedExecutable(t *testing.T) {
	ctx := context.Background()
	b := ir.NewBuilder()
	ids := b.TypedInput("ids", ir.I64, ir.Shape{3}, nil, []int64{0, 0, 0})
	h := b.TypedInput("h", ir.F16, ir.Shape{3}, []float32{0, 0, 0}, nil)
	b.Output("next", ids.Add(b.FullOf(ir.I64, ir.Shape{3}, 0, 1)))
	b.Output("q", ids.Div(b.TypedInput("d", ir.I64, ir.Shape{3}, nil, []int64{2, 2, 2})))
	b.Output("h2", h.Mul(h))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	for _, c := range []struct {
		ids, next, q []int64
		h, h2        []float32
	}{
		{[]int64{math.MaxInt64, -7, 7}, []int64{math.MinInt64, -6, 8}, []int64{math.MaxInt64 / 2, -3, 3}, []float32{300, 0.5, 1e-4}, []float32{float32(math.Inf(1)), 0.25, 0}},
		{[]int64{1, 2, 3}, []int64{2, 3, 4}, []int64{0, 1, 1}, []float32{2, 3, -4}, []float32{4, 9, 16}},
	} {
		hin := make([]float32, len(c.h))
		for i, v := range c.h {
			hin[i] = ir.F16Round(v)
		}
		res, err := exe.Run(ctx, gpucc.Inputs{
			"ids": gpucc.Tensor{Shape: []int{3}, DType: ir.I64, Ints: c.ids},
			"h":   gpucc.Tensor{Shape: []int{3}, DType: ir.F16, Data: hin},
		})
		if c.h2[0] > 65504 { // float16 overflow: 300² is +Inf, an output error as float32's
			if gpucc.CodeOf(err) != ir.CodeNonFiniteOutput {
				t.Errorf("float16 300²: %v, want non_finite_output", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if o := res.Outputs["next"]; o.DType != ir.I64 || !slices.Equal(o.Ints, c.next) {
			t.Errorf("next = %v %v, want %v", o.DType, o.Ints, c.next)
		}
		if o := res.Outputs["q"]; !slices.Equal(o.Ints, c.q) {
			t.Errorf("q = %v, want %v", o.Ints, c.q)
		}
		if o := res.Outputs["h2"]; o.DType != ir.F16 || !slices.Equal(o.Data, c.h2) {
			t.Errorf("h2 = %v %v, want %v", o.DType, o.Data, c.h2)
		}
	}
	bad := map[string]gpucc.Inputs{
		"a float32 tensor for int64": {"ids": gpucc.NewTensor(ir.Shape{3}, []float32{1, 2, 3})},
		"a wrong shape":              {"ids": gpucc.Tensor{Shape: []int{2}, DType: ir.I64, Ints: []int64{1, 2}}},
		"float16 not rounded":        {"h": gpucc.Tensor{Shape: []int{3}, DType: ir.F16, Data: []float32{0.1, 0, 0}}},
		"an unknown name":            {"x": gpucc.Tensor{Shape: []int{3}, DType: ir.I64, Ints: []int64{1, 2, 3}}},
	}
	for name, in := range bad {
		if _, err := exe.Run(ctx, in); gpucc.CodeOf(err) != ir.CodeInvalidInput {
			t.Errorf("%s: %v, want invalid_input", name, err)
		}
	}
	_, err = exe.Run(ctx, gpucc.Inputs{"d": gpucc.Tensor{Shape: []int{3}, DType: ir.I64, Ints: []int64{1, 0, 1}}})
	if !errors.Is(err, ir.ErrIntegerFault) {
		t.Errorf("a division by zero: %v, want integer_fault", err)
	}
	for _, name := range []string{"native", "wasm"} {
		other, err := gpucc.Open(ctx, gpucc.Options{Backend: name})
		if err != nil {
			continue // not built or not here
		}
		if _, err := other.Compile(ctx, g); gpucc.CodeOf(err) != ir.CodeUnsupported {
			t.Errorf("%s: compiling a typed graph: %v, want unsupported", name, err)
		}
		other.Close()
	}
}
