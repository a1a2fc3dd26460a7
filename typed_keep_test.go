package gpucc_test

import (
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// typedStepGraph is a decoding step's typed state: int64 ids, a bool
// mask, int32 counts, float16 h and uint8 u in; each one's next value
// out under the input's name with "1" appended, so that a step's outputs
// are the next step's inputs: ids+1 (wrapping at 2^63), mask xor ids>0,
// count·3 (wrapping at 2^31), h·0.5 (float16 subnormals rounded to even),
// u+200 (wrapping at 2^8); and y, ids as float32, a float32 output beside
// them, halved (float32 work after the typed nodes).
func typedStepGraph(t *testing.T) *ir.Graph {
	b := ir.NewBuilder()
	ids := b.TypedInput("ids", ir.I64, ir.Shape{4}, nil, make([]int64, 4))
	mask := b.TypedInput("mask", ir.Bool, ir.Shape{4}, nil, make([]int64, 4))
	count := b.TypedInput("count", ir.I32, ir.Shape{2}, nil, make([]int64, 2))
	h := b.TypedInput("h", ir.F16, ir.Shape{5}, make([]float32, 5), nil)
	u := b.TypedInput("u", ir.U8, ir.Shape{5}, nil, make([]int64, 5))
	b.Output("ids1", ids.Add(b.FullOf(ir.I64, ir.Shape{4}, 0, 1)))
	b.Output("mask1", mask.Apply(ir.OpXor, ids.ApplyTo(ir.Bool, ir.OpGreater, b.FullOf(ir.I64, ir.Shape{4}, 0, 0))))
	b.Output("count1", count.Mul(b.FullOf(ir.I32, ir.Shape{2}, 0, 3)))
	b.Output("h1", h.Mul(b.FullOf(ir.F16, ir.Shape{5}, 0.5, 0)))
	b.Output("u1", u.Add(b.FullOf(ir.U8, ir.Shape{5}, 0, 200)))
	b.Output("y", ids.Cast(ir.F32).MulScalar(0.5)) // float32 work: a split graph on native and wasm
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// typedStepStart is the first step's state, at the dtypes' limits: ids
// whose 32-bit words are NaNs (-1, a signalling NaN's bits, 2^63-1
// wrapping), float16 -0, subnormals and its largest finite value, uint8
// values that wrap.
func typedStepStart() map[string]gpucc.Tensor {
	return map[string]gpucc.Tensor{
		"ids":   {Shape: []int{4}, DType: ir.I64, Ints: []int64{-1, 0x7f800001, math.MaxInt64, math.MinInt64}},
		"mask":  {Shape: []int{4}, DType: ir.Bool, Ints: []int64{1, 0, 0, 1}},
		"count": {Shape: []int{2}, DType: ir.I32, Ints: []int64{math.MaxInt32, -7}},
		"h":     {Shape: []int{5}, DType: ir.F16, Data: []float32{65504, 0x1p-24, 3 * 0x1p-24, float32(math.Copysign(0, -1)), -0x1p-14}},
		"u":     {Shape: []int{5}, DType: ir.U8, Ints: []int64{0, 55, 56, 255, 100}},
	}
}

var typedState = []string{"ids", "mask", "count", "h", "u"}

// TestTypedDeviceTensors: kept outputs of every dtype stay on the device
// as DeviceTensors of that dtype (int64, bool, int32, float16, uint8),
// and a later run takes them as inputs: three steps of typedStepGraph fed
// back through Keep (RunWith, and Launch with Pending.Kept) give the host
// path's bits, and cpu's, on cpu and every backend with typed code; the
// state uploaded with UploadTensor and read with ReadTensor keeps every
// value (int64 words that are NaNs included). The kept tensors count
// their dtype's bytes, padded to words. On webgpu a step uploads nothing
// and reads back only y. Before, Keep of another dtype
// than float32 was unsupported, a DeviceTensor input of another dtype
// invalid_input, and Launch refused typed graphs (unsupported).
func TestTypedDeviceTensors(t *testing.T) {
	ctx := context.Background()
	g := typedStepGraph(t)
	const steps = 3
	var cpuOut []map[string]gpucc.Tensor
	for _, name := range append([]string{"cpu"}, typedBackends...) {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name)
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			// The host path.
			var want []map[string]gpucc.Tensor
			state := typedStepStart()
			for range steps {
				in := gpucc.Inputs{}
				for _, s := range typedState {
					in[s] = state[s]
				}
				r, err := exe.Run(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, r.Outputs)
				for _, s := range typedState {
					state[s] = r.Outputs[s+"1"]
				}
			}
			if name == "cpu" {
				cpuOut = want
			}
			for k := range want {
				for o, w := range want[k] {
					if cpuOut != nil {
						sameTensor(t, name+" host "+o, w, cpuOut[k][o])
					}
				}
			}
			for _, launch := range []bool{false, true} {
				how := map[bool]string{false: "RunWith", true: "Launch"}[launch]
				dev := map[string]*gpucc.DeviceTensor{}
				for s, v := range typedStepStart() {
					d, err := rt.UploadTensor(ctx, v)
					if err != nil {
						t.Fatal(err)
					}
					if d.DType() != v.DType {
						t.Errorf("UploadTensor(%s): dtype %v, want %v", s, d.DType(), v.DType)
					}
					back, err := d.ReadTensor(ctx)
					if err != nil {
						t.Fatal(err)
					}
					sameTensor(t, name+" uploaded "+s, back, v)
					dev[s] = d
				}
				var keep []string
				for _, s := range typedState {
					keep = append(keep, s+"1")
				}
				for k := range steps {
					in := gpucc.Inputs{}
					for _, s := range typedState {
						in[s] = dev[s]
					}
					var kept map[string]*gpucc.DeviceTensor
					var r *gpucc.Result
					if launch {
						p, err := exe.Launch(ctx, in, gpucc.RunOptions{Keep: keep})
						if err != nil {
							t.Fatalf("%s step %d: %v", how, k, err)
						}
						kept = map[string]*gpucc.DeviceTensor{}
						for _, o := range keep {
							kept[o] = p.Kept(o)
						}
						if r, err = p.Wait(ctx); err != nil {
							t.Fatal(err)
						}
					} else {
						if r, err = exe.RunWith(ctx, in, gpucc.RunOptions{Keep: keep}); err != nil {
							t.Fatalf("%s step %d: %v", how, k, err)
						}
						kept = r.Kept
					}
					if len(r.Outputs) != 1 || len(r.Kept) != len(keep) {
						t.Fatalf("%s step %d: %d outputs and %d kept, want 1 and %d", how, k, len(r.Outputs), len(r.Kept), len(keep))
					}
					sameTensor(t, name+" "+how+" y", r.Outputs["y"], want[k]["y"])
					if name == "webgpu" && (r.Timings.UploadBytes != 0 || r.Timings.ReadbackBytes != 16) {
						t.Errorf("%s step %d: uploaded %d bytes, read back %d; want 0 and 16 (y): the state stays where it is", how, k, r.Timings.UploadBytes, r.Timings.ReadbackBytes)
					}
					n, _ := rt.LiveTensors()
					var bytes int64
					for _, s := range typedState {
						d := kept[s+"1"]
						if d == nil || d.DType() != want[k][s+"1"].DType {
							t.Fatalf("%s step %d: kept %s is %v", how, k, s+"1", d)
						}
						bytes += d.Bytes()
						got, err := d.ReadTensor(ctx)
						if err != nil {
							t.Fatal(err)
						}
						sameTensor(t, name+" "+how+" kept "+s+"1", got, want[k][s+"1"])
						dev[s].Release()
						dev[s] = d
					}
					if n != 2*len(typedState) {
						t.Errorf("%s step %d: %d live tensors, want %d", how, k, n, 2*len(typedState))
					}
					// int64 [4] 32, bool [4] 4, int32 [2] 8, float16 [5] 12 (10 padded), uint8 [5] 8 (5 padded).
					if bytes != 32+4+8+12+8 {
						t.Errorf("%s step %d: the kept tensors hold %d bytes, want 64", how, k, bytes)
					}
				}
				for _, d := range dev {
					d.Release()
				}
			}
			typedTensorsRefused(t, rt, exe)
		})
	}
}

// typedTensorsRefused: the misuses of typed device tensors, each with its
// stable code.
func typedTensorsRefused(t *testing.T, rt *gpucc.Runtime, exe *gpucc.Executable) {
	ctx := context.Background()
	i32, err := rt.UploadTensor(ctx, gpucc.Tensor{Shape: []int{4}, DType: ir.I32, Ints: []int64{1, 2, 3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer i32.Release()
	f32, err := rt.Upload(ctx, ir.Shape{4}, []float32{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	defer f32.Release()
	if _, err := exe.Run(ctx, gpucc.Inputs{"ids": i32}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("int32 device tensor for int64 ids: %v, want invalid_input", err)
	}
	if _, err := exe.Run(ctx, gpucc.Inputs{"ids": f32}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("float32 device tensor for int64 ids: %v, want invalid_input", err)
	}
	if _, err := i32.Read(ctx, nil); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("Read of an int32 tensor: %v, want invalid_input", err)
	}
	for _, c := range []struct {
		what string
		t    gpucc.Tensor
	}{
		{"uint8 300", gpucc.Tensor{Shape: []int{1}, DType: ir.U8, Ints: []int64{300}}},
		{"bool 2", gpucc.Tensor{Shape: []int{1}, DType: ir.Bool, Ints: []int64{2}}},
		{"int32 2^31", gpucc.Tensor{Shape: []int{1}, DType: ir.I32, Ints: []int64{1 << 31}}},
		{"float16 1+2^-12", gpucc.Tensor{Shape: []int{1}, DType: ir.F16, Data: []float32{1 + 0x1p-12}}},
		{"float16 +Inf", gpucc.Tensor{Shape: []int{1}, DType: ir.F16, Data: []float32{float32(math.Inf(1))}}},
		{"too few values", gpucc.Tensor{Shape: []int{2}, DType: ir.I64, Ints: []int64{1}}},
		{"a zero dimension", gpucc.Tensor{Shape: []int{0}, DType: ir.I64}},
	} {
		if d, err := rt.UploadTensor(ctx, c.t); gpucc.CodeOf(err) != ir.CodeInvalidInput {
			t.Errorf("UploadTensor %s: %v, want invalid_input", c.what, err)
			if d != nil {
				d.Release()
			}
		}
	}
	// A float32 graph takes only float32 device tensors.
	b := ir.NewBuilder()
	b.Output("y", b.NamedInput("x", ir.Shape{4}, make([]float32, 4)).AddScalar(1))
	fg, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	fe, err := rt.Compile(ctx, fg)
	if err != nil {
		t.Fatal(err)
	}
	defer fe.Release()
	if _, err := fe.Run(ctx, gpucc.Inputs{"x": i32}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("int32 device tensor for a float32 graph: %v, want invalid_input", err)
	}
	if _, err := fe.Launch(ctx, gpucc.Inputs{"x": i32}, gpucc.RunOptions{}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("int32 device tensor for a float32 graph's Launch: %v, want invalid_input", err)
	}
	if n, bytes := rt.LiveTensors(); n != 2 || bytes != 32 {
		t.Errorf("after the refusals: %d live tensors of %d bytes, want 2 of 32", n, bytes)
	}
}

// TestTypedIntoInts: RunOptions.IntoInts reads a typed graph's integer and
// bool outputs into the caller's slices, as Into does float ones: the
// outputs are those slices, with Run's values, on cpu and every backend
// with typed code. An IntoInts slice for a float output, of the wrong
// length, for a kept output or on a float32 graph is invalid_input.
func TestTypedIntoInts(t *testing.T) {
	ctx := context.Background()
	g := typedStepGraph(t)
	for _, name := range append([]string{"cpu"}, typedBackends...) {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name)
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			in := gpucc.Inputs{}
			for s, v := range typedStepStart() {
				in[s] = v
			}
			want, err := exe.Run(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			into := map[string][]int64{"ids1": make([]int64, 4), "mask1": make([]int64, 4), "count1": make([]int64, 2), "u1": make([]int64, 5)}
			h := make([]float32, 5)
			r, err := exe.RunWith(ctx, in, gpucc.RunOptions{IntoInts: into, Into: map[string][]float32{"h1": h}})
			if err != nil {
				t.Fatal(err)
			}
			for o, s := range into {
				if got := r.Outputs[o].Ints; len(got) == 0 || &got[0] != &s[0] {
					t.Errorf("%s is not its IntoInts slice", o)
				}
			}
			if got := r.Outputs["h1"].Data; &got[0] != &h[0] {
				t.Errorf("h1 is not its Into slice")
			}
			for o, w := range want.Outputs {
				sameTensor(t, name+" "+o, r.Outputs[o], w)
			}
			for _, c := range []struct {
				what string
				opts gpucc.RunOptions
			}{
				{"a float16 output", gpucc.RunOptions{IntoInts: map[string][]int64{"h1": make([]int64, 5)}}},
				{"a float32 output", gpucc.RunOptions{IntoInts: map[string][]int64{"y": make([]int64, 4)}}},
				{"a short slice", gpucc.RunOptions{IntoInts: map[string][]int64{"ids1": make([]int64, 3)}}},
				{"no output", gpucc.RunOptions{IntoInts: map[string][]int64{"ids": make([]int64, 4)}}},
				{"a kept output", gpucc.RunOptions{Keep: []string{"ids1"}, IntoInts: map[string][]int64{"ids1": make([]int64, 4)}}},
			} {
				if _, err := exe.RunWith(ctx, in, c.opts); gpucc.CodeOf(err) != ir.CodeInvalidInput {
					t.Errorf("IntoInts for %s: %v, want invalid_input", c.what, err)
				}
			}
			b := ir.NewBuilder()
			b.Output("y", b.NamedInput("x", ir.Shape{4}, make([]float32, 4)).AddScalar(1))
			fg, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			fe, err := rt.Compile(ctx, fg)
			if err != nil {
				t.Fatal(err)
			}
			defer fe.Release()
			if _, err := fe.RunWith(ctx, nil, gpucc.RunOptions{IntoInts: map[string][]int64{"y": make([]int64, 4)}}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
				t.Errorf("IntoInts on a float32 graph: %v, want invalid_input", err)
			}
		})
	}
}
