//go:build !js

package gpu

import (
	"os"
	"strconv"
	"testing"

	"github.com/cogentcore/webgpu/wgpu"
)

// BenchmarkStagingParts takes the staging path of a transfer of
// GPUCC_BENCH_BYTES (16 MiB by default; the H200's engine suite uses 256
// MiB) apart, each part alone over the whole transfer, a staging chunk
// (16 MiB) at a time, from filled host memory (never the zero page):
//
//   - host-copy: the package's parallel copy between two host slices;
//   - into-staging, into-staging-checked: the host's copy into a mapped
//     MapWrite staging buffer, plain and with the finiteness check
//     (UploadChecked's), with no GPU work;
//   - dma-up: the GPU's copies out of a staging buffer into a storage
//     buffer, one submission a chunk as the ring submits them, one wait;
//   - out-of-staging, out-of-staging-checked, dma-down: the same for a
//     readback.
//
// A ring that overlaps the host's copy of chunk i+1 with the GPU's copy
// of chunk i moves the transfer at about the slower of its two parts,
// less each chunk's own cost (map, unmap, submission); BenchmarkTransfer
// times the whole, so the difference is that cost, and the slower part
// is what bounds the transfer. GPUCC_BENCH_CHUNK sets the chunk in bytes
// (BenchmarkTransfer reads it too).
func BenchmarkStagingParts(b *testing.B) {
	d := openDevice(b)
	n, _ := strconv.Atoi(os.Getenv("GPUCC_BENCH_BYTES"))
	if n <= 0 {
		n = 16 << 20
	}
	n &^= 3
	chunk := int(defaultStagingChunk)
	if c, _ := strconv.Atoi(os.Getenv("GPUCC_BENCH_CHUNK")); c > 0 {
		chunk = min(c&^3, n)
	}
	src := make([]float32, n/4)
	for i := range src {
		src[i] = float32(i%1000) * 0.5
	}
	raw := f32Bytes(src)
	dst := make([]byte, n)
	copyOut(dst, raw) // its pages, before the timer
	dev, err := d.NewBuffer(uint64(n), "staging parts")
	if err != nil {
		b.Skip(err)
	}
	defer dev.Release()
	stagingBuf := func(b *testing.B, usage wgpu.BufferUsage, mode wgpu.MapMode) (*wgpu.Buffer, []byte) {
		d.mu.Lock()
		defer d.mu.Unlock()
		s, err := d.createBuffer(&wgpu.BufferDescriptor{Label: "staging parts", Size: uint64(chunk), Usage: usage})
		if err != nil {
			b.Fatal(err)
		}
		if err := d.mapWait("bench", s, mode, uint64(chunk)); err != nil {
			b.Fatal(err)
		}
		m := s.GetMappedRange(0, uint(chunk))
		clear(m) // its pages, before the timer
		return s, m
	}
	release := func(s *wgpu.Buffer) {
		d.mu.Lock()
		defer d.mu.Unlock()
		_ = d.unmap(s)
		s.Release()
	}
	// chunks calls f with each chunk's range of the transfer.
	chunks := func(f func(off, end int)) {
		for off := 0; off < n; off += chunk {
			f(off, min(off+chunk, n))
		}
	}
	b.Run("host-copy", func(b *testing.B) {
		b.SetBytes(int64(n))
		for b.Loop() {
			chunks(func(off, end int) { copyOut(dst[off:end], raw[off:end]) })
		}
	})
	for _, checked := range []bool{false, true} {
		name := "into-staging"
		if checked {
			name += "-checked"
		}
		b.Run(name, func(b *testing.B) {
			s, m := stagingBuf(b, wgpu.BufferUsageMapWrite|wgpu.BufferUsageCopySrc, wgpu.MapModeWrite)
			defer release(s)
			b.SetBytes(int64(n))
			for b.Loop() {
				chunks(func(off, end int) {
					if checked {
						if copyChecked(m[:end-off], raw[off:end], false) >= 0 {
							b.Fatal("a finite source found not finite")
						}
					} else {
						copyOut(m[:end-off], raw[off:end])
					}
				})
			}
		})
	}
	// out-of-staging-checked64k is the readback's check until 2026-12-05:
	// 64 KiB blocks copied, then checked in the destination.
	for _, how := range []string{"", "-checked", "-checked64k"} {
		b.Run("out-of-staging"+how, func(b *testing.B) {
			s, m := stagingBuf(b, d.readUsage(), wgpu.MapModeRead)
			defer release(s)
			b.SetBytes(int64(n))
			for b.Loop() {
				chunks(func(off, end int) {
					switch how {
					case "-checked":
						if copyChecked(dst[off:end], m[:end-off], true) >= 0 {
							b.Fatal("zeros found not finite")
						}
					case "-checked64k":
						parallel(end-off, func(lo, hi int) {
							for k := lo; k < hi; k += 64 << 10 {
								e := min(k+64<<10, hi)
								copy(dst[off+k:off+e], m[k:e])
								if firstNonFinite(dst[off+k:off+e]) >= 0 {
									b.Error("zeros found not finite")
								}
							}
						})
					default:
						copyOut(dst[off:end], m[:end-off])
					}
				})
			}
		})
	}
	// dma submits the GPU's copy of each chunk, between the staging
	// buffer s and dev, and waits once.
	dma := func(b *testing.B, s *wgpu.Buffer, up bool) {
		d.mu.Lock()
		defer d.mu.Unlock()
		var err error
		chunks(func(off, end int) {
			c := copyOp{src: s, dst: dev.buf, dstOff: uint64(off), n: uint64(end - off)}
			if !up {
				c = copyOp{src: dev.buf, srcOff: uint64(off), dst: s, n: uint64(end - off)}
			}
			if err == nil {
				err = d.recordSubmit(nil, nil, []copyOp{c}, nil)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		d.wait()
	}
	for _, up := range []bool{true, false} {
		name, usage := "dma-up", wgpu.BufferUsageMapWrite|wgpu.BufferUsageCopySrc
		if !up {
			name, usage = "dma-down", d.readUsage()
		}
		b.Run(name, func(b *testing.B) {
			d.mu.Lock()
			s, err := d.createBuffer(&wgpu.BufferDescriptor{Label: "staging parts", Size: uint64(chunk), Usage: usage})
			d.mu.Unlock()
			if err != nil {
				b.Fatal(err)
			}
			defer s.Release()
			dma(b, s, up) // the first use of the memory, before the timer
			b.SetBytes(int64(n))
			for b.Loop() {
				dma(b, s, up)
			}
		})
	}
}
