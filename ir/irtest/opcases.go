package irtest

import (
	"strconv"

	"github.com/gpucc/gpucc/ir"
)

// OpCase is one application of an op to arguments of given shapes: what
// the float64 evaluator's and the gradient checks' table walks build for
// every op.
type OpCase struct {
	Op     ir.Op
	Args   []ir.Shape // the tensor arguments' shapes
	Target ir.Shape   // a Shaped op's target shape
	Scalar float32    // a scalar form's operand
	Attrs  []int      // the op's attributes: its defaults (see ir.AttrSpec)
}

// caseShapes are the candidate argument and target shapes: every rank up
// to 3, dims of 1 where broadcasting and keepdims reductions need them, a
// transposable pair and reshapes of 12 elements.
var caseShapes = []ir.Shape{{}, {4}, {12}, {1, 4}, {3, 1}, {3, 4}, {4, 3}, {2, 6}, {2, 3, 4}, {2, 1, 4}, {1, 3, 1}}

// caseScalars are the scalar operands of scalar forms: away from 0 and
// from the magnitudes 0.3, 0.4, … that the gradient checks draw.
var caseScalars = []float32{0.125, -1.75}

// maxCases caps the cases of one op (spread over all that fit).
const maxCases = 6

// OpCases returns the cases of op: the argument shapes (and, for a Shaped
// op, target shapes, other than the argument's own) among a fixed list of
// small candidates that op's row's shape rule accepts, at most six, spread
// over all that fit (for a Shaped op, distinct targets first); a scalar
// form gets each of two scalars. A
// new op gets its cases from its row, without an edit here. Leaves
// (input, full) have none.
func OpCases(op ir.Op) []OpCase {
	info := op.Info()
	var cs []OpCase
	if info.Typed { // no float32 case: Typed() covers the typed rows
		return nil
	}
	if gen, ok := attributedCases[op]; ok {
		return gen()
	}
	attrs, err := ir.PackAttrs(op, nil)
	if err != nil { // a required attribute: no default case
		return nil
	}
	switch {
	case info.Args == 0:
		return nil
	case info.Args == 2:
		for _, a := range caseShapes {
			for _, b := range caseShapes {
				if _, err := ir.InferShape(0, op, []ir.Shape{a, b}, attrs); err == nil {
					cs = append(cs, OpCase{Op: op, Args: []ir.Shape{a, b}, Attrs: attrs})
				}
			}
		}
	case info.Shaped:
		for _, a := range caseShapes {
			for _, s := range caseShapes {
				if !s.Equal(a) && ir.CheckTarget(0, op, a, s) == nil {
					cs = append(cs, OpCase{Op: op, Args: []ir.Shape{a}, Target: s})
				}
			}
		}
	default:
		for _, a := range caseShapes {
			if _, err := ir.InferShape(0, op, []ir.Shape{a}, attrs); err == nil {
				cs = append(cs, OpCase{Op: op, Args: []ir.Shape{a}, Attrs: attrs})
			}
		}
	}
	if info.Shaped {
		cs = byTarget(cs)
	}
	if len(cs) > maxCases {
		spread := make([]OpCase, maxCases)
		for i := range spread {
			spread[i] = cs[i*(len(cs)-1)/(maxCases-1)]
		}
		cs = spread
	}
	if info.Scalar {
		var out []OpCase
		for _, c := range cs {
			for _, s := range caseScalars {
				c.Scalar = s
				out = append(out, c)
			}
		}
		cs = out
	}
	return cs
}

// byTarget orders the cases of a Shaped op for variety and keeps the
// first maxCases: first those whose argument shape and target are both
// new, then those with a new target, then the rest (each in first-seen
// order). A reduction gets a whole, a leading, a trailing, a middle and a
// multi-axis target, a broadcast arguments of several ranks.
func byTarget(cs []OpCase) []OpCase {
	var out []OpCase
	used := make([]bool, len(cs))
	args, targets := map[string]bool{}, map[string]bool{}
	for pass := range 3 {
		for i, c := range cs {
			a, t := shapeName(c.Args[0]), shapeName(c.Target)
			if used[i] || pass < 2 && targets[t] || pass == 0 && args[a] {
				continue
			}
			used[i], args[a], targets[t] = true, true, true
			out = append(out, c)
		}
	}
	return out[:min(len(out), maxCases)]
}

// Graph returns the graph of c over args (one data slice per argument):
// parameters named "a" and "b" holding args, c's node, and the output "y".
func (c OpCase) Graph(args ...[]float32) *ir.Graph {
	g := &ir.Graph{}
	ids := make([]ir.NodeID, len(c.Args))
	for k, s := range c.Args {
		ids[k] = ir.NodeID(len(g.Nodes))
		g.Nodes = append(g.Nodes, ir.Node{Op: ir.OpInput, Shape: s, Data: args[k], Name: "abcd"[k : k+1], Param: true})
	}
	shape := c.Target
	if !c.Op.Info().Shaped {
		s, err := ir.InferShape(len(g.Nodes), c.Op, c.Args, c.Attrs)
		if err != nil {
			panic("irtest: " + err.Error())
		}
		shape = s
	}
	g.Nodes = append(g.Nodes, ir.Node{Op: c.Op, Args: ids, Shape: shape, Scalar: c.Scalar, Attrs: c.Attrs})
	g.Outputs = []ir.Output{{Name: "y", ID: ir.NodeID(len(g.Nodes) - 1)}}
	if err := ir.Validate(g, ir.Limits{}); err != nil {
		panic("irtest: case graph invalid: " + err.Error())
	}
	return g
}

// String names c for subtests: op, argument shapes, target and scalar.
func (c OpCase) String() string {
	s := c.Op.String()
	for _, a := range c.Args {
		s += "/" + shapeName(a)
	}
	if c.Op.Info().Shaped {
		s += "→" + shapeName(c.Target)
	}
	if c.Op.Info().Scalar {
		s += "/" + strconv.FormatFloat(float64(c.Scalar), 'g', -1, 32)
	}
	return s
}

func shapeName(s ir.Shape) string {
	out := "["
	for i, d := range s {
		if i > 0 {
			out += "x"
		}
		out += itoa(d)
	}
	return out + "]"
}

// attributedCases gives the cases of ops with attributes whose shapes are
// not among caseShapes (conv2d's are 4-D).
var attributedCases = map[ir.Op]func() []OpCase{
	ir.OpMaxPool2D:     func() []OpCase { return poolCases(ir.OpMaxPool2D) },
	ir.OpMaxPool2DGrad: func() []OpCase { return poolCases(ir.OpMaxPool2DGrad) },
	ir.OpPermute: func() []OpCase {
		var cs []OpCase
		for _, c := range []struct {
			s    ir.Shape
			perm []int
		}{{ir.Shape{3, 2}, []int{1, 0}}, {ir.Shape{2, 3, 4}, []int{0, 2, 1}}, {ir.Shape{2, 3, 4}, []int{2, 0, 1}}, {ir.Shape{1, 3, 2, 2}, []int{3, 1, 0, 2}}} {
			attrs, err := ir.PackAttrs(ir.OpPermute, map[string][]int{"perm": c.perm})
			if err != nil {
				panic("irtest: " + err.Error())
			}
			cs = append(cs, OpCase{Op: ir.OpPermute, Args: []ir.Shape{c.s}, Attrs: attrs})
		}
		return cs
	},
	ir.OpConv2D: func() []OpCase {
		var cs []OpCase
		for _, c := range []ConvCase{
			{N: 1, C: 2, H: 4, W: 4, M: 3, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}},
			{N: 2, C: 2, H: 3, W: 5, M: 2, KH: 2, KW: 2, Group: 2, Strides: []int{2, 1}, Pads: []int{0, 1, 1, 0}},
			{N: 1, C: 1, H: 5, W: 3, M: 2, KH: 2, KW: 1, Dilations: []int{2, 1}},
		} {
			attrs, err := ir.PackAttrs(ir.OpConv2D, c.Attrs())
			if err != nil {
				panic("irtest: " + err.Error())
			}
			cs = append(cs, OpCase{Op: ir.OpConv2D, Args: []ir.Shape{{c.N, c.C, c.H, c.W}, {c.M, c.C / max(c.Group, 1), c.KH, c.KW}}, Attrs: attrs})
		}
		return cs
	},
}

// poolCases are the cases of maxpool2d and of its gradient (x, and the
// output gradient of maxpool2d's output shape): a plain and an
// overlapping, padded, strided window.
func poolCases(op ir.Op) []OpCase {
	var cs []OpCase
	for _, c := range []PoolCase{
		{N: 1, C: 2, H: 4, W: 4, KH: 2, KW: 2},
		{N: 2, C: 1, H: 3, W: 5, KH: 3, KW: 2, Strides: []int{2, 1}, Pads: []int{1, 0, 1, 1}},
	} {
		attrs, err := ir.PackAttrs(ir.OpMaxPool2D, c.Attrs())
		if err != nil {
			panic("irtest: " + err.Error())
		}
		x := ir.Shape{c.N, c.C, c.H, c.W}
		args := []ir.Shape{x}
		if op == ir.OpMaxPool2DGrad {
			y, err := ir.InferShape(0, ir.OpMaxPool2D, args, attrs)
			if err != nil {
				panic("irtest: " + err.Error())
			}
			args = append(args, y)
		}
		cs = append(cs, OpCase{Op: op, Args: args, Attrs: attrs})
	}
	return cs
}
