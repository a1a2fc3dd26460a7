package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeAgrees: the README's error-code table lists every code the
// result schema publishes, the only snake_case words it quotes are those
// codes (the JSON keys are camelCase), and it names the go.mod tool line
// that `go tool gpucc` in examples/aot needs.
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
	var table []string
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "| `") {
			table = append(table, line)
		}
	}
	for _, c := range codes {
		if !slices.ContainsFunc(table, func(row string) bool {
			cell, _, _ := strings.Cut(strings.TrimPrefix(row, "| "), " |")
			return strings.Contains(cell, "`"+c+"`")
		}) {
			t.Errorf("the README's code table has no row for %s", c)
		}
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
