package ir

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Program is a graph lowered to kernels: what every backend runs. Passes
// produce it (see package passes); codegen packages turn each Kernel into
// source for one target. A Program is immutable once built.
//
// A Program is sealed once it has passed ValidateProgram (Seal does both;
// passes.Compile returns sealed programs). Code generators accept only
// sealed programs and trust their invariants without checking them again.
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
	sealed  bool
}

// Seal validates p (ValidateProgram) and marks it sealed.
func Seal(p *Program) error {
	if err := ValidateProgram(p); err != nil {
		return err
	}
	p.sealed = true
	return nil
}

// Sealed reports whether p passed Seal.
func (p *Program) Sealed() bool { return p.sealed }

// Buffer is one device tensor of Len float32 elements, holding the value of
// graph node Node. Input buffers carry Data, uploaded before any kernel runs.
type Buffer struct {
	Len   int
	Shape Shape
	Node  NodeID
	Input bool
	Data  []float32 // when Input
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

// KernelKind says what loop a kernel runs.
type KernelKind uint8

// The kernel kinds.
const (
	// KernelElementwise: for each element i of Shape, evaluate Body and store
	// Body[Stores[k]] to Outputs[k][i].
	KernelElementwise KernelKind = iota
	// KernelMatmul: C = Inputs[0] × Inputs[1] with the reference order
	// ([M,K] × [K,N]); then Body is an epilogue evaluated per element of
	// [M,N], where InstrAcc is C's element; stores as for elementwise.
	KernelMatmul
	// KernelSum: Body is a prologue evaluated per element of Shape; the
	// pairwise reference sum of Body[Stores[0]] over all elements is written
	// to Outputs[0][0]. With Blocks > 1 the kernel does the lower part of
	// that tree only: the P leaves (padded with -0 to a power of two) are cut
	// into Blocks aligned blocks and Outputs[0][b] is block b's tree sum; a
	// KernelSum over those Blocks values completes the same tree.
	KernelSum
	// KernelLife: one toroidal Life step of Inputs[0] ([H,W] = Shape) into
	// Outputs[0]. Body is empty.
	KernelLife
)

func (k KernelKind) String() string {
	return [...]string{"elementwise", "matmul", "sum", "life"}[k]
}

// Operand is a buffer a kernel reads, through one of three index maps
// (never two at once). Plain: logical element i is buffer element i (a
// reshaped buffer reads this way too; only Shape differs). Transposed: the
// buffer holds the [Shape[1],Shape[0]] transpose of the 2-D logical operand
// of Shape, and the kernel reads it in place: logical (r,c) is buffer
// element c*Shape[0]+r. Broadcast > 0: the buffer, of Broadcast elements,
// is repeated over Shape: logical element i is buffer element
// i % Broadcast (a trailing broadcast, see ir.OpBroadcast).
type Operand struct {
	Buffer     int
	Transposed bool
	Broadcast  int   // the buffer's length when read broadcast, else 0
	Shape      Shape // logical shape, as the kernel sees it
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
}

// Tile holds matmul tiling parameters, chosen by the tiling pass.
type Tile struct {
	BM, BN int // output tile per workgroup (rows, cols)
	TM, TN int // output tile per thread (register tile)
	BK     int // k-step staged through workgroup memory per iteration
	Vector int // vector width of loads (1 or 4)
}

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
	M, K, N int     // matmul dimensions
	Tile    Tile    // matmul tiling
	Blocks  int     // sum: blocks reduced separately (0 or 1: the whole tree)
}

// Bindings returns the number of storage buffers the kernel binds.
func (k *Kernel) Bindings() int { return len(k.Inputs) + len(k.Outputs) }

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
		if k.Kind == KernelMatmul {
			fmt.Fprintf(&b, " mkn=%dx%dx%d tile=%+v", k.M, k.K, k.N, k.Tile)
		}
		if k.Blocks > 1 {
			fmt.Fprintf(&b, " blocks=%d", k.Blocks)
		}
		b.WriteString("\n")
		for j, in := range k.Inputs {
			t := ""
			if in.Transposed {
				t = "ᵀ"
			}
			if in.Broadcast > 0 {
				t = fmt.Sprintf(" repeated %d", in.Broadcast)
			}
			fmt.Fprintf(&b, "  in%d = buf%d%s %v\n", j, in.Buffer, t, in.Shape)
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

func (in Instr) text() string {
	switch in.Kind {
	case InstrConst:
		return "const " + FormatFloat(in.Scalar)
	case InstrLoad:
		return fmt.Sprintf("load in%d", in.Operand)
	case InstrAcc:
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

// validateKernelShape checks what each kernel kind needs of its operands,
// returning "" or what is wrong: matmul and life read their operands as
// plain or transposed matrices of the right shapes (never broadcast), life
// has one 2-D input and one output, a sum one output of Blocks elements
// (one for a whole sum) and every other kernel outputs of Shape's length,
// and a split sum's blocks are a power of two that divides its padded
// leaves.
func validateKernelShape(p *Program, k *Kernel) string {
	if k.Kind > KernelLife {
		return fmt.Sprintf("unknown kind %d", k.Kind)
	}
	want := k.Shape.Len()
	if k.Kind == KernelSum {
		want = max(k.Blocks, 1)
		if len(k.Outputs) != 1 {
			return fmt.Sprintf("sum has %d outputs, want 1", len(k.Outputs))
		}
	}
	for _, o := range k.Outputs {
		if p.Buffers[o].Len != want {
			return fmt.Sprintf("output buf%d has %d elements, want %d", o, p.Buffers[o].Len, want)
		}
	}
	if k.Kind == KernelLife && (len(k.Inputs) != 1 || len(k.Outputs) != 1 || len(k.Shape) != 2 || len(k.Body) != 0) {
		return "life needs one 2-D input, one output and no body"
	}
	switch k.Kind {
	case KernelMatmul, KernelLife:
		want := []Shape{k.Shape}
		if k.Kind == KernelMatmul {
			want = []Shape{{k.M, k.K}, {k.K, k.N}}
			if !k.Shape.Equal(Shape{k.M, k.N}) {
				return fmt.Sprintf("matmul shape %v is not [%d,%d]", k.Shape, k.M, k.N)
			}
		}
		if len(k.Inputs) < len(want) {
			return fmt.Sprintf("%s needs %d operands, has %d", k.Kind, len(want), len(k.Inputs))
		}
		for j, w := range want {
			in := k.Inputs[j]
			if in.Broadcast > 0 || !in.Shape.Equal(w) {
				return fmt.Sprintf("%s operand %d is %v (broadcast %d), want a plain or transposed %v", k.Kind, j, in.Shape, in.Broadcast, w)
			}
		}
	}
	if k.Blocks > 1 {
		leaves := 1
		for leaves < k.Shape.Len() {
			leaves *= 2
		}
		if k.Kind != KernelSum || k.Blocks&(k.Blocks-1) != 0 || leaves%k.Blocks != 0 || p.Buffers[k.Outputs[0]].Len != k.Blocks {
			return fmt.Sprintf("splits into %d blocks, which is not a power of two dividing a sum's %d leaves and its output", k.Blocks, leaves)
		}
	}
	return ""
}

// ValidateProgram checks the Program invariants: buffers are in range,
// each non-input buffer has one writer, kernels read only what is already
// written, each kernel kind gets the operands, outputs and blocks it needs
// (see validateKernelShape), and bodies apply only elementwise ops to
// earlier values and existing operands. These are the facts code
// generators rely on.
func ValidateProgram(p *Program) error {
	written := make([]bool, len(p.Buffers))
	for i, b := range p.Buffers {
		written[i] = b.Input
		if b.Len != b.Shape.Len() {
			return Errorf(CodeInternal, -1, "", "buf%d: length %d does not match shape %v", i, b.Len, b.Shape)
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
			n := p.Buffers[in.Buffer].Len
			switch {
			case in.Broadcast > 0 && (in.Transposed || in.Broadcast != n || in.Shape.Len()%n != 0):
				return bad("operand buf%d (%d elements) cannot be broadcast %d to %v", in.Buffer, n, in.Broadcast, in.Shape)
			case in.Broadcast == 0 && n != in.Shape.Len():
				return bad("operand buf%d has %d elements, kernel expects %v", in.Buffer, n, in.Shape)
			case in.Transposed && len(in.Shape) != 2:
				return bad("operand buf%d is read transposed but its shape %v is not 2-D", in.Buffer, in.Shape)
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
		if k.Kind != KernelLife && len(k.Stores) != len(k.Outputs) {
			return bad("%d stores for %d outputs", len(k.Stores), len(k.Outputs))
		}
		for j, in := range k.Body {
			switch in.Kind {
			case InstrLoad:
				if in.Operand < 0 || in.Operand >= len(k.Inputs) {
					return bad("v%d loads missing operand %d", j, in.Operand)
				}
			case InstrAcc:
				if k.Kind != KernelMatmul {
					return bad("v%d reads the matmul accumulator outside a matmul", j)
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
	u := func(vs ...int) {
		for _, v := range vs {
			b = binary.AppendVarint(b, int64(v))
		}
	}
	shape := func(s Shape) {
		u(len(s))
		u(s...)
	}
	for i := range p.Kernels {
		k := &p.Kernels[i]
		u(len(k.Name))
		b = append(b, k.Name...)
		u(int(k.Kind), k.M, k.K, k.N, k.Tile.BM, k.Tile.BN, k.Tile.TM, k.Tile.TN, k.Tile.BK, k.Tile.Vector, k.Blocks)
		shape(k.Shape)
		u(len(k.Nodes))
		for _, n := range k.Nodes {
			u(int(n))
		}
		u(len(k.Inputs))
		for _, in := range k.Inputs {
			t := 0
			if in.Transposed {
				t = 1
			}
			u(in.Buffer, t, in.Broadcast)
			shape(in.Shape)
		}
		u(len(k.Outputs))
		u(k.Outputs...)
		u(len(k.Body))
		for _, in := range k.Body { // constants (Scalar) are left out on purpose
			u(int(in.Kind), int(in.Op), int(in.Args[0]), int(in.Args[1]), in.Operand, int(in.Node))
		}
		u(len(k.Stores))
		for _, s := range k.Stores {
			u(int(s))
		}
	}
	return b
}
