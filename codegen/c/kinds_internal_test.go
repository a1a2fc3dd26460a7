package c

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestMissingWriterPanics: a writer table without a kind's row is
// refused by the kind's name, as the package's init refuses its own.
func TestMissingWriterPanics(t *testing.T) {
	if err := checkWriters(&writers); err != nil {
		t.Fatal(err)
	}
	for kind := range ir.KernelKind(ir.NumKernelKinds) {
		table := writers
		table[kind] = writer{}
		if err := checkWriters(&table); err == nil || !strings.Contains(err.Error(), kind.String()+" has no row") {
			t.Errorf("a table without %v's row: %v, want an error naming it", kind, err)
		}
	}
}
