//go:build !js

package gpu

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
	"github.com/gpucc/gpucc/runtime/gpu/internal/copycheck"
)

// parallelMin is the size below which a host copy runs on one goroutine:
// starting workers costs more than it saves.
const parallelMin = 1 << 20

// copyWorkers is how many goroutines share a large host copy: one memcpy
// stream is far below what the memory system sustains. At most
// maxCopyWorkers, and one per 512 KiB.
func copyWorkers(n int) int {
	if n < parallelMin {
		return 1
	}
	return max(1, min(maxCopyWorkers, n/(parallelMin/2)))
}

// maxCopyWorkers bounds the goroutines of a host copy: GPUCC_COPY_WORKERS
// when it is a positive integer, else GOMAXPROCS up to 16. (The bound was
// 8 until 2026-12-04; the H200's host has 16 cores, and a copy into
// write-combined staging memory is bound by each core's stores, so
// bench/device.sh engine times transfers at 8 and 16.)
var maxCopyWorkers = copyWorkersFrom(os.Getenv("GPUCC_COPY_WORKERS"), goruntime.GOMAXPROCS(0))

func copyWorkersFrom(env string, procs int) int {
	if n, err := strconv.Atoi(env); err == nil && n > 0 {
		return n
	}
	return max(1, min(procs, 16))
}

// parallel runs f over [0,n) cut into pieces of whole 64-byte lines, one
// per worker, and waits.
func parallel(n int, f func(lo, hi int)) {
	w := copyWorkers(n)
	if w == 1 {
		f(0, n)
		return
	}
	step := (n/w + 63) &^ 63
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += step {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(lo, min(lo+step, n))
	}
	wg.Wait()
}

// copyOut copies src into dst (same length) in parallel. A copy for one
// worker is made without the workers' closure, which Go allocates: a
// warm run's small readback allocates nothing (TestRunAllocs).
func copyOut(dst, src []byte) {
	if copyWorkers(len(dst)) == 1 {
		copy(dst, src)
		return
	}
	parallel(len(dst), func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}

// copyChecked copies src into dst (same length, a multiple of 4) in
// parallel and returns the index of the first float32 that is ±Inf or
// NaN, or -1. Each worker checks its piece a block at a time while the
// block is in the core's cache, so that the source is read from memory
// once. On upload (readback false) it copies a 64 KiB block into
// staging, write-combined memory that is slow to read, and checks the
// source's block after. On readback it checks a 1 MiB block of staging
// first and copies it after: Go's copy (runtime.memmove on amd64) of 1
// MiB or more stores around the cache where it takes the AVX path, so
// the caller's slice is not read before it is written, as it was in the
// 64 KiB blocks copied first until 2026-12-05 (on this AMD host, 16 MiB
// on 2 workers: 8.5 GB/s then, 11.3 now, a plain copy 19-20).
//
// Where the CPU has AVX2 (fusedCheck), each worker instead copies its
// piece with copycheck.Copy, which checks each 128 bytes in registers
// between their load and their store: the source is read once and the
// check costs little beyond the copy (BenchmarkCopyChecked, 16 MiB of
// host memory on this AMD host's 2 workers at load 12, 2026-12-05: the
// blocks 9.8-13.9 GB/s, fused 24.6-24.8, a plain copy 12-25).
func copyChecked(dst, src []byte, readback bool) int {
	stream := len(dst) >= streamMin
	if copyWorkers(len(dst)) == 1 { // without the workers' closure (copyOut)
		return copyCheckedPiece(dst, src, 0, len(dst), readback, stream)
	}
	var mu sync.Mutex
	bad := -1
	parallel(len(dst), func(lo, hi int) {
		if j := copyCheckedPiece(dst, src, lo, hi, readback, stream); j >= 0 {
			mu.Lock()
			if bad < 0 || j < bad {
				bad = j
			}
			mu.Unlock()
		}
	})
	return bad
}

// copyCheckedPiece is copyChecked's work on bytes [lo,hi) of dst and
// src, a block at a time: the index of the first non-finite float32 in
// it (counted from the start of src), the blocks after its own not
// copied, or -1. With fusedCheck it is one pass of copycheck.Copy,
// storing around the cache with stream.
func copyCheckedPiece(dst, src []byte, lo, hi int, readback, stream bool) int {
	if fusedCheck {
		if k := copycheck.Copy(dst[lo:hi], src[lo:hi], stream); k >= 0 {
			return lo/4 + k
		}
		return -1
	}
	block := checkBlock
	if readback {
		block = readCheckBlock
	}
	for b := lo; b < hi; b += block {
		e := min(b+block, hi)
		var i int
		if readback {
			i = firstNonFinite(src[b:e])
			copy(dst[b:e], src[b:e])
		} else {
			copy(dst[b:e], src[b:e])
			i = firstNonFinite(src[b:e])
		}
		if i >= 0 {
			return b/4 + i
		}
	}
	return -1
}

// fusedCheck says copyChecked checks as it copies, in one pass
// (copycheck.Copy): where the CPU has AVX2, unless GPUCC_COPY_CHECK=blocks
// asks for the blocks checked and copied apart (so that one device visit
// can time both). A variable so that tests can take both paths.
var fusedCheck = copycheck.Available && os.Getenv("GPUCC_COPY_CHECK") != "blocks"

// streamMin is the size from which copyChecked's fused copy stores around
// the cache, as runtime.memmove's AVX path does from 1 MiB: a larger copy
// would evict what the cache holds for data read later, if at all.
const streamMin = 1 << 20

// checkBlock is the bytes copyChecked copies and then checks at a time on
// upload: well inside a core's L2.
const checkBlock = 64 << 10

// readCheckBlock is the bytes copyChecked checks and then copies at a
// time on readback: the size from which runtime.memmove's AVX path
// stores around the cache (a core's L2, 1-2 MiB, or its L3 still holds
// the block the check read).
const readCheckBlock = 1 << 20

// firstNonFinite returns the index of the first float32 in b (4-byte
// little-endian words; a partial tail is ignored) that is ±Inf or NaN, or
// -1. It tests 16 words at a time, two in each 64-bit word: with the sign
// bits cleared and the exponents masked, adding 0x00800000 to a word
// carries into its bit 31 exactly when its exponent is all ones (no carry
// crosses into the other word, whose bit 31 is clear), so a block is
// finite when no bit 31 is set in the OR of the eight sums. Only a block
// with one is searched word by word. (The word-by-word loop it replaces
// checked 16.9 GB/s on one core here, this 44.)
func firstNonFinite(b []byte) int {
	n := len(b) / 4
	if n == 0 {
		return -1
	}
	const (
		exp   = 0x7f800000_7f800000
		carry = 0x00800000_00800000
		top   = 0x80000000_80000000
	)
	u := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
	i := 0
	for ; i < n && uintptr(unsafe.Pointer(&u[i]))%8 != 0; i++ { // to a 64-bit boundary
		if u[i]&0x7f800000 == 0x7f800000 {
			return i
		}
	}
	if m := (n - i) / 2; m >= 8 {
		w := unsafe.Slice((*uint64)(unsafe.Pointer(&u[i])), m)
		j := 0
		for ; j+8 <= m; j += 8 {
			x := w[j : j+8 : j+8]
			if ((x[0]&exp+carry)|(x[1]&exp+carry)|(x[2]&exp+carry)|(x[3]&exp+carry)|
				(x[4]&exp+carry)|(x[5]&exp+carry)|(x[6]&exp+carry)|(x[7]&exp+carry))&top != 0 {
				break
			}
		}
		i += 2 * j
	}
	for ; i < n; i++ {
		if u[i]&0x7f800000 == 0x7f800000 {
			return i
		}
	}
	return -1
}

// UploadChecked is Upload that also reports the index of the first element
// of data that is ±Inf or NaN, found while copying into staging (no second
// pass over the data). When it finds one it stops and returns its index,
// and the buffer's contents are unspecified; otherwise it returns -1.
func (d *Device) UploadChecked(b *Buffer, data []float32) (int, error) {
	const op = "upload"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return -1, err
	}
	raw := f32Bytes(data)
	if d.upPath != UploadStaging || b.uniform || len(raw) <= smallUpload {
		if i := firstNonFinite(raw); i >= 0 {
			return i, nil
		}
		return -1, d.writeLocked(op, b, raw)
	}
	if err := d.checkBuffer(op, b); err != nil {
		return -1, err
	}
	if uint64(len(raw)) > b.size {
		return -1, errorf(op, "%d B does not fit in %v", len(raw), b)
	}
	return d.stagedWriteLocked(op, b, raw, true)
}

// ensureRing makes ring hold len(ring) buffers of size bytes with usage.
func (d *Device) ensureRing(ring []*wgpu.Buffer, size *uint64, want uint64, usage wgpu.BufferUsage, label string) error {
	if *size == want && ring[0] != nil {
		return nil
	}
	for i, s := range ring {
		if s != nil {
			s.Release()
			ring[i] = nil
		}
	}
	*size = 0 // no ring until every buffer exists
	for i := range ring {
		s, err := d.createBuffer(&wgpu.BufferDescriptor{Label: label, Size: want, Usage: usage})
		if err != nil {
			for j := range i {
				ring[j].Release()
				ring[j] = nil
			}
			return err
		}
		ring[i] = s
	}
	*size = want
	return nil
}

// stagedWriteLocked uploads data through the staging ring; d.mu is held.
// The host fills one staging buffer (in parallel) while the GPU copies the
// other into b: the copy of chunk i+1 overlaps the DMA of chunk i. A
// deeper ring (up to 4) and larger chunks (up to 64 MiB) gained nothing
// on the H100 (2026-12-06): there an upload is bound by the GPU's copy
// out of staging (bench/RESULTS.md). With
// check it reports the first non-finite element as UploadChecked does.
func (d *Device) stagedWriteLocked(op string, b *Buffer, data []byte, check bool) (int, error) {
	chunk := d.upChunk
	if chunk == 0 {
		chunk = defaultStagingChunk
	}
	if uint64(len(data)) <= chunk && chunk <= maxStageBytes { // one chunk (a chunk past the bounds asks for the ring)
		if bad, ok, err := d.stageUpload(op, b, data, check); ok || err != nil {
			return bad, err
		}
	}
	if err := d.ensureRing(d.upStage[:], &d.upSize, chunk, wgpu.BufferUsageMapWrite|wgpu.BufferUsageCopySrc, "gpucc upload staging"); err != nil {
		return -1, errorf(op, "staging buffers of %d B: %w", chunk, err)
	}
	for i, off := 0, uint64(0); off < uint64(len(data)); i, off = i+1, off+chunk {
		s := d.upStage[i%len(d.upStage)]
		end := min(off+chunk, uint64(len(data)))
		n := roundUp(end-off, 4)
		t0 := time.Now()
		if err := d.mapWait(op, s, wgpu.MapModeWrite, n); err != nil {
			return -1, err
		}
		t1 := time.Now()
		m := s.GetMappedRange(0, uint(n))
		k := int(end - off)
		if check {
			if j := copyChecked(m[:k&^3], data[off:off+uint64(k&^3)], false); j >= 0 {
				_ = d.unmap(s)
				return int(off/4) + j, nil
			}
			copy(m[k&^3:], data[off+uint64(k&^3):end])
		} else {
			copyOut(m[:k], data[off:end])
		}
		clear(m[k:])
		t2 := time.Now()
		if err := d.unmap(s); err != nil {
			return -1, errorf(op, "%w", err)
		}
		if err := d.submitCopy(s, 0, b.buf, off, n); err != nil {
			return -1, errorf(op, "%v at offset %d: %w", b, off, err)
		}
		d.upTime[0] += t2.Sub(t1)
		d.upTime[1] += t1.Sub(t0)
		d.upTime[2] += time.Since(t2)
	}
	return -1, nil
}

// submitCopy submits one buffer-to-buffer copy without waiting for it.
func (d *Device) submitCopy(src *wgpu.Buffer, srcOff uint64, dst *wgpu.Buffer, dstOff, n uint64) error {
	return d.recordSubmit(nil, nil, []copyOp{{src, srcOff, dst, dstOff, n}}, nil)
}

// readChunk is the read staging ring's largest buffer size: the upload
// chunk.
func (d *Device) readChunk() uint64 {
	if d.upChunk == 0 {
		return defaultStagingChunk
	}
	return d.upChunk
}

// ensureReadRing makes the read staging ring hold at least min(total,
// readChunk) bytes per buffer. A read that fits one chunk gets a ring
// sized to it, rounded up to a power of two so that growing reads do not
// reallocate each time; the ring never shrinks below what it holds.
func (d *Device) ensureReadRing(total uint64) error {
	chunk := d.readChunk()
	size := chunk
	if total < chunk {
		size = 256
		for size < total {
			size *= 2
		}
		size = min(max(size, d.readSize), chunk)
	}
	if size == d.readSize && d.readStage[0] != nil {
		return nil
	}
	if d.next.readsRing() {
		d.forget() // the recording made ahead copies into the ring's first buffer
	}
	if err := d.ensureRing(d.readStage[:], &d.readSize, size, d.readUsage(), "gpucc read staging"); err != nil {
		return fmt.Errorf("staging buffers of %d B: %w", size, err)
	}
	return nil
}

// ReadChecked is Read that also returns the index of the first element
// read that is ±Inf or NaN, or -1, found while copying out of staging (no
// second pass over out). The elements after one it reports are not read.
func (d *Device) ReadChecked(b *Buffer, out []float32) (int, error) {
	const op = "read"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return -1, err
	}
	if err := d.checkBuffer(op, b); err != nil {
		return -1, err
	}
	raw := f32Bytes(out)
	if b.uniform || uint64(len(raw)) > b.size {
		return -1, errorf(op, "cannot read %d B from %v", len(raw), b)
	}
	if len(raw) == 0 {
		return -1, nil
	}
	return d.readCheckedLocked(op, b, raw, true)
}

// readLocked copies the first len(out) bytes of b into out through the
// read staging ring; d.mu is held.
func (d *Device) readLocked(op string, b *Buffer, out []byte) error {
	_, err := d.readCheckedLocked(op, b, out, false)
	return err
}

// readCheckedLocked is readLocked, with check also returning the index of
// the first non-finite float32 (len(out) a multiple of 4). Chunk i+1 is
// copied by the GPU while the host copies chunk i out (in parallel), and
// nothing is allocated once the ring exists.
func (d *Device) readCheckedLocked(op string, b *Buffer, out []byte, check bool) (int, error) {
	total := roundUp(uint64(len(out)), 4)
	if err := d.ensureReadRing(total); err != nil {
		return -1, errorf(op, "%w", err)
	}
	size := d.readSize
	nchunks := int((total + size - 1) / size)
	issue := func(i int) error {
		off := uint64(i) * size
		n := min(size, total-off)
		if err := d.submitCopy(b.buf, off, d.readStage[i%len(d.readStage)], 0, n); err != nil {
			return errorf(op, "%v at offset %d: %w", b, off, err)
		}
		return nil
	}
	for i := 0; i < min(nchunks, len(d.readStage)); i++ {
		if err := issue(i); err != nil {
			return -1, err
		}
	}
	for i := 0; i < nchunks; i++ {
		s := d.readStage[i%len(d.readStage)]
		off := uint64(i) * size
		n := min(size, total-off)
		if err := d.mapWait(op, s, wgpu.MapModeRead, n); err != nil {
			return -1, err
		}
		m := s.GetMappedRange(0, uint(n))
		end := min(off+n, uint64(len(out)))
		bad := -1
		if check {
			bad = copyChecked(out[off:end], m[:end-off], true)
		} else {
			copyOut(out[off:end], m[:end-off])
		}
		if err := d.unmap(s); err != nil {
			return -1, errorf(op, "%w", err)
		}
		if bad >= 0 {
			// Let the copy in flight finish, so that the ring is idle.
			if i+1 < nchunks {
				d.wait()
			}
			return int(off/4) + bad, nil
		}
		if i+len(d.readStage) < nchunks {
			if err := issue(i + len(d.readStage)); err != nil {
				return -1, err
			}
		}
	}
	return -1, nil
}
