package glsl

import (
	"fmt"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// writer is a kernel kind's row in the GLSL target.
type writer struct {
	// emit adds the kernel's passes to the plan (ki is its index).
	emit func(pl *Plan, ki int, k *ir.Kernel)
	// unsupported says why the target cannot run the kind ("" when it
	// can); Emit refuses such a kernel by name.
	unsupported string
}

// writers is the GLSL target's row of each kernel kind.
var writers = [ir.NumKernelKinds]writer{
	ir.KernelElementwise: {emit: accumulating(nil, "")},
	ir.KernelMatmul:      {emit: accumulating(matmul, "matmul")},
	ir.KernelReduce:      {emit: (*Plan).sum},
	ir.KernelLife:        {emit: (*Plan).life},
	ir.KernelRows: {unsupported: "a fragment pass writes one value per texel and cannot share a row between texels " +
		"(Emit runs a rows kernel as the kernels it fuses, ir.Program.Unfused)"},
}

func init() {
	// A kind without a row of its own that has a nest (codegen.NestOf)
	// is written from it: a new direct kind needs no row here.
	for kind := range writers {
		if writers[kind].emit == nil && writers[kind].unsupported == "" && codegen.HasNest(ir.KernelKind(kind)) {
			writers[kind] = writer{emit: nested}
		}
	}
	if err := checkWriters(&writers); err != nil {
		panic(err)
	}
}

// checkWriters returns an error naming the first kernel kind that table
// has no row for: a row writes the kind (emit) or says why it cannot.
func checkWriters(table *[ir.NumKernelKinds]writer) error {
	for kind, w := range table {
		if (w.emit == nil) == (w.unsupported == "") {
			return fmt.Errorf("codegen/glsl: BUG: kernel kind %v has no row in writers", ir.KernelKind(kind))
		}
	}
	return nil
}

// accumulating makes the emit of a kind that runs as elementwise passes:
// acc (nil for none) renders the function name that returns the
// accumulator of element i, which the body reads as InstrAcc.
func accumulating(acc func(k *ir.Kernel) string, name string) func(pl *Plan, ki int, k *ir.Kernel) {
	return func(pl *Plan, ki int, k *ir.Kernel) { pl.elementwise(ki, k, acc, name) }
}

// writerOf returns kind's row of writers, or an error naming the kind
// when the target cannot run it.
func writerOf(kind ir.KernelKind) (*writer, error) {
	if !kind.Valid() || writers[kind].emit == nil && writers[kind].unsupported == "" {
		panic(fmt.Sprintf("codegen/glsl: BUG: kernel kind %v has no row in writers", kind))
	}
	if w := &writers[kind]; w.unsupported != "" {
		return nil, ir.Errorf(ir.CodeInternal, -1, "", "codegen/glsl: a %v kernel cannot run here: %s", kind, w.unsupported)
	}
	return &writers[kind], nil
}
