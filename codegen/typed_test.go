package codegen_test

import (
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
