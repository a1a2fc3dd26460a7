package ir_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestCrop: a pad is a view (a crop of its argument) exactly when no pad
// is positive, in every mode; a view op is a view; other nodes are not.
func TestCrop(t *testing.T) {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{4, 6}, make([]float32, 24))
	cases := []struct {
		y     ir.Tensor
		begin []int // nil: no crop
		view  bool
	}{
		{x.Pad([]int{-1, -2, 0, -3}, ir.PadConstant, 0), []int{1, 2}, true},
		{x.Pad([]int{0, 0, 0, 0}, ir.PadReflect, 0), []int{0, 0}, true},
		{x.Pad([]int{-1, 0, 0, -5}, ir.PadWrap, 0), []int{1, 0}, true},
		{x.Pad([]int{-1, 1, 0, -3}, ir.PadConstant, 0), nil, false}, // a border on axis 1
		{x.Pad([]int{0, 0, 1, 0}, ir.PadEdge, 0), nil, false},
		{x.T(), nil, true},
		{x.Relu(), nil, false},
	}
	for k, c := range cases {
		b.Output(string(rune('a'+k)), c.y)
	}
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for k, c := range cases {
		n := &g.Nodes[g.Outputs[k].ID]
		begin, ok := n.Crop()
		if ok != (c.begin != nil) || !slices.Equal(begin, c.begin) || n.IsView() != c.view {
			t.Errorf("%v %v: Crop = %v, %v, IsView %v; want %v, %v", n.Op, n.Attrs, begin, ok, n.IsView(), c.begin, c.view)
		}
	}
}

// elementwiseProgram is a valid one-kernel program: y = relu(x) over
// [2,3], x read as op from a buffer of n elements.
func elementwiseProgram(n int, op ir.Operand) *ir.Program {
	return &ir.Program{
		Buffers: []ir.Buffer{
			{Len: n, Shape: ir.Shape{n}, Input: true, Data: make([]float32, n)},
			{Len: op.Shape.Len(), Shape: op.Shape},
		},
		Kernels: []ir.Kernel{{
			Name: "e", Kind: ir.KernelElementwise, Shape: op.Shape, Inputs: []ir.Operand{op}, Outputs: []int{1},
			Body: []ir.Instr{{Kind: ir.InstrLoad}, {Kind: ir.InstrOp, Op: ir.OpRelu}}, Stores: []int32{1},
		}},
		Outputs: []ir.ProgramOutput{{Name: "y", Shape: op.Shape, Buffer: 1}},
	}
}

// TestOperandOffsets: an operand's offset is validated with its strides
// (it may start at the buffer's last element, not past it, nor below 0),
// only kinds whose row says Offsets take one, the program's text and key
// show it, and Slice moves it by the box's first element.
func TestOperandOffsets(t *testing.T) {
	op := ir.Operand{Shape: ir.Shape{2, 3}, Strides: []int{3, 1}, Offset: 4}
	for _, c := range []struct {
		name string
		n    int
		op   ir.Operand
		want string
	}{
		{"fits", 10, op, ""},
		{"ends at the end", 10, ir.Operand{Shape: ir.Shape{2, 3}, Strides: []int{3, 1}, Offset: 4}, ""},
		{"one past", 9, op, "reaches past its end"},
		{"last element", 10, ir.Operand{Shape: ir.Shape{1}, Strides: []int{1}, Offset: 9}, ""},
		{"at the end", 10, ir.Operand{Shape: ir.Shape{1}, Strides: []int{1}, Offset: 10}, "reaches past its end"},
		{"negative", 10, ir.Operand{Shape: ir.Shape{1}, Strides: []int{1}, Offset: -1}, "reaches past its end"},
		{"huge", 10, ir.Operand{Shape: ir.Shape{2}, Strides: []int{1}, Offset: 1<<63 - 1}, "reaches past its end"},
	} {
		err := ir.ValidateProgram(elementwiseProgram(c.n, c.op))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
	p := matmulProgram()
	p.Buffers[0] = ir.Buffer{Len: 7, Shape: ir.Shape{7}, Input: true, Data: make([]float32, 7)}
	p.Kernels[0].Inputs[0].Offset = 1
	if err := ir.ValidateProgram(p); err == nil || !strings.Contains(err.Error(), "does not take") {
		t.Errorf("a matmul operand at an offset: %v; want refused", err)
	}
	a, b := elementwiseProgram(10, op), elementwiseProgram(10, ir.Operand{Shape: ir.Shape{2, 3}, Strides: []int{3, 1}, Offset: 3})
	if bytes.Equal(a.Key(), b.Key()) {
		t.Error("programs reading at offsets 4 and 3 have one key")
	}
	if !strings.Contains(a.String(), "strides [3,1] at 4") {
		t.Errorf("the text form does not show the offset:\n%s", a)
	}
	s := op.BroadcastTo(ir.Shape{5, 2, 3}).Slice([]int{0, 1, 2}, ir.Shape{5, 1, 1})
	if s.Offset != 4+3+2 || !slices.Equal(s.Strides, []int{0, 3, 1}) || s.Plain() {
		t.Errorf("Slice = %+v; want offset 9, strides [0 3 1], not plain", s)
	}
	if c := s.Coalesced(); c.Offset != 9 || !slices.Equal(c.Shape, ir.Shape{5}) || !slices.Equal(c.Strides, []int{0}) {
		t.Errorf("Coalesced = %+v; want [5] at stride 0 from 9", c)
	}
}
