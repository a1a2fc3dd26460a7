package gpucc

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gpucc/gpucc/ir"
)

// Specializer makes a static graph for concrete input shapes: a model kept
// with its symbolic dimensions (onnx.Model).
type Specializer interface {
	Specialize(ctx context.Context, shapes map[string][]int) (*ir.Graph, error)
}

// DefaultMaxShapes is the number of shapes a Dynamic keeps compiled when
// DynamicOptions.MaxShapes is zero.
const DefaultMaxShapes = 8

// DynamicOptions configure a Dynamic.
type DynamicOptions struct {
	// MaxShapes bounds the executables kept, one per set of input shapes
	// (0: DefaultMaxShapes). A new shape over the bound evicts the least
	// recently run one, whose executable is released; running that shape
	// again specializes and compiles it again.
	MaxShapes int
}

// Dynamic runs a model with dynamic dimensions: each run's inputs give the
// shapes, and the model is specialized to them (Specializer) and compiled
// once per set of shapes. A set seen before runs its cached executable: no
// import, no compile. It is safe for concurrent use.
type Dynamic struct {
	rt  *Runtime
	s   Specializer
	max int

	mu    sync.Mutex
	lru   *list.List // of *shapeEntry, most recently run first
	byKey map[string]*list.Element
	stats DynamicStats
}

type shapeEntry struct {
	key     string
	exe     *Executable
	users   int  // runs under way; guarded by Dynamic.mu
	evicted bool // released when the last user is done
}

// DynamicStats count what a Dynamic did.
type DynamicStats struct {
	Compiles  int // specializations compiled: one per new shape (and per evicted shape run again)
	Hits      int // runs served by a cached executable
	Evictions int // executables released to stay within MaxShapes
}

// NewDynamic returns a Dynamic that runs s on rt.
func (rt *Runtime) NewDynamic(s Specializer, opts DynamicOptions) *Dynamic {
	if opts.MaxShapes <= 0 {
		opts.MaxShapes = DefaultMaxShapes
	}
	return &Dynamic{rt: rt, s: s, max: opts.MaxShapes, lru: list.New(), byKey: map[string]*list.Element{}}
}

// Policy states the shape cache's policy, as gpucc's --explain prints it.
func (d *Dynamic) Policy() string {
	return fmt.Sprintf("executables cached by input shapes: at most %d shapes kept, the least recently run evicted; a shape seen before costs no compile, a new one costs one import and one compile", d.max)
}

// Stats returns the counts so far.
func (d *Dynamic) Stats() DynamicStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Shapes returns the keys of the shapes kept, most recently run first.
func (d *Dynamic) Shapes() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for e := d.lru.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*shapeEntry).key)
	}
	return out
}

// Run runs the model specialized to in's shapes (every run-time input
// given: a Tensor's Shape or a DeviceTensor's).
func (d *Dynamic) Run(ctx context.Context, in Inputs) (*Result, error) {
	return d.RunWith(ctx, in, RunOptions{})
}

// RunWith is Run with options, as Executable.RunWith.
func (d *Dynamic) RunWith(ctx context.Context, in Inputs, opts RunOptions) (*Result, error) {
	shapes := map[string][]int{}
	for name, v := range in {
		switch v := v.(type) {
		case Tensor:
			if err := checkCount(name, v); err != nil {
				return nil, err
			}
			shapes[name] = slices.Clone(v.Shape)
		case *DeviceTensor:
			if v == nil {
				return nil, ir.Errorf(ir.CodeInvalidInput, -1, name, "input %q is nil", name)
			}
			shapes[name] = v.Shape()
		default:
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, name, "input %q: unsupported value %T", name, v)
		}
	}
	e, err := d.entry(ctx, shapes)
	if err != nil {
		return nil, err
	}
	defer d.done(e)
	return e.exe.RunWith(ctx, in, opts)
}

// checkCount refuses a host tensor whose values do not fill its shape,
// before anything is specialized or compiled at that shape: a Tensor
// claiming [2^20, 64] with 10 values had the model imported there (its
// input placeholders allocated) and compiled, then refused at the run,
// evicting a shape in use.
func checkCount(name string, t Tensor) error {
	n := int64(1)
	for _, d := range t.Shape {
		if d < 0 {
			return ir.Errorf(ir.CodeInvalidInput, -1, name, "input %q has shape %v, with a negative dimension", name, t.Shape)
		}
		n = ir.SatMul(n, int64(d))
	}
	got := len(t.Ints)
	if t.DType.IsFloat() {
		got = len(t.Data)
	}
	if int64(got) != n {
		return ir.Errorf(ir.CodeInvalidInput, -1, name, "input %q holds %d values, shape %v needs %d", name, got, t.Shape, n)
	}
	return nil
}

// done ends a run of e, releasing its executable if it was evicted
// meanwhile.
func (d *Dynamic) done(e *shapeEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e.users--
	if e.evicted && e.users == 0 {
		e.exe.Release()
	}
}

// entry returns the entry of shapes, compiling it on a miss, with a user
// counted. The lock is held across the compile, so one shape compiles
// once.
func (d *Dynamic) entry(ctx context.Context, shapes map[string][]int) (*shapeEntry, error) {
	key := shapeKey(shapes)
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byKey[key]; ok {
		d.lru.MoveToFront(e)
		d.stats.Hits++
		se := e.Value.(*shapeEntry)
		se.users++
		return se, nil
	}
	g, err := d.s.Specialize(ctx, shapes)
	if err != nil {
		return nil, err
	}
	exe, err := d.rt.Compile(ctx, g)
	if err != nil {
		return nil, err
	}
	d.stats.Compiles++
	se := &shapeEntry{key: key, exe: exe, users: 1}
	d.byKey[key] = d.lru.PushFront(se)
	for d.lru.Len() > d.max {
		old := d.lru.Back()
		d.lru.Remove(old)
		oe := old.Value.(*shapeEntry)
		delete(d.byKey, oe.key)
		oe.evicted = true
		if oe.users == 0 {
			oe.exe.Release()
		}
		d.stats.Evictions++
	}
	return se, nil
}

// Release releases every cached executable.
func (d *Dynamic) Release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for e := d.lru.Front(); e != nil; e = e.Next() {
		se := e.Value.(*shapeEntry)
		se.evicted = true
		if se.users == 0 {
			se.exe.Release()
		}
	}
	d.lru.Init()
	clear(d.byKey)
}

// shapeKey is shapes in a canonical form: "name=[d0 d1];…" by name.
func shapeKey(shapes map[string][]int) string {
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%q=%v;", n, shapes[n])
	}
	return b.String()
}
