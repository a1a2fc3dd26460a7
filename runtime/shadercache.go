package runtime

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"

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
// derived next to the struct it encodes). Only a target whose code reads
// constants from a parameter block (WGSL, see codegen.Lang.Const) may use
// it; C inlines them.
func ProgramKey(target string, p *ir.Program) cache.Key {
	return cache.NewKey([]byte(codegenSchema), []byte(build()), []byte(target), p.Key())
}

// generateCached returns the shaders gen makes for every kernel of p,
// taking them from c when it has them. Only the uniform parameter blocks,
// which hold the constants, are rebuilt on a hit (by params). It records
// "codegen_memory" and, when c has a disk tier and memory missed,
// "codegen_disk" in hits.
func generateCached(c *cache.Cache, target string, p *ir.Program, hits map[string]bool,
	gen func(*ir.Program) ([]codegen.Shader, error), params func(*ir.Kernel) []byte) ([]codegen.Shader, error) {
	key := ProgramKey(target, p)
	if v, ok := decoded.Load(memoKey{c, key}); ok { // the hot path of a warm run
		hits["codegen_memory"] = true
		shaders := slices.Clone(v.([]codegen.Shader))
		for i := range shaders {
			shaders[i].Params = params(&p.Kernels[i])
		}
		return shaders, nil
	}
	blob, src := c.Get(cache.WGSL, key)
	hits["codegen_memory"] = src == cache.Memory
	if src != cache.Memory && c.Dir() != "" {
		hits["codegen_disk"] = src == cache.Disk
	}
	var shaders []codegen.Shader
	if src != cache.Miss {
		if err := json.Unmarshal(blob, &shaders); err == nil && len(shaders) == len(p.Kernels) {
			remember(c, key, shaders)
			for i := range shaders {
				shaders[i].Params = params(&p.Kernels[i])
			}
			return shaders, nil
		}
		// An entry that checksums but does not decode is from a build we
		// do not understand: regenerate and replace it.
		hits["codegen_memory"], hits["codegen_disk"] = false, false
	}
	shaders, err := gen(p)
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
	remember(c, key, stored)
	return shaders, nil
}

// decoded holds decoded shaders (without Params) by cache and program key
// in front of the byte cache, so that a warm run neither decodes JSON nor
// copies sources; it is dropped whole when it reaches maxDecoded entries.
var (
	decoded      sync.Map
	decodedCount atomic.Int64
)

const maxDecoded = 256

type memoKey struct {
	c   *cache.Cache
	key cache.Key
}

func remember(c *cache.Cache, key cache.Key, shaders []codegen.Shader) {
	if decodedCount.Add(1) > maxDecoded {
		decoded.Clear()
		decodedCount.Store(1)
	}
	decoded.Store(memoKey{c, key}, shaders)
}
