//go:build (darwin || freebsd || linux || netbsd) && (amd64 || arm64) && !android && !js

package all

import _ "github.com/gpucc/gpucc/runtime/native" // purego: no cgo needed
