package onnx_test

import (
	"bytes"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

var (
	w1 = []float32{0.5, -1, 0.25, 2, -0.75, 1.5, 0.125, -0.5, 1, 0.3, -0.2, 0.6}
	b1 = []float32{0.1, -0.2, 0.3, 0}
	w2 = []float32{1, -1, 0.5, 0.25, -0.5, 2, 0.75, -0.125}
	b2 = []float32{0.01, -0.02}
)

// mlpModel is x[N,3] → Gemm(W1, b1) → Relu → MatMul(W2) → Add(b2) →
// Softmax, the batch dimension dynamic.
func mlpModel() []byte {
	return model(13, graph(
		[]msg{
			node("Gemm", "fc1", []string{"x", "W1", "b1"}, []string{"h"}),
			node("Relu", "act", []string{"h"}, []string{"r"}),
			node("MatMul", "fc2", []string{"r", "W2"}, []string{"m"}),
			node("Add", "bias", []string{"m", "b2"}, []string{"z"}),
			node("Softmax", "probs", []string{"z"}, []string{"y"}, attrInt("axis", -1)),
		},
		[]msg{floats("W1", []int64{3, 4}, w1...), floats("b1", []int64{4}, b1...), floats("W2", []int64{4, 2}, w2...), floats("b2", []int64{2}, b2...)},
		[]msg{valueInfo("x", -1, 3)},
		[]msg{valueInfo("y", -1, 2)},
	))
}

// TestLoadMLP checks that an imported MLP keeps its names and computes,
// bit for bit, what the same layers built with ir.Builder compute.
func TestLoadMLP(t *testing.T) {
	x := []float32{1, 2, -3, -0.5, 0.25, 4}
	g, err := onnx.Load(bytes.NewReader(mlpModel()), onnx.Options{InputShapes: map[string][]int{"x": {2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetInput("x", x); err != nil {
		t.Fatal(err)
	}
	b := ir.NewBuilder()
	in := b.NamedInput("x", ir.Shape{2, 3}, x)
	h := in.MatMul(b.Input(ir.Shape{3, 4}, w1)).Add(b.Input(ir.Shape{4}, b1)).Relu()
	b.Output("y", h.MatMul(b.Input(ir.Shape{4, 2}, w2)).Add(b.Input(ir.Shape{2}, b2)).Softmax(-1))
	want, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(outputs(want), outputs(g)); diff != "" {
		t.Errorf("imported MLP differs from the built one (-built +imported):\n%s", diff)
	}
	if got := g.Input("x"); got < 0 || !g.Nodes[got].Shape.Equal(ir.Shape{2, 3}) {
		t.Errorf("input x: node %d", got)
	}
}

// outputs evaluates g with cpuref: each output's name and bits (an
// integer or bool output's values as float32's, exact below 2^24).
func outputs(g *ir.Graph) map[string][]uint32 {
	out := map[string][]uint32{}
	if !typedGraph(g) {
		vals := cpuref.Eval(g)
		for _, o := range g.Outputs {
			for _, v := range vals[o.ID] {
				out[o.Name] = append(out[o.Name], mathBits(v))
			}
		}
		return out
	}
	vals, err := cpuref.EvalTyped(g)
	if err != nil {
		panic(err)
	}
	for _, o := range g.Outputs {
		v := vals[o.ID]
		for _, x := range v.F {
			out[o.Name] = append(out[o.Name], mathBits(x))
		}
		for _, x := range v.I {
			out[o.Name] = append(out[o.Name], mathBits(float32(x)))
		}
	}
	return out
}

// typedGraph reports whether a node of g has a dtype other than float32.
func typedGraph(g *ir.Graph) bool {
	return slices.ContainsFunc(g.Nodes, func(n ir.Node) bool { return n.DType != ir.F32 })
}

// TestLoadParams: with Params, the float32 initializers are the graph's
// parameters, named as in the model.
func TestLoadParams(t *testing.T) {
	g, err := onnx.Load(bytes.NewReader(mlpModel()), onnx.Options{Params: true, InputShapes: map[string][]int{"x": {2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range g.Params() {
		names = append(names, p.Name+g.Nodes[p.ID].Shape.String())
	}
	if diff := cmp.Diff([]string{"W1[3,4]", "b1[4]", "W2[4,2]", "b2[2]"}, names); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
}

// shapeModel reshapes x[2,3,4] to [dim0, -1] with the target computed by a
// shape subgraph (Shape, Gather, Unsqueeze, Concat), which must fold.
func shapeModel() []byte {
	return model(13, graph(
		[]msg{
			node("Shape", "s", []string{"x"}, []string{"shape"}),
			node("Gather", "g", []string{"shape", "zero"}, []string{"d0"}, attrInt("axis", 0)),
			node("Unsqueeze", "u", []string{"d0", "axes"}, []string{"d0v"}),
			node("Concat", "c", []string{"d0v", "minus1"}, []string{"target"}, attrInt("axis", 0)),
			node("Reshape", "r", []string{"x", "target"}, []string{"flat"}),
			node("Transpose", "t", []string{"flat"}, []string{"y"}, attrInts("perm", 1, 0)),
		},
		[]msg{int64s("zero", nil, 0), int64s("axes", []int64{1}, 0), int64s("minus1", []int64{1}, -1)},
		[]msg{valueInfo("x", 2, 3, 4)},
		[]msg{valueInfo("y", 12, 2)},
	))
}

func TestLoadFoldsShapes(t *testing.T) {
	g, err := onnx.Load(bytes.NewReader(shapeModel()), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, n := range g.Nodes {
		ops = append(ops, n.Op.String()+n.Shape.String())
	}
	if diff := cmp.Diff([]string{"input[2,3,4]", "reshape[2,12]", "transpose[12,2]"}, ops); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

// TestLoadRefuses: each model gpucc cannot run, or that breaks a rule or
// a limit, is refused with its stable code and a message naming why.
func TestLoadRefuses(t *testing.T) {
	relu := func(name string, attrs ...msg) msg { return node("Relu", name, []string{"x"}, []string{"y"}, attrs...) }
	one := func(nodes []msg, inits ...msg) []byte {
		return model(13, graph(nodes, inits, []msg{valueInfo("x", 2, 3)}, []msg{valueInfo("y", 2, 3)}))
	}
	external := floats("W", []int64{2, 3}, 1, 2, 3, 4, 5, 6).varint(14, 1)
	chain := []msg{
		node("Relu", "a", []string{"x"}, []string{"y1"}),
		node("Relu", "b", []string{"y1"}, []string{"y2"}),
		node("Relu", "c", []string{"y2"}, []string{"y"}),
	}
	mlp := mlpModel()
	tests := []struct {
		name   string
		model  []byte
		opts   onnx.Options
		code   ir.Code
		substr string
	}{
		{"unknown op", one([]msg{node("Foo", "n1", []string{"x"}, []string{"y"})}), onnx.Options{}, ir.CodeUnsupported, `Foo node "n1" (opset 13): the op is not supported`},
		{"unknown attribute", one([]msg{relu("n1", attrInt("bogus", 1))}), onnx.Options{}, ir.CodeUnsupported, `attribute "bogus" is not supported`},
		{"other domain", one([]msg{relu("n1").str(7, "com.microsoft")}), onnx.Options{}, ir.CodeUnsupported, `domain "com.microsoft"`},
		{"external data", one([]msg{node("Add", "n", []string{"x", "W"}, []string{"y"})}, external), onnx.Options{}, ir.CodeUnsupported, "external file"},
		{"non-finite initializer", one([]msg{node("Add", "n", []string{"x", "W"}, []string{"y"})}, floats("W", []int64{1}, float32(inf()))), onnx.Options{}, ir.CodeUnsupported, "finite values only"},
		{"int64 output over 2^24", model(13, graph([]msg{node("Constant", "k", nil, []string{"y"}, attrInt("value_int", 1<<24+1))}, nil, []msg{valueInfo("x", 2, 3)}, []msg{valueInfo("y")})), onnx.Options{}, ir.CodeUnsupported, `output "y" holds the int64 16777217`},
		{"arithmetic on a run-time integer", model(13, graph([]msg{node("ArgMax", "a", []string{"x"}, []string{"i"}), node("Add", "add", []string{"i", "i"}, []string{"y"})}, nil, []msg{valueInfo("x", 2, 3)}, []msg{valueInfo("y", 1, 3)})), onnx.Options{}, ir.CodeUnsupported, `Add node "add" (opset 13): input 0 is an integer computed at run time`},
		{"batched matmul over rank 4", model(13, graph([]msg{node("MatMul", "mm", []string{"x", "x"}, []string{"y"})}, nil, []msg{valueInfo("x", 2, 1, 1, 3, 3)}, []msg{valueInfo("y", 2, 1, 1, 3, 3)})), onnx.Options{}, ir.CodeUnsupported, "matmul takes rank 4 at most"},
		{"empty run-time slice", model(13, graph([]msg{node("Slice", "sl", []string{"x", "st", "en"}, []string{"y"})}, []msg{int64s("st", []int64{1}, 1), int64s("en", []int64{1}, 1)}, []msg{valueInfo("x", 2, 3)}, []msg{valueInfo("y", 0, 3)})), onnx.Options{}, ir.CodeUnsupported, `Slice node "sl" (opset 13): an empty result`},
		{"run-time gather over the mask bound", model(13, graph([]msg{node("Gather", "g", []string{"x", "i"}, []string{"y"})}, []msg{int64s("i", []int64{2}, 2, 0)}, []msg{valueInfo("x", 1<<12, 1<<8)}, []msg{valueInfo("y", 2, 1<<8)})), onnx.Options{}, ir.CodeUnsupported, "its mask of 2097152 elements is over the 1048576 a tensor may hold"},
		{"And of one input", model(13, graph([]msg{node("And", "a", []string{"x"}, []string{"y"})}, nil, []msg{valueInfo("x", 2, 3)}, []msg{valueInfo("y", 2, 3)})), onnx.Options{}, ir.CodeInvalidGraph, "1 inputs; it takes 2"},
		{"Not of two inputs", model(13, graph([]msg{node("Not", "n", []string{"x", "x"}, []string{"y"})}, nil, []msg{valueInfo("x", 2, 3)}, []msg{valueInfo("y", 2, 3)})), onnx.Options{}, ir.CodeInvalidGraph, "2 inputs; it takes 1"},
		{"dynamic dimension unbound", mlp, onnx.Options{}, ir.CodeInvalidInput, `dimension 0 of input "x" is dynamic ("N")`},
		{"shape against the model", mlp, onnx.Options{InputShapes: map[string][]int{"x": {2, 4}}}, ir.CodeInvalidInput, "dimension 1 of 3 in the model"},
		{"shape of no input", mlp, onnx.Options{InputShapes: map[string][]int{"x": {2, 3}, "z": {1}}}, ir.CodeInvalidInput, `no input named "z"`},
		{"nodes over the limit", one(chain), onnx.Options{Limits: ir.Limits{MaxNodes: 2}}, ir.CodeLimitExceeded, "more than 2 nodes"},
		{"bytes over the limit", mlp, onnx.Options{Limits: ir.Limits{MaxGraphBytes: 64}}, ir.CodeLimitExceeded, "limit of 64 bytes"},
		{"initializer over the element limit", one([]msg{node("Add", "n", []string{"x", "W"}, []string{"y"})}, floats("W", []int64{1 << 40})), onnx.Options{}, ir.CodeLimitExceeded, "elements per tensor"},
		{"initializers over the storage limit", mlp, onnx.Options{Limits: ir.Limits{MaxStorageBytes: 64}, InputShapes: map[string][]int{"x": {2, 3}}}, ir.CodeLimitExceeded, "storage limit of 64"},
		{"constant over the element limit", model(13, graph([]msg{node("ConstantOfShape", "big", []string{"s"}, []string{"c"}), node("Add", "n", []string{"x", "c"}, []string{"y"})}, []msg{int64s("s", []int64{2}, 1<<20, 1<<20)}, []msg{valueInfo("x", 2, 3)}, []msg{valueInfo("y", 2, 3)})), onnx.Options{}, ir.CodeLimitExceeded, "elements per tensor"},
		{"raw data of the wrong size", one([]msg{node("Add", "n", []string{"x", "W"}, []string{"y"})}, floats("W", []int64{2, 3}, 1, 2)), onnx.Options{}, ir.CodeInvalidGraph, "raw_data holds 8 bytes"},
		// FuzzLoadOps (f9095a2ba69f5e21): no exponent, no tensor; the rule gave none, an internal error.
		{"Pow of an empty exponent", model(13, graph([]msg{node("Pow", "p", []string{"x", "e"}, []string{"y"})}, []msg{floats("e", []int64{0})}, []msg{valueInfo("x", 2, 1)}, []msg{valueInfo("y", 2, 0)})), onnx.Options{}, ir.CodeUnsupported, `Pow node "p" (opset 13): an empty exponent`},
		// FuzzLoadOps (78964a5e763258e8): a scalar w indexed its shape's first dimension, a panic.
		{"MatMulInteger of a scalar w", model(13, graph([]msg{node("MatMulInteger", "m", []string{"x", "w"}, []string{"y"})}, nil, []msg{typedValueInfo("x", int64(onnx.Uint8), 2, 3), typedValueInfo("w", int64(onnx.Uint8))}, []msg{typedValueInfo("y", int64(onnx.Int32), 2)})), onnx.Options{}, ir.CodeInvalidGraph, `MatMulInteger node "m" (opset 13): matmul of a scalar`},
		{"ConvInteger of a scalar w", model(13, graph([]msg{node("ConvInteger", "m", []string{"x", "w"}, []string{"y"})}, nil, []msg{typedValueInfo("x", int64(onnx.Uint8), 1, 1, 3, 3), typedValueInfo("w", int64(onnx.Uint8))}, []msg{typedValueInfo("y", int64(onnx.Int32), 2)})), onnx.Options{}, ir.CodeInvalidGraph, "W has shape [] for X of rank 4"},
		// A constant whose shape's count wraps int64 to its one value: Size gave 1.
		{"a constant whose shape's count wraps", model(13, graph([]msg{node("Size", "s", []string{"x"}, []string{"y"})}, nil, []msg{valueInfo("x", 7, 0x6db6db6db6db6db7)}, []msg{valueInfo("y")})), onnx.Options{Constants: map[string]*onnx.Tensor{"x": {Type: onnx.Float32, Shape: []int{7, 0x6db6db6db6db6db7}, Float32: []float32{5}}}}, ir.CodeLimitExceeded, "has shape [7 7905747460161236407], over the limit"},
		{"a constant of a negative dimension", model(13, graph([]msg{node("Size", "s", []string{"x"}, []string{"y"})}, nil, []msg{valueInfo("x")}, []msg{valueInfo("y")})), onnx.Options{Constants: map[string]*onnx.Tensor{"x": {Type: onnx.Float32, Shape: []int{-1, -1}, Float32: []float32{5}}}}, ir.CodeInvalidInput, "a negative dimension"},
		{"undefined input", one([]msg{node("Relu", "n", []string{"nope"}, []string{"y"})}), onnx.Options{}, ir.CodeInvalidGraph, `input "nope" is not defined`},
		{"truncated", mlp[:len(mlp)-7], onnx.Options{}, ir.CodeInvalidGraph, "malformed ONNX model"},
		{"no graph", msg(nil).varint(1, 8), onnx.Options{}, ir.CodeInvalidGraph, "no graph"},
		{"shape mismatch", model(13, graph([]msg{node("Add", "n", []string{"x", "W"}, []string{"y"})}, []msg{floats("W", []int64{4}, 1, 2, 3, 4)}, []msg{valueInfo("x", 2, 3)}, []msg{valueInfo("y", 2, 3)})), onnx.Options{}, ir.CodeInvalidGraph, `Add node "n" (opset 13)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := onnx.Load(bytes.NewReader(tt.model), tt.opts)
			var ie *ir.Error
			if !errors.As(err, &ie) {
				t.Fatalf("Load = %v, %v; want an *ir.Error of code %s", g != nil, err, tt.code)
			}
			if ie.Code != tt.code || !strings.Contains(ie.Error(), tt.substr) {
				t.Errorf("Load: %v\nwant code %s and a message containing %q", err, tt.code, tt.substr)
			}
		})
	}
}

// FuzzLoad checks that Load never panics, that what it accepts is a
// valid graph (which cpuref.EvalTyped runs, or refuses with a code) and
// what it refuses carries a stable code, and that it allocates within
// fuzzAlloc. Its input is a model's bytes (grammar
// false: mutated protobuf) or a program of fuzzgrammar_test.go's op
// grammar (grammar true), which writes a structurally valid model of real
// ops, attributes and constants. Findings are kept under
// testdata/fuzz/FuzzLoad and run by go test.
func FuzzLoad(f *testing.F) {
	f.Add(false, mlpModel())
	f.Add(false, shapeModel())
	f.Add(false, model(13, graph([]msg{node("LayerNormalization", "ln", []string{"x", "s"}, []string{"y"}, attrFloat("epsilon", 1e-5))}, []msg{floats("s", []int64{3}, 1, 2, 3)}, []msg{valueInfo("x", 2, 3)}, []msg{valueInfo("y", 2, 3)})))
	for op := range fuzzOps {
		f.Add(true, []byte{2, 1, 3, 0, byte(op), 1, 2, 3, 0, 1})
		f.Add(true, []byte{3, 3, 1, 2, 3, 4, 4, byte(op), 3, 240, 1, 2, byte(op), 0, 1, 2, 3, 4, 5})
	}
	f.Fuzz(func(t *testing.T, grammar bool, data []byte) {
		doc := data
		if grammar {
			doc = fuzzModel(data)
		}
		lim := ir.Limits{MaxNodes: 64, MaxElements: 1 << 12, MaxStorageBytes: 1 << 16}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g, err := onnx.Load(bytes.NewReader(doc), onnx.Options{Limits: lim, InputShapes: nil})
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > fuzzAlloc+8*uint64(len(doc)) {
			t.Errorf("Load of %d bytes allocated %d MiB (%v)", len(doc), d>>20, err)
		}
		if err != nil {
			var ie *ir.Error
			if !errors.As(err, &ie) || ie.Code == ir.CodeInternal {
				t.Fatalf("Load: %v (want an *ir.Error with a code other than internal)", err)
			}
			return
		}
		if err := ir.Validate(g, lim); err != nil {
			t.Fatalf("Load accepted a graph that does not validate: %v", err)
		}
		// The reference runs what Load accepts, or fails with a code (an
		// integer division by zero, say), never panics.
		if _, err := cpuref.EvalTyped(g); err != nil {
			var ie *ir.Error
			if !errors.As(err, &ie) || ie.Code == ir.CodeInternal {
				t.Fatalf("cpuref.EvalTyped of an imported graph: %v", err)
			}
		}
	})
}

// fuzzAlloc bounds what FuzzLoad's Load may allocate beyond 8 bytes a
// byte of model: its limits allow 64 KiB of constants and 64 nodes.
const fuzzAlloc = 16 << 20
