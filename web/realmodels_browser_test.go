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
	"sync"
	"testing"
	"time"

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
// speech embedding (its first webgpu run in SwiftShader took over 30 s);
// PaddleOCR is TestOCRPage. Each run is polled for 2 minutes, a hang
// guard: at load 16 the float16 VAD's first webgpu run took over 30 s
// (15 s at load 9). And Silero VAD v5, whose
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
		t.Run(m.name, func(t *testing.T) { runRealModel(t, ctx, m, 2*time.Minute) })
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
// Under -short (make test) the classifier and the detector at 160² run on
// webgl2 and cpu only, which keeps the page's sized limits on two
// backends at 40 s (under the seed's, the classifier is over 512 nodes and
// 1e8 operations, the detector over 512 nodes and 32 MiB of storage);
// webgpu's real models in the page are TestRealModelsPage's. The
// classifier on webgpu (118 s at load 12) and the full sizes, the
// recognizer at 48×640 and the detector at 640² on every backend of the
// page (the detector's webgpu and cpu runs 216 s and 197 s at load 11-17),
// are make test-all's and make test-web-full's.
func TestOCRPage(t *testing.T) {
	ctx := page(t, "?life=0", ocrDeadline)
	for _, m := range ocrPageModels(testing.Short()) {
		t.Run(m.name, func(t *testing.T) { runRealModel(t, ctx, m, 4*time.Minute) })
	}
	if testing.Short() {
		return // the full-size runs below are make test-web-full's
	}
	for _, m := range ocrFullSize {
		t.Run(fmt.Sprintf("%s-%dx%d", m.name, m.shapes["x"][2], m.shapes["x"][3]), func(t *testing.T) {
			p := prepareRealModel(t, m)
			for _, backend := range p.backends() {
				t.Run(backend, func(t *testing.T) {
					// A page each: a run past its poll leaves its page busy.
					ctx := page(t, "?life=0", ocrFullSizeDeadline)
					p.pick(t, ctx)
					p.check(t, ctx, backend, ocrFullSizeDeadline-time.Minute)
				})
			}
		})
	}
}

// ocrPageModels are TestOCRPage's runs in one page: the classifier on
// every browser backend, or under short the classifier and the detector
// at 160² on the backends that compile them in seconds.
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
	}
}

// ocrFullSize are the recognizer at 48×640 and the detector at 640², the
// sizes issue 34 asks of the page, on every backend of the page, each
// backend in a page of its own.
var ocrFullSize = []realPageModel{
	{"ppocr_v4_rec", map[string][]int{"x": {1, 3, 48, 640}}, 1, pageBackends, nil, false},
	{"ppocr_v4_det", map[string][]int{"x": {1, 3, 640, 640}}, 1, pageBackends, nil, false},
}

// ocrFullSizeDeadline bounds each backend's page of ocrFullSize: the
// detector at 640² ran past a 4-minute poll on webgpu (SwiftShader) and
// on the page's cpu at load 15.
const ocrFullSizeDeadline = 15 * time.Minute

// pageBackends are every backend of the page: browserBackends and the
// page's WebAssembly.
var pageBackends = []string{"webgpu", "webgl2", "wasm", "cpu"}

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
	p := prepareRealModel(t, m)
	p.pick(t, ctx)
	for _, backend := range p.backends() {
		t.Run(backend, func(t *testing.T) { p.check(t, ctx, backend, poll) })
	}
}

// preparedModel is a model of realPageModel imported here with its data
// files written and cpuref's outputs: what any page that picks it is
// checked against.
type preparedModel struct {
	m         realPageModel
	model     string // the .onnx file's path
	sig       *onnx.Signature
	g         *ir.Graph
	dir       string
	want      [][]float32
	flushOnce sync.Once
	flushed   [][]float32 // cpuref.EvalFlushed's, made on first need
}

// prepareRealModel imports m as the page will (its shapes and constants),
// writes its random inputs as files and evaluates cpuref.
func prepareRealModel(t *testing.T, m realPageModel) *preparedModel {
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
	p := &preparedModel{m: m, model: model, sig: sig, g: g, dir: t.TempDir()}
	for i, in := range sig.Inputs {
		if v, ok := m.consts[in.Name]; ok {
			if m.npyConsts {
				saveNpy(t, p.file(i), &npy.Array{DType: "int64", Shape: []int{}, Int64: []int64{v}})
			}
			continue
		}
		shape := g.Nodes[g.Input(in.Name)].Shape
		r := rand.New(rand.NewPCG(uint64(i), 34))
		x := make([]float32, shape.Len())
		b := make([]byte, 4*len(x))
		for k := range x {
			x[k] = float32((r.Float64()*2 - 1) * m.scale)
			binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(x[k]))
		}
		if err := g.SetInput(in.Name, x); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p.file(i), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.want = cpuref.Eval(g)
	return p
}

// file is the path of input i's data (or .npy constant) file.
func (p *preparedModel) file(i int) string {
	name := fmt.Sprintf("in%d.bin", i)
	if _, ok := p.m.consts[p.sig.Inputs[i].Name]; ok {
		name = fmt.Sprintf("const%d.npy", i)
	}
	return filepath.Join(p.dir, name)
}

// backends are the backends the model runs on.
func (p *preparedModel) backends() []string {
	if p.m.backends == nil {
		return browserBackends
	}
	return p.m.backends
}

// pick picks the model in the page at ctx, types its shapes and
// constants and chooses its data files, as a visitor would.
func (p *preparedModel) pick(t *testing.T, ctx context.Context) {
	pickModel(t, ctx, p.model)
	for i, in := range p.sig.Inputs {
		if v, ok := p.m.consts[in.Name]; ok {
			if p.m.npyConsts {
				pick(t, ctx, fmt.Sprintf("#onnxData-%d", i), p.file(i))
				evalString(t, ctx, fmt.Sprintf(`(document.getElementById("onnxSource-%d").value = "constnpy", "")`, i))
				continue
			}
			// typed into the input's constant field, as a visitor would
			evalString(t, ctx, fmt.Sprintf(`(document.getElementById("onnxConst-%d").value = "%d",
				document.getElementById("onnxSource-%d").value = "const", "")`, i, v, i))
			continue
		}
		shape := p.g.Nodes[p.g.Input(in.Name)].Shape
		dims := strings.Trim(strings.ReplaceAll(fmt.Sprint([]int(shape)), " ", ","), "[]")
		evalString(t, ctx, fmt.Sprintf(`(document.getElementById("onnxShape-%d").value = %q, "")`, i, dims))
		pick(t, ctx, fmt.Sprintf("#onnxData-%d", i), p.file(i))
	}
}

// check runs the picked model on backend in the page at ctx (polled for
// at most poll) and compares each output with cpuref's bits
// (EvalFlushed's where the backend may flush subnormals).
func (p *preparedModel) check(t *testing.T, ctx context.Context, backend string, poll time.Duration) {
	r := runPicked(t, ctx, backend, poll)
	if r.Error != nil {
		t.Fatalf("%s: %s", r.Error.Code, r.Error.Message)
	}
	if r.Backend != backend {
		t.Fatalf("ran on %s, want %s", r.Backend, backend)
	}
	if backend == "wasm" && (r.Adapter == nil || !strings.HasPrefix(r.Adapter.Name, "the page's WebAssembly (SIMD128")) {
		t.Fatalf("wasm ran on %+v, not the page's WebAssembly", r.Adapter)
	}
	for _, o := range p.g.Outputs {
		y, w := r.Outputs[o.Name], p.want[o.ID]
		if len(y.Bits) != len(w) {
			t.Fatalf("%s has %d values, cpuref %d", o.Name, len(y.Bits), len(w))
		}
		bad, first, worst := 0, -1, 0.0
		for i, b := range y.Bits {
			if b == math.Float32bits(w[i]) {
				continue
			}
			if flushes[backend] {
				p.flushOnce.Do(func() { p.flushed = cpuref.EvalFlushed(p.g) })
				if b == math.Float32bits(p.flushed[o.ID][i]) {
					continue
				}
			}
			bad++
			if first < 0 {
				first = i
			}
			worst = max(worst, math.Abs(float64(math.Float32frombits(b))-float64(w[i])))
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d values are not cpuref's bits, the largest difference %.3g; [%d] = %v (%#08x), cpuref %v",
				o.Name, bad, len(w), worst, first, math.Float32frombits(y.Bits[first]), y.Bits[first], w[first])
		}
	}
	t.Logf("%s on %s: cpuref's bits; import %.1f ms", p.m.name, backend, r.ImportMs)
}

// realPageLimits admit the models in this process (the page sizes its own).
var realPageLimits = onnxLimits()

func onnxLimits() (l ir.Limits) {
	l.MaxNodes, l.MaxElements, l.MaxStorageBytes, l.MaxOps = 1<<16, 1<<26, 1<<31, 1<<36
	return l
}
