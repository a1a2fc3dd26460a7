//go:build cgo && !js

package webgpu

import (
	"context"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/runtime/backend"
)

// TestStorageReachesAttention: the device's granted workgroup storage
// (lavapipe: 32768 bytes, the adapter's limit, which runtime/gpu asks
// for) is the storage a wide online attention tile plans for: at d 128
// the kernel stages 32 keys of k a sub-tile (32 × 33 vec4s), where WebGPU's
// default 16 KiB holds 16; without the w flag the kernel is as before.
// The passes' profile stays at the default 16 KiB (their tiles untimed
// under more).
func TestStorageReachesAttention(t *testing.T) {
	d := openDevice(t)
	storage := d.storage
	t.Logf("%s: maxComputeWorkgroupStorageSize %d", d.adapter.Name, storage)
	if p := d.info.Profile.MaxWorkgroupStorage; p != 16384 {
		t.Errorf("the passes' profile has %d bytes of workgroup storage, want WebGPU's default 16384", p)
	}
	if storage < 20000 {
		t.Skipf("the device grants %d bytes of workgroup storage: the d 128 sub-tile of 32 keys needs 19968", storage)
	}
	defer func(old wgsl.OnlineTile, from int) {
		wgsl.AttentionOnlineTile, ir.AttentionOnlineFrom = old, from
	}(wgsl.AttentionOnlineTile, ir.AttentionOnlineFrom)
	ir.AttentionOnlineFrom = 1
	g := irtest.AttentionCase{Name: "x", S: 40, T: 70, D: 128, E: 128, Scale: 0.125}.Graph(1)
	for _, c := range []struct {
		tile wgsl.OnlineTile
		kvs  string
	}{
		{wgsl.OnlineTile{Rows: 16, Slices: 16, Wide: true}, "var<workgroup> KVs: array<vec4<f32>, 1056>;"},
		{wgsl.OnlineTile{Rows: 16, Slices: 16}, "var<workgroup> KVs: array<vec4<f32>, 528>;"},
	} {
		wgsl.AttentionOnlineTile = c.tile
		e, err := d.Compile(context.Background(), program(t, g), &backend.Stats{})
		if err != nil {
			t.Fatal(err)
		}
		if src := e.(*executable).shaders[0].Source; !strings.Contains(src, c.kvs) {
			t.Errorf("%s: no %q in\n%s", c.tile, c.kvs, src)
		}
		e.Release()
	}
}
