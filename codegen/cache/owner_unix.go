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
