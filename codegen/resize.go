package codegen

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpucc/gpucc/ir"
)

// ResizeTable returns one axis's resize taps (ir.ResizeTaps) as the u32
// values a kernel embeds, in order: I0 for each output, then I1, then the
// bits of W0 and of W1 (linear only), each written by u (the target's
// unsigned literal), comma-separated.
func ResizeTable(a ir.ResizeAxis, u func(uint32) string) (string, int) {
	var vals []uint32
	for _, i := range a.I0 {
		vals = append(vals, uint32(i))
	}
	for _, i := range a.I1 {
		vals = append(vals, uint32(i))
	}
	for _, w := range a.W0 {
		vals = append(vals, math.Float32bits(w))
	}
	for _, w := range a.W1 {
		vals = append(vals, math.Float32bits(w))
	}
	var b strings.Builder
	for j, v := range vals {
		if j > 0 {
			b.WriteString(", ")
		}
		b.WriteString(u(v))
	}
	return b.String(), len(vals)
}

// ResizeU32 is a u32 literal in C, WGSL and GLSL ES alike.
func ResizeU32(v uint32) string { return fmt.Sprintf("%du", v) }
