//go:build !js && (linux || darwin || freebsd)

package gpu

import (
	"syscall"
	"time"
)

// nap sleeps for about d. It calls nanosleep itself: time.Sleep of a few
// microseconds took 1.08 ms here (the runtime's timer wakes at the
// scheduler's granularity), nanosleep of 20 µs 87 µs, and a wait that
// naps pays the difference every time.
func nap(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
