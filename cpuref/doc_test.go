package cpuref

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/ir"
)

// packageDoc returns the lines of cpuref.go's package comment, without
// the comment markers.
func packageDoc(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("cpuref.go")
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(src), "\npackage cpuref")
	if !ok {
		t.Fatal("cpuref.go: no package clause")
	}
	var lines []string
	for _, l := range strings.Split(head, "\n") {
		lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(l, "//"), " "))
	}
	return lines
}

// TestDocDefinesEveryOp: the package doc, which defines the answer every
// backend must reproduce, has a rule (a bullet naming it) for every op of
// the table but input, and names no op the table lacks. A reduction
// other than sum is defined by its row (Combine and Identity over sum's
// tree, the bullet "every other reduction"), so it may go unnamed.
func TestDocDefinesEveryOp(t *testing.T) {
	bullet := regexp.MustCompile(`^  - ((?:[a-z_][a-z0-9_]*(?:\([^)]*\))?(?:, )?)+)`)
	name := regexp.MustCompile(`[a-z_][a-z0-9_]*(?:\([^)]*\))?`)
	defined := map[string]bool{}
	for _, l := range packageDoc(t) {
		m := bullet.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		for _, n := range name.FindAllString(m[1], -1) {
			n, _, _ = strings.Cut(n, "(")
			defined[n] = true
		}
	}
	want := map[string]bool{"every": true}
	for _, op := range ir.Ops() {
		r := op.Info()
		if op.IsReduction() && op != ir.OpSum {
			delete(defined, r.Wire)
			continue
		}
		if r.ScalarOf == 0 && op != ir.OpInput {
			want[r.Wire] = true
		}
	}
	if diff := cmp.Diff(want, defined); diff != "" {
		t.Errorf("ops with a rule in cpuref's doc (-op table +doc):\n%s", diff)
	}
}

// TestDocAccuracyTable: the doc's accuracy table lists the ops that
// bench/accuracy measures (its unary list and div), each an elementwise op.
func TestDocAccuracyTable(t *testing.T) {
	lines := packageDoc(t)
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Accuracy against float64") })
	if start < 0 {
		t.Fatal("no accuracy table in the package doc")
	}
	var got []string
	for _, l := range lines[start:] {
		if f := strings.Fields(l); strings.HasPrefix(l, "\t") && len(f) > 0 {
			got = append(got, f[0])
		} else if len(got) > 0 {
			break
		}
	}
	src, err := os.ReadFile("../bench/accuracy/main.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`var unary = \[\]ir\.Op\{([^}]*)\}`).FindSubmatch(src)
	if m == nil {
		t.Fatal("bench/accuracy/main.go: no unary list")
	}
	want := []string{"div"}
	for _, f := range strings.Split(string(m[1]), ",") {
		op := strings.TrimPrefix(strings.TrimSpace(f), "ir.Op")
		want = append(want, strings.ToLower(op))
	}
	for _, w := range want {
		op, _, ok := ir.WireOp(w)
		if !ok || !op.IsElementwise() {
			t.Errorf("bench/accuracy measures %q, which is not an elementwise op of the table", w)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the doc's accuracy table (-bench/accuracy +doc):\n%s", diff)
	}
	if doc := regexp.MustCompile(`float32 sequences \(([^)]*)\)`).FindSubmatch(src); doc == nil {
		t.Error("bench/accuracy's doc lists no ops")
	} else {
		listed := strings.Split(string(doc[1]), ", ")
		slices.Sort(listed)
		if diff := cmp.Diff(want, listed); diff != "" {
			t.Errorf("bench/accuracy's doc list (-its unary list and div +doc):\n%s", diff)
		}
	}
}
