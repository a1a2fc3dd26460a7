package cpuref_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// TestBatchMatmulPerMatrix: each matrix of a batched matmul is the 2-D
// Matmul of the matrices numpy's broadcasting pairs, bit for bit, with
// -0, ±Inf and NaN among the operands; a matrix read from the wrong batch
// (swapping two of them) is caught.
func TestBatchMatmulPerMatrix(t *testing.T) {
	tests := []struct{ a, b ir.Shape }{
		{ir.Shape{1, 4, 5, 3}, ir.Shape{1, 4, 3, 6}},
		{ir.Shape{3, 2, 5}, ir.Shape{5, 4}},
		{ir.Shape{2, 5}, ir.Shape{3, 5, 4}},
		{ir.Shape{2, 1, 3, 2}, ir.Shape{1, 3, 2, 5}},
		{ir.Shape{3, 1, 7}, ir.Shape{7, 1}},
	}
	special := []float32{float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN()), 1e30}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v×%v", tt.a, tt.b), func(t *testing.T) {
			vals := func(n, seed int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32((i*seed)%17-8) / 7
					if (i+seed)%23 == 0 {
						v[i] = special[(i/23)%len(special)]
					}
				}
				return v
			}
			a, b := vals(tt.a.Len(), 3), vals(tt.b.Len(), 5)
			out, err := ir.InferShape(0, ir.OpMatmul, []ir.Shape{tt.a, tt.b}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := len(out)
			m, k, n := out[r-2], tt.a[len(tt.a)-1], out[r-1]
			batch := out[:r-2]
			ab := cpuref.Broadcast(a, tt.a, append(append(ir.Shape{}, batch...), m, k))
			bb := cpuref.Broadcast(b, tt.b, append(append(ir.Shape{}, batch...), k, n))
			var want []float32
			for z := range batch.Len() {
				want = append(want, cpuref.Matmul(ab[z*m*k:(z+1)*m*k], bb[z*k*n:(z+1)*k*n], m, k, n)...)
			}
			got := cpuref.BatchMatmul(a, b, tt.a, tt.b)
			bitsEq := cmp.Comparer(func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
			if diff := cmp.Diff(want, got, bitsEq); diff != "" {
				t.Errorf("BatchMatmul (-per matrix +batched):\n%s", diff)
			}
			if batch.Len() > 1 { // the check can fail: two matrices swapped
				swapped := append(append([]float32{}, want[m*n:2*m*n]...), want[:m*n]...)
				swapped = append(swapped, want[2*m*n:]...)
				if cmp.Equal(swapped, got, bitsEq) {
					t.Errorf("batches 0 and 1 are indistinguishable")
				}
			}
		})
	}
}
