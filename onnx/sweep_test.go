package onnx_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestAttributeSweep runs testdata/sweep's models, one per (op,
// attribute combination) of make.py's table (377 over 80 ops: CumSum,
// Softmax, LogSoftmax, Flatten, ArgMax, Concat and LayerNormalization on
// every axis; eight reductions and ReduceLogSum over axes and keepdims;
// every Transpose of rank 3; Slice with negative and out-of-range bounds
// and steps; Split, DepthToSpace's modes, SpaceToDepth, Tile, Expand,
// Pad's modes, Gemm's transposes and scales, ten activations' attributes,
// Trilu, Gather and GatherElements with negative indices, LSTM/GRU/RNN in
// every direction; ArgMax/ArgMin on ties with keepdims and
// select_last_index, Hardmax, Clip's bounds, the normalizations' epsilons
// and MVN's axes, Squeeze/Unsqueeze/Reshape/Shape's axes and bounds, Cast,
// EyeLike, Conv's groups, strides, pads, dilations and auto_pad,
// ConvTranspose's output_padding, the pools' kernels, strides, pads,
// ceil_mode, dilations, count_include_pad and auto_pad, Resize's modes,
// coordinate transforms and nearest modes, and the two losses'
// reductions and ignore_index), and compares gpucc's outputs with ONNX
// Runtime for Node 1.30's (ort.json, recorded by ort.mjs): the same
// shapes, and each value within 2e-6 + 1e-5·|ORT's| (exp, tanh and sums
// round differently there), integers exactly. Every other backend must
// give cpu's bits (not under -short). This is the class of bug the node
// tests missed: CumSum's exclusive sum along a leading axis.
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
	// What gpucc refuses by name where ORT computes: an empty tensor, a
	// float remainder, a run-time float32 cast to an integer, and
	// AveragePool's ceil_mode with count_include_pad.
	refused := map[string]ir.Code{
		"slice_2_1_2_1": ir.CodeUnsupported, "shape_2_1": ir.CodeUnsupported,
		"mod_fmod":                         ir.CodeUnsupported,
		"averagepool_k33_s22_p1111_c1_cip": ir.CodeUnsupported, "averagepool_k22_s22_p0000_c1_cip": ir.CodeUnsupported,
	}
	var ran []ranTest
	typed := 0
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
				if !slices.Equal(shape, w.Shape) {
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
			switch {
			case t.Failed():
			case typedGraph(g): // typed graphs run on cpu so far (cast_6, cast_7: a float32 to an integer)
				typed++
			default:
				ran = append(ran, ranTest{name: c.Name, g: g, bits: got})
			}
		})
	}
	t.Logf("%d of %d cases agree with ONNX Runtime (%d of them typed, on cpu only), %d refused by name", len(ran)+typed, len(cases), typed, len(refused))
	if testing.Short() {
		return
	}
	rts := openBackends(t)
	for _, b := range gpucctest.Backends {
		if rt := rts[b]; rt != nil && b != "cpu" {
			checkBackend(t, rt, ran)
		}
	}
	t.Logf("every backend's bits equal cpu's: %v", names(rts))
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
