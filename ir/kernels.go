package ir

import (
	"fmt"
	"slices"
)

// KernelInfo is a kernel kind's row of the kernel table: what the kind is
// called, what it needs of a Kernel, what it costs and which facts other
// packages read of it. Packages that treat kinds differently ask the row
// (KernelKind.Info) instead of switching on the kind; targets keep their
// own table of writers, indexed by kind, that is complete or panics at
// start-up (see codegen/c, codegen/wgsl, codegen/glsl).
//
// Adding a kind: a constant above numKernelKinds, its row here (the
// init check names a missing one), cpuref's row (cpuref.kernels) and a
// writer row per target, each of which names itself when it is missing.
type KernelInfo struct {
	// Name is the kind's name in the program's text form, kernel names
	// and the manifest.
	Name string
	// Validate checks what the kind needs of k beyond what ValidateProgram
	// checks of every kernel (buffers in range, one writer, bodies of
	// earlier values), returning "" or what is wrong: its operands and
	// outputs (see checkOutputs), attributes, blocks and the fields only
	// some kinds use.
	Validate func(p *Program, k *Kernel) string
	// Load reports whether a body load at Body[j] may read an operand of
	// n elements; nil: n must be Shape's length.
	Load func(k *Kernel, j, n int) bool
	// Acc: the body may read the kernel's accumulator (InstrAcc).
	Acc bool
	// Accumulates: the kernel computes an accumulator per element of
	// Shape (matmul, conv, pooling, ...), which an elementwise epilogue,
	// evaluated per element of Shape, reads as InstrAcc. The fusion pass
	// ends a group at one and cpuref runs it as an accumulator and a body.
	Accumulates bool
	// Strided: the kind reads every operand through its strides, whatever
	// they are (its nest indexes each axis), so a view of any kind (a head
	// split's reshape and permute) feeds it in place.
	Strided bool
	// Offsets: every target reads the kind's operands at their Offset
	// (through codegen.Offset and codegen.Index, a matrix's through its
	// Batch), so a slice of a buffer (a Split's piece) feeds it in place;
	// the fusion pass copies a slice into a buffer of its own for any
	// other kind, and the validator refuses an offset there.
	Offsets bool
	// Tiled: the tiling pass chooses the kernel's Tile, which the
	// manifest and `gpucc build --explain` show.
	Tiled bool
	// Contracts returns how many products fast mode sums per output
	// element with fused multiply-adds in any order (matmul's K, conv's
	// taps), which bounds its error (wgsl.FastErrorBound); nil: fast
	// mode changes nothing of the kind.
	Contracts func(k *Kernel) int
	// Flops returns the operations the kernel runs (passes.KernelFlops
	// documents the count; BodyFlops counts a body's per element).
	Flops func(k *Kernel) int64
	// Text returns the kind's fields in the program's text form (after
	// the shape and nodes), or "".
	Text func(k *Kernel) string
	// DTypes checks the dtypes of the values k reads, computes and writes
	// (Buffer.DType, Instr.DType), returning "" or, by name, the one the
	// kind cannot handle (the validator reports it). Every kind handles
	// float32 only so far (f32Only): a kind that gains another dtype says
	// so here, and one that has not refuses it by name, never narrowing
	// silently.
	DTypes func(p *Program, k *Kernel) string
}

// NumKernelKinds is the number of kernel kinds, the length of every
// table indexed by KernelKind.
const NumKernelKinds = int(numKernelKinds)

// kernelTable holds each kind's row. A row must set Name, Validate, Flops
// and DTypes; checkKernelTable refuses a table that misses one. It is
// filled by init because a rows kernel's rows refer back to the table.
var kernelTable [numKernelKinds]KernelInfo

func init() {
	kernelTable = [numKernelKinds]KernelInfo{
		KernelElementwise: {Name: "elementwise", Validate: validateElementwise, Flops: elementwiseFlops, DTypes: f32Only, Offsets: true},
		KernelMatmul: {Name: "matmul", Validate: validateMatmul, Acc: true, Accumulates: true, Tiled: true,
			Contracts: func(k *Kernel) int { return k.K }, Flops: matmulFlops, DTypes: f32Only,
			Text: func(k *Kernel) string { return fmt.Sprintf(" mkn=%dx%dx%d tile=%s", k.M, k.K, k.N, tileText(k.Tile)) }},
		KernelReduce: {Name: "sum", Validate: validateReduce, Load: reduceLoad, Acc: true, Flops: reduceFlops, DTypes: f32Only, Offsets: true,
			Text: func(k *Kernel) string {
				if k.Reduce != OpSum || len(k.Keep) > 0 {
					return fmt.Sprintf(" %s keep=%v", k.Reduce.Info().Wire, k.Keep)
				}
				return ""
			}},
		KernelLife: {Name: "life", Validate: validateLife, DTypes: f32Only,
			Flops: func(k *Kernel) int64 { return OpLife.Info().Cost(nil, k.Shape) }},
		KernelRows: {Name: "rows", Validate: validateRows, Load: rowsLoad, Acc: true, Flops: rowsFlops, DTypes: f32Only, Offsets: true,
			Text: func(k *Kernel) string {
				return fmt.Sprintf(" keep=%v passes=%d parts=%d", k.Keep, k.Passes(), len(k.Parts))
			}},
		KernelConv: {Name: "conv", Validate: window(validateConv), Acc: true, Accumulates: true, Tiled: true,
			Contracts: func(k *Kernel) int { return Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs).Taps() },
			Flops:     convFlops, DTypes: f32Only},
		KernelPool: {Name: "pool", Validate: window(validatePool), Acc: true, Accumulates: true, Flops: poolFlops, DTypes: f32Only},
		KernelConvTranspose: {Name: "conv_transpose", Validate: window(validateConvTranspose), Acc: true, Accumulates: true,
			Flops: opFlops(OpConvTranspose2D), DTypes: f32Only},
		KernelPoolGrad: {Name: "pool_grad", Validate: window(validatePoolGrad), Acc: true, Accumulates: true,
			Flops: opFlops(OpMaxPool2DGrad), DTypes: f32Only},
		KernelResize: {Name: "resize", Validate: window(validateResize), Acc: true, Accumulates: true,
			Flops: opFlops(OpResize2D), DTypes: f32Only},
		KernelPad: {Name: "pad", Validate: window(validatePad), Acc: true, Accumulates: true, Flops: opFlops(OpPad), DTypes: f32Only},
		KernelAttention: {Name: "attention", Validate: window(validateAttention), Acc: true, Accumulates: true, Strided: true, Offsets: true,
			Flops: opFlops(OpAttention), DTypes: f32Only},
		// (Strided and Offsets: its epilogue is attention's, whose loads
		// may read views; its parts are read plainly.)
		KernelAttentionCombine: {Name: "attention_combine", Validate: window(validateAttentionCombine), Acc: true, Accumulates: true,
			Strided: true, Offsets: true,
			Flops: attentionCombineFlops, DTypes: f32Only},
	}
	if err := checkKernelTable(&kernelTable); err != nil {
		panic(err)
	}
}

// checkKernelTable returns an error naming the first kind whose row
// misses a field every row needs.
func checkKernelTable(t *[numKernelKinds]KernelInfo) error {
	for kind, r := range t {
		if r.Name == "" || r.Validate == nil || r.Flops == nil || r.DTypes == nil {
			return fmt.Errorf("ir: BUG: kernel kind %d has no row (or one without Name, Validate, Flops or DTypes) in the kernel table", kind)
		}
	}
	return nil
}

// Valid reports whether k is a kind of the table.
func (k KernelKind) Valid() bool { return k < numKernelKinds }

// Info returns kind k's row of the kernel table. It panics on a kind
// outside the table: a validated Program has none.
func (k KernelKind) Info() *KernelInfo {
	if !k.Valid() {
		panic(fmt.Sprintf("ir: BUG: kernel kind %d is not in the kernel table", k))
	}
	return &kernelTable[k]
}

// String returns the kind's name (its row's Name), or "kind(N)" for a
// kind outside the table.
func (k KernelKind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
	return kernelTable[k].Name
}

// f32Only is the DTypes check of a kind that handles float32 values only:
// it refuses, by name, a kernel that reads or writes a buffer of another
// dtype or whose body computes one.
func f32Only(p *Program, k *Kernel) string {
	for _, in := range k.Inputs {
		if d := p.Buffers[in.Buffer].DType; d != F32 {
			return fmt.Sprintf("a %s kernel computes float32 only, and reads buf%d of %v", k.Kind, in.Buffer, d)
		}
	}
	for _, o := range k.Outputs {
		if d := p.Buffers[o].DType; d != F32 {
			return fmt.Sprintf("a %s kernel computes float32 only, and writes buf%d of %v", k.Kind, o, d)
		}
	}
	for j, in := range k.Body {
		if in.DType != F32 {
			return fmt.Sprintf("a %s kernel computes float32 only, and v%d is %v", k.Kind, j, in.DType)
		}
	}
	return ""
}

// opFlops is the Flops of a kind whose kernel computes one node of op
// into its accumulator (its first operands the node's arguments, Shape
// its result, Attrs its attributes): the op table's cost of that node
// (CostAttrs, else Cost), and the epilogue's operations per output.
func opFlops(op Op) func(k *Kernel) int64 {
	return func(k *Kernel) int64 {
		info := op.Info()
		args := make([]Shape, min(info.Args, len(k.Inputs)))
		for j := range args {
			args[j] = k.Inputs[j].Shape
		}
		n := info.Cost(args, k.Shape)
		if info.CostAttrs != nil {
			n = info.CostAttrs(args, k.Shape, k.Attrs)
		}
		return SatAdd(n, SatMul(BodyFlops(k.Body), int64(k.Shape.Len())))
	}
}

// checkPlain checks what a kernel of a kind other than rows must not
// have: parts or scratch buffers, a reduction or kept shape, blocks, and
// (attrs false) attributes. It returns "" or what is wrong.
func checkPlain(k *Kernel, attrs bool) string {
	if len(k.Parts) > 0 || len(k.Scratch) > 0 {
		return "has parts, which only a rows kernel has"
	}
	if k.Kind != KernelReduce && (k.Reduce != 0 || k.Keep != nil) {
		return "sets Reduce or Keep, which only a sum kernel has"
	}
	if !attrs && len(k.Attrs) > 0 {
		return "has attributes, which only a conv or pool kernel has"
	}
	if k.Kind != KernelReduce && k.Kind != KernelAttention && k.Blocks > 1 {
		return fmt.Sprintf("splits into %d blocks, which is not a power of two dividing a sum's %d leaves and its output", k.Blocks, 1)
	}
	return ""
}

// checkOutputs checks that every output of k (the first only, with
// first) has n elements, and that k stores one value to each.
func checkOutputs(p *Program, k *Kernel, n int, first bool) string {
	if len(k.Stores) != len(k.Outputs) {
		return fmt.Sprintf("%d stores for %d outputs", len(k.Stores), len(k.Outputs))
	}
	for j, o := range k.Outputs {
		if j > 0 && first {
			break
		}
		if p.Buffers[o].Len != n {
			return fmt.Sprintf("output buf%d has %d elements, want %d", o, p.Buffers[o].Len, n)
		}
	}
	return ""
}

// firstOf returns the first non-empty message of checks, run in order.
func firstOf(checks ...func() string) string {
	for _, c := range checks {
		if msg := c(); msg != "" {
			return msg
		}
	}
	return ""
}

func validateElementwise(p *Program, k *Kernel) string {
	return firstOf(
		func() string { return checkPlain(k, false) },
		func() string { return checkOutputs(p, k, k.Shape.Len(), false) })
}

// window makes the row's Validate of a kind with attributes and a
// window-shaped check (conv, pooling, resize): the plain checks, outputs
// of Shape's length, then check.
func window(check func(k *Kernel) string) func(p *Program, k *Kernel) string {
	return func(p *Program, k *Kernel) string {
		return firstOf(
			func() string { return checkPlain(k, true) },
			func() string { return checkOutputs(p, k, k.Shape.Len(), false) },
			func() string { return check(k) })
	}
}

// validateMatmul checks a matmul kernel: a Shape of rank 2 to
// MaxMatmulRank that is [...,M,N], and operands read in place as
// matrices (Operand.Matrix) of [...,M,K] and [...,K,N].
func validateMatmul(p *Program, k *Kernel) string {
	if msg := validateElementwise(p, k); msg != "" {
		return msg
	}
	r := len(k.Shape)
	if r < 2 || r > MaxMatmulRank {
		return fmt.Sprintf("matmul shape %v is not of rank 2 to %d", k.Shape, MaxMatmulRank)
	}
	batch := k.Shape[:r-2]
	want := []Shape{append(slices.Clone(batch), k.M, k.K), append(slices.Clone(batch), k.K, k.N)}
	if !k.Shape.Equal(append(slices.Clone(batch), k.M, k.N)) {
		return fmt.Sprintf("matmul shape %v is not [...,%d,%d]", k.Shape, k.M, k.N)
	}
	return checkOperands(k, want, Operand.Matrix)
}

// validateLife checks a life kernel: one 2-D input read as a plain or
// transposed matrix of Shape, one output and no body.
func validateLife(p *Program, k *Kernel) string {
	if msg := checkPlain(k, false); msg != "" {
		return msg
	}
	for _, o := range k.Outputs {
		if p.Buffers[o].Len != k.Shape.Len() {
			return fmt.Sprintf("output buf%d has %d elements, want %d", o, p.Buffers[o].Len, k.Shape.Len())
		}
	}
	if len(k.Inputs) != 1 || len(k.Outputs) != 1 || len(k.Shape) != 2 || len(k.Body) != 0 {
		return "life needs one 2-D input, one output and no body"
	}
	return checkOperands(k, []Shape{k.Shape}, func(in Operand) bool { return in.Plain() || in.Transposed() })
}

// checkOperands checks k's first operands against want: each of its shape
// and read in place (ok).
func checkOperands(k *Kernel, want []Shape, ok func(Operand) bool) string {
	if len(k.Inputs) < len(want) {
		return fmt.Sprintf("%s needs %d operands, has %d", k.Kind, len(want), len(k.Inputs))
	}
	for j, w := range want {
		if in := k.Inputs[j]; !ok(in) || !in.Shape.Equal(w) {
			return fmt.Sprintf("%s operand %d is %v (strides %v), want a plain or transposed %v", k.Kind, j, in.Shape, in.Strides, w)
		}
	}
	return ""
}

// validateReduce checks a reduction kernel: a reduction (Reduce) of Shape
// to Keep; Outputs[0] of ReduceOutputs elements; more outputs only for an
// unsplit reduction with an epilogue (one InstrAcc), each of Keep's length
// and storing an epilogue value; prologue loads of Shape's length and
// epilogue loads of Keep's; and blocks that are a power of two dividing
// the padded leaves.
func validateReduce(p *Program, k *Kernel) string {
	if msg := checkPlain(k, false); msg != "" {
		return msg
	}
	acc := k.AccIndex()
	if len(k.Stores) != len(k.Outputs) {
		return fmt.Sprintf("%d stores for %d outputs", len(k.Stores), len(k.Outputs))
	}
	if len(k.Outputs) == 0 || len(k.Outputs) > 1 && (acc < 0 || k.Blocks > 1) {
		return fmt.Sprintf("sum has %d outputs; more than one needs an epilogue (an InstrAcc) and no blocks", len(k.Outputs))
	}
	for j, o := range k.Outputs[1:] {
		if p.Buffers[o].Len != k.Keep.Len() {
			return fmt.Sprintf("epilogue output buf%d has %d elements, want %d", o, p.Buffers[o].Len, k.Keep.Len())
		}
		if int(k.Stores[j+1]) < acc {
			return fmt.Sprintf("epilogue output buf%d stores prologue value v%d", o, k.Stores[j+1])
		}
	}
	if acc >= 0 && int(k.Stores[0]) >= acc {
		return fmt.Sprintf("reduces v%d, which is not a prologue value", k.Stores[0])
	}
	for j, in := range k.Body {
		if in.Kind == InstrAcc && j != acc {
			return fmt.Sprintf("v%d: a reduction has one InstrAcc", j)
		}
		n, space := k.Shape.Len(), "prologue"
		if acc >= 0 && j > acc {
			n, space = k.Keep.Len(), "epilogue"
			for a := 0; in.Kind == InstrOp && a < in.Op.Info().Args; a++ {
				if int(in.Args[a]) < acc {
					return fmt.Sprintf("epilogue value v%d uses prologue value v%d", j, in.Args[a])
				}
			}
		}
		if in.Kind == InstrLoad && in.Operand >= 0 && in.Operand < len(k.Inputs) && k.Inputs[in.Operand].Shape.Len() != n {
			return fmt.Sprintf("%s value v%d loads %v, want %d elements", space, j, k.Inputs[in.Operand].Shape, n)
		}
	}
	if !k.Reduce.IsReduction() {
		return fmt.Sprintf("reduces by %v, which is not a reduction", k.Reduce)
	}
	if _, err := reduceShape(-1, k.Reduce, []Shape{k.Shape}, k.Keep, nil); err != nil {
		return fmt.Sprintf("keeps %v of %v: %s", k.Keep, k.Shape, err.Msg)
	}
	if msg := checkOutputs(p, k, k.ReduceOutputs(), true); msg != "" {
		return msg
	}
	if k.Blocks > 1 {
		leaves := 1
		for leaves < k.Shape.Len()/k.Keep.Len() {
			leaves *= 2
		}
		if k.Blocks&(k.Blocks-1) != 0 || leaves%k.Blocks != 0 {
			return fmt.Sprintf("splits into %d blocks, which is not a power of two dividing a sum's %d leaves and its output", k.Blocks, leaves)
		}
	}
	return ""
}

// reduceLoad: a reduction's prologue loads at the leaves (Shape), its
// epilogue at the outputs (checked by validateReduce).
func reduceLoad(k *Kernel, j, n int) bool {
	acc := k.AccIndex()
	return n == k.Shape.Len() || acc >= 0 && j > acc
}

// rowsLoad: a rows kernel loads per leaf (Shape) or per row (Keep).
func rowsLoad(k *Kernel, _, n int) bool { return n == k.Shape.Len() || n == k.Keep.Len() }

func elementwiseFlops(k *Kernel) int64 {
	return SatMul(BodyFlops(k.Body), int64(k.Shape.Len()))
}

func matmulFlops(k *Kernel) int64 {
	mn := SatMul(SatMul(int64(k.M), int64(k.N)), int64(k.Batch()))
	return SatAdd(SatMul(SatMul(2, mn), int64(k.K)), SatMul(BodyFlops(k.Body), mn))
}

func reduceFlops(k *Kernel) int64 {
	acc := k.AccIndex()
	pro, epi := k.Body, []Instr(nil)
	if acc >= 0 {
		pro, epi = k.Body[:acc], k.Body[acc:]
	}
	leaves := int64(k.Shape.Len())
	n := SatMul(BodyFlops(pro), leaves)
	n = SatAdd(n, max(leaves-int64(k.ReduceOutputs()), 0))
	return SatAdd(n, SatMul(BodyFlops(epi), int64(k.Keep.Len())))
}

func convFlops(k *Kernel) int64 {
	out := int64(k.Shape.Len())
	taps := int64(Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs).Taps())
	return SatAdd(SatMul(SatMul(2, out), taps), SatMul(BodyFlops(k.Body), out))
}

func poolFlops(k *Kernel) int64 {
	out := int64(k.Shape.Len())
	c := Pool2DOf(k.Inputs[0].Shape, k.Attrs)
	return SatAdd(SatMul(out, int64(c.KH*c.KW)), SatMul(BodyFlops(k.Body), out))
}

// rowsFlops: a rows kernel runs what its parts do.
func rowsFlops(k *Kernel) int64 {
	var n int64
	for j := range k.Parts {
		q := &k.Parts[j]
		n = SatAdd(n, q.Kind.Info().Flops(q))
	}
	return n
}

// BodyFlops returns the operations of one evaluation of body: each op's
// cost as the op table gives it for one element.
func BodyFlops(body []Instr) int64 {
	var n int64
	for _, in := range body {
		if in.Kind == InstrOp {
			n = SatAdd(n, in.Op.Info().Cost(nil, Shape{}))
		}
	}
	return n
}

// loads reports whether Body[j] of k may load an operand of n elements
// (KernelInfo.Load).
func loads(k *Kernel, j, n int) bool {
	if f := k.Kind.Info().Load; f != nil {
		return f(k, j, n)
	}
	return n == k.Shape.Len()
}
