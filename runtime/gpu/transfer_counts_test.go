//go:build !js

package gpu

import (
	"math"
	"testing"
)

// TestTransferCounts pins what a transfer through the staging rings asks
// of wgpu, per chunk: an upload maps each chunk's staging buffer once
// (one wait), unmaps it and submits its copy; a readback submits each
// chunk's copy, maps it once (one wait) and unmaps it; nothing else, and
// no buffer is created once the rings exist. A change that waits twice a
// chunk, maps twice or submits an extra copy fails here; the bits (±0,
// subnormals, ±3e38, ±Inf and NaN on the unchecked paths) arrive whole.
func TestTransferCounts(t *testing.T) {
	openDevice(t) // skips without a device
	d, err := Open(Options{AllowSoftware: true, Upload: UploadStaging, UploadChunk: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const chunks = 4
	n := chunks << 18 // 4 MiB of float32: four 1 MiB chunks
	buf := mustBuffer(t, d, 4*uint64(n), "transfer")
	defer buf.Release()
	data := make([]float32, n)
	edges := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 3e38, -3e38, float32(math.Inf(1)), float32(math.NaN())}
	for i := range data {
		data[i] = edges[i%len(edges)] * float32(1+i%3)
	}
	finite := make([]float32, n)
	for i := range finite {
		finite[i] = edges[i%6] + float32(i%5)
	}
	perChunk := func(k int) Counts { // an upload's or a readback's chunks, and the upload's flush
		return Counts{Submits: k, Waits: k, Scopes: 3 * k, Encoders: k, Maps: k, Commands: k}
	}
	flush := Counts{Submits: 1, Waits: 1, Scopes: 1, Encoders: 1}
	for _, tc := range []struct {
		name string
		do   func(t *testing.T) error
		want Counts
	}{
		{"upload", func(*testing.T) error {
			if err := d.Upload(buf, data); err != nil {
				return err
			}
			return d.Flush()
		}, perChunk(chunks).add(flush)},
		{"upload checked", func(t *testing.T) error {
			if bad, err := d.UploadChecked(buf, finite); err != nil || bad >= 0 {
				t.Fatalf("UploadChecked = %d, %v", bad, err)
			}
			return d.Flush()
		}, perChunk(chunks).add(flush)},
		{"readback", func(t *testing.T) error {
			out := make([]float32, n)
			if err := d.Read(buf, out); err != nil {
				return err
			}
			for i := range out {
				if math.Float32bits(out[i]) != math.Float32bits(finite[i]) {
					t.Fatalf("out[%d] = %v, want %v", i, out[i], finite[i])
				}
			}
			return nil
		}, perChunk(chunks)},
		{"readback checked", func(t *testing.T) error {
			out := make([]float32, n)
			if bad, err := d.ReadChecked(buf, out); err != nil || bad >= 0 {
				t.Fatalf("ReadChecked = %d, %v", bad, err)
			}
			return nil
		}, perChunk(chunks)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(t); err != nil { // the rings, the first time
				t.Fatal(err)
			}
			c0 := d.Counts()
			if err := tc.do(t); err != nil {
				t.Fatal(err)
			}
			if got := d.Counts().Sub(c0); got != tc.want {
				t.Errorf("a warm %s of %d chunks asked wgpu for %+v, want %+v", tc.name, chunks, got, tc.want)
			}
		})
	}
	// The unchecked upload carried ±Inf and NaN: read them back as they went.
	if err := d.Upload(buf, data); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, n)
	if err := d.Read(buf, out); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if math.Float32bits(out[i]) != math.Float32bits(data[i]) {
			t.Fatalf("out[%d] = %v, want %v", i, out[i], data[i])
		}
	}
}

// add returns c plus o, field by field.
func (c Counts) add(o Counts) Counts {
	return Counts{Submits: c.Submits + o.Submits, Waits: c.Waits + o.Waits, Scopes: c.Scopes + o.Scopes,
		Encoders: c.Encoders + o.Encoders, BindGroups: c.BindGroups + o.BindGroups, Buffers: c.Buffers + o.Buffers,
		Writes: c.Writes + o.Writes, Maps: c.Maps + o.Maps, Commands: c.Commands + o.Commands, Ahead: c.Ahead + o.Ahead}
}
