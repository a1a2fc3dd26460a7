package c

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// writer is a kernel kind's row in the C target: how Emit writes a kernel
// of the kind and what the unit needs for it.
type writer struct {
	// write writes the kernel's functions: its exported function and
	// whatever it calls, filling d.Tiles.
	write func(b *strings.Builder, k *ir.Kernel, d *Kernel)
	// prelude is written once per unit holding a kernel of the kind, in
	// kind order ("" for none).
	prelude string
	// scratch returns the floats of Unit.Scratch the kernel takes (nil:
	// it takes no scratch pointer).
	scratch func(k *ir.Kernel) int
	// work estimates the kernel's operations over all its tiles (nil:
	// the body's, plus one, per element of Shape).
	work func(k *ir.Kernel) int64
}

// writers is the C target's row of each kernel kind.
var writers = [ir.NumKernelKinds]writer{
	ir.KernelElementwise: {write: tiled(func(b *strings.Builder, k *ir.Kernel, _ *Kernel) int { return elementwiseTiles(b, k) })},
	ir.KernelMatmul: {write: tiled(func(b *strings.Builder, k *ir.Kernel, _ *Kernel) int { return matmul(b, k) }),
		prelude: matmulPrelude, scratch: func(k *ir.Kernel) int { return MatmulScratch(k.M, k.K, k.N) },
		work: func(k *ir.Kernel) int64 {
			return int64(k.Batch())*2*int64(k.M)*int64(k.K)*int64(k.N) + bodyWork(k)*int64(k.Shape.Len())
		}},
	ir.KernelReduce: {write: func(b *strings.Builder, k *ir.Kernel, d *Kernel) {
		fmt.Fprintf(b, "static %s float %s_combine(float a, float b) {\n", combineInline(k.Reduce.Info().Combine), d.Export)
		b.WriteString(codegen.Indent(codegen.Combine(Lang, k.Reduce, "a", "b", "m"), 1))
		b.WriteString("\treturn m;\n}\n\n")
		tiled(func(b *strings.Builder, k *ir.Kernel, d *Kernel) int { return sum(b, k, d.Export+"_combine") })(b, k, d)
	}},
	ir.KernelLife: {write: tiled(func(b *strings.Builder, k *ir.Kernel, _ *Kernel) int { return life(b, k) }),
		work: func(k *ir.Kernel) int64 { return int64(k.Shape.Len()) * 20 }},
	ir.KernelRows: {write: rowsKernel, prelude: rowsPrelude},
	ir.KernelConv: {write: tiled(func(b *strings.Builder, k *ir.Kernel, _ *Kernel) int { return conv(b, k) }),
		prelude: convPrelude, scratch: ConvScratch,
		work: func(k *ir.Kernel) int64 {
			c := ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
			return int64(c.N*c.M*c.OH*c.OW) * (2*int64(c.CG*c.KH*c.KW) + bodyWork(k))
		}},
	ir.KernelConvTranspose: {write: tiled(func(b *strings.Builder, k *ir.Kernel, _ *Kernel) int { return convTranspose(b, k) }),
		prelude: convTransposePrelude, scratch: convTransposeScratch,
		work: func(k *ir.Kernel) int64 {
			c := ir.ConvTranspose2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
			return int64(c.N*c.C*c.H*c.W)*int64(c.MG*c.KH*c.KW)*2 + int64(c.N*c.M*c.OH*c.OW)*bodyWork(k)
		}},
	ir.KernelAttention: {write: tiled(attention), prelude: attentionPrelude, work: attentionWork},
	ir.KernelPool: {write: tiled(nested),
		work: func(k *ir.Kernel) int64 {
			c := ir.Pool2DOf(k.Inputs[0].Shape, k.Attrs)
			return int64(c.N*c.C*c.OH*c.OW) * (int64(c.KH*c.KW)*4 + bodyWork(k))
		}},
}

func init() {
	// A kind without a row of its own that has a nest (codegen.NestOf)
	// is written from it: a new direct kind needs no row here.
	for kind := range writers {
		if writers[kind].write == nil && codegen.HasNest(ir.KernelKind(kind)) {
			writers[kind] = writer{write: tiled(nested)}
		}
	}
	if err := checkWriters(&writers); err != nil {
		panic(err)
	}
}

// checkWriters returns an error naming the first kernel kind that table
// has no row for.
func checkWriters(table *[ir.NumKernelKinds]writer) error {
	for kind, w := range table {
		if w.write == nil {
			return fmt.Errorf("codegen/c: BUG: kernel kind %v has no row in writers", ir.KernelKind(kind))
		}
	}
	return nil
}

// writerOf returns kind's row of writers.
func writerOf(kind ir.KernelKind) *writer {
	if !kind.Valid() || writers[kind].write == nil {
		panic(fmt.Sprintf("codegen/c: BUG: kernel kind %v has no row in writers", kind))
	}
	return &writers[kind]
}

// tiled makes the write of a kind whose kernel is a tiles function (its
// body written by tiles, which returns the number of tiles) and the
// exported wrapper that runs every tile.
func tiled(tiles func(b *strings.Builder, k *ir.Kernel, d *Kernel) int) func(b *strings.Builder, k *ir.Kernel, d *Kernel) {
	return func(b *strings.Builder, k *ir.Kernel, d *Kernel) {
		fmt.Fprintf(b, "static void %s_tiles(%s, idx t0, idx t1) {\n", d.Export, params(k, d.Scratch))
		d.Tiles = tiles(b, k, d)
		b.WriteString("}\n")
		wrapper(b, k, d)
	}
}

// bodyWork is work's count of one evaluation of k's body.
func bodyWork(k *ir.Kernel) int64 { return int64(len(k.Body) + 1) }

// work estimates the operations of kernel k over all its tiles.
func work(k *ir.Kernel) int64 {
	if w := writerOf(k.Kind).work; w != nil {
		return w(k)
	}
	return int64(k.Shape.Len()) * bodyWork(k)
}
