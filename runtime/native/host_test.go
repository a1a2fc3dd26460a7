//go:build (darwin || freebsd || linux || netbsd) && (amd64 || arm64) && !android && !js

package native_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestNativeHostChecks: the native backend checks host inputs and outputs
// for ±Inf and NaN itself (gpucc_scan, in C), so the runtime does not:
// each non-finite value, in the first and a later block of 64, the scalar
// tail and the last element, must still be refused with its input or
// output and index named.
func TestNativeHostChecks(t *testing.T) {
	rt := nativeOpen(t)
	ctx := context.Background()
	const n = 203
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{n}, make([]float32, n))
	b.Output("y", x.MulScalar(1e30).MulScalar(1e30))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	for _, k := range []int{0, 3, 64, 70, 191, 192, n - 1} {
		for _, bad := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
			in := make([]float32, n)
			in[k] = bad
			_, err := exe.Run(ctx, gpucc.Inputs{"x": gpucc.Tensor{Shape: []int{n}, Data: in}})
			if gpucc.CodeOf(err) != ir.CodeInvalidInput || !strings.Contains(err.Error(), "value "+strconv.Itoa(k)+" ") {
				t.Errorf("input %v at %d: err = %v, want invalid_input naming value %d", bad, k, err, k)
			}
			in[k] = 1 // 1e30 * 1e30 overflows to +Inf
			_, err = exe.Run(ctx, gpucc.Inputs{"x": gpucc.Tensor{Shape: []int{n}, Data: in}})
			if gpucc.CodeOf(err) != ir.CodeNonFiniteOutput || !strings.Contains(err.Error(), "element "+strconv.Itoa(k)+" ") {
				t.Errorf("output overflow at %d: err = %v, want non_finite_output naming element %d", k, err, k)
			}
		}
	}
}

// TestNativeInto: outputs are written straight into RunOptions.Into's
// slices, and still right when that is unsafe: an Into slice that is also
// an input (the matmul reads all of it after writing), two outputs of one
// buffer, and a kept output beside a host one.
func TestNativeInto(t *testing.T) {
	rt := nativeOpen(t)
	ctx := context.Background()
	const m = 24
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{m, m}, make([]float32, m*m))
	y := x.MatMul(x).AddScalar(1)
	b.Output("y", y)
	b.Output("y2", y)
	b.Output("z", x.Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	data := irtest.Values(7, m*m, 1)
	want := map[string][]uint32{}
	{
		bw := ir.NewBuilder()
		xw := bw.Input(ir.Shape{m, m}, data)
		yw := xw.MatMul(xw).AddScalar(1)
		bw.Output("y", yw)
		bw.Output("z", xw.Relu())
		gw, err := bw.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		vals := cpuref.Eval(gw)
		for _, o := range gw.Outputs {
			want[o.Name] = bits(map[string][]float32{"": vals[o.ID]})[""]
		}
	}
	for _, tc := range []struct {
		name string
		into func(in []float32) map[string][]float32
		keep []string
	}{
		{"fresh", func([]float32) map[string][]float32 { return nil }, nil},
		{"into", func([]float32) map[string][]float32 {
			return map[string][]float32{"y": make([]float32, m*m), "y2": make([]float32, m*m), "z": make([]float32, m*m)}
		}, nil},
		{"into the input", func(in []float32) map[string][]float32 { return map[string][]float32{"y": in} }, nil},
		{"into overlapping the input", func(in []float32) map[string][]float32 { return map[string][]float32{"z": in} }, nil},
		{"kept beside host", func([]float32) map[string][]float32 { return map[string][]float32{"y": make([]float32, m*m)} }, []string{"y2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float32{}, data...)
			into := tc.into(in)
			res, err := exe.RunWith(ctx, gpucc.Inputs{"x": gpucc.Tensor{Shape: []int{m, m}, Data: in}}, gpucc.RunOptions{Into: into, Keep: tc.keep})
			if err != nil {
				t.Fatal(err)
			}
			for name, o := range res.Outputs {
				w := want[strings.TrimSuffix(name, "2")]
				if diff := cmp.Diff(w, bits(map[string][]float32{"": o.Data})[""]); diff != "" {
					t.Errorf("%s differs from cpuref (-want +got):\n%s", name, diff)
				}
				if s, ok := into[name]; ok && &s[0] != &o.Data[0] {
					t.Errorf("%s was not returned in its Into slice", name)
				}
			}
			for _, kt := range res.Kept {
				kt.Release()
			}
		})
	}
}
