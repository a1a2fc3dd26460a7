package gpucc

import (
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// donateGraph is a KV cache's step as the static-cache rewrite writes it
// on webgpu: present = scatter_elements(cache, position broadcast to the
// row, row) along axis 2, plus an output reading the present.
func donateGraph(t *testing.T) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	cache := b.NamedInput("cache", ir.Shape{2, 3, 64, 4}, make([]float32, 2*3*64*4))
	row := b.NamedInput("row", ir.Shape{2, 3, 1, 4}, make([]float32, 24))
	pos := b.TypedInput("pos", ir.I64, ir.Shape{1}, nil, []int64{0})
	idx := pos.Reshape(ir.Shape{1, 1, 1, 1}).Broadcast(ir.Shape{2, 3, 1, 4})
	present := cache.ScatterElements(idx, row, 2, ir.ScatterNone)
	b.Output("present", present)
	b.Output("sum", present.Sum())
	g, err := b.Build(ir.Limits{NonFinite: true})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestDonateScatterInPlace: a run that donates its cache (RunOptions.Donate)
// gives the bits of a run that does not, which are cpu's, step after step, each present fed
// back as the next cache, on cpu, native, wasm and webgpu; the donated
// tensor's old handle is refused (invalid_tensor, naming the donation), no
// device memory is kept beyond the live cache, and on webgpu, where the
// scatter runs in place into the donated buffer, a step's kernels write
// the row and the reads of it, not the 6,144-byte cache (BytesWritten). A
// donated step that fails (a position outside the cache: invalid_input)
// consumes its cache too. Donating an input not given as a device tensor,
// or a tensor given under two names, is invalid_input.
func TestDonateScatterInPlace(t *testing.T) {
	g := donateGraph(t)
	ctx := context.Background()
	bits := func(v []float32) []uint32 {
		out := make([]uint32, len(v))
		for i, x := range v {
			out[i] = math.Float32bits(x)
		}
		return out
	}
	ref, err := Open(ctx, Options{Backend: "cpu", Limits: ir.Limits{NonFinite: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	refExe, err := ref.Compile(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	defer refExe.Release()
	for _, be := range []string{"cpu", "native", "wasm", "webgpu"} {
		t.Run(be, func(t *testing.T) {
			rt, err := Open(ctx, Options{Backend: be, Limits: ir.Limits{NonFinite: true}, AllowSoftware: true})
			if err != nil {
				if os.Getenv("GPUCC_REQUIRE_"+strings.ToUpper(be)) != "" {
					t.Fatal(err)
				}
				t.Skipf("%s: %v", be, err)
			}
			defer rt.Close()
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			host := Tensor{Shape: []int{2, 3, 64, 4}, Data: make([]float32, 2*3*64*4)}
			for k := range host.Data {
				host.Data[k] = float32(k%7) - 3.5
			}
			host.Data[5] = float32(math.Copysign(0, -1))
			cache, err := rt.UploadTensor(ctx, host)
			if err != nil {
				t.Fatal(err)
			}
			live := rt.live
			for step, p := range []int64{0, 63, -1, 17, 17} {
				row := Tensor{Shape: []int{2, 3, 1, 4}, Data: make([]float32, 24)}
				for k := range row.Data {
					row.Data[k] = float32(step*100 + k)
				}
				row.Data[3] = float32(math.Copysign(0, -1))
				in := Inputs{"row": row, "pos": Tensor{Shape: []int{1}, DType: ir.I64, Ints: []int64{p}}}
				in["cache"] = host
				want, err := exe.Run(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				cpu, err := refExe.Run(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(bits(cpu.Outputs["present"].Data), bits(want.Outputs["present"].Data)) {
					t.Fatalf("step %d: not cpu's bits", step)
				}
				in["cache"] = cache
				got, err := exe.RunWith(ctx, in, RunOptions{Keep: []string{"present"}, Donate: []string{"cache"}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := cache.ReadTensor(ctx); CodeOf(err) != ir.CodeInvalidTensor || !strings.Contains(err.Error(), "donated") {
					t.Fatalf("step %d: the donated tensor read: %v", step, err)
				}
				if bw, ok := exe.typedExe.(interface{ BytesWritten() int64 }); ok && be == "webgpu" && bw.BytesWritten() >= 1024 {
					t.Errorf("step %d: the kernels wrote %d bytes; want the row's, not the cache's", step, bw.BytesWritten())
				}
				cache = got.Kept["present"]
				h, err := cache.ReadTensor(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(bits(h.Data), bits(want.Outputs["present"].Data)) || !slices.Equal(bits(got.Outputs["sum"].Data), bits(want.Outputs["sum"].Data)) {
					t.Fatalf("step %d: not the bits of the run without donation", step)
				}
				host = want.Outputs["present"]
				if rt.live != live {
					t.Fatalf("step %d: %d bytes live, %d before", step, rt.live, live)
				}
			}
			in := Inputs{"row": Tensor{Shape: []int{2, 3, 1, 4}, Data: make([]float32, 24)}, "pos": Tensor{Shape: []int{1}, DType: ir.I64, Ints: []int64{64}}, "cache": cache}
			if _, err := exe.RunWith(ctx, in, RunOptions{Keep: []string{"present"}, Donate: []string{"cache"}}); CodeOf(err) != ir.CodeInvalidInput {
				t.Fatalf("position 64: %v, want invalid_input", err)
			}
			if _, err := cache.ReadTensor(ctx); CodeOf(err) != ir.CodeInvalidTensor || rt.live != 0 {
				t.Fatalf("after a failed donated run: %v, %d bytes live", err, rt.live)
			}
			in["cache"] = host
			if _, err := exe.RunWith(ctx, in, RunOptions{Donate: []string{"cache"}}); CodeOf(err) != ir.CodeInvalidInput || !strings.Contains(err.Error(), "not given as a device tensor") {
				t.Errorf("a host input donated: %v", err)
			}
			two, err := rt.UploadTensor(ctx, host)
			if err != nil {
				t.Fatal(err)
			}
			defer two.Release()
			in["cache"], in["row"] = two, two
			var e *ir.Error
			if _, err := exe.RunWith(ctx, in, RunOptions{Donate: []string{"cache"}}); !errors.As(err, &e) || e.Code != ir.CodeInvalidInput || !strings.Contains(err.Error(), "too") {
				t.Errorf("a donated tensor given twice: %v", err)
			}
		})
	}
}
