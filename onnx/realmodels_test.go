package onnx_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/internal/testmodels"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// realCase is one run of a real model (internal/testmodels) on fixed
// random inputs.
type realCase struct {
	name, model string
	// shapes binds the model's dynamic input dimensions.
	shapes map[string][]int
	// sr, when set, is the int64 input sr fixed at import (Silero's
	// sample rate, gpucc --const sr=16000); ONNX Runtime gets it as an
	// input.
	sr int64
	// scale is the inputs' range, ±scale (1 when zero).
	scale float32
	// long cases run only without -short (a larger size of a model that
	// -short runs smaller).
	long bool
	// stream, for ORT, runs the model frame by frame (ort.mjs).
	stream map[string]any
}

var realCases = []realCase{
	{name: "silero_vad_v5", model: "silero_vad_v5", shapes: map[string][]int{"input": {1, 512}, "state": {2, 1, 128}}, sr: 16000},
	{name: "silero_vad_v6", model: "silero_vad_v6", shapes: map[string][]int{"input": {1, 512}, "state": {2, 1, 128}}, sr: 16000},
	{name: "silero_vad_legacy", model: "silero_vad_legacy", shapes: map[string][]int{"input": {1, 512}, "h": {2, 1, 64}, "c": {2, 1, 64}}, sr: 16000},
	{name: "silero_vad_16k_op15", model: "silero_vad_16k_op15", shapes: map[string][]int{"input": {1, 512}, "state": {2, 1, 128}}, sr: 16000},
	{name: "silero_vad_half", model: "silero_vad_half", shapes: map[string][]int{"input": {1, 512}, "state": {2, 1, 128}}},
	{name: "silero_vad_op18_ifless", model: "silero_vad_op18_ifless", shapes: map[string][]int{"input": {1, 512}, "state": {2, 1, 128}}, sr: 16000},
	// openWakeWord feeds the front end 16-bit samples as floats.
	{name: "melspectrogram", model: "melspectrogram", shapes: map[string][]int{"input": {1, 1760}}, scale: 4096},
	{name: "embedding_model", model: "embedding_model", shapes: map[string][]int{"input_1": {1, 76, 32, 1}}},
	{name: "alexa_v0.1", model: "alexa_v0.1"},
	{name: "hey_jarvis_v0.1", model: "hey_jarvis_v0.1"},
	{name: "hey_mycroft_v0.1", model: "hey_mycroft_v0.1"},
	{name: "hey_rhasspy_v0.1", model: "hey_rhasspy_v0.1"},
	{name: "timer_v0.1", model: "timer_v0.1"},
	{name: "weather_v0.1", model: "weather_v0.1"},
	{name: "hello_deepa", model: "hello_deepa"},
	{name: "hello_deepa_old", model: "hello_deepa_old"},
	{name: "namaste_deepa", model: "namaste_deepa"},
	{name: "ppocr_v2_cls_48x192", model: "ppocr_v2_cls", shapes: map[string][]int{"x": {1, 3, 48, 192}}},
	{name: "ppocr_v4_rec_48x160", model: "ppocr_v4_rec", shapes: map[string][]int{"x": {1, 3, 48, 160}}},
	{name: "ppocr_v4_det_160", model: "ppocr_v4_det", shapes: map[string][]int{"x": {1, 3, 160, 160}}},
	// Issue 34's sizes: a 640×640 page, a 640-pixel line.
	{name: "ppocr_v4_rec_48x640", model: "ppocr_v4_rec", shapes: map[string][]int{"x": {1, 3, 48, 640}}, long: true},
	{name: "ppocr_v4_det_640", model: "ppocr_v4_det", shapes: map[string][]int{"x": {1, 3, 640, 640}}, long: true},
}

// realLimits admit the OCR models at these sizes (the CLI sizes them to
// the model instead; see cmd/gpucc's modellimits.go).
var realLimits = ir.Limits{MaxNodes: 1 << 16, MaxElements: 1 << 28, MaxStorageBytes: 1 << 33, MaxOps: 1 << 38, MaxOutputs: 64, MaxGraphBytes: 1 << 26}

// realBound is the largest |gpucc − ORT| / max(1, |ORT|) allowed.
const realBound = 1e-4

// realRecorded is testdata/realmodels/ort.json: per case, each output of
// ONNX Runtime for Node on the case's inputs, sampled (every stride-th
// value, at most realSamples of them).
type realRecorded struct {
	ORT   string
	Cases map[string]map[string]realSample
}

type realSample struct {
	Shape  []int
	Stride int
	Values []float32
}

const realSamples = 4096

// TestRealModels runs the pretrained models that npm packages ship
// (internal/testmodels: Silero VAD, openWakeWord, PaddleOCR), unmodified,
// on fixed random inputs on every backend: every backend must give cpu's
// bits, and cpu must be within 1e-4·max(1, |y|) of ONNX Runtime for Node
// 1.30 on the same inputs. ORT's outputs are recorded, sampled, in
// testdata/realmodels/ort.json (make test has no ORT); where ORT-node is
// installed ($GPUCC_ORT_NODE_MODULES, or bench/peers/node_modules after
// make peers-deps) each case also runs in it and every value is compared,
// and -update rewrites the recording from that run. The log states each
// case's largest error.
func TestRealModels(t *testing.T) {
	rts := map[string]*gpucc.Runtime{}
	for _, b := range gpucctest.Backends {
		rts[b] = gpucctest.Open(t, b, func(o *gpucc.Options) { o.Limits = realLimits })
	}
	var rec realRecorded
	recPath := filepath.Join("testdata", "realmodels", "ort.json")
	readJSON(t, recPath, &rec)
	ortDir := ortNodeModules()
	if *update && ortDir == "" {
		t.Fatal("-update needs ONNX Runtime for Node: set GPUCC_ORT_NODE_MODULES or run make peers-deps")
	}
	if ortDir == "" {
		t.Log("ONNX Runtime for Node is not installed: comparing with its recorded outputs (make peers-deps installs it)")
	}
	for _, c := range realCases {
		if c.long && testing.Short() {
			continue // -short runs the model at its smaller size
		}
		t.Run(c.name, func(t *testing.T) {
			g, inputs := loadReal(t, c)
			var cpu map[string][]float32
			for _, b := range gpucctest.Backends {
				t0 := time.Now()
				res, err := rts[b].Run(context.Background(), g)
				if err != nil {
					t.Fatalf("%s: %v", b, err)
				}
				t.Logf("%s: %v", b, time.Since(t0).Round(time.Millisecond))
				got := map[string][]float32{}
				for n, o := range res.Outputs {
					got[n] = o.Data
				}
				if cpu == nil {
					cpu = got
					continue
				}
				for n, want := range cpu {
					if i := firstBitDiff(want, got[n]); i >= 0 {
						t.Errorf("%s: %s differs from cpu at [%d] of %d", b, n, i, len(want))
					}
				}
			}
			if ortDir != "" {
				live := runORT(t, ortDir, c, inputs)
				want := map[string][]float32{}
				for n, o := range live {
					want[n] = o.data
					if !slices.Equal(o.shape, []int(res0(t, g, n))) {
						t.Errorf("%s: shape %v, ORT's %v", n, res0(t, g, n), o.shape)
					}
				}
				worst := compareORT(t, "ORT", cpu, want, nil)
				t.Logf("max |y − ORT|/max(1, |ORT|) = %.3g over every value (ORT-node live)", worst)
				if *update {
					rec.Cases[c.name] = sampleOutputs(live)
				}
				return
			}
			want, ok := rec.Cases[c.name]
			if !ok {
				t.Fatalf("no recorded ORT outputs for %s in %s", c.name, recPath)
			}
			sampled := map[string][]float32{}
			full := map[string][]float32{}
			strides := map[string]int{}
			for n, s := range want {
				strides[n] = s.Stride
				sampled[n] = s.Values
				for i := 0; i < len(cpu[n]); i += s.Stride {
					full[n] = append(full[n], cpu[n][i])
				}
				if !slices.Equal(s.Shape, []int(res0(t, g, n))) {
					t.Errorf("%s: shape %v, ORT's %v", n, res0(t, g, n), s.Shape)
				}
			}
			worst := compareORT(t, "recorded ORT", full, sampled, strides)
			t.Logf("max |y − ORT|/max(1, |ORT|) = %.3g over the recorded values", worst)
		})
	}
	if *update && ortDir != "" && !t.Failed() {
		rec.ORT = "onnxruntime-node 1.30.0, default session options, one thread"
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(recPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// realInput is one input as ORT gets it.
type realInput struct {
	name, dtype string
	shape       []int
	f32         []float32
	i64         []int64
}

// loadReal imports c's model with its shapes and constants and fills each
// float32 input with values uniform in ±scale from a seed of the case's
// and the input's names; it returns the graph and the inputs as ORT gets
// them (sr among them).
func loadReal(t *testing.T, c realCase) (*ir.Graph, []realInput) {
	t.Helper()
	raw, err := os.ReadFile(testmodels.Path(t, c.model))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := onnx.ReadSignature(bytes.NewReader(raw), realLimits)
	if err != nil {
		t.Fatal(err)
	}
	o := onnx.Options{Limits: realLimits, InputShapes: c.shapes}
	var inputs []realInput
	if c.sr != 0 {
		o.Constants = map[string]*onnx.Tensor{"sr": {Type: onnx.Int64, Shape: []int{}, Int64: []int64{c.sr}}}
		inputs = append(inputs, realInput{name: "sr", dtype: "int64", shape: []int{}, i64: []int64{c.sr}})
	}
	g, err := onnx.Load(bytes.NewReader(raw), o)
	if err != nil {
		t.Fatal(err)
	}
	scale := c.scale
	if scale == 0 {
		scale = 1
	}
	for _, p := range sig.Inputs {
		if p.Name == "sr" && c.sr != 0 {
			continue
		}
		id := g.Input(p.Name)
		if id < 0 {
			t.Fatalf("the imported graph has no input %s", p.Name)
		}
		shape := g.Nodes[id].Shape
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%s", c.name, p.Name)
		r := rand.New(rand.NewPCG(h.Sum64(), 34))
		x := make([]float32, shape.Len())
		for i := range x {
			x[i] = float32(r.Float64()*2-1) * scale
		}
		if err := g.SetInput(p.Name, x); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, realInput{name: p.Name, dtype: "float32", shape: slices.Clone(shape), f32: x})
	}
	return g, inputs
}

func res0(t *testing.T, g *ir.Graph, name string) ir.Shape {
	t.Helper()
	for _, o := range g.Outputs {
		if o.Name == name {
			return g.Nodes[o.ID].Shape
		}
	}
	t.Fatalf("no output %s", name)
	return nil
}

// firstBitDiff is the first index where a and b differ in bits, or -1.
func firstBitDiff(a, b []float32) int {
	for i := range a {
		if i >= len(b) || math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	if len(b) != len(a) {
		return len(a)
	}
	return -1
}

// compareORT checks every output of got against want within realBound
// and returns the largest error; strides, where given, say that the k-th
// value is the output's (k·stride)-th.
func compareORT(t *testing.T, what string, got, want map[string][]float32, strides map[string]int) float64 {
	t.Helper()
	worst := 0.0
	for n, w := range want {
		g, ok := got[n]
		if !ok {
			t.Errorf("no output %s, which %s gives", n, what)
			continue
		}
		if len(g) != len(w) {
			t.Errorf("%s: %d values, %s's %d", n, len(g), what, len(w))
			continue
		}
		for i := range w {
			d := math.Abs(float64(g[i])-float64(w[i])) / max(1, math.Abs(float64(w[i])))
			if !(d <= realBound) {
				t.Errorf("%s[%d] = %v, %s %v", n, i*max(1, strides[n]), g[i], what, w[i])
				return math.Inf(1)
			}
			worst = max(worst, d)
		}
	}
	return worst
}

func sampleOutputs(outs map[string]realOutput) map[string]realSample {
	s := map[string]realSample{}
	for n, o := range outs {
		stride := max(1, (len(o.data)+realSamples-1)/realSamples)
		var v []float32
		for i := 0; i < len(o.data); i += stride {
			v = append(v, o.data[i])
		}
		s[n] = realSample{Shape: o.shape, Stride: stride, Values: v}
	}
	return s
}

// ortNodeModules is a node_modules directory holding onnxruntime-node, or
// "".
func ortNodeModules() string {
	for _, d := range []string{os.Getenv("GPUCC_ORT_NODE_MODULES"), filepath.Join("..", "bench", "peers", "node_modules")} {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "onnxruntime-node", "package.json")); err == nil {
			abs, _ := filepath.Abs(d)
			return abs
		}
	}
	return ""
}

type realOutput struct {
	shape []int
	data  []float32
}

// runORT runs c's model in ORT-node (testdata/realmodels/ort.mjs) on
// inputs and returns its outputs.
func runORT(t *testing.T, modules string, c realCase, inputs []realInput) map[string]realOutput {
	t.Helper()
	dir := t.TempDir()
	type in struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Shape []int  `json:"shape"`
		File  string `json:"file"`
	}
	var ins []in
	for k, x := range inputs {
		var b []byte
		for _, v := range x.f32 {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		for _, v := range x.i64 {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
		file := filepath.Join(dir, fmt.Sprintf("in%d.bin", k))
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, in{x.name, x.dtype, x.shape, file})
	}
	entry := map[string]any{"case": c.name, "model": testmodels.Path(t, c.model), "inputs": ins, "outdir": dir}
	if c.stream != nil {
		entry["stream"] = c.stream
	}
	manifest, _ := json.Marshal([]any{entry})
	mpath := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(mpath, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "realmodels", "ort.mjs"))
	cmd := exec.Command("node", script, mpath)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ORT-node: %v\n%s", err, out)
	}
	var outs []struct {
		Name, Type, File string
		Shape            []int
	}
	readJSON(t, filepath.Join(dir, "outputs.json"), &outs)
	res := map[string]realOutput{}
	for _, o := range outs {
		raw, err := os.ReadFile(filepath.Join(dir, o.File))
		if err != nil {
			t.Fatal(err)
		}
		if o.Type != "float32" {
			t.Fatalf("ORT output %s is %s", o.Name, o.Type)
		}
		v := make([]float32, len(raw)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		res[o.Name] = realOutput{o.Shape, v}
	}
	return res
}

// TestRealVADStream runs Silero VAD v5 as an application streams it: 12
// frames of 512 samples of a synthetic utterance (silence, a voiced
// vowel of harmonics of 140 Hz, noise), its state kept on the device
// between calls (RunOptions.Keep; the kept tensor is the next call's
// state input, so only the frame is uploaded after the first call). Every
// backend gives cpu's bits for each frame's probability and the last
// state, and they are within 1e-4 of ONNX Runtime for Node running the
// same frames with its own state fed back.
func TestRealVADStream(t *testing.T) {
	const frames, frame = 12, 512
	c := realCase{name: "silero_vad_v5_stream", model: "silero_vad_v5", shapes: map[string][]int{"input": {1, frame}, "state": {2, 1, 128}}, sr: 16000}
	g, _ := loadReal(t, c)
	audio := make([]float32, frames*frame)
	r := rand.New(rand.NewPCG(34, 16000))
	for i := range audio {
		s := float64(i) / 16000
		v := 0.003 * (r.Float64()*2 - 1) // background noise
		if f := i / frame; f >= 3 && f < 9 {
			for h := 1; h <= 12; h++ { // a vowel: harmonics of 140 Hz, formants near 700 and 1200 Hz
				a := math.Exp(-math.Pow(float64(h*140-700)/300, 2)) + 0.6*math.Exp(-math.Pow(float64(h*140-1200)/300, 2))
				v += 0.2 * a * math.Sin(2*math.Pi*float64(h)*140*s)
			}
		}
		audio[i] = float32(v)
	}
	state0 := make([]float32, 2*128)
	ctx := context.Background()
	var cpuProbs, cpuState []float32
	for _, b := range gpucctest.Backends {
		rt := gpucctest.Open(t, b, func(o *gpucc.Options) { o.Limits = realLimits })
		exe, err := rt.Compile(ctx, g)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		var state gpucc.Value = gpucc.NewTensor(ir.Shape{2, 1, 128}, state0)
		var probs []float32
		for f := range frames {
			res, err := exe.RunWith(ctx, gpucc.Inputs{"input": gpucc.NewTensor(ir.Shape{1, frame}, audio[f*frame:(f+1)*frame]), "state": state},
				gpucc.RunOptions{Keep: []string{"stateN"}})
			if err != nil {
				t.Fatalf("%s frame %d: %v", b, f, err)
			}
			if want := int64(4 * frame); f > 0 && res.Timings.UploadBytes != want {
				t.Errorf("%s frame %d: uploaded %d bytes, want the frame's %d (the state stays on the device)", b, f, res.Timings.UploadBytes, want)
			}
			probs = append(probs, res.Outputs["output"].Data...)
			if d, ok := state.(*gpucc.DeviceTensor); ok {
				if err := d.Release(); err != nil {
					t.Fatal(err)
				}
			}
			state = res.Kept["stateN"]
		}
		last, err := state.(*gpucc.DeviceTensor).Read(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := state.(*gpucc.DeviceTensor).Release(); err != nil {
			t.Fatal(err)
		}
		exe.Release()
		if cpuProbs == nil {
			cpuProbs, cpuState = probs, last
			t.Logf("probabilities per frame: %v", probs)
			continue
		}
		if i := firstBitDiff(cpuProbs, probs); i >= 0 {
			t.Errorf("%s: frame %d's probability %v, cpu's %v", b, i, probs[min(i, len(probs)-1)], cpuProbs[i])
		}
		if i := firstBitDiff(cpuState, last); i >= 0 {
			t.Errorf("%s: the last state differs from cpu's at [%d]", b, i)
		}
	}
	got := map[string][]float32{"output": cpuProbs, "stateN": cpuState}
	var rec realRecorded
	recPath := filepath.Join("testdata", "realmodels", "ort.json")
	readJSON(t, recPath, &rec)
	if dir := ortNodeModules(); dir != "" {
		c.stream = map[string]any{"input": "input", "state": "state", "stateOut": "stateN", "output": "output", "frames": frames}
		live := runORT(t, dir, c, []realInput{
			{name: "input", dtype: "float32", shape: []int{frames, frame}, f32: audio},
			{name: "state", dtype: "float32", shape: []int{2, 1, 128}, f32: state0},
			{name: "sr", dtype: "int64", shape: []int{}, i64: []int64{16000}},
		})
		want := map[string][]float32{}
		for n, o := range live {
			want[n] = o.data
		}
		t.Logf("max |y − ORT|/max(1, |ORT|) = %.3g over every value (ORT-node live); ORT's probabilities %v", compareORT(t, "ORT", got, want, nil), want["output"])
		if *update {
			rec.Cases[c.name] = sampleOutputs(live)
			b, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(recPath, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want, ok := rec.Cases[c.name]
	if !ok {
		t.Fatalf("no recorded ORT outputs for %s in %s", c.name, recPath)
	}
	sampled := map[string][]float32{}
	for n, s := range want {
		sampled[n] = s.Values
	}
	t.Logf("max |y − ORT|/max(1, |ORT|) = %.3g over the recorded values", compareORT(t, "recorded ORT", got, sampled, nil))
}
