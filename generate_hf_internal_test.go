package gpucc

import (
	"slices"
	"testing"
)

// TestAttentionMaskFeed: the step's attention_mask and position_ids at the
// limits: the first and the last cache row, a prompt padded up to the
// step's position (its row all zeros but none past it), and one padded
// past it (a padding row: position_ids 1, as transformers' masked_fill).
func TestAttentionMaskFeed(t *testing.T) {
	for _, c := range []struct {
		rows     int
		position int64
		pads     []int
		mask     []int64
		ids      []int64
	}{
		{4, 0, []int{0}, []int64{1, 0, 0, 0}, []int64{0}},
		{4, 3, []int{0}, []int64{1, 1, 1, 1}, []int64{3}},
		{4, 2, []int{2, 0}, []int64{0, 0, 1, 0, 1, 1, 1, 0}, []int64{0, 2}},
		{4, 1, []int{3}, []int64{0, 0, 0, 0}, []int64{1}},
		{3, 2, []int{3}, []int64{0, 0, 0}, []int64{1}},
		{1, 0, []int{}, []int64{}, []int64{}},
	} {
		if m := attentionMask(c.rows, c.position, c.pads); !slices.Equal(m, c.mask) {
			t.Errorf("attentionMask(%d, %d, %v) = %v, want %v", c.rows, c.position, c.pads, m, c.mask)
		}
		if ids := positionIDs(c.position, c.pads); !slices.Equal(ids, c.ids) {
			t.Errorf("positionIDs(%d, %v) = %v, want %v", c.position, c.pads, ids, c.ids)
		}
	}
}
