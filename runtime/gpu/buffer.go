//go:build !js

package gpu

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
)

// Buffer is a device buffer. Buffers from NewBuffer are storage buffers
// (usage Storage|CopySrc|CopyDst); buffers from NewUniform are uniform
// buffers (usage Uniform|CopyDst).
type Buffer struct {
	d        *Device
	buf      *wgpu.Buffer
	size     uint64
	label    string
	uniform  bool
	id       uint64
	released bool
}

// Size returns the buffer size in bytes (the requested size rounded up to a
// multiple of 4, or of 16 for uniform buffers).
func (b *Buffer) Size() uint64 { return b.size }

// Release frees the buffer. Releasing twice is a no-op.
func (b *Buffer) Release() {
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if b.released {
		return
	}
	b.released = true
	liveBuffers.Add(-1)
	d.dropPending(b)
	d.evict(b.id)
	b.buf.Release()
}

// liveBuffers counts Buffers created and not yet released, in every device.
var liveBuffers atomic.Int64

// LiveBuffers returns how many Buffers (storage and uniform) exist and are
// not released, over every device: leak tests compare it before and after.
func LiveBuffers() int64 { return liveBuffers.Load() }

func (b *Buffer) String() string {
	if b.label != "" {
		return fmt.Sprintf("buffer %q (%d B)", b.label, b.size)
	}
	return fmt.Sprintf("buffer #%d (%d B)", b.id, b.size)
}

func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }

// NewBuffer creates a zero-initialised storage buffer of size bytes
// (rounded up to a multiple of 4; a zero size becomes 4). The size is
// checked against MaxBufferSize and MaxStorageBufferBindingSize because
// every buffer is bound whole.
func (d *Device) NewBuffer(size uint64, label string) (*Buffer, error) {
	const op = "new buffer"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return nil, err
	}
	if size > ^uint64(0)-16 {
		return nil, errorf(op, "%q: size %d B: %w", label, size, ErrLimit)
	}
	sz := max(roundUp(size, 4), 4)
	if sz > d.lim.MaxBufferSize {
		return nil, errorf(op, "%q: size %d B > MaxBufferSize %d B of %s: %w", label, sz, d.lim.MaxBufferSize, d.info.Name, ErrLimit)
	}
	if sz > d.lim.MaxStorageBufferBindingSize {
		return nil, errorf(op, "%q: size %d B > MaxStorageBufferBindingSize %d B of %s: %w", label, sz, d.lim.MaxStorageBufferBindingSize, d.info.Name, ErrLimit)
	}
	buf, err := d.createBuffer(&wgpu.BufferDescriptor{
		Label: label,
		Size:  sz,
		Usage: wgpu.BufferUsageStorage | wgpu.BufferUsageCopySrc | wgpu.BufferUsageCopyDst,
	})
	if err != nil {
		return nil, errorf(op, "%q (%d B): %w", label, sz, err)
	}
	liveBuffers.Add(1)
	return &Buffer{d: d, buf: buf, size: sz, label: label, id: nextID.Add(1)}, nil
}

// NewUniform creates a uniform buffer holding data, zero-padded to a
// multiple of 16 bytes (WGSL uniform layout). Bind it where the pipeline
// declared Uniform; update it with UploadBytes.
func (d *Device) NewUniform(data []byte, label string) (*Buffer, error) {
	const op = "new uniform"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return nil, err
	}
	sz := max(roundUp(uint64(len(data)), 16), 16)
	if sz > d.lim.MaxUniformBufferBindingSize || sz > d.lim.MaxBufferSize {
		return nil, errorf(op, "%q: size %d B > MaxUniformBufferBindingSize %d B of %s: %w", label, sz, d.lim.MaxUniformBufferBindingSize, d.info.Name, ErrLimit)
	}
	buf, err := d.createBuffer(&wgpu.BufferDescriptor{
		Label: label,
		Size:  sz,
		Usage: wgpu.BufferUsageUniform | wgpu.BufferUsageCopyDst,
	})
	if err != nil {
		return nil, errorf(op, "%q (%d B): %w", label, sz, err)
	}
	liveBuffers.Add(1)
	b := &Buffer{d: d, buf: buf, size: sz, label: label, uniform: true, id: nextID.Add(1)}
	if err := d.writeLocked(op, b, data); err != nil {
		b.released = true
		liveBuffers.Add(-1)
		buf.Release()
		return nil, err
	}
	return b, nil
}

func f32Bytes(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}

// Upload copies data to the start of b. It uses queue.WriteBuffer, which
// copies data into wgpu's staging memory immediately (data may be reused as
// soon as Upload returns) and is flushed by the next Run or Read.
func (d *Device) Upload(b *Buffer, data []float32) error {
	return d.UploadBytes(b, f32Bytes(data))
}

// UploadBytes copies data to the start of b; see Upload. A length that is
// not a multiple of 4 is zero-padded to the next multiple of 4.
func (d *Device) UploadBytes(b *Buffer, data []byte) error {
	const op = "upload"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return err
	}
	return d.writeLocked(op, b, data)
}

func (d *Device) checkBuffer(op string, b *Buffer) error {
	if b == nil {
		return errorf(op, "nil buffer")
	}
	if b.d != d {
		return errorf(op, "%v belongs to another device", b)
	}
	if b.released {
		return errorf(op, "%v: %w", b, ErrClosed)
	}
	return nil
}

func (d *Device) writeLocked(op string, b *Buffer, data []byte) error {
	if err := d.checkBuffer(op, b); err != nil {
		return err
	}
	if uint64(len(data)) > b.size {
		return errorf(op, "%d B does not fit in %v", len(data), b)
	}
	if len(data) == 0 {
		return nil
	}
	if d.upPath == UploadStaging && !b.uniform && len(data) > smallUpload {
		_, err := d.stagedWriteLocked(op, b, data, false)
		return err
	}
	if d.pendingTo(b) {
		// WriteBuffer's write runs before the next submission's
		// commands, so the staged upload before it goes first.
		if err := d.recordSubmit(nil, nil, nil, nil); err != nil {
			return errorf(op, "%w", err)
		}
	}
	n := len(data) &^ 3
	chunk := len(data)
	if d.upChunk > 0 {
		chunk = int(d.upChunk)
	}
	for off := 0; off < n; off += chunk {
		end := min(off+chunk, n)
		if err := d.writeBuffer(b.buf, uint64(off), data[off:end]); err != nil {
			return errorf(op, "%v at offset %d: %w", b, off, err)
		}
	}
	if r := len(data) - n; r > 0 {
		// A word of its own: cgo refuses a pointer into the Device,
		// which holds Go pointers.
		tail := new([4]byte)
		copy(tail[:], data[n:])
		if err := d.writeBuffer(b.buf, uint64(n), tail[:]); err != nil {
			return errorf(op, "%v: %w", b, err)
		}
	}
	return nil
}

// Read copies the first 4*len(out) bytes of b into out, the caller's
// slice: nothing is allocated per call. It copies through two reusable
// MapRead staging buffers of the upload chunk size (16 MiB by default),
// alternately, so that the host copies one chunk out while the GPU copies
// the next, and waits for the GPU.
func (d *Device) Read(b *Buffer, out []float32) error {
	return d.ReadBytes(b, f32Bytes(out))
}

// ReadBytes copies the first len(out) bytes of b into out; see Read.
func (d *Device) ReadBytes(b *Buffer, out []byte) error {
	const op = "read"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return err
	}
	if err := d.checkBuffer(op, b); err != nil {
		return err
	}
	if b.uniform {
		return errorf(op, "%v is a uniform buffer and cannot be read back", b)
	}
	if uint64(len(out)) > b.size {
		return errorf(op, "want %d B from %v", len(out), b)
	}
	if len(out) == 0 {
		return nil
	}
	return d.readLocked(op, b, out)
}

// Uniform reports whether b is a uniform buffer (from NewUniform).
func (b *Buffer) Uniform() bool { return b.uniform }

// Usage returns the buffer's usage flags as wgpu reports them: storage
// buffers are Storage|CopySrc|CopyDst and uniform buffers Uniform|CopyDst,
// never mappable, so that the driver places them in device-local memory.
func (b *Buffer) Usage() wgpu.BufferUsage { return b.buf.GetUsage() }
