//go:build !js

package gpu

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCallsCounted: outside calls.go, the package's sources make none of
// the calls that Counts counts except through calls.go's wrappers, so a
// new call on a run's path cannot escape the counts that tests pin.
func TestCallsCounted(t *testing.T) {
	direct := regexp.MustCompile(`\.(CreateCommandEncoder|Finish|End|CopyBufferToBuffer|WriteBuffer|CreateBuffer|CreateBindGroup|Unmap|WriteTimestamp|ResolveQuerySet|Submit|Poll|MapAsync)\(|[^.]\bstartMap\(|\bC\.wgpu`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f == "calls.go" || f == "mapasync.go" || f == "record.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			if m := direct.FindString(line); m != "" {
				t.Errorf("%s:%d calls %q directly: go through calls.go's wrappers, which count it", f, i+1, m)
			}
		}
	}
}
