// Package passes turns a validated ir.Graph into an ir.Program: it folds
// constants (fold), merges common subexpressions (cse), drops dead nodes
// (dce), sinks views to the loads (views), fuses elementwise chains into
// kernels (fuse), merges the kernels around reductions over rows (rows),
// tiles matmuls (tile) and splits large sums into blocks (split).
//
// # Fusion past the reduction: the rows rule
//
// After fuse, the rows pass (fuseRows) merges the kernels around a
// reduction into one row-resident kernel (ir.KernelRows), so that softmax,
// log-softmax, layernorm, mean and variance are one kernel. It reads only
// kernel kinds, operand index maps and the op table's reduction rows
// (Combine, Identity): no composite has a template, and a user's own
// exp/sum/div chain fuses the same way. Two kernels A and B, B reading an
// output of A (or, when both reduce over the same rows, a buffer A reads:
// a sum and a sum of squares become one pass), merge when
//
//   - one of them at least reduces over rows: a sum kernel (sum or max,
//     unsplit) or a rows kernel whose reduced axes are the trailing ones,
//     with 2 to RowLeaves leaves per row (padded to a power of two); if
//     both do, over the same rows;
//   - the other is elementwise over the rows' leaves or over the rows;
//   - B reads each output of A as the same element (a per-leaf value at
//     its leaf, a per-row value at its row) or as a per-row value
//     broadcast back over its row's leaves, along whatever leading and
//     middle axes the broadcast names;
//   - no other kernel stands between them (depends on A, and B on it);
//   - the result binds at most MaxBindings buffers.
//
// Merging repeats until no pair merges. Outputs that only merged kernels
// read stay in registers; the rows kernel keeps the kernels it replaced
// as its parts, which GLSL runs (Program.Unfused). Each reduction keeps
// the reference's pairwise tree over its row, so results are cpuref's bit
// for bit. Rows of one leaf, reductions over leading or middle axes, split
// sums and rows longer than RowLeaves stay unfused.
//
// What the rule gives, in kernels: a connected composition of elementwise
// ops and reductions over the trailing axis of one shape (its rows of 2 to
// RowLeaves leaves), whose per-row values are read back at their row or
// broadcast over it, is one kernel, however deep: softmax, log-softmax,
// layernorm, variance, a per-row cross-entropy -sum(onehot·log_softmax(x))
// and a user's exp/max/sum/div chain alike (TestRandomRows checks this on
// random compositions; TestRowsKernelCounts on the composites). It stops
// at
//
//   - a reduction over other rows (CrossEntropy's mean over the batch is
//     a whole-tensor sum: its tree over N·C leaves is not a tree over the
//     rows' results unless C is a power of two, so it stays a kernel of its
//     own);
//   - a matmul: its epilogue takes elementwise ops (the scale of
//     softmax(q·kᵀ·s)·v), not a reduction over its rows, so attention is
//     three kernels (matmul, rows, matmul) and a layernorm after it a
//     fourth;
//   - an output that is a per-row value broadcast back over its row: a
//     rows kernel writes a per-row value once per row, so that output
//     keeps its own kernel.
//
// The targets run a rows kernel by codegen.PlanRows. WGSL gives a row of
// at least 256 (padded) leaves a workgroup whose thread t evaluates leaves
// t, t+256, … (coalesced) and stages each reduction's leaves through
// workgroup memory so that the tree is still cpuref's; shorter rows get a
// thread each. C runs the rows in turn.
//
// # The cost model: when a broadcast sinks
//
// The views pass moves a broadcast of an elementwise node x (s elements,
// w operations each, OpInfo.Cost) to x's arguments when that pays in the
// units of Cost, operations and bytes, converted at Balance operations per
// byte:
//
//	w·(t − s) ≤ Balance·(t + 8·s + launch)
//
// Sunk, x runs once per broadcast element (t of them): w·(t − s) more
// operations in the kernel that reads the broadcast. Not sunk, x's s
// values are stored and read back (8·s bytes) and, on a workgroup backend
// where x would be a kernel of its own (not the epilogue of the reduction
// or matmul computing its argument), cost a dispatch (launch =
// LaunchBytes; 0 on CPU targets). The reader moves at least 4·t bytes; a
// quarter of that memory time (t) is what the sunk operations may fill.
// For large broadcasts the rule is w ≤ Balance: add or maximum sink, exp
// or rsqrt over a row's statistic stay once per row. TestSinkCost shows
// the decisions on a few graphs; `gpucc build --explain` prints each
// kernel's flops and bytes (KernelCost).
//
// The pipeline is a named, ordered list (Pipeline). Graph passes rewrite the
// graph; "fuse" lowers it to a Program; program passes rewrite the Program.
// The driver validates the graph once after the passes that rewrite it
// and the Program once when it seals it (between every pass with
// Options.CheckEach), times each pass, can dump the IR after a named
// pass, and reports a failing or panicking pass by name.
package passes

import (
	"fmt"
	"io"
	"time"

	"github.com/gpucc/gpucc/ir"
)

// State is what passes read and write.
type State struct {
	Graph   *ir.Graph
	Origin  []ir.NodeID // Origin[i] is the id node i had in the caller's graph
	Program *ir.Program // nil until the fuse pass
	Options Options
}

// Pass is one named step. Ordering constraints are stated on Pipeline.
type Pass struct {
	Name string
	Doc  string
	Run  func(*State) error
	// Lowers says the pass turns the graph into State.Program: the graph
	// is validated before it (see Options.CheckEach).
	Lowers bool
}

// Pipeline is the default pass order, and why:
//   - fold runs first so that CSE sees folded fulls and merges them;
//   - cse before dce, because merging leaves duplicates dead;
//   - views sinks views through elementwise nodes after dce (it counts uses,
//     which dead nodes would inflate) and drops what it leaves dead;
//   - fuse needs a dead-free graph (a dead node would be stored for nothing);
//   - rows merges the kernels fuse made around reductions (before split,
//     which then splits only the reductions left unmerged);
//   - tile works on the kernels fuse made;
//   - split runs last: it adds kernels that no other pass needs to see.
var Pipeline = []Pass{
	{Name: "fold", Doc: "evaluate nodes that depend on no input, under the reference semantics", Run: fold},
	{Name: "cse", Doc: "merge identical nodes", Run: cse},
	{Name: "dce", Doc: "drop nodes that reach no output", Run: dce},
	{Name: "views", Doc: "sink views through single-use elementwise nodes, so fusion reads them as strides", Run: sinkViews},
	{Name: "fuse", Doc: "group elementwise chains into kernels and lower to a Program", Run: fuse, Lowers: true},
	{Name: "rows", Doc: "merge reductions over rows with the elementwise kernels around them into row-resident kernels", Run: fuseRows},
	{Name: "tile", Doc: "choose matmul tile parameters from the shape and device limits", Run: tile},
	{Name: "split", Doc: "split large sums into a block pass and a final pass, and the split order's attention into its parts and their combine, for many workgroups", Run: split},
}

// Options tune compilation. Zero values mean the defaults.
type Options struct {
	Limits      ir.Limits
	MaxBindings int // storage buffers per kernel (WebGPU's default is 8)
	// MaxInvocations and MaxWorkgroupStorage are the device's workgroup
	// limits (threads; bytes); tiles are chosen to fit them.
	MaxInvocations      int
	MaxWorkgroupStorage int
	// SplitSums lets the split pass cut large sums into many blocks, for a
	// backend that reduces a block per workgroup (webgpu), and an
	// attention in the split order into a kernel of its parts and one
	// that combines them (splitAttention).
	SplitSums bool
	NoFuse    bool // one kernel per node: the unoptimised baseline
	// Tile, when set, is used for every matmul instead of the tiling
	// pass's choice (for benchmarking tile shapes).
	Tile *ir.Tile
	// TileFor, when set and Tile is not, may give a tuned tile for a
	// matmul kernel (runtime/gpu/tune's Table.TileFor).
	TileFor TileChooser
	// KeepConvTile keeps the rule's tile for an implicit-GEMM
	// convolution that it cuts into fewer than WaveGroups workgroups. By
	// default such a convolution takes a smaller, double-buffered tile
	// that makes more (see spreadConv): ResNet-18's later stages at batch 1
	// made 8 to 32 workgroups of the rule's tiles. Results are the same
	// either way.
	KeepConvTile bool
	// DumpAfter names a pass after which the IR text is written to Dump.
	DumpAfter string
	Dump      io.Writer
	// CheckEach validates the IR after every pass, so that a pass that
	// breaks an invariant is refused by its name (the package's tests and
	// its differential fuzzer set it; Go's SSA backend keeps its
	// between-pass checks behind a debug flag too). Without it, the graph
	// is validated once, before the pass that lowers it to a Program
	// (Pass.Lowers), and the Program once, by ir.Seal: the input graph was validated by the
	// caller (ir.Validate), and nothing generates code from what the
	// passes leave before both checks pass.
	CheckEach bool
}

// TileChooser gives a tuned tile for a matmul kernel, or nil for the tiling
// pass's own rule. Implementations must be comparable (Options is).
type TileChooser interface {
	TileFor(k *ir.Kernel) *ir.Tile
}

// DefaultMaxBindings is WebGPU's default maxStorageBuffersPerShaderStage.
const DefaultMaxBindings = 8

// Timing is how long one pass took.
type Timing struct {
	Pass     string  `json:"pass"`
	Millis   float64 `json:"ms"`
	NodesOut int     `json:"nodes"`
}

// Compile runs the pipeline over a validated graph and returns the sealed
// Program (see ir.Seal), ready for any codegen.Target. g is not modified.
func Compile(g *ir.Graph, opts Options) (*ir.Sealed, []Timing, error) {
	if opts.MaxBindings <= 0 {
		opts.MaxBindings = DefaultMaxBindings
	}
	if opts.MaxBindings < 3 {
		return nil, nil, fmt.Errorf("passes: MaxBindings %d is below the minimum of 3", opts.MaxBindings)
	}
	if err := FloatOnly(g); err != nil {
		return nil, nil, err
	}
	st := &State{Graph: g.Clone(), Options: opts}
	st.Origin = make([]ir.NodeID, len(g.Nodes))
	for i := range st.Origin {
		st.Origin[i] = ir.NodeID(i)
	}
	var timings []Timing
	for _, p := range Pipeline {
		if p.Lowers && !opts.CheckEach { // the one check of what the graph passes left
			if err := ir.ValidateStructure(st.Graph, st.Options.Limits); err != nil {
				return nil, timings, fmt.Errorf("passes: the graph the passes before %s left is invalid: %w", p.Name, err)
			}
		}
		start := time.Now()
		lowered := st.Program != nil
		if err := runPass(p, st); err != nil {
			return nil, timings, err
		}
		timings = append(timings, Timing{Pass: p.Name, Millis: float64(time.Since(start).Microseconds()) / 1000, NodesOut: len(st.Graph.Nodes)})
		if opts.CheckEach {
			if err := check(p, st, lowered); err != nil {
				return nil, timings, err
			}
		}
		if opts.DumpAfter == p.Name && opts.Dump != nil {
			io.WriteString(opts.Dump, st.dump())
		}
	}
	sp, err := ir.Seal(st.Program)
	if err != nil {
		return nil, timings, fmt.Errorf("passes: the program is invalid: %w", err)
	}
	if err := ir.CheckKernels(st.Program, opts.Limits); err != nil {
		return nil, timings, err
	}
	return sp, timings, nil
}

// PassNames returns the names of Pipeline, in order.
func PassNames() []string {
	names := make([]string, len(Pipeline))
	for i, p := range Pipeline {
		names[i] = p.Name
	}
	return names
}

func runPass(p Pass, st *State) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = ir.Errorf(ir.CodeInternal, -1, "", "pass %s panicked: %v", p.Name, r)
		}
	}()
	if err := p.Run(st); err != nil {
		return fmt.Errorf("pass %s: %w", p.Name, err)
	}
	return nil
}

// check validates the IR after pass p (Options.CheckEach): the graph, if
// the Program did not exist before p (program passes leave the graph
// alone), and the Program, once there is one.
func check(p Pass, st *State, lowered bool) error {
	if !lowered {
		if err := ir.ValidateStructure(st.Graph, st.Options.Limits); err != nil {
			return fmt.Errorf("pass %s left an invalid graph: %w", p.Name, err)
		}
	}
	if st.Program != nil {
		if err := ir.ValidateProgram(st.Program); err != nil {
			return fmt.Errorf("pass %s left an invalid program: %w", p.Name, err)
		}
	}
	return nil
}

func (st *State) dump() string {
	if st.Program != nil {
		return st.Program.String()
	}
	return st.Graph.String()
}

// FloatOnly refuses, by node and dtype, a graph that holds a value of a
// dtype other than float32, or a typed row (cast, where, the logical and
// bitwise ops): the passes and every kernel compute float32 only so far,
// and a typed value must never be narrowed silently to one.
// cpuref.EvalTyped computes such graphs.
func FloatOnly(g *ir.Graph) error {
	for i, n := range g.Nodes {
		if n.DType != ir.F32 {
			return ir.Errorf(ir.CodeUnsupported, i, "dtype", "%v node of dtype %v: gpucc's compiled kernels compute float32 only so far", n.Op, n.DType)
		}
		if n.Op.Info().Typed {
			return ir.Errorf(ir.CodeUnsupported, i, "op", "%v: gpucc's compiled kernels do not compute it yet", n.Op)
		}
	}
	return nil
}
