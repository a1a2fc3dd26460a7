package gpucc_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// residentGraph is a typed step with state: ids (int64) gather rows of a
// float32 table; the state (float32, an input) plus the rows is the next
// state (a float32 output), which a matmul reads for y; mask, a bool
// output, and h, a float16 one, are typed; table is returned as it is and
// next under a second name, so that a backend cannot keep both in one
// buffer. g is a graph without float32 work after the gather (gather's
// output is a typed kernel's on webgpu, a typed segment's on native and
// wasm).
func residentGraph(t *testing.T, float bool) *ir.Graph {
	b := ir.NewBuilder()
	tab := make([]float32, 16*4)
	for i := range tab {
		tab[i] = float32(i%11)*0.25 - 1
	}
	table := b.TypedInput("table", ir.F32, ir.Shape{16, 4}, tab, nil)
	ids := b.TypedInput("ids", ir.I64, ir.Shape{3}, nil, []int64{0, 1, 2})
	state := b.TypedInput("state", ir.F32, ir.Shape{3, 4}, make([]float32, 12), nil)
	rows := table.Gather(ids, 0)
	if !float {
		b.Output("rows", rows)
		b.Output("mask", ids.Apply(ir.OpGreater, b.FullOf(ir.I64, ir.Shape{3}, 0, 5)))
		b.Output("table", table)
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	next := state.Add(rows)
	w := make([]float32, 4*2)
	for i := range w {
		w[i] = float32(i) - 3.5
	}
	b.Output("next", next)
	b.Output("again", next)
	b.Output("y", next.MatMul(b.TypedInput("w", ir.F32, ir.Shape{4, 2}, w, nil)))
	b.Output("h", next.Cast(ir.F16))
	b.Output("mask", ids.Apply(ir.OpGreater, b.FullOf(ir.I64, ir.Shape{3}, 0, 5)))
	b.Output("table", table)
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestTypedKeepAndDeviceInputs: a typed graph runs with RunOptions.Keep,
// RunOptions.Into and DeviceTensor inputs on cpu and every backend with
// typed code, and gives the host path's bits: three steps that feed the
// kept next state back as the state (a DeviceTensor) against three steps
// through host tensors; the table given as an uploaded DeviceTensor;
// outputs kept that a backend cannot hand over as its own buffer (an input
// returned as it is, one node under two names), a typed kernel's float32
// output kept, and float outputs read into the caller's slices. Before,
// a typed graph refused Keep and Into (unsupported) and a DeviceTensor
// input. The misuses are invalid_input or invalid_tensor, as for float32
// graphs (kept outputs of other dtypes: TestTypedDeviceTensors). On webgpu the state and table go to the typed code as device
// buffers: the second step uploads only the ids.
func TestTypedKeepAndDeviceInputs(t *testing.T) {
	ctx := context.Background()
	g := residentGraph(t, true)
	ids := [][]int64{{3, -1, 15}, {0, 0, 7}, {-16, 5, 9}}
	for _, name := range append([]string{"cpu"}, typedBackends...) {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name)
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			// The host path: each step's next state read and given back.
			var want []*gpucc.Result
			state := gpucc.NewTensor(ir.Shape{3, 4}, make([]float32, 12))
			for _, id := range ids {
				r, err := exe.Run(ctx, gpucc.Inputs{"ids": gpucc.Tensor{Shape: []int{3}, DType: ir.I64, Ints: id}, "state": state})
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, r)
				state = r.Outputs["next"]
			}
			// The device path: the state stays a DeviceTensor.
			dstate, err := rt.Upload(ctx, ir.Shape{3, 4}, make([]float32, 12))
			if err != nil {
				t.Fatal(err)
			}
			into := make([]float32, 6)
			for k, id := range ids {
				r, err := exe.RunWith(ctx, gpucc.Inputs{"ids": gpucc.Tensor{Shape: []int{3}, DType: ir.I64, Ints: id}, "state": dstate},
					gpucc.RunOptions{Keep: []string{"next", "again", "table"}, Into: map[string][]float32{"y": into}})
				if err != nil {
					t.Fatalf("step %d: %v", k, err)
				}
				if err := dstate.Release(); err != nil {
					t.Fatal(err)
				}
				if len(r.Kept) != 3 || len(r.Outputs) != 3 {
					t.Fatalf("step %d: %d kept, %d outputs; want 3 and 3 (y, h, mask)", k, len(r.Kept), len(r.Outputs))
				}
				if y := r.Outputs["y"].Data; &y[0] != &into[0] {
					t.Errorf("step %d: y is not the Into slice", k)
				}
				for _, o := range []string{"y", "h", "mask"} {
					sameTensor(t, name+" "+o, r.Outputs[o], want[k].Outputs[o])
				}
				for _, o := range []string{"next", "again", "table"} {
					w := want[k].Outputs[o]
					got, err := r.Kept[o].Read(ctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					sameTensor(t, name+" kept "+o, gpucc.Tensor{Shape: r.Kept[o].Shape(), Data: got}, w)
				}
				r.Kept["again"].Release()
				r.Kept["table"].Release()
				dstate = r.Kept["next"]
				if name == "webgpu" && k > 0 && r.Timings.UploadBytes != 24 {
					t.Errorf("step %d: uploaded %d bytes, want 24 (the ids)", k, r.Timings.UploadBytes)
				}
			}
			dstate.Release()
			// The table as a device tensor: the same bits as the host table.
			tab := make([]float32, 16*4)
			for i := range tab {
				tab[i] = float32(i) * -0.125
			}
			dt, err := rt.Upload(ctx, ir.Shape{16, 4}, tab)
			if err != nil {
				t.Fatal(err)
			}
			defer dt.Release()
			in := gpucc.Inputs{"ids": gpucc.Tensor{Shape: []int{3}, DType: ir.I64, Ints: ids[2]}}
			in["table"] = gpucc.NewTensor(ir.Shape{16, 4}, tab)
			host, err := exe.Run(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			in["table"] = dt
			dev, err := exe.Run(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for o, w := range host.Outputs {
				sameTensor(t, name+" table on the device: "+o, dev.Outputs[o], w)
			}
			// No float32 work after the gather: its output kept.
			small, err := rt.Compile(ctx, residentGraph(t, false))
			if err != nil {
				t.Fatal(err)
			}
			defer small.Release()
			hr, err := small.Run(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for k := range 2 { // twice: the storage handed over is made again
				kr, err := small.RunWith(ctx, in, gpucc.RunOptions{Keep: []string{"rows"}})
				if err != nil {
					t.Fatal(err)
				}
				got, err := kr.Kept["rows"].Read(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				kr.Kept["rows"].Release()
				sameTensor(t, name+" kept rows "+itoa(k), gpucc.Tensor{Shape: []int{3, 4}, Data: got}, hr.Outputs["rows"])
			}
			typedDestsRefused(t, rt, exe)
		})
	}
}

// typedDestsRefused: the misuses of Keep, Into and DeviceTensor inputs on
// a typed graph, each with its stable code.
func typedDestsRefused(t *testing.T, rt *gpucc.Runtime, exe *gpucc.Executable) {
	ctx := context.Background()
	ok, err := rt.Upload(ctx, ir.Shape{3, 4}, make([]float32, 12))
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Release()
	wrong, err := rt.Upload(ctx, ir.Shape{4, 3}, make([]float32, 12))
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Release()
	gone, err := rt.Upload(ctx, ir.Shape{3, 4}, make([]float32, 12))
	if err != nil {
		t.Fatal(err)
	}
	gone.Release()
	other := open(t, "cpu")
	foreign, err := other.Upload(ctx, ir.Shape{3, 4}, make([]float32, 12))
	if err != nil {
		t.Fatal(err)
	}
	ids3, err := rt.Upload(ctx, ir.Shape{3}, []float32{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ids3.Release()
	for _, c := range []struct {
		what string
		in   gpucc.Inputs
		opts gpucc.RunOptions
		code ir.Code
	}{
		{"keep no output", nil, gpucc.RunOptions{Keep: []string{"nothing"}}, ir.CodeInvalidInput},
		{"into a bool output", nil, gpucc.RunOptions{Into: map[string][]float32{"mask": make([]float32, 3)}}, ir.CodeInvalidInput},
		{"into a short slice", nil, gpucc.RunOptions{Into: map[string][]float32{"y": make([]float32, 5)}}, ir.CodeInvalidInput},
		{"keep and into", nil, gpucc.RunOptions{Keep: []string{"y"}, Into: map[string][]float32{"y": make([]float32, 6)}}, ir.CodeInvalidInput},
		{"a device tensor of the wrong shape", gpucc.Inputs{"state": wrong}, gpucc.RunOptions{}, ir.CodeInvalidInput},
		{"a device tensor for int64 ids", gpucc.Inputs{"ids": ids3}, gpucc.RunOptions{}, ir.CodeInvalidInput},
		{"a released device tensor", gpucc.Inputs{"state": gone}, gpucc.RunOptions{}, ir.CodeInvalidTensor},
		{"another runtime's device tensor", gpucc.Inputs{"state": foreign}, gpucc.RunOptions{}, ir.CodeInvalidTensor},
		{"a nil input", gpucc.Inputs{"state": nil}, gpucc.RunOptions{}, ir.CodeInvalidInput},
	} {
		if _, err := exe.RunWith(ctx, c.in, c.opts); gpucc.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.what, err, c.code)
		}
	}
	if _, err := exe.Run(ctx, gpucc.Inputs{"state": ok}); err != nil {
		t.Errorf("after the refusals: %v", err)
	}
}

// sameTensor checks got against want: dtype, shape, values and float bits.
func sameTensor(t *testing.T, what string, got, want gpucc.Tensor) {
	t.Helper()
	switch {
	case got.DType != want.DType || !slices.Equal(got.Shape, want.Shape):
		t.Errorf("%s: %v %v, want %v %v", what, got.DType, got.Shape, want.DType, want.Shape)
	case !slices.Equal(got.Ints, want.Ints):
		t.Errorf("%s: %v, want %v", what, got.Ints, want.Ints)
	case !slices.Equal(gpucctest.BitsOf(got.Data), gpucctest.BitsOf(want.Data)):
		t.Errorf("%s: %v, want %v", what, got.Data, want.Data)
	}
}

// TestGPT2KVDeviceCache: the GPT-2 decoding step of issue 33 (gpt2kv.onnx:
// int64 input_ids and position, float32 past keys and values in, present
// ones out) decodes two prompt tokens with its cache on the device: the
// presents kept (RunOptions.Keep) and given back as the next step's
// pasts (DeviceTensors), against the same steps through host tensors. The
// logits and the final cache have the host path's bits, and cpu's, on
// every backend with typed code. On webgpu the second step uploads only
// the ids and the position (16 bytes; the cache is 4 × 32 KiB) and reads
// back only the logits.
func TestGPT2KVDeviceCache(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join("onnx", "testdata", "transformers")
	raw, err := os.ReadFile(filepath.Join(dir, "gpt2kv.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	limits := ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1e11, NonFinite: true}
	m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	tokens := npyFile(t, filepath.Join(dir, "gpt2kv.tokens.npy")).Int64
	const heads, maxLen, headDim = 4, 128, 16
	cache := ir.Shape{1, heads, maxLen, headDim}
	var names []string
	for l := range 2 {
		for _, kv := range []string{"key", "value"} {
			names = append(names, fmt.Sprintf("%d.%s", l, kv))
		}
	}
	step := func(p int) gpucc.Inputs {
		return gpucc.Inputs{
			"input_ids": gpucc.Tensor{Shape: []int{1, 1}, DType: ir.I64, Ints: []int64{tokens[p]}},
			"position":  gpucc.Tensor{Shape: []int{1}, DType: ir.I64, Ints: []int64{int64(p)}},
		}
	}
	var cpuLogits [][]float32
	for _, name := range append([]string{"cpu"}, typedBackends...) {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name, func(o *gpucc.Options) { o.Limits = limits })
			d := rt.NewDynamic(m, gpucc.DynamicOptions{})
			defer d.Release()
			// The host path.
			past := map[string]gpucc.Tensor{}
			for _, n := range names {
				past[n] = gpucc.NewTensor(cache, make([]float32, cache.Len()))
			}
			var logits [][]float32
			for p := range 2 {
				in := step(p)
				for _, n := range names {
					in["past_key_values."+n] = past[n]
				}
				r, err := d.Run(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				logits = append(logits, r.Outputs["logits"].Data)
				for _, n := range names {
					past[n] = r.Outputs["present."+n]
				}
			}
			if name == "cpu" {
				cpuLogits = logits
			}
			// The device path: the cache never leaves the device.
			dev := map[string]*gpucc.DeviceTensor{}
			for _, n := range names {
				if dev[n], err = rt.Upload(ctx, cache, make([]float32, cache.Len())); err != nil {
					t.Fatal(err)
				}
			}
			var keep []string
			for _, n := range names {
				keep = append(keep, "present."+n)
			}
			for p := range 2 {
				in := step(p)
				for _, n := range names {
					in["past_key_values."+n] = dev[n]
				}
				r, err := d.RunWith(ctx, in, gpucc.RunOptions{Keep: keep})
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range names {
					dev[n].Release()
					dev[n] = r.Kept["present."+n]
				}
				got := r.Outputs["logits"].Data
				if !slices.Equal(gpucctest.BitsOf(got), gpucctest.BitsOf(logits[p])) {
					t.Errorf("step %d: the logits differ from the host path's", p)
				}
				if cpuLogits != nil && !slices.Equal(gpucctest.BitsOf(got), gpucctest.BitsOf(cpuLogits[p])) {
					t.Errorf("step %d: the logits differ from cpu's", p)
				}
				if name == "webgpu" && p > 0 && (r.Timings.UploadBytes != 16 || r.Timings.ReadbackBytes != 4*256) {
					t.Errorf("step %d: uploaded %d bytes, read back %d; want 16 (ids, position) and %d (logits)", p, r.Timings.UploadBytes, r.Timings.ReadbackBytes, 4*256)
				}
			}
			for _, n := range names {
				got, err := dev[n].Read(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				dev[n].Release()
				if !slices.Equal(gpucctest.BitsOf(got), gpucctest.BitsOf(past[n].Data)) {
					t.Errorf("present.%s: the kept cache differs from the host path's", n)
				}
			}
		})
	}
}
