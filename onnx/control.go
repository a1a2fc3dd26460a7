package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// Control flow: If. Its branches are graphs without inputs that read the
// outer graph's values by name. A condition known at import (a constant,
// an initializer, an input fixed by Options.Constants, or what folds from
// them) imports the chosen branch's nodes inline. A run-time condition
// imports both branches and selects each output with where (compose.go):
// both branches run, and each output is the chosen branch's, bit for bit;
// it needs the branches' outputs to agree in shape and dtype, else the
// node is refused by name.

// ifOp imports If (every opset: its attributes are the two branches).
func ifOp(c *importer) ([]value, *ir.Error) {
	thenA, elseA := c.attr("then_branch"), c.attr("else_branch")
	if thenA == nil || thenA.g == nil || elseA == nil || elseA.g == nil {
		return nil, c.invalid("needs the graph attributes then_branch and else_branch")
	}
	cv := c.in(0)
	if !cv.set {
		t := cv.c
		if t.Type != Bool || t.Len() != 1 {
			return nil, c.invalid("the condition is a %v tensor of shape %v, not one bool", t.Type, t.Shape)
		}
		if t.Int64[0] != 0 {
			return c.branch(thenA.g, "then_branch", len(c.n.outputs))
		}
		return c.branch(elseA.g, "else_branch", len(c.n.outputs))
	}
	if !cv.isBool {
		return nil, c.invalid("the condition is a run-time %v tensor, not bool", cv.rt.DType())
	}
	if n := cv.rt.Shape().Elements(1); n != 1 {
		return nil, c.invalid("the condition has shape %v, not one element", cv.rt.Shape())
	}
	a, err := c.branch(thenA.g, "then_branch", len(c.n.outputs))
	if err != nil || c.failed >= 0 {
		return a, c.bothBranches(err, "then_branch")
	}
	b, err := c.branch(elseA.g, "else_branch", len(c.n.outputs))
	if err != nil || c.failed >= 0 {
		return b, c.bothBranches(err, "else_branch")
	}
	cond := cv.rt
	if len(cond.Shape()) > 0 {
		cond = cond.Reshape(ir.Shape{})
	}
	outs := make([]value, len(a))
	for k := range a {
		if outs[k], err = c.selectOutput(cond, &a[k], &b[k], k); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// bothBranches is the error of a branch imported for a run-time
// condition: one that is invalid at these shapes (the branch a model
// takes only for another input, as Silero VAD's 8 kHz branch for a
// 512-sample frame) makes the If unsupported, naming the way out, since
// the model itself may be valid.
func (c *importer) bothBranches(err *ir.Error, attr string) *ir.Error {
	if err == nil || err.Code != ir.CodeInvalidGraph {
		return err
	}
	return ir.Errorf(ir.CodeUnsupported, -1, err.Field, "If node %s (opset %d): its condition is computed at run time, so both branches are imported, and %s cannot be at these shapes (%s); fix the condition's inputs at import (Options.Constants, gpucc --const)", ir.Quote(c.n.name), c.opset, attr, err.Msg)
}

// selectOutput is output k of an If on the run-time condition cond (a
// float32 scalar of 1 or 0): the then branch's value x where cond is 1,
// else's y. Two equal constants are that constant; float32 and bool
// values select with where; two values of another dtype select with ir's
// where of that dtype.
func (c *importer) selectOutput(cond ir.Tensor, x, y *value, k int) (value, *ir.Error) {
	sx, sy := x.shape(), y.shape()
	if !slices.Equal(sx, sy) {
		return value{}, c.refuse("output %d has shape %v in then_branch and %v in else_branch; gpucc selects between branches at run time only when their outputs agree in shape", k, sx, sy)
	}
	if !x.set && !y.set && x.c.equal(y.c) {
		return *x, nil
	}
	tx, ty := c.valueType(x), c.valueType(y)
	if tx != ty {
		return value{}, c.refuse("output %d is %s in then_branch and %s in else_branch; gpucc selects between branches at run time only when their outputs agree in dtype", k, tx, ty)
	}
	switch tx {
	case "float32", "bool":
		xt, err := c.runtime(x, fmt.Sprintf("output %d of then_branch", k))
		if err != nil {
			return value{}, err
		}
		yt, err := c.runtime(y, fmt.Sprintf("output %d of else_branch", k))
		if err != nil {
			return value{}, err
		}
		return value{rt: where(cond, xt, yt), set: true, isBool: tx == "bool"}, nil
	}
	if !x.set || !y.set || x.isInt || y.isInt {
		return value{}, c.refuse("output %d is a %s value that differs between the branches; gpucc selects at run time between float32, bool and run-time typed values", k, tx)
	}
	return rtValue(cond.Cast(ir.Bool).Where(x.rt, y.rt)), nil
}

// valueType names v's element type for selectOutput: "float32", "bool",
// a run-time typed value's dtype, a constant's ONNX type, or "integer
// (run-time)" for the importer's float32 integers.
func (c *importer) valueType(v *value) string {
	switch {
	case v.set && v.isBool:
		return "bool"
	case v.set && v.isInt:
		return "integer (run-time)"
	case v.set:
		return v.rt.DType().String()
	case v.c.Type == Bool:
		return "bool"
	}
	return v.c.Type.String()
}

// equal reports whether t and u are the same constant: type, shape and
// bits.
func (t *Tensor) equal(u *Tensor) bool {
	if t.Type != u.Type || !slices.Equal(t.Shape, u.Shape) || len(t.Float32) != len(u.Float32) || len(t.Float64) != len(u.Float64) || !slices.Equal(t.Int64, u.Int64) {
		return false
	}
	for i := range t.Float32 {
		if math.Float32bits(t.Float32[i]) != math.Float32bits(u.Float32[i]) {
			return false
		}
	}
	for i := range t.Float64 {
		if math.Float64bits(t.Float64[i]) != math.Float64bits(u.Float64[i]) {
			return false
		}
	}
	return true
}

// branch imports the subgraph g (an attribute of the current node, named
// attr) inline and returns its outputs, of which the node has want. Its
// initializers and nodes define names in their own scope: a name that
// is already defined (outside, or in the branch) is invalid (ONNX's
// values are assigned once, subgraphs included), and every name the
// branch defines is removed after it, so that nothing leaks into the
// outer graph or the other branch. Errors name the node by its path
// (graph.node[3].then_branch.node[0]).
func (c *importer) branch(g *graphProto, attr string, want int) ([]value, *ir.Error) {
	if len(g.inputs) > 0 {
		return nil, c.invalid("%s has %d inputs; an If's branches take none", attr, len(g.inputs))
	}
	if g.sparse > 0 {
		return nil, c.refuse("%s has %d sparse initializers", attr, g.sparse)
	}
	if len(g.outputs) != want {
		return nil, c.invalid("%s has %d outputs, the node %d", attr, len(g.outputs), want)
	}
	saved := *c
	scope := c.field() + "." + attr + "."
	var defined []string
	defer func() {
		for _, name := range defined {
			delete(c.vals, name)
		}
		c.n, c.idx, c.scope, c.graph, c.folded, c.readIndex = saved.n, saved.idx, saved.scope, saved.graph, saved.folded, saved.readIndex
	}()
	for k := range g.inits {
		field := fmt.Sprintf("%sinitializer[%d]", scope, k)
		t, err := convertTensor(&g.inits[k], c.l, &c.storage, field)
		if err != nil {
			return nil, err
		}
		if t.Name == "" {
			return nil, ir.Errorf(ir.CodeInvalidGraph, -1, field, "an initializer has no name")
		}
		if _, dup := c.vals[t.Name]; dup {
			return nil, ir.Errorf(ir.CodeInvalidGraph, -1, field, "initializer %s is defined twice (ONNX's names are assigned once, subgraphs included)", ir.Quote(t.Name))
		}
		c.vals[t.Name] = &value{c: t}
		defined = append(defined, t.Name)
	}
	c.scope, c.graph, c.folded, c.readIndex = scope, g, map[int]bool{}, nil
	for i := range g.nodes {
		c.n, c.idx = &g.nodes[i], i
		var fresh []string // the node's outputs not defined before it
		for _, name := range c.n.outputs {
			if _, ok := c.vals[name]; !ok && name != "" {
				fresh = append(fresh, name)
			}
		}
		err := c.node(g, i)
		for _, name := range fresh {
			if _, ok := c.vals[name]; ok && !slices.Contains(defined, name) {
				defined = append(defined, name)
			}
		}
		if err != nil || c.failed >= 0 {
			return nil, err // a builder failure: Build reports it by c.failedField
		}
	}
	outs := make([]value, len(g.outputs))
	for k, o := range g.outputs {
		v, ok := c.vals[o.name]
		if !ok {
			return nil, ir.Errorf(ir.CodeInvalidGraph, -1, fmt.Sprintf("%soutput[%d]", scope, k), "output %s is not computed by %s", ir.Quote(o.name), attr)
		}
		outs[k] = *v
	}
	return outs, nil
}

// reads calls f with every name node n reads: its inputs and, through
// its graph attributes, the outer values its subgraphs read.
func reads(n *nodeProto, f func(string)) {
	for _, in := range n.inputs {
		f(in)
	}
	for _, a := range n.attrs {
		if a.g == nil {
			continue
		}
		for j := range a.g.nodes {
			reads(&a.g.nodes[j], f)
		}
		for _, o := range a.g.outputs {
			f(o.name)
		}
	}
}
