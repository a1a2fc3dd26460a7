package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestBuildHelpAgrees: build -h names every key of the JSON build really
// prints (it once said build printed nothing), and passesMs is rounded to
// the microsecond like every other time.
func TestBuildHelpAgrees(t *testing.T) {
	help, _, code := gpuccStderr(t, "", "build", "-h")
	if code != 0 {
		t.Fatalf("build -h: exit %d", code)
	}
	if strings.Contains(help, "else\nnothing") || strings.Contains(help, "else nothing") {
		t.Errorf("build -h says it prints nothing:\n%s", help)
	}
	out, _, code := gpucc(t, "", "build", example("mlp.json"), "-o", t.TempDir(), "--targets", "wgsl,c")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(help), " ")
	for _, key := range []string{"dir", "manifest", "files", "passesMs"} {
		if _, ok := res[key]; !ok {
			t.Errorf("build printed no %q: %s", key, out)
		}
	}
	for key := range res {
		if !regexp.MustCompile(`\b` + key + `\b`).MatchString(text) {
			t.Errorf("build prints %q, which build -h does not name:\n%s", key, help)
		}
	}
	if !strings.Contains(text, "skipped") {
		t.Errorf("build -h does not name skipped (printed when wasm is left out)")
	}
	ms, _ := res["passesMs"].(float64)
	if us := ms * 1e3; math.Abs(us-math.Round(us)) > 1e-6 {
		t.Errorf("passesMs %v is not rounded to the microsecond", ms)
	}
	if out, _, code := gpucc(t, "", "build", example("mlp.json"), "-o", t.TempDir(), "--targets", "wgsl", "--quiet"); code != 0 || out != "" {
		t.Errorf("build --quiet: exit %d, stdout %q; want 0 and nothing", code, out)
	}
}

// TestBuildRemovesStale: building into the directory of an earlier build
// removes the files that build listed and this one does not write (the
// kernels of a graph with more of them), and nothing else.
func TestBuildRemovesStale(t *testing.T) {
	dir := t.TempDir()
	fixtureGraph := example("../testdata/fixtures/mlp_train_public.graph.json")
	if out, _, code := gpucc(t, "", "build", fixtureGraph, "-o", dir, "--targets", "wgsl,glsl"); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	before := readManifest(t, dir)
	mine := filepath.Join(dir, "kernels", "notes.txt") // not the build's: it stays
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, code := gpucc(t, "", "build", example("seed.json"), "-o", dir, "--targets", "wgsl"); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	after := readManifest(t, dir)
	var want []string
	for _, f := range after.Files {
		want = append(want, f.Name)
	}
	want = append(want, "kernels/notes.txt")
	slices.Sort(want)
	var got []string
	err := filepath.WalkDir(filepath.Join(dir, "kernels"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			got = append(got, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Files) <= len(after.Files) {
		t.Fatalf("the first build wrote %d files, the second %d: nothing to go stale", len(before.Files), len(after.Files))
	}
	if !slices.Equal(got, want) {
		t.Errorf("kernels/ holds %v after the second build, want %v", got, want)
	}
}

// TestExplainAndDump: --explain lists every binding of each kernel, the
// uniform block too, as the manifest does; --dump-after prints text, not
// Go struct syntax.
func TestExplainAndDump(t *testing.T) {
	dir := t.TempDir()
	out, _, code := gpucc(t, "", "build", example("bias_broadcast.json"), "-o", dir, "--targets", "wgsl", "--explain")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	bindings := regexp.MustCompile(`\[binding (\d+)\]`).FindAllString(out, -1)
	n := 0
	for _, k := range readManifest(t, dir).Kernels {
		n += len(k.Bindings)
		if !strings.Contains(out, "uniform") {
			t.Errorf("--explain omits the uniform binding of %s:\n%s", k.Name, out)
		}
	}
	if len(bindings) != n {
		t.Errorf("--explain shows %d bindings, the manifest %d:\n%s", len(bindings), n, out)
	}
	for _, pass := range []string{"fuse", "tile"} {
		out, _, code := gpucc(t, "", "build", example("bias_broadcast.json"), "-o", t.TempDir(), "--dump-after", pass)
		if code != 0 || !strings.Contains(out, "tile=") || strings.ContainsAny(out, "{}") {
			t.Errorf("--dump-after %s: exit %d, want text without Go struct syntax:\n%s", pass, code, out)
		}
	}
}
