// Package procstat reads what a process holds of the machine, from /proc:
// for tests that open and close devices over and over and must not leak.
package procstat

import (
	"os"
	"strconv"
	"strings"
)

// Stats is a process's open descriptors, threads and resident memory.
type Stats struct{ FDs, Threads, RSSKB int }

func (s Stats) String() string {
	return "fds " + strconv.Itoa(s.FDs) + ", threads " + strconv.Itoa(s.Threads) + ", RSS " + strconv.Itoa(s.RSSKB/1024) + " MiB"
}

// Self reads the calling process's Stats (zeros where there is no /proc).
func Self() Stats {
	var s Stats
	fds, _ := os.ReadDir("/proc/self/fd")
	s.FDs = len(fds)
	b, _ := os.ReadFile("/proc/self/status")
	for _, ln := range strings.Split(string(b), "\n") {
		f := strings.Fields(ln)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "Threads:":
			s.Threads, _ = strconv.Atoi(f[1])
		case "VmRSS:":
			s.RSSKB, _ = strconv.Atoi(f[1])
		}
	}
	return s
}
