package onnx_test

import (
	"bytes"
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// runTypedModel imports a one-node model over input x of element type et
// and shape s, sets x's carried values, and runs it on cpu (±Inf and NaN
// allowed), returning output y.
func runTypedModel(t *testing.T, opset int64, n msg, inits []msg, et onnx.DataType, s []int64, x []int64, outType onnx.DataType) gpucc.Tensor {
	t.Helper()
	doc := model(opset, graph([]msg{n}, inits, []msg{typedValueInfo("x", int64(et), s...)}, []msg{typedValueInfo("y", int64(outType))}))
	g, err := onnx.Load(bytes.NewReader(doc), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := g.Input("x")
	g.Nodes[id].Ints = x
	res, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "cpu", Limits: ir.Limits{NonFinite: true}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Outputs["y"]
}

func f64s(xs ...float64) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = ir.F64Bits(x)
	}
	return out
}

// TestTypedCumSum: CumSum of a run-time float64 or integer tensor sums in
// its own dtype: int32 and uint16 wrap, float64 keeps -0 (a sum of -0s is -0: the masked-off elements are
// the sum's identity -0, not +0), an exclusive sum of nothing is +0, and
// a float64 sum follows the reference's pairwise tree, in float64 (no
// float32 on the way).
func TestTypedCumSum(t *testing.T) {
	axis := []msg{int64s("axis", nil, 0)}
	cs := func(excl, rev int64) msg {
		return node("CumSum", "cs", []string{"x", "axis"}, []string{"y"}, attrInt("exclusive", excl), attrInt("reverse", rev))
	}
	negz := math.Copysign(0, -1)
	for _, c := range []struct {
		name      string
		excl, rev int64
		et        onnx.DataType
		x, want   []int64
	}{
		{"int32 wraps", 0, 0, onnx.Int32, []int64{math.MaxInt32, 1, -5}, []int64{math.MaxInt32, math.MinInt32, math.MinInt32 - 5 + 1<<32}},
		{"int64 exclusive reverse", 1, 1, onnx.Int64, []int64{1, 2, 3}, []int64{5, 3, 0}},
		{"uint16 wraps", 0, 0, onnx.Uint16, []int64{65535, 1, 2}, []int64{65535, 0, 2}},
		{"float64 -0", 0, 0, onnx.Float64, f64s(negz, negz, 1), f64s(negz, negz, 1)},
		{"float64 exclusive", 1, 0, onnx.Float64, f64s(negz, 2, 0x1p-1074), f64s(0, negz, 2)},
		// The tree: (1 + 2^53) + (1 + 1) is 2^53 + 2 where numpy's
		// sequential sum gives 2^53 (each + 1 ties to even).
		{"float64 2^53", 0, 0, onnx.Float64, f64s(1, 0x1p53, 1, 1), f64s(1, 0x1p53, 0x1p53, 0x1p53+2)},
		{"float64 inf", 0, 1, onnx.Float64, f64s(math.Inf(1), 1, math.Inf(-1)), f64s(math.NaN(), math.Inf(-1), math.Inf(-1))},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := runTypedModel(t, 14, cs(c.excl, c.rev), axis, c.et, []int64{int64(len(c.x))}, c.x, c.et)
			same := slices.EqualFunc(y.Ints, c.want, func(a, b int64) bool {
				return a == b || c.et == onnx.Float64 && math.IsNaN(ir.F64Value(a)) && math.IsNaN(ir.F64Value(b))
			})
			if !same {
				t.Errorf("got %v, want %v", y.Ints, c.want)
			}
		})
	}
}

// TestFloat64Reductions: the ONNX reductions whose every step is a
// float64 row compute a run-time float64 input in float64 (a float32
// pass would flush 1e-300 to 0 and overflow 1e300): ReduceLogSumExp,
// ReduceMin (-0 below +0), ReduceL2 and ReduceSumSquare of values beyond
// float32's range; ReduceMean (a scalar division) is refused by name.
func TestFloat64Reductions(t *testing.T) {
	x := f64s(1e-300, 2e-300, 0, math.Copysign(0, -1))
	for _, c := range []struct {
		op   string
		want float64
	}{
		{"ReduceSum", 3e-300},
		{"ReduceMax", 2e-300},
		{"ReduceMin", math.Copysign(0, -1)},
		{"ReduceSumSquare", 0},
		{"ReduceL1", 3e-300},
		{"ReduceLogSum", math.Log(3e-300)},
		{"ReduceLogSumExp", math.Log(math.Exp(1e-300) + math.Exp(2e-300) + 2)},
	} {
		y := runTypedModel(t, 13, node(c.op, "r", []string{"x"}, []string{"y"}, attrInt("keepdims", 0)), nil, onnx.Float64, []int64{4}, x, onnx.Float64)
		if y.DType != ir.F64 || len(y.Ints) != 1 || y.Ints[0] != ir.F64Bits(c.want) {
			t.Errorf("%s: %v %v, want %v", c.op, y.DType, y.Ints, c.want)
		}
	}
	big := f64s(1e300, -1e300)
	if y := runTypedModel(t, 13, node("ReduceL2", "r", []string{"x"}, []string{"y"}), nil, onnx.Float64, []int64{2}, big, onnx.Float64); y.Ints[0] != ir.F64Bits(math.Inf(1)) {
		t.Errorf("ReduceL2 of ±1e300: %v, want +Inf (1e600 overflows float64 too)", ir.F64Value(y.Ints[0]))
	}
	doc := model(13, graph([]msg{node("ReduceMean", "r", []string{"x"}, []string{"y"})}, nil,
		[]msg{typedValueInfo("x", int64(onnx.Float64), 2)}, []msg{typedValueInfo("y", int64(onnx.Float64))}))
	_, err := onnx.Load(bytes.NewReader(doc), onnx.Options{})
	if gpucc.CodeOf(err) != ir.CodeUnsupported {
		t.Errorf("ReduceMean of float64: %v, want unsupported", err)
	}
}

// TestPowIntBaseFloatExponent: Pow of a run-time integer base by a float
// exponent is pow in float64 truncated to the base's dtype (ONNX's
// reference: np.power(x, y).astype(x.dtype)): 2^0.5 is 1, (-2)^3 is -8,
// (-8)^(1/3) is NaN, which no int32 holds, and 46341^2 = 2147488281 is
// outside int32: both fail the run with integer_fault.
func TestPowIntBaseFloatExponent(t *testing.T) {
	doc := model(15, graph([]msg{node("Pow", "p", []string{"x", "y"}, []string{"z"})}, nil,
		[]msg{typedValueInfo("x", int64(onnx.Int32), 3), valueInfo("y", 3)}, []msg{typedValueInfo("z", int64(onnx.Int32))}))
	g, err := onnx.Load(bytes.NewReader(doc), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(x []int64, y []float32) (gpucc.Tensor, error) {
		g.Nodes[g.Input("x")].Ints = x
		g.Nodes[g.Input("y")].Data = y
		res, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "cpu"})
		if err != nil {
			return gpucc.Tensor{}, err
		}
		return res.Outputs["z"], nil
	}
	z, err := run([]int64{2, -2, 3}, []float32{0.5, 3, 6})
	if err != nil || z.DType != ir.I32 || !slices.Equal(z.Ints, []int64{1, -8, 729}) {
		t.Errorf("got %v %v (%v), want int32 [1 -8 729]", z.DType, z.Ints, err)
	}
	for _, c := range []struct {
		x []int64
		y []float32
	}{{[]int64{46341, 1, 1}, []float32{2, 1, 1}}, {[]int64{-8, 1, 1}, []float32{1.0 / 3, 1, 1}}} {
		if _, err := run(c.x, c.y); gpucc.CodeOf(err) != ir.CodeIntegerFault {
			t.Errorf("%v ^ %v: %v, want integer_fault", c.x, c.y, err)
		}
	}
}
