package jsonschema

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// load parses a schema under docs/schema.
func load(t *testing.T, name string) *Schema {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "schema", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(doc)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// TestGraphSchemaExamples: every example graph, the training fixture and
// every graph the encoder writes for the test suite and random graphs
// satisfy graph-v1.schema.json.
func TestGraphSchemaExamples(t *testing.T) {
	s := load(t, "graph-v1.schema.json")
	var files []string
	for _, pattern := range []string{"../../examples/*.json", "../../examples/aot/*.json", "../../testdata/fixtures/*.graph.json"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("only %d example graphs found: %v", len(files), files)
	}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ir.DecodeBytes(doc, ir.Limits{MaxNodes: 1 << 12, MaxElements: 1 << 24, MaxStorageBytes: 1 << 30, MaxOps: 1 << 40, MaxOutputs: 64}); err != nil {
			continue // not a graph gpucc accepts (a deliberately bad example)
		}
		if errs := s.Validate(doc); len(errs) > 0 {
			t.Errorf("%s: %s", f, strings.Join(errs, "; "))
		}
	}
	graphs := map[string]*ir.Graph{}
	for _, c := range append(irtest.Suite(), irtest.Views()...) {
		graphs[c.Name] = c.Graph
	}
	for seed := range uint64(50) {
		graphs["random"+string(rune('a'+seed%26))+string(rune('0'+seed/26))] = irtest.RandomViews(seed, 30)
	}
	// A graph of ±Inf and NaN (built under Limits.NonFinite) spells them
	// as the schema's nonFinite strings.
	b := ir.NewBuilder()
	nf := b.TypedInput("x", ir.F16, ir.Shape{3}, []float32{float32(math.Inf(1)), float32(math.NaN()), 1}, nil).Cast(ir.F32)
	b.Output("y", nf.Add(b.Full(ir.Shape{3}, float32(math.Inf(-1)))).MulScalar(float32(math.NaN())))
	g, err := b.Build(ir.Limits{NonFinite: true})
	if err != nil {
		t.Fatal(err)
	}
	graphs["non-finite"] = g
	for name, g := range graphs {
		if errs := s.Validate(ir.Encode(g)); len(errs) > 0 {
			t.Errorf("%s: %s", name, strings.Join(errs, "; "))
		}
	}
}

// TestGraphSchemaRejects: documents with a structural mistake fail the
// schema, as they fail ir.Decode.
func TestGraphSchemaRejects(t *testing.T) {
	s := load(t, "graph-v1.schema.json")
	in := `{"id":0,"op":"input","shape":[2],"data":[1,2]}`
	for name, doc := range map[string]string{
		"no version":            `{"nodes":[],"outputs":[]}`,
		"version 2":             `{"version":2,"nodes":[],"outputs":[]}`,
		"unknown field":         `{"version":1,"nodes":[],"outputs":[],"extra":1}`,
		"unknown op":            `{"version":1,"nodes":[{"id":0,"op":"conv"}],"outputs":[]}`,
		"input without data":    `{"version":1,"nodes":[{"id":0,"op":"input","shape":[2]}],"outputs":[]}`,
		"add with b and scalar": `{"version":1,"nodes":[` + in + `,{"id":1,"op":"add","a":0,"b":0,"scalar":1}],"outputs":[]}`,
		"add with neither":      `{"version":1,"nodes":[` + in + `,{"id":1,"op":"add","a":0}],"outputs":[]}`,
		"relu with b":           `{"version":1,"nodes":[` + in + `,{"id":1,"op":"relu","a":0,"b":0}],"outputs":[]}`,
		"matmul with scalar":    `{"version":1,"nodes":[` + in + `,{"id":1,"op":"matmul","a":0,"b":0,"scalar":2}],"outputs":[]}`,
		"named relu":            `{"version":1,"nodes":[` + in + `,{"id":1,"op":"relu","a":0,"name":"x"}],"outputs":[]}`,
		"zero dimension":        `{"version":1,"nodes":[{"id":0,"op":"input","shape":[0],"data":[]}],"outputs":[]}`,
		"rank 9":                `{"version":1,"nodes":[{"id":0,"op":"full","shape":[1,1,1,1,1,1,1,1,1],"value":1}],"outputs":[]}`,
		"string data":           `{"version":1,"nodes":[{"id":0,"op":"input","shape":[1],"data":["1"]}],"outputs":[]}`,
		"a spelling not NaN's":  `{"version":1,"nodes":[{"id":0,"op":"input","shape":[1],"data":["nan"]}],"outputs":[]}`,
		"output without id":     `{"version":1,"nodes":[` + in + `],"outputs":[{"name":"y"}]}`,
		"empty output name":     `{"version":1,"nodes":[` + in + `],"outputs":[{"name":"","id":0}]}`,
		"fractional id":         `{"version":1,"nodes":[{"id":0.5,"op":"input","shape":[1],"data":[1]}],"outputs":[]}`,
	} {
		if _, err := ir.DecodeBytes([]byte(doc), ir.DefaultLimits()); err == nil {
			t.Errorf("%s: ir.Decode accepts it; the case is wrong", name)
		}
		if errs := s.Validate([]byte(doc)); len(errs) == 0 {
			t.Errorf("%s: the schema accepts %s", name, doc)
		}
	}
}

func TestParseRefusesUnknownKeywords(t *testing.T) {
	if _, err := Parse([]byte(`{"type":"object","patternProperties":{}}`)); err == nil {
		t.Error("a schema with an unimplemented keyword was accepted")
	}
	if _, err := Parse([]byte(`{"$ref":"#/$defs/nope"}`)); err == nil {
		t.Error("a dangling $ref was accepted")
	}
}

// TestResultSchemaParses: the result schema parses with only the keywords
// this validator implements, and its refs resolve. (That its code enum is
// exactly ir's codes is ir's TestDocsListEveryCode.)
func TestResultSchemaParses(t *testing.T) {
	load(t, "result-v1.schema.json")
}
