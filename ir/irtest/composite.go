package irtest

import "github.com/gpucc/gpucc/ir"

// Composites returns graphs of the Builder's composite layers (GELU,
// Softmax, LogSoftmax, CrossEntropy, Mean, Variance, LayerNorm) over
// ordinary and extreme values, short, odd and long rows, and inner and
// outer axes, so that every backend reproduces their lowered op sequences
// bit for bit.
func Composites() []Case {
	var cs []Case
	add := func(name string, build func(b *ir.Builder)) {
		b := ir.NewBuilder()
		build(b)
		cs = append(cs, Case{name, must(b)})
	}
	for _, n := range []int{7, 4096} {
		add("composite/gelu-"+itoa(n), func(b *ir.Builder) {
			x := b.Input(ir.Shape{n}, Values(uint64(70+n), n, 8))
			e := b.Input(ir.Shape{n}, Extremes(uint64(71+n), n))
			b.Output("gelu", x.GELU())
			b.Output("gelu-extremes", e.GELU())
			b.Output("gelu-sum", x.GELU().Sum())
		})
	}
	for _, rc := range [][2]int{{1, 1}, {7, 10}, {16, 300}} {
		r, c := rc[0], rc[1]
		add("composite/softmax-"+itoa(r)+"x"+itoa(c), func(b *ir.Builder) {
			x := b.Input(ir.Shape{r, c}, Values(uint64(72+c), r*c, 30))
			b.Output("softmax", x.Softmax(1))
			b.Output("softmax-0", x.Softmax(0))
			b.Output("log_softmax", x.LogSoftmax(-1))
			b.Output("mean", x.Mean(true, 1))
			b.Output("mean-0", x.Mean(false, 0))
			b.Output("variance", x.Variance(true, 1))
			b.Output("layer_norm", x.LayerNorm(1, 1e-5))
		})
	}
	add("composite/softmax-extremes", func(b *ir.Builder) {
		// rows of ±3e38, subnormals, equal values and exp's underflow
		x := b.Input(ir.Shape{64, 16}, Extremes(74, 64*16))
		b.Output("softmax", x.Softmax(1))
		b.Output("log_softmax", x.LogSoftmax(1))
	})
	add("composite/rank3", func(b *ir.Builder) {
		x := b.Input(ir.Shape{3, 5, 4}, Values(75, 60, 4))
		b.Output("softmax", x.Softmax(2))
		b.Output("softmax-0", x.Softmax(0))
		b.Output("softmax-middle", x.Softmax(1))
		b.Output("mean-outer", x.Mean(true, 0, 2))
		b.Output("layer_norm", x.LayerNorm(-1, 1e-3))
		b.Output("variance-all", x.Variance(false))
	})
	add("composite/layer_norm-wide", func(b *ir.Builder) {
		// rows whose c·c overflows (LayerNorm scales them by their
		// largest |c|), one at the scaling's edge 2⁴⁰, and ordinary ones
		x := b.Input(ir.Shape{5, 4}, []float32{1e20, -1e20, 3e20, 0, 3e37, -3e37, 1e37, 0,
			0x1p40, -0x1p40, 7, 0, 1, 2, 3, 4, 2e19, 2e19, 2e19, 2e19})
		b.Output("layer_norm", x.LayerNorm(1, 1e-5))
		b.Output("layer_norm-0", x.LayerNorm(0, 1e-5))
	})
	add("composite/cross_entropy", func(b *ir.Builder) {
		n, c := 300, 10
		oh := make([]float32, n*c)
		for i := 0; i < n; i++ {
			oh[i*c+(i*7+3)%c] = 1
		}
		x := b.Input(ir.Shape{n, c}, Values(76, n*c, 20))
		b.Output("loss", x.CrossEntropy(b.Input(ir.Shape{n, c}, oh)))
	})
	return cs
}
