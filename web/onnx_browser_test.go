package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// modelsDir holds the models exported from PyTorch (onnx/testdata/models,
// its README says how), with their inputs and PyTorch's outputs.
const modelsDir = "../onnx/testdata/models"

// exportedModels are the models TestONNXPicker runs, each with the bound
// onnx's TestExportedModels holds it to: the largest |y − y64| relative to
// max(1, |y64|), y64 being PyTorch's float64 output.
var exportedModels = []struct {
	name  string
	bound float64
}{
	{"mlp", 1e-6},
	{"digits", 1e-6},
}

// browserBackends are the backends the page runs graphs on by itself. The
// wasm backend, whose modules the page's server builds, has its own tests
// (TestWasmPage).
var browserBackends = []string{"webgpu", "webgl2", "cpu"}

// onnxDeadline bounds TestONNXPicker: two models on three backends, the
// 256-wide MLP compiled by SwiftShader twice.
const onnxDeadline = 6 * time.Minute

// TestONNXPicker loads each exported model through the page's file picker
// (the DOM's setFileInputFiles, as a visitor's choice), gives the fixture's
// input through the input's own data picker, runs it on every browser
// backend and checks the outputs: bit for bit cpuref's (EvalFlushed's
// where a GPU may flush subnormals), within the model's bound of
// PyTorch's float64 output and of its float32 one.
func TestONNXPicker(t *testing.T) {
	ctx := page(t, "?life=0", onnxDeadline)
	for _, m := range exportedModels {
		t.Run(m.name, func(t *testing.T) {
			model, err := filepath.Abs(filepath.Join(modelsDir, m.name+".onnx"))
			if err != nil {
				t.Fatal(err)
			}
			input, _ := filepath.Abs(filepath.Join(modelsDir, m.name+".input.bin"))
			raw, err := os.ReadFile(model)
			if err != nil {
				t.Fatal(err)
			}
			x := float32s(t, input)
			g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.SetInput("x", x); err != nil {
				t.Fatal(err)
			}
			want, flushed := cpuref.Eval(g)[g.Outputs[0].ID], cpuref.EvalFlushed(g)[g.Outputs[0].ID]
			y64, y32 := float64s(t, filepath.Join(modelsDir, m.name+".output64.bin")), float32s(t, filepath.Join(modelsDir, m.name+".output32.bin"))

			pickModel(t, ctx, model)
			sig := evalJSON[onnx.Signature](t, ctx, `JSON.stringify(demo.onnx.signature)`)
			shape := []int(g.Nodes[g.Input("x")].Shape)
			wantSig := onnx.Signature{
				Inputs:  []onnx.Port{{Name: "x", Type: "float32", Shape: shape, DimParams: make([]string, len(shape))}},
				Outputs: []onnx.Port{{Name: "y", Type: "float32", Shape: []int(g.Nodes[g.Outputs[0].ID].Shape), DimParams: []string{"", ""}}},
			}
			if diff := cmp.Diff(wantSig, sig); diff != "" {
				t.Fatalf("the page's signature of %s (-want +got):\n%s", m.name, diff)
			}
			if err := chromedp.Do(ctx, chromedp.SetUploadFiles("#onnxData-0", []string{input})); err != nil {
				t.Fatal(err)
			}
			for _, backend := range browserBackends {
				t.Run(backend, func(t *testing.T) {
					r := runPicked(t, ctx, backend)
					if r.Error != nil {
						t.Fatalf("%s: %s", r.Error.Code, r.Error.Message)
					}
					if r.Backend != backend {
						t.Fatalf("ran on %s, want %s", r.Backend, backend)
					}
					y := r.Outputs["y"]
					if len(y.Bits) != len(want) || len(want) != len(y64) {
						t.Fatalf("y has %d values, cpuref %d, PyTorch %d", len(y.Bits), len(want), len(y64))
					}
					worst, worst32, nflushed := 0.0, 0.0, 0
					for i, b := range y.Bits {
						if b != math.Float32bits(want[i]) {
							if !flushes[backend] || b != math.Float32bits(flushed[i]) {
								t.Fatalf("y[%d] = %v (%#08x), cpuref %v (%#08x)", i, math.Float32frombits(b), b, want[i], math.Float32bits(want[i]))
							}
							nflushed++
						}
						v, scale := float64(math.Float32frombits(b)), max(1, math.Abs(y64[i]))
						worst, worst32 = max(worst, math.Abs(v-y64[i])/scale), max(worst32, math.Abs(v-float64(y32[i]))/scale)
					}
					if !(worst <= m.bound) || !(worst32 <= m.bound) {
						t.Errorf("max |y − y64|/max(1, |y64|) = %.3g, |y − y32|/max(1, |y64|) = %.3g; bound %.3g", worst, worst32, m.bound)
					}
					var stages []string
					for _, k := range []string{"uploadMs", "compileMs", "dispatchMs", "readbackMs"} {
						v, ok := r.Timings[k].(float64)
						if !ok {
							t.Errorf("timings.%s = %v, want a number", k, r.Timings[k])
						}
						stages = append(stages, fmt.Sprintf("%s %.1f", strings.TrimSuffix(k, "Ms"), v))
					}
					t.Logf("%s on %s: cpuref's bits (%d flushed); max |y − y64|/max(1,|y64|) %.3g, against y32 %.3g (bound %.3g); import %.1f ms, %s ms",
						m.name, backend, nflushed, worst, worst32, m.bound, r.ImportMs, strings.Join(stages, ", "))
				})
			}
		})
	}
}

// TestONNXPickerErrors: what the page refuses, and the stable code it
// shows: a file that is not a model, data of the wrong size, a shape that
// contradicts the model's.
func TestONNXPickerErrors(t *testing.T) {
	ctx := page(t, "?life=0", pageDeadline)
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.onnx")
	if err := os.WriteFile(junk, []byte("\xff\xff\xff not a protobuf"), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.bin")
	if err := os.WriteFile(short, make([]byte, 12), 0o644); err != nil {
		t.Fatal(err)
	}
	digits, _ := filepath.Abs(filepath.Join(modelsDir, "digits.onnx"))

	before := evalString(t, ctx, `String(demo.onnx.picked)`)
	pick(t, ctx, "#onnxFile", junk)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`demo.onnx.picked > `+before)); err != nil {
		t.Fatal(err)
	}
	if code := evalString(t, ctx, `demo.onnx.error.code`); code != string(ir.CodeInvalidGraph) {
		t.Errorf("a file that is not a model: code %q, want %s", code, ir.CodeInvalidGraph)
	}
	if s := evalString(t, ctx, `document.getElementById("onnxStatus").textContent`); !strings.HasPrefix(s, "error invalid_graph: ") {
		t.Errorf("the page shows %q, want the error with its code", s)
	}

	pickModel(t, ctx, digits)
	pick(t, ctx, "#onnxData-0", short)
	if r := runPicked(t, ctx, "cpu"); r.Error == nil || r.Error.Code != string(ir.CodeInvalidInput) {
		t.Errorf("12 bytes of data for [32,64]: %+v, want invalid_input", r.Error)
	}
	evalString(t, ctx, `(document.getElementById("onnxSource-0").value = "random", document.getElementById("onnxShape-0").value = "16,64")`)
	if r := runPicked(t, ctx, "cpu"); r.Error == nil || r.Error.Code != string(ir.CodeInvalidInput) {
		t.Errorf("shape 16,64 for the model's [32,64]: %+v, want invalid_input", r.Error)
	}
	evalString(t, ctx, `(document.getElementById("onnxShape-0").value = "32,64", "")`)
	if r := runPicked(t, ctx, "cpu"); r.Error != nil {
		t.Errorf("random data after the errors: %s: %s", r.Error.Code, r.Error.Message)
	}

	// The API's own refusals, which the page never provokes.
	for _, tt := range []struct{ call, code string }{
		{`gpucc.runONNX(42)`, "invalid_graph"},
		{`gpucc.onnxSignature("a string")`, "invalid_graph"},
		{`gpucc.runONNX(demo.onnx.model, {backend: "cpu", inputs: {x: "nope"}})`, "invalid_input"},
		{`gpucc.runONNX(demo.onnx.model, {backend: "cpu", inputs: {x: [1, 2, 3]}})`, "invalid_input"},
		{`gpucc.runONNX(demo.onnx.model, {backend: "cpu", inputs: {z: new Float32Array(2048)}})`, "invalid_input"},
		{`gpucc.runONNX(demo.onnx.model, {backend: "cpu", inputShapes: {x: [32, 0]}})`, "invalid_input"},
		{`gpucc.runONNX(demo.onnx.model, {backend: "cpu", inputShapes: {x: [32, 1.5]}})`, "invalid_input"},
	} {
		code, err := chromedp.Run(ctx, chromedp.Evaluate[string](tt.call+`.then(() => "resolved", e => e.code)`, chromedp.EvalAwaitPromise))
		if err != nil || code != tt.code {
			t.Errorf("%s = %q, %v; want a rejection with code %s", tt.call, code, err, tt.code)
		}
	}
}

// pick sets the file input sel to path, as a visitor's choice does.
func pick(t *testing.T, ctx context.Context, sel, path string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.SetUploadFiles(sel, []string{path})); err != nil {
		t.Fatal(err)
	}
}

// pickModel picks the model at path and waits for its signature.
func pickModel(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	before := evalString(t, ctx, `String(demo.onnx.picked)`)
	pick(t, ctx, "#onnxFile", path)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`demo.onnx.picked > `+before)); err != nil {
		t.Fatal(err)
	}
	if e := evalString(t, ctx, `demo.onnx.error ? JSON.stringify(demo.onnx.error) : ""`); e != "" {
		t.Fatalf("picking %s: %s", filepath.Base(path), e)
	}
}

// onnxRunResult is result with the import's time.
type onnxRunResult struct {
	result
	ImportMs float64 `json:"importMs"`
}

// runPicked chooses backend, presses the page's run button and returns
// what the page shows: the result, its outputs as bits, or its error. A
// poll bounds the wait for the run (chromedp's 30 s when not given).
func runPicked(t *testing.T, ctx context.Context, backend string, poll ...time.Duration) onnxRunResult {
	t.Helper()
	before := evalString(t, ctx, fmt.Sprintf(`(document.getElementById("backend").value = %q,
		document.getElementById("allowSoftware").checked = true,
		String(demo.onnx.done))`, backend))
	evalString(t, ctx, `(document.getElementById("onnxRun").click(), "")`)
	var opts []chromedp.PollOption
	if len(poll) > 0 {
		opts = append(opts, chromedp.WithPollingTimeout(poll[0]))
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`demo.onnx.done > `+before, opts...)); err != nil {
		t.Fatal(err)
	}
	return evalJSON[onnxRunResult](t, ctx, `(() => {
		const s = demo.onnx;
		if (s.error) return JSON.stringify({error: s.error});
		const r = structuredClone(s.result);
		for (const o of Object.values(r.outputs)) { o.bits = Array.from(new Uint32Array(new Float32Array(o.data).buffer)); delete o.data; }
		return JSON.stringify(r);
	})()`)
}

func evalString(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return s
}

func evalJSON[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	var v T
	s := evalString(t, ctx, expr)
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

// float32s reads a file of raw little-endian float32.
func float32s(t *testing.T, path string) []float32 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil || len(raw)%4 != 0 {
		t.Fatalf("%s: %d bytes, %v", path, len(raw), err)
	}
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

// float64s reads a file of raw little-endian float64.
func float64s(t *testing.T, path string) []float64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil || len(raw)%8 != 0 {
		t.Fatalf("%s: %d bytes, %v", path, len(raw), err)
	}
	out := make([]float64, len(raw)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return out
}

// dynamicModel is an ONNX model y = Relu(x) of x [N,3], N a dim_param,
// written field by field with protowire against onnx.proto's numbers.
func dynamicModel() []byte { return unaryModel("Relu") }

// unaryModel is dynamicModel with op in Relu's place.
func unaryModel(op string) []byte {
	type msg = []byte
	bytesField := func(m msg, num protowire.Number, v []byte) msg {
		return protowire.AppendBytes(protowire.AppendTag(m, num, protowire.BytesType), v)
	}
	varint := func(m msg, num protowire.Number, v uint64) msg {
		return protowire.AppendVarint(protowire.AppendTag(m, num, protowire.VarintType), v)
	}
	value := func(name string) msg {
		shape := bytesField(nil, 1, bytesField(nil, 2, []byte("N")))
		shape = bytesField(shape, 1, varint(nil, 1, 3))
		tensor := bytesField(varint(nil, 1, 1), 2, shape) // float32, [N,3]
		return bytesField(bytesField(nil, 1, []byte(name)), 2, bytesField(nil, 1, tensor))
	}
	node := bytesField(bytesField(nil, 1, []byte("x")), 2, []byte("y"))
	node = bytesField(bytesField(node, 3, []byte("act")), 4, []byte(op))
	graph := bytesField(nil, 1, node)
	graph = bytesField(graph, 2, []byte("dynamic"))
	graph = bytesField(bytesField(graph, 11, value("x")), 12, value("y"))
	return bytesField(bytesField(varint(nil, 1, 8), 8, varint(nil, 2, 13)), 7, graph)
}

// pageRandom is the page's random input (onnx.js's random): n values
// uniform in [-1, 1) from xorshift32 seeded with seed.
func pageRandom(n int, seed uint32) []float32 {
	out := make([]float32, n)
	x := seed*2654435761 + 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		out[i] = float32(float64(x>>8)/(1<<23) - 1)
	}
	return out
}

// TestONNXPickerDynamic: a model with a dynamic dimension shows it as
// such, refuses to run until the visitor gives it, then runs at the
// shape given on the page's random data, seeded as the page says.
func TestONNXPickerDynamic(t *testing.T) {
	ctx := page(t, "?life=0", pageDeadline)
	path := filepath.Join(t.TempDir(), "dynamic.onnx")
	if err := os.WriteFile(path, dynamicModel(), 0o644); err != nil {
		t.Fatal(err)
	}
	pickModel(t, ctx, path)
	if got := evalString(t, ctx, `(() => { const e = document.getElementById("onnxShape-0"); return e.value + "|" + e.placeholder; })()`); got != "|N,3" {
		t.Errorf("the shape field of x [N,3] holds value|placeholder %q, want %q", got, "|N,3")
	}
	if r := runPicked(t, ctx, "cpu"); r.Error == nil || r.Error.Code != string(ir.CodeInvalidInput) {
		t.Errorf("no shape given: %+v, want invalid_input", r.Error)
	}
	evalString(t, ctx, `(document.getElementById("onnxShape-0").value = "5,3", "")`)
	for _, backend := range browserBackends {
		r := runPicked(t, ctx, backend)
		if r.Error != nil {
			t.Fatalf("%s: %s: %s", backend, r.Error.Code, r.Error.Message)
		}
		y := r.Outputs["y"]
		if !slices.Equal(y.Shape, []int{5, 3}) {
			t.Fatalf("%s: y has shape %v, want [5 3]", backend, y.Shape)
		}
		for i, x := range pageRandom(15, 1) {
			if want := math.Float32bits(max(x, 0)); y.Bits[i] != want {
				t.Errorf("%s: y[%d] = %#08x, want Relu(%v) = %#08x", backend, i, y.Bits[i], x, want)
			}
		}
	}
}

// TestRunONNXNonFinite: a model whose output overflows (y = Exp(x) of
// x = [100, 0, 1]) is refused under the seed's finite policy
// (non_finite_output) and, with nonFinite, gives +Inf as JSON's
// "Infinity" beside its finite values, on every browser backend.
func TestRunONNXNonFinite(t *testing.T) {
	ctx := page(t, "?life=0", pageDeadline)
	model := base64.StdEncoding.EncodeToString(unaryModel("Exp"))
	for _, backend := range browserBackends {
		for _, tt := range []struct {
			nonFinite bool
			want      string
		}{{false, "non_finite_output"}, {true, `["Infinity",1,2.7182817]`}} {
			got := evalAwait(t, ctx, fmt.Sprintf(`(async () => {
				const model = Uint8Array.from(atob(%q), (c) => c.charCodeAt(0));
				const r = await gpucc.runONNX(model, {backend: %q, allowSoftware: true, nonFinite: %t, inputShapes: {x: [1, 3]}, inputs: {x: [100, 0, 1]}});
				return JSON.stringify(r.outputs.y.data);
			})().catch((e) => e.code || JSON.stringify(e))`, model, backend, tt.nonFinite))
			if got != tt.want {
				t.Errorf("%s, nonFinite %t: %s, want %s", backend, tt.nonFinite, got, tt.want)
			}
		}
	}
}

// TestOneRuntime: the page's graphs and models share one runtime per
// backend. Two models sized past the seed's limits to different limits
// (y = Relu(x) of x [N,3] at N 400000 and 500000) and a protocol v1 graph,
// on cpu and webgl2, leave the page holding 2 runtimes, where it held one
// per model's limits (6), each a WebGL2 context or a WebGPU device never
// released. The inputs are left zero (over a million values cannot be
// given before the import sizes the limits): the outputs are zeros.
func TestOneRuntime(t *testing.T) {
	ctx := page(t, "?life=0", pageDeadline)
	model := base64.StdEncoding.EncodeToString(dynamicModel())
	for _, backend := range []string{"cpu", "webgl2"} {
		for _, n := range []int{400000, 500000} {
			got := evalAwait(t, ctx, fmt.Sprintf(`(async () => {
				const model = Uint8Array.from(atob(%q), (c) => c.charCodeAt(0));
				const r = await gpucc.runONNX(model, {backend: %q, allowSoftware: true, inputShapes: {x: [%d, 3]}});
				const y = r.outputs.y.data;
				return r.backend + " " + y.length + " " + y.every((v) => v === 0);
			})().catch((e) => JSON.stringify(e))`, model, backend, n))
			if want := fmt.Sprintf("%s %d true", backend, 3*n); got != want {
				t.Fatalf("N %d on %s: %s, want %s", n, backend, got, want)
			}
		}
		r := run(t, ctx, []byte(`{"version":1,"nodes":[{"id":0,"op":"input","shape":[2],"data":[-1,2]},{"id":1,"op":"relu","a":0}],"outputs":[{"name":"y","id":1}]}`), backend, true)
		if r.Error != nil || r.Backend != backend {
			t.Fatalf("a graph on %s: %+v", backend, r)
		}
	}
	if n := evalString(t, ctx, `String(gpucc.openRuntimes())`); n != "2" {
		t.Errorf("the page holds %s runtimes after two models and a graph on cpu and webgl2, want 2 (one per backend)", n)
	}
}
