package main

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/internal/jsonschema"
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
	for _, backend := range []string{"cpu", "webgpu", "wasm", "native"} {
		t.Run("run "+backend, func(t *testing.T) {
			out, v, code := gpucc(t, "", "run", "--backend", backend, "--allow-software", seed)
			if code != 0 {
				if os.Getenv("GPUCC_REQUIRE_"+strings.ToUpper(backend)) == "" && errorCode(v) == "backend_unavailable" {
					t.Skipf("%s: %s", backend, out)
				}
				t.Fatalf("exit %d: %s", code, out)
			}
			check(t, "#/$defs/run", out)
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
	t.Run("train", func(t *testing.T) {
		out, _, code := gpucc(t, "", "train", "--backend", "cpu", "--steps", "2", "--lr", "0.1", fixture)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		check(t, "#/$defs/train", out)
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
		for _, body := range []string{string(graph), `{"version":1`} {
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
