package ir_test

import (
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// TestProtocolDocConv: the conv2d example of docs/protocol.md decodes,
// and cpuref gives the result the page states.
func TestProtocolDocConv(t *testing.T) {
	raw, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, conv, ok := strings.Cut(string(raw), "## Convolution: `conv2d`")
	if !ok {
		t.Fatal("docs/protocol.md has no conv2d section")
	}
	m := regexp.MustCompile("(?s)```json\n(.*?)```\n\ngives `y` of shape `\\[([0-9, ]+)\\]`: `\\[([0-9, ]+)\\]`").FindStringSubmatch(conv)
	if m == nil {
		t.Fatal("the conv2d section has no example graph with its stated result")
	}
	g, err := ir.DecodeBytes([]byte(m[1]), ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	y := g.Outputs[0].ID
	ints := func(s string) []float32 {
		var out []float32
		for _, f := range strings.Split(s, ", ") {
			var v float32
			for _, c := range f {
				v = v*10 + float32(c-'0')
			}
			out = append(out, v)
		}
		return out
	}
	var shape ir.Shape
	for _, d := range ints(m[2]) {
		shape = append(shape, int(d))
	}
	if diff := cmp.Diff(shape, g.Nodes[y].Shape); diff != "" {
		t.Errorf("shape (-doc +decoded):\n%s", diff)
	}
	got := cpuref.Eval(g)[y]
	if diff := cmp.Diff(ints(m[3]), got, cmp.Comparer(func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) })); diff != "" {
		t.Errorf("values (-doc +cpuref):\n%s", diff)
	}
}
