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
	r := &reader{raw}
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
		case 1:
			var vs []float32
			for range n {
				vs = append(vs, fuzzFloats[r.n(len(fuzzFloats))])
			}
			inits = append(inits, floats(name, shape, vs...))
		case 2:
			var vs []float64
			for range n {
				vs = append(vs, fuzzDoubles[r.n(len(fuzzDoubles))])
			}
			inits = append(inits, doubles(name, shape, vs...))
		default:
			var vs []bool
			for range n {
				vs = append(vs, r.n(2) == 1)
			}
			inits = append(inits, bools(name, shape, vs...))
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
	return model(int64(11+r.n(8)), graph(nodes, inits, []msg{typedValueInfo("x", et, dims...)}, infos)), et
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
