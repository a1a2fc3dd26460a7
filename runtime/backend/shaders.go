package backend

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
)

// codegenSchema versions the cached form of generated shaders. Bump it when
// the encoding changes; generator changes are covered by buildID.
const codegenSchema = "gpucc-shaders-v3"

var (
	buildOnce sync.Once
	buildID   string
)

// build identifies the running binary (path, size, modification time), so
// that a rebuilt gpucc, whose generators may have changed, never reads code
// an older build cached on disk.
func build() string {
	buildOnce.Do(func() {
		buildID = "unknown"
		if exe, err := os.Executable(); err == nil {
			if fi, err := os.Stat(exe); err == nil {
				buildID = fmt.Sprintf("%s|%d|%d", exe, fi.Size(), fi.ModTime().UnixNano())
			}
		}
	})
	return buildID
}

// ProgramKey is the cache key of target's code for p: the program's
// structure without the values of constants and input data (ir.Program.Key,
// derived next to the struct it encodes, computed once by ir.Seal). Only a target whose code reads
// constants from a parameter block (WGSL, see codegen.Lang.Const) may use
// it; C inlines them.
func ProgramKey(target string, p *ir.Sealed) cache.Key {
	return cache.NewKey([]byte(codegenSchema), []byte(build()), []byte(target), p.Key())
}

// Shaders returns the shaders gen makes for every kernel of p, taking them
// from c when it has them, with each Params block built by params (the
// blocks hold the constants, which the key leaves out). It records
// CacheCodegenMemory and, when c has a disk tier and memory missed,
// CacheCodegenDisk in st.
func Shaders(c *cache.Cache, target string, sp *ir.Sealed, st *Stats,
	gen func(*ir.Sealed) ([]codegen.Shader, error), params func(*ir.Kernel) []byte) ([]codegen.Shader, error) {
	p := sp.Program()
	key := ProgramKey(target, sp)
	blob, src := c.Get(cache.WGSL, key)
	st.Hit(CacheCodegenMemory, src == cache.Memory)
	if src != cache.Memory && c.Dir() != "" {
		st.Hit(CacheCodegenDisk, src == cache.Disk)
	}
	var shaders []codegen.Shader
	if src != cache.Miss {
		if err := json.Unmarshal(blob, &shaders); err == nil && len(shaders) == len(p.Kernels) {
			for i := range shaders {
				shaders[i].Params = params(&p.Kernels[i])
			}
			return shaders, nil
		}
		// An entry that checksums but does not decode is from a build we
		// do not understand: regenerate and replace it.
		st.Hit(CacheCodegenMemory, false)
		if c.Dir() != "" {
			st.Hit(CacheCodegenDisk, false)
		}
	}
	shaders, err := gen(sp)
	if err != nil {
		return nil, fmt.Errorf("codegen %s: %w", target, err)
	}
	stored := make([]codegen.Shader, len(shaders))
	copy(stored, shaders)
	for i := range stored {
		stored[i].Params = nil
	}
	blob, err = json.Marshal(stored)
	if err != nil {
		return nil, fmt.Errorf("codegen %s: encode for cache: %w", target, err)
	}
	c.Put(cache.WGSL, key, blob) // a failed disk write leaves the memory tier working
	return shaders, nil
}
