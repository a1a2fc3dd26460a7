//go:build unix

package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Ensure gives Mesa's Vulkan drivers (lavapipe, under webgpu) an
// XDG_RUNTIME_DIR when the environment has none: without one, every webgpu
// start printed five "error: XDG_RUNTIME_DIR is invalid or not set in the
// environment." lines on stderr, from the CLI and from any Go program
// that opens webgpu (runtime/gpu calls it before creating an instance). The directory is the user's own, as the
// XDG spec asks (mode 0700, owned by the user, not a link), under the
// system temp dir; a variable already set is left alone, and when no such
// directory can be had nothing is set.
func Ensure() {
	if os.Getenv("XDG_RUNTIME_DIR") != "" {
		return
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("gpucc-runtime-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return
	}
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		return
	}
	if s, ok := st.Sys().(*syscall.Stat_t); !ok || int(s.Uid) != os.Getuid() {
		return
	}
	os.Setenv("XDG_RUNTIME_DIR", dir)
}
