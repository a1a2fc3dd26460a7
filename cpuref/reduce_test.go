package cpuref_test

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// naive is the reduction as the package doc states it, written
// independently: for each output, its leaves gathered by walking the
// multi-index (reduced axes in row-major order), padded with the identity
// to a power of two and reduced by the recursive pairwise tree.
func naive(op ir.Op, x []float32, arg, keep ir.Shape) []float32 {
	whole := keep.Len() == 1
	strides := make([]int, len(arg))
	s := 1
	for d := len(arg) - 1; d >= 0; d-- {
		strides[d] = s
		s *= arg[d]
	}
	var out []float32
	idx := make([]int, len(arg))
	var outputs func(d int)
	outputs = func(d int) {
		if d == len(arg) {
			var leaves []float32
			var walk func(d, off int)
			walk = func(d, off int) {
				if d == len(arg) {
					leaves = append(leaves, x[off])
					return
				}
				if whole || keep[d] == 1 {
					for i := 0; i < arg[d]; i++ {
						walk(d+1, off+i*strides[d])
					}
					return
				}
				walk(d+1, off+idx[d]*strides[d])
			}
			walk(0, 0)
			p := 1
			for p < len(leaves) {
				p *= 2
			}
			for len(leaves) < p {
				leaves = append(leaves, math.Float32frombits(op.Info().Identity))
			}
			var tree func(l []float32) float32
			tree = func(l []float32) float32 {
				if len(l) == 1 {
					return l[0]
				}
				return cpuref.Binary(op.Info().Combine, tree(l[:len(l)/2]), tree(l[len(l)/2:]))
			}
			out = append(out, tree(leaves))
			return
		}
		n := arg[d]
		if whole || keep[d] == 1 {
			n = 1
		}
		for i := 0; i < n; i++ {
			idx[d] = i
			outputs(d + 1)
		}
	}
	outputs(0)
	return out
}

func sameBits(t *testing.T, name string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Errorf("%s[%d] = %v (%#x), want %v (%#x)", name, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			return
		}
	}
}

// TestReduceTree: Reduce gives the documented tree for every subset of
// the axes of 1-D to 4-D shapes, for sum and max, over values with ±0 and
// extremes (overflow, ties).
func TestReduceTree(t *testing.T) {
	for _, arg := range []ir.Shape{{7}, {1}, {5, 3}, {1, 6}, {3, 4, 5}, {2, 1, 3}, {2, 3, 2, 5}} {
		for mask := 0; mask < 1<<len(arg); mask++ {
			keep := append(ir.Shape{}, arg...)
			for d := range arg {
				if mask>>d&1 == 1 {
					keep[d] = 1
				}
			}
			for _, vals := range [][]float32{irtest.Values(uint64(mask), arg.Len(), 10), irtest.Extremes(uint64(mask), arg.Len())} {
				for _, op := range []ir.Op{ir.OpSum, ir.OpMax} {
					name := op.String() + arg.String() + "->" + keep.String()
					sameBits(t, name, cpuref.Reduce(op, vals, arg, keep), naive(op, vals, arg, keep))
				}
			}
		}
	}
}

// TestReduceAllAxesIsWholeSum: summing over every axis, with keepdims or
// not, is bit-identical to the whole-tensor sum.
func TestReduceAllAxesIsWholeSum(t *testing.T) {
	x := irtest.Values(9, 3*5*7, 1e4)
	want := cpuref.Sum(x)
	for _, keep := range []bool{false, true} {
		b := ir.NewBuilder()
		in := b.Input(ir.Shape{3, 5, 7}, x)
		b.Output("axes", in.SumAxes(keep, 0, 1, 2))
		b.Output("all", in.SumAxes(keep))
		b.Output("sum", in.Sum())
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		vals := cpuref.Eval(g)
		for _, o := range g.Outputs {
			sameBits(t, o.Name, vals[o.ID], []float32{want})
		}
	}
}

// TestReduceExtremes pins the rows of irtest's extremes case.
func TestReduceExtremes(t *testing.T) {
	big, nz := float32(3e38), float32(math.Copysign(0, -1))
	inf := float32(math.Inf(1))
	x := []float32{big, big, big, big, -big, -big, -big, -big, big, -big, big, -big, big, big, -big, -big, nz, nz, nz, nz}
	got := cpuref.Reduce(ir.OpSum, x, ir.Shape{5, 4}, ir.Shape{5, 1})
	want := []float32{inf, -inf, 0, float32(math.NaN()), nz}
	for i := range want {
		if got[i] != want[i] && !(want[i] != want[i] && got[i] != got[i]) || math.Signbit(float64(got[i])) != math.Signbit(float64(want[i])) && want[i] == want[i] {
			t.Errorf("row %d: sum %v, want %v", i, got[i], want[i])
		}
	}
	m := cpuref.Reduce(ir.OpMax, []float32{nz, 0, nz, nz, 0, nz, 3, 3}, ir.Shape{4, 2}, ir.Shape{4, 1})
	sameBits(t, "max", m, []float32{0, nz, 0, 3})
}
