package native_test

import (
	"testing"

	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
)

var (
	checkRun = gpucctest.CheckRun
	bits     = gpucctest.Bits
	expect   = gpucctest.Expect
	build    = gpucctest.Build
)

func seedGraph(t *testing.T) *ir.Graph {
	return build(t, func(b *ir.Builder) {
		x := b.Input(ir.Shape{3}, []float32{-2, 3, 4})
		y := b.Input(ir.Shape{3}, []float32{10, 20, 30})
		b.Output("values", x.Mul(y).Relu())
	})
}

var (
	openCache             = gpucctest.OpenCache
	files                 = gpucctest.Files
	cacheOffWritesNothing = gpucctest.CacheOffWritesNothing
)
