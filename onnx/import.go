package onnx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// Options configure Load.
type Options struct {
	// Limits bound the model and the graph it becomes (zero fields mean
	// the defaults): the model's bytes (MaxGraphBytes), its nodes and
	// initializers (MaxNodes each), every tensor's elements (MaxElements)
	// and the summed tensors at 4 bytes an element (MaxStorageBytes), each
	// checked before anything of that size is allocated.
	Limits ir.Limits
	// InputShapes gives the shape of graph inputs by name. A dynamic
	// dimension (a dim_param, or no dimension at all) must be bound here;
	// a static one must match. Shapes are static after import.
	InputShapes map[string][]int
	// Constants fixes graph inputs to values at import, so that what is
	// computed from them folds: an int64 index tensor, a bool mask, a
	// shape. A constant input is not an input of the imported graph.
	Constants map[string]*Tensor
	// InputValues gives graph inputs their run-time values at import
	// (serve's form, gpucc run's --input): such an input stays an input
	// of the graph and holds the tensor's values where it would hold a
	// placeholder of zeros, so that no placeholder is allocated for data
	// the caller already holds. A value is taken only when it is the
	// input's dtype and shape exactly with every value one of the dtype's
	// (finite, for a float dtype); otherwise the input is zero-filled as
	// without it, for the caller's binding to refuse. float64 values are
	// never taken (the IR carries their bits).
	InputValues map[string]*Tensor
	// Params makes every float32 initializer a trainable parameter: a
	// named param input (ir.Node.Param) holding the initializer's values,
	// which gpucc train updates and returns by the initializer's name.
	// Without it initializers are embedded constants.
	Params bool
	// KeepBatchNorm imports a BatchNormalization after a Conv as its
	// composition instead of folding it into the convolution's weight and
	// bias (see bnfold.go; the bits differ within a stated bound).
	KeepBatchNorm bool
	// KeepAttention imports softmax(q·kᵀ·s + mask)·v as the nodes the
	// model writes instead of one attention node (ir.FuseAttention: its
	// own order, whose bits differ within a few units in the last place,
	// and one kernel whose scores never reach memory).
	KeepAttention bool
	// TypedOutputs returns each integer or bool graph output in the
	// model's own dtype (int64 indices, bool masks), as ONNX says, where
	// Load returns them as float32 values by default (1 and 0; integers
	// exactly up to 2^24). Model.SpecializeValues and gpucc run on a
	// model's data set it.
	TypedOutputs bool
	// ShapeHint says, in an error about an input whose shape the model
	// leaves dynamic, how the caller binds it (the CLI: "--input-shape
	// x=D0,D1,…"); nil says onnx.Options.InputShapes.
	ShapeHint func(input string) string

	// builderNodes, when positive and below Limits.MaxNodes, is the
	// builder's bound in its place (ir.Builder.SetMaxNodes): a test stops
	// the import at each of its builder steps with it (export_test.go).
	builderNodes int
}

// shapeHint is how the caller binds input's shape, for an error message.
func (o Options) shapeHint(input string) string {
	if o.ShapeHint != nil {
		return o.ShapeHint(input)
	}
	return fmt.Sprintf("onnx.Options.InputShapes[%q]", input)
}

// ir.CodeUnsupported marks a valid model that gpucc cannot run exactly.

// Load reads one ONNX model (a serialized ModelProto) and returns it as a
// validated gpucc graph.
//
// The graph keeps the model's names: each graph input that is not an
// initializer becomes a named input (zero-filled: the caller binds data by
// name), and each graph output an output of the same name. Initializers
// and Constant nodes become data embedded in the graph. Values that are
// known at import (shapes, indices, masks: every integer and bool value)
// are folded there; only float32 values are computed at run time, and
// integer results of float32 data (ArgMax's indices) as exact float32
// integers. An integer or bool graph output is returned as float32 values
// (1 or 0 for a bool; an integer exactly, |v| ≤ 2^24, else refused).
//
// An op, attribute or element type that gpucc cannot run is refused with
// ir.CodeUnsupported, naming the op, the node and the opset; a malformed
// model is ir.CodeInvalidGraph and one over the limits
// ir.CodeLimitExceeded. Nothing is approximated: each op maps onto table
// ops and composites whose float32 operations its doc (ops.go) states.
func Load(r io.Reader, opts Options) (*ir.Graph, error) {
	return LoadContext(context.Background(), r, opts)
}

// LoadContext is Load that stops when ctx is done, between the model's
// nodes and initializers, with the timeout code: a server imports under
// the request's deadline and stops when its client goes away.
func LoadContext(ctx context.Context, r io.Reader, opts Options) (*ir.Graph, error) {
	l := opts.Limits.WithDefaults()
	m, err := readModel(r, l)
	if err != nil {
		return nil, err
	}
	g, ierr := importModel(ctx, m, opts, l)
	if ierr != nil {
		return nil, ierr
	}
	return g, nil
}

// value is what an ONNX name holds during import: a constant (folded) or
// a float32 tensor computed at run time. A constant used by a run-time op
// is materialised once (mat).
type value struct {
	c   *Tensor
	rt  ir.Tensor
	set bool // rt is valid
	// isBool marks a run-time bool: rt holds 1 for true and 0 for false
	// (what comparisons give), and a bool output is returned so.
	isBool bool
	// isInt marks a run-time integer (ArgMax's indices): rt holds the
	// integers as float32, exactly (each below 2^24). Only a graph output
	// or a Cast to float32 reads one; an op that computes on integers
	// refuses it (rtIn).
	isInt bool
	// from are the run-time graph inputs a run-time value is computed
	// from: those Model.SpecializeValues fixes when an op needs the value
	// at import to decide a shape (shapeDeciding).
	from []string
}

type importer struct {
	b       *ir.Builder
	l       ir.Limits
	opset   int64
	vals    map[string]*value
	storage int64 // the tensors' bytes: initializers at 4 an element, inputs and new constants at their carriers'

	// The node being imported, for errors, and the field of its graph
	// ("graph." for the main graph, a branch's path inside it).
	n     *nodeProto
	idx   int
	scope string
	// failed is the ONNX node at which the builder first failed, or -1
	// (failedNode and failedField name it, in whichever graph it is);
	// failedOn is the dtype of a run-time typed input it had (float32 if
	// none): an op handler that met a dtype it cannot take.
	failed      int
	failedNode  *nodeProto
	failedField string
	failedOn    ir.DType
	// named are the input names given so far (graph inputs, parameters,
	// weights), so that no two inputs share one.
	named map[string]bool
	// unrolled counts the body nodes that Loop and Scan have imported
	// by unrolling, nested loops included, against Limits.MaxNodes
	// (control.go).
	unrolled int64
	// graph is the graph being imported; keepBN is Options.KeepBatchNorm
	// and folded the BatchNormalization nodes folded into their Conv
	// (bnfold.go), by node index.
	graph  *graphProto
	keepBN bool
	folded map[int]bool
	// readIndex counts each value's readers (readers.go); built by
	// readers on first need.
	readIndex *readIndex
	// typedOutputs is Options.TypedOutputs.
	typedOutputs bool
	// wants is the first run-time graph input whose values an op needed
	// at import (shapeDeciding), which Model.SpecializeValues gives as a
	// constant.
	wants string
}

// stopped is the timeout error once ctx is done.
func stopped(ctx context.Context) *ir.Error {
	if err := ctx.Err(); err != nil {
		return ir.Errorf(ir.CodeTimeout, -1, "", "the import stopped: %v", err)
	}
	return nil
}

// MaxOpset is the newest default-domain opset Load reads (ONNX 1.20's).
// A model that imports a later one is refused: its ops may mean what
// gpucc's rules, written for opsets up to this one, do not.
const MaxOpset = 25

func importModel(ctx context.Context, m *modelProto, opts Options, l ir.Limits) (*ir.Graph, *ir.Error) {
	g, _, err := importWants(ctx, m, opts, l)
	return g, err
}

// importWants is importModel that also returns, when the import fails for
// it, the graph input whose values decide a shape (importer.wants).
func importWants(ctx context.Context, m *modelProto, opts Options, l ir.Limits) (g *ir.Graph, wants string, err *ir.Error) {
	c := &importer{b: ir.NewBuilder(), l: l, vals: map[string]*value{}, failed: -1, scope: "graph.", named: map[string]bool{}}
	defer func() {
		if p := recover(); p != nil {
			where := ""
			if c.n != nil {
				where = c.field()
			}
			g, wants, err = nil, "", importPanic(p, where)
		}
	}()
	c.b.SetMaxNodes(l.MaxNodes)
	if n := opts.builderNodes; n > 0 && n < l.MaxNodes {
		c.b.SetMaxNodes(n)
	}
	g, err = c.importGraph(ctx, m, opts)
	return g, c.wants, err
}

// importPanic is the internal error for a panic of the reader or the
// importer at where. A panic is a bug in gpucc, as every model must get a
// code, but it must not take down a server importing a client's model
// (net/http recovers a handler's panic and leaves its admission slot
// taken) or leave a CLI without a code; FuzzLoad and the other fuzzers
// fail on an internal error as on a panic.
func importPanic(p any, where string) *ir.Error {
	return ir.Errorf(ir.CodeInternal, -1, where, "the importer panicked, a bug in gpucc (report it with the model): %v", p)
}

// importGraph imports m's graph into c.
func (c *importer) importGraph(ctx context.Context, m *modelProto, opts Options) (*ir.Graph, *ir.Error) {
	if m.graph == nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "model.graph", "the model has no graph")
	}
	l := c.l
	c.typedOutputs = opts.TypedOutputs
	seen := false
	for k, o := range m.opsets {
		if o.domain == "" || o.domain == "ai.onnx" {
			if seen { // which would the ops mean? (the first was read before, the last now)
				return nil, ir.Errorf(ir.CodeInvalidGraph, -1, fmt.Sprintf("model.opset_import[%d]", k), "the default domain is imported twice (opsets %d and %d)", c.opset, o.version)
			}
			c.opset, seen = o.version, true
		}
	}
	if c.opset == 0 {
		if len(m.opsets) == 0 && m.irVersion >= 3 {
			return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "model.opset_import", "the model imports no opset")
		}
		c.opset = 1
	}
	if c.opset < 0 || c.opset > MaxOpset {
		return nil, ir.Errorf(ir.CodeUnsupported, -1, "model.opset_import", "opset %d of the default domain: gpucc reads opsets 1 to %d (ONNX 1.20's), as ONNX Runtime refuses one it does not know", c.opset, MaxOpset)
	}
	if m.training {
		return nil, ir.Errorf(ir.CodeUnsupported, -1, "model.training_info", "the model carries training information (TrainingInfoProto); gpucc imports inference graphs")
	}
	g := m.graph
	c.graph, c.keepBN, c.folded = g, opts.KeepBatchNorm, map[int]bool{}
	if g.sparse > 0 {
		return nil, ir.Errorf(ir.CodeUnsupported, -1, "graph.sparse_initializer", "the graph has %d sparse initializers", g.sparse)
	}
	for k := range g.inits {
		if err := stopped(ctx); err != nil {
			return nil, err
		}
		t, err := convertTensor(&g.inits[k], l, &c.storage, fmt.Sprintf("graph.initializer[%d]", k))
		if err != nil {
			return nil, err
		}
		if t.Name == "" {
			return nil, ir.Errorf(ir.CodeInvalidGraph, -1, fmt.Sprintf("graph.initializer[%d]", k), "an initializer has no name")
		}
		c.vals[t.Name] = &value{c: t}
		if opts.Params && t.Type == Float32 && t.Len() > 0 {
			if err := c.param(t, fmt.Sprintf("graph.initializer[%d]", k)); err != nil {
				return nil, err
			}
		}
	}
	if err := c.inputs(g, opts); err != nil {
		return nil, err
	}
	if err := c.b.Err(); err != nil { // the inputs and parameters reach the node limit
		return nil, err
	}
	for i := range g.nodes {
		if err := stopped(ctx); err != nil {
			return nil, err
		}
		c.n, c.idx = &g.nodes[i], i
		if err := c.node(g, i); err != nil {
			return nil, err
		}
		if c.failed >= 0 {
			break // the builder's error, reported by Build below; later nodes would see no shapes
		}
	}
	c.n = nil
	if c.failed < 0 {
		if err := c.outputs(g); err != nil {
			return nil, err
		}
	}
	graph, err := c.b.Build(l)
	if err != nil {
		var ie *ir.Error
		if c.failed >= 0 && errors.As(err, &ie) {
			n := c.failedNode
			code, msg := ie.Code, ie.Msg
			if c.failedOn != ir.F32 && code == ir.CodeInvalidGraph { // a valid model whose op gpucc computes on float32 only
				code, msg = ir.CodeUnsupported, fmt.Sprintf("a run-time %v input: gpucc imports this op for float32 only so far (%s)", c.failedOn, msg)
			}
			e := ir.Errorf(code, -1, c.failedField, "%s node %s (opset %d): %s", n.opType, ir.Quote(n.name), c.opset, msg)
			e.Limit = ie.Limit // the node limit (SetMaxNodes) says how to raise it
			return nil, e
		}
		if errors.As(err, &ie) {
			return nil, ie
		}
		return nil, ir.Errorf(ir.CodeInternal, -1, "", "%v", err)
	}
	if !opts.KeepAttention {
		graph, _ = ir.FuseAttention(graph)
	}
	return graph, nil
}

// param makes the float32 initializer t a trainable parameter, computed
// at run time (so nothing folds from it).
func (c *importer) param(t *Tensor, field string) *ir.Error {
	if len(t.Name) > 256 || len(t.Shape) > ir.MaxRank {
		return ir.Errorf(ir.CodeUnsupported, -1, field, "initializer %s cannot be a parameter (a name over 256 bytes or a rank over %d)", ir.Quote(t.Name), ir.MaxRank)
	}
	for _, x := range t.Float32 {
		if !c.l.NonFinite && (math.IsInf(float64(x), 0) || math.IsNaN(float64(x))) {
			return ir.Errorf(ir.CodeUnsupported, -1, field, "initializer %s holds %v; the host allows finite values only (ir.Limits.NonFinite)", ir.Quote(t.Name), x)
		}
	}
	c.named[t.Name] = true
	c.vals[t.Name] = &value{rt: c.b.Param(t.Name, append(ir.Shape{}, t.Shape...), t.Float32), set: true}
	return nil
}

// inputs binds each graph input that is not an initializer: a constant
// from opts.Constants, or a named float32 input of the static shape the
// model and opts.InputShapes give.
func (c *importer) inputs(g *graphProto, opts Options) *ir.Error {
	for k, in := range g.inputs {
		field := fmt.Sprintf("graph.input[%d]", k)
		if _, ok := c.vals[in.name]; ok {
			continue // an initializer (IR version < 4 lists them as inputs too)
		}
		if in.name == "" {
			return ir.Errorf(ir.CodeInvalidGraph, -1, field, "a graph input has no name")
		}
		if t, ok := opts.Constants[in.name]; ok {
			if t == nil || len(t.Shape) > ir.MaxRank || t.count() != t.Len() {
				return ir.Errorf(ir.CodeInvalidInput, -1, field, "the constant given for input %s is malformed", ir.Quote(in.name))
			}
			// Its shape's count, checked: Len wraps, so [7, 0x6db6db6db6db6db7]
			// with one value passed the check above, and Size gave 1.
			if slices.ContainsFunc(t.Shape, func(d int) bool { return d < 0 }) {
				return ir.Errorf(ir.CodeInvalidInput, -1, field, "the constant given for input %s has shape %v, with a negative dimension", ir.Quote(in.name), t.Shape)
			}
			if n, ok := dimProduct(c.l.MaxElements, t.Shape...); !ok || n != int64(t.count()) {
				return ir.LimitErrorf("MaxElements", -1, field, "the constant given for input %s has shape %v, over the limit of %d elements per tensor", ir.Quote(in.name), t.Shape, c.l.MaxElements)
			}
			if err := t.checkRange(func(f string, args ...any) *ir.Error {
				return ir.Errorf(ir.CodeInvalidInput, -1, field, "the constant given for input %s: %s", ir.Quote(in.name), fmt.Sprintf(f, args...))
			}); err != nil {
				return err
			}
			if dt := DataType(in.elemType); in.hasType && in.nonTensor == "" && !dt.isInt() && dt != Float32 && dt != Float64 {
				return ir.Errorf(ir.CodeUnsupported, -1, field, "input %s has element type %v", ir.Quote(in.name), dt)
			}
			if in.hasType && in.nonTensor == "" && DataType(in.elemType) != t.Type {
				return ir.Errorf(ir.CodeInvalidInput, -1, field, "input %s has element type %v in the model; the constant given is %v", ir.Quote(in.name), DataType(in.elemType), t.Type)
			}
			if in.hasShape && !slices.Equal(t.Shape, staticDims(in.dims)) {
				return ir.Errorf(ir.CodeInvalidInput, -1, field, "input %s has shape %v in the model; the constant given has shape %v", ir.Quote(in.name), staticDims(in.dims), t.Shape)
			}
			if c.storage = ir.SatAdd(c.storage, ir.SatMul(4, int64(t.Len()))); c.storage > c.l.MaxStorageBytes {
				return ir.LimitErrorf("MaxStorageBytes", -1, field, "the constants reach %d bytes at input %s, over the storage limit of %d", c.storage, ir.Quote(in.name), c.l.MaxStorageBytes)
			}
			c.vals[in.name] = &value{c: t}
			continue
		}
		if in.nonTensor != "" {
			return ir.Errorf(ir.CodeUnsupported, -1, field, "input %s is a %s; gpucc reads tensors", ir.Quote(in.name), in.nonTensor)
		}
		dt := DataType(in.elemType)
		irt, ok := dt.irDType()
		if !ok {
			return ir.Errorf(ir.CodeUnsupported, -1, field, "input %s has element type %v; gpucc's dtypes are float32, float16, bfloat16, int32, int64, uint8, int8, uint32 and bool, and float64, int16, uint16 and uint64 (float64 on the cpu backend only)", ir.Quote(in.name), dt)
		}
		shape, err := c.inputShape(in, opts, field)
		if err != nil {
			return err
		}
		n := shape.Elements(c.l.MaxElements)
		if n < 0 {
			return ir.LimitErrorf("MaxElements", -1, field, "input %s of shape %v exceeds the limit of %d elements per tensor", ir.Quote(in.name), shape, c.l.MaxElements)
		}
		// Charged at its carrier's bytes (4 an element for a float dtype,
		// 8 for an integer, bool or float64 one) before its placeholder is
		// made, so the placeholders of an import's inputs are within
		// MaxStorageBytes: at 1 byte a bool (whose carrier is int64) 32
		// bool inputs of 2^20 in a 1.7 KB model allocated 268 MB under the
		// default 32 MiB, and at 4 bytes, 67 MB (fe637bc).
		if c.storage = ir.SatAdd(c.storage, ir.SatMul(carrierBytes(irt), n)); c.storage > c.l.MaxStorageBytes {
			return ir.LimitErrorf("MaxStorageBytes", -1, field, "the inputs reach %d bytes at input %s, over the storage limit of %d", c.storage, ir.Quote(in.name), c.l.MaxStorageBytes)
		}
		if len(in.name) > 256 {
			return ir.Errorf(ir.CodeUnsupported, -1, field, "input name %s is longer than gpucc's 256 bytes", ir.Quote(in.name))
		}
		c.vals[in.name] = c.typedInput(in.name, irt, shape, n, opts.InputValues[in.name])
		c.vals[in.name].from = []string{in.name}
	}
	for name := range opts.InputShapes {
		if !slices.ContainsFunc(g.inputs, func(v valueInfo) bool { return v.name == name }) {
			return ir.Errorf(ir.CodeInvalidInput, -1, "input_shapes", "the model has no input named %s", ir.Quote(name))
		}
	}
	for name := range opts.Constants {
		if !slices.ContainsFunc(g.inputs, func(v valueInfo) bool { return v.name == name }) {
			return ir.Errorf(ir.CodeInvalidInput, -1, "constants", "the model has no input named %s", ir.Quote(name))
		}
	}
	return nil
}

// staticDims returns dims with each dynamic one as -1 (which matches no
// constant's dimension: a constant input of a dynamic shape is refused).
func staticDims(dims []dimProto) []int {
	s := make([]int, len(dims))
	for k, d := range dims {
		s[k] = -1
		if d.set && d.param == "" {
			s[k] = int(d.value)
		}
	}
	return s
}

// inputShape is in's shape: the model's dimensions, each dynamic one bound
// by the caller's shape, which must agree with the static ones.
func (c *importer) inputShape(in valueInfo, opts Options, field string) (ir.Shape, *ir.Error) {
	want, ok := opts.InputShapes[in.name]
	if !in.hasShape && !ok {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "input %s has no shape in the model; give one (%s)", ir.Quote(in.name), opts.shapeHint(in.name))
	}
	if ok && in.hasShape && len(want) != len(in.dims) {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "input %s has rank %d in the model, the given shape %v has rank %d", ir.Quote(in.name), len(in.dims), want, len(want))
	}
	if ok {
		for k, d := range want {
			if d < 1 {
				return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "the shape given for input %s has dimension %d of %d", ir.Quote(in.name), k, d)
			}
			if in.hasShape && in.dims[k].set && in.dims[k].param == "" && in.dims[k].value != int64(d) {
				return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "input %s has dimension %d of %d in the model, the given shape says %d", ir.Quote(in.name), k, in.dims[k].value, d)
			}
		}
		if len(want) > ir.MaxRank {
			return nil, ir.Errorf(ir.CodeUnsupported, -1, field, "input %s has rank %d, over the maximum rank %d", ir.Quote(in.name), len(want), ir.MaxRank)
		}
		return append(ir.Shape{}, want...), nil
	}
	if len(in.dims) > ir.MaxRank {
		return nil, ir.Errorf(ir.CodeUnsupported, -1, field, "input %s has rank %d, over the maximum rank %d", ir.Quote(in.name), len(in.dims), ir.MaxRank)
	}
	s := make(ir.Shape, len(in.dims))
	for k, d := range in.dims {
		switch {
		case !d.set || d.param != "":
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "dimension %d of input %s is dynamic (%s); bind it with a shape (%s)", k, ir.Quote(in.name), ir.Quote(d.param), opts.shapeHint(in.name))
		case d.value < 1:
			return nil, ir.Errorf(ir.CodeUnsupported, -1, field, "input %s has dimension %d of %d; gpucc's tensors are not empty", ir.Quote(in.name), k, d.value)
		case d.value > c.l.MaxElements:
			return nil, ir.LimitErrorf("MaxElements", -1, field, "input %s has dimension %d of %d, over the limit of %d elements", ir.Quote(in.name), k, d.value, c.l.MaxElements)
		}
		s[k] = int(d.value)
	}
	return s, nil
}

// node imports one node: its rule computes its outputs from its inputs.
func (c *importer) node(g *graphProto, i int) *ir.Error {
	n := c.n
	if c.folded[i] { // a BatchNormalization folded into the Conv before it
		c.vals[n.outputs[0]] = c.vals[n.inputs[0]]
		return nil
	}
	if _, ok := trainingRules[n.opType]; n.domain == trainingDomain && !ok || n.domain != trainingDomain && n.domain != "" && n.domain != "ai.onnx" {
		return c.refuse("the domain %s is not supported (gpucc imports the default ONNX domain, and Adagrad, Adam and Momentum of %s)", ir.Quote(n.domain), trainingDomain)
	}
	for _, in := range n.inputs {
		if _, ok := c.vals[in]; !ok && in != "" {
			return ir.Errorf(ir.CodeInvalidGraph, -1, c.field(), "%s node %s: input %s is not defined before it (nodes must be in topological order)", n.opType, ir.Quote(n.name), ir.Quote(in))
		}
	}
	on := c.typedIn() // before the rule: after a builder error every tensor reads as float32
	outs, err := c.rule()
	if c.failed < 0 && c.b.Err() != nil { // (a branch's node sets failed itself)
		c.failed, c.failedOn, c.failedNode, c.failedField = i, on, n, c.field()
	}
	if c.failed >= 0 {
		return nil // the builder failed (here or in a branch): Build reports it
	}
	if err != nil {
		return err
	}
	for k, o := range outs {
		if o.set && o.rt.ID() < 0 { // the zero Tensor from a rule, with the builder intact
			return ir.Errorf(ir.CodeInternal, -1, c.field(), "%s node %s: output %d has no tensor", n.opType, ir.Quote(n.name), k)
		}
	}
	for k := range outs {
		// What the rules rely on for their inputs (dims.go): a value huge
		// only in an intermediate (an Expand to [2^31-1, 2^31-1] that a
		// Slice would make small) is refused here, before the next node
		// sizes anything by it.
		if !outs[k].set && outs[k].c == nil {
			continue // an optional output the rule does not give
		}
		if _, err := c.elements(fmt.Sprintf("output %d", k), outs[k].shape()); err != nil {
			return err
		}
	}
	for k, name := range n.outputs {
		if name == "" {
			continue
		}
		if k >= len(outs) {
			if c.used(g, i, name) {
				return c.refuse("output %d (%s) is not supported", k, ir.Quote(name))
			}
			continue
		}
		if _, dup := c.vals[name]; dup {
			return ir.Errorf(ir.CodeInvalidGraph, -1, c.field(), "%s node %s: output %s is defined twice", n.opType, ir.Quote(n.name), ir.Quote(name))
		}
		v := outs[k]
		if v.set && v.from == nil {
			v.from = c.lineage()
		}
		c.vals[name] = &v
	}
	return nil
}

// rule imports the current node by its rule: typed.go's for a run-time
// typed value, else byRule's. A rule reads its operands' shapes as it
// builds, and once the builder has failed every tensor made after has a
// nil shape (ir.Tensor.Shape): a multi-step rule that indexed one would
// panic (takeAlong did, e02bb09). The builder's first error is then the
// import's outcome, whatever the rule does next, so rule drops the rule's
// results, its refusal or its panic after a builder error, and node
// reports the builder's error: no rule checks Builder.Err between its
// steps. A panic while the builder is intact is a bug, and rule reports
// it as internal, naming the node (importWants, one outside every rule).
// TestBuilderStops stops the builder at every step of every rule the test
// models reach.
func (c *importer) rule() (outs []value, err *ir.Error) {
	defer func() {
		if p := recover(); p != nil {
			outs, err = nil, nil // after a builder error: node reports it
			if c.b.Err() == nil {
				err = importPanic(p, c.field())
			}
		}
	}()
	if err := c.checkNoBool(); err != nil {
		return nil, err
	}
	outs, typed, err := c.typedNode() // a run-time typed value: typed.go
	if err != nil || typed {
		return outs, err
	}
	return c.byRule()
}

// numericOnly are the ops whose every input's type constraint in ONNX
// excludes bool (arithmetic, math and bitwise ops): ONNX Runtime refuses
// such a model, and gpucc had no answer to give it. Add of the bool
// constant [false, false, true] to itself folded to [0, 0, 1] (a bool's
// wrap), and of a run-time bool to [0, 0, 2] (the importer's 1 and 0).
var numericOnly = map[string]bool{"Add": true, "Sub": true, "Mul": true, "Div": true, "Mod": true, "Pow": true,
	"Neg": true, "Abs": true, "Sign": true, "Sum": true, "Mean": true, "Max": true, "Min": true, "Reciprocal": true,
	"Sqrt": true, "Exp": true, "Log": true, "Floor": true, "Ceil": true, "Round": true, "Relu": true, "Clip": true,
	"MatMul": true, "Gemm": true, "CumSum": true, "BitShift": true, "BitwiseAnd": true, "BitwiseOr": true,
	"BitwiseXor": true, "BitwiseNot": true, "Sigmoid": true, "Tanh": true, "Erf": true, "Softmax": true,
	"ReduceSum": true, "ReduceMean": true, "ReduceProd": true}

// checkNoBool refuses a bool operand of a numericOnly op: invalid_graph.
func (c *importer) checkNoBool() *ir.Error {
	if !numericOnly[c.n.opType] || c.n.domain != "" && c.n.domain != "ai.onnx" {
		return nil
	}
	for k := range c.n.inputs {
		v := c.in(k)
		if v == nil {
			continue
		}
		if v.set && (v.isBool || v.rt.DType() == ir.Bool) || !v.set && v.c != nil && v.c.Type == Bool {
			return c.invalid("input %d is bool, which ONNX's %s does not take", k, c.n.opType)
		}
	}
	return nil
}

// byRule imports the current node by its op's rule, after checking its
// attributes and opset against the rule.
func (c *importer) byRule() ([]value, *ir.Error) {
	n := c.n
	rule, ok := rules[n.opType]
	if n.domain == trainingDomain {
		rule, ok = trainingRules[n.opType]
	}
	if !ok {
		return nil, c.refuse("the op is not supported")
	}
	for _, a := range n.attrs {
		if a.ref != "" {
			return nil, c.refuse("attribute %s refers to a function attribute", ir.Quote(a.name))
		}
		if a.other != "" {
			return nil, c.refuse("attribute %s is a %s", ir.Quote(a.name), a.other)
		}
		if a.g != nil && !rule.graphs {
			return nil, c.refuse("attribute %s is a graph", ir.Quote(a.name))
		}
		if !slices.Contains(rule.attrs, a.name) {
			return nil, c.refuse("attribute %s is not supported", ir.Quote(a.name))
		}
	}
	if c.opset < rule.since {
		return nil, c.refuse("gpucc supports this op from opset %d", rule.since)
	}
	if !rule.bare && c.in(0) == nil {
		return nil, c.invalid("input 0 is missing")
	}
	return rule.fn(c)
}

// readers is the graph's read index, built once on first need.
func (c *importer) readers(g *graphProto) *readIndex {
	if c.readIndex == nil {
		c.readIndex = newReadIndex(g)
	}
	return c.readIndex
}

// used reports whether name is read by a node after node i or is a graph
// output.
func (c *importer) used(g *graphProto, i int, name string) bool {
	return c.readers(g).of(name).last > i
}

// outputs names the graph's outputs. Each must be a float32 value (a
// constant one is embedded).
func (c *importer) outputs(g *graphProto) *ir.Error {
	if len(g.outputs) == 0 {
		return ir.Errorf(ir.CodeInvalidGraph, -1, "graph.output", "the graph has no outputs")
	}
	for k, o := range g.outputs {
		field := fmt.Sprintf("graph.output[%d]", k)
		v, ok := c.vals[o.name]
		if !ok {
			return ir.Errorf(ir.CodeInvalidGraph, -1, field, "output %s is not computed by the graph", ir.Quote(o.name))
		}
		if len(o.name) > 256 || o.name == "" {
			return ir.Errorf(ir.CodeUnsupported, -1, field, "output name %s is not 1 to 256 bytes long", ir.Quote(o.name))
		}
		if t, ok, err := c.typedOutput(v, DataType(o.elemType), field); ok || err != nil {
			if err != nil {
				return err
			}
			c.b.Output(o.name, t)
			continue
		}
		if !v.set && v.c.Type.isInt() && v.c.Type != Bool {
			f, err := intOutput(v.c, field, o.name)
			if err != nil {
				return err
			}
			v = &value{c: f}
		}
		t, err := c.runtime(v, "output "+ir.Quote(o.name))
		if err != nil {
			err.Field = field
			return err
		}
		c.b.Output(o.name, t)
	}
	return nil
}

// typedOutput returns, under Options.TypedOutputs, a graph output that is
// an integer or a bool in the model's own dtype dt: a run-time bool or
// index the importer carries as float32 (1 and 0, exact integers) cast to
// it, an integer or bool constant embedded in it. It is false for any
// other output, which runtime gives as before.
func (c *importer) typedOutput(v *value, dt DataType, field string) (ir.Tensor, bool, *ir.Error) {
	t, ok := dt.irDType()
	if !c.typedOutputs || !ok || t.IsFloat() {
		return ir.Tensor{}, false, nil
	}
	switch {
	case v.set && (v.isBool || v.isInt):
		return v.rt.Cast(t), true, nil
	case !v.set && v.c.Type == dt:
		if v.c.Len() == 0 || len(v.c.Shape) > ir.MaxRank {
			return ir.Tensor{}, false, ir.Errorf(ir.CodeUnsupported, -1, field, "an output of shape %v; gpucc's tensors are not empty", v.c.Shape)
		}
		return c.b.TypedInput("", t, slices.Clone(v.c.Shape), nil, v.c.carried()), true, nil
	}
	return ir.Tensor{}, false, nil
}

// intOutput returns the integer constant t, a graph output, as float32:
// gpucc returns an integer as its float32 value (as a bool as 1 or 0),
// which is exact for |v| ≤ 2^24; a larger value is refused.
func intOutput(t *Tensor, field, name string) (*Tensor, *ir.Error) {
	f := &Tensor{Name: t.Name, Type: Float32, Shape: t.Shape, Float32: make([]float32, len(t.Int64))}
	for i, x := range t.Int64 {
		if x < -maxExactIndex || x > maxExactIndex {
			return nil, ir.Errorf(ir.CodeUnsupported, -1, field, "output %s holds the %v %d; gpucc returns an integer as float32, exact up to 2^24", ir.Quote(name), t.Type, x)
		}
		f.Float32[i] = float32(x)
	}
	return f, nil
}

// field names the current node for errors.
func (c *importer) field() string { return fmt.Sprintf("%snode[%d]", c.scope, c.idx) }

// refuse is the unsupported error for the current node: the op, the
// node's name and the opset, then why.
func (c *importer) refuse(format string, args ...any) *ir.Error {
	return ir.Errorf(ir.CodeUnsupported, -1, c.field(), "%s node %s (opset %d): %s", c.n.opType, ir.Quote(c.n.name), c.opset, fmt.Sprintf(format, args...))
}

// invalid is the invalid_graph error for the current node.
func (c *importer) invalid(format string, args ...any) *ir.Error {
	return ir.Errorf(ir.CodeInvalidGraph, -1, c.field(), "%s node %s (opset %d): %s", c.n.opType, ir.Quote(c.n.name), c.opset, fmt.Sprintf(format, args...))
}

// in returns input k of the current node, or nil when it is absent (past
// the end, or named "").
func (c *importer) in(k int) *value {
	if k >= len(c.n.inputs) || c.n.inputs[k] == "" {
		return nil
	}
	return c.vals[c.n.inputs[k]]
}

// nin is the number of inputs of the current node, trailing absent ones
// not counted.
func (c *importer) nin() int {
	n := len(c.n.inputs)
	for n > 0 && c.n.inputs[n-1] == "" {
		n--
	}
	return n
}

// attr returns the current node's attribute name, or nil.
func (c *importer) attr(name string) *attrProto {
	for k := range c.n.attrs {
		if c.n.attrs[k].name == name {
			return &c.n.attrs[k]
		}
	}
	return nil
}

func (c *importer) attrInt(name string, def int64) int64 {
	if a := c.attr(name); a != nil {
		return a.i
	}
	return def
}

func (c *importer) attrFloat(name string, def float32) float32 {
	if a := c.attr(name); a != nil {
		return a.f
	}
	return def
}

func (c *importer) attrStr(name, def string) string {
	if a := c.attr(name); a != nil {
		return string(a.s)
	}
	return def
}

func (c *importer) attrInts(name string) ([]int64, bool) {
	if a := c.attr(name); a != nil {
		return a.ints, true
	}
	return nil, false
}

// shape returns v's static shape.
func (v *value) shape() []int {
	if v.set {
		return v.rt.Shape()
	}
	return v.c.Shape
}

// konst returns the constant input k, or an unsupported error saying that
// gpucc needs it known at import.
func (c *importer) konst(k int, what string) (*Tensor, *ir.Error) {
	v := c.in(k)
	if v == nil {
		return nil, c.invalid("input %d (%s) is missing", k, what)
	}
	if v.c == nil {
		if len(v.from) > 0 && shapeDeciding[what] {
			if c.wants == "" {
				c.wants = v.from[0]
			}
			return nil, c.refuse("input %d (%s) is computed from the graph input %s, whose values then decide a shape: gpucc reads them when it specializes the model to its data (onnx.Model.SpecializeValues; gpucc run --input %s=FILE)", k, what, ir.Quote(v.from[0]), v.from[0])
		}
		return nil, c.refuse("input %d (%s) is computed at run time; gpucc needs it known at import", k, what)
	}
	return v.c, nil
}

// shapeDeciding are the constant inputs (by konst's what) whose values
// decide a shape, an axis or a layout, not a value: a graph input there is
// read when the model is specialized to its data, as a dynamic dimension
// is (Model.SpecializeValues). A value that only enters arithmetic (a
// label, an index, a pad's constant) is never one.
var shapeDeciding = map[string]bool{
	"shape": true, "axes": true, "axis": true, "starts": true, "ends": true, "steps": true,
	"split": true, "repeats": true, "pads": true, "depth": true, "scales": true, "sizes": true,
	"start": true, "limit": true, "delta": true, "condition": true, "K": true, "size": true,
	// Unique's and NonMaxSuppression's outputs have as many rows as the
	// values give distinct values or boxes kept.
	"unique values": true, "nonzero values": true, "boxes": true, "scores": true, "max_output_boxes_per_class": true,
	"iou_threshold": true, "score_threshold": true,
	// Dropout's decide whether it draws random numbers, as If's condition
	// decides its branch.
	"training_mode": true, "ratio": true,
	// Loop's trip count and initial condition decide how many times its
	// body is unrolled, as a Range's limit decides its length.
	"M, the trip count": true, "cond, the loop's condition": true,
}

// ints returns the constant integer input k as int64 values.
func (c *importer) ints(k int, what string) ([]int64, *ir.Error) {
	t, err := c.konst(k, what)
	if err != nil {
		return nil, err
	}
	if !t.Type.isInt() {
		return nil, c.invalid("input %d (%s) has element type %v, not an integer type", k, what, t.Type)
	}
	return t.Int64, nil
}

// typedInput is graph input name of dtype t: float32 as it always was; a
// bool as its float32 1 and 0 (the importer's run-time bools, exact; the
// input itself takes booleans); any other dtype keeps it, and only Cast
// and the graph's outputs read it so far (rtIn refuses it by name).
func (c *importer) typedInput(name string, t ir.DType, shape ir.Shape, n int64, given *Tensor) *value {
	f, ints, ok := givenValues(given, t, shape)
	if !ok && t.IsFloat() {
		f = make([]float32, n)
	} else if !ok {
		ints = make([]int64, n)
	}
	if t == ir.F32 {
		c.named[name] = true
		return &value{rt: c.b.NamedInput(name, shape, f), set: true}
	}
	x := c.b.TypedInput(name, t, shape, f, ints)
	if t == ir.Bool {
		return &value{rt: x.Cast(ir.F32), set: true, isBool: true}
	}
	return &value{rt: x, set: true}
}

// givenValues are v's values as input data of dtype t and shape (the
// carriers, not copies), when v is exactly that: Options.InputValues.
func givenValues(v *Tensor, t ir.DType, shape ir.Shape) ([]float32, []int64, bool) {
	if v == nil || t.IsFloat64() || !slices.Equal(v.Shape, []int(shape)) {
		return nil, nil, false
	}
	if dt, ok := v.Type.irDType(); !ok || dt != t {
		return nil, nil, false
	}
	if t.IsFloat() {
		ok := len(v.Float32) == shape.Len() && !slices.ContainsFunc(v.Float32, func(x float32) bool {
			return math.IsInf(float64(x), 0) || x != x || !t.Holds(x)
		})
		return v.Float32, nil, ok
	}
	lo, hi := t.Range()
	ok := len(v.Int64) == shape.Len() && !slices.ContainsFunc(v.Int64, func(x int64) bool { return x < lo || x > hi })
	return nil, v.Int64, ok
}

// carrierBytes is what an element of dtype t takes in the IR's carriers:
// a float dtype's []float32, every other dtype's []int64.
func carrierBytes(t ir.DType) int64 {
	if t.IsFloat() {
		return 4
	}
	return 8
}

// castTyped is ONNX's Cast of a run-time value to a dtype gpucc has:
// ir's cast (cpuref.EvalTyped's rules: a float out of an integer's range
// fails the run), a bool target given as the importer's float32 1 and 0.
// It handles a typed value (an integer or float16 input); a float32
// value's casts are castOp's (a run-time float32 to an integer stays
// refused there until ops consume typed values).
func (c *importer) castTyped(v *value, to DataType) ([]value, bool, *ir.Error) {
	from := v.rt.DType()
	t, ok := to.irDType()
	if !ok || from == ir.F32 || v.isBool || v.isInt {
		return nil, false, nil
	}
	if t == ir.Bool {
		vs, err := one(boolValue(v.rt.Cast(ir.Bool).Cast(ir.F32)))
		return vs, true, err
	}
	if t == from {
		return []value{*v}, true, nil
	}
	return []value{rtValue(v.rt.Cast(t))}, true, nil
}

// rtIn returns input k as a run-time float32 tensor.
func (c *importer) rtIn(k int) (ir.Tensor, *ir.Error) {
	v := c.in(k)
	if v == nil {
		return ir.Tensor{}, c.invalid("input %d is missing", k)
	}
	if v.isInt {
		return ir.Tensor{}, c.refuse("input %d is an integer computed at run time; gpucc computes on integers at import only", k)
	}
	if v.set && v.rt.DType() != ir.F32 {
		return ir.Tensor{}, c.refuse("input %d is a run-time %v tensor; this op computes on float32 only in gpucc so far (Cast it first)", k, v.rt.DType())
	}
	return c.runtime(v, fmt.Sprintf("input %d", k))
}

// runtime returns v as a run-time float32 tensor, embedding a float32
// constant (as a full when its elements are all one value).
func (c *importer) runtime(v *value, what string) (ir.Tensor, *ir.Error) {
	if v.set {
		return v.rt, nil
	}
	t := v.c
	if t.Type == Bool { // as 1 and 0, like a run-time bool
		f := &Tensor{Type: Float32, Shape: t.Shape, Float32: make([]float32, len(t.Int64))}
		for i, b := range t.Int64 {
			f.Float32[i] = float32(b)
		}
		t, v.isBool = f, true
	}
	if t.Type != Float32 {
		return ir.Tensor{}, c.unsupported("%s has element type %v; gpucc computes in float32 at run time", what, t.Type)
	}
	if t.Len() == 0 {
		return ir.Tensor{}, c.unsupported("%s is empty (shape %v); gpucc's tensors are not", what, t.Shape)
	}
	for _, x := range t.Float32 {
		if !c.l.NonFinite && (math.IsInf(float64(x), 0) || math.IsNaN(float64(x))) {
			return ir.Tensor{}, c.unsupported("%s holds %v; the host allows finite values only (ir.Limits.NonFinite, gpucc --non-finite)", what, x)
		}
	}
	if len(t.Shape) > ir.MaxRank {
		return ir.Tensor{}, c.unsupported("%s has rank %d, over %d", what, len(t.Shape), ir.MaxRank)
	}
	s := ir.Shape(append([]int{}, t.Shape...))
	uniform := !slices.ContainsFunc(t.Float32, func(x float32) bool { return math.Float32bits(x) != math.Float32bits(t.Float32[0]) })
	switch name := v.c.Name; {
	case uniform:
		v.rt = c.b.Full(s, t.Float32[0])
	case name != "" && len(name) <= 256 && !c.named[name]:
		// A weight keeps its ONNX name (l1.weight, not input1): a run
		// may bind it by that name, and a generated package's field is
		// named after it.
		c.named[name] = true
		v.rt = c.b.NamedInput(name, s, t.Float32)
	default:
		v.rt = c.b.Input(s, t.Float32)
	}
	v.set = true
	return v.rt, nil
}

// unsupported is refuse where a node is current, else a graph-level error.
func (c *importer) unsupported(format string, args ...any) *ir.Error {
	if c.n != nil {
		return c.refuse(format, args...)
	}
	return ir.Errorf(ir.CodeUnsupported, -1, "", format, args...)
}

// newConst returns a constant of type dt and shape, counted against the
// limits at its carrier's bytes (4 an element for float32's, 8 for
// float64's and int64's, which every other type takes) before its data is
// allocated: at 4 an int64 constant's bytes were counted half, so a
// 917-byte model of ConstantOfShape nodes allocated 58.7 MB under the
// default 32 MiB (TestHostileConstants).
func (c *importer) newConst(dt DataType, shape []int) (*Tensor, *ir.Error) {
	n, err := c.elements("a constant", shape)
	if err != nil {
		return nil, err
	}
	if len(shape) > ir.MaxRank {
		return nil, c.refuse("a constant of rank %d, over the maximum rank %d", len(shape), ir.MaxRank)
	}
	size := int64(8)
	if dt == Float32 {
		size = 4
	}
	if c.storage = ir.SatAdd(c.storage, ir.SatMul(size, int64(n))); c.storage > c.l.MaxStorageBytes {
		return nil, ir.LimitErrorf("MaxStorageBytes", -1, c.field(), "%s node %s: the constants reach %d bytes, over the storage limit of %d", c.n.opType, ir.Quote(c.n.name), c.storage, c.l.MaxStorageBytes)
	}
	t := &Tensor{Type: dt, Shape: append([]int{}, shape...)}
	switch {
	case dt == Float32:
		t.Float32 = make([]float32, n)
	case dt == Float64:
		t.Float64 = make([]float64, n)
	default:
		t.Int64 = make([]int64, n)
	}
	return t, nil
}

func rtValue(t ir.Tensor) value        { return value{rt: t, set: true} }
func constValue(t *Tensor) value       { return value{c: t} }
func one(v value) ([]value, *ir.Error) { return []value{v}, nil }

// lineage is the union of the current node's inputs' run-time graph
// inputs (value.from), in order of first appearance.
func (c *importer) lineage() []string {
	var from []string
	for k := range c.n.inputs {
		if v := c.in(k); v != nil {
			for _, name := range v.from {
				if !slices.Contains(from, name) {
					from = append(from, name)
				}
			}
		}
	}
	return from
}
