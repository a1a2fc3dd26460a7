package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// TestWasmKernelProfile prints where the wasm backend's time goes in a
// model, kernel by kernel, under wazero's compiler: the module the
// backend builds (scalar) beside the same C with SIMD128, each kernel's
// best of GPUCC_PROFILE_RUNS calls (default 5). The model and its shapes
// are bench's TestKernelProfile's variables; with GPUCC_V8_DIR it also
// writes both modules, their memory and their calls for
// bench/wasm_v8.mjs, which times them in Node's V8:
//
//	GPUCC_PROFILE_MODEL=/tmp/det.onnx GPUCC_PROFILE_SHAPES='x=1,3,320,320' \
//	  go test -count=1 -run TestWasmKernelProfile ./runtime/wasm/
func TestWasmKernelProfile(t *testing.T) {
	model := os.Getenv("GPUCC_PROFILE_MODEL")
	if model == "" {
		t.Skip("GPUCC_PROFILE_MODEL is unset")
	}
	runs, _ := strconv.Atoi(os.Getenv("GPUCC_PROFILE_RUNS"))
	runs = max(runs, 5)
	limits := ir.Limits{MaxNodes: 1 << 16, MaxElements: 1 << 27, MaxStorageBytes: 8 << 30, MaxOps: 1 << 40, MaxOutputs: 16}
	opts := onnx.Options{Limits: limits, InputShapes: map[string][]int{}, Constants: map[string]*onnx.Tensor{}}
	for _, kv := range strings.Split(os.Getenv("GPUCC_PROFILE_SHAPES"), ";") {
		name, dims, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		var s []int
		for _, d := range strings.Split(dims, ",") {
			v, err := strconv.Atoi(d)
			if err != nil {
				t.Fatal(err)
			}
			s = append(s, v)
		}
		opts.InputShapes[name] = s
	}
	for _, kv := range strings.Split(os.Getenv("GPUCC_PROFILE_CONST"), ";") {
		name, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		opts.Constants[name] = &onnx.Tensor{Name: name, Type: onnx.Int64, Shape: []int{}, Int64: []int64{x}}
	}
	f, err := os.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.Load(f, opts)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Profile{Name: "wasm"}.Options(limits))
	if err != nil {
		t.Fatal(err)
	}
	unit, err := c.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := cbuild.Find()
	if err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	comp := wazeroDevice(true)
	defer comp.Close()
	scalar, err := tc.Wasm(ctx, unit.Source)
	if err != nil {
		t.Fatal(err)
	}
	times := [2][]float64{}
	for m, mod := range [][]byte{scalar, buildSIMD(t, tc, unit.Source)} {
		be, err := comp.Compile(ctx, &backend.Program{IR: p, Prebuilt: Artifact(unit, mod)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		e := be.(*executable)
		for i, buf := range p.Program().Buffers {
			data := ratioFill(buf.Len)
			if buf.Input && len(buf.Data) == buf.Len {
				data = buf.Data
			}
			if !e.mod.mem.Write(uint32(e.offs[i]), floatBytes(data)) {
				t.Fatalf("buffer %d does not fit linear memory", i)
			}
		}
		if dir := os.Getenv("GPUCC_V8_DIR"); dir != "" {
			exportV8(t, dir, []string{"scalar", "simd128"}[m], mod, unit, e)
		}
		times[m] = make([]float64, len(e.calls))
		for k, cl := range e.calls {
			best := math.Inf(1)
			for range runs {
				start := threadMs(t)
				if _, err := cl.fn.Call(ctx, cl.args...); err != nil {
					t.Fatalf("%s: %v", cl.name, err)
				}
				best = min(best, threadMs(t)-start)
			}
			times[m][k] = best
		}
		be.Release()
	}
	order := make([]int, len(times[0]))
	var tot [2]float64
	for k := range order {
		order[k] = k
		tot[0] += times[0][k]
		tot[1] += times[1][k]
	}
	sort.Slice(order, func(a, b int) bool { return times[0][order[a]] > times[0][order[b]] })
	fmt.Printf("wasm profile %s: %d kernels, scalar %.3f ms, simd128 %.3f ms (sums of each kernel's least thread CPU time of %d)\n", model, len(order), tot[0], tot[1], runs)
	for i, k := range order {
		if i >= 30 {
			break
		}
		kk := &p.Program().Kernels[k]
		fmt.Printf("  %9.3f %9.3f ms  %3d %-14v %v\n", times[0][k], times[1][k], k, kk.Kind, kk.Shape)
	}
}

// exportV8 writes, for bench/wasm_v8.mjs, the module (NAME.wasm), its
// linear memory holding the inputs (NAME.mem) and the kernel calls in
// order, each an export and its pointer arguments (NAME.json), so that
// V8 runs the very calls wazero runs.
func exportV8(t *testing.T, dir, name string, mod []byte, unit *c.Unit, e *executable) {
	t.Helper()
	img, ok := e.mod.mem.Read(0, e.mod.mem.Size())
	if !ok {
		t.Fatal("cannot read linear memory")
	}
	type callJSON struct {
		Export string   `json:"export"`
		Args   []uint64 `json:"args"`
	}
	var calls []callJSON
	for k, cl := range e.calls {
		calls = append(calls, callJSON{unit.Kernels[k].Export, cl.args})
	}
	js, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	for ext, b := range map[string][]byte{".wasm": mod, ".mem": img, ".json": js} {
		if err := os.WriteFile(filepath.Join(dir, name+ext), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// threadMs is the calling thread's CPU time in ms: the kernel's work
// without the time other users held the core.
func threadMs(t *testing.T) float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		t.Fatal(err)
	}
	return float64(ts.Nano()) / 1e6
}
