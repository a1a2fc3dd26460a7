package onnx

import "github.com/gpucc/gpucc/ir"

// bitwiseOp is BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot (opset 18)
// or BitShift (opset 11, op by its direction) of integer constants,
// folded by op's row (ir.OpInfo.Int: the rule cpuref.EvalTyped computes
// the same op of run-time inputs by) and wrapped to the dtype, so that a
// fold gives the run time's bits (TestFoldMatchesRunTime): a shift by the
// width or more gives 0, as numpy's and ONNX's reference do; a uint64
// result of 2^63 or more, which no int64 carrier holds, is refused as the
// run time refuses it. Run-time integer operands are typed.go's rows; a
// float operand is invalid_graph (ONNX's constraints take integers, and
// BitShift unsigned ones only), as ONNX Runtime refuses such a model.
// Before, every fold of these was refused (unsupported): 5,258 of
// TestFoldMatchesRunTime's pairs that the run time computes.
func bitwiseOp(op ir.Op) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		op := op
		if c.n.opType == "BitShift" {
			switch c.attrStr("direction", "") {
			case "LEFT":
				op = ir.OpShiftLeft
			case "RIGHT":
				op = ir.OpShiftRight
			default:
				return nil, c.invalid("BitShift's direction is LEFT or RIGHT")
			}
		}
		info := op.Info()
		if c.nin() != info.Args {
			return nil, c.invalid("%d inputs; %s takes %d", c.nin(), c.n.opType, info.Args)
		}
		ts := make([]*Tensor, info.Args)
		for k := range ts {
			v := c.in(k)
			switch {
			case v == nil:
				return nil, c.invalid("input %d is missing", k)
			case v.set && v.isInt:
				return nil, c.refuse("input %d is an integer computed at run time as float32 (ArgMax's indices); %s needs it typed", k, c.n.opType)
			case v.set:
				return nil, c.invalid("input %d is a run-time %v tensor; %s takes integers", k, v.rt.DType(), c.n.opType)
			case !v.c.Type.isInt():
				return nil, c.invalid("input %d is %v; %s takes integers", k, v.c.Type, c.n.opType)
			case v.c.Type != c.in(0).c.Type:
				return nil, c.invalid("operands of types %v and %v", c.in(0).c.Type, v.c.Type)
			}
			ts[k] = v.c
		}
		dt := ts[0].Type
		t, ok := dt.irDType()
		if !ok {
			return nil, c.refuse("%s of %v, a type gpucc does not hold", c.n.opType, dt)
		}
		if !info.Types.In.Has(t) {
			return nil, c.invalid("%s of %v: it takes %v", c.n.opType, dt, info.Types.In)
		}
		r, err := c.elementwise(dt, func(x []number) (number, *ir.Error) {
			var b int64
			if len(x) > 1 {
				b = x[1].i
			}
			v, _ := info.Int(t, x[0].i, b) // a bitwise op or shift never faults
			if v = t.Wrap(v); !t.InRange(v) {
				return number{}, c.refuse("%s of uint64 gives %d's bits as 2^63 or more, which gpucc's uint64 (carried in int64) does not hold", c.n.opType, v)
			}
			return number{i: v}, nil
		}, ts...)
		if err != nil {
			return nil, err
		}
		return one(constValue(r))
	}
}
