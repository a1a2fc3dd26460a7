package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/aot"
	"github.com/gpucc/gpucc/passes"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	out, v, code := gpucc(t, "", "build", example("mlp.json"), "-o", dir, "--explain", "--targets", "wgsl")
	if code != 0 {
		t.Fatalf("exit %d: %s %v", code, out, v)
	}
	for _, want := range []string{"kernels: 1", "profile: webgpu-default", "fuses nodes [3 4 5]", "tile   32x32", "workgroup [16 16 1]"} {
		if !strings.Contains(out, want) {
			t.Errorf("--explain lacks %q:\n%s", want, out)
		}
	}
	m := readManifest(t, dir)
	if len(m.Kernels) != 1 || len(m.Kernels[0].Bindings) != 5 || m.Kernels[0].SHA256 == "" || len(m.GraphSHA256) != 64 {
		t.Errorf("manifest: %+v", m)
	}
	if diff := cmp.Diff(passes.WebGPUDefault, m.Profile); diff != "" {
		t.Errorf("manifest profile (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"wgsl"}, m.Targets); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	for _, f := range m.Files {
		if _, err := os.Stat(filepath.Join(dir, f.Name)); err != nil {
			t.Error(err)
		}
	}
}

func readManifest(t *testing.T, dir string) *aot.Manifest {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m aot.Manifest
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// TestBuildTargets: each target writes its own kernels, and the manifest
// lists every file with its hash.
func TestBuildTargets(t *testing.T) {
	dir := t.TempDir()
	if out, v, code := gpucc(t, "", "build", example("bias_broadcast.json"), "-o", dir, "--targets", "c,glsl,wgsl,wasm"); code != 0 {
		t.Fatalf("exit %d: %s %v", code, out, v)
	}
	m := readManifest(t, dir)
	if diff := cmp.Diff([]string{"wgsl", "glsl", "c", "wasm"}, m.Targets); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	count := map[string]int{}
	for _, f := range m.Files {
		count[f.Target]++
	}
	if diff := cmp.Diff(map[string]int{"wgsl": len(m.Kernels), "glsl": count["glsl"], "c": 1, "wasm": 1}, count); diff != "" || count["glsl"] < len(m.Kernels) {
		t.Errorf("files per target (-want +got):\n%s%v", diff, m.Files)
	}
	wasm, err := os.ReadFile(filepath.Join(dir, "kernels", "kernels.wasm"))
	if err != nil || !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		t.Errorf("kernels.wasm is not a module: %v", err)
	}
}

func TestBuildRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"package main", []string{"--package", "main"}, "cannot be main"},
		{"keyword", []string{"--package", "func"}, "Go keyword"},
		{"blank", []string{"--package", "_"}, "blank identifier"},
		{"not an identifier", []string{"--package", "my-net"}, "not a Go identifier"},
		{"leading digit", []string{"--package", "1net"}, "not a Go identifier"},
		{"unknown target", []string{"--targets", "wgsl,spirv"}, `no target \"spirv\"`},
		{"unknown profile", []string{"--profile", "h200"}, `no device-limit profile is named \"h200\"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"build", example("seed.json"), "-o", t.TempDir()}, tt.args...)
			out, v, code := gpucc(t, "", args...)
			if code == 0 || errorCode(v) != "usage" || !strings.Contains(out, tt.msg) {
				t.Errorf("exit %d, %s; want a usage error containing %q", code, out, tt.msg)
			}
		})
	}
}

// TestBuildReproducible: building twice gives the same bytes, file for file.
func TestBuildReproducible(t *testing.T) {
	var trees []map[string]string
	for range 2 {
		dir := t.TempDir()
		if out, v, code := gpucc(t, "", "build", example("aot/mlp.json"), "-o", dir, "--package", "mlp"); code != 0 {
			t.Fatalf("exit %d: %s %v", code, out, v)
		}
		tree := map[string]string{}
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(path)
				rel, _ := filepath.Rel(dir, path)
				tree[rel] = string(b)
			}
			return err
		})
		trees = append(trees, tree)
	}
	if len(trees[0]) < 5 {
		t.Fatalf("too few files: %v", len(trees[0]))
	}
	if diff := cmp.Diff(trees[0], trees[1]); diff != "" {
		t.Errorf("two builds differ (-first +second):\n%s", diff)
	}
}

// TestBuildFieldClash: two names that map to one Go field (an ONNX
// model's "l1.weight" and "l1_weight") each get a distinct, stable field,
// the identifier followed by _ and the name's SHA-256 prefix, with a doc
// comment naming the graph's name; the build used to refuse them, and a
// model's names cannot be renamed.
func TestBuildFieldClash(t *testing.T) {
	g := `{"version":1,"nodes":[{"id":0,"op":"input","name":"a_b","shape":[1],"data":[1]},{"id":1,"op":"input","name":"a-b","shape":[1],"data":[2]},{"id":2,"op":"add","a":0,"b":1}],"outputs":[{"name":"y","id":2}]}`
	var srcs []string
	for range 2 {
		dir := t.TempDir()
		out, _, code := gpucc(t, g, "build", "-", "-o", dir, "--package", "clash", "--targets", "wgsl")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		src, err := os.ReadFile(filepath.Join(dir, "clash.go"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "clash.go", src, 0); err != nil {
			t.Fatalf("the generated Go does not parse: %v", err)
		}
		srcs = append(srcs, string(src))
	}
	for _, want := range []string{"// AB_648f is input \"a_b\"", "\tAB_648f gpucc.Value", "// AB_d443 is input \"a-b\"", "\tAB_d443 gpucc.Value"} {
		if !strings.Contains(srcs[0], want) {
			t.Errorf("the generated package lacks %q:\n%s", want, srcs[0])
		}
	}
	if srcs[0] != srcs[1] {
		t.Errorf("two builds named the fields differently")
	}
}

// appMain is the program TestBuildPackage builds against the generated
// package. On the backend it is given it loads the package, checks that
// loading generated no code (no codegen cache was consulted) and, on wasm,
// compiled no kernel with Clang (the JIT then does), runs it
// twice with new data for x and w1 resident on the device, and compares
// each output with the JIT's (rt.Compile of the source graph) bit for bit.
// Then it checks that CheckGraph refuses an edited source and that a bad
// shape names its field.
const appMain = `package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"

	"example.com/app/mlp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	_ "github.com/gpucc/gpucc/runtime/all"
)

func main() {
	if err := run(os.Args[1], os.Args[2], len(os.Args) > 3 && os.Args[3] == "nojit"); err != nil {
		fmt.Println("FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

// run prints the bits of every output it gets; with nojit it leaves out
// the JIT (which needs Clang on wasm).
func run(backend, source string, nojit bool) error {
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: backend, AllowSoftware: true})
	if err != nil {
		return err
	}
	defer rt.Close()
	exe, err := mlp.Compile(ctx, rt)
	if err != nil {
		return err
	}
	t, caches := exe.Executable().CompileTimings()
	generated := false
	for level := range caches {
		generated = generated || strings.HasPrefix(level, "codegen")
	}
	if t.PassesMs != 0 || generated {
		return fmt.Errorf("loading ran the passes or generated code: %+v %v", t, caches)
	}
	clangBuilt := func() bool { // whether Clang compiled this graph's kernels (see clangLogger)
		log, _ := os.ReadFile(os.Getenv("CLANG_LOG"))
		return strings.Contains(string(log), "kernel0")
	}
	if backend == "wasm" && clangBuilt() {
		return fmt.Errorf("loading compiled the kernels with Clang instead of using the embedded module")
	}
	raw, err := os.ReadFile(source)
	if err != nil {
		return err
	}
	g, err := ir.DecodeBytes(raw, ir.DefaultLimits())
	if err != nil {
		return err
	}
	var jit *gpucc.Executable
	if !nojit {
		if jit, err = rt.Compile(ctx, g); err != nil {
			return err
		}
		if backend == "wasm" && !clangBuilt() {
			return fmt.Errorf("the JIT did not compile with Clang either: the Clang log proves nothing")
		}
	}
	w1 := g.Nodes[g.Input("w1")]
	dev, err := rt.Upload(ctx, w1.Shape, w1.Data)
	if err != nil {
		return err
	}
	defer dev.Release()
	for step := range 2 {
		x := make([]float32, 32)
		for i := range x {
			x[i] = float32(i*(step+3)%11-5) / 3
		}
		out, err := exe.Run(ctx, mlp.Inputs{X: gpucc.NewTensor(ir.Shape{4, 8}, x), W1: dev})
		if err != nil {
			return err
		}
		for _, v := range out.Logits {
			fmt.Printf("%08x ", math.Float32bits(v))
		}
		fmt.Println()
		if nojit {
			continue
		}
		res, err := jit.Run(ctx, gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{4, 8}, x)})
		if err != nil {
			return err
		}
		want := res.Outputs["logits"].Data
		if len(out.Logits) != len(want) {
			return fmt.Errorf("step %d: %d logits, JIT %d", step, len(out.Logits), len(want))
		}
		for i := range want {
			if math.Float32bits(out.Logits[i]) != math.Float32bits(want[i]) {
				return fmt.Errorf("step %d: logits[%d] = %v, JIT %v", step, i, out.Logits[i], want[i])
			}
		}
	}
	if err := mlp.CheckGraph(raw); err != nil {
		return err
	}
	edited := strings.Replace(string(raw), "0.8434", "0.8435", 1)
	if err := mlp.CheckGraph([]byte(edited)); edited == string(raw) || err == nil || !strings.Contains(err.Error(), "run go generate") {
		return fmt.Errorf("CheckGraph of an edited source gave %v", err)
	}
	for _, bad := range []mlp.Inputs{
		{X: gpucc.NewTensor(ir.Shape{4, 8}, make([]float32, 31))},
		{X: gpucc.NewTensor(nil, make([]float32, 32))}, // a nil shape is a scalar's, as in gpucc.Run
		{X: gpucc.NewTensor(ir.Shape{8, 4}, make([]float32, 32))},
		{W2: dev},
	} {
		_, err = exe.Run(ctx, bad)
		if err == nil || !strings.Contains(err.Error(), "Inputs.") || gpucc.CodeOf(err) != ir.CodeInvalidInput {
			return fmt.Errorf("a bad input gave %v", err)
		}
	}
	return nil
}
`

// clangLogger is a Clang that appends every C file it compiles to
// $CLANG_LOG before running the real one: the wasm backend still runs
// Clang once when it opens, on a probe, and the log tells that apart from
// a build of the graph's kernels.
const clangLogger = `#!/bin/sh
for a; do case "$a" in *.c) cat "$a" >> "$CLANG_LOG";; esac; done
exec %s "$@"
`

// TestBuildPackage generates a package from examples/aot/mlp.json, builds
// and vets it in a temporary module that replaces gpucc with this
// checkout, and runs it on cpu, webgpu, wasm and native against the JIT,
// and on wasm once more with Clang hidden. Then it puts another package's
// kernels in, with the manifest edited to match, and expects Compile to
// refuse them as another program's; and it edits an embedded kernel and
// expects Compile to refuse it by its hash.
func TestBuildPackage(t *testing.T) {
	root, _ := filepath.Abs("../..")
	app := t.TempDir()
	source, _ := filepath.Abs("../../examples/aot/mlp.json")
	if out, v, code := gpucc(t, "", "build", source, "-o", filepath.Join(app, "mlp"), "--package", "mlp"); code != 0 {
		t.Fatalf("exit %d: %s %v", code, out, v)
	}
	gomod := "module example.com/app\n\ngo 1.26.8\n\nrequire github.com/gpucc/gpucc v0.0.0\n\nreplace github.com/gpucc/gpucc => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(appMain)} {
		if err := os.WriteFile(filepath.Join(app, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	goCmd("build", "-o", "app", ".")
	goCmd("vet", "./...")
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Fatal(err)
	}
	logger := filepath.Join(app, "clang-logger")
	if err := os.WriteFile(logger, []byte(fmt.Sprintf(clangLogger, clang)), 0o755); err != nil {
		t.Fatal(err)
	}
	runApp := func(backend string, env ...string) (string, error) {
		cmd := exec.Command(filepath.Join(app, "app"), backend, source)
		if len(env) > 0 {
			cmd.Args = append(cmd.Args, "nojit")
		}
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR=/tmp", "GPUCC_CACHE_DIR="+t.TempDir(),
			"GPUCC_CLANG="+logger, "CLANG_LOG="+filepath.Join(t.TempDir(), "clang.log"))
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.Output()
		return string(out), err
	}
	for _, backend := range []string{"cpu", "webgpu", "wasm", "native"} {
		t.Run(backend, func(t *testing.T) {
			out, err := runApp(backend)
			if err != nil && strings.Contains(out, "backend_unavailable") && os.Getenv("GPUCC_REQUIRE_"+strings.ToUpper(backend)) == "" {
				t.Skipf("%s is not available here: %s", backend, out)
			}
			if err != nil || !strings.HasSuffix(out, "\nok\n") {
				t.Fatalf("%v: %s", err, out)
			}
			if backend != "wasm" {
				return
			}
			// Again with no Clang at all: the same bits from the embedded module.
			noClang, err := runApp(backend, "GPUCC_CLANG=/bin/false", "GPUCC_WASM_LD=/bin/false")
			if err != nil || !strings.HasSuffix(noClang, "\nok\n") {
				t.Fatalf("without Clang: %v: %s", err, noClang)
			}
			if want, got := strings.SplitN(out, "\n", 3)[:2], strings.SplitN(noClang, "\n", 3)[:2]; !slices.Equal(want, got) {
				t.Errorf("without Clang the outputs differ:\n%q\nwith Clang:\n%q", got, want)
			}
		})
	}
	// Kernels replaced with the manifest edited to match pass the hash
	// check; Load must refuse them as another program's, where native once
	// ran them over this plan's buffers and read out of bounds. The kernels
	// that run are the plan's artifacts (Plan.Prebuilt, in plan.gob): this
	// plan with the other build's. (The root package's
	// TestLoadRefusesInconsistentPlan edits the plan itself.)
	t.Run("another package's kernels", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other")
		if out, v, code := gpucc(t, "", "build", example("mlp.json"), "-o", other, "--package", "other"); code != 0 {
			t.Fatalf("exit %d: %s %v", code, out, v)
		}
		decode := func(path string) *lib.Plan {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p, err := lib.DecodePlan(b)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		plan := decode(filepath.Join(app, "mlp", aot.PlanFile))
		plan.Prebuilt = decode(filepath.Join(other, aot.PlanFile)).Prebuilt
		mixed, err := lib.EncodePlan(plan)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{aot.PlanFile: mixed}
		defer tamper(t, filepath.Join(app, "mlp"), files)() // the next subtest builds again
		goCmd("build", "-o", "app", ".")
		for _, backend := range []string{"cpu", "native"} {
			out, err := runApp(backend)
			if err == nil || !strings.Contains(out, "FAIL: mlp: invalid_graph: field plan: its kernels were not generated for its program") {
				t.Errorf("%s: %v: %s", backend, err, out)
			}
		}
	})
	t.Run("edited kernel", func(t *testing.T) {
		path := filepath.Join(app, "mlp", "kernels", "matmul_0.wgsl")
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		edited := bytes.Replace(doc, []byte("f32"), []byte("f31"), 1)
		if bytes.Equal(doc, edited) {
			t.Fatal("the kernel has no f32 to edit")
		}
		if err := os.WriteFile(path, edited, 0o644); err != nil {
			t.Fatal(err)
		}
		goCmd("build", "-o", "app", ".")
		out, err := runApp("cpu")
		if err == nil || !strings.Contains(out, "edited after generation") {
			t.Errorf("an edited kernel was accepted: %v %s", err, out)
		}
	})
}

// tamper replaces files of the generated package in dir and records
// their new SHA-256 in its manifest.json, as someone who edits both would;
// restore puts every file back.
func tamper(t *testing.T, dir string, files map[string][]byte) (restore func()) {
	t.Helper()
	manifest := filepath.Join(dir, "manifest.json")
	saved := map[string][]byte{}
	for name := range files {
		saved[name] = nil
	}
	saved["manifest.json"] = nil
	for name := range saved {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		saved[name] = b
	}
	var m map[string]any
	if err := json.Unmarshal(saved["manifest.json"], &m); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		found := false
		for _, f := range m["files"].([]any) {
			if f := f.(map[string]any); f["name"] == name {
				sum := sha256.Sum256(data)
				f["sha256"], found = hex.EncodeToString(sum[:]), true
			}
		}
		if !found {
			t.Fatalf("manifest.json records no %s", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(manifest, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		for name, data := range saved {
			os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
	}
}
