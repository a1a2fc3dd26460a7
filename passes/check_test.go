package passes

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestCheckOnce: a graph pass that breaks the graph is refused before
// code is generated from it: by its name with Options.CheckEach, and when
// the graph is checked once, after lowering, without it.
func TestCheckOnce(t *testing.T) {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{4}, []float32{1, 2, 3, 4})
	b.Output("y", x.Mul(x).Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	lowers := 0
	for _, p := range Pipeline {
		if p.Lowers {
			lowers++
		}
	}
	if lowers != 1 {
		t.Fatalf("%d passes of Pipeline lower the graph, want 1 (the graph is checked before it)", lowers)
	}
	breaker := Pass{Name: "break", Doc: "makes an output read a node that is not there", Run: func(st *State) error {
		st.Graph.Outputs[0].ID = ir.NodeID(len(st.Graph.Nodes) + 5)
		return nil
	}}
	saved := Pipeline
	defer func() { Pipeline = saved }()
	at := slices.IndexFunc(saved, func(p Pass) bool { return p.Name == "views" })
	Pipeline = slices.Insert(slices.Clone(saved), at+1, breaker)
	for _, tt := range []struct {
		checkEach bool
		want      string
	}{
		{true, "pass break left an invalid graph"},
		{false, "the graph the passes before fuse left is invalid"},
	} {
		_, _, err := Compile(g, Options{CheckEach: tt.checkEach})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckEach %v: %v, want an error containing %q", tt.checkEach, err, tt.want)
		}
	}
}

// TestPipelineDocNamesEveryPass: the comment on Pipeline, which says why
// the passes run in their order, and the package doc's summary of what
// they do name every pass of Pipeline.
func TestPipelineDocNamesEveryPass(t *testing.T) {
	src, err := os.ReadFile("passes.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	pkgDoc, _, _ := strings.Cut(s, "\npackage passes")
	summary, _, _ := strings.Cut(pkgDoc, "\n//\n")
	_, why, _ := strings.Cut(s, "// Pipeline is the default pass order, and why:")
	why, _, _ = strings.Cut(why, "var Pipeline")
	for _, p := range Pipeline {
		if !regexp.MustCompile(`\b` + p.Name + `\b`).MatchString(why) {
			t.Errorf("the comment on Pipeline does not say where %s runs and why", p.Name)
		}
		if !strings.Contains(summary, "("+p.Name+")") {
			t.Errorf("the package doc's summary does not name %s as (%s)", p.Name, p.Name)
		}
	}
}
