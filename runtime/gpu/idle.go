//go:build !js

package gpu

import (
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cogentcore/webgpu/wgpu"
)

// A process keeps every WebGPU device that Close gave back, each with its
// instance, adapter and queue, and the next Open that would choose the
// same (idleKey) takes one of them instead of making a new instance and
// device. NVIDIA's Vulkan driver lets a process make about 30 devices,
// released or not: on an H200 (2026-12-06) a process that opened and
// closed runtimes found no Vulkan adapter at its 31st, its memory growing
// 3.5 MiB a cycle though every wgpu object was released, and on an H100
// the same day the 31st Open on a new device took NVIDIA's OpenGL adapter
// (TestDeviceCycles). A test binary opens hundreds of runtimes, and a
// library user may open one a request. So no device is released while
// the pool is on: the devices a process makes are as many as it has open
// at once, for each choice (made counts them), and a device kept idle
// costs its driver's share, a few MiB, with nothing of gpucc's on it.
// Close releases everything the device made for its Device (buffers,
// bind groups, staging, timestamps), so a Device that takes an idle one
// starts as empty as a new one: new buffers are zeroed, as WebGPU's are.
// GPUCC_DEVICE_POOL=off releases every device at Close, as before.
var idle struct {
	sync.Mutex
	devs []*idleDevice
}

// made counts the devices Open has made in this process.
var made atomic.Int64

// chosen is the adapter each choice (idleKey) first opened in this
// process, as "name on backend". Where a later Open of the same choice
// finds another, the driver has taken the first one away (NVIDIA's
// Vulkan adapter after about 30 devices, the next one NVIDIA's OpenGL):
// Open refuses (sameAdapter) rather than go on, silently, on another
// backend, and the runtime falls back as for any device it cannot open.
var chosen = struct {
	sync.Mutex
	m map[idleKey]string
}{m: map[idleKey]string{}}

// sameAdapter records info as key's adapter, or reports that this process
// opened another one for key before.
func sameAdapter(key idleKey, info AdapterInfo) error {
	got := info.Name + " on " + info.Backend
	chosen.Lock()
	defer chosen.Unlock()
	if was, ok := chosen.m[key]; ok && was != got {
		return errorf("open", "this process opened %s before and now finds %s, after %d devices made: "+
			"NVIDIA's Vulkan driver gives a process about 30, released or not (keep GPUCC_DEVICE_POOL on, "+
			"and hold fewer devices open at once)", was, got, made.Load())
	}
	chosen.m[key] = got
	return nil
}

// idleDevice is a device given back by Close, and what Open chose it by.
type idleDevice struct {
	key     idleKey
	inst    *wgpu.Instance
	adapter *wgpu.Adapter
	dev     *wgpu.Device
	queue   *wgpu.Queue
	info    AdapterInfo // with the device's limits and timestamps
	granted [2]bool     // Device.granted
}

// idleKey is what Open's choice of adapter and device depends on.
type idleKey struct {
	software         bool
	adapter, backend string
	timestamps       string // GPUCC_TIMESTAMPS: the features asked
}

func keyOf(opts Options) idleKey {
	return idleKey{opts.AllowSoftware, opts.Adapter, opts.Backend, os.Getenv("GPUCC_TIMESTAMPS")}
}

// pooling reports whether Close keeps devices idle (GPUCC_DEVICE_POOL).
func pooling() bool { return os.Getenv("GPUCC_DEVICE_POOL") != "off" }

// takeIdle removes and returns an idle device that Open with key would
// have chosen, or nil.
func takeIdle(key idleKey) *idleDevice {
	idle.Lock()
	defer idle.Unlock()
	for i, c := range idle.devs {
		if c.key == key {
			idle.devs = slices.Delete(idle.devs, i, i+1)
			return c
		}
	}
	return nil
}

// giveIdle keeps c for a later Open, or releases it where the pool is off.
func giveIdle(c *idleDevice) {
	if !pooling() {
		c.release()
		return
	}
	idle.Lock()
	idle.devs = append(idle.devs, c)
	idle.Unlock()
}

func (c *idleDevice) release() {
	c.queue.Release()
	c.dev.Release()
	c.adapter.Release()
	c.inst.Release()
}

// healthy reports whether d, just taken idle, can still make a buffer
// (one lost since it was given back cannot).
func (d *Device) healthy() (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	b, err := d.createBuffer(&wgpu.BufferDescriptor{Label: "gpucc idle check", Size: 16, Usage: wgpu.BufferUsageStorage})
	if err != nil {
		return false
	}
	b.Release()
	return true
}
