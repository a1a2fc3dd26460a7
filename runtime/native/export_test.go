//go:build (darwin || freebsd || linux || netbsd) && (amd64 || arm64) && !android && !js

package native

// SetMinPartWork sets MinPartWork for a test and returns the restore.
func SetMinPartWork(n int64) func() {
	old := MinPartWork
	MinPartWork = n
	return func() { MinPartWork = old }
}
