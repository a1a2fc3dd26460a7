package gpucc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestReusedBuffersKeepOwners runs relu(a*b+c) step after step while
// its resident inputs are released and uploaded again, donated, and its
// kept outputs held across steps and released out of order, by RunWith,
// RunWith without waiting and Launch, with the default pool, with no pool
// and with a pool of three buffers. A device buffer freed by one tensor is
// taken by the next upload or run, so a run's cached bind groups, its
// dispatch list and the command buffer recorded ahead of it bind buffers
// that changed owner (or, with no pool, were destroyed and made anew);
// each kept output must hold its own step's values to the end, bit for
// bit cpuref's, whatever ran after it.
func TestReusedBuffersKeepOwners(t *testing.T) {
	const n = 256
	specials := []float32{float32(math.Copysign(0, -1)), 0, math.Float32frombits(1), -math.Float32frombits(0x807fffff), 3e38, -3e38}
	values := func(r *rand.Rand, scale float32, extremes int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = scale * (r.Float32()*8 - 4)
			if extremes > 0 && r.IntN(8) == 0 {
				v[i] = specials[r.IntN(extremes)]
			}
		}
		return v
	}
	ref := func(a, b, c []float32) flushRef {
		bl := ir.NewBuilder()
		x, y, z := bl.Input(ir.Shape{n}, a), bl.Input(ir.Shape{n}, b), bl.Input(ir.Shape{n}, c)
		bl.Output("out", x.Mul(y).Add(z).Relu())
		g, err := bl.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return refOf(g)
	}
	bl := ir.NewBuilder()
	zero := make([]float32, n) // every run gives its inputs
	x, y, z := bl.Input(ir.Shape{n}, zero), bl.Input(ir.Shape{n}, zero), bl.Input(ir.Shape{n}, zero)
	bl.Output("out", x.Mul(y).Add(z).Relu())
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, be := range []string{"webgpu", "cpu", "native", "wasm"} {
		for _, pool := range []int64{0, -1, 3 * 4 * n} {
			t.Run(fmt.Sprintf("%s/pool%d", be, pool), func(t *testing.T) {
				rt, err := Open(ctx, Options{Backend: be, AllowSoftware: true, PoolBytes: pool})
				if err != nil {
					t.Skipf("%s: %v", be, err)
				}
				defer rt.Close()
				exe, err := rt.Compile(ctx, g)
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(uint64(len(be)), uint64(pool)))
				names := []string{"input0", "input1", "input2"}
				// a takes every special, b none (|b| ≤ 1), c the zeros and
				// subnormals: |a·b| ≤ 3e38 and the sums stay finite.
				scales := []float32{1, 0.25, 1e-37}
				extremes := []int{len(specials), 0, 4}
				data := make([][]float32, 3)
				in := Inputs{}
				upload := func(k int) {
					data[k] = values(r, scales[k], extremes[k])
					d, err := rt.Upload(ctx, ir.Shape{n}, data[k])
					if err != nil {
						t.Fatal(err)
					}
					in[names[k]] = d
				}
				for k := range 3 {
					upload(k)
				}
				type kept struct {
					t    *DeviceTensor
					want flushRef
					step int
				}
				var held []kept
				var launched []*Pending
				var launchedWant []flushRef
				check := func(step int, got []float32, want flushRef) {
					t.Helper()
					if i := want.mismatch(be, got); i >= 0 {
						t.Fatalf("step %d: out[%d] = %v (%#08x), cpuref %v (%#08x)", step, i, got[i], math.Float32bits(got[i]), want.want[i], math.Float32bits(want.want[i]))
					}
				}
				host := make([]float32, n)
				for step := range 60 {
					want := ref(data[0], data[1], data[2])
					keep := RunOptions{Keep: []string{"out"}}
					switch step % 6 {
					case 0, 3: // a kept output, held for a while
						keep.NoWait = step%6 == 3
						res, err := exe.RunWith(ctx, in, keep)
						if err != nil {
							t.Fatal(err)
						}
						held = append(held, kept{res.Kept["out"], want, step})
					case 1: // into a host slice
						if _, err := exe.RunWith(ctx, in, RunOptions{Into: map[string][]float32{"out": host}}); err != nil {
							t.Fatal(err)
						}
						check(step, host, want)
					case 2: // launched, waited for two steps later
						p, err := exe.Launch(ctx, in, keep)
						if err != nil {
							t.Fatal(err)
						}
						launched, launchedWant = append(launched, p), append(launchedWant, want)
					case 4: // c donated: its buffer may become the output's
						keep.Donate = []string{"input2"}
						res, err := exe.RunWith(ctx, in, keep)
						if err != nil {
							t.Fatal(err)
						}
						held = append(held, kept{res.Kept["out"], want, step})
						upload(2)
					case 5: // an input released and uploaded again
						k := r.IntN(3)
						if err := in[names[k]].(*DeviceTensor).Release(); err != nil {
							t.Fatal(err)
						}
						upload(k)
					}
					if step%6 == 4 && len(launched) > 0 { // the launches wait late, after other runs
						for i, p := range launched {
							res, err := p.Wait(ctx)
							if err != nil {
								t.Fatal(err)
							}
							held = append(held, kept{res.Kept["out"], launchedWant[i], step})
						}
						launched, launchedWant = nil, nil
					}
					if len(held) > 3 { // release one held output, not always the oldest
						i := r.IntN(len(held))
						got, err := held[i].t.Read(ctx, nil)
						if err != nil {
							t.Fatal(err)
						}
						check(held[i].step, got, held[i].want)
						if err := held[i].t.Release(); err != nil {
							t.Fatal(err)
						}
						held = append(held[:i], held[i+1:]...)
					}
				}
				for _, p := range launched {
					if _, err := p.Wait(ctx); err != nil {
						t.Fatal(err)
					}
				}
				for _, h := range held {
					got, err := h.t.Read(ctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					check(h.step, got, h.want)
				}
			})
		}
	}
}
