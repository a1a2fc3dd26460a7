package onnx

import (
	"fmt"
	"math"
	"slices"
	"strings"

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
	return c.subgraph(g, attr, nil, want)
}

// subgraph imports g inline as branch does, its inputs bound to bind (a
// Loop's or Scan's body, once per iteration).
func (c *importer) subgraph(g *graphProto, attr string, bind []value, want int) ([]value, *ir.Error) {
	if len(g.inputs) != len(bind) {
		return nil, c.invalid("%s has %d inputs, not %d", attr, len(g.inputs), len(bind))
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
	for k, in := range g.inputs {
		if in.name == "" {
			return nil, ir.Errorf(ir.CodeInvalidGraph, -1, fmt.Sprintf("%sinput[%d]", scope, k), "an input of %s has no name", attr)
		}
		if _, dup := c.vals[in.name]; dup {
			return nil, ir.Errorf(ir.CodeInvalidGraph, -1, fmt.Sprintf("%sinput[%d]", scope, k), "input %s of %s is defined before it (ONNX's names are assigned once, subgraphs included)", ir.Quote(in.name), attr)
		}
		v := bind[k]
		c.vals[in.name] = &v
		defined = append(defined, in.name)
	}
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

// Loop and Scan with a trip count known at import are unrolled: the body
// is imported once per iteration, inline, its inputs bound to that
// iteration's values (Loop: the iteration number as an int64 constant, the
// condition, the carried values; Scan: the states and the scan inputs'
// slices), and each scan output is the iterations' values stacked along
// its axis. Unrolling is bounded by Limits.MaxNodes: a loop whose
// iterations times its body's nodes exceed it is limit_exceeded naming
// the limit (gpucc --max-nodes), before anything is imported. A Loop
// whose trip count or condition is computed at run time is refused by
// name: gpucc has no device loop.

// loopOp imports Loop (opset 1-21): inputs M (the trip count, optional),
// cond (optional) and the N carried values; the body maps (iteration_num,
// cond, carried...) to (cond, carried..., scan outputs...).
func loopOp(c *importer) ([]value, *ir.Error) {
	body := c.attr("body")
	if body == nil || body.g == nil {
		return nil, c.invalid("needs the graph attribute body")
	}
	g := body.g
	if len(c.n.inputs) < 2 {
		return nil, c.invalid("has %d inputs; Loop takes M, cond and the carried values", len(c.n.inputs))
	}
	nCarried := len(c.n.inputs) - 2
	nScan := len(g.outputs) - 1 - nCarried
	if len(g.inputs) != 2+nCarried || nScan < 0 || len(c.n.outputs) != nCarried+nScan {
		return nil, c.invalid("its body has %d inputs and %d outputs and the node %d outputs, for %d carried values", len(g.inputs), len(g.outputs), len(c.n.outputs), nCarried)
	}
	trip := int64(-1) // no M: until the condition is false
	if v := c.in(0); v != nil {
		t, err := c.konst(0, "M, the trip count")
		if err != nil {
			return nil, err
		}
		if !t.Type.isInt() || t.Len() != 1 {
			return nil, c.invalid("M is a %v tensor of shape %v, not one integer", t.Type, t.Shape)
		}
		trip = max(t.Int64[0], 0)
	}
	cond := true
	if v := c.in(1); v != nil {
		t, err := c.konst(1, "cond, the loop's condition")
		if err != nil {
			return nil, err
		}
		if t.Type != Bool || t.Len() != 1 {
			return nil, c.invalid("cond is a %v tensor of shape %v, not one bool", t.Type, t.Shape)
		}
		cond = t.Int64[0] != 0
	}
	if trip < 0 && c.in(1) == nil {
		return nil, c.refuse("has neither a trip count nor a condition: it never ends")
	}
	bound := c.unrollBound(len(g.nodes))
	if trip > bound {
		return nil, c.overLimit("MaxNodes", "%d iterations of a body of %d nodes unroll to more than the limit of %d nodes", trip, len(g.nodes), c.l.MaxNodes)
	}
	carried := make([]value, nCarried)
	for k := range carried {
		v := c.in(2 + k)
		if v == nil {
			return nil, c.refuse("carried value %d is absent (an optional); gpucc reads tensors", k)
		}
		carried[k] = *v
	}
	scans := make([][]value, nScan)
	for i := int64(0); cond && (trip < 0 || i < trip); i++ {
		if i >= bound {
			return nil, c.overLimit("MaxNodes", "its condition is still true after %d iterations of a body of %d nodes, which unroll to the limit of %d nodes", i, len(g.nodes), c.l.MaxNodes)
		}
		if err := c.chargeUnroll(len(g.nodes)); err != nil {
			return nil, err
		}
		bind := append([]value{
			constValue(&Tensor{Type: Int64, Shape: []int{}, Int64: []int64{i}}),
			constValue(&Tensor{Type: Bool, Shape: []int{}, Int64: []int64{1}}),
		}, carried...)
		outs, err := c.subgraph(g, "body", bind, len(g.outputs))
		if err != nil || c.failed >= 0 {
			return nil, err
		}
		co := outs[0]
		if co.set {
			return nil, c.refuse("its condition is computed at run time in iteration %d; gpucc unrolls a Loop whose trip count and condition are known at import", i)
		}
		if co.c.Type != Bool || co.c.Len() != 1 {
			return nil, c.invalid("the body's condition is a %v tensor of shape %v, not one bool", co.c.Type, co.c.Shape)
		}
		cond = co.c.Int64[0] != 0
		copy(carried, outs[1:1+nCarried])
		for k := range scans {
			scans[k] = append(scans[k], outs[1+nCarried+k])
		}
	}
	res := carried
	for k, vs := range scans {
		s, err := c.stackValues(vs, 0, fmt.Sprintf("scan output %d", k))
		if err != nil {
			return nil, err
		}
		res = append(res, s)
	}
	return res, nil
}

// scanOp imports Scan (opset 9-21; opset 8's batched form is refused):
// inputs the N initial states and the num_scan_inputs scan inputs, sliced
// along scan_input_axes in scan_input_directions; the body maps (states...,
// slices...) to (states..., scan outputs...), stacked along
// scan_output_axes in scan_output_directions.
func scanOp(c *importer) ([]value, *ir.Error) {
	if c.opset < 9 {
		return nil, c.refuse("Scan before opset 9 (a batch axis and sequence_lens) is not supported")
	}
	body := c.attr("body")
	if body == nil || body.g == nil {
		return nil, c.invalid("needs the graph attribute body")
	}
	g := body.g
	m := int(c.attrInt("num_scan_inputs", 0))
	nStates := len(c.n.inputs) - m
	nScan := len(c.n.outputs) - nStates
	if m < 1 || nStates < 0 || nScan < 0 || len(g.inputs) != nStates+m || len(g.outputs) != nStates+nScan {
		return nil, c.invalid("num_scan_inputs %d with %d inputs and %d outputs, and a body of %d inputs and %d outputs", m, len(c.n.inputs), len(c.n.outputs), len(g.inputs), len(g.outputs))
	}
	inAxes, err := c.scanAttr("scan_input_axes", m)
	if err != nil {
		return nil, err
	}
	inDirs, err := c.scanAttr("scan_input_directions", m)
	if err != nil {
		return nil, err
	}
	outAxes, err := c.scanAttr("scan_output_axes", nScan)
	if err != nil {
		return nil, err
	}
	outDirs, err := c.scanAttr("scan_output_directions", nScan)
	if err != nil {
		return nil, err
	}
	ins := make([]*value, m)
	trip := -1
	for j := range ins {
		if ins[j] = c.in(nStates + j); ins[j] == nil {
			return nil, c.invalid("scan input %d is absent", j)
		}
		s := ins[j].shape()
		a, err := c.axisOf(inAxes[j], len(s))
		if err != nil {
			return nil, err
		}
		inAxes[j] = int64(a)
		if trip >= 0 && s[a] != trip {
			return nil, c.invalid("scan input %d has %d iterations along axis %d, scan input 0 %d", j, s[a], a, trip)
		}
		trip = s[a]
	}
	if int64(trip) > c.unrollBound(len(g.nodes)) {
		return nil, c.overLimit("MaxNodes", "%d iterations of a body of %d nodes unroll to more than the limit of %d nodes", trip, len(g.nodes), c.l.MaxNodes)
	}
	states := make([]value, nStates)
	for k := range states {
		v := c.in(k)
		if v == nil {
			return nil, c.invalid("state %d is absent", k)
		}
		states[k] = *v
	}
	scans := make([][]value, nScan)
	for t := 0; t < trip; t++ {
		if err := c.chargeUnroll(len(g.nodes)); err != nil {
			return nil, err
		}
		bind := append([]value{}, states...)
		for j, v := range ins {
			at := t
			if inDirs[j] != 0 {
				at = trip - 1 - t
			}
			x, err := c.sliceAt(v, int(inAxes[j]), at)
			if err != nil {
				return nil, err
			}
			bind = append(bind, x)
		}
		outs, err := c.subgraph(g, "body", bind, len(g.outputs))
		if err != nil || c.failed >= 0 {
			return nil, err
		}
		copy(states, outs[:nStates])
		for k := range scans {
			scans[k] = append(scans[k], outs[nStates+k])
		}
	}
	res := states
	for k, vs := range scans {
		if outDirs[k] != 0 {
			slices.Reverse(vs)
		}
		r := len(vs[0].shape()) + 1
		a, err := c.axisOf(outAxes[k], r)
		if err != nil {
			return nil, err
		}
		s, err := c.stackValues(vs, a, fmt.Sprintf("scan output %d", k))
		if err != nil {
			return nil, err
		}
		res = append(res, s)
	}
	return res, nil
}

// scanAttr is Scan's per-input or per-output attribute name: n values
// (0 each when absent), each direction 0 or 1.
func (c *importer) scanAttr(name string, n int) ([]int64, *ir.Error) {
	v, ok := c.attrInts(name)
	if !ok {
		return make([]int64, n), nil
	}
	if len(v) != n {
		return nil, c.invalid("%s has %d values, not %d", name, len(v), n)
	}
	v = slices.Clone(v)
	if strings.HasSuffix(name, "directions") {
		for _, d := range v {
			if d != 0 && d != 1 {
				return nil, c.invalid("%s holds %d; a direction is 0 or 1", name, d)
			}
		}
	}
	return v, nil
}

// unrollBound is the most iterations of a body of n nodes that unroll
// within Limits.MaxNodes (each iteration counted as one node at least).
func (c *importer) unrollBound(n int) int64 {
	return int64(c.l.MaxNodes) / int64(max(n, 1))
}

// chargeUnroll counts one more iteration of a body of n nodes (one at
// least) against Limits.MaxNodes, over every loop of the model: a loop
// nested in a loop multiplies, and a body that folds away entirely still
// costs its import, so each loop's own bound is not enough.
func (c *importer) chargeUnroll(n int) *ir.Error {
	c.unrolled = ir.SatAdd(c.unrolled, int64(max(n, 1)))
	if c.unrolled > int64(c.l.MaxNodes) {
		return c.overLimit("MaxNodes", "the loops unrolled so far import %d body nodes, over the limit of %d nodes", c.unrolled, c.l.MaxNodes)
	}
	return nil
}

// sliceAt is v's slice at index i along axis, the axis removed.
func (c *importer) sliceAt(v *value, axis, i int) (value, *ir.Error) {
	s := v.shape()
	out := slices.Delete(slices.Clone(s), axis, axis+1)
	if !v.set {
		t, err := c.newConst(v.c.Type, out)
		if err != nil {
			return value{}, err
		}
		inner := ir.Shape(s[axis+1:]).Len()
		for j := range t.Len() {
			o, k := j/max(inner, 1), j%max(inner, 1)
			t.set(j, v.c.at((o*s[axis]+i)*inner+k))
		}
		return constValue(t), nil
	}
	if v.isInt || v.rt.DType() != ir.F32 {
		return value{}, c.refuse("a scan input computed at run time as %s; gpucc slices run-time float32 scan inputs", c.valueType(v))
	}
	x, err := c.takeAlong(v.rt, axis, []int64{int64(i)})
	if err != nil {
		return value{}, err
	}
	return value{rt: reshape(x, out), set: true, isBool: v.isBool}, nil
}

// stackValues is vs (one shape each) stacked along a new axis: a constant when
// all are constants, else a run-time float32 concatenation.
func (c *importer) stackValues(vs []value, axis int, what string) (value, *ir.Error) {
	if len(vs) == 0 {
		return value{}, c.refuse("%s has no iterations: an empty tensor; gpucc's tensors are not empty", what)
	}
	s0 := vs[0].shape()
	for k := range vs {
		if !slices.Equal(vs[k].shape(), s0) {
			return value{}, c.refuse("%s has shape %v in iteration 0 and %v in iteration %d; gpucc stacks iterations of one shape", what, s0, vs[k].shape(), k)
		}
	}
	one := slices.Insert(slices.Clone(s0), axis, 1)
	if !slices.ContainsFunc(vs, func(v value) bool { return v.set }) {
		ts := make([]*Tensor, len(vs))
		for k := range vs {
			if vs[k].c.Type != vs[0].c.Type {
				return value{}, c.refuse("%s is %v in iteration 0 and %v in iteration %d", what, vs[0].c.Type, vs[k].c.Type, k)
			}
			ts[k] = &Tensor{Type: vs[k].c.Type, Shape: one, Float32: vs[k].c.Float32, Float64: vs[k].c.Float64, Int64: vs[k].c.Int64}
		}
		t, err := c.concatConst(ts, axis)
		if err != nil {
			return value{}, err
		}
		return constValue(t), nil
	}
	xs := make([]ir.Tensor, len(vs))
	isBool := true
	for k := range vs {
		v := &vs[k]
		if v.isInt || v.set && v.rt.DType() != ir.F32 {
			return value{}, c.refuse("%s is %s in iteration %d; gpucc stacks run-time float32 values", what, c.valueType(v), k)
		}
		x, err := c.runtime(v, what)
		if err != nil {
			return value{}, err
		}
		isBool = isBool && v.isBool
		xs[k] = reshape(x, one)
	}
	y, err := c.concatTensors(xs, axis)
	if err != nil {
		return value{}, err
	}
	return value{rt: y, set: true, isBool: isBool}, nil
}

// concatConst is the constants ts (one type, equal but along axis)
// concatenated along axis.
func (c *importer) concatConst(ts []*Tensor, axis int) (*Tensor, *ir.Error) {
	out := slices.Clone(ts[0].Shape)
	along := make([]int, len(ts))
	for i, t := range ts {
		along[i] = t.Shape[axis]
	}
	sum, ok := dimSum(c.l.MaxElements, along...)
	if !ok {
		return nil, c.overLimit("MaxElements", "%d inputs whose axis %d adds up to more than the limit of %d elements per tensor", len(ts), axis, c.l.MaxElements)
	}
	out[axis] = int(sum)
	res, err := c.newConst(ts[0].Type, out)
	if err != nil {
		return nil, err
	}
	outer := ir.Shape(out[:axis]).Len()
	i := 0
	for o := 0; o < outer; o++ {
		for _, t := range ts {
			block := t.Len() / max(outer, 1)
			for j := 0; j < block; j++ {
				res.set(i, t.at(o*block+j))
				i++
			}
		}
	}
	return res, nil
}

// concatTensors is xs (equal but along axis) concatenated along axis at
// run time: each input placed at its positions by takeAlong (a pad of -0,
// cropOrPad) and the pieces added, so that each element is its input's
// bits (-0 + x is x for every x, -0 and NaN included). A run-time Concat
// and a Loop's or Scan's stacked outputs are this.
func (c *importer) concatTensors(xs []ir.Tensor, axis int) (ir.Tensor, *ir.Error) {
	s0 := xs[0].Shape()
	along := make([]int, len(xs))
	for i, x := range xs {
		along[i] = x.Shape()[axis]
	}
	// The index tables are as long as the result's axis: bounded before
	// any is made (2,048 inputs of one [2^20] tensor asked 16 GB each).
	total64, ok := dimSum(c.l.MaxElements, along...)
	if !ok {
		return ir.Tensor{}, c.overLimit("MaxElements", "%d inputs whose axis %d adds up to more than the limit of %d elements per tensor", len(xs), axis, c.l.MaxElements)
	}
	if _, err := c.elements("the concatenation", append(append(append([]int{}, s0[:axis]...), int(total64)), s0[axis+1:]...)); err != nil {
		return ir.Tensor{}, err
	}
	total := int(total64)
	var y ir.Tensor
	off := 0
	for i, x := range xs {
		n := along[i]
		idx := make([]int64, total)
		for j := range idx {
			idx[j] = -1
			if j >= off && j < off+n {
				idx[j] = int64(j - off)
			}
		}
		off += n
		p, err := c.takeAlong(x, axis, idx)
		if err != nil {
			return ir.Tensor{}, err
		}
		if i == 0 {
			y = p
		} else {
			y = y.Add(p)
		}
	}
	return y, nil
}
