//go:build !js

package gpu

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIdleDevices: Close gives its WebGPU device back and the next Open
// that would choose the same takes it, as empty as a new one (a buffer of
// the same size reads zeros, not the last Device's values) and working;
// an Open that chooses otherwise (another GPUCC_TIMESTAMPS) makes its own;
// with GPUCC_DEVICE_POOL=off Close releases it.
func TestIdleDevices(t *testing.T) {
	t.Setenv("GPUCC_DEVICE_POOL", "")
	t.Setenv("GPUCC_TIMESTAMPS", "")
	opts := Options{AllowSoftware: true}
	d1, err := Open(opts)
	if err != nil {
		t.Skipf("no WebGPU device: %v", err)
	}
	const n = 256
	secret := make([]float32, n)
	for i := range secret {
		secret[i] = float32(i) + 0.5
	}
	b1 := mustBuffer(t, d1, 4*n, "secret")
	if err := d1.Upload(b1, secret); err != nil {
		t.Fatal(err)
	}
	b1.Release()
	dev := d1.dev
	d1.Close()

	d2, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if d2.dev != dev {
		t.Errorf("the second Open made a new device; want the first one's, given back by Close")
	}
	b2 := mustBuffer(t, d2, 4*n, "fresh")
	got := make([]float32, n)
	if err := d2.Read(b2, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(make([]float32, n), got); diff != "" {
		t.Errorf("a new buffer on the reused device (-zeros +got):\n%s", diff)
	}
	b2.Release()
	if err := deviceRun(d2); err != nil {
		t.Errorf("a run on the reused device: %v", err)
	}
	d2.Close()

	t.Setenv("GPUCC_TIMESTAMPS", "encoder") // other features asked: another choice
	d3, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if d3.dev == dev {
		t.Errorf("an Open under GPUCC_TIMESTAMPS=encoder took the device opened without it")
	}
	if err := deviceRun(d3); err != nil {
		t.Errorf("a run on the new device: %v", err)
	}
	t.Setenv("GPUCC_DEVICE_POOL", "off")
	own := d3.dev
	d3.Close()
	idle.Lock()
	kept := slices.ContainsFunc(idle.devs, func(c *idleDevice) bool { return c.dev == own })
	idle.Unlock()
	if kept {
		t.Errorf("GPUCC_DEVICE_POOL=off: Close kept the device idle")
	}
}

// TestIdleDevicesHeld: a process that holds three devices open at once,
// closes them and opens three again, over and over, makes three devices
// in all, not three and then one a round (NVIDIA's Vulkan driver gives a
// process about 30: idle.go), and each round's devices are distinct.
func TestIdleDevicesHeld(t *testing.T) {
	t.Setenv("GPUCC_DEVICE_POOL", "")
	t.Setenv("GPUCC_TIMESTAMPS", "held") // a choice of its own: no device of another test
	opts := Options{AllowSoftware: true}
	before := made.Load()
	const held, rounds = 3, 8
	for r := range rounds {
		var ds []*Device
		for range held {
			d, err := Open(opts)
			if err != nil {
				t.Skipf("no WebGPU device: %v", err)
			}
			if slices.ContainsFunc(ds, func(o *Device) bool { return o.dev == d.dev }) {
				t.Fatalf("round %d: one device opened twice while held", r)
			}
			ds = append(ds, d)
		}
		if r == rounds-1 {
			if err := deviceRun(ds[held-1]); err != nil {
				t.Errorf("a run on a device kept %d rounds: %v", rounds, err)
			}
		}
		for _, d := range ds {
			d.Close()
		}
	}
	if got := made.Load() - before; got != held {
		t.Errorf("%d rounds of %d devices held at once made %d devices; want %d", rounds, held, got, held)
	}
}

// TestAdapterTakenAway: where this process opened another adapter for the
// same choice before (NVIDIA's Vulkan adapter, gone after about 30
// devices, and NVIDIA's OpenGL one found instead: TestDeviceCycles on an
// H100, 2026-12-06), Open refuses, saying so, and releases what it made;
// the choice opens again once its first adapter is back.
func TestAdapterTakenAway(t *testing.T) {
	t.Setenv("GPUCC_DEVICE_POOL", "")
	t.Setenv("GPUCC_TIMESTAMPS", "taken") // a choice of its own: no idle device of another test
	opts := Options{AllowSoftware: true}
	key := keyOf(opts)
	chosen.Lock()
	chosen.m[key] = "NVIDIA H100 80GB HBM3 on vulkan"
	chosen.Unlock()
	defer func() {
		chosen.Lock()
		delete(chosen.m, key)
		chosen.Unlock()
	}()
	before := made.Load()
	d, err := Open(opts)
	if err == nil {
		d.Close()
		if d.Info().Name+" on "+d.Info().Backend != "NVIDIA H100 80GB HBM3 on vulkan" {
			t.Fatalf("Open went on on %s on %s after another adapter was taken away", d.Info().Name, d.Info().Backend)
		}
		t.Skip("this machine has the H100 itself")
	}
	if !strings.Contains(err.Error(), "opened NVIDIA H100 80GB HBM3 on vulkan before") {
		t.Fatalf("Open: %v; want a refusal naming the adapter it opened before", err)
	}
	if got := made.Load() - before; got != 0 {
		t.Errorf("a refused Open made %d devices", got)
	}
	chosen.Lock()
	delete(chosen.m, key)
	chosen.Unlock()
	d, err = Open(opts)
	if err != nil {
		t.Skipf("no WebGPU device: %v", err)
	}
	d.Close()
}
