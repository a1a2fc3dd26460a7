package cpuref

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestMissingKernelPanics: a table of kernels without a kind's row is
// refused by the kind's name, as the package's init refuses its own.
func TestMissingKernelPanics(t *testing.T) {
	if err := checkKernels(&kernels); err != nil {
		t.Fatal(err)
	}
	for kind := range ir.KernelKind(ir.NumKernelKinds) {
		table := kernels
		table[kind] = nil
		if err := checkKernels(&table); err == nil || !strings.Contains(err.Error(), kind.String()+" has no row") {
			t.Errorf("a table without %v's row: %v, want an error naming it", kind, err)
		}
	}
}
