package irtest

import (
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// Crop returns x cropped to shape from multi-index begin on: the pad of
// no positive pad that the importer writes for a Slice or Split of step 1,
// which kernels read in place at an offset (ir.Node.Crop).
func Crop(x ir.Tensor, begin []int, shape ir.Shape) ir.Tensor {
	s := x.Shape()
	pads := make([]int, 2*len(s))
	for d := range s {
		pads[d], pads[len(s)+d] = -begin[d], -(s[d] - begin[d] - shape[d])
	}
	return x.Pad(pads, ir.PadConstant, 0)
}

// Split returns x split along axis into pieces of the given sizes (ONNX
// Split: crops of x).
func Split(x ir.Tensor, axis int, sizes ...int) []ir.Tensor {
	var out []ir.Tensor
	begin := make([]int, len(x.Shape()))
	for _, n := range sizes {
		shape := append(ir.Shape{}, x.Shape()...)
		shape[axis] = n
		out = append(out, Crop(x, append([]int{}, begin...), shape))
		begin[axis] += n
	}
	return out
}

// Slices returns graphs that read crops in place (Slice and Split as
// views): a split along the outer and the inner axis, a slice ending at
// the buffer's last element, slices whose offsets are and are not
// multiples of 4 (a vec4 load's), a crop of a transposed value, a crop of
// extremes (±0, subnormals, ±3e38), crops as outputs (the identity crop
// is its argument's buffer), prefixes (read plainly, but not the whole
// buffer: copied where an output or a fused value needs the whole), a
// GPT-2-style split of a fused QKV into
// attention's heads at offsets of 4 and of 3 elements and at 2 mod 4
// (rows whose stride is a multiple of 4: a vec4 read's other condition),
// PyTorch's MultiheadAttention (its +0 bias lifted into the projection,
// passes/views_lift.go), sums, maxima, softmax and layernorm rows over
// crops, and a crop feeding a kind that takes no offset (a matmul), which
// copies it first.
func Slices() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{"slice/" + name, must(b)})
	}
	add("split-rows", func(b *ir.Builder) {
		p := Split(b.Input(ir.Shape{3, 5}, Values(600, 15, 3)), 0, 1, 1, 1)
		b.Output("a", p[0].MulScalar(2))
		b.Output("b", p[1].AddScalar(0.5))
		b.Output("c", p[2].Relu()) // ends at the buffer's last element
	})
	add("split-cols", func(b *ir.Builder) {
		x := b.Input(ir.Shape{4, 10}, Values(601, 40, 3))
		y := b.Input(ir.Shape{4, 3}, Values(602, 12, 3))
		p := Split(x, 1, 3, 3, 4)
		b.Output("a", p[0].Add(y))
		b.Output("b", p[1].Sub(y))
		b.Output("c", p[2].Neg())
	})
	add("last-element", func(b *ir.Builder) {
		x := b.Input(ir.Shape{7}, Values(603, 7, 3))
		b.Output("a", Crop(x, []int{6}, ir.Shape{1}).MulScalar(-3))
		z := b.Input(ir.Shape{2, 3, 4}, Values(604, 24, 3))
		b.Output("b", Crop(z, []int{1, 2, 3}, ir.Shape{1, 1, 1}).AddScalar(1))
	})
	add("vec4-offsets", func(b *ir.Builder) {
		y := b.Input(ir.Shape{8}, Values(605, 8, 3))
		x := b.Input(ir.Shape{16}, Values(606, 16, 3))
		b.Output("at1", Crop(x, []int{1}, ir.Shape{8}).Add(y)) // not a multiple of 4
		b.Output("at4", Crop(x, []int{4}, ir.Shape{8}).Add(y))
		b.Output("at8", Crop(x, []int{8}, ir.Shape{8}).Add(y)) // to the buffer's end
		r := b.Input(ir.Shape{4, 9}, Values(607, 36, 3))
		b.Output("rows", Crop(r, []int{0, 1}, ir.Shape{4, 8}).MulScalar(0.5)) // rows of 8 at stride 9
	})
	add("of-transpose", func(b *ir.Builder) {
		x := b.Input(ir.Shape{5, 6}, Values(608, 30, 3)).T()
		b.Output("y", Crop(x, []int{1, 2}, ir.Shape{4, 3}).Relu())
	})
	add("extremes", func(b *ir.Builder) {
		x := b.Input(ir.Shape{6, 11}, Extremes(609, 66))
		p := Split(x, 1, 5, 6)
		b.Output("neg", p[0].Neg())
		b.Output("mul", p[1].Mul(p[1]))
	})
	add("outputs", func(b *ir.Builder) {
		x := b.Input(ir.Shape{3, 4}, Values(610, 12, 3))
		b.Output("crop", Crop(x, []int{1, 1}, ir.Shape{2, 2}))
		b.Output("all", Crop(x, []int{0, 0}, ir.Shape{3, 4}))
	})
	add("prefix", func(b *ir.Builder) { // a plain read of fewer elements than its buffer holds
		x := b.Input(ir.Shape{4, 5}, Values(615, 20, 3))
		y := x.MulScalar(2)
		b.Output("head", Crop(y, []int{0, 0}, ir.Shape{2, 5}))
		b.Output("relu", Crop(y, []int{0, 0}, ir.Shape{3, 5}).Relu())
		b.Output("first", Crop(x, []int{0, 0}, ir.Shape{1, 5}))
	})
	for _, d := range []int{4, 3} {
		add("qkv-heads-"+itoa(d), func(b *ir.Builder) {
			const s, h = 5, 2
			x := b.Input(ir.Shape{1, s, 3 * h * d}, Values(611, 3*s*h*d, 2))
			var qkv []ir.Tensor
			for _, p := range Split(x, 2, h*d, h*d, h*d) {
				qkv = append(qkv, p.Reshape(ir.Shape{1, s, h, d}).Permute(0, 2, 1, 3))
			}
			mask := b.Full(ir.Shape{}, float32(negZero()))
			b.Output("y", qkv[0].Attention(qkv[1], qkv[2], mask, 0.5, true))
		})
	}
	add("qkv-offset-2", func(b *ir.Builder) { // rows of 28 (a multiple of 4), each piece at 2 mod 4
		const s, h, d = 6, 2, 4
		x := b.Input(ir.Shape{1, s, 3*h*d + 4}, Values(614, s*(3*h*d+4), 2))
		var qkv []ir.Tensor
		for _, p := range Split(x, 2, 2, h*d, h*d, h*d, 2)[1:4] {
			qkv = append(qkv, p.Reshape(ir.Shape{1, s, h, d}).Permute(0, 2, 1, 3))
		}
		mask := b.Full(ir.Shape{}, float32(negZero()))
		b.Output("y", qkv[0].Attention(qkv[1], qkv[2], mask, 0.5, false))
	})
	add("mha-bias", func(b *ir.Builder) { // PyTorch's MultiheadAttention: projection, head split, +0 bias, split, attention
		const s, h, d = 5, 2, 4
		x := b.Input(ir.Shape{s, h * d}, Values(618, s*h*d, 2))
		w := b.Input(ir.Shape{h * d, 3 * h * d}, Values(619, 3*h*d*h*d, 1))
		p := x.MatMul(w).Reshape(ir.Shape{s, 1, 3, h * d}).Permute(2, 1, 0, 3).Add(b.Full(ir.Shape{3, 1, s, h * d}, 0))
		var qkv []ir.Tensor
		for _, t := range Split(p, 0, 1, 1, 1) {
			qkv = append(qkv, t.Reshape(ir.Shape{s, h, d}).Permute(1, 0, 2))
		}
		mask := b.Full(ir.Shape{}, float32(negZero()))
		b.Output("y", qkv[0].MulScalar(0.5).Attention(qkv[1], qkv[2], mask, 1, false))
	})
	add("reduced", func(b *ir.Builder) { // sums and rows (softmax) over crops, read in place
		x := b.Input(ir.Shape{4, 10}, Extremes(612, 40))
		p := Split(x, 1, 3, 7)
		b.Output("sum", p[0].Sum())
		b.Output("max", p[1].MaxAxes(true, 1))
		b.Output("softmax", p[1].Softmax(1))
		r := b.Input(ir.Shape{3, 5, 8}, Values(616, 120, 3))
		b.Output("rows", Crop(r, []int{1, 1, 0}, ir.Shape{2, 3, 8}).Softmax(2))
		b.Output("norm", Crop(r, []int{0, 2, 0}, ir.Shape{3, 2, 8}).LayerNorm(2, 1e-5))
		big := Crop(b.Input(ir.Shape{66, 300}, Values(617, 66*300, 3)), []int{1, 5}, ir.Shape{64, 290})
		b.Output("columns", big.SumAxes(true, 0)) // a column reduction
		b.Output("total", big.Sum())              // split into blocks
	})
	add("copied", func(b *ir.Builder) { // a matmul takes no offset: it reads a copy
		x := b.Input(ir.Shape{4, 6}, Values(612, 24, 3))
		w := b.Input(ir.Shape{4, 3}, Values(613, 12, 3))
		b.Output("matmul", Split(x, 1, 2, 4)[1].MatMul(w))
	})
	return cs
}

// RandomSlice returns a graph of random crops read in place: a chain of
// one to three crops (each of a random box of the last, with a transpose
// or reshape between them now and then) over a value of rank 1 to 4 (an
// input of extremes, an elementwise op's result, or a sum's, which a
// scalar op over its transpose joins as an epilogue, passes' lift), read
// by an elementwise op with a second input, and half the time the last
// crop as an output too.
func RandomSlice(seed uint64) *ir.Graph {
	r := rand.New(rand.NewPCG(seed, 43))
	b := ir.NewBuilder()
	rank := 1 + r.IntN(ir.MaxPadRank)
	s := make(ir.Shape, rank)
	for d := range s {
		s[d] = 1 + r.IntN(7)
	}
	var x ir.Tensor
	switch r.IntN(3) {
	case 0:
		x = b.Input(s, Extremes(seed, s.Len()))
	case 1:
		x = b.Input(s, Extremes(seed, s.Len())).MulScalar(1.5)
	default:
		in := append(append(ir.Shape{}, s...), 3)
		x = b.Input(in, Values(seed, in.Len(), 4)).SumAxes(false, rank)
		if rank >= 2 {
			x = x.T().AddScalar(-0.5)
		}
	}
	for range 1 + r.IntN(3) {
		s := x.Shape()
		begin, shape := make([]int, len(s)), make(ir.Shape, len(s))
		for d, n := range s {
			shape[d] = 1 + r.IntN(n)
			begin[d] = r.IntN(n - shape[d] + 1)
		}
		x = Crop(x, begin, shape)
		switch r.IntN(4) {
		case 0:
			if len(shape) >= 2 {
				x = x.T()
			}
		case 1:
			x = x.Reshape(ir.Shape{shape.Len()})
		}
	}
	y := b.Input(x.Shape(), Values(seed+1, x.Shape().Len(), 3))
	if r.IntN(2) == 0 { // an output viewing the value pins it where it is (no lift)
		b.Output("crop", x)
	}
	b.Output("y", x.Mul(y).AddScalar(0.25))
	return must(b)
}
