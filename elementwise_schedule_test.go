package gpucc_test

import (
	"fmt"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestElementwiseSchedules: an elementwise kernel large enough that its
// threads take several items each (wgsl.VectorsPerThread vec4s, or four
// times as many single elements) gives cpuref's bits on webgpu, at
// lengths that leave the last workgroup short: a length not a multiple of
// 4 (the scalar schedule), a broadcast row whose length is not one
// either, and an aligned one with vec4s allowed and not (wgsl.Vectorise),
// over extremes (±3e38, subnormals, ±0) and random values.
func TestElementwiseSchedules(t *testing.T) {
	rt := open(t, "webgpu")
	defer func(v bool) { wgsl.Vectorise = v }(wgsl.Vectorise)
	for _, c := range []struct {
		shape ir.Shape
		vec   bool
	}{{ir.Shape{257, 1023}, true}, {ir.Shape{131, 2049}, true}, {ir.Shape{300, 1024}, true}, {ir.Shape{300, 1024}, false}} {
		wgsl.Vectorise = c.vec
		n := c.shape.Len()
		b := ir.NewBuilder()
		x := b.Input(c.shape, irtest.Extremes(3, n))
		y := b.Input(c.shape, irtest.Values(4, n, 30))
		row := b.Input(ir.Shape{c.shape[1]}, irtest.Values(5, c.shape[1], 2))
		b.Output("fma", x.Mul(row).Add(y).Relu())
		b.Output("tanh", y.Tanh())
		g, err := b.Build(ir.Limits{MaxElements: 1 << 22, MaxOps: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%v/vec=%t", c.shape, c.vec), func(t *testing.T) { checkRun(t, rt, g) })
	}
}
