package onnx_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	_ "github.com/gpucc/gpucc/runtime/cpu"
)

// typedValueInfo is valueInfo of element type et (an ONNX DataType).
func typedValueInfo(name string, et int64, dims ...int64) msg {
	var shape msg
	for _, d := range dims {
		shape = shape.bytes(1, msg(nil).varint(1, d))
	}
	tt := msg(nil).varint(1, et).bytes(2, shape)
	return msg(nil).str(1, name).bytes(2, msg(nil).bytes(1, tt))
}

// TestTypedInputs: graph inputs of int64, int32, uint8, int8, uint32,
// float16 and bool import with their dtype (they were refused): an
// integer's Cast runs as ONNX's, an integer output is returned as
// integers, a bool input is the importer's float32 1 and 0; an op that
// computes on float32 only refuses a run-time integer by name, and
// float64 is refused by name.
func TestTypedInputs(t *testing.T) {
	load := func(t *testing.T, nodes []msg, ins, outs []msg) (*ir.Graph, error) {
		t.Helper()
		return onnx.Load(bytes.NewReader(model(13, graph(nodes, nil, ins, outs))), onnx.Options{})
	}
	// ids (int64) -> Cast to int32 (wraps) and Cast to float (rounds); the
	// int64 input itself as an output.
	g, err := load(t, []msg{
		node("Cast", "c32", []string{"ids"}, []string{"i32"}, attrInt("to", int64(onnx.Int32))),
		node("Cast", "cf", []string{"ids"}, []string{"f"}, attrInt("to", int64(onnx.Float32))),
		node("Identity", "id", []string{"ids"}, []string{"same"}),
	}, []msg{typedValueInfo("ids", int64(onnx.Int64), 3)},
		[]msg{typedValueInfo("i32", int64(onnx.Int32), 3), valueInfo("f", 3), typedValueInfo("same", int64(onnx.Int64), 3)})
	if err != nil {
		t.Fatal(err)
	}
	id := g.Input("ids")
	if id < 0 || g.Nodes[id].DType != ir.I64 {
		t.Fatalf("input ids: %v", g.Nodes[id])
	}
	g.Nodes[id].Ints = []int64{1<<32 + 5, -1, 1<<53 + 1}
	res, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Outputs["i32"]; o.DType != ir.I32 || !slices.Equal(o.Ints, []int64{5, -1, 1}) {
		t.Errorf("Cast to int32: %v %v, want int32 [5 -1 1]", o.DType, o.Ints)
	}
	if o := res.Outputs["f"]; o.DType != ir.F32 || !slices.Equal(o.Data, []float32{1<<32 + 0, -1, 1 << 53}) {
		t.Errorf("Cast to float: %v %v", o.DType, o.Data)
	}
	if o := res.Outputs["same"]; o.DType != ir.I64 || o.Ints[2] != 1<<53+1 {
		t.Errorf("the int64 input as an output: %v %v, want its integers", o.DType, o.Ints)
	}

	// Every dtype gpucc has imports (float64, int16, uint16 and uint64
	// computed by the cpu backend alone); complex64 is refused by name.
	for _, et := range []onnx.DataType{onnx.Int32, onnx.Uint8, onnx.Int8, onnx.Uint32, onnx.Float16, onnx.Bool,
		onnx.Float64, onnx.Int16, onnx.Uint16, onnx.Uint64} {
		_, err := load(t, []msg{node("Identity", "id", []string{"x"}, []string{"y"})},
			[]msg{typedValueInfo("x", int64(et), 2)}, []msg{typedValueInfo("y", int64(et), 2)})
		if err != nil {
			t.Errorf("%v input: %v", et, err)
		}
	}
	_, err = load(t, []msg{node("Identity", "id", []string{"x"}, []string{"y"})},
		[]msg{typedValueInfo("x", 14, 2)}, []msg{typedValueInfo("y", 14, 2)})
	var e *ir.Error
	if !errors.As(err, &e) || e.Code != ir.CodeUnsupported || !bytes.Contains([]byte(e.Msg), []byte("complex64")) {
		t.Errorf("complex64 input: %v, want unsupported naming complex64", err)
	}
	// A float32-only op on a run-time int64 refuses by name.
	_, err = load(t, []msg{node("Exp", "r", []string{"x"}, []string{"y"})},
		[]msg{typedValueInfo("x", int64(onnx.Int64), 2)}, []msg{typedValueInfo("y", int64(onnx.Int64), 2)})
	if !errors.As(err, &e) || e.Code != ir.CodeUnsupported || !bytes.Contains([]byte(e.Msg), []byte("int64")) {
		t.Errorf("Exp of a run-time int64: %v, want unsupported naming int64", err)
	}
	// A bool input is the importer's 1 and 0: Not of it runs.
	g, err = load(t, []msg{node("Not", "n", []string{"m"}, []string{"y"})},
		[]msg{typedValueInfo("m", int64(onnx.Bool), 3)}, []msg{typedValueInfo("y", int64(onnx.Bool), 3)})
	if err != nil {
		t.Fatal(err)
	}
	m := g.Input("m")
	g.Nodes[m].Ints = []int64{1, 0, 1}
	res, err = gpucc.Run(context.Background(), g, gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Outputs["y"]; !slices.Equal(o.Data, []float32{0, 1, 0}) {
		t.Errorf("Not of a bool input: %v %v %v", o.DType, o.Data, o.Ints)
	}
}

// TestTypedElementwise: ONNX's elementwise ops on run-time integers import
// as ir's typed rows: int64 Add of a broadcast constant wraps, Less gives
// the importer's bool, Where selects int64s by it, Mod takes the divisor's
// sign, BitShift shifts uint8s; a division by zero fails the run.
func TestTypedElementwise(t *testing.T) {
	nodes := []msg{
		node("Add", "add", []string{"x", "one"}, []string{"sum"}),
		node("Less", "less", []string{"x", "y"}, []string{"lt"}),
		node("Where", "where", []string{"lt", "x", "y"}, []string{"min"}),
		node("Mod", "mod", []string{"x", "y"}, []string{"rem"}),
		node("Div", "div", []string{"x", "y"}, []string{"q"}),
	}
	g0 := graph(nodes, []msg{int64s("one", []int64{1}, 1)},
		[]msg{typedValueInfo("x", int64(onnx.Int64), 3), typedValueInfo("y", int64(onnx.Int64), 3)},
		[]msg{typedValueInfo("sum", int64(onnx.Int64), 3), typedValueInfo("lt", int64(onnx.Bool), 3),
			typedValueInfo("min", int64(onnx.Int64), 3), typedValueInfo("rem", int64(onnx.Int64), 3), typedValueInfo("q", int64(onnx.Int64), 3)})
	g, err := onnx.Load(bytes.NewReader(model(13, g0)), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Nodes[g.Input("x")].Ints = []int64{math.MaxInt64, -7, 7}
	g.Nodes[g.Input("y")].Ints = []int64{2, 2, -2}
	res, err := gpucc.Run(context.Background(), g, gpucc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{"sum": {math.MinInt64, -6, 8}, "min": {2, -7, -2}, "rem": {1, 1, -1}, "q": {math.MaxInt64 / 2, -3, -3}}
	for name, w := range want {
		if o := res.Outputs[name]; o.DType != ir.I64 || !slices.Equal(o.Ints, w) {
			t.Errorf("%s = %v %v, want int64 %v", name, o.DType, o.Ints, w)
		}
	}
	if o := res.Outputs["lt"]; !slices.Equal(o.Data, []float32{0, 1, 0}) {
		t.Errorf("lt = %v, want the importer's bool [0 1 0]", o.Data)
	}
	g.Nodes[g.Input("y")].Ints = []int64{2, 0, 1}
	if _, err := gpucc.Run(context.Background(), g, gpucc.Options{}); !errors.Is(err, ir.ErrIntegerFault) {
		t.Errorf("a division by zero: %v, want integer_fault", err)
	}

	shift, err := onnx.Load(bytes.NewReader(model(13, graph([]msg{node("BitShift", "s", []string{"a", "b"}, []string{"c"}, attrStr("direction", "LEFT"))}, nil,
		[]msg{typedValueInfo("a", int64(onnx.Uint8), 2), typedValueInfo("b", int64(onnx.Uint8), 2)}, []msg{typedValueInfo("c", int64(onnx.Uint8), 2)}))), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	shift.Nodes[shift.Input("a")].Ints = []int64{3, 255}
	shift.Nodes[shift.Input("b")].Ints = []int64{6, 1}
	res, err = gpucc.Run(context.Background(), shift, gpucc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Outputs["c"]; o.DType != ir.U8 || !slices.Equal(o.Ints, []int64{192, 254}) {
		t.Errorf("BitShift LEFT = %v %v, want uint8 [192 254]", o.DType, o.Ints)
	}
}

// TestTypedOpRefusedByName: an op that computes on float32 only refuses a
// run-time int64 with unsupported naming the dtype.
func TestTypedOpRefusedByName(t *testing.T) {
	for _, op := range []string{"Abs", "Softmax", "ReduceMin", "Erf"} { // CumSum of int64 runs since 53cbe20
		_, err := onnx.Load(bytes.NewReader(model(14, graph([]msg{node(op, "t", []string{"x"}, []string{"y"})}, nil,
			[]msg{typedValueInfo("x", int64(onnx.Int64), 3, 3)}, []msg{typedValueInfo("y", int64(onnx.Int64), 3, 3)}))), onnx.Options{})
		var e *ir.Error
		if !errors.As(err, &e) || e.Code != ir.CodeUnsupported || !strings.Contains(e.Msg, "int64") {
			t.Errorf("%s of a run-time int64: %v, want unsupported naming int64", op, err)
		}
	}
}

// TestTypedClipTrilu: Clip of run-time int8 between constant bounds, and
// Trilu (upper, k = 1) of run-time int64, as ONNX's reference gives them.
func TestTypedClipTrilu(t *testing.T) {
	int8s := func(name string, vs ...int64) msg {
		var packed []byte
		for _, v := range vs {
			packed = protowire.AppendVarint(packed, uint64(v))
		}
		return msg(nil).varint(2, int64(onnx.Int8)).str(8, name).bytes(5, packed) // int32_data
	}
	g, err := onnx.Load(bytes.NewReader(model(13, graph([]msg{node("Clip", "c", []string{"x", "lo", "hi"}, []string{"y"})},
		[]msg{int8s("lo", -5), int8s("hi", 100)},
		[]msg{typedValueInfo("x", int64(onnx.Int8), 4)}, []msg{typedValueInfo("y", int64(onnx.Int8), 4)}))), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Nodes[g.Input("x")].Ints = []int64{-128, -5, 7, 127}
	res, err := gpucc.Run(context.Background(), g, gpucc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Outputs["y"]; o.DType != ir.I8 || !slices.Equal(o.Ints, []int64{-5, -5, 7, 100}) {
		t.Errorf("Clip = %v %v, want int8 [-5 -5 7 100]", o.DType, o.Ints)
	}
	g, err = onnx.Load(bytes.NewReader(model(14, graph([]msg{node("Trilu", "t", []string{"x", "k"}, []string{"y"})},
		[]msg{int64s("k", nil, 1)},
		[]msg{typedValueInfo("x", int64(onnx.Int64), 2, 3)}, []msg{typedValueInfo("y", int64(onnx.Int64), 2, 3)}))), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Nodes[g.Input("x")].Ints = []int64{1, 2, 3, 4, 5, 6}
	if res, err = gpucc.Run(context.Background(), g, gpucc.Options{}); err != nil {
		t.Fatal(err)
	}
	if o := res.Outputs["y"]; !slices.Equal(o.Ints, []int64{0, 2, 3, 0, 0, 6}) {
		t.Errorf("Trilu(upper, k=1) = %v, want [0 2 3 0 0 6]", o.Ints)
	}
}

// TestLossRuntimeTarget: NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss with run-time int64 labels (gather_elements and
// gather, not labels folded at import) give the bits of the same model
// with the labels given as constants, for every reduction, with and
// without weights and ignore_index (1, a class, so some labels are
// ignored); a label outside [0, C) fails the run with invalid_input naming
// its element.
func TestLossRuntimeTarget(t *testing.T) {
	x := []float32{-1.5, 0.25, 2, -0.125, 3, 1e-3, -7, 0.5, 0, 1, -2, 4.5, 6, -3, 0.75, 2.5, -0.5, 1.25}
	labels := []int64{2, 0, 1, 1, 2, 1}
	for _, op := range []string{"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"} {
		for _, red := range []string{"none", "sum", "mean"} {
			for _, weighted := range []bool{false, true} {
				for _, ii := range []int64{-100, 1} {
					name := fmt.Sprintf("%s/%s/weights=%v/ignore_index=%d", op, red, weighted, ii)
					ins := []string{"x", "t"}
					var inits []msg
					if weighted {
						ins = append(ins, "w")
						inits = append(inits, floats("w", []int64{3}, 0.5, 2, 0.25))
					}
					outs := []msg{valueInfo("y")}
					if red == "none" {
						outs = []msg{valueInfo("y", 2, 3)}
					}
					raw := model(13, graph([]msg{node(op, "l", ins, []string{"y"}, attrStr("reduction", red), attrInt("ignore_index", ii))}, inits,
						[]msg{valueInfo("x", 2, 3, 3), typedValueInfo("t", int64(onnx.Int64), 2, 3)}, outs))
					run := func(g *ir.Graph) (*gpucc.Result, error) {
						g.Nodes[g.Input("x")].Data = x
						if id := g.Input("t"); id >= 0 {
							g.Nodes[id].Ints = labels
						}
						return gpucc.Run(context.Background(), g, gpucc.Options{})
					}
					rt, err := onnx.Load(bytes.NewReader(raw), onnx.Options{})
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					folded, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Constants: map[string]*onnx.Tensor{
						"t": {Name: "t", Type: onnx.Int64, Shape: []int{2, 3}, Int64: labels}}})
					if err != nil {
						t.Fatalf("%s folded: %v", name, err)
					}
					got, err := run(rt)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					want, err := run(folded)
					if err != nil {
						t.Fatalf("%s folded: %v", name, err)
					}
					g, w := got.Outputs["y"].Data, want.Outputs["y"].Data
					if len(g) != len(w) || slices.ContainsFunc(g, func(v float32) bool { return v != v }) {
						t.Fatalf("%s: %v, want %v", name, g, w)
					}
					for k := range w {
						if math.Float32bits(g[k]) != math.Float32bits(w[k]) {
							t.Errorf("%s: y[%d] = %v, want %v (the labels folded)", name, k, g[k], w[k])
						}
					}
					for _, bad := range []int64{3, -1, math.MinInt64} {
						rt.Nodes[rt.Input("t")].Ints = []int64{0, 1, 2, bad, 0, 1}
						if _, err := gpucc.Run(context.Background(), rt, gpucc.Options{}); gpucc.CodeOf(err) != ir.CodeInvalidInput || !strings.Contains(err.Error(), "element 3") {
							t.Errorf("%s: label %d of 3 classes: %v, want invalid_input naming its element", name, bad, err)
						}
					}
				}
			}
		}
	}
}

// TestGatherElementsRuntime: GatherElements with run-time int64 indices
// imports as ir's gather_elements, giving the bits of the folded indices'
// mask-and-sum; an index outside the axis fails the run with invalid_input.
func TestGatherElementsRuntime(t *testing.T) {
	idx := []int64{1, -3, 2, 0, -1, 1}
	raw := model(13, graph([]msg{node("GatherElements", "g", []string{"x", "i"}, []string{"y"}, attrInt("axis", 1))}, nil,
		[]msg{valueInfo("x", 2, 3), typedValueInfo("i", int64(onnx.Int64), 2, 3)}, []msg{valueInfo("y", 2, 3)}))
	negZero := float32(math.Copysign(0, -1))
	x := []float32{negZero, 1.5, -2, 3e38, 1e-45, 7}
	var outs [2][]float32
	for k, consts := range []map[string]*onnx.Tensor{nil, {"i": {Name: "i", Type: onnx.Int64, Shape: []int{2, 3}, Int64: idx}}} {
		g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Constants: consts})
		if err != nil {
			t.Fatal(err)
		}
		g.Nodes[g.Input("x")].Data = x
		if id := g.Input("i"); id >= 0 {
			g.Nodes[id].Ints = idx
		}
		res, err := gpucc.Run(context.Background(), g, gpucc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		outs[k] = res.Outputs["y"].Data
		if k == 0 {
			g.Nodes[g.Input("i")].Ints = []int64{0, 0, 0, 0, 3, 0}
			if _, err := gpucc.Run(context.Background(), g, gpucc.Options{}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
				t.Errorf("index 3 of 3: %v, want invalid_input", err)
			}
		}
	}
	want := []float32{1.5, negZero, -2, 3e38, 7, 1e-45}
	for k := range want {
		if math.Float32bits(outs[0][k]) != math.Float32bits(want[k]) || math.Float32bits(outs[1][k]) != math.Float32bits(want[k]) {
			t.Errorf("y[%d] = %v (run time), %v (folded), want %v", k, outs[0][k], outs[1][k], want[k])
		}
	}
}

// TestTriluRuntimeK: Trilu with k a run-time int64 gives the bits of the
// same model with k folded, upper and lower, for k inside, at and past
// the matrix's diagonals, on float32 data with -0 and NaN.
func TestTriluRuntimeK(t *testing.T) {
	x := []float32{1, float32(math.Copysign(0, -1)), 3, float32(math.NaN()), 5, 6, -7, 8, 9, 10, 11, 12}
	for _, upper := range []int64{0, 1} {
		raw := model(14, graph([]msg{node("Trilu", "t", []string{"x", "k"}, []string{"y"}, attrInt("upper", upper))}, nil,
			[]msg{valueInfo("x", 3, 4), typedValueInfo("k", int64(onnx.Int64))}, []msg{valueInfo("y", 3, 4)}))
		for _, k := range []int64{-5, -3, -1, 0, 1, 3, 4, math.MaxInt64} {
			var outs [2][]float32
			for j, consts := range []map[string]*onnx.Tensor{nil, {"k": {Name: "k", Type: onnx.Int64, Shape: []int{}, Int64: []int64{k}}}} {
				g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Constants: consts, Limits: ir.Limits{NonFinite: true}})
				if err != nil {
					t.Fatal(err)
				}
				g.Nodes[g.Input("x")].Data = x
				if id := g.Input("k"); id >= 0 {
					g.Nodes[id].Ints = []int64{k}
				}
				res, err := gpucc.Run(context.Background(), g, gpucc.Options{Limits: ir.Limits{NonFinite: true}})
				if err != nil {
					t.Fatal(err)
				}
				outs[j] = res.Outputs["y"].Data
			}
			for e := range x {
				if math.Float32bits(outs[0][e]) != math.Float32bits(outs[1][e]) {
					t.Errorf("upper %d, k %d: y[%d] = %v at run time, %v folded", upper, k, e, outs[0][e], outs[1][e])
				}
			}
		}
	}
}

// TestTypedReduce: ReduceSum, ReduceMax and ReduceProd of a run-time
// int64 reduce at int64 (sum and prod wrap in two's complement, max is
// exact at the extremes), the output int64 under TypedOutputs.
func TestTypedReduce(t *testing.T) {
	x := []int64{math.MaxInt64, 1, -3, math.MinInt64, 2, 5}
	maxI, three := int64(math.MaxInt64), int64(-3)
	want := map[string][]int64{
		"ReduceSum":  {maxI + 1 + three, math.MinInt64 + 7}, // the first wraps: MinInt64 - 2
		"ReduceMax":  {math.MaxInt64, 5},
		"ReduceProd": {maxI * three, 0}, // wraps: 2^63 + 3
	}
	for op, w := range want {
		raw := model(18, graph([]msg{node(op, "r", []string{"x", "axes"}, []string{"y"}, attrInt("keepdims", 0))}, []msg{int64s("axes", []int64{1}, 1)},
			[]msg{typedValueInfo("x", int64(onnx.Int64), 2, 3)}, []msg{typedValueInfo("y", int64(onnx.Int64), 2)}))
		g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{TypedOutputs: true})
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		g.Nodes[g.Input("x")].Ints = x
		res, err := gpucc.Run(context.Background(), g, gpucc.Options{})
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if o := res.Outputs["y"]; o.DType != ir.I64 || !slices.Equal(o.Ints, w) {
			t.Errorf("%s = %v %v, want int64 %v", op, o.DType, o.Ints, w)
		}
	}
}

// TestOneHotRuntimeIndices: OneHot of run-time int64 indices (a negative
// one from the end, ones past either end matching nothing, the extremes)
// gives the bits of the same model with the indices folded.
func TestOneHotRuntimeIndices(t *testing.T) {
	idx := []int64{0, 3, -1, -4, 4, -5, math.MaxInt64, math.MinInt64}
	raw := model(11, graph([]msg{node("OneHot", "o", []string{"i", "depth", "values"}, []string{"y"}, attrInt("axis", 0))},
		[]msg{int64s("depth", []int64{1}, 4), floats("values", []int64{2}, -0.5, 3)},
		[]msg{typedValueInfo("i", int64(onnx.Int64), 8)}, []msg{valueInfo("y", 4, 8)}))
	var outs [2][]float32
	for k, consts := range []map[string]*onnx.Tensor{nil, {"i": {Name: "i", Type: onnx.Int64, Shape: []int{8}, Int64: idx}}} {
		g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Constants: consts})
		if err != nil {
			t.Fatal(err)
		}
		if id := g.Input("i"); id >= 0 {
			g.Nodes[id].Ints = idx
		}
		res, err := gpucc.Run(context.Background(), g, gpucc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		outs[k] = res.Outputs["y"].Data
	}
	if !slices.Equal(outs[0], outs[1]) || len(outs[0]) != 32 {
		t.Errorf("run-time indices: %v, folded: %v", outs[0], outs[1])
	}
	if outs[0][0] != 3 || outs[0][8+4] != -0.5 || outs[0][3*8+2] != 3 || outs[0][0*8+3] != 3 {
		t.Errorf("y = %v: want index 0 at [0,0], -4 (= 0) at [0,3], -1 (= 3) at [3,2], 4 nowhere", outs[0])
	}
}
