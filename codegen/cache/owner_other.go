//go:build !unix

package cache

import "io/fs"

// modesMean is false: Windows reports every writable file as 0666.
const modesMean = false

// ownedByOther cannot tell owners apart here (Windows keeps them in ACLs,
// js and wasip1 have one user): the mode and MAC checks remain.
func ownedByOther(fs.FileInfo) (uid int, other bool) { return 0, false }
