//go:build cgo && !js

package webgpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// TestFMAProbe runs the probe on the device: Keep must hold (every
// kernel's products keep their rounding; lavapipe and the H200 were seen to
// keep it); whether fma() is fused decides the fused kernels, and a device
// whose fma rounds twice also gives wrong quotients through the fused
// twin (so the probe's verdict matters).
func TestFMAProbe(t *testing.T) {
	d := openDevice(t)
	if d.fmaErr != nil {
		t.Fatalf("the probe did not run: %v", d.fmaErr)
	}
	p := d.fma
	t.Logf("%s: %v, fused kernels %v", d.adapter, p, p.Fused())
	if !p.KeepSafe {
		t.Errorf("%s contracts through Keep: %v", d.adapter, p)
	}
	if p.Pairs < 4096 {
		t.Errorf("%d pairs probed, want 4096", p.Pairs)
	}
	if !p.FMAFused && p.Fused() {
		t.Errorf("fused kernels on a device whose fma rounds twice: %v", p)
	}
	if !p.FMAFused && p.DivExact {
		t.Logf("note: fma rounds twice, yet the fused twin gave every probe quotient right")
	}
	if strings.Contains(d.adapter.Vendor, "NVIDIA") && !p.BareContracts {
		t.Logf("note: NVIDIA did not contract the bare a * b + a (it did on 2026-12-01)")
	}
}

// TestJudgeProbe: the verdict from outputs as a fused device, lavapipe, a
// device contracting through Keep and one wrong quotient would give them.
func TestJudgeProbe(t *testing.T) {
	a, b := probePairs()
	n := len(a)
	device := func(fusedFMA, keepContracts bool) []float32 {
		out := make([]float32, wgsl.ProbeOutputs*n)
		for i := range n {
			prod := float32(float64(a[i]) * float64(b[i]))
			once := float32(math.FMA(float64(a[i]), float64(b[i]), float64(a[i])))
			out[wgsl.ProbeKeep*n+i] = prod + a[i]
			if keepContracts {
				out[wgsl.ProbeKeep*n+i] = once
			}
			out[wgsl.ProbeBare*n+i] = once
			if fusedFMA {
				out[wgsl.ProbeErr*n+i] = float32(math.FMA(float64(a[i]), float64(b[i]), -float64(prod)))
			}
			out[wgsl.ProbeDiv*n+i] = a[i] / b[i]
		}
		return out
	}
	t.Setenv("GPUCC_FMA", "")
	fused := judgeProbe(a, b, device(true, false))
	if !fused.Fused() || !fused.BareContracts {
		t.Errorf("a fused device: %v, Fused() %v", fused, fused.Fused())
	}
	if p := judgeProbe(a, b, device(false, false)); p.Fused() || !p.KeepSafe {
		t.Errorf("fma rounded twice: %v, Fused() %v", p, p.Fused())
	}
	if p := judgeProbe(a, b, device(true, true)); p.Fused() || p.KeepSafe {
		t.Errorf("contracting through Keep: %v, Fused() %v", p, p.Fused())
	}
	out := device(true, false)
	out[wgsl.ProbeDiv*n+n-1] = math.Nextafter32(out[wgsl.ProbeDiv*n+n-1], 0)
	if p := judgeProbe(a, b, out); p.Fused() || p.DivExact {
		t.Errorf("one quotient an ulp off: %v, Fused() %v", p, p.Fused())
	}
	t.Setenv("GPUCC_FMA", "off")
	if fused.Fused() {
		t.Error("GPUCC_FMA=off took the fused kernels")
	}
}

// TestKeepContractsRefused: a device whose probe saw a product contracted
// through Keep compiles nothing (ir.CodeUnsupported), rather than give
// other bits than cpuref's.
func TestKeepContractsRefused(t *testing.T) {
	d := openDevice(t)
	saved := d.fma
	defer func() { d.fma = saved }()
	d.fma.KeepSafe = false
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{8}, make([]float32, 8))
	b.Output("y", x.Mul(x).Add(x))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Compile(context.Background(), program(t, g), &backend.Stats{})
	var be *backend.Error
	if !errors.As(err, &be) || be.Code != ir.CodeUnsupported || !strings.Contains(err.Error(), "Keep") {
		t.Fatalf("Compile on a device contracting through Keep: %v, want unsupported naming Keep", err)
	}
}

// TestFusedKernelsCompile: the fused target's kernels (fusedGraphs'
// divisions in rows and elementwise kernels) compile on the device, whatever
// its probe said (their bits are checked where the probe lets them run:
// the exact suite on the H200).
func TestFusedKernelsCompile(t *testing.T) {
	d := openDevice(t)
	for _, build := range []func(x ir.Tensor) ir.Tensor{
		func(x ir.Tensor) ir.Tensor { return x.Softmax(1) },
		func(x ir.Tensor) ir.Tensor { return x.Tanh() },
		func(x ir.Tensor) ir.Tensor { return x.Div(x.AddScalar(3)) },
	} {
		b := ir.NewBuilder()
		x := b.Input(ir.Shape{4, 1024}, make([]float32, 4096))
		b.Output("y", build(x))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		shaders, err := wgsl.Target{Fused: true}.Emit(program(t, g).IR)
		if err != nil {
			t.Fatal(err)
		}
		ps, _, err := d.acquire(shaders)
		if err != nil {
			t.Fatal(err)
		}
		d.unref(ps)
	}
}

// TestFMAProbeDiskCache: a process finds the FMA verdict an earlier one
// stored for its adapter, driver, probe and binary, and runs no probe;
// a memory-only cache (--cache-dir off) runs it in every process; a
// tampered file, another key's file renamed to this key, another
// directory's file (another MAC secret), and a sealed payload that is
// not a whole verdict of this probe are each ignored and the probe runs
// again; the key changes with the adapter and the probe's operands.
func TestFMAProbeDiskCache(t *testing.T) {
	d := openDevice(t)
	key := fastKeyOf(d.adapter, false).adapter
	if old, ok := probes.Load(key); ok {
		defer probes.Store(key, old)
	}
	a, b := probePairs()
	dk := fmaDiskKey(key, driverID(), a, b)
	open := func(dir string) *cache.Cache {
		t.Helper()
		c, err := cache.Open(cache.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	probe := func(c *cache.Cache) (fmaProbe, int64) { // in a new process
		t.Helper()
		probes.Delete(key)
		runs, start := fmaRuns.Load(), time.Now()
		p, err := probeFMA(d.dev, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("probeFMA: %.1f ms: %v", time.Since(start).Seconds()*1e3, p)
		return p, fmaRuns.Load() - runs
	}
	dir := t.TempDir()
	first, runs := probe(open(dir))
	if runs != 1 || first.Cached || first.Pairs != len(a) {
		t.Fatalf("first probe: %d runs, %v", runs, first)
	}
	again, runs := probe(open(dir))
	if runs != 0 || !again.Cached {
		t.Errorf("the second process: %d runs, %v, want the first's verdict from disk", runs, again)
	}
	if again.Cached = false; again != first {
		t.Errorf("from disk: %v, want %v", again, first)
	}
	for range 2 {
		if _, runs := probe(open("")); runs != 1 {
			t.Errorf("a memory-only cache (--cache-dir off): %d runs, want 1", runs)
		}
	}
	file := filepath.Join(dir, string(fmaProbeKind)+"-"+dk.String()+".bin")
	sealed, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// a verdict no device gave: every planted entry must be ignored
	lie, _ := json.Marshal(fmaProbe{KeepSafe: false, FMAFused: !first.FMAFused, DivExact: !first.DivExact, Pairs: len(a)})
	other := fmaDiskKey(key+"x", driverID(), a, b)
	for name, plant := range map[string]func(dir string){
		"a flipped byte": func(dir string) {
			bad := bytes.Clone(sealed)
			bad[len(bad)/2] ^= 1
			os.WriteFile(file, bad, 0o600)
		},
		"another key's entry": func(dir string) {
			c := open(dir)
			if err := c.Put(fmaProbeKind, other, lie); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, string(fmaProbeKind)+"-"+other.String()+".bin"), file); err != nil {
				t.Fatal(err)
			}
		},
		"another directory's entry": func(dir string) {
			od := t.TempDir()
			if err := open(od).Put(fmaProbeKind, dk, lie); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(od, filepath.Base(file)))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(file, b, 0o600)
		},
	} {
		plant(dir)
		c := open(dir)
		p, runs := probe(c)
		if runs != 1 || p.Cached || p != first || c.Stats(fmaProbeKind).Rejected != 1 {
			t.Errorf("%s: %d runs, %v, %d rejected, want the probe run again: %v", name, runs, p, c.Stats(fmaProbeKind).Rejected, first)
		}
	}
	for _, payload := range []string{"", "{}", `{"KeepSafe":true}`, `{"KeepSafe":true,"FMAFused":true,"DivExact":true,"Pairs":4095}`,
		string(lie) + "{}", string(lie[:len(lie)-1]) + `,"Extra":1}`, "[]", "null"} {
		c := open(dir)
		if err := c.Put(fmaProbeKind, dk, []byte(payload)); err != nil {
			t.Fatal(err)
		}
		if p, runs := probe(open(dir)); runs != 1 || p != first {
			t.Errorf("a sealed payload %q: %d runs, %v, want the probe run again: %v", payload, runs, p, first)
		}
	}
	if p, ok := decodeFMA(lie, len(a)); !ok || p.KeepSafe || p.Pairs != len(a) {
		t.Errorf("a whole verdict does not decode: %v %v", p, ok)
	}
	if fmaDiskKey(key, driverID(), a, b) != dk {
		t.Error("the disk key changes from call to call")
	}
	a2 := slices.Clone(a)
	a2[len(a2)-1] = math.Nextafter32(a2[len(a2)-1], 0)
	for name, k := range map[string]cache.Key{"another adapter or driver": other, "another operand": fmaDiskKey(key, driverID(), a2, b),
		"another driver": fmaDiskKey(key, driverID()+"\nlibvulkan_x.so|1|2", a, b), "other pairs": fmaDiskKey(key, driverID(), b, a), "fewer pairs": fmaDiskKey(key, driverID(), a[1:], b[1:])} {
		if k == dk {
			t.Errorf("%s: the same disk key", name)
		}
	}
}

// TestDriverIdentity: the probes' driver identity changes with a shared
// object's path, size or modification time and with a driver's
// environment variable, and not with the mappings' order, a repeated
// mapping, a file that is not a shared object or another variable; on
// this machine, once a device is open, it names the Vulkan loader (the
// adapter's info names no driver version: lavapipe's says nothing of
// Mesa's).
func TestDriverIdentity(t *testing.T) {
	type file struct {
		size int64
		mod  time.Time
	}
	files := map[string]file{
		"/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so":   {1000, time.Unix(100, 0)},
		"/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1":    {2000, time.Unix(200, 0)},
		"/usr/lib/locale/C.utf8/LC_CTYPE":              {30, time.Unix(300, 0)},
		"/usr/lib/x86_64-linux-gnu/libvulkan.so.1.3.2": {40, time.Unix(400, 0)},
	}
	stat := func(p string) (os.FileInfo, error) {
		f, ok := files[p]
		if !ok {
			return nil, os.ErrNotExist
		}
		return fakeInfo{f.size, f.mod}, nil
	}
	maps := func(paths ...string) string {
		var b strings.Builder
		for _, p := range paths {
			fmt.Fprintf(&b, "7f0000000000-7f0000001000 r-xp 00000000 08:01 1234 %s\n", p)
		}
		b.WriteString("7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n")
		return b.String()
	}
	lvp, llvm, locale, loader := "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so", "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1", "/usr/lib/locale/C.utf8/LC_CTYPE", "/usr/lib/x86_64-linux-gnu/libvulkan.so.1.3.2"
	env := []string{"HOME=/root", "MESA_SHADER_CACHE_DISABLE=false"}
	base := driverIdentity(maps(lvp, llvm, locale, loader), env, stat)
	same := map[string]string{
		"another order":       driverIdentity(maps(loader, locale, llvm, lvp), env, stat),
		"a repeated mapping":  driverIdentity(maps(lvp, lvp, llvm, locale, loader, llvm), env, stat),
		"no locale file":      driverIdentity(maps(lvp, llvm, loader), env, stat),
		"another variable":    driverIdentity(maps(lvp, llvm, locale, loader), append(env, "PATH=/bin"), stat),
		"variables reordered": driverIdentity(maps(lvp, llvm, locale, loader), []string{env[1], env[0]}, stat),
	}
	for name, id := range same {
		if id != base {
			t.Errorf("%s changed the identity:\n%s\nwas\n%s", name, id, base)
		}
	}
	changed := map[string]string{
		"no LLVM":            driverIdentity(maps(lvp, locale, loader), env, stat),
		"a llvmpipe setting": driverIdentity(maps(lvp, llvm, locale, loader), append(env, "LP_NATIVE_VECTOR_WIDTH=128"), stat),
		"NVIDIA's setting":   driverIdentity(maps(lvp, llvm, locale, loader), append(env, "__GL_SHADER_DISK_CACHE=0"), stat),
		"a Mesa setting":     driverIdentity(maps(lvp, llvm, locale, loader), []string{"HOME=/root", "MESA_SHADER_CACHE_DISABLE=true"}, stat),
		"another loader":     driverIdentity(maps(lvp, llvm, locale, "/usr/lib/x86_64-linux-gnu/libvulkan.so.1.3.3"), env, stat),
	}
	files[lvp] = file{1001, time.Unix(100, 0)}
	changed["a new size"] = driverIdentity(maps(lvp, llvm, locale, loader), env, stat)
	files[lvp] = file{1000, time.Unix(101, 0)}
	changed["a new modification time"] = driverIdentity(maps(lvp, llvm, locale, loader), env, stat)
	for name, id := range changed {
		if id == base {
			t.Errorf("%s kept the identity: %s", name, id)
		}
	}
	openDevice(t)
	id := driverID()
	t.Logf("driver identity: %d lines", strings.Count(id, "\n")+1)
	if !strings.Contains(id, "libvulkan") {
		t.Errorf("an open device's driver identity names no Vulkan library:\n%s", id)
	}
}

// fakeInfo is an os.FileInfo of a size and modification time.
type fakeInfo struct {
	size int64
	mod  time.Time
}

func (f fakeInfo) Name() string       { return "" }
func (f fakeInfo) Size() int64        { return f.size }
func (f fakeInfo) Mode() os.FileMode  { return 0o644 }
func (f fakeInfo) ModTime() time.Time { return f.mod }
func (f fakeInfo) IsDir() bool        { return false }
func (f fakeInfo) Sys() any           { return nil }
