//go:build !js && !(linux || darwin || freebsd)

package gpu

import "time"

// nap sleeps for about d.
func nap(d time.Duration) { time.Sleep(d) }
