package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// writer is a kernel kind's row in the WGSL target.
type writer struct {
	// emit writes the kernel's entry point (and what it calls) after the
	// shared declarations, filling s's workgroup and dispatch, for target
	// t (its Fast and Fused).
	emit func(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, t Target)
	// loops returns the most loop iterations one invocation runs (see
	// LoopCost); nil: none beyond unrolled ones.
	loops func(k *ir.Kernel) int
}

// writers is the WGSL target's row of each kernel kind.
var writers = [ir.NumKernelKinds]writer{
	ir.KernelElementwise: {emit: plain(elementwise)},
	ir.KernelMatmul: {emit: func(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, t Target) {
		if k.Tile.Vector == 4 {
			matmulVec4(b, k, s, t.Fast)
		} else {
			matmul(b, k, s, t.Fast)
		}
	}, loops: func(k *ir.Kernel) int {
		if k.Tile.BK <= 0 {
			return 0
		}
		return MatmulLoopCost(k.K, k.Tile.BK)
	}},
	ir.KernelReduce: {emit: plain(sum), loops: sumLoopCost},
	ir.KernelLife:   {emit: plain(life)},
	ir.KernelRows: {emit: func(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, t Target) {
		rowsKernel(b, k, s, t.Fused)
	}, loops: rowsLoopCost},
	ir.KernelConv: {emit: func(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, t Target) {
		conv(b, k, s, t.Fast)
	}, loops: convLoopCost},
	// attention shares each query row's scores among its outputs' threads
	// (the nest recomputes them per output)
	ir.KernelAttention: {emit: func(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, t Target) {
		attention(b, k, s, t.storage())
	}, loops: attentionLoops},
}

func init() {
	// A kind without a row of its own that has a nest (codegen.NestOf)
	// is written from it: a new direct kind needs no row here.
	for kind := range writers {
		if writers[kind].emit == nil && codegen.HasNest(ir.KernelKind(kind)) {
			writers[kind] = writer{emit: plain(nested), loops: nestLoops}
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
		if w.emit == nil {
			return fmt.Errorf("codegen/wgsl: BUG: kernel kind %v has no row in writers", ir.KernelKind(kind))
		}
	}
	return nil
}

// writerOf returns kind's row of writers.
func writerOf(kind ir.KernelKind) *writer {
	if !kind.Valid() || writers[kind].emit == nil {
		panic(fmt.Sprintf("codegen/wgsl: BUG: kernel kind %v has no row in writers", kind))
	}
	return &writers[kind]
}

// plain makes the emit of a kind whose writer has no fast variant.
func plain(emit func(b *strings.Builder, k *ir.Kernel, s *codegen.Shader)) func(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, t Target) {
	return func(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, _ Target) { emit(b, k, s) }
}
