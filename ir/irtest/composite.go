package irtest

import "github.com/gpucc/gpucc/ir"

// Composites returns graphs of the Builder's composite layers (GELU, ...)
// over ordinary and extreme values, so that every backend reproduces the
// lowered op sequences bit for bit.
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
	return cs
}
