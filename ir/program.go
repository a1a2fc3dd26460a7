package ir

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// Program is a graph lowered to kernels: what every backend runs. Passes
// produce it (see package passes); codegen packages turn each Kernel into
// source for one target. A Program is immutable once built.
//
// A Program that passed ValidateProgram is held as a Sealed (Seal does
// both; passes.Compile returns one). Code generators and backends take
// only a Sealed and trust its invariants without checking them again.
//
// Invariants:
//   - Kernels are in execution order: a kernel reads only buffers that are
//     inputs or written by an earlier kernel;
//   - every buffer other than an input is written by exactly one kernel;
//   - every Instr argument refers to an earlier Instr of the same Body.
type Program struct {
	Buffers []Buffer
	Kernels []Kernel
	Outputs []ProgramOutput
}

// Buffer is one device tensor of Len float32 elements, holding the value of
// graph node Node. Input buffers carry Data, uploaded before any kernel runs.
type Buffer struct {
	Len   int
	Shape Shape
	Node  NodeID
	Input bool
	Data  []float32 // when Input
	// DType is the elements' dtype (F32, the zero value, unless set).
	// Kernels compute float32 only so far: ValidateProgram refuses any
	// other by name, so no backend narrows a value silently.
	DType DType
}

// ProgramOutput is a named result: a buffer to read back, or, when the
// whole output was folded at compile time (Buffer < 0), the constant Const
// repeated over Shape.
type ProgramOutput struct {
	Name   string
	Shape  Shape
	Buffer int
	Const  float32
}

// KernelKind says what loop a kernel runs; its row of the kernel table
// (Info, see KernelInfo) says what it needs and costs.
type KernelKind uint8

// The kernel kinds.
const (
	// KernelElementwise: for each element i of Shape, evaluate Body and store
	// Body[Stores[k]] to Outputs[k][i].
	KernelElementwise KernelKind = iota
	// KernelMatmul: C = Inputs[0] × Inputs[1] with the reference order
	// ([M,K] × [K,N]), once per matrix of a batch: Shape is [..., M,N]
	// and the operands [..., M,K] and [..., K,N] with the same batch
	// dimensions (a broadcast one has stride 0; see Operand.Matrix); then
	// Body is an epilogue evaluated per element of Shape, where InstrAcc
	// is C's element; stores as for elementwise.
	KernelMatmul
	// KernelReduce: a reduction (Reduce: any row with a Combine, such as
	// sum or max; String calls the kind "sum"). Body is a prologue
	// evaluated per element of Shape; Body[Stores[0]] is reduced to each
	// element of the kept shape Keep (Shape with 1 at each reduced axis; []
	// or all ones: one output) by the pairwise reference tree of Reduce
	// (ReductionOf gives each output's leaves), written to Outputs[0][o].
	// With Blocks > 1 the kernel does the lower part of each output's tree
	// only: its P leaves (padded with the identity to a power of two) are
	// cut into Blocks aligned blocks and Outputs[0][o*Blocks+b] is block b's
	// tree; a KernelReduce over those values completes the same tree.
	// An unsplit reduction may end in an epilogue: the instructions after
	// the Body's one InstrAcc are evaluated per output element o, with
	// InstrAcc the reduced value of o and loads at element o of operands
	// of Keep's length, and Body[Stores[k]] is written to Outputs[k][o] for
	// k ≥ 1 (Outputs[0] still gets the reduced values). Epilogue values use
	// only the InstrAcc and later values; prologue values only earlier
	// ones.
	KernelReduce
	// KernelLife: one toroidal Life step of Inputs[0] ([H,W] = Shape) into
	// Outputs[0]. Body is empty.
	KernelLife
	// KernelRows: a row-resident kernel, reductions and the elementwise
	// work before and after them in one pass over each row (see rows.go).
	KernelRows
	// KernelConv: a 2-D convolution (ir.Conv2D: Inputs[0] is x, Inputs[1]
	// the weight, Attrs the conv2d node's) into an accumulator per element
	// of Shape [N,M,OH,OW], in cpuref's order (cpuref.Conv2D); then Body
	// is an epilogue as for matmul, InstrAcc the accumulator.
	KernelConv
	// KernelPool: a 2-D max pooling (ir.Pool2D: Inputs[0] is x, Attrs the
	// maxpool2d node's) into an accumulator per element of Shape
	// [N,C,OH,OW], in cpuref's order (cpuref.MaxPool2D); then Body is an
	// epilogue as for matmul, InstrAcc the accumulator.
	KernelPool
	// KernelConvTranspose: a 2-D transposed convolution
	// (ir.ConvTranspose2D: Inputs[0] is x, Inputs[1] the weight, Attrs the
	// conv_transpose2d node's) into an accumulator per element of Shape
	// [N,M,OH,OW], in cpuref's order (cpuref.ConvTranspose2D); then Body is
	// an epilogue as for matmul, InstrAcc the accumulator.
	KernelConvTranspose
	// KernelPoolGrad: maxpool2d's input gradient (ir.Pool2D of Inputs[0],
	// x; Inputs[1] is the output gradient; Attrs the maxpool2d_grad
	// node's) into an accumulator per element of Shape [N,C,H,W], in
	// cpuref's order (cpuref.MaxPool2DGrad); then Body is an epilogue as
	// for matmul, InstrAcc the accumulator.
	KernelPoolGrad
	// KernelResize: a 2-D resize (ir.Resize2D: Inputs[0] is x, Attrs the
	// resize2d node's) into an accumulator per element of Shape
	// [N,C,OH,OW], in cpuref's order (cpuref.Resize2D); then Body is an
	// epilogue as for matmul, InstrAcc the accumulator.
	KernelResize
	// KernelPad: a pad (ir.Pad: Inputs[0] is x, Attrs the pad node's)
	// copied into an accumulator per element of Shape (the output), one
	// element of x or the constant; then Body is an epilogue as for
	// matmul, InstrAcc the accumulator.
	KernelPad
	// KernelAttention: attention (ir.Attention: Inputs[0..3] are q, k, v
	// and the mask read as the scores' shape, K of them: 3 without the
	// mask, 4 with it; Attrs the attention node's)
	// into an accumulator per element of Shape [...,S,E], in cpuref's
	// order (cpuref.Attention); then Body is an epilogue as for matmul,
	// InstrAcc the accumulator. With Blocks = P ≥ 2 (the split order's
	// parts, Attention.Parts, run in workgroups of their own: passes'
	// split) Shape is [...,S,P,E+2] and Body is the InstrAcc alone: per
	// query row and part c, the part's undivided o (E values), then its m
	// and its l, which a KernelAttentionCombine reads.
	KernelAttention
	// KernelAttentionCombine: the split order's combine (ir/attention.go)
	// of the parts a KernelAttention with Blocks wrote (Inputs[0],
	// [...,S,P,E+2]) into an accumulator per element of Shape [...,S,E]:
	// M, w = exp(m − M), L and O over the parts ascending, then O / L;
	// then Body is an epilogue as for matmul, InstrAcc the accumulator.
	KernelAttentionCombine

	// numKernelKinds is no kind: one past the last, the length of every
	// table indexed by kind. A new kind goes above it, so no bound is kept
	// by hand.
	numKernelKinds
)

// Operand is a buffer a kernel reads through a strided index map: the
// element at multi-index idx of the logical Shape is buffer element
// Offset + Σ idx[d]·Strides[d]. Row-major strides (RowMajor) read the
// buffer plainly (a reshaped buffer too: only Shape differs); a transpose
// permutes them; a broadcast dimension has stride 0. A dimension of size
// 1 contributes nothing, whatever its stride. Offset is where a slice of
// the buffer starts (a Slice or Split read in place, see view.go); only
// kinds whose row says KernelInfo.Offsets take a non-zero one.
type Operand struct {
	Buffer  int
	Shape   Shape // logical shape, as the kernel sees it
	Strides []int // one per dimension of Shape, each ≥ 0
	Offset  int   // the buffer element of multi-index 0, ≥ 0
}

// PlainOperand returns the operand reading buffer as row-major shape s.
func PlainOperand(buffer int, s Shape) Operand {
	return Operand{Buffer: buffer, Shape: s, Strides: RowMajor(s)}
}

// RowMajor returns the strides of a contiguous row-major tensor of shape s.
func RowMajor(s Shape) []int {
	st := make([]int, len(s))
	n := 1
	for d := len(s) - 1; d >= 0; d-- {
		st[d] = n
		n *= s[d]
	}
	return st
}

// Plain reports whether op reads its buffer in row-major order: logical
// element i (row-major over Shape) is buffer element i.
func (op Operand) Plain() bool {
	if op.Offset != 0 {
		return false
	}
	n := 1
	for d := len(op.Shape) - 1; d >= 0; d-- {
		if op.Shape[d] != 1 && op.Strides[d] != n {
			return false
		}
		n *= op.Shape[d]
	}
	return true
}

// Transposed reports whether op is 2-D and reads, in place, a row-major
// buffer holding its [Shape[1],Shape[0]] transpose (strides [1,Shape[0]]),
// and is not also Plain (as it is when a dimension is 1).
func (op Operand) Transposed() bool {
	return len(op.Shape) == 2 && op.Offset == 0 && !op.Plain() && op.Strides[0] == 1 && op.Strides[1] == op.Shape[0]
}

// Inner returns the matrix part of a matmul operand (rank ≥ 2): its last
// two dimensions, relative to the matrix's first element (Offset 0: that
// is Batch's).
func (op Operand) Inner() Operand {
	r := len(op.Shape)
	return Operand{Buffer: op.Buffer, Shape: op.Shape[r-2:], Strides: op.Strides[r-2:]}
}

// Batch returns the batch part of a matmul operand (rank ≥ 2): the
// dimensions before the last two, whose strides may be anything (0 for a
// broadcast one), and op's Offset. Its Index of batch number z is that
// matrix's first element.
func (op Operand) Batch() Operand {
	r := len(op.Shape)
	return Operand{Buffer: op.Buffer, Shape: op.Shape[:r-2], Strides: op.Strides[:r-2], Offset: op.Offset}
}

// Matrix reports whether a matmul kernel can read op in place: its
// matrix part (Inner) is plain or transposed, whatever its batch strides.
func (op Operand) Matrix() bool {
	if len(op.Shape) < 2 {
		return false
	}
	in := op.Inner()
	return in.Plain() || in.Transposed()
}

// MatrixTransposed reports whether a matmul operand's matrix part is
// read transposed (see Transposed).
func (op Operand) MatrixTransposed() bool { return len(op.Shape) >= 2 && op.Inner().Transposed() }

// BroadcastTo returns op read as shape to, which op's shape broadcasts to
// by numpy's rule: new leading dimensions and stretched ones get stride 0.
func (op Operand) BroadcastTo(to Shape) Operand {
	st := make([]int, len(to))
	off := len(to) - len(op.Shape)
	for d, n := range op.Shape {
		if n == to[d+off] {
			st[d+off] = op.Strides[d]
		}
	}
	return Operand{Buffer: op.Buffer, Shape: to, Strides: st, Offset: op.Offset}
}

// Coalesced returns the operand that reads the same buffer elements in the
// same row-major order with the fewest dimensions: dimensions of size 1
// are dropped, and each dimension is merged into the one before it where
// that one's stride is its stride times its size (a contiguous run, or a
// run of broadcast dimensions, all stride 0). A plain operand coalesces to
// one dimension of stride 1 (none, for one element).
func (op Operand) Coalesced() Operand {
	c := Operand{Buffer: op.Buffer, Shape: Shape{}, Strides: []int{}, Offset: op.Offset}
	for d, n := range op.Shape {
		if n == 1 {
			continue
		}
		if k := len(c.Shape) - 1; k >= 0 && c.Strides[k] == op.Strides[d]*n {
			c.Shape[k] *= n
			c.Strides[k] = op.Strides[d]
			continue
		}
		c.Shape = append(c.Shape, n)
		c.Strides = append(c.Strides, op.Strides[d])
	}
	return c
}

// span returns one past the largest buffer element op reaches, or -1 when
// that exceeds limit (so a corrupt stride cannot overflow).
func (op Operand) span(limit int) int {
	if op.Offset < 0 || op.Offset >= limit {
		return -1
	}
	end := op.Offset
	for d, n := range op.Shape {
		s := op.Strides[d]
		if n == 1 || s == 0 {
			continue
		}
		if s > limit || n-1 > limit/s || end > limit-(n-1)*s {
			return -1
		}
		end += (n - 1) * s
	}
	return end + 1
}

// InstrKind says where an Instr's value comes from.
type InstrKind uint8

// The instruction kinds.
const (
	InstrConst InstrKind = iota // Scalar
	InstrLoad                   // element i of Inputs[Operand]
	InstrAcc                    // matmul accumulator of this element (KernelMatmul only)
	InstrOp                     // Op (elementwise) applied to Args (and Scalar for Op*Scalar)
)

// Instr is one SSA value of a kernel body. Args index earlier Instrs.
type Instr struct {
	Kind    InstrKind
	Op      Op
	Args    [2]int32
	Scalar  float32
	Operand int
	Node    NodeID // graph node this value computes, or -1
	DType   DType  // the value's dtype (F32 unless set; see Buffer.DType)
}

// Tile holds matmul and conv tiling parameters, chosen by the tiling
// pass. A conv kernel's tile is either its implicit GEMM's (Conv2D.GEMM:
// BM output pixels × BN output channels of a group per workgroup, TM×TN
// per thread, BK taps per step, Vector 1), or, with BK = 0, its window
// kernel's (depthwise, CG = 1: BM output rows × BN output columns of one
// channel per workgroup, TM consecutive rows per thread, TN = 1, every
// tap of the staged input window); the zero Tile is the GEMM's default.
type Tile struct {
	BM, BN int // output tile per workgroup (rows, cols)
	TM, TN int // output tile per thread (register tile)
	BK     int // k-step staged through workgroup memory per iteration
	Vector int // vector width of loads (1 or 4)
	// Stages selects the vec4 matmul kernel: 0 the first one (a thread's
	// register tile adjacent, one workgroup buffer, two barriers a
	// k-tile); 1 or 2 the staged one with that many workgroup buffers
	// (2: double-buffered, one barrier a k-tile), its workgroup arrays
	// indexed by a constant k-step and each thread's vec4s strided by the
	// thread count. Every kernel adds the same products in the same
	// order; only speed differs. The scalar matmul has one form (0); a
	// conv GEMM tile with 2 is double-buffered the same way.
	Stages int `json:",omitempty"`
	// Opts are options of the double-buffered vec4 kernel (Stages 2):
	// each issues the same products in the same order with fewer
	// instructions, so only speed differs.
	Opts TileOpts `json:",omitempty"`
}

// TileOpts is a set of the double-buffered vec4 matmul kernel's options
// (ir.Tile.Opts); passes.ParseTile reads each as a letter after "s2".
type TileOpts uint8

const (
	// TileLean ("l"): operands read from global memory as vec4s (one load
	// and one bounds clamp a vec4, not four) where their alignment allows,
	// no guard where the shape divides the tile, and the last k-tile
	// peeled so the loop tests nothing but its counter.
	TileLean TileOpts = 1 << iota
	// TileWarp ("w"): each 32 threads (an NVIDIA warp) compute an 8×4 block
	// of the thread grid rather than 16×2, so a warp's workgroup-memory
	// reads of B span 8 vec4s, not 16. Without l it keeps every guard but
	// takes l's k loop (the last k-tile peeled).
	TileWarp
	// TileUnroll ("u"): the k loop unrolled by two k-tiles, so both
	// workgroup buffers are indexed by constants (twice the code).
	TileUnroll
)

// Kernel is one dispatch. Which fields matter depends on Kind.
type Kernel struct {
	Name    string
	Kind    KernelKind
	Nodes   []NodeID  // graph nodes computed by this kernel
	Inputs  []Operand // buffers read
	Outputs []int     // buffers written
	Shape   Shape     // iteration space: result shape; for sum the summed shape
	Body    []Instr
	Stores  []int32 // Body index whose value goes to Outputs[k]
	M, K, N int     // matmul dimensions; attention: K is its own operands (3: q, k, v; 4: and the mask), the epilogue's after them
	Tile    Tile    // matmul or conv tiling
	Blocks  int     // sum: blocks per output reduced separately (0 or 1: the whole tree); attention: its parts
	Reduce  Op      // KernelReduce: the reduction, a row with a Combine (OpSum, OpMax, ...)
	Keep    Shape   // sum, rows: the kept shape ([] for one output)
	// Attrs are, for a kernel whose root op has attributes (conv2d, say),
	// that node's Attrs, in its row's layout (see ir.AttrSpec).
	Attrs []int
	// Parts are, for a rows kernel, the kernels it fuses, in order: a
	// target that cannot run it runs them instead (Program.Unfused). In
	// parts, buffer -1-j is the rows kernel's Scratch[j].
	Parts   []Kernel
	Scratch []Buffer
}

// AccIndex returns the index of the Body's InstrAcc, or -1: a reduction's
// epilogue starts there.
func (k *Kernel) AccIndex() int {
	for j, in := range k.Body {
		if in.Kind == InstrAcc {
			return j
		}
	}
	return -1
}

// Batch returns how many matrix products a matmul kernel computes: the
// product of Shape's batch dimensions (1 for a 2-D matmul).
func (k *Kernel) Batch() int { return Shape(k.Shape[:max(len(k.Shape)-2, 0)]).Len() }

// ReduceOutputs returns how many values a reduction kernel writes: one per
// element of Keep and block.
func (k *Kernel) ReduceOutputs() int { return k.Keep.Len() * max(k.Blocks, 1) }

// Bindings returns the number of storage buffers the kernel binds.
func (k *Kernel) Bindings() int { return len(k.Inputs) + len(k.Outputs) }

// tileText is a matmul tile in the program's text form: BMxBN per
// workgroup / TMxTN per thread, the k-step and the load width, or "none"
// before the tile pass chose one.
func tileText(t Tile) string {
	if t == (Tile{}) {
		return "none"
	}
	s := fmt.Sprintf("%dx%d/%dx%d k%d vec%d", t.BM, t.BN, t.TM, t.TN, t.BK, t.Vector)
	if t.Stages != 0 {
		s += fmt.Sprintf(" stages%d", t.Stages)
	}
	if t.Opts&TileLean != 0 {
		s += " lean"
	}
	if t.Opts&TileUnroll != 0 {
		s += " unroll"
	}
	if t.Opts&TileWarp != 0 {
		s += " warp"
	}
	return s
}

// String returns the program's text form.
func (p *Program) String() string {
	var b strings.Builder
	for i, buf := range p.Buffers {
		kind := "tmp"
		if buf.Input {
			kind = "input"
		}
		fmt.Fprintf(&b, "buf%d = %s %v (node %d)\n", i, kind, buf.Shape, buf.Node)
	}
	for _, k := range p.Kernels {
		fmt.Fprintf(&b, "kernel %s %s %v nodes=%v", k.Name, k.Kind, k.Shape, k.Nodes)
		text := ""
		if k.Kind.Valid() && k.Kind.Info().Text != nil {
			text = k.Kind.Info().Text(&k)
		}
		b.WriteString(text)
		if k.Blocks > 1 {
			fmt.Fprintf(&b, " blocks=%d", k.Blocks)
		}
		if len(k.Attrs) > 0 {
			fmt.Fprintf(&b, " attrs=%v", Shape(k.Attrs))
		}
		b.WriteString("\n")
		for j, in := range k.Inputs {
			switch {
			case in.Plain():
				fmt.Fprintf(&b, "  in%d = buf%d %v\n", j, in.Buffer, in.Shape)
			case in.Transposed():
				fmt.Fprintf(&b, "  in%d = buf%dᵀ %v\n", j, in.Buffer, in.Shape)
			case in.Offset != 0:
				fmt.Fprintf(&b, "  in%d = buf%d %v strides %v at %d\n", j, in.Buffer, in.Shape, Shape(in.Strides), in.Offset)
			default:
				fmt.Fprintf(&b, "  in%d = buf%d %v strides %v\n", j, in.Buffer, in.Shape, Shape(in.Strides))
			}
		}
		for j, in := range k.Body {
			fmt.Fprintf(&b, "  v%d = %s\n", j, in.text())
		}
		for j, s := range k.Stores {
			fmt.Fprintf(&b, "  buf%d <- v%d\n", k.Outputs[j], s)
		}
	}
	for _, o := range p.Outputs {
		if o.Buffer < 0 {
			fmt.Fprintf(&b, "out %q = const %s %v\n", o.Name, FormatFloat(o.Const), o.Shape)
		} else {
			fmt.Fprintf(&b, "out %q = buf%d %v\n", o.Name, o.Buffer, o.Shape)
		}
	}
	return b.String()
}

func b1(v bool) int {
	if v {
		return 1
	}
	return 0
}

func (in Instr) text() string {
	switch in.Kind {
	case InstrConst:
		return "const " + FormatFloat(in.Scalar)
	case InstrLoad:
		return fmt.Sprintf("load in%d", in.Operand)
	case InstrAcc:
		if in.Op != 0 { // a rows kernel's reduction
			return fmt.Sprintf("acc %s v%d", in.Op.Info().Wire, in.Args[0])
		}
		return "acc"
	}
	s := in.Op.String()
	for k := 0; k < in.Op.Info().Args; k++ {
		sep := " "
		if k > 0 {
			sep = ", "
		}
		s += fmt.Sprintf("%sv%d", sep, in.Args[k])
	}
	if in.Op.Info().Scalar {
		s += ", " + FormatFloat(in.Scalar)
	}
	return s
}

// validateKernelShape checks what kernel k's kind needs of it, by its
// row of the kernel table (KernelInfo.Validate), returning ""
// or what is wrong.
func validateKernelShape(p *Program, k *Kernel) string {
	if !k.Kind.Valid() {
		return fmt.Sprintf("unknown kind %d", k.Kind)
	}
	return k.Kind.Info().Validate(p, k)
}

// ValidateProgram checks the Program invariants: buffers are in range,
// each non-input buffer has one writer, kernels read only what is already
// written, each kernel kind gets the operands, outputs and blocks it needs
// (see validateKernelShape), and bodies apply only elementwise ops to
// earlier values and existing operands. These are the facts code
// generators rely on.
func ValidateProgram(p *Program) error {
	programChecks.Add(1)
	return validateProgram(p)
}

func validateProgram(p *Program) error {
	written := make([]bool, len(p.Buffers))
	for i, b := range p.Buffers {
		written[i] = b.Input
		if b.Len != b.Shape.Len() {
			return Errorf(CodeInternal, -1, "", "buf%d: length %d does not match shape %v", i, b.Len, b.Shape)
		}
		if b.DType != F32 {
			return Errorf(CodeUnsupported, int(b.Node), "dtype", "buf%d holds %v: gpucc's kernels compute float32 only so far", i, b.DType)
		}
	}
	inRange := func(b int) bool { return b >= 0 && b < len(p.Buffers) }
	for _, k := range p.Kernels {
		bad := func(format string, a ...any) error {
			return Errorf(CodeInternal, -1, "", "kernel %s: "+format, append([]any{k.Name}, a...)...)
		}
		for _, in := range k.Inputs {
			if !inRange(in.Buffer) || !written[in.Buffer] {
				return bad("reads buf%d before it is written", in.Buffer)
			}
			if len(in.Strides) != len(in.Shape) || slices.ContainsFunc(in.Strides, func(s int) bool { return s < 0 }) ||
				slices.ContainsFunc(in.Shape, func(d int) bool { return d < 1 }) {
				return bad("operand buf%d of shape %v has strides %v, want one ≥ 0 per dimension", in.Buffer, in.Shape, in.Strides)
			}
			if n := p.Buffers[in.Buffer].Len; in.span(n) < 0 || in.span(n) > n {
				return bad("operand buf%d (%d elements) read as %v with strides %v at %d reaches past its end", in.Buffer, n, in.Shape, in.Strides, in.Offset)
			}
			if in.Offset != 0 && k.Kind.Valid() && !k.Kind.Info().Offsets {
				return bad("operand buf%d is read at offset %d, which a %s kernel does not take (KernelInfo.Offsets)", in.Buffer, in.Offset, k.Kind)
			}
		}
		for _, o := range k.Outputs {
			if !inRange(o) || written[o] {
				return bad("writes buf%d, which is an input or already written", o)
			}
			written[o] = true
		}
		if err := validateKernelShape(p, &k); err != "" {
			return bad("%s", err)
		}
		if msg := k.Kind.Info().DTypes(p, &k); msg != "" { // a dtype the kind cannot compute, by name
			return Errorf(CodeUnsupported, -1, "dtype", "kernel %s: %s", k.Name, msg)
		}
		for j, in := range k.Body {
			switch in.Kind {
			case InstrLoad:
				if in.Operand < 0 || in.Operand >= len(k.Inputs) {
					return bad("v%d loads missing operand %d", j, in.Operand)
				}
				if s := k.Inputs[in.Operand].Shape; !loads(&k, j, s.Len()) {
					return bad("v%d loads operand %d of shape %v in a kernel over %v", j, in.Operand, s, k.Shape)
				}
			case InstrAcc:
				if !k.Kind.Info().Acc {
					return bad("v%d reads an accumulator outside a matmul or a reduction", j)
				}
			case InstrOp:
				if !in.Op.IsElementwise() {
					return bad("v%d: op %v is not elementwise", j, in.Op)
				}
				for a := 0; a < in.Op.Info().Args; a++ {
					if in.Args[a] < 0 || int(in.Args[a]) >= j {
						return bad("v%d uses v%d, which is not earlier", j, in.Args[a])
					}
				}
			}
		}
		for _, s := range k.Stores {
			if s < 0 || int(s) >= len(k.Body) {
				return bad("stores missing value v%d", s)
			}
		}
	}
	for _, o := range p.Outputs {
		if o.Buffer >= 0 && (!inRange(o.Buffer) || !written[o.Buffer]) {
			return Errorf(CodeInternal, -1, "", "output %q reads unwritten buf%d", o.Name, o.Buffer)
		}
	}
	return nil
}

// Key returns an encoding of the program's structure: every field of every
// Kernel except the values of constants (Instr.Scalar). Two programs with
// the same key get the same code from a target that reads its constants
// from a parameter block (WGSL, see codegen.Lang.Const), so caches of
// generated code key on it. A new Kernel field must be added here; the
// test walks the struct by reflection and fails on one that is left out.
func (p *Program) Key() []byte {
	// A hand-rolled encoding: this runs on every warm run, where
	// formatting the kernels with fmt cost more than everything else.
	b := make([]byte, 0, 256)
	for i := range p.Kernels {
		b = appendKernelKey(b, &p.Kernels[i])
	}
	return b
}

// appendKernelKey appends kernel k's part of Program.Key to b.
func appendKernelKey(b []byte, k *Kernel) []byte {
	u := func(vs ...int) {
		for _, v := range vs {
			b = binary.AppendVarint(b, int64(v))
		}
	}
	shape := func(s Shape) {
		u(len(s))
		u(s...)
	}
	u(len(k.Name))
	b = append(b, k.Name...)
	// Stages is 0-2: the options above its byte leave every older key as it was.
	u(int(k.Kind), k.M, k.K, k.N, k.Tile.BM, k.Tile.BN, k.Tile.TM, k.Tile.TN, k.Tile.BK, k.Tile.Vector, k.Tile.Stages|int(k.Tile.Opts)<<8, k.Blocks, int(k.Reduce))
	shape(k.Shape)
	u(b1(k.Keep != nil))
	shape(k.Keep)
	shape(k.Attrs)
	u(len(k.Nodes))
	for _, n := range k.Nodes {
		u(int(n))
	}
	u(len(k.Inputs))
	for _, in := range k.Inputs {
		u(in.Buffer)
		shape(in.Shape)
		shape(in.Strides)
		if in.Offset != 0 { // a negative mark (no other value here is): offset-0 kernels keep their keys
			u(-100, in.Offset)
		}
	}
	u(len(k.Outputs))
	u(k.Outputs...)
	u(len(k.Body))
	for _, in := range k.Body { // constants (Scalar) are left out on purpose
		u(int(in.Kind), int(in.Op), int(in.Args[0]), int(in.Args[1]), in.Operand, int(in.Node))
		if in.DType != F32 { // a negative mark: float32 kernels keep their keys
			u(-1 - int(in.DType))
		}
	}
	u(len(k.Stores))
	for _, s := range k.Stores {
		u(int(s))
	}
	u(len(k.Scratch))
	for _, s := range k.Scratch {
		u(s.Len, int(s.Node))
		shape(s.Shape)
	}
	u(len(k.Parts))
	for i := range k.Parts {
		b = appendKernelKey(b, &k.Parts[i])
	}
	return b
}

// validateConv checks a conv kernel: x and the weight as its first two
// operands, attributes that conv2d's shape rule accepts for them, and a
// Shape that is the convolution's output.
func validateConv(k *Kernel) string {
	if len(k.Inputs) < 2 {
		return fmt.Sprintf("conv needs 2 operands, has %d", len(k.Inputs))
	}
	x, w := k.Inputs[0].Shape, k.Inputs[1].Shape
	if err := checkAttrs(-1, OpConv2D, k.Attrs, Limits{MaxAttrValues: len(k.Attrs)}); err != nil {
		return "conv attributes: " + err.Msg
	}
	out, err := conv2dShape(-1, OpConv2D, []Shape{x, w}, nil, k.Attrs)
	if err != nil {
		return "conv: " + err.Msg
	}
	if !out.Equal(k.Shape) {
		return fmt.Sprintf("conv of %v and %v gives %v, kernel shape is %v", x, w, out, k.Shape)
	}
	return ""
}

// validatePool checks a pool kernel: x as its first operand, attributes
// that maxpool2d's shape rule accepts for it, and a Shape that is the
// pooling's output.
func validatePool(k *Kernel) string {
	if len(k.Inputs) < 1 {
		return "pool needs an operand"
	}
	x := k.Inputs[0].Shape
	if err := checkAttrs(-1, OpMaxPool2D, k.Attrs, Limits{MaxAttrValues: len(k.Attrs)}); err != nil {
		return "pool attributes: " + err.Msg
	}
	out, err := maxpool2dShape(-1, OpMaxPool2D, []Shape{x}, nil, k.Attrs)
	if err != nil {
		return "pool: " + err.Msg
	}
	if !out.Equal(k.Shape) {
		return fmt.Sprintf("pool of %v gives %v, kernel shape is %v", x, out, k.Shape)
	}
	return ""
}
