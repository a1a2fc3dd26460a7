package runtime

import (
	"context"

	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// DeviceProfile returns the limits that kernels must respect on rt's
// device, as a profile named after its backend. A limit the backend does
// not have (a wasm kernel takes any number of pointers) is 0: unbounded.
// A build made ahead of time for a profile checks it against this one
// (passes.Profile.Check).
func (rt *Runtime) DeviceProfile() passes.Profile {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	d := passes.Profile{Name: rt.name}
	if rt.backend == nil {
		return d
	}
	d.MaxStorageBuffers = rt.backend.MaxBindings()
	if l, ok := rt.backend.(workgroupLimiter); ok {
		d.MaxInvocations, d.MaxWorkgroupStorage = l.WorkgroupLimits()
	}
	return d
}

// BuildWasm compiles a C unit from codegen/c to a WebAssembly module with
// the toolchain and flags the wasm backend uses, for builds made ahead of
// time. It fails when no Clang and wasm-ld are found.
func BuildWasm(ctx context.Context, source string) ([]byte, error) {
	tc, err := cbuild.Find()
	if err != nil {
		return nil, err
	}
	return tc.Wasm(ctx, source)
}
