package backend

import (
	"encoding/binary"
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
const codegenSchema = "gpucc-shaders-v2"

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
// structure (every Kernel field that generated code depends on: bodies,
// shapes, tiling, sum blocks) without the values of constants and input
// data. Only a target whose code reads constants from a parameter block
// (WGSL, see codegen.Lang.Const) may use it; C inlines them.
func ProgramKey(target string, p *ir.Program) cache.Key {
	b := make([]byte, 0, 256)
	u := func(vs ...int) {
		for _, v := range vs {
			b = binary.AppendVarint(b, int64(v))
		}
	}
	shape := func(s ir.Shape) {
		u(len(s))
		u(s...)
	}
	for i := range p.Kernels {
		k := &p.Kernels[i]
		b = append(b, k.Name...)
		u(-1, int(k.Kind), k.M, k.K, k.N, k.Tile.BM, k.Tile.BN, k.Tile.TM, k.Tile.TN, k.Tile.BK, k.Tile.Vector, k.Blocks)
		shape(k.Shape)
		u(len(k.Nodes))
		for _, n := range k.Nodes {
			u(int(n))
		}
		u(len(k.Inputs))
		for _, in := range k.Inputs {
			u(in.Buffer, b2i(in.Transposed), in.Broadcast)
			shape(in.Shape)
		}
		u(len(k.Outputs))
		u(k.Outputs...)
		u(len(k.Body))
		for _, in := range k.Body { // constants (Scalar) are left out on purpose
			u(int(in.Kind), int(in.Op), int(in.Args[0]), int(in.Args[1]), in.Operand)
		}
		u(len(k.Stores))
		for _, s := range k.Stores {
			u(int(s))
		}
	}
	return cache.NewKey([]byte(codegenSchema), []byte(build()), []byte(target), b)
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// Shaders returns the shaders gen makes for every kernel of p, taking them
// from c when it has them, with each Params block built by params (the
// blocks hold the constants, which the key leaves out). It records
// CacheCodegenMemory and, when c has a disk tier and memory missed,
// CacheCodegenDisk in st.
func Shaders(c *cache.Cache, target string, p *ir.Program, st *Stats,
	gen func(*ir.Kernel) (codegen.Shader, error), params func(*ir.Kernel) []byte) ([]codegen.Shader, error) {
	key := ProgramKey(target, p)
	blob, src := c.Get(key)
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
