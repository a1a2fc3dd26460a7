package cpuref

import "github.com/gpucc/gpucc/ir"

// Scatter is the reference of scatter_nd and scatter_elements (node i of
// op, its map s): data's copy with the updates applied one at a time in
// row-major order over their shape, each to the element its index names
// (ir.Scatter.Targets), by the reduction (ir/scatter.go). An index outside
// its bounds fails the run with invalid_input naming it, before anything
// is written. It costs the data plus the updates.
func Scatter(i int, op ir.Op, s ir.Scatter, data, upd, idx Value) (Value, error) {
	targets, bad, ok := s.Targets(idx.I)
	if !ok {
		k := len(s.Bounds)
		d := s.Bounds[bad%k]
		return Value{}, ir.Errorf(ir.CodeInvalidInput, i, "c", "%v: index %d (element %d) is outside [%d, %d) of its dimension", op, idx.I[bad], bad, -d, d)
	}
	t := data.DType
	out := Value{DType: t}
	comb := s.Reduction.Combine()
	switch {
	case t.IsFloat():
		out.F = append([]float32(nil), data.F...)
		if comb == ir.OpInvalid {
			for u, at := range targets {
				out.F[at] = upd.F[u]
			}
			break
		}
		x := compile(comb.Info().Expr)
		for u, at := range targets {
			out.F[at] = t.Round(x.run(out.F[at], upd.F[u], exact))
		}
	case t.IsFloat64():
		out.I = append([]int64(nil), data.I...)
		if comb == ir.OpInvalid {
			for u, at := range targets {
				out.I[at] = upd.I[u]
			}
			break
		}
		f := comb.Info().F64
		for u, at := range targets {
			out.I[at] = ir.F64Bits(f(ir.F64Value(out.I[at]), ir.F64Value(upd.I[u])))
		}
	default:
		out.I = append([]int64(nil), data.I...)
		if comb == ir.OpInvalid {
			for u, at := range targets {
				out.I[at] = upd.I[u]
			}
			break
		}
		rule := comb.Info().Int
		for u, at := range targets {
			v, _ := rule(t, out.I[at], upd.I[u])
			out.I[at] = t.Wrap(v)
		}
		// A uint64 result of 2^63 or more has no carrier; one that passes
		// 2^63 on its way and wraps back below does (as a reduction's).
		for e, v := range out.I {
			if !t.InRange(v) {
				return Value{}, beyondU64(i, op, e)
			}
		}
	}
	return out, nil
}
