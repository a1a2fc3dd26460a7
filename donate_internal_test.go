package gpucc

import (
	"context"
	"errors"
	"maps"
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

// openCompiled opens backend be under lim (skipping where it cannot open,
// unless GPUCC_REQUIRE_<BE> is set) and compiles g; both are released at
// the (sub)test's end.
func openCompiled(t *testing.T, be string, lim ir.Limits, g *ir.Graph) (*Runtime, *Executable) {
	t.Helper()
	rt, err := Open(context.Background(), Options{Backend: be, Limits: lim, AllowSoftware: true})
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_"+strings.ToUpper(be)) != "" {
			t.Fatal(err)
		}
		t.Skipf("%s: %v", be, err)
	}
	t.Cleanup(func() { rt.Close() })
	exe, err := rt.Compile(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(exe.Release)
	return rt, exe
}

// donateRow is a [2,3,1,4] row of v, the update the donate graph scatters.
func donateRow(v float32) Tensor {
	r := Tensor{Shape: []int{2, 3, 1, 4}, Data: make([]float32, 24)}
	for k := range r.Data {
		r.Data[k] = v
	}
	return r
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
			rt, exe := openCompiled(t, be, ir.Limits{NonFinite: true}, g)
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

// TestDonateConcurrent: callers racing for one device tensor never see
// each other's data. Each round, eight goroutines run the cache step on
// the same uploaded cache, each with its own row: four donate it and keep
// the present, four only read it (keeping the present). Exactly one donor
// may succeed; every other donor, and every reader that comes after it,
// gets invalid_tensor; every run that succeeds gives cpu's bits of the
// original cache with its own row. Before the donors were released
// under the run's own lock, a caller waiting on the runtime's lock could
// run in the gap between the donor's run and its release: at 400 rounds,
// two donors of one tensor both succeeded on cpu (round 52) and native
// (round 76).
func TestDonateConcurrent(t *testing.T) {
	g := donateGraph(t)
	ctx := context.Background()
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
	host := Tensor{Shape: []int{2, 3, 64, 4}, Data: make([]float32, 2*3*64*4)}
	for k := range host.Data {
		host.Data[k] = float32(k%5) - 2
	}
	const callers = 8
	ins := make([]Inputs, callers)
	want := make([][]uint32, callers)
	for c := range ins {
		row := Tensor{Shape: []int{2, 3, 1, 4}, Data: make([]float32, 24)}
		for k := range row.Data {
			row.Data[k] = float32(1000*(c+1) + k)
		}
		ins[c] = Inputs{"row": row, "pos": Tensor{Shape: []int{1}, DType: ir.I64, Ints: []int64{int64(3 * c)}}, "cache": host}
		r, err := refExe.Run(ctx, ins[c])
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range r.Outputs["present"].Data {
			want[c] = append(want[c], math.Float32bits(x))
		}
	}
	for _, be := range []string{"cpu", "native", "wasm", "webgpu"} {
		t.Run(be, func(t *testing.T) {
			rt, exe := openCompiled(t, be, ir.Limits{NonFinite: true}, g)
			for round := range 40 {
				cache, err := rt.UploadTensor(ctx, host)
				if err != nil {
					t.Fatal(err)
				}
				type answer struct {
					res *Result
					err error
				}
				answers := make([]answer, callers)
				start := make(chan struct{})
				done := make(chan int)
				for c := range callers {
					go func() {
						in := maps.Clone(ins[c])
						in["cache"] = cache
						opts := RunOptions{Keep: []string{"present"}}
						if c%2 == 0 {
							opts.Donate = []string{"cache"}
						}
						<-start
						answers[c].res, answers[c].err = exe.RunWith(ctx, in, opts)
						done <- c
					}()
				}
				close(start)
				for range callers {
					<-done
				}
				donors := 0
				for c, a := range answers {
					if a.err != nil {
						if CodeOf(a.err) != ir.CodeInvalidTensor {
							t.Fatalf("round %d caller %d: %v, want invalid_tensor", round, c, a.err)
						}
						continue
					}
					if c%2 == 0 {
						donors++
					}
					h, err := a.res.Kept["present"].ReadTensor(ctx)
					if err != nil {
						t.Fatalf("round %d caller %d: %v", round, c, err)
					}
					var got []uint32
					for _, x := range h.Data {
						got = append(got, math.Float32bits(x))
					}
					if !slices.Equal(got, want[c]) {
						t.Fatalf("round %d caller %d (donor %v): not cpu's bits of its own row over the original cache", round, c, c%2 == 0)
					}
				}
				if donors > 1 {
					t.Fatalf("round %d: %d callers consumed one donated tensor", round, donors)
				}
				for _, a := range answers {
					if a.res != nil {
						a.res.Kept["present"].Release()
					}
				}
				cache.Release()
				if rt.live != 0 {
					t.Fatalf("round %d: %d bytes live after every tensor's release", round, rt.live)
				}
			}
		})
	}
}

// TestDonateGap: a caller that runs right after a donating run has
// returned the runtime's lock (donatedRunHook), as a caller waiting on the
// lock does, finds the donated tensor consumed: donating it again or
// reading it is invalid_tensor, on every backend. Before the donors were
// released in the run's own hold of the lock, the second run succeeded on
// cpu, native and wasm, donating the tensor a second time, and on webgpu,
// where the first caller's kept present is the donated buffer, failed
// with execution_failed.
func TestDonateGap(t *testing.T) {
	g := donateGraph(t)
	ctx := context.Background()
	host, pos := Tensor{Shape: []int{2, 3, 64, 4}, Data: make([]float32, 2*3*64*4)}, Tensor{Shape: []int{1}, DType: ir.I64, Ints: []int64{5}}
	for _, be := range []string{"cpu", "native", "wasm", "webgpu"} {
		t.Run(be, func(t *testing.T) {
			rt, exe := openCompiled(t, be, ir.Limits{NonFinite: true}, g)
			for _, donate := range []bool{true, false} {
				cache, err := rt.UploadTensor(ctx, host)
				if err != nil {
					t.Fatal(err)
				}
				var second error
				var secondRes *Result
				donatedRunHook = func() {
					donatedRunHook = nil
					opts := RunOptions{Keep: []string{"present"}}
					if donate {
						opts.Donate = []string{"cache"}
					}
					secondRes, second = exe.RunWith(ctx, Inputs{"cache": cache, "row": donateRow(2), "pos": pos}, opts)
				}
				first, err := exe.RunWith(ctx, Inputs{"cache": cache, "row": donateRow(1), "pos": pos}, RunOptions{Keep: []string{"present"}, Donate: []string{"cache"}})
				donatedRunHook = nil
				if err != nil {
					t.Fatal(err)
				}
				if CodeOf(second) != ir.CodeInvalidTensor {
					t.Errorf("donate %v: the run after the donation: %v, want invalid_tensor", donate, second)
				}
				h, err := first.Kept["present"].ReadTensor(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got := h.Data[5*4]; got != 1 {
					t.Errorf("donate %v: the first caller's present holds %v at its row, want its own 1", donate, got)
				}
				first.Kept["present"].Release()
				if secondRes != nil {
					secondRes.Kept["present"].Release()
				}
				if rt.live != 0 {
					t.Fatalf("%d bytes live after every release", rt.live)
				}
			}
		})
	}
}

// TestDonateInputAsOutput: a donated input that the graph also returns
// as it is (an output of the input node itself), kept and not kept,
// beside a scatter of it: the kept output holds the input's values after
// the donation, on every backend, and releasing it frees every byte;
// the donated handle is refused.
func TestDonateInputAsOutput(t *testing.T) {
	b := ir.NewBuilder()
	cache := b.NamedInput("cache", ir.Shape{2, 8}, make([]float32, 16))
	row := b.NamedInput("row", ir.Shape{2, 1}, []float32{7, 9})
	pos := b.TypedInput("pos", ir.I64, ir.Shape{2, 1}, nil, []int64{3, -1})
	b.Output("same", cache)
	b.Output("present", cache.ScatterElements(pos, row, 1, ir.ScatterNone))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	host := make([]float32, 16)
	for i := range host {
		host[i] = float32(i) - 4.5
	}
	host[0] = float32(math.Copysign(0, -1))
	for _, be := range []string{"cpu", "native", "wasm", "webgpu"} {
		t.Run(be, func(t *testing.T) {
			rt, exe := openCompiled(t, be, ir.Limits{}, g)
			for _, keep := range [][]string{{"same", "present"}, {"same"}, {"present"}, nil} {
				x, err := rt.Upload(ctx, ir.Shape{2, 8}, host)
				if err != nil {
					t.Fatal(err)
				}
				res, err := exe.RunWith(ctx, Inputs{"cache": x}, RunOptions{Keep: keep, Donate: []string{"cache"}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := x.Read(ctx, nil); CodeOf(err) != ir.CodeInvalidTensor {
					t.Fatalf("keep %v: the donated tensor read: %v", keep, err)
				}
				values := func(name string) []float32 {
					if k, ok := res.Kept[name]; ok {
						v, err := k.Read(ctx, nil)
						if err != nil {
							t.Fatalf("keep %v: %s: %v", keep, name, err)
						}
						k.Release()
						return v
					}
					return res.Outputs[name].Data
				}
				present := slices.Clone(host)
				present[3], present[15] = 7, 9
				for name, want := range map[string][]float32{"same": host, "present": present} {
					got := values(name)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("keep %v: %s[%d] = %v, want %v", keep, name, i, got[i], want[i])
						}
					}
				}
				if rt.live != 0 {
					t.Fatalf("keep %v: %d bytes live after every release", keep, rt.live)
				}
			}
		})
	}
}

// TestDonateClaimed: a run that donates a tensor another run is
// consuming (donatingHook: claimed, not yet run) is refused with
// invalid_tensor, and the first run succeeds with its own row, on every
// backend. Before the claim, the second run consumed the tensor too and
// the first then failed with invalid_tensor; run concurrently, two donors
// of one tensor both succeeded on native (TestDonateConcurrent, round 26,
// after 40e66af released the donors in the run's hold of the lock).
func TestDonateClaimed(t *testing.T) {
	g := donateGraph(t)
	ctx := context.Background()
	host, pos := Tensor{Shape: []int{2, 3, 64, 4}, Data: make([]float32, 2*3*64*4)}, Tensor{Shape: []int{1}, DType: ir.I64, Ints: []int64{5}}
	for _, be := range []string{"cpu", "native", "wasm", "webgpu"} {
		t.Run(be, func(t *testing.T) {
			rt, exe := openCompiled(t, be, ir.Limits{NonFinite: true}, g)
			cache, err := rt.UploadTensor(ctx, host)
			if err != nil {
				t.Fatal(err)
			}
			var second error
			donatingHook = func() {
				donatingHook = nil
				_, second = exe.RunWith(ctx, Inputs{"cache": cache, "row": donateRow(2), "pos": pos}, RunOptions{Keep: []string{"present"}, Donate: []string{"cache"}})
			}
			first, err := exe.RunWith(ctx, Inputs{"cache": cache, "row": donateRow(1), "pos": pos}, RunOptions{Keep: []string{"present"}, Donate: []string{"cache"}})
			donatingHook = nil
			if err != nil {
				t.Fatalf("the first donation: %v (the second: %v)", err, second)
			}
			if CodeOf(second) != ir.CodeInvalidTensor {
				t.Errorf("a second donation while the first runs: %v, want invalid_tensor", second)
			}
			h, err := first.Kept["present"].ReadTensor(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Data[5*4]; got != 1 {
				t.Errorf("the first caller's present holds %v at its row, want 1", got)
			}
			first.Kept["present"].Release()
			if rt.live != 0 {
				t.Fatalf("%d bytes live after every release", rt.live)
			}
		})
	}
}
