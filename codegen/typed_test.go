package codegen_test

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// evalInt is the meaning of an int64 expression, as the primitives'
// comments in codegen/typed.go state it: the specification each target's
// IntLang renders.
func evalInt(x *codegen.IntX, a, b int64) int64 {
	v := func(k int) int64 { return evalInt(x.Args[k], a, b) }
	b2i := func(c bool) int64 {
		if c {
			return 1
		}
		return 0
	}
	switch x.Op {
	case codegen.IArg:
		return []int64{a, b}[x.Arg]
	case codegen.IConst:
		return x.Val
	case codegen.IAdd:
		return v(0) + v(1)
	case codegen.ISub:
		return v(0) - v(1)
	case codegen.IMul:
		return v(0) * v(1)
	case codegen.INeg:
		return -v(0)
	case codegen.IDiv:
		return v(0) / v(1) // Go's MinInt64 / -1 wraps to MinInt64
	case codegen.IMod:
		p, q := v(0), v(1)
		r := p % q
		if r != 0 && (r < 0) != (q < 0) {
			r += q
		}
		return r
	case codegen.IAnd:
		return v(0) & v(1)
	case codegen.IOr:
		return v(0) | v(1)
	case codegen.IXor:
		return v(0) ^ v(1)
	case codegen.IBitNot:
		return ^v(0)
	case codegen.IShl:
		return int64(uint64(v(0)) << uint64(v(1)))
	case codegen.IShr:
		return int64(uint64(v(0)) >> uint64(v(1)))
	case codegen.ILt:
		return b2i(v(0) < v(1))
	case codegen.IEq:
		return b2i(v(0) == v(1))
	case codegen.INot:
		return 1 - v(0)
	case codegen.ISelect:
		if v(0) != 0 {
			return v(1)
		}
		return v(2)
	case codegen.IBool:
		return v(0)
	}
	panic("evalInt: " + x.Op.String())
}

// TestTypedIntRowsMeanTheirRules: every integer row of codegen's table
// (TypedIntRows), on every dtype its op takes, gives its op's integer
// rule (ir.OpInfo.Int, cpuref's) once wrapped to the result's dtype, over
// each dtype's extremes paired with each other (the divisors of a guarded
// row kept from zero), and a guarded row is exactly one whose rule has no
// answer at b = 0. The targets render these rows; their own tests compare
// the rendered kernels with cpuref.
func TestTypedIntRowsMeanTheirRules(t *testing.T) {
	for _, op := range ir.Ops() {
		info := op.Info()
		if info.Int == nil {
			continue
		}
		row, ok := codegen.TypedIntRows[op]
		if !ok {
			t.Fatalf("%v has an integer rule and no row", op)
		}
		for _, dt := range ir.DTypes() {
			if dt.IsFloat() || !info.Types.In.Has(dt) {
				continue
			}
			if _, ok := info.Int(dt, 1, 0); ok == row.Guard {
				t.Errorf("%v: Guard %v, but its rule at b = 0 answers %v", op, row.Guard, ok)
			}
			vals := irtest.IntExtremes(dt, 32, 24)
			x := row.Expr(dt)
			for _, a := range vals {
				for _, b := range vals {
					want, ok := info.Int(dt, a, b)
					if !ok {
						continue // b = 0 of a guarded row: the kernel faults instead
					}
					if got := evalInt(x, a, b); dt.Wrap(got) != dt.Wrap(want) {
						t.Errorf("%v of %v (%d, %d) = %d, rule %d", op, dt, a, b, dt.Wrap(got), dt.Wrap(want))
					}
				}
			}
		}
	}
}

// TestIntLangComplete: a target's rendering table without a primitive is
// refused by name, as each target's init refuses its own.
func TestIntLangComplete(t *testing.T) {
	var l codegen.IntLang
	if err := codegen.CheckIntLang(&l); err == nil {
		t.Error("an empty IntLang passes")
	}
}

// castByRule is what a target computes for a cast by codegen.TypedCast's
// rule, the store's rounding or wrapping included, as the rule's comments
// state it.
func castByRule(r codegen.TypedCastRule, to ir.DType, f float32, i int64) (float32, int64, bool) {
	switch r.Kind {
	case codegen.CastFloatBool:
		return 0, b2i(f != 0 || f != f), true
	case codegen.CastIntBool:
		return 0, b2i(i != 0), true
	case codegen.CastIntFloat: // round |i| to r.Bits significant bits, ties to even
		u, neg := uint64(i), i < 0
		if neg {
			u = -u
		}
		n := 0
		for w := u; w != 0; w >>= 1 {
			n++
		}
		if n > r.Bits {
			sh := n - r.Bits
			q, rem, half := u>>sh, u&(1<<sh-1), uint64(1)<<(sh-1)
			if rem > half || rem == half && q&1 == 1 {
				q++
			}
			u = q << sh
		}
		v := float32(u) // exact: at most Bits+1 significant bits
		if neg {
			v = -v
		}
		return to.Round(v), 0, true
	case codegen.CastFloatInt:
		if f != f || math.IsInf(float64(f), 0) {
			return 0, 0, false
		}
		t := math.Trunc(float64(f))
		if t < float64(r.Lo) || t > float64(r.Hi) || t == 0x1p63 {
			return 0, 0, false
		}
		return 0, int64(t), true
	}
	if to.IsFloat() {
		return to.Round(f), 0, true
	}
	return 0, to.Wrap(i), true
}

func b2i(c bool) int64 {
	if c {
		return 1
	}
	return 0
}

// TestTypedCastRules: the rule every target renders a cast by
// (codegen.TypedCast) gives ir.Convert's value (cpuref's) or its fault for
// every pair of dtypes over each dtype's extremes (float NaN, ±Inf,
// subnormals, the range's edges; integers at ±2^31, ±2^63, ties of
// integer-to-float rounding).
func TestTypedCastRules(t *testing.T) {
	for _, from := range ir.DTypes() {
		var fs []float32
		var is []int64
		if from.IsFloat() {
			fs = irtest.FloatExtremes(from, 32, 64)
			fs = append(fs, 0x1p31, -0x1p31, 0x1p31-128, 0x1p63, -0x1p63, 255.9, 256, -128.5, -129, 4294967295, 4294967296)
			for range fs {
				is = append(is, 0)
			}
		} else {
			is = irtest.IntExtremes(from, 32, 64)
			if from != ir.Bool {
				is = append(is, from.Wrap(1<<24+1), from.Wrap(1<<24+3), from.Wrap(-(1<<53 + 1)), from.Wrap(2049), from.Wrap(-4097))
			}
			for range is {
				fs = append(fs, 0)
			}
		}
		for _, to := range ir.DTypes() {
			r := codegen.TypedCast(from, to)
			for k := range fs {
				wf, wi, wok := ir.Convert(from, to, fs[k], is[k])
				gf, gi, gok := castByRule(r, to, fs[k], is[k])
				if wok != gok || wok && (math.Float32bits(wf) != math.Float32bits(gf) && !(wf != wf && gf != gf) || wi != gi) {
					t.Errorf("cast %v -> %v of (%g, %d): rule %+v gives (%g, %d, %v), ir.Convert (%g, %d, %v)", from, to, fs[k], is[k], r, gf, gi, gok, wf, wi, wok)
				}
			}
		}
	}
}
