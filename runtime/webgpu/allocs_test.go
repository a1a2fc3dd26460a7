//go:build cgo && !js

package webgpu

import (
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/runtime/backend"
)

// TestRunAllocs pins what a warm run of relu(a*b+c) over 1024 allocates
// in Go: on resident inputs with its output kept, waiting or queued
// (RunQueued), only the kept output's handle (the caller's, until it
// releases it); from host inputs into a host output, nothing, inputs of
// 128 KiB through kept staging too (before 0c30a00: 14 waiting and 13
// into a host output; queued, through Launch, 6 after it; the staged
// inputs' copies 1 until e764c1c). The call and its slices are the
// caller's, made once. Each run's output is cpuref's bit for bit.
func TestRunAllocs(t *testing.T) {
	d := openPooled(t, 0)
	ctx := context.Background()
	for _, tc := range []struct {
		name           string
		resident, keep bool
		queued         bool // RunQueued
		want           float64
	}{
		{"resident-kept", true, true, false, 1},
		{"resident-queued", true, true, true, 1},
		{"resident-host", true, false, false, 0},
		{"host", false, false, false, 0},
		{"host-128KiB", false, false, false, 0}, // staged uploads, their copies in the run's submission
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := 1024
			if tc.name == "host-128KiB" {
				size = 1 << 15
			}
			exe := reluMulAdd(t, d, size)
			p := exe.(*executable).p
			want := cpuref.RunProgram(p)[p.Outputs[0].Name]
			call := countsCall(t, d, exe, tc.resident, tc.keep)
			run := func() {
				call.Dests[0].Buf = nil
				var err error
				if tc.queued {
					err = exe.(*executable).RunQueued(ctx, call)
				} else {
					err = exe.Run(ctx, call)
				}
				if err != nil {
					t.Fatal(err)
				}
				if b := call.Dests[0].Buf; b != nil {
					b.Release()
				}
			}
			for range 3 { // the pool, the bind groups, the rings, the recording ahead
				run()
			}
			n := testing.AllocsPerRun(50, run)
			out := call.Dests[0].Host
			if tc.keep {
				call.Dests[0].Buf = nil
				if err := exe.Run(ctx, call); err != nil {
					t.Fatal(err)
				}
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
			if n != tc.want {
				t.Errorf("a warm %s run allocates %v times, want %v", tc.name, n, tc.want)
			}
		})
	}
}

var _ backend.Executable = (*executable)(nil)
