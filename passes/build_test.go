package passes

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// scanOrder is kernelOrder by its definition: take the first kernel whose
// inputs' writers are all taken, and scan again.
func scanOrder(ks []ir.Kernel) ([]ir.Kernel, bool) {
	writer := map[int]int{}
	for i, k := range ks {
		for _, o := range k.Outputs {
			writer[o] = i
		}
	}
	done := make([]bool, len(ks))
	var out []ir.Kernel
	for len(out) < len(ks) {
		progress := false
		for i, k := range ks {
			if done[i] {
				continue
			}
			ready := true
			for _, in := range k.Inputs {
				if w, ok := writer[in.Buffer]; ok && !done[w] {
					ready = false
				}
			}
			if ready {
				done[i], progress = true, true
				out = append(out, k)
				break
			}
		}
		if !progress {
			return nil, false
		}
	}
	return out, true
}

// TestKernelOrderMatchesScan: kernelOrder gives the definition's order on
// random programs (kernels out of order, buffers read twice or by several
// kernels, written twice), and refuses the same ones (a cycle, a kernel
// reading its own output).
func TestKernelOrderMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 35))
	refused := 0
	for seed := range 2000 {
		n := 1 + rng.IntN(12)
		ks := make([]ir.Kernel, n)
		for i := range ks {
			ks[i].Name = kernelName(i, ks[i])
			ks[i].Outputs = []int{rng.IntN(2 * n)}
			for range rng.IntN(4) {
				ks[i].Inputs = append(ks[i].Inputs, ir.Operand{Buffer: rng.IntN(2 * n)})
			}
		}
		want, wantOK := scanOrder(ks)
		got, gotOK := kernelOrder(ks)
		if gotOK != wantOK || !slices.EqualFunc(got, want, func(a, b ir.Kernel) bool { return a.Name == b.Name && a.Outputs[0] == b.Outputs[0] }) {
			t.Fatalf("seed %d: order %v (%v), want %v (%v)", seed, names(got), gotOK, names(want), wantOK)
		}
		if !wantOK {
			refused++
		}
	}
	if refused == 0 || refused == 2000 {
		t.Fatalf("%d of 2000 random programs refused: the cases do not cover both", refused)
	}
}

func names(ks []ir.Kernel) []string {
	var out []string
	for _, k := range ks {
		out = append(out, k.Name)
	}
	return out
}

// TestInOrderKeepsOrder: where inOrder holds, kernelOrder returns the
// kernels as they are (fuseRows then skips it), and where kernelOrder
// keeps a program as it is, inOrder holds, on random programs (kernels in
// and out of order, buffers read twice, written twice, a kernel reading its
// own output): the two never disagree, and both answers occur.
func TestInOrderKeepsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 35))
	held := 0
	for seed := range 4000 {
		n := 1 + rng.IntN(12)
		ks := make([]ir.Kernel, n)
		for i := range ks {
			ks[i].Name = kernelName(i, ks[i])
			ks[i].Outputs = []int{rng.IntN(2 * n)}
			for range rng.IntN(4) {
				// Mostly buffers written earlier (in order), sometimes any.
				b := rng.IntN(2 * n)
				if i > 0 && rng.IntN(4) > 0 {
					b = ks[rng.IntN(i)].Outputs[0]
				}
				ks[i].Inputs = append(ks[i].Inputs, ir.Operand{Buffer: b})
			}
		}
		got, ok := kernelOrder(ks)
		same := ok && slices.EqualFunc(got, ks, func(a, b ir.Kernel) bool { return a.Name == b.Name })
		if in := inOrder(ks); in != same {
			t.Fatalf("seed %d: inOrder %v, but kernelOrder gives %v (%v) for %v", seed, in, names(got), ok, names(ks))
		}
		if same {
			held++
		}
	}
	if held == 0 || held == 4000 {
		t.Fatalf("inOrder held for %d of 4000 random programs: the cases do not cover both", held)
	}
	t.Logf("inOrder held for %d of 4000", held)
}
