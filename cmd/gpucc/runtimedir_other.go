//go:build !unix

package main

// ensureRuntimeDir does nothing where there is no XDG_RUNTIME_DIR to give.
func ensureRuntimeDir() {}
