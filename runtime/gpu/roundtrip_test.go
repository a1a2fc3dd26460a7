//go:build !js

package gpu

import (
	"testing"
	"time"
)

// BenchmarkRoundTripPhases splits the round trip of one tiny dispatch into
// its phases, to show where a lone Run's time goes: recording (encoder,
// pass, finish), queue submission, and waiting for the GPU, by spinning on
// non-blocking polls and by one blocking poll.
func BenchmarkRoundTripPhases(b *testing.B) {
	d := openDevice(b)
	ds := tinyDispatch(b, d)
	p := ds.Pipeline
	bg, err := d.bindGroup(&ds)
	if err != nil {
		b.Fatal(err)
	}
	for _, spin := range []bool{true, false} {
		name := "block"
		if spin {
			name = "spin"
		}
		b.Run(name, func(b *testing.B) {
			var record, submit, wait time.Duration
			polls := 0
			for b.Loop() {
				t0 := time.Now()
				enc, err := d.dev.CreateCommandEncoder(nil)
				if err != nil {
					b.Fatal(err)
				}
				pass := enc.BeginComputePass(nil)
				pass.SetPipeline(p.pipe)
				pass.SetBindGroup(0, bg, nil)
				pass.DispatchWorkgroups(1, 1, 1)
				if err := pass.End(); err != nil {
					b.Fatal(err)
				}
				pass.Release()
				cmd, err := enc.Finish(nil)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				d.queue.Submit(cmd)
				t2 := time.Now()
				if spin {
					for !d.dev.Poll(false, nil) {
						polls++
					}
				} else {
					d.dev.Poll(true, nil)
				}
				t3 := time.Now()
				cmd.Release()
				enc.Release()
				record += t1.Sub(t0)
				submit += t2.Sub(t1)
				wait += t3.Sub(t2)
			}
			n := float64(b.N)
			b.ReportMetric(float64(record.Microseconds())/n, "record-us")
			b.ReportMetric(float64(submit.Microseconds())/n, "submit-us")
			b.ReportMetric(float64(wait.Microseconds())/n, "wait-us")
			b.ReportMetric(float64(polls)/n, "polls")
		})
	}
}

// BenchmarkLoneRun is what a lone small run pays for its kernel and its
// 64-element result: Run then Read (two submissions and waits), against
// RunRead (one); and RunTimed and RunReads, with GPU timestamps.
func BenchmarkLoneRun(b *testing.B) {
	d := openDevice(b)
	ds := []Dispatch{tinyDispatch(b, d)}
	out := make([]float32, 64)
	b.Run("run+read", func(b *testing.B) {
		for b.Loop() {
			if err := d.Run(ds); err != nil {
				b.Fatal(err)
			}
			if err := d.Read(ds[0].Buffers[1], out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("runread", func(b *testing.B) {
		for b.Loop() {
			if err := d.RunRead(ds, ds[0].Buffers[1], out); err != nil {
				b.Fatal(err)
			}
		}
	})
	// What a webgpu run pays: the kernel timed by GPU timestamps (two
	// timestamp writes, a resolve, a copy and a map more than Run), with
	// its result read in the same submission (RunReads) or none (RunTimed).
	b.Run("runtimed", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := d.RunTimed(ds); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The pass writes the timestamps (the default since 2026-12-05; the
	// benchmark sets it whatever GPUCC_TIMESTAMPS says), beside runtimed,
	// which under GPUCC_TIMESTAMPS=encoder has the encoder write them
	// around the pass: one query reset where there are two. They resolve
	// straight into the mapped buffer, without the copy, only where the
	// device was opened without GPUCC_TIMESTAMPS=encoder (tsDirect).
	b.Run("runtimed-pass", func(b *testing.B) {
		d.mu.Lock()
		pass := d.tsPass
		d.tsPass = true
		d.mu.Unlock()
		defer func() {
			d.mu.Lock()
			d.tsPass = pass
			d.mu.Unlock()
		}()
		for b.Loop() {
			if _, _, err := d.RunTimed(ds); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("runreads", func(b *testing.B) {
		rs := []ReadBack{{Buf: ds[0].Buffers[1], Out: out, Check: true}}
		for b.Loop() {
			if _, err := d.RunReads(ds, rs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
