//go:build !js

package gpu

import (
	"math"
	"testing"

	"github.com/cogentcore/webgpu/wgpu"
)

// TestStagedUploads: a mid-sized upload (128 KiB) waits for nothing and
// its copy goes with the next submission, before anything else of it:
// a read gives its bits; a later small write into the same buffer (WriteBuffer,
// whose write runs before the next submission's commands) lands after it;
// a failed recording still submits it; a buffer released with its copy
// pending costs nothing; a non-finite value found while staging leaves the
// staging buffer usable; and a device closed with a copy pending closes.
func TestStagedUploads(t *testing.T) {
	d := openDevice(t)
	d.SetUpload(UploadStaging, 0)
	defer d.SetUpload(UploadWriteBuffer, 0)
	const n = 1 << 15
	vals := func(seed float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = seed + float32(i)*0.5
		}
		return v
	}
	read := func(b *Buffer, want []float32, what string) {
		t.Helper()
		got := make([]float32, len(want))
		if err := d.Read(b, got); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: element %d = %v, want %v", what, i, got[i], want[i])
			}
		}
	}
	b := mustBuffer(t, d, 4*n, "b")
	defer b.Release()

	_, w0 := d.RoundTrips()
	a := vals(1)
	if err := d.Upload(b, a); err != nil {
		t.Fatal(err)
	}
	if _, w := d.RoundTrips(); w != w0 {
		t.Errorf("a staged upload waited %d times", w-w0)
	}
	read(b, a, "staged upload")

	// A staged upload, then a small write over its first 64 values.
	if err := d.Upload(b, vals(2)); err != nil {
		t.Fatal(err)
	}
	small := make([]float32, 64)
	for i := range small {
		small[i] = -float32(i)
	}
	if err := d.Upload(b, small); err != nil {
		t.Fatal(err)
	}
	want := vals(2)
	copy(want, small)
	read(b, want, "small write after a staged upload")

	// A staged upload, then a recording wgpu refuses: the upload still goes.
	p, err := d.Compile(fixedWGSL, "main", []BindingKind{ReadOnlyStorage, Storage})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	q, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	out := mustBuffer(t, d, 256, "out")
	defer out.Release()
	if err := d.Upload(b, vals(3)); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	bg, err := d.bindGroup(&Dispatch{Pipeline: p, Buffers: []*Buffer{b, out}})
	if err == nil {
		err = d.recordSubmit([]Dispatch{{Pipeline: q, Groups: [3]uint32{1, 1, 1}}}, []*wgpu.BindGroup{bg}, nil, nil)
	}
	d.mu.Unlock()
	if err == nil {
		t.Fatal("a bind group of another layout was recorded")
	}
	read(b, vals(3), "staged upload before a refused recording")

	// Released with its copy pending.
	c := mustBuffer(t, d, 4*n, "c")
	if err := d.Upload(c, vals(4)); err != nil {
		t.Fatal(err)
	}
	c.Release()
	read(b, vals(3), "after a buffer released with its upload pending")

	// A non-finite value found while staging.
	bad := vals(5)
	bad[n-7] = float32(math.Inf(-1))
	if k, err := d.UploadChecked(b, bad); err != nil || k != n-7 {
		t.Fatalf("UploadChecked of -Inf at %d: %d, %v", n-7, k, err)
	}
	if err := d.Upload(b, vals(6)); err != nil {
		t.Fatal(err)
	}
	read(b, vals(6), "staged upload after a refused one")

	// A device closed with a staged copy pending.
	d2, err := Open(Options{AllowSoftware: true, Upload: UploadStaging})
	if err != nil {
		t.Fatal(err)
	}
	e := mustBuffer(t, d2, 4*n, "e")
	if err := d2.Upload(e, vals(7)); err != nil {
		t.Fatal(err)
	}
	d2.Close()
}
