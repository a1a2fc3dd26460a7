//go:build !js

package gpu

import (
	"fmt"
	"testing"
)

// TestUploadPaths round-trips data of awkward sizes through every upload
// path and chunk size, including chunks that split the data unevenly and
// lengths that are not a multiple of 4.
func TestUploadPaths(t *testing.T) {
	d := openDevice(t)
	defer d.SetUpload(UploadWriteBuffer, 0)
	cases := []struct {
		path  UploadPath
		chunk uint64
	}{
		{UploadWriteBuffer, 0},
		{UploadWriteBuffer, 4096},
		{UploadWriteBuffer, 100 << 10},
		{UploadStaging, 0},
		{UploadStaging, 4096},
		{UploadStaging, 100 << 10},
	}
	for _, c := range cases {
		for _, n := range []int{3, 4097, 300_001, 1 << 20} {
			t.Run(fmt.Sprintf("%v/chunk=%d/%dB", c.path, c.chunk, n), func(t *testing.T) {
				d.SetUpload(c.path, c.chunk)
				data := make([]byte, n)
				for i := range data {
					data[i] = byte(i*7 + n)
				}
				buf := mustBuffer(t, d, uint64(n), "upload")
				defer buf.Release()
				if err := d.UploadBytes(buf, data); err != nil {
					t.Fatal(err)
				}
				if err := d.Flush(); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, n)
				if err := d.ReadBytes(buf, got); err != nil {
					t.Fatal(err)
				}
				for i := range data {
					if got[i] != data[i] {
						t.Fatalf("byte %d = %d, want %d", i, got[i], data[i])
					}
				}
			})
		}
	}
}

func TestParseUploadPath(t *testing.T) {
	for _, p := range []UploadPath{UploadWriteBuffer, UploadStaging} {
		if q, err := ParseUploadPath(p.String()); err != nil || q != p {
			t.Errorf("ParseUploadPath(%q) = %v, %v", p, q, err)
		}
	}
	if _, err := ParseUploadPath("dma"); err == nil {
		t.Error("unknown path accepted")
	}
}

// TestStagingChunkTooLarge: a staging chunk the device cannot allocate is
// an error, and going back to a chunk the ring had before works again
// instead of using the released staging buffers.
func TestStagingChunkTooLarge(t *testing.T) {
	d := openDevice(t)
	defer d.SetUpload(UploadWriteBuffer, 0)
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i)
	}
	buf := mustBuffer(t, d, uint64(len(data)), "upload")
	defer buf.Release()
	d.SetUpload(UploadStaging, 4096)
	if err := d.UploadBytes(buf, data); err != nil {
		t.Fatal(err)
	}
	d.SetUpload(UploadStaging, d.Info().Limits.MaxBufferSize+4)
	if err := d.UploadBytes(buf, data); err == nil {
		t.Fatal("a staging chunk over MaxBufferSize was accepted")
	}
	d.SetUpload(UploadStaging, 4096)
	if err := d.UploadBytes(buf, data); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if err := d.ReadBytes(buf, got); err != nil {
		t.Fatal(err)
	}
	for i := range data {
		if got[i] != data[i] {
			t.Fatalf("byte %d = %d, want %d", i, got[i], data[i])
		}
	}
}
