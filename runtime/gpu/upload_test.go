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
