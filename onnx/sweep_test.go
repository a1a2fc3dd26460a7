package onnx_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestAttributeSweep runs testdata/sweep's models, one per (op,
// attribute combination) of make.py's table (248: CumSum, Softmax,
// LogSoftmax, Flatten, ArgMax, Concat and LayerNormalization on every
// axis; eight reductions over axes and keepdims; every Transpose of rank
// 3; Slice with negative and out-of-range bounds and steps; Split,
// DepthToSpace's modes, SpaceToDepth, Tile, Expand, Pad's modes, Gemm's
// transposes and scales, ten activations' attributes, Trilu, Gather with
// negative indices, and LSTM/GRU/RNN in every direction), and compares
// gpucc's outputs with ONNX Runtime for Node 1.30's (ort.json, recorded
// by ort.mjs): the same shapes, and each value within 2e-6 + 1e-5·|ORT's|
// (exp, tanh and sums round differently there), integers exactly. This
// is the class of bug the node tests missed: CumSum's exclusive sum
// along a leading axis.
func TestAttributeSweep(t *testing.T) {
	dir := "testdata/sweep"
	var cases []struct {
		Name   string
		Inputs map[string]struct {
			Shape []int
			Data  []float32
		}
	}
	readJSON(t, filepath.Join(dir, "cases.json"), &cases)
	var ort struct {
		Results map[string]map[string]struct {
			Shape []int
			Type  string
			Data  []float64
		}
	}
	readJSON(t, filepath.Join(dir, "ort.json"), &ort)
	// What gpucc refuses by name where ORT computes: an empty tensor.
	refused := map[string]ir.Code{"slice_2_1_2_1": ir.CodeUnsupported}
	ran := 0
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			want, ok := ort.Results[c.Name]
			if !ok {
				t.Fatal("no ORT result")
			}
			f, err := os.Open(filepath.Join(dir, c.Name+".onnx"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// Unrolled recurrences with run-time weights pass the
			// default 512 nodes.
			g, err := onnx.Load(f, onnx.Options{Limits: ir.Limits{MaxNodes: 4096}})
			if code, ok := refused[c.Name]; ok {
				if gpucc.CodeOf(err) != code {
					t.Errorf("Load: %v, want %s", err, code)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			for name, in := range c.Inputs {
				if err := g.SetInput(name, in.Data); err != nil {
					t.Fatal(err)
				}
			}
			got := outputs(g)
			for name, w := range want {
				bits, ok := got[name]
				if !ok {
					t.Fatalf("no output %s", name)
				}
				var shape []int
				for _, o := range g.Outputs {
					if o.Name == name {
						shape = g.Nodes[o.ID].Shape
					}
				}
				if len(shape) != len(w.Shape) || ir2(shape) != ir2(w.Shape) {
					t.Errorf("%s: shape %v, ORT %v", name, shape, w.Shape)
					continue
				}
				for i, v := range w.Data {
					x := float64(math.Float32frombits(bits[i]))
					bound := 2e-6 + 1e-5*math.Abs(v)
					if w.Type != "float32" {
						bound = 0
					}
					if math.Abs(x-v) > bound || math.IsNaN(x) != math.IsNaN(v) {
						t.Errorf("%s[%d] = %v, ORT %v", name, i, x, v)
					}
				}
			}
			ran++
		})
	}
	t.Logf("%d of %d cases agree with ONNX Runtime, %d refused by name", ran, len(cases), len(refused))
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// ir2 is a shape's product and rank mixed, for a quick equality check
// after the lengths matched.
func ir2(s []int) (k int) {
	for _, d := range s {
		k = k*131 + d
	}
	return k
}
