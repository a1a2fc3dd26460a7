//go:build !js

package gpu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cogentcore/webgpu/wgpu"
)

// TestChoosePrimaryFirst: on 20000 random machines (up to 4 adapters on
// the primary backends and 3 on GL, of every type, hardware or software,
// under a name filter or none, with software allowed or not),
// choosePrimaryFirst picks the adapter, or fails with the error, that
// chooseAdapter gives over every backend's list; and it asks for GL's
// adapters exactly where no allowed primary adapter is a hardware
// discrete one, so a machine whose best adapter is a discrete Vulkan GPU
// (the H100's) never enumerates GL.
func TestChoosePrimaryFirst(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 35))
	types := []string{"discrete-gpu", "integrated-gpu", "cpu", "unknown", "virtual-gpu"}
	names := []string{"NVIDIA H100", "Intel UHD", "llvmpipe (LLVM 15.0.6, 256 bits)", "AMD Radeon", "SwiftShader"}
	random := func(backends []string, n int) []AdapterInfo {
		var out []AdapterInfo
		for range r.IntN(n + 1) {
			a := AdapterInfo{Name: names[r.IntN(len(names))], Backend: backends[r.IntN(len(backends))], Type: types[r.IntN(len(types))]}
			a.Software = IsSoftware(a.Name, "", a.Type)
			out = append(out, a)
		}
		return out
	}
	asked, skipped := 0, 0
	for i := range 20000 {
		primary := random([]string{"vulkan", "metal", "d3d12"}, 4)
		gl := random([]string{"open-gl", "d3d11"}, 3)
		opts := Options{AllowSoftware: r.IntN(2) == 0}
		if r.IntN(3) == 0 {
			opts.Adapter = []string{"nvidia", "intel", "llvmpipe", "radeon", "none"}[r.IntN(5)]
		}
		want, wantErr := chooseAdapter(append(append([]AdapterInfo(nil), primary...), gl...), opts)
		calls := 0
		got, infos, err := choosePrimaryFirst(primary, func() []AdapterInfo { calls++; return gl }, opts)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || got != want || err == nil && infos[got] != append(primary, gl...)[want] {
			t.Fatalf("machine %d: primary %v, GL %v, %+v: chose %d (%v), want %d (%v)", i, primary, gl, opts, got, err, want, wantErr)
		}
		discrete := false
		for _, a := range primary {
			ok, _ := chooseAdapter([]AdapterInfo{a}, opts)
			discrete = discrete || ok == 0 && !a.Software && a.Type == "discrete-gpu"
		}
		if calls != 1 && !discrete || calls != 0 && discrete {
			t.Fatalf("machine %d: primary %v, %+v: GL enumerated %d times", i, primary, opts, calls)
		}
		asked += calls
		skipped += 1 - calls
	}
	t.Logf("GL enumerated on %d machines, skipped on %d", asked, skipped)
	h100 := AdapterInfo{Name: "NVIDIA H100 80GB HBM3", Backend: "vulkan", Type: "discrete-gpu"}
	if _, _, err := choosePrimaryFirst([]AdapterInfo{h100}, func() []AdapterInfo { t.Error("the H100 enumerated GL"); return nil }, Options{}); err != nil {
		t.Error(err)
	}
	glOnly := AdapterInfo{Name: "Mesa Intel(R) UHD", Backend: "open-gl", Type: "integrated-gpu"}
	if i, infos, err := choosePrimaryFirst(nil, func() []AdapterInfo { return []AdapterInfo{glOnly} }, Options{}); err != nil || infos[i] != glOnly {
		t.Errorf("a machine with only GL: %d %v %v", i, infos, err)
	}
	if _, _, err := choosePrimaryFirst(nil, func() []AdapterInfo { return nil }, Options{}); !errors.Is(err, ErrNoAdapter) {
		t.Errorf("no adapter: %v", err)
	}
}

// TestOpenChoosesAsBefore: on this machine Open picks the adapter that
// chooseAdapter picks from one instance of every backend (Adapters), under
// each option, or fails with the same error; and the primary instance's
// adapters followed by the secondary one's are that instance's list, in
// its order (lavapipe's Vulkan, then llvmpipe's GL here).
func TestOpenChoosesAsBefore(t *testing.T) {
	all, err := Adapters()
	if err != nil {
		t.Fatal(err)
	}
	var split []AdapterInfo
	for _, b := range []wgpu.InstanceBackend{primaryBackends, secondaryBackends} {
		inst, err := newInstanceOf(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range inst.EnumerateAdapters(nil) {
			split = append(split, adapterInfo(a))
			a.Release()
		}
		inst.Release()
	}
	if fmt.Sprint(split) != fmt.Sprint(all) {
		t.Errorf("primary then secondary: %v; every backend: %v", split, all)
	}
	t.Logf("adapters: %v", all)
	for _, opts := range []Options{{AllowSoftware: true}, {}, {AllowSoftware: true, Adapter: "llvmpipe"}, {AllowSoftware: true, Adapter: "nosuch"}} {
		want, wantErr := chooseAdapter(all, opts)
		d, err := Open(opts)
		if wantErr != nil || err != nil {
			if err == nil {
				d.Close()
			}
			if fmt.Sprint(err) != fmt.Sprint(&Error{Op: "open", Err: wantErr}) {
				t.Errorf("%+v: Open: %v, want %v", opts, err, wantErr)
			}
			continue
		}
		got := d.Info()
		d.Close()
		w := all[want]
		if got.Name != w.Name || got.Backend != w.Backend || got.Type != w.Type || got.VendorID != w.VendorID || got.DeviceID != w.DeviceID || got.Driver != w.Driver {
			t.Errorf("%+v: Open chose %v, want %v", opts, got, w)
		}
	}
}

// TestOpenBackend: Options.Backend opens an adapter of that backend or
// fails: lavapipe's Vulkan adapter here, no D3D12 one, and a name that is
// not a backend's is refused with the names it takes.
func TestOpenBackend(t *testing.T) {
	d, err := Open(Options{AllowSoftware: true, Backend: "vulkan"})
	if err != nil {
		t.Skipf("no Vulkan adapter: %v", err)
	}
	if got := d.Info().Backend; got != "vulkan" {
		t.Errorf("Backend vulkan opened %s", got)
	}
	d.Close()
	if _, err := Open(Options{AllowSoftware: true, Backend: "d3d12"}); !errors.Is(err, ErrNoAdapter) {
		t.Errorf("Backend d3d12 on a machine without it: %v, want ErrNoAdapter", err)
	}
	_, err = Open(Options{AllowSoftware: true, Backend: "opengl"})
	if want := `no backend "opengl": want one of d3d11, d3d12, metal, open-gl, vulkan`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Backend opengl: %v, want an error with %q", err, want)
	}
}
