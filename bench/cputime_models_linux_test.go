package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestModelCPUTime prints, for GPUCC_MODEL_CPUTIME=native (or wasm), the
// least CPU time of the calling thread over GPUCC_PEERS_RUNS warm runs
// (default 15) of each real model in GPUCC_MODELS, at one thread: a list
// of MODEL.onnx=SPEC separated by spaces, SPEC as bench/cputime_models.mjs
// takes it ("x=1,3,320,320", "sr:int64=16000" fixing an int64 input at
// import). Inputs are modelFill's, a state input (state, h, c) zeros, as
// cputime_models.mjs feeds ONNX Runtime; the first output's sum is
// printed on stderr to check that both ran the same model on the same
// data.
func TestModelCPUTime(t *testing.T) {
	be := os.Getenv("GPUCC_MODEL_CPUTIME")
	if be == "" {
		t.Skip("GPUCC_MODEL_CPUTIME is unset")
	}
	runs, _ := strconv.Atoi(os.Getenv("GPUCC_PEERS_RUNS"))
	runs = max(runs, 15)
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	cpu := func() float64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			t.Fatal(err)
		}
		return float64(ts.Nano()) / 1e6
	}
	ctx := context.Background()
	limits := Limits()
	limits.MaxNodes = 1 << 16
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: be, Limits: limits, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, item := range strings.Fields(os.Getenv("GPUCC_MODELS")) {
		file, spec, _ := strings.Cut(item, "=")
		opts := onnx.Options{Limits: limits, InputShapes: map[string][]int{}, Constants: map[string]*onnx.Tensor{}}
		for _, part := range splitList(spec) {
			lhs, rhs, _ := strings.Cut(part, "=")
			name, typ, _ := strings.Cut(lhs, ":")
			if typ == "int64" {
				v, err := strconv.ParseInt(rhs, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				opts.Constants[name] = &onnx.Tensor{Name: name, Type: onnx.Int64, Shape: []int{}, Int64: []int64{v}}
				continue
			}
			opts.InputShapes[name] = ints(t, rhs)
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		g, err := onnx.Load(f, opts)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		exe, err := rt.Compile(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		in := gpucc.Inputs{}
		for _, n := range g.Nodes {
			if n.Op == ir.OpInput && n.Name != "" && n.Data != nil && opts.InputShapes[n.Name] != nil {
				d := make([]float32, n.Shape.Len())
				if n.Name != "state" && n.Name != "h" && n.Name != "c" {
					d = modelFill(len(d))
				}
				in[n.Name] = gpucc.Tensor{Shape: n.Shape, Data: d}
			}
		}
		into := map[string][]float32{}
		for _, o := range exe.Plan().Program.Outputs {
			into[o.Name] = make([]float32, o.Shape.Len())
		}
		best := math.Inf(1)
		for i := range runs + 1 {
			start := cpu()
			if _, err := exe.RunWith(ctx, in, gpucc.RunOptions{Into: into}); err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				best = min(best, cpu()-start)
			}
		}
		first := exe.Plan().Program.Outputs[0].Name
		sum := 0.0
		for _, v := range into[first] {
			sum += float64(v)
		}
		fmt.Fprintf(os.Stderr, "%s %s sum %v\n", filepath.Base(file), first, sum)
		fmt.Printf("model\tgpucc-%s-1t-cpu\t%s\t%.4f\n", be, filepath.Base(file), best)
		exe.Release()
	}
}

// modelFill is cputime_models.mjs's: value i of an input, a fixed pattern
// in [-1, 1).
func modelFill(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((40503*i+9973)%65536-32768) / 32768
	}
	return v
}
