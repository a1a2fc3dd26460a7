//go:build unix

package cache

import (
	"io/fs"
	"os"
	"syscall"
)

// modesMean: permission bits say who may write a file.
const modesMean = true

// ownedByOther returns the owner of fi when it is not this process's
// effective user.
func ownedByOther(fi fs.FileInfo) (uid int, other bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Geteuid() {
		return 0, false
	}
	return int(st.Uid), true
}

// openNoFollow opens path for reading. It does not follow a final symbolic
// link (with follow false) and does not block on a FIFO or a device: the
// caller then checks, on the file it got, that it is a regular one.
func openNoFollow(path string, follow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	return os.OpenFile(path, flags, 0)
}
