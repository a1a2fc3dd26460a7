//go:build !unix

package cache

import (
	"fmt"
	"io/fs"
	"os"
)

// modesMean is false: Windows reports every writable file as 0666.
const modesMean = false

// ownedByOther cannot tell owners apart here (Windows keeps them in ACLs,
// js and wasip1 have one user): the mode and MAC checks remain.
func ownedByOther(fs.FileInfo) (uid int, other bool) { return 0, false }

// openNoFollow opens path for reading, refusing (with follow false) a
// symbolic link found by Lstat first: without O_NOFOLLOW the check and the
// open are not one step, so the MAC remains the real defence.
func openNoFollow(path string, follow bool) (*os.File, error) {
	if !follow {
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symbolic link", path)
		}
	}
	return os.Open(path)
}
