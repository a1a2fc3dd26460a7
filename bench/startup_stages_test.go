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
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/gpu"
)

// startupStages are what a process opening the webgpu backend pays before
// its first compile (issue 35 item 4: startupMs, 206 ms on the H100 host
// at 5b0afe1), each timed in a fresh process: wgpu's instance with every
// backend and the adapters it enumerates (GL's EGL among them), the same
// with the primary backends only (Vulkan, Metal, DX12) and with the
// secondary ones only (GL, DX11: what gpu.Open adds where no primary
// adapter is a hardware discrete one), gpu.Open (instances, adapters,
// device), gpucc.Open of webgpu with a memory-only code cache
// (gpu.Open, the FMA probe's compile and dispatch, the tuned tiles), and
// the user's disk cache (cache.Default); then gpucc.Open with a disk cache
// that an earlier process filled (GPUCC_STARTUP_CACHE, primed by one
// untimed run), where the FMA probe's verdict is read, not run, and each
// Open followed by the first compile and run of relu(a*b+c), so that a
// cost that only moves from the open to the first pipeline shows.
var startupStages = map[string]func() error{
	"gpucc-open-disk": func() error { return openRun(true, false) },
	"gpucc-run-mem":   func() error { return openRun(false, true) },
	"gpucc-run-disk":  func() error { return openRun(true, true) },
	"instance-all":    func() error { _, err := gpu.Adapters(); return err },
	"instance-primary": func() error {
		_, err := gpu.AdaptersOf(wgpu.InstanceBackendVulkan | wgpu.InstanceBackendMetal | wgpu.InstanceBackendDX12)
		return err
	},
	"instance-gl": func() error { _, err := gpu.AdaptersOf(wgpu.InstanceBackendGL | wgpu.InstanceBackendDX11); return err },
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

// openRun opens webgpu with a memory-only cache or the disk cache under
// $GPUCC_STARTUP_CACHE, and with run compiles and runs relu(a*b+c) over 3.
func openRun(disk, run bool) error {
	var o cache.Options
	if disk {
		o.Dir = os.Getenv("GPUCC_STARTUP_CACHE")
		if o.Dir == "" {
			return fmt.Errorf("GPUCC_STARTUP_CACHE is unset")
		}
	}
	c, err := cache.Open(o)
	if err != nil {
		return err
	}
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "webgpu", AllowSoftware: true, Cache: c})
	if err != nil {
		return err
	}
	defer rt.Close()
	if !run {
		return nil
	}
	b := ir.NewBuilder()
	x := b.NamedInput("a", ir.Shape{3}, []float32{-2, 3, 4})
	y := b.NamedInput("b", ir.Shape{3}, []float32{1, 2, 3})
	z := b.NamedInput("c", ir.Shape{3}, []float32{1, 1, 1})
	b.Output("y", x.Mul(y).Add(z).Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		return err
	}
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		return err
	}
	defer exe.Release()
	res, err := exe.Run(ctx, nil)
	if err != nil {
		return err
	}
	if got := res.Outputs["y"].Data; fmt.Sprint(got) != "[0 7 13]" {
		return fmt.Errorf("relu(a*b+c) = %v, want [0 7 13]", got)
	}
	return nil
}

// TestStartupStages times each of startupStages in GPUCC_STARTUP_RUNS
// fresh processes (default 5), this test binary run again for each, and
// logs each stage's times and median in ms, and the median CPU time of
// the whole child process (user and system, every thread: steadier than
// the wall clock on a loaded machine, and it counts lavapipe's threads).
// GPUCC_STARTUP=1 runs it:
//
//	GPUCC_STARTUP=1 go test -count=1 -run TestStartupStages -v ./bench/
//
// GPUCC_STARTUP_ONLY=stage,stage times only those stages.
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
	dir := t.TempDir()
	stages := slices.Sorted(maps.Keys(startupStages))
	if only := os.Getenv("GPUCC_STARTUP_ONLY"); only != "" {
		stages = strings.Split(only, ",")
	}
	for _, stage := range stages {
		if startupStages[stage] == nil {
			t.Fatalf("GPUCC_STARTUP_ONLY: no stage %q (the stages: %v)", stage, slices.Sorted(maps.Keys(startupStages)))
		}
	}
	for _, stage := range stages {
		var ms, cpu []float64
		for i := range runs + 1 {
			if i == 0 && !strings.HasSuffix(stage, "-disk") {
				continue // only a disk stage is primed
			}
			cmd := exec.Command(os.Args[0], "-test.run", "^TestStartupStages$", "-test.count", "1")
			cmd.Env = append(os.Environ(), "GPUCC_STARTUP_STAGE="+stage, "GPUCC_STARTUP_CACHE="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", stage, err, out)
			}
			for _, ln := range strings.Split(string(out), "\n") {
				if f := strings.Fields(ln); i > 0 && len(f) == 3 && f[0] == "startup-ms" && f[1] == stage {
					v, _ := strconv.ParseFloat(f[2], 64)
					ms = append(ms, v)
					cpu = append(cpu, (cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()).Seconds()*1e3)
				}
			}
		}
		if len(ms) != runs {
			t.Fatalf("%s: %d of %d runs reported a time", stage, len(ms), runs)
		}
		median := func(v []float64) float64 { return slices.Sorted(slices.Values(v))[len(v)/2] }
		t.Logf("%-16s median %8.2f ms  runs %v; process CPU median %.0f ms", stage, median(ms), ms, median(cpu))
	}
}
