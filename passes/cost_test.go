package passes

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
)

// in is an input of shape s (its values matter to no cost).
func in(b *ir.Builder, s ir.Shape) ir.Tensor { return b.Input(s, make([]float32, s.Len())) }

// TestKernelCost: each kernel kind's operations and bytes, on graphs of
// the seed's ops (one operation each), by the rules of Cost.
func TestKernelCost(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *ir.Builder) ir.Tensor
		opts  Options
		want  []Cost // one per kernel
	}{
		{"elementwise relu(a*b+c) over 32", func(b *ir.Builder) ir.Tensor {
			s := ir.Shape{4, 8}
			return in(b, s).Mul(in(b, s)).Add(in(b, s)).Relu()
		}, Options{}, []Cost{{Flops: 3 * 32, BytesRead: 3 * 128, BytesWritten: 128}}},
		{"matmul 4x3x5 with a broadcast bias", func(b *ir.Builder) ir.Tensor {
			bias := in(b, ir.Shape{5}).Broadcast(ir.Shape{4, 5})
			return in(b, ir.Shape{4, 3}).MatMul(in(b, ir.Shape{3, 5})).Add(bias)
		}, Options{}, []Cost{{Flops: 2*4*3*5 + 20, BytesRead: 48 + 60 + 20, BytesWritten: 80}}},
		{"row sums of a product, scaled", func(b *ir.Builder) ir.Tensor {
			s := ir.Shape{4, 8}
			return in(b, s).Mul(in(b, s)).SumAxes(true, 1).MulScalar(0.5)
		}, Options{}, []Cost{{Flops: 32 + (32 - 4) + 4, BytesRead: 2 * 128, BytesWritten: 16 * 2}}},
		{"a split sum: blocks, then the final pass", func(b *ir.Builder) ir.Tensor {
			return in(b, ir.Shape{1 << 20}).Sum()
		}, Options{SplitSums: true}, []Cost{
			{Flops: 1<<20 - 256, BytesRead: 4 << 20, BytesWritten: 4 * 256},
			{Flops: 255, BytesRead: 4 * 256, BytesWritten: 4},
		}},
		// The kinds that compute one node each cost what the op table says
		// of it (a conv_transpose's 2 per product, a pool_grad's (kh·kw)²
		// per element of x, a nearest resize's and a pad's 1 per output).
		{"conv_transpose2d of [1,2,3,3] by [2,1,2,2]", func(b *ir.Builder) ir.Tensor {
			return in(b, ir.Shape{1, 2, 3, 3}).ConvTranspose2D(in(b, ir.Shape{2, 1, 2, 2}), nil)
		}, Options{}, []Cost{{Flops: 2 * 16 * 2 * 2 * 2, BytesRead: 72 + 32, BytesWritten: 64}}},
		{"maxpool2d_grad of [1,1,4,4], 2x2 windows", func(b *ir.Builder) ir.Tensor {
			return in(b, ir.Shape{1, 1, 4, 4}).MaxPool2DGrad(in(b, ir.Shape{1, 1, 2, 2}), map[string][]int{"kernel_shape": {2, 2}, "strides": {2, 2}})
		}, Options{}, []Cost{{Flops: 16 * 4 * 4, BytesRead: 64 + 16, BytesWritten: 64}}},
		{"resize2d of [1,1,2,2] to 4x4, nearest", func(b *ir.Builder) ir.Tensor {
			return in(b, ir.Shape{1, 1, 2, 2}).Resize2D(map[string][]int{"sizes": {4, 4}})
		}, Options{}, []Cost{{Flops: 16, BytesRead: 16, BytesWritten: 64}}},
		{"pad of [2,3] by one each side", func(b *ir.Builder) ir.Tensor {
			return in(b, ir.Shape{2, 3}).Pad([]int{1, 1, 1, 1}, ir.PadConstant, 0)
		}, Options{}, []Cost{{Flops: 20, BytesRead: 24, BytesWritten: 80}}},
		{"life", func(b *ir.Builder) ir.Tensor {
			return in(b, ir.Shape{8, 8}).Life()
		}, Options{}, []Cost{{Flops: 9 * 64, BytesRead: 256, BytesWritten: 256}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := ir.NewBuilder()
			b.Output("y", c.build(b))
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := Compile(g, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []Cost
			for i := range p.Program().Kernels {
				got = append(got, KernelCost(p.Program(), &p.Program().Kernels[i]))
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("costs (-want +got):\n%s\n%s", diff, p)
			}
			var sum Cost
			for _, k := range c.want {
				sum = sum.Add(k)
			}
			if total := ProgramCost(p.Program()); total != sum {
				t.Errorf("ProgramCost %+v, kernels sum to %+v", total, sum)
			}
		})
	}
}

// TestKernelCostRows: a rows kernel costs what the kernels it fuses do,
// less the traffic of the values it keeps resident.
func TestKernelCostRows(t *testing.T) {
	b := ir.NewBuilder()
	x := in(b, ir.Shape{4, 300})
	m := x.MaxAxes(true, 1).Broadcast(ir.Shape{4, 300})
	e := x.Sub(m)
	b.Output("y", e.Mul(e).SumAxes(true, 1))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := Compile(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Program().Kernels) != 1 || p.Program().Kernels[0].Kind != ir.KernelRows {
		t.Fatalf("want one rows kernel:\n%s", p)
	}
	rows, unfused := KernelCost(p.Program(), &p.Program().Kernels[0]), ProgramCost(p.Unfused().Program())
	if rows.Flops != unfused.Flops || rows.Flops != (1200-4)+2*1200+(1200-4) {
		t.Errorf("rows kernel %d flops, its parts %d; want both %d", rows.Flops, unfused.Flops, (1200-4)+2*1200+(1200-4))
	}
	if want := (Cost{Flops: rows.Flops, BytesRead: 4 * 1200, BytesWritten: 4 * 4}); rows != want {
		t.Errorf("rows kernel costs %+v, want %+v", rows, want)
	}
}
