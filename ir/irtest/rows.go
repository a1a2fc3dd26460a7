package irtest

import "github.com/gpucc/gpucc/ir"

// Rows returns graphs for the rows pass (passes: reductions over the last
// axis fused with the elementwise work around them): softmax, log-softmax,
// layernorm, mean, variance and cross-entropy, and a user's own
// exp/sum/div and max/sub compositions, over rows that fit a workgroup
// (256 leaves) and rows that do not, rows of 1 (left unfused), one row,
// odd and prime lengths, a row longer than the pass keeps resident
// (passes.RowLeaves), keepdims and not, and per-row values broadcast back
// along leading and middle axes.
func Rows() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{name, must(b)})
	}
	// The lengths: rows of 1, one row, short rows (a thread each in WGSL),
	// 255 and 256 leaves (a workgroup each, one leaf per thread), primes
	// that pad to 512, 1024 and 2048 leaves (several leaves per thread,
	// staged through workgroup memory), the longest resident row, and one
	// leaf more.
	for _, rc := range [][2]int{{5, 1}, {1, 7}, {3, 13}, {3, 255}, {4, 256}, {2, 257}, {2, 509}, {3, 1021}, {2, 2039}, {2, 4096}, {1, 4097}} {
		r, c := rc[0], rc[1]
		add("rows/"+itoa(r)+"x"+itoa(c), func(b *ir.Builder) {
			x := b.Input(ir.Shape{r, c}, Values(uint64(90+c), r*c, 20))
			b.Output("softmax", x.Softmax(-1))
			b.Output("log_softmax", x.LogSoftmax(1))
			b.Output("layer_norm", x.LayerNorm(1, 1e-5))
			b.Output("variance", x.Variance(false, 1))
			e := x.Exp() // a user's softmax without the max
			b.Output("exp-sum-div", e.Div(e.SumAxes(true, 1)))
			m := x.MaxAxes(false, 1).Neg() // a row's max broadcast back from [r]
			b.Output("max-back", x.Mul(x).Add(m.Reshape(ir.Shape{r, 1}).Broadcast(ir.Shape{r, c})))
		})
	}
	// A per-row value (a row's sum, scaled by a constant) broadcast back
	// over its row as an output of its own: it must be written at every
	// leaf, not once per row (the rows pass once fused it and left all but
	// the first column zero).
	add("rows/row-value-out", func(b *ir.Builder) {
		x := b.Input(ir.Shape{3, 4}, Values(102, 12, 20))
		s := x.SumAxes(true, 1)
		b.Output("scaled-sum", s.Mul(b.Full(ir.Shape{3, 4}, 2)))
		b.Output("plus-sum", x.Add(s.Broadcast(ir.Shape{3, 4})))
		m := x.MaxAxes(false, 1)
		b.Output("max-back", m.Reshape(ir.Shape{3, 1}).Broadcast(ir.Shape{3, 4}).Neg())
	})
	add("rows/rank3", func(b *ir.Builder) {
		x := b.Input(ir.Shape{2, 3, 37}, Values(97, 2*3*37, 10))
		s := x.SumAxes(true, 2)                         // [2,3,1]
		b.Output("centred", x.Sub(s.MulScalar(1.0/37))) // back along the last axis
		b.Output("softmax", x.Softmax(2))
		b.Output("layer_norm", x.LayerNorm(-1, 1e-3))
		// a per-row value of [2,3] read back as [2,3,1] and over a middle
		// axis of [2,3,37]
		b.Output("ratio", x.Div(s.Reshape(ir.Shape{2, 3}).Reshape(ir.Shape{2, 3, 1}).Broadcast(ir.Shape{2, 3, 37})))
		// a [3,1] per-row-of-a-slice value broadcast along the leading axis
		t := b.Input(ir.Shape{3, 37}, Values(98, 3*37, 5))
		b.Output("lead", x.Mul(t.MaxAxes(true, 1).Broadcast(ir.Shape{2, 3, 37})).SumAxes(true, 2))
	})
	add("rows/cross_entropy-odd", func(b *ir.Builder) {
		n, c := 37, 11
		oh := make([]float32, n*c)
		for i := 0; i < n; i++ {
			oh[i*c+(i*5+1)%c] = 1
		}
		x := b.Input(ir.Shape{n, c}, Values(99, n*c, 20))
		b.Output("loss", x.CrossEntropy(b.Input(ir.Shape{n, c}, oh)))
		b.Output("row-losses", x.LogSoftmax(1).Mul(b.Input(ir.Shape{n, c}, oh)).SumAxes(false, 1).Neg())
	})
	// Column reductions (the kept axis innermost): tiles of adjacent
	// outputs in WGSL, with a tail tile, padding, a prologue and an
	// epilogue.
	for _, rc := range [][2]int{{256, 8}, {300, 17}, {1031, 64}} {
		r, c := rc[0], rc[1]
		add("rows/columns-"+itoa(r)+"x"+itoa(c), func(b *ir.Builder) {
			x := b.Input(ir.Shape{r, c}, Values(uint64(100+r), r*c, 20))
			b.Output("colsum", x.SumAxes(false, 0))
			b.Output("colmax", x.MaxAxes(true, 0))
			b.Output("colmean-sq", x.Mul(x).Mean(true, 0))
		})
	}
	add("rows/columns-rank3", func(b *ir.Builder) {
		x := b.Input(ir.Shape{257, 3, 5}, Values(101, 257*15, 20))
		b.Output("sum0", x.SumAxes(false, 0))
		b.Output("max0", x.MaxAxes(true, 0))
	})
	return cs
}
