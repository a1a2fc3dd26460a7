//go:build !js

package gpu

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The few declarations of wgpu-native 0.19's webgpu.h that mapAsync
// needs; the library itself is linked by github.com/cogentcore/webgpu.
typedef struct gpuccOpaque* gpuccHandle;
typedef void (*gpuccMapCallback)(int status, void *userdata);
typedef void (*gpuccErrorCallback)(int type, char const *message, void *userdata);
void wgpuBufferMapAsync(gpuccHandle buffer, uint32_t mode, size_t offset, size_t size, gpuccMapCallback callback, void *userdata);
void wgpuDevicePushErrorScope(gpuccHandle device, int filter);
void wgpuDevicePopErrorScope(gpuccHandle device, gpuccErrorCallback callback, void *userdata);

// gpucc_map is one map's outcome, in C memory: the callbacks write it
// whenever wgpu calls them, whatever Go's collector has done meanwhile.
typedef struct {
	volatile int32_t done;
	int32_t status;
	int32_t err;
	char msg[240];
} gpucc_map;

static void gpucc_map_done(int status, void *u) {
	gpucc_map *m = u;
	m->status = status;
	m->done = 1;
}

static void gpucc_map_error(int type, char const *message, void *u) {
	gpucc_map *m = u;
	m->err = type;
	if (message != NULL) {
		strncpy(m->msg, message, sizeof m->msg - 1);
	}
}

// gpucc_map_async maps buffer as wgpuBufferMapAsync does, with its
// validation errors caught in an error scope (WGPUErrorFilter_Validation
// is 0) instead of reaching the device's uncaptured-error handler.
static void gpucc_map_async(gpuccHandle device, gpuccHandle buffer, uint32_t mode, size_t offset, size_t size, gpucc_map *m) {
	wgpuDevicePushErrorScope(device, 0);
	wgpuBufferMapAsync(buffer, mode, offset, size, gpucc_map_done, m);
	wgpuDevicePopErrorScope(device, gpucc_map_error, m);
}
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
)

// mapAsync maps a buffer as (*wgpu.Buffer).MapAsync does, but keeps the
// map's outcome in C memory that it owns.
//
// The binding (cogentcore/webgpu v0.23.0, the one version served here)
// hands wgpu the address of a Go variable as the callback's user data and
// keeps no reference to it once MapAsync returns, so a garbage collection
// before the callback fires may free and reuse it: the callback then
// panics ("misuse of an invalid Handle") inside Device.Poll, or runs
// another map's callback. The panic left the buffer mapped, and the next
// submission that used it aborted the process in wgpu ("Buffer is still
// mapped"): serve on webgpu under load died that way one run in four
// (TestServeLoad, 2026-12-04).
type asyncMap struct {
	c *C.gpucc_map
}

// rawBuffer mirrors the layout of wgpu.Buffer in cogentcore/webgpu
// v0.23.0 (its device, then its own handle); TestMapAsyncRaw checks it.
type rawBuffer struct {
	device, buffer C.gpuccHandle
}

func startMap(buf *wgpu.Buffer, mode wgpu.MapMode, offset, n uint64) (*asyncMap, error) {
	m := newAsyncMap()
	if err := m.start(buf, mode, offset, n); err != nil {
		return nil, err
	}
	return m, nil
}

// newAsyncMap returns a map's outcome in fresh C memory (m.c nil when
// there is none: start then fails).
func newAsyncMap() *asyncMap {
	return &asyncMap{c: (*C.gpucc_map)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gpucc_map{}))))}
}

// start asks wgpu to map buf, its outcome in m (a new map, or one done
// and reused: its outcome is cleared first).
func (m *asyncMap) start(buf *wgpu.Buffer, mode wgpu.MapMode, offset, n uint64) error {
	if m.c == nil {
		return errors.New("map: out of memory")
	}
	*m.c = C.gpucc_map{}
	r := (*rawBuffer)(unsafe.Pointer(buf))
	C.gpucc_map_async(r.device, r.buffer, C.uint32_t(mode), C.size_t(offset), C.size_t(n), m.c)
	if m.c.err != 0 {
		// A refused map may or may not call back later: its C memory is
		// left to it (a few hundred bytes per refusal).
		err := errors.New("wgpu.(*Buffer).MapAsync(): " + C.GoString(&m.c.msg[0]))
		m.c = nil
		return err
	}
	return nil
}

// done reports whether wgpu has called the map back, and its status.
func (m *asyncMap) done() (bool, wgpu.BufferMapAsyncStatus) {
	if m.c.done == 0 {
		return false, 0
	}
	return true, wgpu.BufferMapAsyncStatus(m.c.status)
}

// free gives the C memory back; only once the map has called back
// (Device.doneMap keeps it for the device's next map instead).
func (m *asyncMap) free() {
	if m.c != nil {
		C.free(unsafe.Pointer(m.c))
		m.c = nil
	}
}

// maxSpareMaps bounds the done maps a device keeps for its next ones: a run
// maps once or twice, a transfer's ring twice, a staging buffer kept
// mapped once each.
const maxSpareMaps = 8

// newMap returns a done map's outcome memory to reuse, or a new one;
// d.mu is held. A warm run then asks C for no memory, and Go for none
// (TestRunAllocs).
func (d *Device) newMap() *asyncMap {
	if k := len(d.spareMaps); k > 0 {
		m := d.spareMaps[k-1]
		d.spareMaps = d.spareMaps[:k-1]
		return m
	}
	return newAsyncMap()
}

// doneMap takes back m, whose callback has run (m.done()), for a later
// map; d.mu is held.
func (d *Device) doneMap(m *asyncMap) {
	if m.c == nil {
		return
	}
	if len(d.spareMaps) < maxSpareMaps {
		d.spareMaps = append(d.spareMaps, m)
		return
	}
	m.free()
}

// freeMaps gives the spare maps' C memory back; d.mu is held.
func (d *Device) freeMaps() {
	for _, m := range d.spareMaps {
		m.free()
	}
	d.spareMaps = nil
}
