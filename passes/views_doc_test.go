package passes

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/ir"
)

// TestSinkCostDoc: the cost model's doc names the elementwise ops a
// large broadcast does not sink through; they are exactly those that cost
// more than Balance per element, and the ops it says do sink cost at most
// that.
func TestSinkCostDoc(t *testing.T) {
	src, err := os.ReadFile("views.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(strings.ReplaceAll(string(src), "//", "")), " ")
	m := regexp.MustCompile(`the seed's ops, ([a-z, ]+?) sink; ([a-z, ]+?) \(over \d+\) sink only`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("views.go: the cost model's doc no longer lists what sinks and what does not")
	}
	names := func(s string) []string {
		out := strings.FieldsFunc(strings.ReplaceAll(s, " and ", ", "), func(r rune) bool { return r == ',' || r == ' ' })
		slices.Sort(out)
		return out
	}
	cost := func(op ir.Op) int64 { return op.Info().Cost([]ir.Shape{{1}, {1}}, ir.Shape{1}) }
	var expensive []string
	for _, op := range ir.Ops() {
		if r := op.Info(); r.Elementwise && r.ScalarOf == 0 && cost(op) > Balance {
			expensive = append(expensive, r.Wire)
		}
	}
	slices.Sort(expensive)
	if diff := cmp.Diff(expensive, names(m[2])); diff != "" {
		t.Errorf("ops that cost more than Balance (-table +doc):\n%s", diff)
	}
	for _, w := range names(m[1]) {
		if op, _, ok := ir.WireOp(w); !ok || cost(op) > Balance {
			t.Errorf("the doc says %q sinks a broadcast, but it is not an op of at most Balance per element", w)
		}
	}
}
