// Package layers_test checks the module's import layering with go list:
// which packages may import which. A new import that breaks a layer fails
// here, naming the package and the import, rather than in a design review.
package layers_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gpucc/gpucc"

// pkg is one package of the module, as go list sees it without its tests.
type pkg struct {
	imports []string // the module's packages it imports, module path cut
	deps    []string // every package of the module it depends on
}

// list runs go list over the module once.
func list(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}|{{join .Deps \",\"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	trim := func(list string) []string {
		var own []string
		for _, p := range strings.Split(list, ",") {
			if p == module {
				own = append(own, ".")
			} else if rest, ok := strings.CutPrefix(p, module+"/"); ok {
				own = append(own, rest)
			}
		}
		return own
	}
	pkgs := map[string]pkg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			t.Fatalf("go list printed %q", line)
		}
		pkgs[trim(f[0])[0]] = pkg{imports: trim(f[1]), deps: trim(f[2])}
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages of the module", len(pkgs))
	}
	return pkgs
}

// testHelpers are packages that exist for tests; no other package may
// depend on them.
var testHelpers = []string{"ir/irtest", "internal/gpucctest", "internal/chromium", "internal/jsonschema", "internal/testmodels"}

// core are the compiler's packages: they know graphs, programs and kernel
// source, never a device, so none may depend on a runtime.
var core = []string{"ir", "ir/eval64", "cpuref", "passes", "grad", "onnx", "codegen", "codegen/c", "codegen/glsl", "codegen/wgsl", "codegen/cache"}

// cliImports are the packages cmd/gpucc may import: the library, its
// ahead-of-time builder, the backends it registers or drives, and the
// packages its commands are about (bench, serve's server and page, import's
// onnx, the code cache of --cache-dir). Code generators and passes are
// the library's business, not the CLI's.
var cliImports = []string{
	".", "aot", "ir", // the library
	"runtime/all", "runtime/gpu", "runtime/gpu/tune", // backends: all of them, and webgpu's adapters and tuner
	"bench", "server", "web", "onnx", "codegen/cache", // what bench, serve, import and --cache-dir are about
	"internal/npy",         // the files --input, --const and --output-dir read and write
	"internal/rundir",      // an XDG_RUNTIME_DIR for Mesa before any backend opens
	"internal/modellimits", // the limits an .onnx model is sized to, one rule with the page's
	"internal/onnxconst",   // --const's values, read as serve's and the page's are
}

func TestLayers(t *testing.T) {
	pkgs := list(t)
	for name, p := range pkgs {
		if slices.Contains(testHelpers, name) {
			continue
		}
		for _, h := range testHelpers {
			if slices.Contains(p.deps, h) {
				t.Errorf("%s depends on the test helper %s", name, h)
			}
		}
	}
	for _, name := range core {
		p, ok := pkgs[name]
		if !ok {
			t.Errorf("go list found no %s", name)
		}
		for _, d := range p.deps {
			if strings.HasPrefix(d, "runtime/") {
				t.Errorf("%s depends on %s: the compiler's packages know no device", name, d)
			}
		}
	}
	for _, d := range pkgs["passes"].deps {
		if d == "codegen" || strings.HasPrefix(d, "codegen/") {
			t.Errorf("passes depends on the code generator %s: what a pass needs of a target belongs in ir or the device profile", d)
		}
	}
	cli, ok := pkgs["cmd/gpucc"]
	if !ok {
		t.Fatal("go list found no cmd/gpucc")
	}
	for _, imp := range cli.imports {
		if !slices.Contains(cliImports, imp) {
			t.Errorf("cmd/gpucc imports %s; the CLI calls the library (., aot) and its backends, not the layers below them", imp)
		}
	}
}
