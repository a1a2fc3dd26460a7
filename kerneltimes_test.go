package gpucc_test

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestRunKernelTimes: a run timed kernel by kernel (RunOptions.KernelTimes)
// gives each kernel's
// time under its name, in program order, and the outputs of an ordinary
// run, bit for bit; a run that cannot be timed so is refused with a code
// before it runs.
func TestRunKernelTimes(t *testing.T) {
	const m, k, n = 33, 20, 17
	x, w, b := irtest.Values(1, m*k, 2), irtest.Values(2, k*n, 0.25), irtest.Values(3, n, 1)
	want := reference(m, k, n, x, w, b)
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			exe, res := runKernelTimes(t, open(t, be), layer(m, k, n, x, w, b))
			if res == nil {
				return
			}
			var names, gotNames []string
			for _, k := range exe.Plan().Program.Kernels {
				names = append(names, k.Name)
			}
			for _, kt := range res.KernelTimes {
				gotNames = append(gotNames, kt.Kernel)
				if kt.Ms < 0 || math.IsNaN(kt.Ms) || kt.Clock != "gpu-timestamp" && kt.Clock != "wall" || kt.Kind == "" {
					t.Errorf("kernel %s: %+v", kt.Kernel, kt)
				}
			}
			if len(names) < 2 {
				t.Fatalf("the layer is %d kernels; the test wants several", len(names))
			}
			if d := cmp.Diff(names, gotNames); d != "" {
				t.Errorf("timed kernels (-program +kernelTimes):\n%s", d)
			}
			for name, v := range want {
				got := res.Outputs[name].Data
				for i := range v {
					if math.Float32bits(got[i]) != math.Float32bits(v[i]) {
						t.Fatalf("%s[%d] = %v, cpuref %v", name, i, got[i], v[i])
					}
				}
			}
			plain, err := exe.Run(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if plain.KernelTimes != nil {
				t.Errorf("an ordinary run has kernel times: %+v", plain.KernelTimes)
			}
			if _, err := exe.RunWith(ctx, nil, gpucc.RunOptions{KernelTimes: true, NoWait: true, Keep: []string{"y", "s"}}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
				t.Errorf("KernelTimes with NoWait: %v, want invalid_input", err)
			}
		})
	}
}

// TestTypedKernelTimes: a typed graph's run timed kernel by kernel names
// its typed node and its float32 island's kernels, as many as the run's
// kernels, and gives an ordinary run's outputs bit for bit; a backend that
// cannot time them so refuses it.
func TestTypedKernelTimes(t *testing.T) {
	ctx := context.Background()
	tb := ir.NewBuilder()
	table := tb.TypedInput("table", ir.F32, ir.Shape{16, 8}, irtest.Values(1, 16*8, 1), nil)
	ids := tb.TypedInput("ids", ir.I64, ir.Shape{3}, nil, []int64{1, 2, 3})
	tb.Output("y", table.Gather(ids, 0).MatMul(tb.TypedInput("w", ir.F32, ir.Shape{8, 4}, irtest.Values(2, 8*4, 1), nil)).Exp())
	g, err := tb.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, be := range append([]string{"cpu"}, typedBackends...) {
		t.Run(be, func(t *testing.T) {
			exe, res := runKernelTimes(t, open(t, be), g)
			if res == nil {
				return
			}
			plain, err := exe.Run(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(plain.Outputs["y"].Data, res.Outputs["y"].Data, cmp.Comparer(func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) })); d != "" {
				t.Errorf("y timed kernel by kernel (-plain +timed):\n%s", d)
			}
			var kinds []string
			for _, kt := range res.KernelTimes {
				kinds = append(kinds, kt.Kind)
				if kt.Ms < 0 || kt.Clock != "gpu-timestamp" && kt.Clock != "wall" {
					t.Errorf("%+v", kt)
				}
			}
			if len(res.KernelTimes) != res.Kernels || len(kinds) < 2 || kinds[0] != "gather" {
				t.Errorf("%d kernel times for %d kernels, kinds %v; want the gather's first: %+v", len(res.KernelTimes), res.Kernels, kinds, res.KernelTimes)
			}
		})
	}
}

// runKernelTimes compiles g on rt and runs it with KernelTimes: webgpu's
// result, or nil where the backend refuses it as it must (unsupported).
// The executable is released when the test ends.
func runKernelTimes(t *testing.T, rt *gpucc.Runtime, g *ir.Graph) (*gpucc.Executable, *gpucc.Result) {
	t.Helper()
	ctx := context.Background()
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(exe.Release)
	res, err := exe.RunWith(ctx, nil, gpucc.RunOptions{KernelTimes: true})
	if rt.Backend() != "webgpu" {
		if gpucc.CodeOf(err) != ir.CodeUnsupported {
			t.Fatalf("kernel times on %s: %v, want unsupported", rt.Backend(), err)
		}
		return exe, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return exe, res
}
