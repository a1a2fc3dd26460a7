package ir

import (
	"strings"
	"testing"
)

// TestAttentionChunk: the split order's part width is a function of T and
// ir.AttentionSplit alone: the fewest whole blocks that make at most
// AttentionSplit parts (clamped to MaxAttentionSplit), none where the
// knob is under 2, the keys fit one block, or the order is the full-row
// one; Order names it for --explain.
func TestAttentionChunk(t *testing.T) {
	defer func(split, from int) { AttentionSplit, AttentionOnlineFrom = split, from }(AttentionSplit, AttentionOnlineFrom)
	AttentionOnlineFrom = 1
	for _, c := range []struct {
		split, t, chunk, parts int
	}{
		{0, 2048, 0, 1}, {1, 2048, 0, 1}, {4, 2048, 512, 4}, {4, 2047, 512, 4}, {4, 2049, 544, 4},
		{2, 33, 32, 2}, {4, 33, 32, 2}, {8, 32, 0, 1}, {8, 1, 0, 1}, {3, 100, 64, 2}, {3, 130, 64, 3},
		{9, 4096, 512, 8}, {100, 4096, 512, 8}, {-1, 4096, 0, 1},
	} {
		AttentionSplit = c.split
		a := AttentionOf([]Shape{{c.t, 64}, {c.t, 64}, {c.t, 64}, {}}, packed(t, AttentionAttrs(0.125, false)))
		if a.Chunk != c.chunk || a.Parts() != c.parts || a.Chunk%AttentionBlock != 0 {
			t.Errorf("split %d, T %d: chunk %d, parts %d; want %d, %d", c.split, c.t, a.Chunk, a.Parts(), c.chunk, c.parts)
		}
		if split := strings.Contains(a.Order(), "split order"); split != (c.chunk > 0) {
			t.Errorf("split %d, T %d: Order() = %q", c.split, c.t, a.Order())
		}
	}
	AttentionSplit, AttentionOnlineFrom = 4, 1<<30
	if a := AttentionOf([]Shape{{2048, 64}, {2048, 64}, {2048, 64}, {}}, packed(t, AttentionAttrs(0.125, false))); a.Block != 0 || a.Chunk != 0 {
		t.Errorf("the full-row order split: block %d, chunk %d", a.Block, a.Chunk)
	}
}

// packed is attrs packed as attention's attributes.
func packed(t *testing.T, attrs map[string][]int) []int {
	a, err := packAttrs(0, OpAttention, attrs)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
