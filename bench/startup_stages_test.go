package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cogentcore/webgpu/wgpu"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/runtime/gpu"
)

// startupStages are what a process opening the webgpu backend pays before
// its first compile (issue 35 item 4: startupMs, 206 ms on the H100 host
// at 5b0afe1), each timed in a fresh process: wgpu's instance with every
// backend and the adapters it enumerates (GL's EGL among them), the same
// with the primary backends only (Vulkan, Metal, DX12), gpu.Open (instance,
// adapters, device), gpucc.Open of webgpu with a memory-only code cache
// (gpu.Open, the FMA probe's compile and dispatch, the tuned tiles), and
// the user's disk cache (cache.Default).
var startupStages = map[string]func() error{
	"instance-all":     func() error { return instance(nil) },
	"instance-primary": func() error { return instance(&wgpu.InstanceDescriptor{Backends: wgpu.InstanceBackendPrimary}) },
	"gpu-open": func() error {
		d, err := gpu.Open(gpu.Options{AllowSoftware: true, Upload: gpu.UploadStaging})
		if err == nil {
			d.Close()
		}
		return err
	},
	"gpucc-open": func() error {
		mem, err := cache.Open(cache.Options{})
		if err != nil {
			return err
		}
		rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "webgpu", AllowSoftware: true, Cache: mem})
		if err == nil {
			rt.Close()
		}
		return err
	},
	"cache-default": func() error { return cache.Default().DiskError() },
}

func instance(desc *wgpu.InstanceDescriptor) error {
	inst := wgpu.CreateInstance(desc)
	defer inst.Release()
	for _, a := range inst.EnumerateAdapters(nil) {
		a.Release()
	}
	return nil
}

// TestStartupStages times each of startupStages in GPUCC_STARTUP_RUNS
// fresh processes (default 5), this test binary run again for each, and
// logs each stage's times and median in ms. GPUCC_STARTUP=1 runs it:
//
//	GPUCC_STARTUP=1 go test -count=1 -run TestStartupStages -v ./bench/
func TestStartupStages(t *testing.T) {
	if stage := os.Getenv("GPUCC_STARTUP_STAGE"); stage != "" { // the child
		start := time.Now()
		if err := startupStages[stage](); err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		fmt.Printf("startup-ms %s %.3f\n", stage, float64(time.Since(start).Microseconds())/1000)
		return
	}
	if os.Getenv("GPUCC_STARTUP") == "" {
		t.Skip("GPUCC_STARTUP is unset")
	}
	runs, _ := strconv.Atoi(os.Getenv("GPUCC_STARTUP_RUNS"))
	if runs <= 0 {
		runs = 5
	}
	for _, stage := range slices.Sorted(maps.Keys(startupStages)) {
		var ms []float64
		for range runs {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestStartupStages$", "-test.count", "1")
			cmd.Env = append(os.Environ(), "GPUCC_STARTUP_STAGE="+stage)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", stage, err, out)
			}
			for _, ln := range strings.Split(string(out), "\n") {
				if f := strings.Fields(ln); len(f) == 3 && f[0] == "startup-ms" && f[1] == stage {
					v, _ := strconv.ParseFloat(f[2], 64)
					ms = append(ms, v)
				}
			}
		}
		if len(ms) != runs {
			t.Fatalf("%s: %d of %d runs reported a time", stage, len(ms), runs)
		}
		sorted := slices.Sorted(slices.Values(ms))
		t.Logf("%-16s median %8.2f ms  runs %v", stage, sorted[len(sorted)/2], ms)
	}
}
