//go:build !js

package tune_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/gpu"
	"github.com/gpucc/gpucc/runtime/gpu/tune"
)

// TestTuneExact: candidates of the search space (all of them with
// GPUCC_TUNE_ALL set), on a tile-multiple
// and an odd shape, is bit-exact against cpuref on this device in exact
// mode; fast mode stays within its bound; the winners persist and the
// tiling pass takes them back through TileFor.
func TestTuneExact(t *testing.T) {
	d := device(t)
	shapes := []tune.Shape{{M: 64, K: 96, N: 64}, {M: 33, K: 70, N: 45}, {M: 1, K: 300, N: 68}}
	for _, s := range shapes {
		cands := tune.Candidates(s, d.Info().Limits)
		if os.Getenv("GPUCC_TUNE_ALL") == "" && len(cands) > 6 {
			// lavapipe compiles a large unrolled candidate in seconds: a
			// spread of the space, both ends included.
			cands = []ir.Tile{cands[0], cands[len(cands)/3], cands[2*len(cands)/3], cands[len(cands)-3], cands[len(cands)-1]}
		}
		for _, fast := range []bool{false, true} {
			all, best, err := tune.Matmul(context.Background(), d, s, tune.Options{Fast: fast, Reps: 1, Candidates: cands})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range all {
				if r.Err != "" || !r.OK || !fast && !r.Exact || r.Checked != s.M*s.N {
					t.Errorf("%v fast=%v tile %+v: %+v", s, fast, r.Tile, r)
				}
			}
			if best < 0 {
				t.Fatalf("%v: no winner of %d", s, len(all))
			}
		}
	}
	path := filepath.Join(t.TempDir(), "tune", "matmul.json")
	tab, err := tune.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s := tune.Shape{M: 64, K: 64, N: 64}
	cands := []ir.Tile{{BM: 32, BN: 32, TM: 4, TN: 4, BK: 8, Vector: 4}, passes.TileSmall}
	reps, err := tune.Run(context.Background(), d, tab, []tune.Shape{s}, true, tune.Options{Reps: 1, Candidates: cands})
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].Exact == nil || reps[0].Fast == nil {
		t.Fatalf("report %+v", reps[0])
	}
	if err := tab.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := tune.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tab, back); diff != "" {
		t.Errorf("table changed through Save and Load (-saved +loaded):\n%s", diff)
	}
	b := ir.NewBuilder()
	b.Output("y", b.Input(ir.Shape{64, 64}, make([]float32, 64*64)).MatMul(b.Input(ir.Shape{64, 64}, make([]float32, 64*64))))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	opts := tune.PassOptions(d)
	opts.TileFor = back.TileFor(d.Info(), false)
	p, _, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Program().Kernels[0].Tile, reps[0].Exact.Tile; got != want {
		t.Errorf("tiling pass chose %+v, the table holds %+v", got, want)
	}
}

// TestMatvecTiles: the one-row and one-column tiles of a matrix-vector
// product are exact.
func TestMatvecTiles(t *testing.T) {
	d := device(t)
	for _, s := range []tune.Shape{{M: 1, K: 300, N: 70}, {M: 70, K: 300, N: 1}} {
		var cands []ir.Tile
		for _, c := range tune.Candidates(s, d.Info().Limits) {
			if c.BM == 1 || c.BN == 1 {
				cands = append(cands, c)
			}
		}
		if len(cands) == 0 {
			t.Fatalf("%v: no matrix-vector tiles", s)
		}
		all, _, err := tune.Matmul(context.Background(), d, s, tune.Options{Reps: 1, Candidates: cands})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range all {
			if r.Err != "" || !r.Exact {
				t.Errorf("%v tile %+v: %+v", s, r.Tile, r)
			}
		}
	}
}

// TestBuiltinTableReachesTiling: the tiles built in for the H200 reach
// the tiling pass as they are, the staged vec4 tile of exact 4096³
// (25.1 TFLOP/s against the unstaged 23.1 on 2026-12-05) included: a
// table tile the pass cannot emit would be dropped for the rule's
// without a word.
func TestBuiltinTableReachesTiling(t *testing.T) {
	tb, err := tune.Load("")
	if err != nil {
		t.Fatal(err)
	}
	h200 := gpu.AdapterInfo{Name: "NVIDIA H200", Driver: "NVIDIA H200", Backend: "vulkan"}
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{4096, 4096}, make([]float32, 4096*4096))
	b.Output("y", x.MatMul(b.Input(ir.Shape{4096, 4096}, make([]float32, 4096*4096))))
	lim := ir.DefaultLimits()
	lim.MaxOps, lim.MaxElements, lim.MaxStorageBytes = 1<<40, 1<<26, 1<<30
	g, err := b.Build(lim)
	if err != nil {
		t.Fatal(err)
	}
	sp, _, err := passes.Compile(g, passes.Options{Limits: lim, MaxInvocations: 256, MaxWorkgroupStorage: 16384,
		TileFor: tb.TileFor(h200, false)})
	if err != nil {
		t.Fatal(err)
	}
	want := ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2}
	if got := sp.Program().Kernels[0].Tile; got != want {
		t.Errorf("exact 4096³ on the H200 took tile %+v, the table's is %+v", got, want)
	}
}
