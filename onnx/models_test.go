package onnx_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// The models of testdata/models, exported from PyTorch 2.11 with
// torch.onnx.export (export.py there; its README says how), with their
// input and PyTorch's outputs: in float32 and, the same weights widened,
// in float64.
var exportedModels = []struct {
	name string
	// bound is the largest |y - y64| allowed, relative to max(1, |y64|):
	// about 4-5 times what was measured (mlp 1.7e-7, digits 2.1e-7,
	// transformer 5.3e-7 on every backend, where PyTorch float32 is
	// 1.5e-7, 1.9e-7 and 5.9e-7 from float64; TestExportedModels logs
	// both).
	bound float64
	// maxOps, when set, is the import's operation limit (the transformer's
	// 1.2·10⁸ is over the default 10⁸: gpucc run takes --max-ops).
	maxOps int64
}{
	{"mlp", 1e-6, 0},
	{"digits", 1e-6, 0},
	{"transformer", 2e-6, 200_000_000},
}

func readFloats(t *testing.T, path string, width int) []float64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw)%width != 0 {
		t.Fatalf("%s: %d bytes, not a whole number of %d-byte values", path, len(raw), width)
	}
	out := make([]float64, len(raw)/width)
	for i := range out {
		if width == 4 {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		} else {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	}
	return out
}

// TestExportedModels imports each exported model, runs it on every
// backend and checks that every backend gives cpu's bits and that cpu is
// within the model's bound of PyTorch's float64 output.
func TestExportedModels(t *testing.T) {
	backends := openBackends(t)
	for _, m := range exportedModels {
		t.Run(m.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "models")
			raw, err := os.ReadFile(filepath.Join(dir, m.name+".onnx"))
			if err != nil {
				t.Fatal(err)
			}
			g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Limits: ir.Limits{MaxOps: m.maxOps}})
			if err != nil {
				t.Fatal(err)
			}
			in := readFloats(t, filepath.Join(dir, m.name+".input.bin"), 4)
			x := make([]float32, len(in))
			for i, v := range in {
				x[i] = float32(v)
			}
			if err := g.SetInput("x", x); err != nil {
				t.Fatal(err)
			}
			y64 := readFloats(t, filepath.Join(dir, m.name+".output64.bin"), 8)
			y32 := readFloats(t, filepath.Join(dir, m.name+".output32.bin"), 4)
			var cpu []uint32
			for _, b := range gpucctest.Backends {
				rt := backends[b]
				if rt == nil {
					continue
				}
				res, err := rt.Run(context.Background(), g)
				if err != nil {
					t.Fatalf("%s: %v", b, err)
				}
				bits := gpucctest.BitsOf(res.Outputs["y"].Data)
				if cpu == nil {
					cpu = bits
					continue
				}
				for i := range cpu {
					if i >= len(bits) || bits[i] != cpu[i] {
						t.Fatalf("%s differs from cpu at y[%d]: %#x, cpu %#x", b, i, bits[min(i, len(bits)-1)], cpu[i])
					}
				}
			}
			if len(cpu) != len(y64) {
				t.Fatalf("y has %d values, PyTorch's %d", len(cpu), len(y64))
			}
			worst, torch := 0.0, 0.0
			for i, w := range y64 {
				scale := max(1, math.Abs(w))
				d := math.Abs(float64(math.Float32frombits(cpu[i]))-w) / scale
				if !(d <= m.bound) {
					t.Errorf("y[%d] = %v, PyTorch float64 %v: |diff|/max(1, |y64|) = %.3g, over the bound %.3g", i, math.Float32frombits(cpu[i]), w, d, m.bound)
				}
				worst = max(worst, d)
				torch = max(torch, math.Abs(y32[i]-w)/scale)
			}
			t.Logf("%s on %v: max |y - y64|/max(1, |y64|) = %.3g (bound %.3g); PyTorch float32's: %.3g", m.name, names(backends), worst, m.bound, torch)
		})
	}
}
