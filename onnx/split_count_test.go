package onnx_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestSplitOutputCount: a Split whose sizes are not one an output is
// refused, invalid_graph, of a run-time tensor and of a constant alike:
// split sizes [1, 2, 3] of an axis of 6 with two outputs, and
// num_outputs 3 with two outputs, each gave its first two chunks with
// exit 0 and dropped the third's values. A num_outputs whose last chunks
// are empty (3 of an axis of 4: [2, 2, 0]) is unsupported, as an empty
// result is; num_outputs of as many outputs as the node has, and the
// default of one equal chunk an output, still give numpy's chunks.
func TestSplitOutputCount(t *testing.T) {
	split := func(opset int64, x string, sizes []int64, outs []string, attrs ...msg) []byte {
		ins := []string{x}
		var inits []msg
		if sizes != nil {
			ins = append(ins, "s")
			inits = append(inits, int64s("s", []int64{int64(len(sizes))}, sizes...))
		}
		if x == "k" {
			inits = append(inits, floats("k", []int64{6}, 0, 1, 2, 3, 4, 5))
		}
		var infos []msg
		for _, o := range outs {
			infos = append(infos, valueInfo(o, -1))
		}
		var nodes []msg
		nodes = append(nodes, node("Split", "sp", ins, outs, append([]msg{attrInt("axis", 0)}, attrs...)...))
		return model(opset, graph(nodes, inits, []msg{valueInfo("x", 6)}, infos))
	}
	for _, x := range []string{"x", "k"} {
		for _, c := range []struct {
			name string
			m    []byte
			code ir.Code
			msg  string
		}{
			{"three sizes, two outputs", split(13, x, []int64{1, 2, 3}, []string{"a", "b"}), ir.CodeInvalidGraph, "3 split sizes for its 2 outputs"},
			{"one size, two outputs", split(13, x, []int64{6}, []string{"a", "b"}), ir.CodeInvalidGraph, "1 split sizes for its 2 outputs"},
			{"num_outputs 3, two outputs", split(18, x, nil, []string{"a", "b"}, attrInt("num_outputs", 3)), ir.CodeInvalidGraph, "num_outputs is 3, and the node has 2 outputs"},
			{"num_outputs 4 of 6: [2, 2, 2, 0]", split(18, x, nil, []string{"a", "b", "c", "d"}, attrInt("num_outputs", 4)), ir.CodeUnsupported, "an empty result"},
		} {
			_, err := onnx.Load(bytes.NewReader(c.m), onnx.Options{InputShapes: map[string][]int{"x": {6}}})
			var e *ir.Error
			if err == nil || !errors.As(err, &e) || e.Code != c.code || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("%s of %s: %v, want %s: %s", c.name, x, err, c.code, c.msg)
			}
		}
		for _, c := range []struct {
			name string
			m    []byte
			want [][]float32
		}{
			{"num_outputs 3, three outputs", split(18, x, nil, []string{"a", "b", "c"}, attrInt("num_outputs", 3)), [][]float32{{0, 1}, {2, 3}, {4, 5}}},
			{"sizes 2, 2, 1, 1", split(13, x, []int64{2, 2, 1, 1}, []string{"a", "b", "c", "d"}), [][]float32{{0, 1}, {2, 3}, {4}, {5}}},
			{"the default: two equal chunks", split(13, x, nil, []string{"a", "b"}), [][]float32{{0, 1, 2}, {3, 4, 5}}},
		} {
			g, err := onnx.Load(bytes.NewReader(c.m), onnx.Options{InputShapes: map[string][]int{"x": {6}}})
			if err != nil {
				t.Fatalf("%s of %s: %v", c.name, x, err)
			}
			if x == "x" {
				if err := g.SetInput("x", []float32{0, 1, 2, 3, 4, 5}); err != nil {
					t.Fatal(err)
				}
			}
			vals := cpuref.Eval(g)
			for k, o := range g.Outputs {
				if got := vals[o.ID]; !equalFloats(got, c.want[k]) {
					t.Errorf("%s of %s: output %s = %v, want %v", c.name, x, o.Name, got, c.want[k])
				}
			}
		}
	}
}

func equalFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
