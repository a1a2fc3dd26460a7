package grad

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/ir"
)

// TestDocRulesListEveryOp: the package doc's table of rules has a row for
// every op of the table (scalar forms under their op's name or its own)
// and none for an op the table lacks.
func TestDocRulesListEveryOp(t *testing.T) {
	src, err := os.ReadFile("grad.go")
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(src), "\npackage grad")
	row := regexp.MustCompile(`(?m)^//\t([a-z_/][a-z0-9_/]*(?:, [a-z_][a-z0-9_]*)?)[( ]`)
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(head, -1) {
		for _, name := range strings.Split(m[1], ", ") {
			if base, ok := strings.CutSuffix(name, "_scalar"); ok { // add/sub_scalar, mul_scalar
				for _, b := range strings.Split(base, "/") {
					documented[b+"_scalar"] = true
				}
				continue
			}
			documented[name] = true
		}
	}
	want := map[string]bool{}
	for _, op := range ir.Ops() {
		r := op.Info()
		if r.ScalarOf != 0 && r.ScalarOf != ir.OpAdd && r.ScalarOf != ir.OpSub && r.ScalarOf != ir.OpMul {
			continue // the other scalar forms share their op's rule
		}
		want[r.Name] = true
		if r.ScalarOf == 0 && r.Wire != r.Name {
			delete(want, r.Name)
			want[r.Wire] = true // the doc writes max, the wire's name
		}
	}
	if diff := cmp.Diff(want, documented); diff != "" {
		t.Errorf("ops in grad's rule table (-op table +doc):\n%s", diff)
	}
}
