package onnx_test

import (
	"bytes"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestScatterElementsRuntime: ScatterElements of run-time int64 indices
// and values: duplicates take the last update (none), add wraps at
// int64's ends and leaves untouched elements alone, a negative index
// counts from the end, and an index outside the axis fails the run with
// invalid_input.
func TestScatterElementsRuntime(t *testing.T) {
	data := []int64{math.MaxInt64, 1, 2, 3}
	for _, c := range []struct {
		reduction string
		idx, upd  []int64
		want      []int64
	}{
		{"none", []int64{1, 1, -1}, []int64{10, 20, 30}, []int64{math.MaxInt64, 20, 2, 30}},
		{"add", []int64{0, 0, 2}, []int64{1, 1, 5}, []int64{math.MinInt64 + 1, 1, 7, 3}},
		{"mul", []int64{3, -1, 2}, []int64{2, 3, 0}, []int64{math.MaxInt64, 1, 0, 18}},
	} {
		attrs := []msg{attrInt("axis", 0)}
		if c.reduction != "none" {
			attrs = append(attrs, attrStr("reduction", c.reduction))
		}
		raw := model(16, graph([]msg{node("ScatterElements", "s", []string{"d", "i", "u"}, []string{"y"}, attrs...)}, nil,
			[]msg{typedValueInfo("d", int64(onnx.Int64), 4), typedValueInfo("i", int64(onnx.Int64), 3), typedValueInfo("u", int64(onnx.Int64), 3)},
			[]msg{typedValueInfo("y", int64(onnx.Int64), 4)}))
		res, err := runModel(t, raw, nil, map[string][]int64{"d": data, "i": c.idx, "u": c.upd})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Outputs["y"].Ints; !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.reduction, got, c.want)
		}
		bad := slices.Clone(c.idx)
		bad[1] = 4
		if _, err := runModel(t, raw, nil, map[string][]int64{"d": data, "i": bad, "u": c.upd}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
			t.Errorf("%s: index 4 of 4: %v, want invalid_input", c.reduction, err)
		}
	}
}

// TestScatterNDRuntime: ScatterND replaces whole rows, the last update of
// a repeated row winning; a row outside fails the run with invalid_input.
func TestScatterNDRuntime(t *testing.T) {
	raw := model(16, graph([]msg{node("ScatterND", "s", []string{"d", "i", "u"}, []string{"y"})}, nil,
		[]msg{valueInfo("d", 3, 2), typedValueInfo("i", int64(onnx.Int64), 3, 1), valueInfo("u", 3, 2)}, []msg{valueInfo("y", 3, 2)}))
	negZero := float32(math.Copysign(0, -1))
	res, err := runModel(t, raw, map[string][]float32{"d": {1, negZero, 3, 4, 5, 6}, "u": {7, 8, 9, 10, 11, 12}}, map[string][]int64{"i": {2, -1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Outputs["y"].Data, []float32{11, 12, 3, 4, 9, 10}; !slices.Equal(got, want) {
		t.Errorf("y = %v, want %v", got, want)
	}
	if _, err := runModel(t, raw, map[string][]float32{"d": make([]float32, 6), "u": make([]float32, 6)}, map[string][]int64{"i": {0, 3, 0}}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("row 3 of 3: %v, want invalid_input", err)
	}
}

// TestScatterNodeTests runs onnx 1.12's scatter node tests (test_scatter*,
// test_scatternd*) as TestNodeTests does, on every backend that starts
// here, their lines as node_tests.txt records them, each backend's bits
// cpu's; and with every input at run time (TestNodeTestsTypedInputs'
// form), each passing on cpu and giving its bits on native, wasm and
// webgpu (TestNodeTestsUnion's rows). It is the scatter rows' part of
// those suites, quick enough to run on its own.
func TestScatterNodeTests(t *testing.T) {
	dir := nodeTests(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/node_tests.txt")
	if err != nil {
		t.Fatal(err)
	}
	backends := openBackends(t)
	var ran []ranTest
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "test_scatter") {
			continue
		}
		nt := readNodeTest(t, dir, e.Name())
		g, err := nt.load()
		if err != nil {
			t.Errorf("%s: %v", nt.name, err)
			continue
		}
		line, bits := checkReference(t, backends["cpu"], nt, g)
		if !strings.Contains(string(golden), line+"\n") {
			t.Errorf("%s: %q is not node_tests.txt's line", nt.name, line)
		}
		if bits != nil {
			ran = append(ran, ranTest{name: nt.name, g: g, bits: bits})
		}
		if ok, why := runTyped(t, nt); !ok {
			t.Errorf("%s with run-time inputs: %s", nt.name, why)
		}
	}
	if len(ran) < 9 {
		t.Errorf("%d scatter node tests ran, want at least 9", len(ran))
	}
	var names []string // TestNodeTestsUnion's rows: run-time inputs on every backend
	for _, r := range ran {
		names = append(names, r.name)
	}
	union, err := os.ReadFile(unionGolden)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range unionRows(t, dir, names) {
		if !strings.Contains(string(union), r.line()+"\n") || !r.inUnion() {
			t.Errorf("%s: union row %q, not %s's", r.name, r.line(), unionGolden)
		}
	}
	for name, rt := range backends {
		if name != "cpu" {
			checkBackend(t, rt, ran)
		}
	}
}

// TestScatterEmptyUpdates: indices and updates of no element (constants:
// gpucc's run-time tensors are never empty) leave the data unchanged, for
// ScatterND and ScatterElements and every reduction; empty indices with
// updates that are not empty are invalid_graph.
func TestScatterEmptyUpdates(t *testing.T) {
	data := []float32{1, float32(math.Copysign(0, -1)), 3, 4, 5, 6}
	for _, op := range []string{"ScatterND", "ScatterElements"} {
		for _, red := range []string{"none", "add", "mul", "max", "min"} {
			idx, upd := int64s("i", []int64{0, 1}), floats("u", []int64{0, 2})
			if op == "ScatterElements" {
				idx, upd = int64s("i", []int64{0, 2}), floats("u", []int64{0, 2})
			}
			raw := model(18, graph([]msg{node(op, "s", []string{"d", "i", "u"}, []string{"y"}, attrStr("reduction", red))}, []msg{idx, upd},
				[]msg{valueInfo("d", 3, 2)}, []msg{valueInfo("y", 3, 2)}))
			res, err := runModel(t, raw, map[string][]float32{"d": data}, nil)
			if err != nil {
				t.Fatalf("%s %s: %v", op, red, err)
			}
			if got := res.Outputs["y"].Data; !slices.Equal(bitsOf(got), bitsOf(data)) {
				t.Errorf("%s %s: %v, want the data %v", op, red, got, data)
			}
		}
	}
	raw := model(16, graph([]msg{node("ScatterND", "s", []string{"d", "i", "u"}, []string{"y"})}, []msg{int64s("i", []int64{0, 1})},
		[]msg{valueInfo("d", 3, 2), valueInfo("u", 1, 2)}, []msg{valueInfo("y", 3, 2)}))
	if _, err := onnx.Load(bytes.NewReader(raw), onnx.Options{}); gpucc.CodeOf(err) != ir.CodeInvalidGraph {
		t.Errorf("empty indices, updates [1, 2]: %v, want invalid_graph", err)
	}
}

func bitsOf(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}

// TestScatterMaxMin: opset 18's reductions max and min import (ScatterND
// and ScatterElements): repeated indices fold in order from the data's
// value, -0 below +0, and a NaN wins (returned as the quiet NaN, as every
// NaN output is: ir.Limits).
func TestScatterMaxMin(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	nan := math.Float32frombits(0x7fc00001)
	data := []float32{1, 0, 5}
	upd := []float32{3, negZero, 2, nan}
	idx := []int64{0, 1, 0, 2}
	for _, c := range []struct {
		op, red string
		want    []uint32
	}{
		{"ScatterND", "max", []uint32{0x40400000, 0x00000000, 0x7fc00000}},
		{"ScatterND", "min", []uint32{0x3f800000, 0x80000000, 0x7fc00000}},
		{"ScatterElements", "max", []uint32{0x40400000, 0x00000000, 0x7fc00000}},
		{"ScatterElements", "min", []uint32{0x3f800000, 0x80000000, 0x7fc00000}},
	} {
		is := []int64{4}
		if c.op == "ScatterND" {
			is = []int64{4, 1}
		}
		raw := model(18, graph([]msg{node(c.op, "s", []string{"d", "i", "u"}, []string{"y"}, attrStr("reduction", c.red))}, nil,
			[]msg{valueInfo("d", 3), typedValueInfo("i", int64(onnx.Int64), is...), valueInfo("u", 4)}, []msg{valueInfo("y", 3)}))
		res, err := runModel(t, raw, map[string][]float32{"d": data, "u": upd}, map[string][]int64{"i": idx})
		if err != nil {
			t.Fatalf("%s %s: %v", c.op, c.red, err)
		}
		if got := bitsOf(res.Outputs["y"].Data); !slices.Equal(got, c.want) {
			t.Errorf("%s %s: %#x, want %#x", c.op, c.red, got, c.want)
		}
	}
}
