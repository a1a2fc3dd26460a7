package irtest

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// TestTypedLimits: the limit graphs compute on the reference with finite
// outputs, the non-finite ones compute with a ±Inf or NaN output, and each
// fault graph fails with its code at its last node.
func TestTypedLimits(t *testing.T) {
	for _, c := range append(TypedLimits(), TypedNonFinite()...) {
		vals, err := cpuref.EvalTyped(c.Graph)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		nonFinite := false
		for _, o := range c.Graph.Outputs {
			for _, v := range vals[o.ID].F {
				nonFinite = nonFinite || v != v || math.IsInf(float64(v), 0)
			}
		}
		if want := c.Name[:len("nonfinite")] == "nonfinite"; nonFinite != want {
			t.Errorf("%s: a non-finite output is %v", c.Name, nonFinite)
		}
	}
	if len(TypedScalarForms()) < 3 {
		t.Errorf("%d scalar-form graphs", len(TypedScalarForms()))
	}
	for _, c := range TypedScalarForms() {
		if _, err := cpuref.EvalTyped(c.Graph); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	for _, c := range TypedMixed() {
		_, err := cpuref.EvalTyped(c.Graph)
		if fault := strings.HasPrefix(c.Name, "mixed/fault"); fault != (err != nil) {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	for _, c := range TypedFaults() {
		_, err := cpuref.EvalTyped(c.Graph)
		want := ir.ErrIntegerFault
		if c.Name[:len("fault/gather")] == "fault/gather" {
			want = ir.ErrInvalidInput
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", c.Name, err, want)
		}
	}
}
