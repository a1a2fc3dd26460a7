package web

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/testmodels"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestRealModelsPage runs real models that npm packages ship
// (internal/testmodels) in the page, as a visitor would: picked with the
// file picker, the dynamic dimensions typed into the shape fields, the
// data given as files, on every browser backend. Each output must be
// cpuref's bits (EvalFlushed's where a GPU may flush subnormals); onnx's
// TestRealModels compares the same models with ONNX Runtime. The models:
// an openWakeWord head whose graph has an If (hey_jarvis), another
// (alexa), the melspectrogram front end (an STFT as convolutions) and
// Silero VAD's float16 export (an LSTM, If, float16 casts). Not here: the
// speech embedding (its first webgpu run in SwiftShader takes over the
// page poll's 30 s) and PaddleOCR, which the page refuses: it imports
// under the seed's limits (512 nodes; the classifier has 591), not the
// model-sized limits gpucc run uses.
func TestRealModelsPage(t *testing.T) {
	ctx := page(t, "?life=0", onnxDeadline)
	for _, m := range []struct {
		name   string
		shapes map[string][]int
		scale  float64
	}{
		{"hey_jarvis_v0.1", nil, 1},
		{"alexa_v0.1", nil, 1},
		{"melspectrogram", map[string][]int{"input": {1, 1760}}, 4096},
		{"silero_vad_half", map[string][]int{"input": {1, 512}, "state": {2, 1, 128}}, 1},
	} {
		t.Run(m.name, func(t *testing.T) {
			model := testmodels.Path(t, m.name)
			raw, err := os.ReadFile(model)
			if err != nil {
				t.Fatal(err)
			}
			sig, err := onnx.ReadSignature(bytes.NewReader(raw), realPageLimits)
			if err != nil {
				t.Fatal(err)
			}
			g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{InputShapes: m.shapes, Limits: realPageLimits})
			if err != nil {
				t.Fatal(err)
			}
			pickModel(t, ctx, model)
			dir := t.TempDir()
			for i, p := range sig.Inputs {
				shape := g.Nodes[g.Input(p.Name)].Shape
				r := rand.New(rand.NewPCG(uint64(i), 34))
				x := make([]float32, shape.Len())
				b := make([]byte, 4*len(x))
				for k := range x {
					x[k] = float32((r.Float64()*2 - 1) * m.scale)
					binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(x[k]))
				}
				if err := g.SetInput(p.Name, x); err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(dir, fmt.Sprintf("in%d.bin", i))
				if err := os.WriteFile(file, b, 0o644); err != nil {
					t.Fatal(err)
				}
				dims := strings.Trim(strings.ReplaceAll(fmt.Sprint([]int(shape)), " ", ","), "[]")
				evalString(t, ctx, fmt.Sprintf(`(document.getElementById("onnxShape-%d").value = %q, "")`, i, dims))
				if err := chromedp.Do(ctx, chromedp.SetUploadFiles(fmt.Sprintf("#onnxData-%d", i), []string{file})); err != nil {
					t.Fatal(err)
				}
			}
			want, flushed := cpuref.Eval(g), cpuref.EvalFlushed(g)
			for _, backend := range browserBackends {
				t.Run(backend, func(t *testing.T) {
					r := runPicked(t, ctx, backend)
					if r.Error != nil {
						t.Fatalf("%s: %s", r.Error.Code, r.Error.Message)
					}
					if r.Backend != backend {
						t.Fatalf("ran on %s, want %s", r.Backend, backend)
					}
					for _, o := range g.Outputs {
						y, w, f := r.Outputs[o.Name], want[o.ID], flushed[o.ID]
						if len(y.Bits) != len(w) {
							t.Fatalf("%s has %d values, cpuref %d", o.Name, len(y.Bits), len(w))
						}
						for i, b := range y.Bits {
							if b != math.Float32bits(w[i]) && (!flushes[backend] || b != math.Float32bits(f[i])) {
								t.Fatalf("%s[%d] = %v (%#08x), cpuref %v", o.Name, i, math.Float32frombits(b), b, w[i])
							}
						}
					}
					t.Logf("%s on %s: cpuref's bits; import %.1f ms", m.name, backend, r.ImportMs)
				})
			}
		})
	}
}

// realPageLimits admit the models in this process (the page sizes its own).
var realPageLimits = onnxLimits()

func onnxLimits() (l ir.Limits) {
	l.MaxNodes, l.MaxElements, l.MaxStorageBytes, l.MaxOps = 1<<16, 1<<26, 1<<31, 1<<36
	return l
}
