//go:build cgo && !js

package webgpu

import (
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/gpu"
)

// threeKernels is relu(a·b)·c summed over its rows: two matmuls and a
// reduction, three kernels.
func threeKernels(t *testing.T, d *device) backend.Executable {
	t.Helper()
	const n = 32
	bl := ir.NewBuilder()
	a := bl.Input(ir.Shape{n, n}, irtest.Values(4, n*n, 3))
	b := bl.Input(ir.Shape{n, n}, irtest.Values(5, n*n, 3))
	c := bl.Input(ir.Shape{n, n}, irtest.Values(6, n*n, 3))
	bl.Output("y", a.MatMul(b).Relu().MatMul(c).SumAxes(false, 1))
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	exe := compiled(t, d, g)
	if k := len(exe.p.Kernels); k != 3 {
		t.Fatalf("%d kernels, want 3", k)
	}
	return exe
}

// countsCall is a call of exe: its inputs resident (uploaded once, from
// the program's embedded data) or host slices, its one output kept or
// read to the host.
func countsCall(t testing.TB, d *device, exe backend.Executable, resident, keep bool) *backend.Call {
	t.Helper()
	p := exe.(*executable).p
	call := &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: make([]backend.Dest, len(p.Outputs)), Stats: &backend.Stats{}}
	for i, b := range p.Buffers {
		if !b.Input {
			continue
		}
		if !resident {
			call.Args[i].Host = b.Data
			continue
		}
		buf, err := d.Alloc(context.Background(), b.Len)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(buf.Release)
		if err := d.Upload(context.Background(), buf, b.Data); err != nil {
			t.Fatal(err)
		}
		call.Args[i].Buf = buf
	}
	call.Dests[0].Keep = keep
	if !keep {
		call.Dests[0].Host = make([]float32, p.Buffers[p.Outputs[0].Buffer].Len)
	}
	return call
}

// TestRunCounts pins what a warm run asks of wgpu, by kind of call
// (gpu.Counts), for the runs whose cost beyond their kernels issue 35
// measures: a resident run of one kernel and of three, waiting and queued
// (RunQueued), a Launch and its Wait, and a run from host inputs to a
// host output, small (WriteBuffer) and of 128 KiB (staged). A change that adds
// a submission, a wait, an error scope, a bind group, a buffer, a write
// or a map to one of them fails here: the H200 is not at hand to time
// it, so the calls are counted instead. Each run's output is cpuref's,
// bit for bit. The counts are the default's, whatever GPUCC_TIMESTAMPS says.
func TestRunCounts(t *testing.T) {
	t.Setenv("GPUCC_TIMESTAMPS", "pass")
	d := openPooled(t, 0)
	ctx := context.Background()
	cases := []struct {
		name     string
		exe      func() backend.Executable
		resident bool
		keep     bool
		launch   bool
		queued   bool // RunQueued
		want     gpu.Counts
	}{
		// A timed run's commands: the resolve of the timestamps the pass
		// writes, straight into the mapped buffer (until 2026-12-05 four:
		// the encoder's two timestamp writes, the resolve and its copy,
		// as under GPUCC_TIMESTAMPS=encoder; TestTimestampPlaces). A warm resident
		// run submits what the run before it recorded during its wait
		// (Ahead), and records the next one during its own: its
		// Encoder and its Scope for the recording are the next run's.
		{name: "resident", exe: func() backend.Executable { return reluMulAdd(t, d, 1024) }, resident: true, keep: true,
			want: gpu.Counts{Submits: 1, Waits: 1, Scopes: 3, Encoders: 1, Maps: 1, Commands: 1, Ahead: 1}},
		{name: "resident-queued", exe: func() backend.Executable { return reluMulAdd(t, d, 1024) }, resident: true, keep: true, queued: true,
			want: gpu.Counts{Submits: 1, Scopes: 1, Encoders: 1}},
		{name: "resident3", exe: func() backend.Executable { return threeKernels(t, d) }, resident: true, keep: true,
			want: gpu.Counts{Submits: 1, Waits: 1, Scopes: 3, Encoders: 1, Maps: 1, Commands: 1, Ahead: 1}},
		{name: "launch", exe: func() backend.Executable { return reluMulAdd(t, d, 1024) }, resident: true, launch: true,
			want: gpu.Counts{Submits: 1, Waits: 1, Scopes: 3, Encoders: 1, Maps: 1, Commands: 1}},
		{name: "launch-kept", exe: func() backend.Executable { return reluMulAdd(t, d, 1024) }, resident: true, keep: true, launch: true,
			want: gpu.Counts{Submits: 1, Waits: 1, Scopes: 1, Encoders: 1}},
		// The timestamps are resolved into the read staging buffer
		// after the output: one map and its unmap (until 2026-12-05
		// two of each, 8 scopes). Its recording, with the output's copy
		// into staging, was made during the last run's wait (Ahead);
		// its Encoder is the next run's.
		{name: "host", exe: func() backend.Executable { return reluMulAdd(t, d, 1024) },
			want: gpu.Counts{Submits: 1, Waits: 1, Scopes: 6, Encoders: 1, Writes: 3, Maps: 1, Commands: 2, Ahead: 1}},
		// Inputs of 128 KiB each go through staging buffers kept mapped,
		// their copies in the run's own submission (until 2026-12-05: a
		// submission and a wait each, 4 and 4 a run); so it records its
		// own, and nothing ahead (one Encoder, not two).
		{name: "host-128KiB", exe: func() backend.Executable { return reluMulAdd(t, d, 1<<15) },
			want: gpu.Counts{Submits: 1, Waits: 1, Scopes: 9, Encoders: 1, Maps: 4, Commands: 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			exe := tc.exe()
			p := exe.(*executable).p
			want := cpuref.RunProgram(p)[p.Outputs[0].Name]
			base := countsCall(t, d, exe, tc.resident, tc.keep)
			fresh := func() *backend.Call { // the same inputs, new outputs
				call := *base
				call.Dests = []backend.Dest{{Keep: tc.keep}}
				if !tc.keep {
					call.Dests[0].Host = make([]float32, len(want))
				}
				call.Stats = &backend.Stats{}
				return &call
			}
			run := func(check bool) *backend.Call {
				call := fresh()
				before := d.dev.Counts()
				if tc.launch {
					pd, err := exe.(backend.Launcher).Launch(ctx, call)
					if err != nil {
						t.Fatal(err)
					}
					if err := pd.Wait(ctx); err != nil {
						t.Fatal(err)
					}
				} else if tc.queued {
					if err := exe.(*executable).RunQueued(ctx, call); err != nil {
						t.Fatal(err)
					}
				} else if err := exe.Run(ctx, call); err != nil {
					t.Fatal(err)
				}
				got := d.dev.Counts().Sub(before)
				if check && got != tc.want {
					t.Errorf("a warm run asked wgpu for %+v, want %+v", got, tc.want)
				}
				return call
			}
			for range 2 { // the first run fills the pool, the caches and the staging buffers
				if b := run(false).Dests[0].Buf; b != nil {
					b.Release()
				}
			}
			call := run(true)
			out := call.Dests[0].Host
			if tc.keep {
				out = make([]float32, len(want))
				if err := d.Read(ctx, call.Dests[0].Buf, out); err != nil {
					t.Fatal(err)
				}
				call.Dests[0].Buf.Release()
			}
			for i, v := range out {
				if math.Float32bits(v) != math.Float32bits(want[i]) {
					t.Fatalf("y[%d] = %v, cpuref %v", i, v, want[i])
				}
			}
		})
	}
}

// BenchmarkRunCost times the warm runs TestRunCounts counts, and reports
// what each asks of wgpu beyond its wall time: on lavapipe the kernels of
// 1024 elements are short, so a run's time is mostly its host path (the
// recording, the error scopes, the submission, the wait). bench/device.sh's
// quick suite runs it on the H200.
func BenchmarkRunCost(b *testing.B) {
	c, err := cache.Open(cache.Options{})
	if err != nil {
		b.Fatal(err)
	}
	bd, err := open(backend.Options{AllowSoftware: true, Cache: c})
	if err != nil {
		b.Skip(err)
	}
	d := bd.(*device)
	defer d.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name           string
		resident, keep bool
		launch         bool
		queued         bool
		n              int
	}{{"resident", true, true, false, false, 1024}, {"resident-queued", true, true, false, true, 1024}, {"launch-kept", true, true, true, false, 1024},
		{"host", false, false, false, false, 1024}, {"host-128KiB", false, false, false, false, 1 << 15}} {
		b.Run(tc.name, func(b *testing.B) {
			exe := reluMulAdd(b, d, tc.n)
			call := countsCall(b, d, exe, tc.resident, tc.keep)
			one := func() {
				c := *call
				c.Dests = []backend.Dest{{Keep: tc.keep}}
				if !tc.keep {
					c.Dests[0].Host = make([]float32, tc.n)
				}
				c.Stats = &backend.Stats{}
				if tc.launch {
					pd, err := exe.(backend.Launcher).Launch(ctx, &c)
					if err == nil {
						err = pd.Wait(ctx)
					}
					if err != nil {
						b.Fatal(err)
					}
				} else if tc.queued {
					if err := exe.(*executable).RunQueued(ctx, &c); err != nil {
						b.Fatal(err)
					}
				} else if err := exe.Run(ctx, &c); err != nil {
					b.Fatal(err)
				}
				if buf := c.Dests[0].Buf; buf != nil {
					buf.Release()
				}
			}
			one()
			one()
			before := d.dev.Counts()
			for b.Loop() {
				one()
			}
			n := d.dev.Counts().Sub(before)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/run")
			b.ReportMetric(float64(n.Scopes)/float64(b.N), "scopes/run")
			b.ReportMetric(float64(n.Waits)/float64(b.N), "waits/run")
			b.ReportMetric(float64(n.Commands)/float64(b.N), "commands/run")
			b.ReportMetric(float64(n.Ahead)/float64(b.N), "ahead/run")
		})
	}
	// The recording and submission alone (gpu.Device.Submit of a warm
	// resident run's dispatch), the waits outside the timer: what the
	// error scopes and the binding's calls cost, without the GPU.
	b.Run("record", func(b *testing.B) {
		exe := reluMulAdd(b, d, 1024)
		call := countsCall(b, d, exe, true, true)
		if err := exe.Run(ctx, call); err != nil {
			b.Fatal(err)
		}
		call.Dests[0].Buf.Release()
		ds := exe.(*executable).lastDs
		i := 0
		for b.Loop() {
			if err := d.dev.Submit(ds); err != nil {
				b.Fatal(err)
			}
			if i++; i%32 == 0 {
				b.StopTimer()
				if err := d.dev.Sync(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "us/run")
	})
}
