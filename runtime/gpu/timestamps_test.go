//go:build !js

package gpu

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestTimestampPlaces: a timed run reports the GPU time of its pass under
// each way of taking it (the encoder's writes or the pass's own, resolved
// through a copy or straight into the mapped buffer), and a run that
// reads outputs back reads its timestamps in the same map (one map, where
// the timestamps took one of their own until 2026-12-05) unless they do
// not fit the staging chunk beside the outputs; the outputs keep their
// bits. A timestamp read from the wrong place (an output's bytes, a stale
// resolve) gives a time past the call's wall time or none.
func TestTimestampPlaces(t *testing.T) {
	for _, v := range []struct{ pass, direct bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		t.Run(fmt.Sprintf("pass=%v,direct=%v", v.pass, v.direct), func(t *testing.T) {
			openDevice(t) // skips without a device
			// the device asks for mappable query results unless told encoder
			t.Setenv("GPUCC_TIMESTAMPS", map[bool]string{true: "pass", false: "encoder"}[v.direct])
			// A device of its own: the variant is set before anything is timed.
			d, err := Open(Options{AllowSoftware: true})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if !d.tsOK {
				t.Skip("no timestamp queries")
			}
			if v.direct && !d.tsDirect {
				t.Skip("query results not mappable here")
			}
			// Before anything timed exists: the buffers take their usage from tsDirect.
			d.tsPass, d.tsDirect = v.pass, v.direct
			// Whatever GPUCC_RECORD_AHEAD says: the counts below include the run recorded ahead.
			d.noAhead = false
			d.SetUpload(UploadWriteBuffer, 1<<12) // the read chunk: 1024 floats
			p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Release()
			commands := 1 + map[bool]int{true: 0, false: 1}[v.direct] + map[bool]int{true: 0, false: 2}[v.pass]
			for _, tc := range []struct {
				name   string
				n      int // elements read back (0: none, RunTimed)
				maps   int
				copies int // the output's copies into staging, and the next run's commands recorded ahead
			}{
				// A run like the one before it records the next one ahead
				// during its wait (ahead.go): its timestamps' commands once
				// more, and with reads in its own submission its copy into
				// staging too (since 2026-12-05).
				{"no reads", 0, 1, 0 + commands},
				{"one", 64, 1, 1 + commands + 1},
				{"last room for timestamps", 1024 - 64, 1, 1 + commands + 1},     // 3840 B: the timestamps at 3840 (a multiple of 256), in the chunk
				{"past the room for timestamps", 1024 - 63, 2, 1 + commands + 1}, // 3844 B: they would be at 4096, past the chunk
				{"chunk exactly", 1024, 2, 1 + commands + 1},
				{"past the chunk", 1025, 3, 2 + commands}, // read after the run, a chunk at a time
			} {
				t.Run(tc.name, func(t *testing.T) {
					n := max(tc.n, 64)
					x, y := mustBuffer(t, d, 4*uint64(n), "x"), mustBuffer(t, d, 4*uint64(n), "y")
					u, err := d.NewUniform(u32Uniform(uint32(n)), "n")
					if err != nil {
						t.Fatal(err)
					}
					defer func() { x.Release(); y.Release(); u.Release() }()
					in := make([]float32, n)
					for i := range in {
						in[i] = []float32{0, float32(math.Copysign(0, -1)), 1e-45, -3e38, 3e38, float32(i)}[i%6]
					}
					if err := d.Upload(x, in); err != nil {
						t.Fatal(err)
					}
					if err := d.Flush(); err != nil {
						t.Fatal(err)
					}
					ds := []Dispatch{{Pipeline: p, Buffers: []*Buffer{x, y, u}, Groups: [3]uint32{uint32(n+63) / 64, 1, 1}}}
					out := make([]float32, tc.n)
					for round := range 2 { // the first makes the query set and the buffers
						c0, t0 := d.Counts(), time.Now()
						var ns time.Duration
						var ok bool
						if tc.n == 0 {
							var raw uint64
							raw, ok, err = d.RunTimed(ds)
							ns = time.Duration(raw)
						} else {
							var rt RunTimes
							rt, err = d.RunReads(ds, []ReadBack{{Buf: y, Out: out}})
							ns, ok = rt.GPU, rt.GPUTimed
						}
						wall := time.Since(t0)
						if err != nil {
							t.Fatal(err)
						}
						if !ok || ns <= 0 || ns > wall {
							t.Fatalf("GPU time %v (timed %v), the call took %v", ns, ok, wall)
						}
						got := d.Counts().Sub(c0)
						wantCommands := commands + tc.copies
						if round == 1 && (got.Maps != tc.maps || got.Commands != wantCommands) {
							t.Errorf("%d maps and %d commands, want %d and %d", got.Maps, got.Commands, tc.maps, wantCommands)
						}
					}
					for i, v := range out {
						want := in[i] + 1
						if math.Float32bits(v) != math.Float32bits(want) {
							t.Fatalf("out[%d] = %v, want %v", i, v, want)
						}
					}
				})
			}
		})
	}
}
