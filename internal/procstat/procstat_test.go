package procstat

import (
	"runtime"
	"testing"
)

// TestSelf: on Linux a test process holds descriptors (stdin, stdout,
// stderr), threads and resident memory, and String names them.
func TestSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("no /proc")
	}
	s := Self()
	if s.FDs < 3 || s.Threads < 1 || s.RSSKB < 1024 {
		t.Errorf("Self() = %+v, want at least 3 descriptors, a thread and 1 MiB", s)
	}
	if got := (Stats{FDs: 6, Threads: 12, RSSKB: 43 * 1024}).String(); got != "fds 6, threads 12, RSS 43 MiB" {
		t.Errorf("String() = %q", got)
	}
}
