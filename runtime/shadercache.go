package runtime

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
const codegenSchema = "gpucc-shaders-v1"

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
// structure (kernels, their bodies, shapes and tiling) without the values
// of constants and input data, which generated code does not contain.
func ProgramKey(target string, p *ir.Program) cache.Key {
	var b []byte
	for i := range p.Kernels {
		k := p.Kernels[i] // a copy: constants are zeroed below
		k.Body = append([]ir.Instr(nil), k.Body...)
		for j := range k.Body {
			k.Body[j].Scalar = 0
		}
		b = fmt.Appendf(b, "%#v\n", k)
	}
	return cache.NewKey([]byte(codegenSchema), []byte(build()), []byte(target), b)
}

// generateCached returns the shaders gen makes for every kernel of p,
// taking them from c when it has them. Only the uniform parameter blocks,
// which hold the constants, are rebuilt on a hit (by params). It records
// "codegen_memory" and, when c has a disk tier and memory missed,
// "codegen_disk" in hits.
func generateCached(c *cache.Cache, target string, p *ir.Program, hits map[string]bool,
	gen func(*ir.Kernel) (codegen.Shader, error), params func(*ir.Kernel) []byte) ([]codegen.Shader, error) {
	key := ProgramKey(target, p)
	blob, src := c.Get(key)
	hits["codegen_memory"] = src == cache.Memory
	if src != cache.Memory && c.Dir() != "" {
		hits["codegen_disk"] = src == cache.Disk
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
		hits["codegen_memory"], hits["codegen_disk"] = false, false
	}
	shaders = make([]codegen.Shader, len(p.Kernels))
	for i := range p.Kernels {
		s, err := gen(&p.Kernels[i])
		if err != nil {
			return nil, fmt.Errorf("codegen %s: kernel %s: %w", target, p.Kernels[i].Name, err)
		}
		shaders[i] = s
	}
	stored := make([]codegen.Shader, len(shaders))
	copy(stored, shaders)
	for i := range stored {
		stored[i].Params = nil
	}
	blob, err := json.Marshal(stored)
	if err != nil {
		return nil, fmt.Errorf("codegen %s: encode for cache: %w", target, err)
	}
	c.Put(key, blob) // a failed disk write leaves the memory tier working
	return shaders, nil
}
