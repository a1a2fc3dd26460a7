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
			rt := open(t, be)
			exe, err := rt.Compile(ctx, layer(m, k, n, x, w, b))
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			res, err := exe.RunWith(ctx, nil, gpucc.RunOptions{KernelTimes: true})
			if be != "webgpu" {
				if gpucc.CodeOf(err) != ir.CodeUnsupported {
					t.Fatalf("kernel times on %s: %v, want unsupported", be, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
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
