package ir_test

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// TestFloorCeilExact: floor, ceil and round are exact, bit for bit
// math.Floor, math.Ceil and math.RoundToEven (signed zeros, ±Inf and NaN's bits included), over a
// sweep of every 1021st float32 bit pattern and the values around each
// integer boundary that matters (±0, ±0.5, ±1, 2^23 ± 1).
func TestFloorCeilExact(t *testing.T) {
	var xs []float32
	for b := uint64(0); b < 1<<32; b += 1021 {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	for _, v := range []float64{0, 0.5, 1, 1.5, 2.5, 3.5, 0.49999997, 0x1p22 + 0.5, 0x1p22 + 1.5, 0x1p23 - 1, 0x1p23 - 0.5, 0x1p23, 0x1p23 + 1, 0x1p24, math.Inf(1), 1e-45} {
		xs = append(xs, float32(v), float32(-v), math.Nextafter32(float32(v), 0), -math.Nextafter32(float32(v), 0))
	}
	for _, op := range []ir.Op{ir.OpFloor, ir.OpCeil, ir.OpRound} {
		b := ir.NewBuilder()
		x := b.Input(ir.Shape{len(xs)}, make([]float32, len(xs)))
		b.Output("y", x.Apply(op))
		g, err := b.Build(ir.Limits{MaxElements: 1 << 23, MaxStorageBytes: 1 << 28, MaxOps: 1 << 32})
		if err != nil {
			t.Fatal(err)
		}
		g.Nodes[0].Data = xs // NaN and ±Inf too: Validate, which refuses them, has run
		got := cpuref.Eval(g)[g.Outputs[0].ID]
		f64 := op.Info().F64
		bad := 0
		for i, v := range xs {
			want := float32(f64(float64(v), 0))
			if math.Float32bits(got[i]) != math.Float32bits(want) && !(v != v && got[i] != got[i]) {
				if bad++; bad <= 5 {
					t.Errorf("%v(%v) = %v, want %v", op, v, got[i], want)
				}
			}
		}
	}
}
