package onnx

import "github.com/gpucc/gpucc/ir"

// powInt is Pow of a run-time integer base by an integer exponent, in the
// base's dtype: repeated squaring over the exponent's bits, each product
// wrapping as numpy's integer power does. A negative exponent gives what
// the exact power truncates to: 1 for a base of 1, ±1 for -1 (by the
// exponent's parity), 0 for any other base, and a base of 0 fails the run
// (an integer division by zero), where numpy raises.
//
// A uint64 base is raised in int64, whose products wrap to the same low
// 64 bits, and cast back (a power of 2^63 or more has no uint64 carrier
// and fails the run there, as its product would): uint64's own products
// fail the run at 2^63, and the squarings past the exponent's top bit
// made every base of 2 or more fail (3^1 was refused; the fold gave 3).
func (c *importer) powInt(x, y ir.Tensor) ([]value, *ir.Error) {
	dt := x.DType()
	if dt == ir.U64 {
		vs, err := c.powInt(x.Cast(ir.I64), y)
		if err != nil {
			return nil, err
		}
		return one(rtValue(vs[0].rt.Cast(ir.U64)))
	}
	if y.DType() != ir.I64 {
		y = y.Cast(ir.I64)
	}
	s, ok := ir.BroadcastShape(x.Shape(), y.Shape())
	if !ok {
		return nil, c.invalid("shapes %v and %v do not broadcast", x.Shape(), y.Shape())
	}
	if !x.Shape().Equal(s) {
		x = x.Broadcast(s)
	}
	if !y.Shape().Equal(s) {
		y = y.Broadcast(s)
	}
	full := func(t ir.DType, v int64) ir.Tensor { return c.b.FullOf(t, s, 0, v) }
	bits := 64
	if lo, hi := dt.Range(); lo >= -1<<31 && hi <= 1<<32 {
		bits = 32 // a larger exponent of a base other than 0 and ±1 wraps to 0 past 32 squarings too
	}
	r, b := full(dt, 1), x
	for i := range bits {
		m := int64(1) << i
		if i == 63 {
			m = -1 << 63
		}
		clear := y.ApplyTo(ir.I64, ir.OpBitAnd, full(ir.I64, m)).ApplyTo(ir.Bool, ir.OpEqual, full(ir.I64, 0))
		r = clear.Where(r, r.Mul(b))
		b = b.Mul(b)
	}
	if bits == 32 { // the exponent's bits past 31 (squarings past 32 leave b 0, 1 or -1·…)
		big := y.ApplyTo(ir.Bool, ir.OpGreater, full(ir.I64, 1<<32-1))
		r = big.Where(r.Mul(b), r)
	}
	neg := full(ir.I64, 0).ApplyTo(ir.Bool, ir.OpGreater, y)
	unit, zero := full(dt, 1), full(dt, 0)
	negVal := x.ApplyTo(ir.Bool, ir.OpEqual, unit).Where(unit, zero)
	if lo, _ := dt.Range(); lo < 0 {
		odd := y.ApplyTo(ir.I64, ir.OpBitAnd, full(ir.I64, 1)).ApplyTo(ir.Bool, ir.OpEqual, full(ir.I64, 1))
		minus := full(dt, -1)
		negVal = x.ApplyTo(ir.Bool, ir.OpEqual, minus).Where(odd.Where(minus, unit), negVal)
	}
	zeroNeg := x.ApplyTo(ir.Bool, ir.OpEqual, zero).ApplyTo(ir.Bool, ir.OpAnd, neg)
	fault := unit.Apply(ir.OpDiv, zeroNeg.Where(zero, unit)) // 1, or a division by zero that fails the run
	return one(rtValue(neg.Where(negVal, r).Mul(fault)))
}
