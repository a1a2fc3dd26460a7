package ir_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// codes returns the values of the Code constants errors.go declares.
func codes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					c, _ := strconv.Unquote(lit.Value)
					out = append(out, c)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestDocsListEveryCode: the result schema's code enum and the README's
// table of codes list exactly the codes errors.go defines.
func TestDocsListEveryCode(t *testing.T) {
	want := codes(t)
	if len(want) < 10 {
		t.Fatalf("found %d codes in errors.go: %v", len(want), want)
	}
	raw, err := os.ReadFile("../docs/schema/result-v1.schema.json")
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
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(schema.Defs.Code.Enum))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result-v1.schema.json's codes (-errors.go +schema):\n%s", diff)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "| code | meaning |")
	if !ok {
		t.Fatal("README.md: no table of codes")
	}
	var listed []string
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(first, -1) {
			listed = append(listed, m[1])
		}
	}
	slices.Sort(listed)
	if diff := cmp.Diff(want, listed); diff != "" {
		t.Errorf("README.md's table of codes, each code once (-errors.go +README):\n%s", diff)
	}
}
