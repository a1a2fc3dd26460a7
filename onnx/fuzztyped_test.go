package onnx_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// typedInputs are the ONNX element types FuzzLoadTyped gives its input:
// float, double, int64, int32, bool, float16, uint8.
var typedInputs = []int64{1, 11, 7, 6, 9, 10, 2}

// doubles returns a float64 TensorProto in raw_data.
func doubles(name string, dims []int64, vs ...float64) msg {
	t := msg(nil)
	for _, d := range dims {
		t = t.varint(1, d)
	}
	raw := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(v))
	}
	return t.varint(2, 11).str(8, name).bytes(9, raw)
}

// bools returns a bool TensorProto in int32_data.
func bools(name string, dims []int64, vs ...bool) msg {
	t := msg(nil)
	for _, d := range dims {
		t = t.varint(1, d)
	}
	var packed []byte
	for _, v := range vs {
		b := byte(0)
		if v {
			b = 1
		}
		packed = append(packed, b)
	}
	return t.varint(2, 9).str(8, name).bytes(5, packed)
}

var fuzzDoubles = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 5e-324, math.MaxFloat64, -math.MaxFloat64, 709.78, -745.2, 1e300, math.Inf(1), math.NaN(), 3}

// typedModel builds a model from fuzz bytes as opsModel does, but with an
// input of a drawn dtype (typedInputs), float64 and bool initializers
// besides int64 and float32 ones, and nodes of one to three outputs, the
// last node's every output a graph output.
func typedModel(raw []byte) ([]byte, int64) {
	m, et, _ := typedModels(raw, false)
	return m, et
}

// typedInit is one of typedModels' initializers, by its ONNX type.
type typedInit struct {
	name   string
	et     int64
	shape  []int64
	ints   []int64
	floats []float32
	f64    []float64
}

// typedModels is typedModel, or, asInputs, the same model with each
// initializer a graph input of its type and shape instead (the inits
// returned, whose values the caller gives them).
func typedModels(raw []byte, asInputs bool) ([]byte, int64, []typedInit) {
	r := &reader{raw}
	var tinits []typedInit
	ops := onnx.Supported()
	et := typedInputs[r.n(len(typedInputs))]
	var dims []int64
	for range r.n(4) {
		dims = append(dims, int64(1+r.n(4)))
	}
	values := []string{"x"}
	var inits []msg
	for i := range r.n(5) {
		name := fmt.Sprintf("c%d", i)
		n := r.n(5)
		shape := []int64{int64(n)}
		if n == 1 && r.n(2) == 0 {
			shape = nil
		}
		switch r.n(4) {
		case 0:
			var vs []int64
			for range n {
				vs = append(vs, r.int())
			}
			inits = append(inits, int64s(name, shape, vs...))
			tinits = append(tinits, typedInit{name: name, et: 7, shape: shape, ints: vs})
		case 1:
			var vs []float32
			for range n {
				vs = append(vs, fuzzFloats[r.n(len(fuzzFloats))])
			}
			inits = append(inits, floats(name, shape, vs...))
			tinits = append(tinits, typedInit{name: name, et: 1, shape: shape, floats: vs})
		case 2:
			var vs []float64
			for range n {
				vs = append(vs, fuzzDoubles[r.n(len(fuzzDoubles))])
			}
			inits = append(inits, doubles(name, shape, vs...))
			tinits = append(tinits, typedInit{name: name, et: 11, shape: shape, f64: vs})
		default:
			var vs []bool
			for range n {
				vs = append(vs, r.n(2) == 1)
			}
			inits = append(inits, bools(name, shape, vs...))
			ti := typedInit{name: name, et: 9, shape: shape}
			for _, v := range vs {
				ti.ints = append(ti.ints, b2i(v))
			}
			tinits = append(tinits, ti)
		}
		values = append(values, name)
	}
	var nodes []msg
	var outs []string
	for i := range 1 + r.n(6) {
		op := ops[r.n(len(ops))]
		var ins []string
		for range 1 + r.n(3) {
			ins = append(ins, values[r.n(len(values))])
		}
		var attrs []msg
		for range r.n(3) / 2 { // mostly none: an attribute the op does not read is refused
			switch r.n(3) {
			case 0:
				attrs = append(attrs, attrInt(intAttrs[r.n(len(intAttrs))], r.int()))
			case 1:
				var vs []int64
				for range r.n(5) {
					vs = append(vs, r.int())
				}
				attrs = append(attrs, attrInts(intsAttrs[r.n(len(intsAttrs))], vs...))
			default:
				attrs = append(attrs, attrFloat(floatAttrs[r.n(len(floatAttrs))], fuzzFloats[r.n(len(fuzzFloats))]))
			}
		}
		outs = nil
		for k := range 1 + r.n(6)/4 { // mostly one: a second output is Split's, TopK's, Dropout's...
			outs = append(outs, fmt.Sprintf("v%d_%d", i, k))
		}
		nodes = append(nodes, node(op, fmt.Sprintf("n%d", i), ins, outs, attrs...))
		values = append(values, outs...)
	}
	var infos []msg
	for _, o := range outs {
		infos = append(infos, msg(nil).str(1, o))
	}
	ins := []msg{typedValueInfo("x", et, dims...)}
	if asInputs {
		for _, ti := range tinits {
			ins = append(ins, typedValueInfo(ti.name, ti.et, ti.shape...))
		}
		inits = nil
	}
	return model(int64(11+r.n(8)), graph(nodes, inits, ins, infos)), et, tinits
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// FuzzLoadTyped loads typedModel's models under the non-finite policy:
// Load must answer an *ir.Error with a code other than internal, or a
// graph that validates, and the reference (cpuref.EvalTyped) must
// evaluate that graph, its input holding its dtype's extremes, to values
// or an *ir.Error other than internal: never a panic, never internal.
func FuzzLoadTyped(f *testing.F) {
	for _, s := range []string{"", "\x01\x02\x03\x01\x05", "\x01\x02\x00\x03\x01\x02\x07\x02\x09\x02", "\xff\xfe\x10\x20\x30\x40\x50\x60\x70\x80"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkLoadTyped(t, raw)
	})
}

func checkLoadTyped(t *testing.T, raw []byte) {
	t.Helper()
	lim := ir.Limits{MaxNodes: 64, MaxElements: 1 << 12, MaxStorageBytes: 1 << 16, NonFinite: true}
	m, _ := typedModel(raw)
	g, err := onnx.Load(bytes.NewReader(m), onnx.Options{Limits: lim})
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
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Op != ir.OpInput || n.Param {
			continue
		}
		fillExtremes(n)
	}
	if _, err := cpuref.EvalTyped(g); err != nil {
		var ie *ir.Error
		if !errors.As(err, &ie) || ie.Code == ir.CodeInternal {
			t.Fatalf("EvalTyped: %v (want an *ir.Error with a code other than internal)\n%s", err, g)
		}
	}
}

// fillExtremes gives input n its dtype's extremes, cyclically.
func fillExtremes(n *ir.Node) {
	c := n.Shape.Len()
	switch {
	case n.DType.IsFloat():
		vs := []float32{0, float32(math.Copysign(0, -1)), 1, -1.5, 1e-45, 3e38, -3e38, float32(math.Inf(1)), float32(math.NaN()), 65504, 0.1}
		n.Data = make([]float32, c)
		for i := range n.Data {
			n.Data[i] = n.DType.Round(vs[i%len(vs)])
		}
	case n.DType.IsFloat64():
		n.Ints = make([]int64, c)
		for i := range n.Ints {
			n.Ints[i] = ir.F64Bits(fuzzDoubles[i%len(fuzzDoubles)])
		}
	default:
		lo, hi := n.DType.Range()
		vs := []int64{0, 1, lo, hi, -1, 2, hi - 1, lo + 1}
		n.Ints = make([]int64, c)
		for i := range n.Ints {
			n.Ints[i] = min(max(vs[i%len(vs)], lo), hi)
		}
	}
}

// FuzzFoldRunTime loads each typedModels model twice: with its
// initializers as constants, which the importer folds where it can, and
// as graph inputs given the same values, computed at run time. Where both
// import and the reference evaluates both, each output must have the same
// values (a float's bits, NaN as NaN; an integer exactly, whether its
// output is typed or float32-carried); where one evaluates and the other
// fails, the fold invented or refused a value the run time does not.
func FuzzFoldRunTime(f *testing.F) {
	for _, s := range []string{"", "\x01\x02\x03\x01\x05", "\x01\x02\x00\x03\x01\x02\x07\x02\x09\x02", "\x00\x01\x02\x01\x00\x02\x05\x00\x03\x01\x00\x02"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkFoldRunTime(t, raw)
	})
}

func checkFoldRunTime(t *testing.T, raw []byte) bool {
	t.Helper()
	lim := ir.Limits{MaxNodes: 256, MaxElements: 1 << 12, MaxStorageBytes: 1 << 18, NonFinite: true}
	m1, _, _ := typedModels(raw, false)
	g1, err := onnx.Load(bytes.NewReader(m1), onnx.Options{Limits: lim})
	if err != nil {
		return false
	}
	m2, _, inits := typedModels(raw, true)
	g2, err := onnx.Load(bytes.NewReader(m2), onnx.Options{Limits: lim})
	if err != nil {
		return false // an operand the op takes as a constant only
	}
	for _, g := range []*ir.Graph{g1, g2} {
		if id := g.Input("x"); id >= 0 {
			fillExtremes(&g.Nodes[id])
		}
	}
	for _, ti := range inits {
		id := g2.Input(ti.name)
		if id < 0 {
			continue
		}
		n := &g2.Nodes[id]
		switch {
		case ti.f64 != nil && n.DType.IsFloat64():
			n.Ints = make([]int64, len(ti.f64))
			for i, v := range ti.f64 {
				n.Ints[i] = ir.F64Bits(v)
			}
		case ti.floats != nil && n.DType.IsFloat():
			n.Data = ti.floats
		case ti.ints != nil && !n.DType.IsFloat():
			n.Ints = ti.ints
		case ti.ints != nil:
			n.Data = make([]float32, len(ti.ints))
			for i, v := range ti.ints {
				n.Data[i] = float32(v)
			}
		default:
			return false
		}
	}
	v1, e1 := cpuref.EvalTyped(g1)
	v2, e2 := cpuref.EvalTyped(g2)
	switch {
	case e1 != nil && e2 != nil:
		return false
	case e1 != nil:
		t.Fatalf("the folded model fails (%v) where the run time computes\nfolded:\n%s\nrun time:\n%s", e1, g1, g2)
	case e2 != nil:
		t.Fatalf("the run time fails (%v) where the folded model computes\nfolded:\n%s\nrun time:\n%s", e2, g1, g2)
	}
	for k, o := range g1.Outputs {
		o2 := g2.Outputs[k]
		a, b := numbers(v1[o.ID]), numbers(v2[o2.ID])
		if len(a) != len(b) {
			t.Fatalf("output %s: %d values folded, %d at run time", o.Name, len(a), len(b))
		}
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
				t.Fatalf("output %s[%d]: %v folded (%v), %v at run time (%v)\nfolded:\n%s\nrun time:\n%s", o.Name, i, a[i], v1[o.ID].DType, b[i], v2[o2.ID].DType, g1, g2)
			}
		}
	}
	return true
}

// numbers is a value's elements as float64s: floats widened, integers
// converted (exactly: gpucc's integers here are far below 2^53), float64's
// bits read.
func numbers(v cpuref.Value) []float64 {
	var out []float64
	switch {
	case v.DType.IsFloat():
		for _, x := range v.F {
			out = append(out, float64(x))
		}
	case v.DType.IsFloat64():
		for _, x := range v.I {
			out = append(out, ir.F64Value(x))
		}
	default:
		for _, x := range v.I {
			out = append(out, float64(x))
		}
	}
	return out
}
