package ir_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestKernelTableComplete: the kernel table has a row for every kind,
// and a table without one is refused by the kind's number, as ir's init
// refuses its own; each kind's String is its row's unique name.
func TestKernelTableComplete(t *testing.T) {
	if err := ir.CheckKernelTable(ir.KernelTable); err != nil {
		t.Fatal(err)
	}
	names := map[string]ir.KernelKind{}
	for kind := range ir.KernelKind(ir.NumKernelKinds) {
		table := *ir.KernelTable
		table[kind] = ir.KernelInfo{}
		want := fmt.Sprintf("kernel kind %d has no row", kind)
		if err := ir.CheckKernelTable(&table); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a table without %v's row: %v, want an error containing %q", kind, err, want)
		}
		if name := kind.String(); name != kind.Info().Name || name == "" {
			t.Errorf("kind %d's String is %q, its row's Name %q", kind, name, kind.Info().Name)
		} else if other, ok := names[name]; ok {
			t.Errorf("kinds %d and %d are both %q", other, kind, name)
		}
		names[kind.String()] = kind
		if r := kind.Info(); r.Accumulates && !r.Acc {
			t.Errorf("%v accumulates per element but its body may not read the accumulator", kind)
		}
	}
	past := ir.KernelKind(ir.NumKernelKinds)
	if past.Valid() || past.String() != fmt.Sprintf("kind(%d)", ir.NumKernelKinds) {
		t.Errorf("kind %d past the table: Valid %v, String %q", past, past.Valid(), past.String())
	}
}

// TestKernelDTypes: a float32-only kind refuses a body value of another
// dtype by name (its row's DTypes), rather than computing it as float32.
func TestKernelDTypes(t *testing.T) {
	p := matmulProgram()
	p.Kernels[0].Body[0].DType = ir.I32
	err := ir.ValidateProgram(p)
	if want := "a matmul kernel computes float32 only, and v0 is int32"; err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ir.CodeUnsupported) {
		t.Errorf("got %v, want an error containing %q", err, want)
	}
}
