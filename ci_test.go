package gpucc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAptWaitsForTheLock: make deps, make peers-deps and CI install their
// packages only through .ci/apt-install, which waits when another apt holds
// the locks (issue 36: make demo failed on a fresh cloud machine because
// unattended-upgrades held /var/lib/dpkg/lock-frontend). A fake apt-get
// refuses an install without -o DPkg::Lock::Timeout=600 and fails the first
// update as apt does while the lists lock is held.
func TestAptWaitsForTheLock(t *testing.T) {
	bare := regexp.MustCompile(`(^|[^-/\w])apt-get\s`)
	for _, f := range []string{"Makefile", ".ci/run", ".ci/release", ".ci/release-check", ".ci/fuzz"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\n") {
			if code, _, _ := strings.Cut(line, "#"); bare.MatchString(code) {
				t.Errorf("%s:%d calls apt-get itself, which fails at once on a held lock; use .ci/apt-install: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}

	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	fake := `#!/bin/sh
echo "$@" >> ` + log + `
case "$*" in
*"-o DPkg::Lock::Timeout=600"*) ;;
*) echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 1 (apt-get)" >&2; exit 100 ;;
esac
case "$*" in
*update*)
	if [ ! -e ` + dir + `/updated ]; then
		touch ` + dir + `/updated
		echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (apt-get)" >&2
		exit 100
	fi ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "apt-get"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(".ci/apt-install", "clang", "lld")
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "GPUCC_APT_RETRY=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf(".ci/apt-install: %v\n%s", err, out)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "-o DPkg::Lock::Timeout=600 update -q\n" +
		"-o DPkg::Lock::Timeout=600 update -q\n" +
		"-o DPkg::Lock::Timeout=600 install -y -q clang lld\n"
	if string(got) != want {
		t.Errorf("apt-get calls:\n%s\nwant (update retried while its lock is held, install waiting for dpkg's):\n%s", got, want)
	}
}

// TestShortTierSkipsNothing: make test runs go test -short, the tier for
// every change, in which the random cross-backend matrices run fewer seeds;
// make test-all runs every seed. So that the short tier loses no coverage
// (every backend, op and case still runs), no test skips itself under
// -short: an `if` on testing.Short() may shrink a count, never call Skip.
func TestShortTierSkipsNothing(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ifs, ok := n.(*ast.IfStmt)
			if !ok || !mentionsShort(ifs.Cond) {
				return true
			}
			ast.Inspect(ifs.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Skip") {
					t.Errorf("%s: a test skips under -short, so make test would not run it; shrink its repetitions instead", fset.Position(sel.Pos()))
				}
				return true
			})
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^TESTFLAGS \?= -short$`).Match(mk) || !regexp.MustCompile(`(?m)^test-all:`).Match(mk) {
		t.Error("the Makefile has no short tier (TESTFLAGS ?= -short) or no test-all target")
	}
}

// mentionsShort reports whether expr calls testing.Short().
func mentionsShort(expr ast.Expr) bool {
	found := false
	ast.Inspect(expr, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Short" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "testing" {
					found = true
				}
			}
		}
		return !found
	})
	return found
}
