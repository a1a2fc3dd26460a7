package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/jsonschema"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// resultSchema parses docs/schema/result-v1.schema.json with def as its
// root: "#/$defs/run", say.
func resultSchema(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	doc, err := os.ReadFile("../../docs/schema/result-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	// Point the root at one definition, keeping the $defs it refers to.
	doc = []byte(strings.Replace(string(doc), `"anyOf": [{"$ref": "#/$defs/run"}, {"$ref": "#/$defs/train"}, {"$ref": "#/$defs/failure"}, {"$ref": "#/$defs/envelope"}],`, `"$ref": "`+def+`",`, 1))
	s, err := jsonschema.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestResultSchema: what gpucc really prints and answers satisfies the
// published schema, for results, failures and the HTTP envelope.
func TestResultSchema(t *testing.T) {
	seed := example("seed.json")
	check := func(t *testing.T, def, doc string) {
		t.Helper()
		if errs := resultSchema(t, def).Validate([]byte(doc)); len(errs) > 0 {
			t.Errorf("%s: %s\n%s", def, strings.Join(errs, "; "), doc)
		}
	}
	// seed.json has a vector output, sum.json a scalar one (shape []).
	for _, backend := range []string{"cpu", "webgpu", "wasm", "native"} {
		t.Run("run "+backend, func(t *testing.T) {
			for _, graph := range []string{seed, example("sum.json")} {
				out, v, code := gpucc(t, "", "run", "--backend", backend, "--allow-software", graph)
				if code != 0 {
					if os.Getenv("GPUCC_REQUIRE_"+strings.ToUpper(backend)) == "" && errorCode(v) == "backend_unavailable" {
						t.Skipf("%s: %s", backend, out)
					}
					t.Fatalf("exit %d: %s", code, out)
				}
				check(t, "#/$defs/run", out)
			}
		})
	}
	// --fast: webgpu's matmul is inexact and says so with its bound (K=3
	// in mlp.json); cpu has no fast path and runs exact.
	for _, c := range []struct {
		backend string
		exact   bool
		bound   any
	}{{"webgpu", false, 3 * 0x1p-24}, {"cpu", true, nil}} {
		t.Run("run --fast "+c.backend, func(t *testing.T) {
			out, v, code := gpucc(t, "", "run", "--fast", "--backend", c.backend, "--allow-software", example("mlp.json"))
			if code != 0 {
				if os.Getenv("GPUCC_REQUIRE_"+strings.ToUpper(c.backend)) == "" && errorCode(v) == "backend_unavailable" {
					t.Skipf("%s: %s", c.backend, out)
				}
				t.Fatalf("exit %d: %s", code, out)
			}
			check(t, "#/$defs/run", out)
			if v["exact"] != c.exact || v["errorBound"] != c.bound {
				t.Errorf("exact %v, errorBound %v; want %v, %v\n%s", v["exact"], v["errorBound"], c.exact, c.bound, out)
			}
		})
	}
	// --kernel-times: each kernel of a second run, by name, on webgpu; a
	// backend that cannot time its kernels one by one is refused with a code.
	t.Run("run --kernel-times", func(t *testing.T) {
		out, v, code := gpucc(t, "", "run", "--kernel-times", "--backend", "webgpu", "--allow-software", example("row_stats.json"))
		if code != 0 {
			if os.Getenv("GPUCC_REQUIRE_WEBGPU") == "" && errorCode(v) == "backend_unavailable" {
				t.Skipf("webgpu: %s", out)
			}
			t.Fatalf("exit %d: %s", code, out)
		}
		check(t, "#/$defs/run", out)
		prof, _ := v["kernelTimes"].([]any)
		if n, _ := v["kernels"].(float64); len(prof) != int(n) || n < 2 {
			t.Errorf("%d kernels timed, the run dispatched %v\n%s", len(prof), v["kernels"], out)
		}
		out, v, code = gpucc(t, "", "run", "--kernel-times", "--backend", "cpu", example("row_stats.json"))
		if code == 0 || errorCode(v) != "unsupported" {
			t.Errorf("run --kernel-times --backend cpu: exit %d, %s", code, out)
		}
		check(t, "#/$defs/failure", out)
	})
	t.Run("train", func(t *testing.T) {
		// The fixture's parameters are matrices and vectors;
		// scalarParamGraph's is a scalar (shape []).
		for _, c := range []struct{ stdin, graph string }{{"", fixture}, {scalarParamGraph, "-"}} {
			out, _, code := gpucc(t, c.stdin, "train", "--backend", "cpu", "--steps", "2", "--lr", "0.1", c.graph)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, out)
			}
			check(t, "#/$defs/train", out)
		}
	})
	t.Run("failures", func(t *testing.T) {
		bad := `{"version":1,"nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2]},{"id":1,"op":"add","a":0,"b":7}],"outputs":[{"name":"y","id":1}]}`
		for _, c := range []struct {
			stdin string
			args  []string
		}{
			{bad, []string{"run", "--backend", "cpu", "-"}},
			{"", []string{"run", "--nope"}},
			{"", []string{"run", "/nonexistent.json"}},
			{"", []string{"frobnicate"}},
		} {
			out, _, code := gpucc(t, c.stdin, c.args...)
			if code == 0 {
				t.Fatalf("gpucc %v succeeded: %s", c.args, out)
			}
			check(t, "#/$defs/failure", out)
		}
	})
	t.Run("serve envelope", func(t *testing.T) {
		url, _ := serve(t)
		graph, err := os.ReadFile(seed)
		if err != nil {
			t.Fatal(err)
		}
		scalar, err := os.ReadFile(example("sum.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{string(graph), string(scalar), `{"version":1`} {
			resp, err := http.Post(url+"/v1/execute?backend=cpu", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			check(t, "#/$defs/envelope", string(b))
			if resp.StatusCode == 200 {
				value := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(b)), `{"ok":true,"value":`), "}")
				check(t, "#/$defs/run", value)
			}
		}
	})
}

// scalarParamGraph is a graph whose one parameter and loss are scalars.
const scalarParamGraph = `{"version":1,"nodes":[
	{"id":0,"op":"input","name":"w","param":true,"shape":[],"data":[1.5]},
	{"id":1,"op":"input","name":"x","shape":[3],"data":[1,2,3]},
	{"id":2,"op":"mul","a":1,"b":0},
	{"id":3,"op":"sum","a":2}],
	"outputs":[{"name":"loss","id":3}]}`

// graphFiles returns every graph file of the repository: the examples, the
// AOT example's, the training fixture and the codegen test graphs.
func graphFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"examples/*.json", "examples/aot/*.json", "testdata/fixtures/*.graph.json", "codegen/*/testdata/*.json"} {
		m, err := filepath.Glob(filepath.Join("..", "..", pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 15 {
		t.Fatalf("only %d graph files found: %v", len(files), files)
	}
	return files
}

// TestResultSchemaEveryGraph: every output of every example, fixture and
// test graph satisfies the run schema: what gpucc run prints for each graph
// file, and the encoding of a run of every graph of the test suites
// (scalars, constants, outputs that are inputs, views, random graphs).
func TestResultSchemaEveryGraph(t *testing.T) {
	run := resultSchema(t, "#/$defs/run")
	failure := resultSchema(t, "#/$defs/failure")
	check := func(t *testing.T, name string, doc []byte) {
		t.Helper()
		if errs := run.Validate(doc); len(errs) > 0 {
			t.Errorf("%s: %s\n%.2000s", name, strings.Join(errs, "; "), doc)
		}
	}
	scalars := 0
	for _, f := range graphFiles(t) {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		out, v, code := gpucc(t, "", "run", "--backend", "cpu", abs)
		if code == 1 && errorCode(v) == "non_finite_output" {
			// A codegen golden may compute NaN on purpose (the
			// primitives' edges): its answer is the failure object.
			if errs := failure.Validate([]byte(out)); len(errs) > 0 {
				t.Errorf("%s: %s\n%.2000s", f, strings.Join(errs, "; "), out)
			}
			continue
		}
		if code != 0 {
			t.Errorf("%s: exit %d: %s", f, code, out)
			continue
		}
		check(t, f, []byte(out))
		scalars += strings.Count(out, `"shape":[]`)
	}
	if scalars < 5 {
		t.Errorf("only %d scalar outputs among the graph files; the check would miss a scalar's encoding", scalars)
	}
	graphs := map[string]*ir.Graph{}
	for _, cs := range [][]irtest.Case{irtest.Suite(), irtest.Views(), irtest.Reductions(), irtest.Composites(), irtest.Ops()} {
		for _, c := range cs {
			graphs[c.Name] = c.Graph
		}
	}
	for seed := range uint64(40) {
		graphs[fmt.Sprintf("random%d", seed)] = irtest.RandomViews(seed, 30)
		graphs[fmt.Sprintf("randomops%d", seed)] = irtest.RandomOps(seed, 30)
	}
	ctx := context.Background()
	rt, err := lib.Open(ctx, lib.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ran := 0
	for name, g := range graphs {
		res, err := rt.Run(ctx, g)
		if err != nil {
			// A refusal (non_finite_output of a random graph, say) prints a
			// failure, which TestResultSchema checks.
			continue
		}
		ran++
		var b bytes.Buffer
		enc := json.NewEncoder(&b) // as writeJSON prints it
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		check(t, name, b.Bytes())
	}
	if ran < len(graphs)/2 {
		t.Errorf("only %d of %d suite graphs ran", ran, len(graphs))
	}
}
