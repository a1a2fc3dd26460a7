package passes

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpucc/gpucc/ir"
)

// Profile is a named set of device limits that a compilation targets. A
// build records the profile it was compiled for, and a runtime whose device
// falls short of any limit refuses the build (Profile.Check).
//
// Only limits that shape kernels are here: how many buffers a kernel binds,
// how large a workgroup and its memory may be, how many workgroups a
// dispatch may span, and how large one bound buffer may be.
type Profile struct {
	Name string `json:"name"`
	// MaxStorageBuffers is maxStorageBuffersPerShaderStage: the bindings
	// of one kernel.
	MaxStorageBuffers int `json:"maxStorageBuffersPerShaderStage"`
	// MaxInvocations is maxComputeInvocationsPerWorkgroup.
	MaxInvocations int `json:"maxComputeInvocationsPerWorkgroup"`
	// MaxWorkgroupSize is maxComputeWorkgroupSizeX, Y and Z.
	MaxWorkgroupSize [3]int `json:"maxComputeWorkgroupSize"`
	// MaxWorkgroupStorage is maxComputeWorkgroupStorageSize, in bytes.
	MaxWorkgroupStorage int `json:"maxComputeWorkgroupStorageSize"`
	// MaxWorkgroupsPerDimension is maxComputeWorkgroupsPerDimension.
	MaxWorkgroupsPerDimension int `json:"maxComputeWorkgroupsPerDimension"`
	// MaxBindingSize is maxStorageBufferBindingSize, in bytes: the largest
	// buffer a kernel may bind.
	MaxBindingSize int64 `json:"maxStorageBufferBindingSize"`
	// MaxBufferSize is maxBufferSize, in bytes.
	MaxBufferSize int64 `json:"maxBufferSize"`
}

// WebGPUDefault is the profile of WebGPU's default limits (the "Limits"
// table of the WebGPU specification), which every adapter supports: a build
// for it runs on any WebGPU device, and on every other backend.
var WebGPUDefault = Profile{
	Name:                      "webgpu-default",
	MaxStorageBuffers:         8,
	MaxInvocations:            256,
	MaxWorkgroupSize:          [3]int{256, 256, 64},
	MaxWorkgroupStorage:       16384,
	MaxWorkgroupsPerDimension: 65535,
	MaxBindingSize:            128 << 20,
	MaxBufferSize:             256 << 20,
}

// DefaultProfile is the name of the profile used when none is named.
const DefaultProfile = "webgpu-default"

// profiles are the named profiles, by name.
var profiles = map[string]Profile{WebGPUDefault.Name: WebGPUDefault}

// ProfileNames returns the names of the known profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupProfile returns the profile named name ("" is DefaultProfile).
func LookupProfile(name string) (Profile, error) {
	if name == "" {
		name = DefaultProfile
	}
	p, ok := profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("no device-limit profile is named %q (have %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return p, nil
}

// Options returns the pass options that compile for p under the host
// limits: kernels bind at most p's buffers, matmul tiles fit its
// workgroups, and large sums are split into a block per workgroup.
func (p Profile) Options(limits ir.Limits) Options {
	return Options{
		Limits:              limits,
		MaxBindings:         p.MaxStorageBuffers,
		MaxInvocations:      p.MaxInvocations,
		MaxWorkgroupStorage: p.MaxWorkgroupStorage,
		SplitSums:           true,
	}
}

// Fits reports the first buffer of prog that p cannot bind, as a
// limit_exceeded error naming it and its node; nil when every buffer fits.
func (p Profile) Fits(prog *ir.Program) error {
	limit := min(p.MaxBindingSize, p.MaxBufferSize)
	for i, b := range prog.Buffers {
		if bytes := int64(b.Len) * 4; bytes > limit {
			return ir.Errorf(ir.CodeLimitExceeded, int(b.Node), "shape",
				"buffer %d (node %d, shape %v) is %d bytes; profile %s binds at most %d", i, b.Node, b.Shape, bytes, p.Name, limit)
		}
	}
	return nil
}

// Check reports, as one error naming every shortfall, the limits of p that
// device d (the limits a runtime's device offers, 0 meaning unbounded)
// does not meet; nil when d meets them all.
func (p Profile) Check(d Profile) error {
	var short []string
	need := func(name string, want, have int64) {
		if have != 0 && have < want {
			short = append(short, fmt.Sprintf("%s %d < %d", name, have, want))
		}
	}
	need("maxStorageBuffersPerShaderStage", int64(p.MaxStorageBuffers), int64(d.MaxStorageBuffers))
	need("maxComputeInvocationsPerWorkgroup", int64(p.MaxInvocations), int64(d.MaxInvocations))
	for i, axis := range []string{"X", "Y", "Z"} {
		need("maxComputeWorkgroupSize"+axis, int64(p.MaxWorkgroupSize[i]), int64(d.MaxWorkgroupSize[i]))
	}
	need("maxComputeWorkgroupStorageSize", int64(p.MaxWorkgroupStorage), int64(d.MaxWorkgroupStorage))
	need("maxComputeWorkgroupsPerDimension", int64(p.MaxWorkgroupsPerDimension), int64(d.MaxWorkgroupsPerDimension))
	need("maxStorageBufferBindingSize", p.MaxBindingSize, d.MaxBindingSize)
	need("maxBufferSize", p.MaxBufferSize, d.MaxBufferSize)
	if len(short) > 0 {
		return ir.Errorf(ir.CodeBackendUnavailable, -1, "", "device %s cannot meet profile %s: %s", d.Name, p.Name, strings.Join(short, ", "))
	}
	return nil
}
