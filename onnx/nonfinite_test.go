package onnx_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestCausalMask imports testdata/causal/causal.onnx (make.py: a GPT-2
// style attention, masked_fill(mask, -inf) exported as Where with a -Inf
// constant before Softmax) under ir.Limits.NonFinite and runs it on every
// backend: each gives cpu's bits, the masked probabilities are exact +0,
// the fully masked row of p_pad is NaN (ONNX's reference softmax, numpy's
// -inf - -inf) as the quiet NaN 0x7fc00000, and the rest is within 1e-6
// of numpy's float64. Under the seed's finite policy the model is refused
// by name.
func TestCausalMask(t *testing.T) {
	dir := filepath.Join("testdata", "causal")
	raw, err := os.ReadFile(filepath.Join(dir, "causal.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = onnx.Load(bytes.NewReader(raw), onnx.Options{})
	if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "-Inf") || !strings.Contains(err.Error(), "NonFinite") {
		t.Errorf("finite policy: %v, want unsupported naming -Inf and the policy", err)
	}
	lim := ir.Limits{NonFinite: true}
	g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	in := readFloats(t, filepath.Join(dir, "causal.input.bin"), 4)
	x := make([]float32, len(in))
	for i, v := range in {
		x[i] = float32(v)
	}
	want := readFloats(t, filepath.Join(dir, "causal.output64.bin"), 8)
	var cpu []uint32
	for _, b := range gpucctest.Backends {
		t.Run(b, func(t *testing.T) {
			rt := gpucctest.Open(t, b, func(o *gpucc.Options) { o.Limits = lim })
			exe, err := rt.Compile(context.Background(), g)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			res, err := exe.Run(context.Background(), gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{1, 6, 8}, x)})
			if err != nil {
				t.Fatal(err)
			}
			bits := append(gpucctest.BitsOf(res.Outputs["y"].Data), gpucctest.BitsOf(res.Outputs["p_pad"].Data)...)
			if len(bits) != len(want) {
				t.Fatalf("%d values, numpy's %d", len(bits), len(want))
			}
			if cpu == nil {
				cpu = bits
			}
			for i, w := range want {
				got := math.Float32frombits(bits[i])
				switch {
				case bits[i] != cpu[i]:
					t.Errorf("value %d: %#x, cpu %#x", i, bits[i], cpu[i])
				case math.IsNaN(w) && bits[i] != gpucc.QuietNaN:
					t.Errorf("value %d: %v (%#x), numpy NaN: want the quiet NaN %#x", i, got, bits[i], gpucc.QuietNaN)
				case w == 0 && bits[i] != 0:
					t.Errorf("value %d: %v (%#x), numpy an exact 0 (masked)", i, got, bits[i])
				case !math.IsNaN(w) && !(math.Abs(float64(got)-w) <= 1e-6*max(1, math.Abs(w))):
					t.Errorf("value %d: %v, numpy float64 %v", i, got, w)
				}
			}
		})
	}
}
