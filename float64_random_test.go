package gpucc_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// randomF64Values returns n float64 values: binary64's extremes
// (f64Extremes) and random values of every magnitude, signs mixed.
func randomF64Values(r *rand.Rand, n int) []int64 {
	out := make([]int64, n)
	for k := range out {
		var x float64
		switch r.IntN(4) {
		case 0:
			x = f64Extremes[r.IntN(len(f64Extremes))]
		case 1:
			x = math.Float64frombits(r.Uint64()) // any bits: NaNs, subnormals, huge
		case 2:
			x = (r.Float64()*2 - 1) * 10
		default:
			x = math.Ldexp(r.Float64()+0.5, r.IntN(2100)-1075)
			if r.IntN(2) == 0 {
				x = -x
			}
		}
		out[k] = ir.F64Bits(x)
	}
	return out
}

// randomF64Graph returns a random valid graph over float64: leaves of
// random values (randomF64Values), then ops drawn from every elementwise
// row of the op table that takes float64 (so that a new float64 row is
// drawn without an edit here), comparisons feeding where, the sum and max
// reductions broadcast back, views, and casts through float32, float16,
// bfloat16, int32 and bool and back; every output float64 or bool. Its
// outputs may hold NaN and ±Inf (run it under Limits.NonFinite); it has
// no cast with no answer.
func randomF64Graph(seed uint64, steps int) *ir.Graph {
	r := rand.New(rand.NewPCG(seed, 64))
	b := ir.NewBuilder()
	s := ir.Shape{4, 6}
	var rows []ir.Op
	for _, op := range ir.Ops() {
		info := op.Info()
		if info.Elementwise && info.Types.In.Has(ir.F64) && !info.Types.Cond && info.Args >= 1 && info.Args <= 2 && op != ir.OpCast && info.ScalarOf == 0 {
			rows = append(rows, op)
		}
	}
	ts := []ir.Tensor{}
	for range 3 {
		ts = append(ts, b.TypedInput("", ir.F64, s, nil, randomF64Values(r, s.Len())))
	}
	pick := func() ir.Tensor { return ts[r.IntN(len(ts))] }
	var bools []ir.Tensor
	for range steps {
		x := pick()
		var y ir.Tensor
		switch k := r.IntN(10); {
		case k < 5:
			op := rows[r.IntN(len(rows))]
			args := []ir.Tensor{}
			if op.Info().Args == 2 {
				args = append(args, pick())
			}
			if op.Info().Types.Out == ir.OutBool {
				bools = append(bools, x.ApplyTo(ir.Bool, op, args...))
				continue
			}
			y = x.Apply(op, args...)
		case k == 5 && len(bools) > 0:
			y = bools[r.IntN(len(bools))].Where(x, pick())
		case k == 6:
			red := ir.OpSum
			if r.IntN(2) == 0 {
				red = ir.OpMax
			}
			axis := r.IntN(2)
			keep := ir.Shape{4, 6}
			keep[axis] = 1
			y = x.ApplyShaped(red, keep).Broadcast(s)
		case k == 7:
			y = x.T().Reshape(s)
		default:
			via := []ir.DType{ir.F32, ir.F16, ir.BF16, ir.Bool, ir.I32}[r.IntN(5)]
			if via == ir.I32 { // within int32's range: the minimum with 2^31-1 and the maximum with -2^31, NaN to 0 first
				clean := x.ApplyTo(ir.Bool, ir.OpEqual, x).Where(x, b.FullOf(ir.F64, s, 0, ir.F64Bits(0)))
				lo, hi := b.FullOf(ir.F64, s, 0, ir.F64Bits(-0x1p31)), b.FullOf(ir.F64, s, 0, ir.F64Bits(0x1p31-1))
				x = clean.Apply(ir.OpMinimum, hi).Apply(ir.OpMaximum, lo)
			}
			y = x.Cast(via).Cast(ir.F64)
		}
		ts = append(ts, y)
	}
	for k, t := range ts[3:] {
		b.Output(fmt.Sprintf("t%d", k), t)
	}
	for k, t := range bools {
		b.Output(fmt.Sprintf("c%d", k), t)
	}
	g, err := b.Build(ir.Limits{NonFinite: true, MaxOutputs: 128})
	if err != nil {
		panic(fmt.Sprintf("seed %d: %v", seed, err))
	}
	return g
}

// TestFloat64Random: random float64 graphs (randomF64Graph: every
// float64 row of the op table over binary64's extremes and random bits,
// chained, with where, reductions, views and casts) give the reference's
// bits on native and wasm, every output, every NaN canonical.
func TestFloat64Random(t *testing.T) {
	ctx := context.Background()
	graphs := 24
	if testing.Short() {
		graphs = 6
	}
	many := func(o *gpucc.Options) { o.Limits.MaxOutputs = 128 }
	cpu := open(t, "cpu", withNonFinite, many)
	for _, name := range []string{"native", "wasm"} {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name, withNonFinite, many)
			for seed := range uint64(graphs) {
				g := randomF64Graph(seed, 40)
				want, err := cpu.Run(ctx, g)
				if err != nil {
					t.Fatalf("seed %d on cpu: %v", seed, err)
				}
				got, err := rt.Run(ctx, g)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				for o, w := range want.Outputs {
					checkCanonicalNaN(t, name, o, got.Outputs[o])
					if why := sameBits(w, got.Outputs[o]); why != "" {
						t.Errorf("seed %d output %s: %s", seed, o, why)
					}
				}
			}
		})
	}
}
