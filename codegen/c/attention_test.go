package c

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestAttentionNest: attention's nest (codegen.attentionNest, which GLSL
// renders for WebGL2), written as C in place of the C target's own
// kernel, gives cpuref's bits in its three orders: the full-row one, with
// every attention online the online one, and the split order
// (ir.AttentionSplit 3: parts of 32 or 64 keys), over a block less one, a block
// and one, 130 keys, causal, a -Inf padding mask, rows whose first blocks
// are all -Inf, a fully masked row (NaN) and extremes; and the split
// order under SplitSums ("parts"), a kernel of the parts and the combine's
// nest. The C kernel itself is checked the same way.
func TestAttentionNest(t *testing.T) {
	compiler(t)
	bl := ir.AttentionBlock
	cases := []irtest.AttentionCase{
		{Name: "seq-block-1", S: 3, T: bl - 1, D: 8, E: 8, Scale: 0.5},
		{Name: "seq-block+1-causal", H: 2, S: bl + 1, T: bl + 1, D: 16, E: 8, Scale: 0.25, Mask: irtest.MaskCausal},
		{Name: "seq130-d64-padding", B: 2, S: 5, T: 130, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskPadding, NonFinite: true},
		{Name: "lead-off-100", S: 3, T: 100, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskLead, NonFinite: true},
		{Name: "row-off-70", S: 4, T: 70, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskRowOff, NonFinite: true},
		{Name: "extremes-70", H: 2, S: 5, T: 70, D: 8, E: 8, Scale: 0.125, Extremes: true},
		{Name: "d128-odd-e", S: 2, T: 67, D: 128, E: 7, Scale: 0.088388346},
	}
	defer func(old writer, from, split int) {
		writers[ir.KernelAttention], ir.AttentionOnlineFrom, ir.AttentionSplit = old, from, split
	}(writers[ir.KernelAttention], ir.AttentionOnlineFrom, ir.AttentionSplit)
	own := writers[ir.KernelAttention]
	for _, order := range []string{"full", "online", "split", "parts"} {
		ir.AttentionOnlineFrom, ir.AttentionSplit = 1<<30, 0
		if order != "full" {
			ir.AttentionOnlineFrom = 1
		}
		if order == "split" || order == "parts" {
			// 130 keys in parts of 64, 64 and 2; 100 in 64 and 36; 70
			// and 67 in 32, 32 and the rest; block+1 in 32 and 1.
			ir.AttentionSplit = 3
		}
		for _, w := range []struct {
			name string
			w    writer
		}{{"kernel", own}, {"nest", writer{write: tiled(nested)}}} {
			writers[ir.KernelAttention] = w.w
			for k, c := range cases {
				t.Run(fmt.Sprintf("%s/%s/%s", order, w.name, c.Name), func(t *testing.T) {
					g := c.Graph(uint64(1300 + k))
					p := compile(t, g, passes.Options{SplitSums: order == "parts"})
					if split := p.Program().Kernels[0].Blocks > 1; split != (order == "parts" && c.T > bl) {
						t.Fatalf("the parts in a kernel of their own: %v\n%s", split, p.Program())
					}
					want := cpuref.RunProgram(p.Program())
					for name, got := range runC(t, p) {
						for i, v := range got {
							wv := want[name][i]
							if math.Float32bits(v) != math.Float32bits(wv) && !(v != v && wv != wv) {
								t.Fatalf("%s[%d] = %v (%#08x), cpuref %v (%#08x)", name, i, v, math.Float32bits(v), wv, math.Float32bits(wv))
							}
						}
					}
				})
			}
		}
	}
}
