//go:build !js

package gpu

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkTransfer measures the data path at GPUCC_BENCH_BYTES (16 MiB by
// default; the H200 run uses 256 MiB): an upload through the staging ring
// (then Flush, which waits for the copy), the same with the finiteness
// check of UploadChecked, and a readback into the caller's slice, plain
// and with ReadChecked's check (the root layer's DeviceTensor takes the
// checked paths both ways). An upload reports its phases a run: fill-ms
// (the host's copy into staging), wait-ms (a staging buffer's map) and
// submit-ms (its unmap and the copy's submission). GPUCC_BENCH_CHUNK sets
// the staging chunk in bytes.
func BenchmarkTransfer(b *testing.B) {
	d := openDevice(b)
	n, _ := strconv.Atoi(os.Getenv("GPUCC_BENCH_BYTES"))
	if n <= 0 {
		n = 16 << 20
	}
	chunk, _ := strconv.Atoi(os.Getenv("GPUCC_BENCH_CHUNK"))
	data := make([]float32, n/4)
	for i := range data {
		data[i] = float32(i)
	}
	buf, err := d.NewBuffer(uint64(n), "transfer")
	if err != nil {
		b.Skip(err)
	}
	defer buf.Release()
	defer d.SetUpload(d.upPath, d.upChunk)
	d.SetUpload(UploadStaging, uint64(max(chunk, 0)))
	upload := func(checked bool) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetBytes(int64(n))
			d.upTime = [3]time.Duration{}
			defer func() {
				for i, unit := range []string{"fill-ms", "wait-ms", "submit-ms"} {
					b.ReportMetric(float64(d.upTime[i].Nanoseconds())/1e6/float64(b.N), unit)
				}
			}()
			for b.Loop() {
				if checked {
					if bad, err := d.UploadChecked(buf, data); err != nil || bad >= 0 {
						b.Fatal(bad, err)
					}
				} else if err := d.Upload(buf, data); err != nil {
					b.Fatal(err)
				}
				if err := d.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("upload", upload(false))
	b.Run("upload-checked", upload(true))
	// Uploads one after another with no Flush between them, as a
	// DeviceTensor's are: an upload's first maps wait for the last one's
	// copies, so the GPU is never left idle between them.
	b.Run("upload-checked-queued", func(b *testing.B) {
		b.SetBytes(int64(n))
		d.upTime = [3]time.Duration{}
		for b.Loop() {
			if bad, err := d.UploadChecked(buf, data); err != nil || bad >= 0 {
				b.Fatal(bad, err)
			}
		}
		for i, unit := range []string{"fill-ms", "wait-ms", "submit-ms"} {
			b.ReportMetric(float64(d.upTime[i].Nanoseconds())/1e6/float64(b.N), unit)
		}
		if err := d.Flush(); err != nil {
			b.Fatal(err)
		}
	})
	readback := func(checked bool) func(b *testing.B) {
		return func(b *testing.B) {
			out := make([]float32, n/4)
			if err := d.Read(buf, out); err != nil { // the ring, and out's pages
				b.Fatal(err)
			}
			b.SetBytes(int64(n))
			for b.Loop() {
				if checked {
					if bad, err := d.ReadChecked(buf, out); err != nil || bad >= 0 {
						b.Fatal(bad, err)
					}
				} else if err := d.Read(buf, out); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("readback", readback(false))
	// What a DeviceTensor's Read does unless Limits.NonFinite: the
	// finiteness check rides on the copy out of staging.
	b.Run("readback-checked", readback(true))
}
