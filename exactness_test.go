//go:build !js

package gpucc_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/gpu"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// rawMulAdd is `a*b + c` written the obvious way: what a driver may contract.
const rawMulAdd = `
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> c: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let i = gid.x + gid.y * nwg.x * 256u;
	if (i >= arrayLength(&out)) { return; }
	out[i] = max(a[i] * b[i] + c[i], vec4<f32>(0.0));
}
`

// TestFMAProbe measures whether this device's driver contracts a*b+c into
// a fused multiply-add (raw WGSL), and checks that gpucc's kernel for the
// same graph keeps both roundings regardless. It logs the raw mismatch
// rate and, on a GPU, the time of both kernels: the cost of exactness.
func TestFMAProbe(t *testing.T) {
	n := envInt("GPUCC_PROBE_N", 1<<20)
	if v := envInt("GPUCC_PROBE_VPT", 0); v > 0 { // tuning sweep on the H200
		defer func(old int) { wgsl.VectorsPerThread = old }(wgsl.VectorsPerThread)
		wgsl.VectorsPerThread = v
	}
	if v := envInt("GPUCC_PROBE_THREADS", 0); v > 0 {
		defer func(old int) { wgsl.VectorThreads = old }(wgsl.VectorThreads)
		wgsl.VectorThreads = v
	}
	a, b, c := irtest.Values(31, n, 4), irtest.Values(32, n, 4), irtest.Values(33, n, 4)
	want := make([]float32, n)
	for i := range want {
		want[i] = cpuref.Unary(ir.OpRelu, float32(float32(a[i]*b[i])+c[i]), 0)
	}

	dev, err := gpu.Open(gpu.Options{AllowSoftware: true})
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_WEBGPU") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer dev.Close()
	bufs := make([]*gpu.Buffer, 4)
	for i, data := range [][]float32{a, b, c, nil} {
		bufs[i], err = dev.NewBuffer(uint64(n)*4, "probe")
		if err != nil {
			t.Fatal(err)
		}
		defer bufs[i].Release()
		if data != nil {
			if err := dev.Upload(bufs[i], data); err != nil {
				t.Fatal(err)
			}
		}
	}
	pipe, err := dev.Compile(rawMulAdd, "main", []gpu.BindingKind{gpu.ReadOnlyStorage, gpu.ReadOnlyStorage, gpu.ReadOnlyStorage, gpu.Storage})
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Release()
	groups := (n/4 + 255) / 256
	d := gpu.Dispatch{Pipeline: pipe, Buffers: bufs, Groups: [3]uint32{uint32(min(groups, 65535)), uint32((groups + 65534) / 65535), 1}}
	if err := dev.Run([]gpu.Dispatch{d}); err != nil {
		t.Fatal(err)
	}
	rawNs, timed, err := dev.RunTimed([]gpu.Dispatch{d})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n)
	if err := dev.Read(bufs[3], got); err != nil {
		t.Fatal(err)
	}
	raw := 0
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] == 0 && want[i] == 0) {
			raw++
		}
	}
	info := dev.Info()
	t.Logf("%s (%d vec4/thread, %d threads): raw a*b+c differs from two roundings in %d of %d results (%.2f%%): contracted=%v",
		info.Name, wgsl.VectorsPerThread, wgsl.VectorThreads, raw, n, 100*float64(raw)/float64(n), raw > 0)

	// The same computation through gpucc must match cpuref exactly.
	bl := ir.NewBuilder()
	x, y, z := bl.Input(ir.Shape{n}, a), bl.Input(ir.Shape{n}, b), bl.Input(ir.Shape{n}, c)
	bl.Output("y", x.Mul(y).Add(z).Relu())
	limits := ir.Limits{MaxElements: 1 << 26, MaxStorageBytes: 1 << 32, MaxOps: 1 << 40}
	g, err := bl.Build(limits)
	if err != nil {
		t.Fatal(err)
	}
	dev.Close()
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "webgpu", AllowSoftware: true, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, v := range res.Outputs["y"].Data {
		if math.Float32bits(v) != math.Float32bits(want[i]) {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("gpucc's fused kernel differs from cpuref in %d of %d results", bad, n)
	}
	if timed {
		t.Logf("kernel time over %d elements: raw %.3f ms, gpucc exact %.3f ms (%s)", n,
			float64(rawNs)/1e6, res.Timings.DispatchMs, res.Timings.DispatchClock)
	}
}

// TestMatmulTileSweep times n×n×n matmuls under several tiles, on the
// device's timestamps, when GPUCC_MATMUL_SWEEP=n is set (the H200 run).
func TestMatmulTileSweep(t *testing.T) {
	n := envInt("GPUCC_MATMUL_SWEEP", 0)
	if n == 0 {
		t.Skip("set GPUCC_MATMUL_SWEEP=n to run")
	}
	bl := ir.NewBuilder()
	x := bl.Input(ir.Shape{n, n}, irtest.Values(41, n*n, 1))
	w := bl.Input(ir.Shape{n, n}, irtest.Values(42, n*n, 1))
	bl.Output("y", x.MatMul(w))
	limits := ir.Limits{MaxElements: 1 << 26, MaxStorageBytes: 1 << 32, MaxOps: 1 << 40}
	g, err := bl.Build(limits)
	if err != nil {
		t.Fatal(err)
	}
	tiles := []ir.Tile{
		passes.TileLarge,
		{BM: 128, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4},
		{BM: 128, BN: 128, TM: 8, TN: 8, BK: 32, Vector: 4},
		{BM: 64, BN: 128, TM: 4, TN: 8, BK: 8, Vector: 4},
		{BM: 128, BN: 64, TM: 8, TN: 8, BK: 8, Vector: 4},
		{BM: 64, BN: 64, TM: 4, TN: 8, BK: 16, Vector: 4},
		passes.TileMedium,
		passes.TileSmall,
		passes.TileFallback,
	}
	for _, tile := range tiles {
		tile := tile
		t.Run(fmt.Sprintf("%+v", tile), func(t *testing.T) {
			rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "webgpu", AllowSoftware: true, Limits: limits,
				Passes: passes.Options{Tile: &tile}})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			best := math.Inf(1)
			for range 3 {
				res, err := rt.Run(context.Background(), g)
				if err != nil {
					t.Fatal(err)
				}
				best = min(best, res.Timings.DispatchMs)
				if n <= 512 { // small enough to check against cpuref here
					want, _ := expect(g)
					for i, v := range res.Outputs["y"].Data {
						if math.Float32bits(v) != math.Float32bits(want["y"][i]) {
							t.Fatalf("element %d = %v, cpuref %v", i, v, want["y"][i])
						}
					}
				}
			}
			t.Logf("matmul %d³ tile %+v: %.3f ms, %.2f TFLOP/s", n, tile, best, 2*float64(n)*float64(n)*float64(n)/best/1e9)
		})
	}
}

// TestSumSweep times whole-tensor sums from 64K to 64M elements, split into
// a block per workgroup (the default on webgpu) against one workgroup, when
// GPUCC_SUM_SWEEP=k is set: sizes 2^16, 2^20, … up to 2^k (the H200 run
// uses 26; lavapipe binds at most 2^25 floats). Both must give cpuref's bits.
func TestSumSweep(t *testing.T) {
	top := envInt("GPUCC_SUM_SWEEP", 0)
	if top == 0 {
		t.Skip("set GPUCC_SUM_SWEEP=k to run")
	}
	limits := ir.Limits{MaxElements: 1 << 26, MaxStorageBytes: 1 << 32, MaxOps: 1 << 40}
	for e := 16; e <= top; e += 2 {
		n := 1 << e
		bl := ir.NewBuilder()
		bl.Output("s", bl.Input(ir.Shape{n}, irtest.Values(51, n, 1)).Sum())
		g, err := bl.Build(limits)
		if err != nil {
			t.Fatal(err)
		}
		want := cpuref.Eval(g)[1][0]
		for _, split := range []bool{true, false} {
			opts := gpucc.Options{Backend: "webgpu", AllowSoftware: true, Limits: limits}
			if !split { // explicit limits keep the runtime from asking for splitting
				opts.Passes = passes.Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384}
			}
			rt, err := gpucc.Open(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			best := math.Inf(1)
			for range 3 {
				res, err := rt.Run(context.Background(), g)
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Outputs["s"].Data[0]; math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("n=%d split=%v: %v, cpuref %v", n, split, got, want)
				}
				best = min(best, res.Timings.DispatchMs)
			}
			rt.Close()
			t.Logf("sum over %d elements, split=%v: %.3f ms (%s)", n, split, best, "gpu-timestamp")
		}
	}
}

// TestMatmulGuardCost measures what exactness costs a large matmul: the
// same generated kernel with and without the uniform-1.0 guard on its
// products (without it, a contracting driver fuses each step into one
// FMA). It runs when GPUCC_MATMUL_GUARD=n is set (the H200 run) and only
// times: the unguarded kernel is not gpucc's and is not checked.
func TestMatmulGuardCost(t *testing.T) {
	n := envInt("GPUCC_MATMUL_GUARD", 0)
	if n == 0 {
		t.Skip("set GPUCC_MATMUL_GUARD=n to run")
	}
	bl := ir.NewBuilder()
	x := bl.Input(ir.Shape{n, n}, irtest.Values(61, n*n, 1))
	w := bl.Input(ir.Shape{n, n}, irtest.Values(62, n*n, 1))
	bl.Output("y", x.MatMul(w))
	limits := ir.Limits{MaxElements: 1 << 26, MaxStorageBytes: 1 << 32, MaxOps: 1 << 40}
	g, err := bl.Build(limits)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	shaders, err := wgsl.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	s := shaders[0]
	dev, err := gpu.Open(gpu.Options{AllowSoftware: true})
	if err != nil {
		t.Skip(err)
	}
	defer dev.Close()
	bufs := make([]*gpu.Buffer, 3)
	for i := range bufs {
		if bufs[i], err = dev.NewBuffer(uint64(n*n)*4, "m"); err != nil {
			t.Fatal(err)
		}
		defer bufs[i].Release()
	}
	dev.Upload(bufs[0], p.Program().Buffers[p.Program().Kernels[0].Inputs[0].Buffer].Data)
	dev.Upload(bufs[1], p.Program().Buffers[p.Program().Kernels[0].Inputs[1].Buffer].Data)
	u, err := dev.NewUniform(s.Params, "params")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	kinds := []gpu.BindingKind{gpu.ReadOnlyStorage, gpu.ReadOnlyStorage, gpu.Storage, gpu.Uniform}
	for _, v := range []struct{ name, src string }{
		{"exact (gpucc)", s.Source},
		{"unguarded", strings.ReplaceAll(s.Source, ") * params.one;", ");")},
	} {
		pipe, err := dev.Compile(v.src, s.Entry, kinds)
		if err != nil {
			t.Fatal(err)
		}
		d := []gpu.Dispatch{{Pipeline: pipe, Buffers: append(bufs, u), Groups: [3]uint32{uint32(s.Groups[0]), uint32(s.Groups[1]), 1}}}
		dev.Run(d)
		best := math.Inf(1)
		for range 5 {
			ns, ok, err := dev.RunTimed(d)
			if err != nil || !ok {
				t.Skipf("no GPU timestamps: %v", err)
			}
			best = min(best, float64(ns)/1e6)
		}
		pipe.Release()
		t.Logf("matmul %d³ %s: %.3f ms, %.2f TFLOP/s", n, v.name, best, 2*float64(n)*float64(n)*float64(n)/best/1e9)
	}
}
