package gpucc

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSampleLimits: sample at the limits: a NaN takes argmax's first NaN,
// an infinite maximum takes all the mass (spread over the ids that hold
// it), a row all -Inf draws among all of them, top_k 1 is the argmax
// with ties to the lowest id, a top_k past the row is the whole row, and
// a very low temperature is the argmax; over 20000 draws of a
// two-id row of logits 0 and ln 3 the larger is drawn about 3 times in 4.
func TestSampleLimits(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name string
		v    []float32
		temp float64
		topK int
		ok   func(int64) bool
	}{
		{"NaN", []float32{1, nan, 5, nan}, 1, 0, func(i int64) bool { return i == 1 }},
		{"+Inf", []float32{1, inf, 5, inf}, 1, 0, func(i int64) bool { return i == 1 || i == 3 }},
		{"all -Inf", []float32{-inf, -inf, -inf}, 1, 0, func(i int64) bool { return i >= 0 && i < 3 }},
		{"top_k 1, ties", []float32{1, 7, 3, 7}, 1, 1, func(i int64) bool { return i == 1 }},
		{"top_k past the row", []float32{1, 2}, 1, 9, func(i int64) bool { return i == 0 || i == 1 }},
		{"a low temperature", []float32{1, 2, 1.5}, 1e-30, 0, func(i int64) bool { return i == 1 }},
		{"max float", []float32{math.MaxFloat32, -math.MaxFloat32}, 1, 0, func(i int64) bool { return i == 0 }},
	} {
		for range 200 {
			if i := sample(c.v, c.temp, c.topK, rng); !c.ok(i) {
				t.Fatalf("%s: sample(%v) = %d", c.name, c.v, i)
			}
		}
	}
	n := 0
	for range 20000 {
		if sample([]float32{0, float32(math.Log(3))}, 1, 0, rng) == 1 {
			n++
		}
	}
	if n < 14700 || n > 15300 {
		t.Errorf("ln 3 drawn %d of 20000; want about 15000", n)
	}
}
