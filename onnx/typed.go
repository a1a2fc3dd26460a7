package onnx

import (
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// typedOps maps the ONNX ops that are one elementwise ir row to it, for
// run-time typed values (an integer or float16 input and what is computed
// from it): swap says the operands are reversed (Less is Greater of b, a).
var typedOps = map[string]struct {
	op    ir.Op
	swap  bool
	attrs []string
}{
	"Add": {op: ir.OpAdd}, "Sub": {op: ir.OpSub}, "Mul": {op: ir.OpMul}, "Div": {op: ir.OpDiv}, "Mod": {op: ir.OpMod, attrs: []string{"fmod"}},
	"Max": {op: ir.OpMaximum}, "Min": {op: ir.OpMinimum}, "Neg": {op: ir.OpNeg}, "Relu": {op: ir.OpRelu},
	"Equal": {op: ir.OpEqual}, "Greater": {op: ir.OpGreater}, "GreaterOrEqual": {op: ir.OpGreaterEqual},
	"Less": {op: ir.OpGreater, swap: true}, "LessOrEqual": {op: ir.OpGreaterEqual, swap: true},
	"And": {op: ir.OpAnd}, "Or": {op: ir.OpOr}, "Xor": {op: ir.OpXor}, "Not": {op: ir.OpNot},
	"BitwiseAnd": {op: ir.OpBitAnd}, "BitwiseOr": {op: ir.OpBitOr}, "BitwiseXor": {op: ir.OpBitXor},
	"BitwiseNot": {op: ir.OpBitNot}, "BitShift": {op: ir.OpShiftLeft, attrs: []string{"direction"}}, "Where": {op: ir.OpWhere},
	"Identity": {},
}

// typedNode imports the current node when it reads a run-time typed value
// and is one elementwise row (typedOps): its operands in one dtype (a
// constant converted to it exactly, or refused), numpy's broadcast, ir's
// type rule and cpuref's semantics for the dtype (integer arithmetic
// wraps, a division by zero fails the run). A bool result is the
// importer's float32 1 and 0. It is false for a node without typed
// operands or of another op, which its own rule imports (Cast, Shape, …,
// and rtIn refuses a typed value by name where an op needs float32).
func (c *importer) typedNode() ([]value, bool, *ir.Error) {
	n := c.n
	typed := c.typedIn()
	if special, ok := typedSpecial[n.opType]; ok && typed != ir.F32 {
		vs, err := special(c, typed)
		return vs, true, err
	}
	row, ok := typedOps[n.opType]
	if typed == ir.F32 || !ok {
		return nil, false, nil
	}
	for _, a := range n.attrs {
		if a.ref != "" || a.other != "" || !slices.Contains(row.attrs, a.name) {
			return nil, true, c.refuse("attribute %s of a run-time %v tensor's %s is not supported", ir.Quote(a.name), typed, n.opType)
		}
	}
	if n.opType == "Identity" {
		return []value{*c.in(0)}, true, nil
	}
	info := row.op.Info()
	if len(n.inputs) != info.Args {
		return nil, true, c.refuse("%d inputs of a run-time %v tensor; gpucc's %v takes %d", len(n.inputs), typed, row.op, info.Args)
	}
	fmod := n.opType == "Mod" && c.attrInt("fmod", 0) != 0
	if fmod && !typed.IsInt() {
		return nil, true, c.refuse("Mod with fmod 1 of a run-time %v tensor (C's remainder of floats) is not a row yet", typed)
	}
	if n.opType == "BitShift" {
		switch c.attrStr("direction", "") {
		case "RIGHT":
			row.op = ir.OpShiftRight
		case "LEFT":
		default:
			return nil, true, c.invalid("BitShift's direction is LEFT or RIGHT")
		}
	}
	args := make([]ir.Tensor, len(n.inputs))
	for k := range n.inputs {
		want := typed
		if info.Types.Cond && k == 0 || info.Types.In == ir.SetOf(ir.Bool) {
			want = ir.Bool
		}
		t, err := c.typedOperand(k, want)
		if err != nil {
			return nil, true, err
		}
		args[k] = t
	}
	if row.swap {
		args[0], args[1] = args[1], args[0]
	}
	var y ir.Tensor
	switch {
	case fmod: // C's remainder: a - trunc(a/b)·b, wrapping (by zero the division fails the run)
		y = args[0].Sub(args[0].Apply(ir.OpDiv, args[1]).Mul(args[1]))
	case len(args) == 1:
		y = args[0].Apply(row.op)
	case len(args) == 2:
		y = args[0].ApplyTo(ir.Bool, row.op, args[1])
	default:
		s, ok := ir.BroadcastShape(args[1].Shape(), args[2].Shape())
		if s2, ok2 := ir.BroadcastShape(s, args[0].Shape()); ok && ok2 {
			for k := range args {
				if !args[k].Shape().Equal(s2) {
					args[k] = args[k].Broadcast(s2)
				}
			}
		}
		y = args[0].Where(args[1], args[2])
	}
	if y.DType() == ir.Bool {
		return []value{boolValue(y.Cast(ir.F32))}, true, nil
	}
	return []value{rtValue(y)}, true, nil
}

// typedSpecial are the ONNX ops on run-time typed values that are more
// than one elementwise row.
var typedSpecial = map[string]func(c *importer, t ir.DType) ([]value, *ir.Error){
	"Gather": func(c *importer, _ ir.DType) ([]value, *ir.Error) { return c.typedGather() },
	"Clip":   (*importer).typedClip,
	"Trilu":  (*importer).typedTrilu,
}

// typedClip is Clip of a run-time typed x: maximum with min, then minimum
// with max (numpy's clip; min above max gives max), each bound optional.
func (c *importer) typedClip(t ir.DType) ([]value, *ir.Error) {
	if len(c.n.attrs) > 0 {
		return nil, c.refuse("Clip's attributes (opset 6's min and max) on a run-time %v tensor", t)
	}
	x, err := c.typedOperand(0, t)
	if err != nil {
		return nil, err
	}
	for k, op := range []ir.Op{ir.OpMaximum, ir.OpMinimum} {
		if k+1 >= len(c.n.inputs) || c.n.inputs[k+1] == "" {
			continue
		}
		b, err := c.typedOperand(k+1, t)
		if err != nil {
			return nil, err
		}
		x = x.Apply(op, b)
	}
	return []value{rtValue(x)}, nil
}

// typedTrilu is Trilu where x or k is a run-time typed value: where(keep,
// x, 0) in x's own dtype, keep the triangle (upper: j - i ≥ k; lower:
// j - i ≤ k) over the last two axes: a bool constant for a constant k,
// else the comparison of the constant j - i (int64) with the run-time k.
func (c *importer) typedTrilu(ir.DType) ([]value, *ir.Error) {
	for _, a := range c.n.attrs {
		if a.name != "upper" || a.ref != "" || a.other != "" {
			return nil, c.refuse("attribute %s of Trilu is not supported", ir.Quote(a.name))
		}
	}
	x, err := c.indexedData(0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	if len(s) < 2 {
		return nil, c.invalid("Trilu needs rank 2 or more, got %v", s)
	}
	upper := c.attrInt("upper", 1) != 0
	n, m := s[len(s)-2], s[len(s)-1]
	tri := ir.Shape{n, m}
	var keep ir.Tensor
	if kv := c.in(1); kv != nil && kv.set {
		k, err := c.indices(1) // an int64 (or int32) scalar
		if err != nil {
			return nil, err
		}
		if k.Shape().Len() != 1 {
			return nil, c.invalid("k has shape %v, not one element", k.Shape())
		}
		d := make([]int64, n*m)
		for e := range d {
			d[e] = int64(e%m - e/m)
		}
		diag := c.b.TypedInput("", k.DType(), tri, nil, d)
		kb := k.Reshape(ir.Shape{}).Broadcast(tri)
		if upper {
			keep = diag.ApplyTo(ir.Bool, ir.OpGreaterEqual, kb)
		} else {
			keep = kb.ApplyTo(ir.Bool, ir.OpGreaterEqual, diag)
		}
	} else {
		k := int64(0)
		if kv != nil {
			ks, err := c.ints(1, "k")
			if err != nil {
				return nil, err
			}
			if len(ks) != 1 {
				return nil, c.invalid("k holds %d values, not one", len(ks))
			}
			k = ks[0]
		}
		bits := make([]int64, n*m)
		for e := range bits {
			if j := int64(e%m - e/m); upper && j >= k || !upper && j <= k {
				bits[e] = 1
			}
		}
		keep = c.b.TypedInput("", ir.Bool, tri, nil, bits)
	}
	if !tri.Equal(s) {
		keep = keep.Broadcast(s)
	}
	return []value{rtValue(keep.Where(x, c.b.FullOf(x.DType(), s, 0, 0)))}, nil
}

// typedGather imports Gather with run-time data or indices of a typed
// dtype: ir's gather (an index outside its axis fails the run with
// invalid_input). Data of float32 or a constant is embedded as it is;
// constant indices become int64.
func (c *importer) typedGather() ([]value, *ir.Error) {
	for _, a := range c.n.attrs {
		if a.name != "axis" || a.ref != "" || a.other != "" {
			return nil, c.refuse("attribute %s of Gather is not supported", ir.Quote(a.name))
		}
	}
	if len(c.n.inputs) != 2 {
		return nil, c.invalid("Gather takes 2 inputs, has %d", len(c.n.inputs))
	}
	data, err := c.indexedData(0)
	if err != nil {
		return nil, err
	}
	idx, err := c.indices(1)
	if err != nil {
		return nil, err
	}
	axis := int(c.attrInt("axis", 0))
	if r := len(data.Shape()); axis < -r || axis >= r {
		return nil, c.invalid("axis %d is outside a tensor of rank %d", axis, r)
	}
	return []value{rtValue(data.Gather(idx, axis))}, nil
}

// typedIn returns the dtype of the current node's first run-time typed
// input, or float32 when it has none.
func (c *importer) typedIn() ir.DType {
	for k := range c.n.inputs {
		if v := c.in(k); v != nil && v.set && v.rt.DType() != ir.F32 {
			return v.rt.DType()
		}
	}
	return ir.F32
}

// typedOperand returns input k as a run-time tensor of dtype t: a typed
// value of t as it is, a run-time bool (the importer's 1 and 0) as bool, a
// constant converted exactly (an integer constant of t's range, a float
// constant of t's values), else refused by name.
func (c *importer) typedOperand(k int, t ir.DType) (ir.Tensor, *ir.Error) {
	v := c.in(k)
	if v == nil {
		return ir.Tensor{}, c.invalid("input %d is missing", k)
	}
	switch {
	case v.set && v.rt.DType() == t:
		return v.rt, nil
	case v.set && v.isBool && t == ir.Bool:
		return v.rt.Cast(ir.Bool), nil
	case v.set:
		return ir.Tensor{}, c.refuse("input %d is a run-time %v tensor where %v is needed (Cast it first)", k, v.rt.DType(), t)
	}
	ct := v.c
	if len(ct.Shape) > ir.MaxRank || ct.Len() == 0 {
		return ir.Tensor{}, c.refuse("input %d, a constant of shape %v", k, ct.Shape)
	}
	s := ir.Shape(slices.Clone(ct.Shape))
	if t.IsFloat64() {
		if ct.Type != Float64 {
			return ir.Tensor{}, c.refuse("input %d, a %v constant, where %v is needed", k, ct.Type, t)
		}
		return c.b.TypedInput("", t, s, nil, ct.carried()), nil
	}
	if t.IsFloat() {
		if ct.Type != Float32 {
			return ir.Tensor{}, c.refuse("input %d, a %v constant, where %v is needed", k, ct.Type, t)
		}
		for _, x := range ct.Float32 {
			if !t.Holds(x) || x != x || x-x != 0 {
				return ir.Tensor{}, c.refuse("input %d holds %v, not a finite %v", k, x, t)
			}
		}
		return c.b.TypedInput("", t, s, ct.Float32, nil), nil
	}
	if !ct.Type.isInt() {
		return ir.Tensor{}, c.refuse("input %d, a %v constant, where %v is needed", k, ct.Type, t)
	}
	lo, hi := t.Range()
	for _, x := range ct.Int64 {
		if x < lo || x > hi {
			return ir.Tensor{}, c.refuse("input %d holds %d, outside %v's range", k, x, t)
		}
	}
	return c.b.TypedInput("", t, s, nil, ct.Int64), nil
}
