package gpucc_test

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// f64Graph is y = x + x and m = max(x, 0) over a float64 input of 3, and
// c = x cast to float32.
func f64Graph(t *testing.T) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	x := b.TypedInput("x", ir.F64, ir.Shape{3}, nil, []int64{0, 0, 0})
	b.Output("y", x.Add(x))
	b.Output("m", x.Apply(ir.OpMaximum, b.FullOf(ir.F64, ir.Shape{3}, 0, ir.F64Bits(0))))
	b.Output("c", x.Cast(ir.F32))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestFloat64OnCPU: a float64 graph runs on the cpu backend with its
// values as float64 bits in Tensor.Ints, exactly (1e308 + 1e308 is +Inf,
// which the finite policy refuses as non_finite_output; 2^-1074 doubles to
// 2^-1073; a cast to float32 rounds once), a non-finite input is refused
// unless the host allows it, and JSON writes the values as float64
// numbers, never as their bits.
func TestFloat64OnCPU(t *testing.T) {
	ctx := context.Background()
	rt := open(t, "cpu")
	exe, err := rt.Compile(ctx, f64Graph(t))
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	in := func(xs ...float64) gpucc.Inputs {
		bits := make([]int64, len(xs))
		for i, x := range xs {
			bits[i] = ir.F64Bits(x)
		}
		return gpucc.Inputs{"x": gpucc.Tensor{Shape: []int{3}, DType: ir.F64, Ints: bits}}
	}
	res, err := exe.Run(ctx, in(0.1, 0x1p-1074, -1e30))
	if err != nil {
		t.Fatal(err)
	}
	y := res.Outputs["y"]
	add := func(a, b float64) float64 { return a + b }
	if y.DType != ir.F64 || !slices.Equal(y.Ints, []int64{ir.F64Bits(add(0.1, 0.1)), ir.F64Bits(0x1p-1073), ir.F64Bits(-2e30)}) {
		t.Errorf("y = %v %v", y.DType, y.Ints)
	}
	if m := res.Outputs["m"]; !slices.Equal(m.Ints, []int64{ir.F64Bits(0.1), ir.F64Bits(0x1p-1074), 0}) {
		t.Errorf("m = %v", m.Ints)
	}
	if c := res.Outputs["c"]; c.DType != ir.F32 || !slices.Equal(c.Data, []float32{0.1, 0, -1e30}) {
		t.Errorf("c = %v %v", c.DType, c.Data)
	}
	j, err := json.Marshal(y)
	if err != nil || string(j) != `{"shape":[3],"dtype":"float64","data":[0.2,1e-323,-2e+30]}` {
		t.Errorf("JSON %s (%v)", j, err)
	}
	if _, err := exe.Run(ctx, in(1e308, 0, 0)); gpucc.CodeOf(err) != ir.CodeNonFiniteOutput {
		t.Errorf("1e308 + 1e308: %v, want non_finite_output", err)
	}
	if _, err := exe.Run(ctx, in(math.NaN(), 0, 0)); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("a NaN input: %v, want invalid_input", err)
	}
	nan := gpucc.Tensor{Shape: []int{3}, DType: ir.F64, Ints: []int64{ir.F64Bits(math.Inf(1)), -1, 0}}
	j, err = json.Marshal(nan)
	if err != nil || !strings.Contains(string(j), `"data":["Infinity","NaN",0]`) {
		t.Errorf("JSON of non-finite float64s: %s (%v)", j, err)
	}
}

// TestFloat64Refusals: webgpu refuses a graph holding float64 by name
// (unsupported, naming the dtype and the backend) at Compile, as its
// typed code stores the device dtypes only (ir.DeviceDTypes: WGSL has no
// 64-bit float), and would otherwise give another dtype's width; native
// and wasm hold float64 (ir.CDTypes), their scatter's reductions too
// (TestFloat64Backends' views-gather case).
func TestFloat64Refusals(t *testing.T) {
	for _, name := range typedBackends {
		if name != "webgpu" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			rt := open(t, name)
			b := ir.NewBuilder()
			x := b.TypedInput("x", ir.I32, ir.Shape{2}, nil, []int64{1, 2})
			b.Output("y", x.Cast(ir.F64))
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = rt.Compile(context.Background(), g)
			if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "float64") {
				t.Errorf("%v, want unsupported naming float64", err)
			}
			if name == "webgpu" && !strings.Contains(err.Error(), name) {
				t.Errorf("%v does not name %s", err, name)
			}
		})
	}
}
