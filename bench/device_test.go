package bench

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDeviceScripts checks the device visit scripts (bench/*.sh) against
// the code: every package path they build exists, and every -test.run or
// -test.bench pattern they pass a test binary names at least one test or
// benchmark of its package (one of the old visit scripts built a package
// and ran tests that no longer existed, and reported them as passed).
func TestDeviceScripts(t *testing.T) {
	scripts, err := filepath.Glob("*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	// The binaries device.sh builds, by name: name:./package.
	pkgs := map[string]string{}
	pkgLine := regexp.MustCompile(`PKGS="([^"]*)"`)
	call := regexp.MustCompile(`\b(tests|benches)\s+\S+\s+\S+\s+(\w+)\s+'([^']*)'`)
	flag := regexp.MustCompile(`(\w+)\.test"?\s.*?-test\.(run|bench)\s+'([^']*)'`)
	build := regexp.MustCompile(`go (?:build|test -c)\b[^\n]*?\s(\./[\w/.-]*)`)
	checked := 0
	for _, sh := range scripts {
		b, err := os.ReadFile(sh)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		if m := pkgLine.FindStringSubmatch(src); m != nil {
			for _, f := range strings.Fields(m[1]) {
				name, path, _ := strings.Cut(f, ":")
				pkgs[name] = path
			}
		}
		for _, m := range build.FindAllStringSubmatch(src, -1) {
			if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
				t.Errorf("%s builds %s, which does not exist", sh, m[1])
			}
		}
		for _, line := range strings.Split(src, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			for _, m := range call.FindAllStringSubmatch(line, -1) {
				kind := "Test"
				if m[1] == "benches" {
					kind = "Benchmark"
				}
				checkPattern(t, sh, pkgs, m[2], kind, m[3])
				checked++
			}
			for _, m := range flag.FindAllStringSubmatch(line, -1) {
				kind := "Test"
				if m[2] == "bench" {
					kind = "Benchmark"
				}
				checkPattern(t, sh, pkgs, m[1], kind, m[3])
				checked++
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d patterns found in %v: the parser no longer reads the scripts", checked, scripts)
	}
	for name, path := range pkgs {
		if _, err := os.Stat(filepath.Join("..", path)); err != nil {
			t.Errorf("device.sh builds %s.test from %s, which does not exist", name, path)
		}
	}
}

// checkPattern reports a pattern whose top-level alternatives name no
// function of kind in bin's package (go test's matching: alternatives
// split at top-level |, each at /; the first element is matched
// unanchored against top-level names).
func checkPattern(t *testing.T, sh string, pkgs map[string]string, bin, kind, pat string) {
	t.Helper()
	if pat == "^$" {
		return
	}
	path, ok := pkgs[bin]
	if !ok {
		t.Errorf("%s runs %s.test, which device.sh does not build", sh, bin)
		return
	}
	names := funcs(t, filepath.Join("..", path), kind)
	for _, alt := range splitTop(pat, '|') {
		first := splitTop(alt, '/')[0]
		re, err := regexp.Compile(first)
		if err != nil {
			t.Errorf("%s: %s pattern %q: %v", sh, bin, pat, err)
			continue
		}
		found := false
		for _, n := range names {
			found = found || re.MatchString(n)
		}
		if !found {
			t.Errorf("%s: %s.test -test.%s %q: %q names no %s function in %s", sh, bin, map[string]string{"Test": "run", "Benchmark": "bench"}[kind], pat, first, kind, path)
		}
	}
}

// splitTop splits s at sep outside brackets and parentheses.
func splitTop(s string, sep byte) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case sep:
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

var funcDecl = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark)\w*)\(`)

// funcs returns the names of the package's top-level tests or benchmarks.
func funcs(t *testing.T, dir, kind string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests in %s: %v", dir, err)
	}
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range funcDecl.FindAllStringSubmatch(string(b), -1) {
			if strings.HasPrefix(m[1], kind) {
				names = append(names, m[1])
			}
		}
	}
	return names
}
