package ir

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// NodeID identifies a node: its index in Graph.Nodes.
type NodeID int32

// Shape lists a tensor's dimensions, outermost first. The empty shape is a
// scalar of one element.
type Shape []int

// Elements returns the number of elements, or -1 if it exceeds max or a
// dimension is not positive. It never overflows.
func (s Shape) Elements(max int64) int64 {
	n := int64(1)
	for _, d := range s {
		if d < 1 || int64(d) > max || n > max/int64(d) {
			return -1
		}
		n *= int64(d)
	}
	return n
}

// Len returns the number of elements of a validated shape.
func (s Shape) Len() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Equal reports whether s and t have the same dimensions.
func (s Shape) Equal(t Shape) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Node is one operation. Which fields are meaningful depends on Op.
type Node struct {
	Op     Op
	Args   []NodeID  // tensor arguments, len == Op.Info().Args
	Shape  Shape     // result shape
	Scalar float32   // OpFull's value, or the scalar operand of Op*Scalar
	Data   []float32 // a float input's values (DType's values, float32-carried)
	// DType is the node's result dtype: F32, the zero value, unless set.
	// The op's type rule (OpInfo.Types) relates it to the arguments'.
	DType DType
	// Ints is, for a node of an integer dtype or Bool, an input's values
	// (as Data is a float input's) or a full's one value (as Scalar is a
	// float full's); each within DType's range. nil otherwise.
	Ints []int64
	// Attrs are the op's integer attributes, in the layout of its row's
	// Attrs (see AttrSpec and PackAttrs); nil for an op that has none.
	Attrs []int
	// Name optionally names an input (unique among inputs): runs give
	// inputs by it, and training reads and returns parameters by it. Only
	// inputs carry names. An unnamed input is named DefaultInputName of
	// its node id by Seal; Decode writes DefaultInputName of the wire id
	// into an unnamed input whose node id the lowering moved.
	Name string
	// Param marks a named input as a trainable parameter: grad.Step
	// returns its updated value as an output named Name.
	Param bool
}

// DefaultInputName is the name of an input that has none: "input<id>",
// id its wire id (Decode) or, for a graph built in Go, its node id.
// Validate refuses a graph in which another input is named so.
func DefaultInputName(id int) string { return "input" + strconv.Itoa(id) }

// Output names a node whose value is returned.
type Output struct {
	Name string
	ID   NodeID
}

// Graph is a validated-or-not tensor program. See the package doc for the
// invariants Validate enforces.
type Graph struct {
	Nodes   []Node
	Outputs []Output
}

// Clone returns a deep copy of g, except that input data is shared
// (passes never write to it).
func (g *Graph) Clone() *Graph {
	c := &Graph{Nodes: make([]Node, len(g.Nodes)), Outputs: append([]Output(nil), g.Outputs...)}
	for i, n := range g.Nodes {
		n.Args = append([]NodeID(nil), n.Args...)
		n.Shape = append(Shape(nil), n.Shape...)
		n.Attrs = slices.Clone(n.Attrs)
		c.Nodes[i] = n
	}
	return c
}

// InferShape returns the shape of op applied to args with attributes
// attrs (Node.Attrs' layout; nil for an op without attributes), or an
// error naming the problem: the op's shape rule. node is used only for
// error messages.
func InferShape(node int, op Op, args []Shape, attrs []int) (Shape, *Error) {
	info := op.Info()
	if info.Args == 0 || info.Shape == nil {
		return nil, Errorf(CodeInvalidGraph, node, "op", "op %v takes no arguments", op)
	}
	if info.Shaped {
		return nil, Errorf(CodeInvalidGraph, node, "shape", "%v needs a target shape (see CheckTarget)", op)
	}
	if err := checkAttrs(node, op, attrs, Limits{MaxAttrValues: math.MaxInt}); err != nil { // the layout; Validate holds the count to the host's limit
		return nil, err
	}
	return info.Shape(node, op, args, nil, attrs)
}

// broadcastBinary returns the shape binary elementwise op broadcasts
// operands of shapes a and b to, or the error naming node's b.
func broadcastBinary(node int, op Op, a, b Shape) (Shape, *Error) {
	s, ok := BroadcastShape(a, b)
	if !ok {
		return nil, Errorf(CodeInvalidGraph, node, "b", "%s of %v and %v: the shapes do not broadcast (numpy's rule: right-aligned, each pair of dimensions is equal or one of them is 1)", op.Info().Wire, a, b)
	}
	return s, nil
}

// CheckTarget checks the target shape of a broadcast or reshape whose
// argument has shape arg: a broadcast's argument shape must broadcast to
// the target (BroadcastsTo), and a reshape keeps the number of elements. node is used only for error messages.
func CheckTarget(node int, op Op, arg, target Shape) *Error {
	info := op.Info()
	if !info.Shaped || info.Args != 1 {
		return Errorf(CodeInvalidGraph, node, "op", "%v takes no target shape", op)
	}
	_, err := info.Shape(node, op, []Shape{arg}, target, nil)
	return err
}

// BroadcastsTo reports whether shape s broadcasts to t by numpy's rule
// (broadcast_to): right-aligned with t, with missing leading dimensions
// counting as 1, each dimension of s equals t's or is 1.
func BroadcastsTo(s, t Shape) bool {
	if len(s) > len(t) {
		return false
	}
	off := len(t) - len(s)
	for d, n := range s {
		if n != 1 && n != t[d+off] {
			return false
		}
	}
	return true
}

// IsSuffix reports whether s is a trailing suffix of t: t's last len(s)
// dimensions are s (protocol v1's broadcast of b; BroadcastsTo is the rule
// now).
func IsSuffix(s, t Shape) bool {
	return len(s) <= len(t) && s.Equal(t[len(t)-len(s):])
}

// BroadcastShape returns the shape numpy broadcasts a and b to: right-
// aligned, each dimension the other's where one is 1 or missing. It is
// false when a pair of dimensions differs and neither is 1.
func BroadcastShape(a, b Shape) (Shape, bool) {
	if len(a) < len(b) {
		a, b = b, a
	}
	out := append(Shape{}, a...)
	off := len(a) - len(b)
	for d, n := range b {
		switch m := out[d+off]; {
		case m == 1:
			out[d+off] = n
		case n != 1 && n != m:
			return nil, false
		}
	}
	return out, true
}

// EstimateOps returns the estimated operation count of one node: its op's
// cost rule (one per output element for most, 2·m·k·n for matmul). The
// rules saturate at math.MaxInt64 instead of overflowing.
func EstimateOps(g *Graph, n *Node) int64 {
	info := n.Op.Info()
	if info.Cost == nil {
		return int64(n.Shape.Len())
	}
	args := make([]Shape, len(n.Args))
	for k, a := range n.Args {
		args[k] = g.Nodes[a].Shape
	}
	if info.CostAttrs != nil {
		return info.CostAttrs(args, n.Shape, n.Attrs)
	}
	return info.Cost(args, n.Shape)
}

// Param is one trainable parameter of a graph: a named input marked param.
type Param struct {
	Name string
	ID   NodeID
}

// Params returns the graph's parameters in node order.
func (g *Graph) Params() []Param {
	var ps []Param
	for i, n := range g.Nodes {
		if n.Op == OpInput && n.Param {
			ps = append(ps, Param{Name: n.Name, ID: NodeID(i)})
		}
	}
	return ps
}

// Input returns the id of the input named name, or -1.
func (g *Graph) Input(name string) NodeID {
	for i, n := range g.Nodes {
		if n.Op == OpInput && n.Name == name {
			return NodeID(i)
		}
	}
	return -1
}

// SetInput gives the input named name new data, of the same length, every
// value a finite float32. The slice is kept, not copied.
func (g *Graph) SetInput(name string, data []float32) error {
	return g.SetInputWith(name, data, Limits{})
}

// SetInputWith is SetInput under limits' finiteness policy: with
// Limits.NonFinite the data may hold ±Inf and NaN.
func (g *Graph) SetInputWith(name string, data []float32, limits Limits) error {
	id := g.Input(name)
	if id < 0 {
		return Errorf(CodeInvalidGraph, -1, "inputs", "no input is named %s", Quote(name))
	}
	n := &g.Nodes[id]
	if len(data) != len(n.Data) {
		return Errorf(CodeInvalidGraph, int(id), "data", "input %s needs %d values (shape %v), got %d", Quote(name), len(n.Data), n.Shape, len(data))
	}
	for k, v := range data {
		if !limits.NonFinite && !isFinite32(v) {
			return Errorf(CodeInvalidGraph, int(id), "data", "input %s value %d is not a finite float32", Quote(name), k)
		}
	}
	n.Data = data
	return nil
}

// Validate checks every invariant of the package doc against limits (zero
// fields mean the defaults). It reports the first problem found.
func Validate(g *Graph, limits Limits) error {
	graphChecks.Add(1)
	if err := validate(g, limits.withDefaults(), true); err != nil {
		return err
	}
	return nil
}

// ValidateStructure is Validate without the finiteness checks of input
// data, full values and scalars (the host's policy, Limits.NonFinite):
// passes call it between rewrites, which never touch
// input data, so a large graph is not rescanned after every pass.
func ValidateStructure(g *Graph, limits Limits) error {
	if err := validate(g, limits.withDefaults(), false); err != nil {
		return err
	}
	return nil
}

func validate(g *Graph, l Limits, data bool) *Error {
	if len(g.Nodes) == 0 {
		return Errorf(CodeInvalidGraph, -1, "nodes", "graph has no nodes")
	}
	if len(g.Nodes) > l.MaxNodes {
		return LimitErrorf("MaxNodes", -1, "nodes", "%d nodes exceed the limit of %d", len(g.Nodes), l.MaxNodes)
	}
	var storage, ops int64
	names := map[string]bool{}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if err := validateNode(g, i, n, l, data); err != nil {
			return err
		}
		if n.Name != "" {
			if names[n.Name] {
				return Errorf(CodeInvalidGraph, i, "name", "duplicate input name %s", Quote(n.Name))
			}
			names[n.Name] = true
		}
		storage = SatAdd(storage, SatMul(int64(n.DType.Size()), int64(n.Shape.Len())))
		if over(storage, l.MaxStorageBytes) {
			return LimitErrorf("MaxStorageBytes", i, "shape", "summed storage reaches %s bytes, over the limit of %d", total(storage), l.MaxStorageBytes)
		}
		ops = SatAdd(ops, EstimateOps(g, n))
		if over(ops, l.MaxOps) {
			return LimitErrorf("MaxOps", i, "op", "estimated operations reach %s, over the limit of %d", total(ops), l.MaxOps)
		}
	}
	if err := validateDefaultNames(g, names); err != nil {
		return err
	}
	return validateOutputs(g, l)
}

// validateDefaultNames refuses a named input that holds the default name
// of an unnamed one (DefaultInputName of its node id), so that a run's
// input name never means two inputs.
func validateDefaultNames(g *Graph, names map[string]bool) *Error {
	for i, n := range g.Nodes {
		if n.Op != OpInput || n.Name != "" || !names[DefaultInputName(i)] {
			continue
		}
		for j, m := range g.Nodes {
			if m.Op == OpInput && m.Name == DefaultInputName(i) {
				return Errorf(CodeInvalidGraph, j, "name", "input name %s is the default name of unnamed input node %d; name node %d, or choose another name", Quote(m.Name), i, i)
			}
		}
	}
	return nil
}

func validateNode(g *Graph, i int, n *Node, l Limits, data bool) *Error {
	info := n.Op.Info()
	if n.Op == OpInvalid || n.Op >= numOps {
		return Errorf(CodeInvalidGraph, i, "op", "unknown op %v", n.Op)
	}
	if len(n.Args) != info.Args {
		return Errorf(CodeInvalidGraph, i, "op", "%v takes %d arguments, got %d", n.Op, info.Args, len(n.Args))
	}
	argShapes := make([]Shape, len(n.Args))
	for k, a := range n.Args {
		if a < 0 || int(a) >= i {
			return Errorf(CodeInvalidGraph, i, argField(k), "reference %d must point to an earlier node (0..%d)", a, i-1)
		}
		argShapes[k] = g.Nodes[a].Shape
	}
	if len(n.Shape) > MaxRank {
		return Errorf(CodeInvalidGraph, i, "shape", "rank %d exceeds the maximum rank %d", len(n.Shape), MaxRank)
	}
	for k, d := range n.Shape {
		if d < 1 {
			return Errorf(CodeInvalidGraph, i, "shape", "dimension %d is %d; zero-sized and negative dimensions are not supported", k, d)
		}
	}
	if n.Shape.Elements(l.MaxElements) < 0 {
		return LimitErrorf("MaxElements", i, "shape", "shape %v exceeds the limit of %d elements per tensor", n.Shape, l.MaxElements)
	}
	if err := checkAttrs(i, n.Op, n.Attrs, l); err != nil {
		return err
	}
	switch {
	case info.Args > 0 && info.Shaped:
		if err := CheckTarget(i, n.Op, argShapes[0], n.Shape); err != nil {
			return err
		}
	case info.Args > 0:
		want, err := info.Shape(i, n.Op, argShapes, nil, n.Attrs)
		if err != nil {
			return err
		}
		if !want.Equal(n.Shape) {
			return Errorf(CodeInvalidGraph, i, "shape", "%v result shape is %v, node says %v", n.Op, want, n.Shape)
		}
	}
	if err := validateName(i, n); err != nil {
		return err
	}
	if err := validateDType(g, i, n); err != nil {
		return err
	}
	if (info.Scalar || n.Op == OpFull) && data && !l.NonFinite && !isFinite32(n.Scalar) {
		return Errorf(CodeInvalidGraph, i, "scalar", "value %v is not a finite float32", n.Scalar)
	}
	return validateValues(i, n, l, data)
}

// validateDType checks the node's dtype against its op's type rule.
func validateDType(g *Graph, i int, n *Node) *Error {
	var buf [3]DType
	args := buf[:0]
	for _, a := range n.Args {
		args = append(args, g.Nodes[a].DType)
	}
	t, err := ResultDType(i, n.Op, args, n.DType)
	if err != nil {
		return err
	}
	if t != n.DType {
		return Errorf(CodeInvalidGraph, i, "dtype", "%v over %v gives %v, node says %v", n.Op, args, t, n.DType)
	}
	return nil
}

// validateValues checks an input's data and a full's value against the
// node's dtype: a float dtype's in Data (Scalar), each a finite value of
// the dtype (F16 and BF16 already rounded; finite unless l.NonFinite); an integer or bool dtype's in
// Ints, each within its range. Scanning input data is skipped when data is
// false.
func validateValues(i int, n *Node, l Limits, data bool) *Error {
	float := n.DType.IsFloat()
	switch {
	case n.Op != OpInput && n.Data != nil:
		return Errorf(CodeInvalidGraph, i, "data", "only input nodes carry data")
	case n.Op != OpInput && n.Op != OpFull && n.Ints != nil:
		return Errorf(CodeInvalidGraph, i, "data", "only input and full nodes carry integer values")
	case n.Op != OpInput && n.Op != OpFull:
		return nil
	case float && n.Ints != nil:
		return Errorf(CodeInvalidGraph, i, "data", "a %v node carries float values, not integers", n.DType)
	case !float && (n.Data != nil || n.Scalar != 0):
		return Errorf(CodeInvalidGraph, i, "data", "a %v node carries integer values (Ints), not floats", n.DType)
	}
	want := n.Shape.Len()
	if n.Op == OpFull {
		if float {
			if !n.DType.Holds(n.Scalar) {
				return Errorf(CodeInvalidGraph, i, "scalar", "value %v is not a %v", n.Scalar, n.DType)
			}
			return nil
		}
		want = 1
	}
	if float {
		if len(n.Data) != want {
			return Errorf(CodeInvalidGraph, i, "data", "has %d values, shape %v needs %d", len(n.Data), n.Shape, want)
		}
		// Every float32 is a float32 value; with non-finite values allowed
		// there is nothing to check (a model's 11.7M weights scanned for
		// nothing took 10-30 ms of ResNet-18's first compile).
		scan := data && (!l.NonFinite || n.DType != F32)
		for k := 0; scan && k < len(n.Data); k++ {
			if !l.NonFinite && !isFinite32(n.Data[k]) {
				return Errorf(CodeInvalidGraph, i, "data", "value %d is not a finite float32", k)
			}
			if n.DType != F32 && !n.DType.Holds(n.Data[k]) {
				return Errorf(CodeInvalidGraph, i, "data", "value %d (%v) is not a %v", k, n.Data[k], n.DType)
			}
		}
		return nil
	}
	if len(n.Ints) != want {
		return Errorf(CodeInvalidGraph, i, "data", "has %d values, %v of shape %v needs %d", len(n.Ints), n.Op, n.Shape, want)
	}
	lo, hi := n.DType.Range()
	for k := 0; (data || n.Op == OpFull) && k < len(n.Ints); k++ {
		if v := n.Ints[k]; v < lo || v > hi {
			return Errorf(CodeInvalidGraph, i, "data", "value %d (%d) is outside %v's range [%d, %d]", k, v, n.DType, lo, hi)
		}
		if x := F64Value(n.Ints[k]); n.DType.IsFloat64() && !l.NonFinite && (math.IsNaN(x) || math.IsInf(x, 0)) {
			return Errorf(CodeInvalidGraph, i, "data", "value %d is not a finite float64", k)
		}
	}
	return nil
}

// validateName checks Name and Param: only inputs carry them, a name is 1
// to 256 bytes, and a parameter is named (its update is returned under
// that name). Uniqueness is checked by validate.
func validateName(i int, n *Node) *Error {
	if n.Op != OpInput {
		if n.Name != "" {
			return Errorf(CodeInvalidGraph, i, "name", "only input nodes carry a name")
		}
		if n.Param {
			return Errorf(CodeInvalidGraph, i, "param", "only input nodes can be parameters")
		}
		return nil
	}
	if len(n.Name) > 256 {
		return Errorf(CodeInvalidGraph, i, "name", "name must be 1 to 256 bytes long")
	}
	if n.Param && n.Name == "" {
		return Errorf(CodeInvalidGraph, i, "param", "a parameter needs a name: its update is returned under it")
	}
	return nil
}

func validateOutputs(g *Graph, l Limits) *Error {
	if len(g.Outputs) == 0 {
		return Errorf(CodeInvalidGraph, -1, "outputs", "graph has no outputs")
	}
	if len(g.Outputs) > l.MaxOutputs {
		return LimitErrorf("MaxOutputs", -1, "outputs", "%d outputs exceed the limit of %d", len(g.Outputs), l.MaxOutputs)
	}
	seen := make(map[string]bool, len(g.Outputs))
	var bytes int64
	for k, o := range g.Outputs {
		field := "outputs[" + strconv.Itoa(k) + "]"
		if o.Name == "" || len(o.Name) > 256 {
			return Errorf(CodeInvalidGraph, -1, field+".name", "name must be 1 to 256 bytes long")
		}
		if seen[o.Name] {
			return Errorf(CodeInvalidGraph, -1, field+".name", "duplicate output name %s", Quote(o.Name))
		}
		seen[o.Name] = true
		if o.ID < 0 || int(o.ID) >= len(g.Nodes) {
			return Errorf(CodeInvalidGraph, -1, field+".id", "output %s refers to node %d, graph has %d nodes", Quote(o.Name), o.ID, len(g.Nodes))
		}
		on := &g.Nodes[o.ID]
		bytes = SatAdd(bytes, SatMul(int64(on.DType.Size()), int64(on.Shape.Len())))
		if over(bytes, l.MaxOutputBytes) {
			return LimitErrorf("MaxOutputBytes", -1, field+".id", "outputs reach %s bytes, over the limit of %d", total(bytes), l.MaxOutputBytes)
		}
	}
	return nil
}

func argField(k int) string { return string(rune('a' + k)) }

// isFinite32 reports whether v is neither ±Inf nor NaN: its exponent bits
// are not all ones. (Validation scans every input value, so it is on the
// hot path of a run.)
func isFinite32(v float32) bool {
	return math.Float32bits(v)&0x7f800000 != 0x7f800000
}
