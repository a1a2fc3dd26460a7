package gpucc

import (
	"context"
	"crypto/sha256"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gpucc/gpucc/ir"
)

// ExecutableCache keeps a Runtime's executables by graph structure, so a
// graph shaped like an earlier one skips the passes and the compile and
// only sends its data. It is what a server in front of many callers needs:
//
//   - the key is the graph's structure, its canonical encoding (ir.Encode,
//     so every field Decode reads) without the input data;
//   - a cached executable holds no input data: its plan's input buffers
//     are emptied before it is loaded, so nothing of the graph that
//     compiled it is kept or can reach a later run;
//   - a run binds every input of the plan (Plan.Inputs, by node) to the
//     data of the graph it runs, never to a name derived again, so two
//     graphs of one structure can only see their own values.
//
// It keeps at most n executables (NewExecutableCache), releasing the least recently used. It
// is safe for concurrent use; runs are serialised, as on the Runtime.
type ExecutableCache struct {
	rt  *Runtime
	max int

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*cacheEntry
	order   [][sha256.Size]byte // least recently used first
}

type cacheEntry struct {
	exe *Executable
	ran bool // a run has reported the compile's timings
}

// NewExecutableCache returns a cache of at most n executables (at least
// one) compiled on rt. Close it before rt, or let rt's Close release them.
func NewExecutableCache(rt *Runtime, n int) *ExecutableCache {
	return &ExecutableCache{rt: rt, max: max(n, 1), entries: map[[sha256.Size]byte]*cacheEntry{}}
}

// StructureKey identifies what a compiled executable depends on: g's
// canonical encoding with the input data left out.
func StructureKey(g *ir.Graph) [sha256.Size]byte {
	structureKeys.Add(1)
	c := g.Clone()
	for i := range c.Nodes {
		c.Nodes[i].Data = nil
	}
	return sha256.Sum256(ir.Encode(c))
}

// structureKeys counts StructureKey's calls: it clones and encodes the
// whole graph, so a request computes it once (CacheRequest).
var structureKeys atomic.Int64

// CacheRequest is one graph's way through an ExecutableCache, with its
// structure key computed once: Cached, Prepare and Run of one request do
// not hash the graph again, as the cache's own methods of the same names
// each do.
type CacheRequest struct {
	c   *ExecutableCache
	g   *ir.Graph
	key [sha256.Size]byte
}

// Request returns g's request, computing its StructureKey.
func (c *ExecutableCache) Request(g *ir.Graph) CacheRequest {
	return CacheRequest{c: c, g: g, key: StructureKey(g)}
}

// Cached reports whether an executable of the request's structure is
// cached (Contains).
func (r CacheRequest) Cached() bool {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.c.entries[r.key] != nil
}

// Contains reports whether an executable of g's structure is cached.
func (c *ExecutableCache) Contains(g *ir.Graph) bool { return c.Request(g).Cached() }

// Len returns the number of executables cached.
func (c *ExecutableCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Prepare compiles g's structure into the cache unless it is there. The
// compile runs with c unlocked, so Contains and Len answer meanwhile.
func (c *ExecutableCache) Prepare(ctx context.Context, g *ir.Graph) error {
	return c.Request(g).Prepare(ctx)
}

// Prepare is ExecutableCache.Prepare of the request's graph.
func (r CacheRequest) Prepare(ctx context.Context) error {
	c, g, key := r.c, r.g, r.key
	c.mu.Lock()
	_, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return nil
	}
	exe, err := c.compile(ctx, g)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries[key] != nil { // compiled meanwhile by another caller
		exe.Release()
		return nil
	}
	if len(c.order) >= c.max {
		c.entries[c.order[0]].exe.Release()
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	c.entries[key] = &cacheEntry{exe: exe}
	c.order = append(c.order, key)
	return nil
}

// compile seals g and loads its plan with every input buffer emptied.
func (c *ExecutableCache) compile(ctx context.Context, g *ir.Graph) (*Executable, error) {
	popts := c.rt.opts.Passes
	if popts.TileFor == nil {
		popts.TileFor = c.rt.tiles
	}
	plan, err := Seal(g, c.rt.opts.Limits, c.rt.info.Profile, popts)
	if err != nil {
		return nil, err
	}
	bare := *plan
	bare.sealed = plan.sealed.WithoutData()
	bare.Program = bare.sealed.Program()
	return c.rt.Load(ctx, &bare)
}

// Run runs g on the cached executable of its structure, compiled now when
// there is none, with g's input data bound to every input of the plan.
// The run that follows a compile reports the compile's timings and caches
// too, as Runtime.Run does.
func (c *ExecutableCache) Run(ctx context.Context, g *ir.Graph) (*Result, error) {
	return c.Request(g).Run(ctx)
}

// Run is ExecutableCache.Run of the request's graph.
func (r CacheRequest) Run(ctx context.Context) (*Result, error) {
	c, g, key := r.c, r.g, r.key
	if err := r.Prepare(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock() // an eviction must not release the executable mid-run
	e := c.entries[key]
	if e == nil { // evicted between Prepare and here: compile again, under the lock
		c.mu.Unlock()
		err := r.Prepare(ctx)
		c.mu.Lock()
		if e = c.entries[key]; err != nil || e == nil {
			if err == nil {
				err = ir.Errorf(ir.CodeInternal, -1, "", "the executable cache evicted a graph as it was compiled")
			}
			return nil, err
		}
	}
	c.touch(key)
	in, err := BindInputs(e.exe.Plan(), g)
	if err != nil {
		return nil, err
	}
	res, err := e.exe.Run(ctx, in)
	if err != nil {
		return nil, err
	}
	if !e.ran {
		e.ran = true
		res.mergeCompile(e.exe)
	}
	return res, nil
}

// touch moves key to the most recently used end; c.mu held.
func (c *ExecutableCache) touch(key [sha256.Size]byte) {
	if i := slices.Index(c.order, key); i >= 0 {
		c.order = append(slices.Delete(c.order, i, i+1), key)
	}
}

// Close releases every cached executable; the cache is empty after.
func (c *ExecutableCache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		e.exe.Release()
	}
	clear(c.entries)
	c.order = nil
}

// BindInputs gives every input of plan the data of the same input node in
// g, a graph of the plan's structure: the inputs a run of plan on g's
// data needs, each given, none left to data embedded in the plan.
func BindInputs(plan *Plan, g *ir.Graph) (Inputs, error) {
	in := make(Inputs, len(plan.Inputs))
	for _, pi := range plan.Inputs {
		if int(pi.Node) >= len(g.Nodes) || g.Nodes[pi.Node].Op != ir.OpInput || !g.Nodes[pi.Node].Shape.Equal(pi.Shape) {
			return nil, ir.Errorf(ir.CodeInvalidInput, int(pi.Node), pi.Name, "input %q: the graph is not of the plan's structure", pi.Name)
		}
		n := g.Nodes[pi.Node]
		in[pi.Name] = NewTensor(n.Shape, n.Data)
	}
	return in, nil
}
