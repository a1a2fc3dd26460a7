package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestGoDirective: go.mod asks for the lowest Go the module can be built
// with: the highest go directive among its dependencies (go vet's
// stdversion check and the compiler catch code that needs more).
func TestGoDirective(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var ours string
	for _, line := range strings.Split(string(mod), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			ours = strings.TrimSpace(v)
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{if not .Main}}{{.Path}} {{.GoVersion}}{{end}}", "all").Output()
	if err != nil {
		t.Fatal(err)
	}
	need, by := "1", ""
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, v, _ := strings.Cut(line, " ")
		if v != "" && compareGo(v, need) > 0 {
			need, by = v, path
		}
	}
	if compareGo(ours, need) != 0 {
		t.Errorf("go.mod says go %s; the dependencies need %s (%s), so that is the lowest it can say", ours, need, by)
	}
}

// compareGo compares Go versions such as 1.25 and 1.25.0 numerically.
func compareGo(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		x, y := 0, 0
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// TestExampleGoDirective: examples/aot's go.mod asks for the same Go as
// gpucc's own, not the patch release of whoever last ran go mod tidy.
func TestExampleGoDirective(t *testing.T) {
	directive := func(path string) string {
		mod, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(mod), "\n") {
			if v, ok := strings.CutPrefix(line, "go "); ok {
				return strings.TrimSpace(v)
			}
		}
		t.Fatalf("%s has no go directive", path)
		return ""
	}
	if ours, example := directive("../../go.mod"), directive("../../examples/aot/go.mod"); ours != example {
		t.Errorf("examples/aot/go.mod says go %s, gpucc's go.mod go %s", example, ours)
	}
}
