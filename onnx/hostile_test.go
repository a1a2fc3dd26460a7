package onnx_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"google.golang.org/protobuf/encoding/protowire"
)

// hostileLimits let huge declared tensors through the limit checks (a
// host that raised them for large models, as realLimits do), so that
// each model below reaches the code that reads its data.
var hostileLimits = ir.Limits{MaxNodes: 1 << 16, MaxElements: 1 << 24, MaxStorageBytes: 1 << 30, MaxOutputs: 64}

// hostileAlloc bounds what Load may allocate to refuse a hostile model:
// 8 bytes a byte of model (DecodeBytesPerByte's structures, the model's
// own copy) and 1 MiB, whatever its tensors claim.
func hostileAlloc(size int) uint64 { return 8*uint64(size) + 1<<20 }

// loadAllocs imports doc under o and returns what the import gave and the
// bytes it allocated (runtime.MemStats.TotalAlloc, after a collection).
func loadAllocs(doc []byte, o onnx.Options) (*ir.Graph, uint64, error) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g, err := onnx.Load(bytes.NewReader(doc), o)
	runtime.ReadMemStats(&after)
	return g, after.TotalAlloc - before.TotalAlloc, err
}

// TestHostileModels: a model that claims more than it holds (dimensions
// over its data, a repeated field's length past its end, dimensions whose
// product overflows), nests subgraphs past the bound or keeps data in an
// external file is refused with its stable code, allocating at most
// hostileAlloc of its size: memory is bounded before anything is
// validated. A tensor claiming 2^22 elements in 8 bytes of raw_data
// allocated its 2^22 elements (16 MiB for float32, 32 MiB for int8 in its
// int64 carrier) before its size was checked, from a model of 80 bytes.
func TestHostileModels(t *testing.T) {
	add := func(inits ...msg) []byte {
		return model(13, graph([]msg{node("Add", "n", []string{"x", "W"}, []string{"y"})}, inits, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)}))
	}
	typed := func(dt onnx.DataType, dims []int64, field protowire.Number, data []byte) msg {
		m := msg(nil)
		for _, d := range dims {
			m = m.varint(1, d)
		}
		return m.varint(2, int64(dt)).str(8, "W").bytes(field, data)
	}
	external := floats("W", []int64{2}, 1, 2).varint(14, 1)
	externalEntry := floats("W", []int64{2}, 1, 2).bytes(13, msg(nil).str(1, "location").str(2, "w.bin"))
	constant := func(tensor msg) []byte {
		return model(13, graph([]msg{node("Constant", "k", nil, []string{"W"}, msg(nil).str(1, "value").varint(20, 4).bytes(5, tensor)),
			node("Add", "n", []string{"x", "W"}, []string{"y"})}, nil, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)}))
	}
	inBranch := func(init msg) []byte {
		b := branch([]msg{node("Add", "a", []string{"x", "W"}, []string{"t"})}, []msg{init}, "t")
		return model(13, graph([]msg{ifNode("if", "c", []string{"y"}, b, elseNeg)}, []msg{boolConst("c", true)}, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)}))
	}
	var deep msg = thenSquare
	for range 1000 {
		deep = branch([]msg{ifNode("if", "k", []string{"t"}, deep, elseNeg)}, nil, "t")
	}
	var manyDims msg
	for range 100 {
		manyDims = manyDims.varint(1, 1)
	}
	// A graph field whose length runs 2^40 bytes past the model's end.
	pastEnd := protowire.AppendVarint(protowire.AppendTag(msg(nil).varint(1, 8), 7, protowire.BytesType), 1<<40)
	tests := []struct {
		name   string
		model  []byte
		code   ir.Code
		substr string
	}{
		{"float32 raw_data short of its dims", add(floats("W", []int64{1 << 22}, 1, 2)), ir.CodeInvalidGraph, "raw_data holds 8 bytes"},
		{"int8 raw_data short of its dims", add(typed(onnx.Int8, []int64{1 << 22}, 9, []byte{1})), ir.CodeInvalidGraph, "raw_data holds 1 bytes"},
		{"raw_data longer than its dims", add(floats("W", []int64{2}, 1, 2, 3)), ir.CodeInvalidGraph, "raw_data holds 12 bytes"},
		{"int64_data short of its dims", add(int64s("W", []int64{1 << 22}, 7)), ir.CodeInvalidGraph, "holds 1 elements"},
		{"float_data short of its dims", add(typed(onnx.Float32, []int64{1 << 22}, 4, make([]byte, 8))), ir.CodeInvalidGraph, "holds 2 elements"},
		{"int32_data longer than its dims", add(typed(onnx.Int32, []int64{2}, 5, []byte{1, 2, 3})), ir.CodeInvalidGraph, "more than its 2 elements"},
		{"dims over the element limit", add(floats("W", []int64{1 << 25}, 1)), ir.CodeLimitExceeded, "elements per tensor"},
		{"dims whose product overflows", add(floats("W", []int64{1 << 40, 1 << 40, 1 << 40}, 1)), ir.CodeLimitExceeded, "elements per tensor"},
		{"a negative dim", add(floats("W", []int64{-1, 2}, 1, 2)), ir.CodeInvalidGraph, "dimension 0 of -1"},
		{"100 dims", add(append(manyDims, floats("W", nil, 1)...)), ir.CodeUnsupported, "rank 100"},
		{"input dims over the element limit", model(13, graph([]msg{node("Relu", "r", []string{"x"}, []string{"y"})}, nil, []msg{valueInfo("x", 1<<40)}, []msg{valueInfo("y", 2)})), ir.CodeLimitExceeded, "elements"},
		{"input dims whose product overflows", model(13, graph([]msg{node("Relu", "r", []string{"x"}, []string{"y"})}, nil, []msg{valueInfo("x", 1<<20, 1<<20, 1<<20, 1<<20)}, []msg{valueInfo("y", 2)})), ir.CodeLimitExceeded, "elements"},
		{"a field past the model's end", pastEnd, ir.CodeInvalidGraph, "malformed"},
		{"If nested 1001 deep", model(13, graph([]msg{ifNode("if", "k", []string{"y"}, deep, elseNeg)}, []msg{boolConst("k", true)}, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)})), ir.CodeLimitExceeded, "nest more than 16 deep"},
		{"external data", add(external), ir.CodeUnsupported, "external file"},
		{"an external_data entry", add(externalEntry), ir.CodeUnsupported, "external file"},
		{"external data in a Constant", constant(external), ir.CodeUnsupported, "external file"},
		{"external data in a branch's initializer", inBranch(external), ir.CodeUnsupported, "external file"},
		{"a branch's raw_data short of its dims", inBranch(floats("W", []int64{1 << 22}, 1, 2)), ir.CodeInvalidGraph, "raw_data holds 8 bytes"},
		{"a Constant's raw_data short of its dims", constant(floats("W", []int64{1 << 22}, 1, 2)), ir.CodeInvalidGraph, "raw_data holds 8 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d, err := loadAllocs(tt.model, onnx.Options{Limits: hostileLimits, InputShapes: map[string][]int{}})
			var ie *ir.Error
			if !errors.As(err, &ie) || ie.Code != tt.code || !strings.Contains(err.Error(), tt.substr) {
				t.Errorf("Load: %v; want %s containing %q", err, tt.code, tt.substr)
			}
			t.Logf("%d bytes of model: %d allocated: %v", len(tt.model), d, err)
			if d > hostileAlloc(len(tt.model)) {
				t.Errorf("a model of %d bytes allocated %d bytes, over %d", len(tt.model), d, hostileAlloc(len(tt.model)))
			}
		})
	}
}

// TestHostileInputs: graph inputs are charged against MaxStorageBytes at
// their carriers' bytes (8 an element for a bool's int64) before their
// placeholders are made, so the placeholders of an import's inputs, made
// before any data is given them, take at most MaxStorageBytes: 32 bool
// inputs of 2^20 elements, a model of 1.7 KB, allocated 268 MB under the
// default 32 MiB when a bool counted 1 byte, 67 MB (twice the limit) at
// 4 bytes (fe637bc); now the fifth is refused, within the limit and 1 MiB.
// Each dtype's inputs fill the limit to the byte of their carriers and no
// further.
func TestHostileInputs(t *testing.T) {
	var ins, nodes []msg
	for i := range 32 {
		n := fmt.Sprintf("b%d", i)
		ins = append(ins, typedValueInfo(n, int64(onnx.Bool), 1<<20))
		nodes = append(nodes, node("Cast", "", []string{n}, []string{"c" + n}, attrInt("to", 1)))
	}
	doc := model(13, graph(nodes, nil, ins, []msg{valueInfo("cb0", 1<<20)}))
	_, d, err := loadAllocs(doc, onnx.Options{})
	t.Logf("%d bytes of model: %d allocated: %v", len(doc), d, err)
	var ie *ir.Error
	if !errors.As(err, &ie) || ie.Limit != "MaxStorageBytes" || !strings.Contains(ie.Field, "graph.input[4]") {
		t.Errorf("Load: %v; want limit_exceeded of MaxStorageBytes at input 4", err)
	}
	if max := uint64(ir.DefaultLimits().MaxStorageBytes) + 1<<20; d > max {
		t.Errorf("allocated %d, over %d", d, max)
	}
	// Three import (with their casts to float32), as bool inputs.
	doc = model(13, graph(nodes[:3], nil, ins[:3], []msg{valueInfo("cb2", 1<<20)}))
	if g, err := onnx.Load(bytes.NewReader(doc), onnx.Options{}); err != nil || g.Nodes[g.Input("b2")].DType != ir.Bool {
		t.Errorf("3 bool inputs of 2^20: %v", err)
	}
	// Inputs of 2^18 elements under a limit of 8 MiB: 8 float32 ones fit
	// (4 bytes each), 4 of each other dtype (8); one more is refused.
	for _, c := range []struct {
		dt   onnx.DataType
		fits int
	}{{onnx.Float32, 8}, {onnx.Float16, 8}, {onnx.Int64, 4}, {onnx.Int32, 4}, {onnx.Uint8, 4}, {onnx.Bool, 4}, {onnx.Float64, 4}} {
		for _, k := range []int{c.fits, c.fits + 1} {
			var ins, outs []msg
			for i := range k {
				n := fmt.Sprintf("x%d", i)
				ins = append(ins, typedValueInfo(n, int64(c.dt), 1<<18))
				outs = append(outs, typedValueInfo(n, int64(c.dt), 1<<18))
			}
			doc := model(13, graph(nil, nil, ins, outs))
			_, d, err := loadAllocs(doc, onnx.Options{Limits: ir.Limits{MaxStorageBytes: 8 << 20}})
			if d > 8<<20+1<<20 {
				t.Errorf("%v: %d inputs allocated %d, over the limit and 1 MiB", c.dt, k, d)
			}
			if refused := errors.As(err, &ie) && ie.Limit == "MaxStorageBytes"; refused != (k > c.fits) {
				t.Errorf("%v: %d inputs of 2^18: %v", c.dt, k, err)
			}
		}
	}
}

// FuzzReadTensor reads a TensorProto (a node test's input_0.pb): any
// bytes give a tensor whose values fill its shape, or an *ir.Error of a
// code other than internal, allocating within hostileAlloc of their size
// for all the element count they may claim.
func FuzzReadTensor(f *testing.F) {
	f.Add([]byte(floats("x", []int64{2, 3}, 1, 2, 3, 4, 5, 6)))
	f.Add([]byte(int64s("i", []int64{3}, -1, 0, 1<<40)))
	f.Add([]byte(boolConst("b", true)))
	f.Add([]byte(msg(nil).varint(1, 1<<20).varint(2, int64(onnx.Float16)).bytes(5, []byte{1, 2})))
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		tt, err := onnx.ReadTensor(bytes.NewReader(b), hostileLimits)
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > hostileAlloc(len(b))+8*uint64(len(b)) {
			t.Errorf("%d bytes allocated %d", len(b), d)
		}
		if err != nil {
			var ie *ir.Error
			if !errors.As(err, &ie) || ie.Code == ir.CodeInternal {
				t.Fatalf("ReadTensor: %v (want an *ir.Error of a code other than internal)", err)
			}
			return
		}
		if n := len(tt.Float32) + len(tt.Float64) + len(tt.Int64); n != tt.Len() {
			t.Fatalf("%d values for shape %v", n, tt.Shape)
		}
	})
}

// TestInputValues: an input given its values at import (Options.
// InputValues: serve's form, gpucc run's --input) holds the caller's
// slice where its placeholder of zeros was, so an import of a model with
// a given 2^20 int64 input allocates no 8 MiB placeholder besides the data
// the caller already holds; a value that is not exactly the input's
// dtype, shape and values leaves the input zero-filled, for the caller's
// binding to refuse.
func TestInputValues(t *testing.T) {
	const n = 1 << 20
	doc := func(dt onnx.DataType) []byte {
		return model(13, graph(nil, nil, []msg{typedValueInfo("x", int64(dt), n)}, []msg{typedValueInfo("x", int64(dt), n)}))
	}
	ints := make([]int64, n)
	ints[7] = -1 << 62
	load := func(dt onnx.DataType, v *onnx.Tensor) (*ir.Graph, uint64) {
		g, d, err := loadAllocs(doc(dt), onnx.Options{Limits: ir.Limits{MaxStorageBytes: 64 << 20}, InputValues: map[string]*onnx.Tensor{"x": v}})
		if err != nil {
			t.Fatal(err)
		}
		return g, d
	}
	g, d := load(onnx.Int64, &onnx.Tensor{Type: onnx.Int64, Shape: []int{n}, Int64: ints})
	x := g.Nodes[g.Input("x")]
	if &x.Ints[0] != &ints[0] || d > 1<<20 {
		t.Errorf("a given int64 input: held the caller's slice %v, allocated %d; want it held, within 1 MiB", &x.Ints[0] == &ints[0], d)
	}
	_, d0 := load(onnx.Int64, nil)
	t.Logf("2^20 int64: %d bytes allocated given its values, %d with a placeholder", d, d0)
	if d0 < 8<<20 {
		t.Errorf("a placeholder of 2^20 int64 allocated %d", d0)
	}
	f := make([]float32, n)
	f[3] = -2.5
	g, _ = load(onnx.Float16, &onnx.Tensor{Type: onnx.Float16, Shape: []int{n}, Float32: f})
	if x := g.Nodes[g.Input("x")]; &x.Data[0] != &f[0] {
		t.Error("a given float16 input: not held")
	}
	nan := slices.Clone(f)
	nan[5] = float32(math.NaN())
	for _, c := range []struct {
		name string
		dt   onnx.DataType
		v    *onnx.Tensor
	}{
		{"another dtype", onnx.Int32, &onnx.Tensor{Type: onnx.Int64, Shape: []int{n}, Int64: ints}},
		{"another shape", onnx.Int64, &onnx.Tensor{Type: onnx.Int64, Shape: []int{n / 2, 2}, Int64: ints}},
		{"too few values", onnx.Int64, &onnx.Tensor{Type: onnx.Int64, Shape: []int{n}, Int64: ints[:n-1]}},
		{"out of int32's range", onnx.Int32, &onnx.Tensor{Type: onnx.Int32, Shape: []int{n}, Int64: ints}},
		{"bool of 2", onnx.Bool, &onnx.Tensor{Type: onnx.Bool, Shape: []int{n}, Int64: []int64{2}}},
		{"a NaN", onnx.Float32, &onnx.Tensor{Type: onnx.Float32, Shape: []int{n}, Float32: nan}},
		{"not a float16", onnx.Float16, &onnx.Tensor{Type: onnx.Float16, Shape: []int{n}, Float32: append([]float32{0.1}, f[1:]...)}},
	} {
		g, _ := load(c.dt, c.v)
		x := g.Nodes[g.Input("x")]
		if slices.ContainsFunc(x.Data, func(v float32) bool { return v != 0 }) || slices.ContainsFunc(x.Ints, func(v int64) bool { return v != 0 }) || len(x.Data)+len(x.Ints) != n {
			t.Errorf("%s: the input holds other than %d zeros", c.name, n)
		}
	}
}

// TestHostileConstants: a constant the import makes (ConstantOfShape,
// folding) counts against MaxStorageBytes at its carrier's bytes, 8 an
// element for int64, before it is allocated: 16 ConstantOfShape nodes of
// 2^20 int64 in a 917-byte model allocated 58.7 MB under the default 32
// MiB, refused at the eighth; now the fourth is (with the 12 bytes of
// its shape and value), within the limit and 1 MiB.
func TestHostileConstants(t *testing.T) {
	var nodes []msg
	for i := range 16 {
		nodes = append(nodes, node("ConstantOfShape", "", []string{"s"}, []string{fmt.Sprint("c", i)}, msg(nil).str(1, "value").varint(20, 4).bytes(5, int64s("v", []int64{1}, 7))))
	}
	nodes = append(nodes, node("Relu", "", []string{"x"}, []string{"y"}))
	doc := model(13, graph(nodes, []msg{int64s("s", []int64{1}, 1<<20)}, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)}))
	_, d, err := loadAllocs(doc, onnx.Options{})
	t.Logf("%d bytes of model: %d allocated: %v", len(doc), d, err)
	var ie *ir.Error
	if !errors.As(err, &ie) || ie.Limit != "MaxStorageBytes" || !strings.Contains(ie.Field, "graph.node[3]") {
		t.Errorf("Load: %v; want limit_exceeded of MaxStorageBytes at node 3", err)
	}
	if max := uint64(ir.DefaultLimits().MaxStorageBytes) + 1<<20; d > max {
		t.Errorf("allocated %d, over %d", d, max)
	}
}
