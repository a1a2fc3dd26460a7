package bench

// Go benchmarks for the figures the issue asks for. Sizes come from the
// environment so that the same test binary runs small here and full size
// on the H200:
//
//	GPUCC_BENCH_BYTES   transfer size (default 16 MiB; H200: 268435456)
//	GPUCC_BENCH_ELEMS   relu(a*b+c) elements (default 1M; H200: 67108864)
//	GPUCC_BENCH_MATMUL  matmul n (default 256; H200: 4096)
//	GPUCC_UPLOAD        upload path for the runtime benchmarks
//	GPUCC_UPLOAD_CHUNK  its chunk in bytes, for the engine's (0: the default)
//
// e.g. bench.test -test.run '^$' -test.bench . -test.benchtime 5x

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/gpu"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func openRuntime(b *testing.B, c *cache.Cache) *gpucc.Runtime {
	b.Helper()
	if c == nil {
		c, _ = cache.Open(cache.Options{})
	}
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "webgpu", AllowSoftware: true, Limits: Limits(), Cache: c,
		Upload: os.Getenv("GPUCC_UPLOAD")})
	if err != nil {
		b.Skipf("webgpu: %v", err)
	}
	return rt
}

func openDevice(b *testing.B) *gpu.Device {
	b.Helper()
	d, err := gpu.Open(gpu.Options{AllowSoftware: true})
	if err != nil {
		b.Skipf("webgpu: %v", err)
	}
	return d
}

// BenchmarkCompile measures codegen+compile of a 64-op fused chain: cold
// (new device, empty cache: every iteration opens a fresh runtime, outside
// the timer) against warm (same runtime: memory codegen and pipeline hits).
// The compile-ms metric is codegenMs + compileMs + firstDispatchMs.
func BenchmarkCompile(b *testing.B) {
	g := Chain(1024, 64)
	b.Run("cold", func(b *testing.B) {
		var total float64
		for b.Loop() {
			b.StopTimer()
			rt := openRuntime(b, nil)
			b.StartTimer()
			res, err := rt.Run(context.Background(), g)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			rt.Close()
			b.StartTimer()
			total += res.Timings.CodegenMs + res.Timings.CompileMs + res.Timings.FirstDispatchMs
		}
		b.ReportMetric(total/float64(b.N), "compile-ms")
	})
	b.Run("warm", func(b *testing.B) {
		rt := openRuntime(b, nil)
		defer rt.Close()
		if _, err := rt.Run(context.Background(), g); err != nil {
			b.Fatal(err)
		}
		var total float64
		for b.Loop() {
			res, err := rt.Run(context.Background(), g)
			if err != nil {
				b.Fatal(err)
			}
			if !res.Cache["pipeline"] {
				b.Fatal("warm run missed the pipeline cache")
			}
			total += res.Timings.CodegenMs + res.Timings.CompileMs + res.Timings.FirstDispatchMs
		}
		b.ReportMetric(total/float64(b.N), "compile-ms")
	})
}

// BenchmarkUpload measures host-to-device throughput of every upload path
// and chunk size (upload then Flush, which waits for the copy).
func BenchmarkUpload(b *testing.B) {
	d := openDevice(b)
	defer d.Close()
	n := envInt("GPUCC_BENCH_BYTES", 16<<20)
	data := hostBytes(n)
	buf, err := d.NewBuffer(uint64(n), "upload")
	if err != nil {
		b.Skip(err)
	}
	defer buf.Release()
	for _, c := range []struct {
		path  gpu.UploadPath
		chunk uint64
	}{
		{gpu.UploadWriteBuffer, 0}, {gpu.UploadWriteBuffer, 4 << 20}, {gpu.UploadWriteBuffer, 16 << 20},
		{gpu.UploadStaging, 4 << 20}, {gpu.UploadStaging, 16 << 20}, {gpu.UploadStaging, 64 << 20},
	} {
		b.Run(fmt.Sprintf("%v/chunk=%dMiB", c.path, c.chunk>>20), func(b *testing.B) {
			d.SetUpload(c.path, c.chunk)
			b.SetBytes(int64(n))
			// Warm up outside the timer (b.Loop starts it): staging
			// buffers, driver allocations.
			d.UploadBytes(buf, data)
			d.Flush()
			for b.Loop() {
				if err := d.UploadBytes(buf, data); err != nil {
					b.Fatal(err)
				}
				if err := d.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// hostBytes is n bytes of data that every page of holds: a slice fresh
// from make is the kernel's zero page until written, so a copy out of it
// reads one cached page instead of memory (until 2026-12-05 BenchmarkUpload
// copied from such a slice: its 33.6 GB/s at 16 MiB chunks on the H200
// against 20.9 for gpu's BenchmarkTransfer, which fills its data, was the
// staging write alone, without the source's reads).
func hostBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + i>>12)
	}
	return b
}

// BenchmarkReadback measures device-to-host throughput through the
// reusable staging buffer.
func BenchmarkReadback(b *testing.B) {
	d := openDevice(b)
	defer d.Close()
	n := envInt("GPUCC_BENCH_BYTES", 16<<20)
	out := make([]byte, n)
	buf, err := d.NewBuffer(uint64(n), "readback")
	if err != nil {
		b.Skip(err)
	}
	defer buf.Release()
	b.SetBytes(int64(n))
	d.ReadBytes(buf, out) // warm-up: the staging buffer
	for b.Loop() {
		if err := d.ReadBytes(buf, out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTinyDispatch is the per-dispatch overhead of a 64-element
// kernel: "submit" is one dispatch submitted and waited for (what a run
// pays), "batched" is one of 100 dispatches in one pass.
func BenchmarkTinyDispatch(b *testing.B) {
	d := openDevice(b)
	defer d.Close()
	g := ReluMulAdd(64)
	p, _, err := passes.Compile(g, passes.Options{Limits: Limits()})
	if err != nil {
		b.Fatal(err)
	}
	shaders, err := wgsl.Target{}.Emit(p)
	if err != nil {
		b.Fatal(err)
	}
	k, s := &p.Program().Kernels[0], shaders[0]
	kinds := make([]gpu.BindingKind, len(s.Bindings))
	for i, x := range s.Bindings {
		kinds[i] = gpu.BindingKind(x)
	}
	pipe, err := d.Compile(s.Source, s.Entry, kinds)
	if err != nil {
		b.Fatal(err)
	}
	var bufs []*gpu.Buffer
	for range len(k.Inputs) + len(k.Outputs) {
		buf, _ := d.NewBuffer(64*4, "t")
		bufs = append(bufs, buf)
	}
	u, _ := d.NewUniform(s.Params, "params")
	one := gpu.Dispatch{Pipeline: pipe, Buffers: append(bufs, u), Groups: [3]uint32{1, 1, 1}}
	for _, batch := range []int{1, 100} {
		name := "submit"
		if batch > 1 {
			name = "batched"
		}
		ds := make([]gpu.Dispatch, batch)
		for i := range ds {
			ds[i] = one
		}
		b.Run(name, func(b *testing.B) {
			// Warm up outside the timer: the pipeline's first use costs
			// far more than a dispatch, and with -benchtime 5x it was
			// a fifth of the mean.
			if err := d.Run(ds); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := d.Run(ds); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*batch), "us/dispatch")
		})
	}
}

// benchmarkRun runs g's executable warm (host data in and out) and
// reports the stage means.
func benchmarkRun(b *testing.B, g *ir.Graph, flops float64) {
	ctx := context.Background()
	rt := openRuntime(b, nil)
	defer rt.Close()
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := exe.Run(ctx, nil); err != nil {
		b.Fatal(err)
	}
	var t gpucc.Timings
	clock := ""
	for b.Loop() {
		res, err := exe.Run(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		t.DispatchMs += res.Timings.DispatchMs
		t.UploadMs += res.Timings.UploadMs
		t.ReadbackMs += res.Timings.ReadbackMs
		clock = res.Timings.DispatchClock
	}
	n := float64(b.N)
	b.ReportMetric(t.DispatchMs/n, "dispatch-ms("+clock+")")
	b.ReportMetric(t.UploadMs/n, "upload-ms")
	b.ReportMetric(t.ReadbackMs/n, "readback-ms")
	if flops > 0 {
		b.ReportMetric(flops/(t.DispatchMs/n)/1e9, "TFLOP/s")
	}
}

// BenchmarkReluMulAdd is the fused relu(a*b+c) over GPUCC_BENCH_ELEMS.
func BenchmarkReluMulAdd(b *testing.B) {
	benchmarkRun(b, ReluMulAdd(envInt("GPUCC_BENCH_ELEMS", 1<<20)), 0)
}

// BenchmarkMatmul is an n³ float32 matmul, n = GPUCC_BENCH_MATMUL.
func BenchmarkMatmul(b *testing.B) {
	n := envInt("GPUCC_BENCH_MATMUL", 256)
	benchmarkRun(b, Matmul(n), 2*float64(n)*float64(n)*float64(n))
}
