package ir_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestEncodeNonFinite: a graph with non-finite values (built in Go under
// Limits.NonFinite) has no protocol v1 form, as Encode's doc says: its
// values are written bare and Decode refuses the document, where a finite
// graph round-trips.
func TestEncodeNonFinite(t *testing.T) {
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		b := ir.NewBuilder()
		b.Output("y", b.Input(ir.Shape{2}, []float32{1, v}).Relu())
		g, err := b.Build(ir.Limits{NonFinite: true})
		if err != nil {
			t.Fatal(err)
		}
		raw := ir.Encode(g)
		if !strings.Contains(string(raw), ir.FormatFloat(v)) {
			t.Errorf("%v: not written bare: %s", v, raw)
		}
		if _, err := ir.Decode(bytes.NewReader(raw), ir.Limits{NonFinite: true}); err == nil {
			t.Errorf("%v: Decode read %s", v, raw)
		}
	}
}
