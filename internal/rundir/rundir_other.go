//go:build !unix

package rundir

// Ensure does nothing where there is no XDG_RUNTIME_DIR to give.
func Ensure() {}
