//go:build !js

package gpu

import "testing"

// TestGrantsAdapterStorage: the device is granted its adapter's workgroup
// storage (lavapipe: 32768 bytes), where asking for the maximum of
// wgpu.DefaultLimits' "undefined" and the adapter's asked for WebGPU's
// default 16384.
func TestGrantsAdapterStorage(t *testing.T) {
	d, err := Open(Options{AllowSoftware: true})
	if err != nil {
		t.Skip(err)
	}
	defer d.Close()
	have := d.adapter.GetLimits().Limits.MaxComputeWorkgroupStorageSize
	got := d.Info().Limits.MaxComputeWorkgroupStorageSize
	t.Logf("%s: adapter %d bytes, device %d", d.Info().Name, have, got)
	if got != max(have, 16384) {
		t.Errorf("device granted %d bytes of workgroup storage, the adapter has %d", got, have)
	}
}
