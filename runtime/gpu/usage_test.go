//go:build !js

package gpu

import (
	"testing"

	"github.com/cogentcore/webgpu/wgpu"
)

// TestBufferUsage: storage and uniform buffers are never mappable (a
// mappable buffer may be placed in host-visible memory, which kernels
// read far slower), and the staging rings are mappable and nothing else,
// whatever transfers ran before.
func TestBufferUsage(t *testing.T) {
	d := openDevice(t)
	defer d.SetUpload(UploadWriteBuffer, 0)
	d.SetUpload(UploadStaging, 1<<20)
	const n = 3 << 18 // three 1 MiB chunks each way
	buf := mustBuffer(t, d, 4*n, "storage")
	defer buf.Release()
	u, err := d.NewUniform(make([]byte, 20), "uniform")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	data := make([]float32, n)
	if _, err := d.UploadChecked(buf, data); err != nil {
		t.Fatal(err)
	}
	if err := d.Read(buf, data); err != nil {
		t.Fatal(err)
	}
	const storage = wgpu.BufferUsageStorage | wgpu.BufferUsageCopySrc | wgpu.BufferUsageCopyDst
	// The read ring takes a timed run's timestamps beside its outputs:
	// resolved into it where the device maps query results (tsDirect).
	read := wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst
	if d.tsDirect {
		read |= wgpu.BufferUsageQueryResolve
	}
	for _, c := range []struct {
		name      string
		got, want wgpu.BufferUsage
	}{
		{"storage", buf.Usage(), storage},
		{"uniform", u.Usage(), wgpu.BufferUsageUniform | wgpu.BufferUsageCopyDst},
		{"upload staging 0", d.upStage[0].GetUsage(), wgpu.BufferUsageMapWrite | wgpu.BufferUsageCopySrc},
		{"upload staging 1", d.upStage[1].GetUsage(), wgpu.BufferUsageMapWrite | wgpu.BufferUsageCopySrc},
		{"read staging 0", d.readStage[0].GetUsage(), read},
		{"read staging 1", d.readStage[1].GetUsage(), read},
	} {
		if c.got != c.want {
			t.Errorf("%s buffer: usage %#x, want %#x", c.name, uint64(c.got), uint64(c.want))
		}
	}
	// The staging buffers are left unmapped between transfers: mapping
	// one that is still mapped fails.
	for i, s := range append(d.upStage[:], d.readStage[:]...) {
		mode := wgpu.MapModeWrite
		if i >= len(d.upStage) {
			mode = wgpu.MapModeRead
		}
		if err := d.mapWait("test", s, mode, 256); err != nil {
			t.Errorf("staging buffer %d was left mapped: %v", i, err)
			continue
		}
		if err := s.Unmap(); err != nil {
			t.Fatal(err)
		}
	}
}
