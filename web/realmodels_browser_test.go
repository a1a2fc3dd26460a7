package web

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/npy"
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
// page poll's 30 s); PaddleOCR is TestOCRPage. And Silero VAD v5, whose
// int64 sample rate sr the page fixes at import, as gpucc run --const
// sr=16000 does: without it the page could not give an int64 input.
func TestRealModelsPage(t *testing.T) {
	ctx := page(t, "?life=0", onnxDeadline)
	for _, m := range []realPageModel{
		{"hey_jarvis_v0.1", nil, 1, nil, nil, false},
		{"alexa_v0.1", nil, 1, nil, nil, false},
		{"melspectrogram", map[string][]int{"input": {1, 1760}}, 4096, nil, nil, false},
		{"silero_vad_half", map[string][]int{"input": {1, 512}, "state": {2, 1, 128}}, 1, nil, nil, false},
		// v5 takes its sample rate as an int64 input sr, which the page
		// fixes at import (its constant field): the If on it folds.
		{"silero_vad_v5", map[string][]int{"input": {1, 512}, "state": {2, 1, 128}}, 1, nil, map[string]int64{"sr": 16000}, false},
	} {
		t.Run(m.name, func(t *testing.T) { runRealModel(t, ctx, m, 30*time.Second) })
	}
	// v5 is still picked: a constant that is not the input's is refused
	// by name, as --const refuses it (the other inputs random now: their
	// files were the subtest's).
	sr := evalString(t, ctx, `String(demo.onnx.signature.inputs.map((p, i) => {
		if (p.name !== "sr") document.getElementById("onnxSource-" + i).value = "random";
		return p.name;
	}).indexOf("sr"))`)
	for _, tt := range []struct{ value, msg string }{
		{"abc", `value "abc" is not of type int64`},
		{"16000,8000", "2 values were given"},
		{"", `value "" is not of type int64`},
	} {
		evalString(t, ctx, fmt.Sprintf(`(document.getElementById("onnxConst-%s").value = %q, "")`, sr, tt.value))
		r := runPicked(t, ctx, "cpu")
		if r.Error == nil || r.Error.Code != string(ir.CodeInvalidInput) || !strings.Contains(r.Error.Message, tt.msg) {
			t.Errorf("constant sr = %q: %+v, want invalid_input saying %q", tt.value, r.Error, tt.msg)
		}
	}
}

// TestOCRPage runs PaddleOCR's three models in the page: the PP-OCRv4
// detector, its recognizer and the v2 orientation classifier, which the
// page refused under the seed's limits (the classifier has 591 nodes; the
// others' tensors and operations are past 1M elements and 1e8) before it
// sized the limits to the model as gpucc run does (internal/modellimits),
// and the picker read its signature under the same caps.
// Each output must be cpuref's bits on every browser backend. The
// recognizer's WGSL took SwiftShader 165 s to compile (pipelines created
// one at a time, at load 7), over the page poll's 4 minutes at higher
// load, until wgsl's conv GEMM rendered long epilogues in a loop (ten
// hard-swish convolutions from 5-12 s each to 1-3 s): 114 s at load 15,
// and the recognizer's webgpu run 91 s.
//
// Under -short (make test) the classifier and the detector run on webgl2
// and cpu only, which keeps the page's sized limits on two backends at
// 40 s (under the seed's, the classifier is over 512 nodes and 1e8
// operations, the detector over 512 nodes and 32 MiB of storage);
// webgpu's real models in the page are TestRealModelsPage's. The webgpu
// runs (the classifier's 118 s and the detector's 102 s at load 12, each
// SwiftShader compiling its kernels) and the recognizer (172 s with its
// cpuref) are make test-all's and make test-web-full's.
func TestOCRPage(t *testing.T) {
	ctx := page(t, "?life=0", ocrDeadline)
	for _, m := range ocrPageModels(testing.Short()) {
		t.Run(m.name, func(t *testing.T) { runRealModel(t, ctx, m, 4*time.Minute) })
	}
}

// ocrPageModels are TestOCRPage's runs: every model on every backend it
// runs on in the page, or under short a classifier and a detector on the
// backends that compile them in seconds.
func ocrPageModels(short bool) []realPageModel {
	if short {
		fast := []string{"webgl2", "cpu"}
		return []realPageModel{
			{"ppocr_v2_cls", map[string][]int{"x": {1, 3, 48, 192}}, 1, fast, nil, false},
			{"ppocr_v4_det", map[string][]int{"x": {1, 3, 160, 160}}, 1, fast, nil, false},
		}
	}
	return []realPageModel{
		{"ppocr_v2_cls", map[string][]int{"x": {1, 3, 48, 192}}, 1, nil, nil, false},
		{"ppocr_v4_rec", map[string][]int{"x": {1, 3, 48, 160}}, 1, nil, nil, false},
		{"ppocr_v4_det", map[string][]int{"x": {1, 3, 160, 160}}, 1, nil, nil, false},
	}
}

// ocrDeadline bounds TestOCRPage: three models on three backends in
// SwiftShader, on a loaded 2-core machine.
const ocrDeadline = 20 * time.Minute

// realPageModel is one model of internal/testmodels with the shapes that
// bind its dynamic dimensions, the scale of its random data and the
// backends it runs on (nil: browserBackends).
type realPageModel struct {
	name     string
	shapes   map[string][]int
	scale    float64
	backends []string
	// consts fixes int64 inputs at import through the page's constant
	// fields (gpucc run's --const), the reference with the same values.
	consts map[string]int64
	// npyConsts gives each of consts as a .npy file of one int64 of the
	// input's shape, picked with the source "constant from the .npy file"
	// (gpucc run's --const NAME=FILE.npy), instead of typed.
	npyConsts bool
}

// runRealModel picks m in the page, types its shapes, gives random data as
// files and runs it on each browser backend (a run polled for at most
// poll), each output compared with cpuref's bits.
func runRealModel(t *testing.T, ctx context.Context, m realPageModel, poll time.Duration) {
	model := testmodels.Path(t, m.name)
	raw, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := onnx.ReadSignature(bytes.NewReader(raw), realPageLimits)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]*onnx.Tensor{}
	for name, v := range m.consts {
		consts[name] = &onnx.Tensor{Name: name, Type: onnx.Int64, Shape: []int{}, Int64: []int64{v}}
	}
	g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{InputShapes: m.shapes, Limits: realPageLimits, Constants: consts})
	if err != nil {
		t.Fatal(err)
	}
	pickModel(t, ctx, model)
	dir := t.TempDir()
	for i, p := range sig.Inputs {
		if v, ok := m.consts[p.Name]; ok && m.npyConsts {
			file := filepath.Join(dir, fmt.Sprintf("const%d.npy", i))
			saveNpy(t, file, &npy.Array{DType: "int64", Shape: []int{}, Int64: []int64{v}})
			pick(t, ctx, fmt.Sprintf("#onnxData-%d", i), file)
			evalString(t, ctx, fmt.Sprintf(`(document.getElementById("onnxSource-%d").value = "constnpy", "")`, i))
			continue
		}
		if v, ok := m.consts[p.Name]; ok {
			// typed into the input's constant field, as a visitor would
			evalString(t, ctx, fmt.Sprintf(`(document.getElementById("onnxConst-%d").value = "%d",
				document.getElementById("onnxSource-%d").value = "const", "")`, i, v, i))
			continue
		}
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
	backends := m.backends
	if backends == nil {
		backends = browserBackends
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			r := runPicked(t, ctx, backend, poll)
			if r.Error != nil {
				t.Fatalf("%s: %s", r.Error.Code, r.Error.Message)
			}
			if r.Backend != backend {
				t.Fatalf("ran on %s, want %s", r.Backend, backend)
			}
			if backend == "wasm" && (r.Adapter == nil || r.Adapter.Name != "the page's WebAssembly (SIMD128)") {
				t.Fatalf("wasm ran on %+v, not the page's WebAssembly", r.Adapter)
			}
			for _, o := range g.Outputs {
				y, w, f := r.Outputs[o.Name], want[o.ID], flushed[o.ID]
				if len(y.Bits) != len(w) {
					t.Fatalf("%s has %d values, cpuref %d", o.Name, len(y.Bits), len(w))
				}
				bad, first, worst := 0, -1, 0.0
				for i, b := range y.Bits {
					if b != math.Float32bits(w[i]) && (!flushes[backend] || b != math.Float32bits(f[i])) {
						bad++
						if first < 0 {
							first = i
						}
						worst = max(worst, math.Abs(float64(math.Float32frombits(b))-float64(w[i])))
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d of %d values are not cpuref's bits, the largest difference %.3g; [%d] = %v (%#08x), cpuref %v",
						o.Name, bad, len(w), worst, first, math.Float32frombits(y.Bits[first]), y.Bits[first], w[first])
				}
			}
			t.Logf("%s on %s: cpuref's bits; import %.1f ms", m.name, backend, r.ImportMs)
		})
	}
}

// realPageLimits admit the models in this process (the page sizes its own).
var realPageLimits = onnxLimits()

func onnxLimits() (l ir.Limits) {
	l.MaxNodes, l.MaxElements, l.MaxStorageBytes, l.MaxOps = 1<<16, 1<<26, 1<<31, 1<<36
	return l
}
