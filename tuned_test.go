//go:build !js

package gpucc_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/eval64"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/gpu"
	"github.com/gpucc/gpucc/runtime/gpu/tune"
)

// tunedGraph is a matmul of an odd shape (no tile divides it) and its
// shape class, with a bias and relu after it.
func tunedGraph(t *testing.T) (*ir.Graph, string) {
	const m, k, n = 33, 70, 45
	g := gpucctest.Build(t, func(b *ir.Builder) {
		x := b.Input(ir.Shape{m, k}, irtest.Values(7, m*k, 1))
		w := b.Input(ir.Shape{k, n}, irtest.Values(8, k*n, 1))
		b.Output("y", x.MatMul(w).Relu())
	})
	return g, tune.Class(tune.Shape{M: m, K: k, N: n})
}

// matmulTile returns the tile of p's matmul kernel.
func matmulTile(t *testing.T, p *ir.Program) ir.Tile {
	t.Helper()
	for _, k := range p.Kernels {
		if k.Kind == ir.KernelMatmul {
			return k.Tile
		}
	}
	t.Fatal("no matmul kernel")
	return ir.Tile{}
}

// TestTunedTable: a webgpu Runtime takes its matmul tiles from the tuned
// table in its cache directory, for its adapter, shape class and mode; the
// run in exact mode gives cpuref's bits, and in fast mode says it is
// inexact and stays within its stated bound of the float64 product. A
// shape class without an entry keeps the tiling pass's rule.
func TestTunedTable(t *testing.T) {
	g, class := tunedGraph(t)
	probe := gpucctest.Open(t, "webgpu", func(o *gpucc.Options) { o.Cache = gpucctest.OpenCache(t, t.TempDir()) })
	a := probe.Adapter()
	info := gpu.AdapterInfo{Name: a.Name, Driver: a.Driver, Backend: a.Backend}
	exactTile := ir.Tile{BM: 16, BN: 64, TM: 1, TN: 4, BK: 16, Vector: 1}
	fastTile := ir.Tile{BM: 64, BN: 16, TM: 4, TN: 1, BK: 8, Vector: 1}
	for _, tile := range []ir.Tile{exactTile, fastTile} {
		if tile == passes.TileSmall || tile == passes.TileMedium {
			t.Fatalf("tile %+v is one the rule chooses: the test could not tell", tile)
		}
	}
	dir := t.TempDir()
	tab := &tune.Table{Version: 1, Entries: map[string]tune.Entry{
		tune.Key(info, false, class): {Tile: exactTile},
		tune.Key(info, true, class):  {Tile: fastTile},
		// Not well formed (TM does not divide BM): ignored.
		tune.Key(info, false, "sss-v4"): {Tile: ir.Tile{BM: 30, BN: 32, TM: 4, TN: 4, BK: 8, Vector: 1}},
	}}
	if err := tab.SaveCache(gpucctest.OpenCache(t, dir)); err != nil {
		t.Fatal(err)
	}
	want, _ := gpucctest.Expect(g)
	for _, fast := range []bool{false, true} {
		rt := gpucctest.Open(t, "webgpu", func(o *gpucc.Options) { o.Cache, o.Fast = gpucctest.OpenCache(t, dir), fast })
		exe, err := rt.Compile(context.Background(), g)
		if err != nil {
			t.Fatal(err)
		}
		tile := exactTile
		if fast {
			tile = fastTile
		}
		if got := matmulTile(t, exe.Plan().Program); got != tile {
			t.Errorf("fast=%v: tile %+v, the table's is %+v", fast, got, tile)
		}
		res, err := exe.Run(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]float32{"y": res.Outputs["y"].Data}
		if !fast {
			if !res.Exact || res.ErrorBound != 0 {
				t.Errorf("exact run: Exact %v, ErrorBound %v", res.Exact, res.ErrorBound)
			}
			gpucctest.Compare(t, rt, g, want, got)
			continue
		}
		if res.Exact || res.ErrorBound != wgsl.FastErrorBound(70) {
			t.Errorf("fast run: Exact %v, ErrorBound %v; want false, %v", res.Exact, res.ErrorBound, wgsl.FastErrorBound(70))
		}
		checkBound(t, g, got["y"], res.ErrorBound)
	}

	// A shape class the table lacks, and the ill-formed entry: the rule.
	small := gpucctest.Build(t, func(b *ir.Builder) {
		b.Output("y", b.Input(ir.Shape{8, 8}, irtest.Values(9, 64, 1)).MatMul(b.Input(ir.Shape{8, 8}, irtest.Values(10, 64, 1))))
	})
	rt := gpucctest.Open(t, "webgpu", func(o *gpucc.Options) { o.Cache = gpucctest.OpenCache(t, dir) })
	exe, err := rt.Compile(context.Background(), small)
	if err != nil {
		t.Fatal(err)
	}
	if got := matmulTile(t, exe.Plan().Program); got != passes.TileSmall {
		t.Errorf("untuned class: tile %+v, want the rule's %+v", got, passes.TileSmall)
	}

	// The same table written by someone else (plain JSON, no MAC) chooses
	// nothing: the rule's tile.
	planted := t.TempDir()
	if err := tab.Save(tune.PathIn(planted)); err != nil {
		t.Fatal(err)
	}
	rt = gpucctest.Open(t, "webgpu", func(o *gpucc.Options) { o.Cache = gpucctest.OpenCache(t, planted) })
	if exe, err = rt.Compile(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	if got := matmulTile(t, exe.Plan().Program); got == exactTile {
		t.Errorf("a planted table chose the tile %+v", got)
	}
}

// checkBound checks relu(x·w) against its float64 meaning (eval64):
// within bound · Σ|x·w| per element (relu only clips), the sum being the
// same graph over |x| and |w|.
func checkBound(t *testing.T, g *ir.Graph, y []float32, bound float64) {
	t.Helper()
	abs := func(v []float32) []float64 {
		out := eval64.Widen(v)
		for i := range out {
			out[i] = math.Abs(out[i])
		}
		return out
	}
	id := g.Outputs[0].ID
	want := eval64.Eval(g, nil)[id]
	mag := eval64.Eval(g, map[ir.NodeID][]float64{0: abs(g.Nodes[0].Data), 1: abs(g.Nodes[1].Data)})[id]
	for i, v := range want {
		if got := float64(y[i]); math.Abs(got-v) > bound*mag[i] {
			t.Fatalf("y[%d] = %v, float64 %v: off by more than %v·%v", i, got, v, bound, mag[i])
		}
	}
}

// TestFastOtherBackends: only webgpu has a fast path; the other backends
// compile exact kernels under Options.Fast and say so.
func TestFastOtherBackends(t *testing.T) {
	g, _ := tunedGraph(t)
	want, _ := gpucctest.Expect(g)
	for _, name := range []string{"cpu", "wasm", "native"} {
		t.Run(name, func(t *testing.T) {
			rt := gpucctest.Open(t, name, func(o *gpucc.Options) { o.Fast = true })
			res, err := rt.Run(context.Background(), g)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Exact || res.ErrorBound != 0 {
				t.Errorf("Exact %v, ErrorBound %v; want true, 0", res.Exact, res.ErrorBound)
			}
			gpucctest.Compare(t, rt, g, want, map[string][]float32{"y": res.Outputs["y"].Data})
		})
	}
}

// TestTunedTableUnreadable: a table file that does not parse costs the
// tuned tiles, never a run.
func TestTunedTableUnreadable(t *testing.T) {
	g, _ := tunedGraph(t)
	dir := t.TempDir()
	path := tune.PathIn(dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"version":1,"entries":`), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := gpucctest.Open(t, "webgpu", func(o *gpucc.Options) { o.Cache = gpucctest.OpenCache(t, dir) })
	gpucctest.CheckRun(t, rt, g)
}
