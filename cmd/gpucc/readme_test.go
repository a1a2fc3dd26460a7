package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeAgrees: the only snake_case words the README quotes are the
// error codes the result schema publishes (the JSON keys are camelCase),
// and it names the go.mod tool line that `go tool gpucc` in examples/aot
// needs. (That the README's code table lists exactly ir's codes is ir's
// TestDocsListEveryCode.)
func TestReadmeAgrees(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	doc, err := os.ReadFile("../../docs/schema/result-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs struct {
			Code struct {
				Enum []string `json:"enum"`
			} `json:"code"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(doc, &schema); err != nil {
		t.Fatal(err)
	}
	codes := schema.Defs.Code.Enum
	if len(codes) < 10 {
		t.Fatalf("the schema lists %d codes", len(codes))
	}
	for _, m := range regexp.MustCompile("`([a-z0-9]+(?:_[a-z0-9]+)+)`").FindAllStringSubmatch(readme, -1) {
		if !slices.Contains(codes, m[1]) {
			t.Errorf("the README quotes %s, a snake_case key the JSON does not have (its keys are camelCase)", m[0])
		}
	}
	mod, err := os.ReadFile("../../examples/aot/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	const tool = "tool github.com/gpucc/gpucc/cmd/gpucc"
	if !strings.Contains(string(mod), "\n"+tool+"\n") {
		t.Fatalf("examples/aot/go.mod lacks %q", tool)
	}
	if !strings.Contains(readme, "`"+tool+"`") {
		t.Errorf("the README never says that go tool gpucc needs %q in go.mod", tool)
	}
}

// TestReadmeLayout: the README's design section draws the packages and
// lists them in a table. Every path the table or the picture names
// exists; every package of the module is under a row of the table; and
// every top-level package directory but internal and deprecated ones is
// in the picture, so
// that a new package cannot stay out of the layout a newcomer reads.
func TestReadmeLayout(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Design: the layout\n")
	if !ok {
		t.Fatal("the README has no section \"## Design: the layout\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, picture, ok := strings.Cut(section, "\n```\n")
	if !ok {
		t.Fatal("the design section has no picture (a ``` block)")
	}
	picture, _, _ = strings.Cut(picture, "\n```\n")
	var rows []string
	deprecated := map[string]bool{} // rows of old names, which the picture leaves out
	for _, line := range strings.Split(section, "\n") {
		if m := regexp.MustCompile("^\\| `([^`]+)`[^|]*\\| (.*)").FindStringSubmatch(line); m != nil {
			r := strings.TrimSuffix(m[1], "/")
			rows = append(rows, r)
			deprecated[r] = strings.HasPrefix(m[2], "deprecated")
		}
	}
	if len(rows) < 10 {
		t.Fatalf("the layout table has %d rows", len(rows))
	}
	root := "../.."
	exists := func(p string) bool { _, err := os.Stat(filepath.Join(root, p)); return err == nil }
	for _, r := range rows {
		if !exists(r) {
			t.Errorf("the layout table names %s, which does not exist", r)
		}
	}
	for _, p := range regexp.MustCompile(`\b[a-z0-9]+(?:/[a-z0-9_.-]+)+`).FindAllString(picture, -1) {
		if !exists(p) {
			t.Errorf("the layout picture names %s, which does not exist", p)
		}
	}
	var pkgs []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "examples") {
				return filepath.SkipDir // hidden, test data, and examples (their own modules)
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") && !slices.Contains(pkgs, filepath.Dir(rel)) {
			pkgs = append(pkgs, filepath.Dir(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]bool{}
	for _, w := range regexp.MustCompile(`[a-z0-9]+(?:/[a-z0-9-]+)*`).FindAllString(picture, -1) {
		words[w] = true
		top, _, _ := strings.Cut(w, "/")
		words[top] = true
	}
	for _, p := range pkgs {
		p = filepath.ToSlash(p)
		if !slices.ContainsFunc(rows, func(r string) bool { return p == r || r != "." && strings.HasPrefix(p, r+"/") }) {
			t.Errorf("package %s is under no row of the README's layout table", p)
		}
		top, _, _ := strings.Cut(p, "/")
		if top == "cmd" {
			top = p
		}
		if top != "." && top != "internal" && !deprecated[top] && !words[top] {
			t.Errorf("the README's layout picture does not show %s", top)
		}
	}
}

// TestReadmeFigures: the figures the README quotes about the build are
// the build's (issue 36: they had drifted): a training step of the
// fixture is the kernel count train --explain prints, and the page's
// compressed wasm is within 10% of the size the README gives.
func TestReadmeFigures(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	m := regexp.MustCompile(`A step is (\d+) kernels`).FindStringSubmatch(readme)
	if m == nil {
		t.Fatal(`the README no longer says "A step is N kernels"`)
	}
	fixture, err := filepath.Abs("../../testdata/fixtures/mlp_train_public.graph.json")
	if err != nil {
		t.Fatal(err)
	}
	out, _, code := gpuccStderr(t, "", "train", "--explain", "--lr", "0.1", fixture)
	if code != 0 || !strings.Contains(out, "kernels: "+m[1]+",") {
		k := regexp.MustCompile(`kernels: \d+`).FindString(out)
		t.Errorf("the README says a step is %s kernels; train --explain says %q (exit %d)", m[1], k, code)
	}
	m = regexp.MustCompile(`carry that ([0-9.]+) MB file`).FindStringSubmatch(readme)
	if m == nil {
		t.Fatal(`the README no longer gives the page's size ("that N MB file")`)
	}
	st, err := os.Stat("../../web/static/gpucc.wasm.gz") // TestMain generated it
	if err != nil {
		t.Fatal(err)
	}
	said, _ := strconv.ParseFloat(m[1], 64)
	if got := float64(st.Size()) / 1e6; math.Abs(got-said) > 0.1*said {
		t.Errorf("the README says the page's wasm is %s MB; it is %.2f MB", m[1], got)
	}
}
