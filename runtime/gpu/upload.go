//go:build !js

package gpu

import (
	"fmt"

	"github.com/cogentcore/webgpu/wgpu"
)

// UploadPath is how Upload moves host bytes into a storage buffer. Which is
// fastest depends on the driver: BenchmarkUpload (package bench) measures
// each on the device at hand.
type UploadPath int

const (
	// UploadWriteBuffer calls queue.WriteBuffer, in pieces of UploadChunk
	// bytes when that is set. wgpu copies each piece into a staging buffer
	// it allocates, and copies that on the next submit.
	UploadWriteBuffer UploadPath = iota
	// UploadStaging copies through two reusable MapWrite staging buffers of
	// UploadChunk bytes (default 16 MiB), alternately: the host fills one
	// while the GPU copies the other, and no host-visible memory is
	// allocated per upload.
	UploadStaging
)

func (p UploadPath) String() string {
	switch p {
	case UploadWriteBuffer:
		return "writebuffer"
	case UploadStaging:
		return "staging"
	}
	return fmt.Sprintf("UploadPath(%d)", int(p))
}

// ParseUploadPath reads the name String returns.
func ParseUploadPath(s string) (UploadPath, error) {
	for _, p := range []UploadPath{UploadWriteBuffer, UploadStaging} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("gpu: unknown upload path %q (want writebuffer or staging)", s)
}

// smallUpload is the size below which the staging path falls back to
// WriteBuffer: mapping costs more than the copy.
const smallUpload = 64 << 10

// defaultStagingChunk is the staging buffer size when UploadChunk is unset.
const defaultStagingChunk = 16 << 20

// SetUpload changes the upload path and chunk size (bytes, rounded up to 4;
// 0 for the default) of later uploads.
func (d *Device) SetUpload(p UploadPath, chunk uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.upPath, d.upChunk = p, roundUp(chunk, 4)
}

// Flush submits the writes queued by Upload and waits until the device has
// executed them, so that upload time can be measured apart from dispatch.
func (d *Device) Flush() error {
	const op = "flush"
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(op); err != nil {
		return err
	}
	return d.submitEmpty(op)
}

// mapWait maps the first n bytes of buf and polls, without blocking on the
// whole queue, until the mapping is ready: the other staging buffer's copy
// keeps running meanwhile. It waits as wait does (pollUntil).
func (d *Device) mapWait(op string, buf *wgpu.Buffer, mode wgpu.MapMode, n uint64) error {
	return d.awaitMaps(op, []*mapping{{buf: buf, mode: mode, n: n}})
}
