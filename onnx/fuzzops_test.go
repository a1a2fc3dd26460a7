package onnx_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// reader draws choices from fuzz bytes; past the end every draw is 0.
type reader struct{ b []byte }

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) n(k int) int { return int(r.byte()) % k }

// extremes are the integers hostile models use: wraps, limits, signs.
var extremes = []int64{0, 1, -1, 2, 3, -2, 4, 7, 1 << 31, 1<<31 - 1, -1 << 31, 1 << 32, 1 << 62, 1<<62 + 2, math.MaxInt64, math.MinInt64, math.MaxInt64 - 6, 1 << 20, -1 << 40}

func (r *reader) int() int64 {
	if r.n(4) == 0 {
		return extremes[r.n(len(extremes))]
	}
	return int64(r.n(9)) - 4
}

var fuzzFloats = []float32{0, 1, -1, 0.5, 1e-5, 3e38, -3e38, float32(math.Inf(1)), float32(math.NaN()), 1e-45}

// intAttrs, intsAttrs and floatAttrs are the attribute names the grammar
// gives ops (each rule refuses those it does not read).
var (
	intAttrs   = []string{"axis", "keepdims", "blocksize", "exclusive", "reverse", "transA", "transB", "to", "k", "upper", "num_outputs", "noop_with_empty_axes", "select_last_index", "allowzero", "hidden_size", "layout", "group"}
	intsAttrs  = []string{"axes", "perm", "split", "starts", "ends", "pads", "kernel_shape", "strides", "dilations", "shape"}
	floatAttrs = []string{"alpha", "beta", "epsilon", "value", "min", "max", "bias", "lambd", "gamma", "clip"}
)

// opsModel builds a structurally valid model from fuzz bytes: a float32
// input of a drawn shape, int64 and float32 initializers of drawn
// values, and up to 8 nodes of the ops Load supports, each reading drawn
// earlier values and carrying drawn attributes.
func opsModel(raw []byte) []byte {
	r := &reader{raw}
	ops := onnx.Supported()
	var dims []int64
	for range r.n(5) {
		dims = append(dims, int64(1+r.n(4)))
	}
	values := []string{"x"}
	var inits []msg
	for i := range r.n(4) {
		name := fmt.Sprintf("c%d", i)
		if r.n(2) == 0 {
			var vs []int64
			for range r.n(5) {
				vs = append(vs, r.int())
			}
			shape := []int64{int64(len(vs))}
			if len(vs) == 1 && r.n(2) == 0 {
				shape = nil
			}
			inits = append(inits, int64s(name, shape, vs...))
		} else {
			var vs []float32
			for range 1 + r.n(4) {
				vs = append(vs, fuzzFloats[r.n(len(fuzzFloats))])
			}
			inits = append(inits, floats(name, []int64{int64(len(vs))}, vs...))
		}
		values = append(values, name)
	}
	var nodes []msg
	for i := range 1 + r.n(8) {
		op := ops[r.n(len(ops))]
		var ins []string
		for range 1 + r.n(3) {
			ins = append(ins, values[r.n(len(values))])
		}
		var attrs []msg
		for range r.n(3) {
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
		out := fmt.Sprintf("v%d", i)
		nodes = append(nodes, node(op, "", ins, []string{out}, attrs...))
		values = append(values, out)
	}
	return model(int64(7+r.n(12)), graph(nodes, inits, []msg{valueInfo("x", dims...)}, []msg{valueInfo(values[len(values)-1])}))
}

// FuzzLoadOps loads structurally valid models of the supported ops with
// drawn inputs, constants and attributes (opsModel): Load must answer an
// *ir.Error with a code other than internal, or a graph that validates;
// never panic, and never allocate past the limits (a run that does is
// killed by the fuzzer's memory limit).
func FuzzLoadOps(f *testing.F) {
	for _, s := range []string{"", "\x02\x03\x04\x01\x05", "\x01\x02\x00\x03\x01\x07\x02\x09", "\xff\xfe\x10\x20\x30\x40\x50\x60\x70\x80"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		lim := ir.Limits{MaxNodes: 64, MaxElements: 1 << 12, MaxStorageBytes: 1 << 16}
		g, err := onnx.Load(bytes.NewReader(opsModel(raw)), onnx.Options{Limits: lim})
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
	})
}
