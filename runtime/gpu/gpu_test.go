//go:build !js

package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	sharedOnce sync.Once
	sharedDev  *Device
	sharedErr  error
)

// openDevice opens (once per test binary) a device that may be a software
// adapter. It skips the test when no device can be opened, unless
// GPUCC_REQUIRE_WEBGPU is set, in which case it fails.
func openDevice(tb testing.TB) *Device {
	tb.Helper()
	sharedOnce.Do(func() { sharedDev, sharedErr = Open(Options{AllowSoftware: true}) })
	if sharedErr != nil {
		if os.Getenv("GPUCC_REQUIRE_WEBGPU") != "" {
			tb.Fatalf("GPUCC_REQUIRE_WEBGPU is set but Open failed: %v", sharedErr)
		}
		tb.Skipf("no WebGPU device: %v", sharedErr)
	}
	return sharedDev
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedDev != nil {
		sharedDev.Close()
	}
	os.Exit(code)
}

const mulWGSL = `
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
	let i = gid.x;
	if (i < p.n) {
		out[i] = a[i] * b[i];
	}
}
`

// addOneWGSL: dst[i] = src[i] + 1.
const addOneWGSL = `
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
	let i = gid.x;
	if (i < p.n) {
		dst[i] = src[i] + 1.0;
	}
}
`

func u32Uniform(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }

func mustBuffer(t testing.TB, d *Device, size uint64, label string) *Buffer {
	t.Helper()
	b, err := d.NewBuffer(size, label)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMultiply(t *testing.T) {
	d := openDevice(t)
	t.Logf("device: %s vendor=%s limits=%+v timestamps=%v", d.Info(), d.Info().Vendor, d.Info().Limits, d.Info().TimestampQuery)
	p, err := d.Compile(mulWGSL, "main", []BindingKind{ReadOnlyStorage, ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()

	const n = 1000 // not a multiple of the workgroup size
	a, b, want := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range a {
		a[i] = float32(i) * 0.5
		b[i] = float32(n-i) - 3
		want[i] = a[i] * b[i]
	}
	ba, bb, bo := mustBuffer(t, d, 4*n, "a"), mustBuffer(t, d, 4*n, "b"), mustBuffer(t, d, 4*n, "out")
	defer ba.Release()
	defer bb.Release()
	defer bo.Release()
	u, err := d.NewUniform(u32Uniform(n), "params")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	if err := d.Upload(ba, a); err != nil {
		t.Fatal(err)
	}
	if err := d.Upload(bb, b); err != nil {
		t.Fatal(err)
	}
	ds := []Dispatch{{Pipeline: p, Buffers: []*Buffer{ba, bb, bo, u}, Groups: [3]uint32{(n + 63) / 64, 1, 1}}}
	for run := 0; run < 2; run++ { // second run uses the cached bind group
		if err := d.Run(ds); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, n)
		if err := d.Read(bo, got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("run %d: out mismatch (-want +got):\n%s", run, diff)
		}
	}

	ns, ok, err := d.RunTimed(ds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("RunTimed: %d ns, supported=%v", ns, ok)
	if ok != d.Info().TimestampQuery {
		t.Errorf("RunTimed ok=%v, Info().TimestampQuery=%v", ok, d.Info().TimestampQuery)
	}
}

func TestMultiDispatch(t *testing.T) {
	d := openDevice(t)
	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	const n = 257
	x := make([]float32, n)
	want := make([]float32, n)
	for i := range x {
		x[i] = float32(i)
		want[i] = float32(i) + 3
	}
	b0, b1, b2 := mustBuffer(t, d, 4*n, "x0"), mustBuffer(t, d, 4*n, "x1"), mustBuffer(t, d, 4*n, "x2")
	defer b0.Release()
	defer b1.Release()
	defer b2.Release()
	u, err := d.NewUniform(u32Uniform(n), "n")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	if err := d.Upload(b0, x); err != nil {
		t.Fatal(err)
	}
	g := [3]uint32{(n + 63) / 64, 1, 1}
	// x0 -> x1 -> x2 -> x1: each dispatch reads what the previous one wrote.
	err = d.Run([]Dispatch{
		{Pipeline: p, Buffers: []*Buffer{b0, b1, u}, Groups: g},
		{Pipeline: p, Buffers: []*Buffer{b1, b2, u}, Groups: g},
		{Pipeline: p, Buffers: []*Buffer{b2, b1, u}, Groups: g},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n)
	if err := d.Read(b1, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("mismatch (-want +got):\n%s", diff)
	}
}

func TestUploadBytesAndPartialRead(t *testing.T) {
	d := openDevice(t)
	b := mustBuffer(t, d, 10, "odd") // rounded to 12
	defer b.Release()
	if b.Size() != 12 {
		t.Errorf("Size() = %d, want 12", b.Size())
	}
	in := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if err := d.UploadBytes(b, in); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 11)
	if err := d.ReadBytes(b, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(in, 0), got); diff != "" {
		t.Fatalf("mismatch (-want +got):\n%s", diff)
	}
	f := []float32{1.5, -2, float32(math.Inf(1))}
	if err := d.Upload(b, f); err != nil {
		t.Fatal(err)
	}
	gf := make([]float32, 3)
	if err := d.Read(b, gf); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, gf); diff != "" {
		t.Fatalf("mismatch (-want +got):\n%s", diff)
	}
}

func TestCompileErrors(t *testing.T) {
	d := openDevice(t)
	for _, tc := range []struct {
		name, src, entry string
		kinds            []BindingKind
		want             string
	}{
		{"syntax", "fn main( {", "main", nil, "expected identifier"},
		{"type", `@compute @workgroup_size(1) fn main() { let x: f32 = 1u; }`, "main", nil, "main"},
		{"entry", addOneWGSL, "nosuch", []BindingKind{ReadOnlyStorage, Storage, Uniform}, "nosuch"},
		{"layout", addOneWGSL, "main", []BindingKind{ReadOnlyStorage, ReadOnlyStorage, Uniform}, "binding"},
		{"missing binding", addOneWGSL, "main", []BindingKind{ReadOnlyStorage}, "binding"},
		{"empty", "  ", "main", nil, "empty WGSL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := d.Compile(tc.src, tc.entry, tc.kinds)
			if err == nil {
				p.Release()
				t.Fatal("Compile succeeded, want error")
			}
			var e *Error
			if !errors.As(err, &e) || e.Op != "compile" {
				t.Errorf("error %T %v is not a compile *Error", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not contain %q:\n%v", tc.want, err)
			}
			t.Logf("%v", err)
		})
	}
	// The device is still usable afterwards.
	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
}

func TestValidation(t *testing.T) {
	d := openDevice(t)
	lim := d.Info().Limits
	if _, err := d.NewBuffer(lim.MaxStorageBufferBindingSize+4, "huge"); !errors.Is(err, ErrLimit) {
		t.Errorf("oversized NewBuffer: got %v, want ErrLimit", err)
	} else if !strings.Contains(err.Error(), "huge") {
		t.Errorf("error does not name the buffer: %v", err)
	}
	if _, err := d.NewBuffer(math.MaxUint64, "max"); err == nil {
		t.Error("NewBuffer(MaxUint64) succeeded")
	}
	if _, err := d.NewUniform(make([]byte, lim.MaxUniformBufferBindingSize+16), "bigu"); !errors.Is(err, ErrLimit) {
		t.Errorf("oversized NewUniform: got %v, want ErrLimit", err)
	}
	b := mustBuffer(t, d, 16, "small")
	if err := d.Upload(b, make([]float32, 5)); err == nil {
		t.Error("Upload of 20 B into 16 B buffer succeeded")
	}
	if err := d.Read(b, make([]float32, 5)); err == nil {
		t.Error("Read of 20 B from 16 B buffer succeeded")
	}

	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	u, err := d.NewUniform(u32Uniform(4), "n")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	c := mustBuffer(t, d, 16, "c")
	defer c.Release()
	for _, tc := range []struct {
		name string
		ds   Dispatch
	}{
		{"count", Dispatch{Pipeline: p, Buffers: []*Buffer{b, c}, Groups: [3]uint32{1, 1, 1}}},
		{"kind", Dispatch{Pipeline: p, Buffers: []*Buffer{b, c, c}, Groups: [3]uint32{1, 1, 1}}},
		{"alias", Dispatch{Pipeline: p, Buffers: []*Buffer{b, b, u}, Groups: [3]uint32{1, 1, 1}}},
		{"groups", Dispatch{Pipeline: p, Buffers: []*Buffer{b, c, u}, Groups: [3]uint32{lim.MaxComputeWorkgroupsPerDimension + 1, 1, 1}}},
		{"nil pipeline", Dispatch{Buffers: []*Buffer{b, c, u}}},
	} {
		if err := d.Run([]Dispatch{tc.ds}); err == nil {
			t.Errorf("%s: Run succeeded, want error", tc.name)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
	b.Release()
	b.Release() // idempotent
	if err := d.Run([]Dispatch{{Pipeline: p, Buffers: []*Buffer{b, c, u}, Groups: [3]uint32{1, 1, 1}}}); !errors.Is(err, ErrClosed) {
		t.Errorf("Run with released buffer: got %v, want ErrClosed", err)
	}
	if err := d.Run(nil); err != nil {
		t.Errorf("empty Run: %v", err)
	}
}

func TestSoftwareRejected(t *testing.T) {
	d := openDevice(t)
	if !d.Info().Software {
		t.Skipf("best adapter %s is hardware", d.Info())
	}
	as, err := Adapters()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if !a.Software {
			t.Skipf("hardware adapter %s present", a)
		}
	}
	d2, err := Open(Options{})
	if err == nil {
		d2.Close()
		t.Fatal("Open without AllowSoftware succeeded on a software-only machine")
	}
	if !errors.Is(err, ErrSoftwareAdapter) {
		t.Errorf("got %v, want ErrSoftwareAdapter", err)
	}
	if !strings.Contains(err.Error(), d.Info().Name) {
		t.Errorf("error does not name adapter %q: %v", d.Info().Name, err)
	}
	t.Log(err)
}

func TestAdapters(t *testing.T) {
	d := openDevice(t)
	as, err := Adapters()
	if err != nil {
		t.Fatal(err)
	}
	if len(as) == 0 {
		t.Fatal("no adapters although a device opened")
	}
	found := false
	for _, a := range as {
		t.Logf("%s vendor=%s driver=%q", a, a.Vendor, a.Driver)
		if a.Name == d.Info().Name {
			found = true
		}
	}
	if !found {
		t.Errorf("opened adapter %q not listed", d.Info().Name)
	}
	if d.Info().Software && !strings.Contains(strings.ToLower(d.Info().Name), "llvmpipe") {
		t.Logf("software adapter is not llvmpipe: %s", d.Info())
	}
	if strings.Contains(strings.ToLower(d.Info().Driver+d.Info().Name), "llvmpipe") && !d.Info().Software {
		t.Errorf("llvmpipe not recognised as software: %+v", d.Info())
	}
}

func TestIsSoftware(t *testing.T) {
	for _, tc := range []struct {
		name, driver, typ string
		want              bool
	}{
		{"llvmpipe (LLVM 15.0.6, 256 bits)", "", "cpu", true},
		{"llvmpipe (LLVM 15.0.6, 256 bits)", "llvmpipe", "unknown", true},
		{"0x0", "Mesa lavapipe", "integrated-gpu", true},
		{"SwiftShader Device (Subzero)", "SwiftShader driver", "cpu", true},
		{"Google SwiftShader", "", "unknown", true},
		{"Microsoft Basic Render Driver", "", "unknown", true},
		{"WARP", "", "integrated-gpu", true},
		{"softpipe", "", "", true},
		{"anything", "", "CPU", true},
		{"NVIDIA H200", "NVIDIA 550.54", "discrete-gpu", false},
		{"AMD Radeon RX 7900 XTX (RADV NAVI31)", "radv", "discrete-gpu", false},
		{"Intel(R) Arc(tm) A770 Graphics (DG2)", "Intel open-source Mesa driver", "discrete-gpu", false},
		{"Apple M2 Max", "", "integrated-gpu", false},
		{"Warpdrive 9000", "", "discrete-gpu", false},
		{"", "", "", false},
	} {
		if got := IsSoftware(tc.name, tc.driver, tc.typ); got != tc.want {
			t.Errorf("IsSoftware(%q, %q, %q) = %v, want %v", tc.name, tc.driver, tc.typ, got, tc.want)
		}
	}
}

func TestChooseAdapter(t *testing.T) {
	sw := AdapterInfo{Name: "llvmpipe", Backend: "vulkan", Type: "cpu", Software: true}
	glsw := AdapterInfo{Name: "llvmpipe", Backend: "open-gl", Type: "cpu", Software: true}
	igpu := AdapterInfo{Name: "Intel UHD", Backend: "vulkan", Type: "integrated-gpu"}
	dgpu := AdapterInfo{Name: "NVIDIA H200", Backend: "vulkan", Type: "discrete-gpu"}
	dgl := AdapterInfo{Name: "NVIDIA H200", Backend: "open-gl", Type: "discrete-gpu"}
	for _, tc := range []struct {
		infos []AdapterInfo
		opts  Options
		want  int
		err   error
	}{
		{[]AdapterInfo{sw, igpu, dgl, dgpu}, Options{}, 3, nil},
		{[]AdapterInfo{glsw, sw}, Options{AllowSoftware: true}, 1, nil},
		{[]AdapterInfo{glsw, sw}, Options{}, -1, ErrSoftwareAdapter},
		{[]AdapterInfo{sw, igpu, dgpu}, Options{Adapter: "intel"}, 1, nil},
		{[]AdapterInfo{sw, igpu}, Options{Adapter: "amd"}, -1, ErrNoAdapter},
		{nil, Options{AllowSoftware: true}, -1, ErrNoAdapter},
	} {
		got, err := chooseAdapter(tc.infos, tc.opts)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("chooseAdapter(%v, %+v) = %d, %v; want %d, %v", tc.infos, tc.opts, got, err, tc.want, tc.err)
		}
	}
}

func benchmarkTransfer(b *testing.B, read bool) {
	d := openDevice(b)
	const n = 1 << 20 // 4 MiB of float32
	buf := mustBuffer(b, d, 4*n, "bench")
	defer buf.Release()
	data := make([]float32, n)
	if err := d.Upload(buf, data); err != nil {
		b.Fatal(err)
	}
	if err := d.Read(buf, data); err != nil { // warm the staging buffer
		b.Fatal(err)
	}
	b.SetBytes(4 * n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if read {
			err = d.Read(buf, data)
		} else {
			err = d.Upload(buf, data)
			if err == nil {
				err = d.Run(nil) // flush the write to the GPU
			}
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpload4MiB measures Upload of 4 MiB plus an empty submit that
// flushes it.
func BenchmarkUpload4MiB(b *testing.B) { benchmarkTransfer(b, false) }

// BenchmarkRead4MiB measures Read of 4 MiB.
func BenchmarkRead4MiB(b *testing.B) { benchmarkTransfer(b, true) }

// tinyDispatch compiles addOneWGSL over 64 elements and returns one
// dispatch of one workgroup; the benchmarks of a tiny kernel share it.
func tinyDispatch(b testing.TB, d *Device) Dispatch {
	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		b.Fatal(err)
	}
	x, y := mustBuffer(b, d, 256, "x"), mustBuffer(b, d, 256, "y")
	u, err := d.NewUniform(u32Uniform(64), "n")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { x.Release(); y.Release(); u.Release(); p.Release() })
	return Dispatch{Pipeline: p, Buffers: []*Buffer{x, y, u}, Groups: [3]uint32{1, 1, 1}}
}

// BenchmarkTinyDispatch measures the fixed cost of Run with one dispatch of
// one workgroup (encode, submit, wait).
func BenchmarkTinyDispatch(b *testing.B) {
	d := openDevice(b)
	ds := []Dispatch{tinyDispatch(b, d)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Run(ds); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBindGroupCacheFullDuringRun fills the bind group cache in the middle
// of a run: clearing it then must not release the bind groups that the
// run's earlier dispatches are about to use.
func TestBindGroupCacheFullDuringRun(t *testing.T) {
	d := openDevice(t)
	defer func(old int) { maxBindGroupCache = old }(maxBindGroupCache)
	maxBindGroupCache = 2
	p, err := d.Compile(addOneWGSL, "main", []BindingKind{ReadOnlyStorage, Storage, Uniform})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	const n = 64
	x := make([]float32, n)
	want := make([]float32, n)
	for i := range x {
		x[i] = float32(i)
		want[i] = float32(i) + 4
	}
	bufs := make([]*Buffer, 5)
	for i := range bufs {
		bufs[i] = mustBuffer(t, d, 4*n, fmt.Sprintf("x%d", i))
		defer bufs[i].Release()
	}
	u, err := d.NewUniform(u32Uniform(n), "n")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	if err := d.Upload(bufs[0], x); err != nil {
		t.Fatal(err)
	}
	g := [3]uint32{1, 1, 1}
	ds := make([]Dispatch, len(bufs)-1) // x0 -> x1 -> x2 -> x3 -> x4: more bind groups than the cache holds
	for i := range ds {
		ds[i] = Dispatch{Pipeline: p, Buffers: []*Buffer{bufs[i], bufs[i+1], u}, Groups: g}
	}
	for run := range 2 {
		if err := d.Run(ds); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		got := make([]float32, n)
		if err := d.Read(bufs[4], got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("run %d: mismatch (-want +got):\n%s", run, diff)
		}
	}
}
