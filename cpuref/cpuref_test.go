package cpuref

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/ir"
)

var negZero = float32(math.Copysign(0, -1))

func bitsOf(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}

func TestSumTree(t *testing.T) {
	big, tiny := float32(1<<24), float32(1)
	tests := []struct {
		name string
		x    []float32
		want float32
	}{
		{"one", []float32{2.5}, 2.5},
		{"negative zero alone", []float32{negZero}, negZero},
		{"padding keeps -0", []float32{negZero, negZero, negZero}, negZero},
		{"padding keeps +0", []float32{0, negZero, negZero}, 0},
		// ((big + tiny) + (tiny + tiny)): the tree, not left to right,
		// decides: left to right would give big.
		{"pairwise order", []float32{big, tiny, tiny, tiny}, big + 2},
		// Three leaves pad to four: (big + tiny) + (tiny + -0) rounds to big
		// twice, where the plain left-to-right sum does the same only by luck.
		{"padded tree", []float32{big, tiny, tiny}, big},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sum(tt.x); math.Float32bits(got) != math.Float32bits(tt.want) {
				t.Errorf("Sum(%v) = %v, want %v", tt.x, got, tt.want)
			}
		})
	}
}

// TestReduceFullMatchesReduce: for every reduction of the op table, the
// folder's tree over n copies is the reference tree over n leaves.
func TestReduceFullMatchesReduce(t *testing.T) {
	reductions := 0
	for _, op := range ir.Ops() {
		if !op.IsReduction() {
			continue
		}
		reductions++
		for _, v := range []float32{0.1, -3, negZero, 0, 1e30, 3e38, -3e38, 16777216, 1e-45} {
			for n := 1; n <= 300; n++ {
				x := make([]float32, n)
				for i := range x {
					x[i] = v
				}
				got, want := ReduceFull(op, v, n), Reduce(op, x, ir.Shape{n}, ir.Shape{})[0]
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("ReduceFull(%v, %v, %d) = %v, Reduce = %v", op, v, n, got, want)
				}
			}
		}
	}
	if reductions < 2 {
		t.Errorf("%d reductions in the op table, want sum and max at least", reductions)
	}
}

func TestMatmulOrder(t *testing.T) {
	// k ascending: ((0 + 2^24) + 1) + 1 = 2^24, while 1 + 1 + 2^24 would
	// give 2^24 + 2.
	a := []float32{1 << 24, 1, 1}
	b := []float32{1, 1, 1}
	if got := Matmul(a, b, 1, 3, 1); got[0] != 1<<24 {
		t.Errorf("got %v, want 2^24", got[0])
	}
	// Products round before the sum: 1.0000001² = 1.0000002 (rounded) then
	// - 1.0000002 is 0, where a fused multiply-add would leave the tail.
	x := float32(1.0000001)
	p := float32(x * x)
	if got := Matmul([]float32{x, -p}, []float32{x, 1}, 1, 2, 1); got[0] != 0 {
		t.Errorf("product not rounded before the add: %v", got[0])
	}
}

func TestUnary(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	got := []float32{
		Unary(ir.OpRelu, negZero, 0), Unary(ir.OpRelu, -inf, 0), Unary(ir.OpRelu, nan, 0), Unary(ir.OpRelu, 2, 0),
		Unary(ir.OpPositive, nan, 0), Unary(ir.OpPositive, 1e-45, 0), Unary(ir.OpPositive, 0, 0),
	}
	want := []float32{0, 0, 0, 2, 0, 1, 0}
	if diff := cmp.Diff(bitsOf(want), bitsOf(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestLifeGlider(t *testing.T) {
	g := []float32{
		0, 1, 0, 0, 0,
		0, 0, 1, 0, 0,
		1, 1, 1, 0, 0,
		0, 0, 0, 0, 0,
		0, 0, 0, 0, 0,
	}
	for range 20 { // a glider on a 5×5 torus returns after 20 steps
		g = Life(g, 5, 5)
	}
	want := []float32{
		0, 1, 0, 0, 0,
		0, 0, 1, 0, 0,
		1, 1, 1, 0, 0,
		0, 0, 0, 0, 0,
		0, 0, 0, 0, 0,
	}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := Life([]float32{1}, 1, 1); got[0] != 0 {
		t.Errorf("1×1 live cell sees itself 8 times and dies; got %v", got)
	}
}

// TestEvalFlushed: a flushing GPU writes a subnormal product as zero, and
// a product whose exact value is below 2^-126 but rounds up to it too
// (the H100's driver: 0.5 × 0x00ffffff = +0 in TestFastPathsBackends on
// 2026-12-05); 0.5 × 0x01000000 is exactly 2^-126 and stays.
func TestEvalFlushed(t *testing.T) {
	tiny := math.Float32frombits(0x00000100)
	below, at := math.Float32frombits(0x00ffffff), math.Float32frombits(0x01000000)
	minNormal := math.Float32frombits(0x00800000)
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{6}, []float32{tiny, -tiny, 3, below, -below, at})
	b.Output("half", x.MulScalar(0.5))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	exactV, flushed := Eval(g)[1], EvalFlushed(g)[1]
	if diff := cmp.Diff(bitsOf([]float32{tiny / 2, -tiny / 2, 1.5, minNormal, -minNormal, minNormal}), bitsOf(exactV)); diff != "" {
		t.Errorf("exact (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(bitsOf([]float32{0, negZero, 1.5, 0, negZero, minNormal}), bitsOf(flushed)); diff != "" {
		t.Errorf("flushed (-want +got):\n%s", diff)
	}
}

// TestEvalFlushedCompare: a flushing GPU reads a subnormal operand of a
// comparison as zero, so relu of a subnormal is +0 there (measured on the
// H200 and on SwiftShader); Eval keeps it.
func TestEvalFlushedCompare(t *testing.T) {
	tiny := math.Float32frombits(0x000116c2) // the H200's failing random graph, ops/23
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{3}, []float32{tiny, -tiny, 3})
	b.Output("relu", x.Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	exactV, flushed := Eval(g)[1], EvalFlushed(g)[1]
	if diff := cmp.Diff(bitsOf([]float32{tiny, 0, 3}), bitsOf(exactV)); diff != "" {
		t.Errorf("exact (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(bitsOf([]float32{0, 0, 3}), bitsOf(flushed)); diff != "" {
		t.Errorf("flushed (-want +got):\n%s", diff)
	}
}

// TestEvalFlushedLife: life's alive test (x > 0) is a comparison, so a
// flushing GPU reads a subnormal cell as dead. The H200 did, in the random
// graph ops/28: a cell with a subnormal neighbour was born there and not
// in Eval.
func TestEvalFlushedLife(t *testing.T) {
	tiny := float32(1e-45)
	grid := make([]float32, 16) // 4×4: (1,0), (1,1) alive, (1,2) subnormal
	grid[4], grid[5], grid[6] = 1, 1, tiny
	b := ir.NewBuilder()
	b.Output("next", b.Input(ir.Shape{4, 4}, grid).Life())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// (0,1) and (2,1) have three live neighbours exactly, as Eval counts.
	if got := Eval(g)[1]; got[1] != 1 || got[9] != 1 {
		t.Errorf("Eval: cells (0,1), (2,1) = %v, %v, want 1, 1", got[1], got[9])
	}
	if got := EvalFlushed(g)[1]; got[1] != 0 || got[9] != 0 {
		t.Errorf("EvalFlushed: cells (0,1), (2,1) = %v, %v, want 0, 0 (the subnormal neighbour flushed)", got[1], got[9])
	}
}

// TestTreeShortcut: tree's in-place path for a combine that is one add
// gives the bits of treeX, the expression's path, in both arithmetics,
// and only sum's combine takes it.
func TestTreeShortcut(t *testing.T) {
	if !isAdd(ir.OpAdd.Info().Expr) || isAdd(ir.OpMaximum.Info().Expr) || isAdd(ir.OpSub.Info().Expr) {
		t.Fatal("isAdd: want add only")
	}
	special := []float32{negZero, 0, 1e-45, -1e-45, 1.1754942e-38, 3e38, -3e38, 1, 16777216, 0.1}
	for _, ar := range []arith{exact, {flush: true}} {
		for p := 1; p <= 1<<10; p *= 2 {
			leaves := make([]float32, p)
			for i := range leaves {
				leaves[i] = special[(i*7+p)%len(special)] * float32(1+i%3)
			}
			if got, want := ar.tree(ir.OpSum, leaves), ar.treeX(ir.OpSum, leaves); math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("flush %v, %d leaves: tree %v, treeX %v", ar.flush, p, got, want)
			}
		}
	}
}
