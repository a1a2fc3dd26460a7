//go:build !js

package gpu

/*
#include <stdint.h>

// wgpu-native 0.19's WGPUInstanceDescriptor with its WGPUInstanceExtras
// (wgpu.h), declared here because the binding's CreateInstance mallocs the
// extras and sets only some fields: its flags, GLES minor version and DXC
// paths are whatever the heap held (a second instance made so aborted with
// "Unknown gles3 minor version: 1600353331", 2026-12-05). These are zeroed.
typedef struct gpuccOpaque* gpuccHandle;
typedef struct {
	void const *next;
	uint32_t sType;
} gpucc_chain;
typedef struct {
	gpucc_chain chain;
	uint32_t backends, flags, dx12_compiler, gles3_minor;
	char const *dxil_path, *dxc_path;
} gpucc_instance_extras;
typedef struct {
	gpucc_chain const *next;
} gpucc_instance_desc;
gpuccHandle wgpuCreateInstance(gpucc_instance_desc const *descriptor);

static gpuccHandle gpucc_create_instance(uint32_t backends) {
	gpucc_instance_extras extras = {0};
	extras.chain.sType = 0x00030006; // WGPUSType_InstanceExtras
	extras.backends = backends;
	gpucc_instance_desc desc = {&extras.chain};
	return wgpuCreateInstance(&desc);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"

	"github.com/gpucc/gpucc/internal/rundir"
)

// newInstanceOf creates a wgpu instance of the given backends only (a
// mask of wgpu.InstanceBackend). It fails where the binding's Instance is
// not laid out as its mirror (then the caller makes one of every backend).
func newInstanceOf(backends wgpu.InstanceBackend) (*wgpu.Instance, error) {
	if t := reflect.TypeOf(wgpu.Instance{}); t.NumField() != 1 || t.Field(0).Name != "ref" || t.Field(0).Type.Kind() != reflect.Pointer ||
		t.Size() != unsafe.Sizeof(rawSingle{}) {
		return nil, fmt.Errorf("the binding's %v is not laid out as gpucc's mirror of cogentcore/webgpu v0.23.0 (ref)", t)
	}
	rundir.Ensure() // Mesa's Vulkan drivers print five lines without one
	wgpu.SetLogLevel(logLevel())
	h := C.gpucc_create_instance(C.uint32_t(backends))
	if h == nil {
		return nil, errors.New("create WebGPU instance: wgpu returned none")
	}
	return (*wgpu.Instance)(unsafe.Pointer(&rawSingle{ref: h})), nil
}
