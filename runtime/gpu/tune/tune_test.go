//go:build !js

package tune_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// TestBuiltinTableReachesTiling: every tile built into gpucc's tables (the
// H200's, the H100's) reaches the tiling pass as it is, for the shape it
// was timed at, and that shape is of the entry's class: a table tile the
// pass cannot emit (one past WebGPU's 16 KiB, say) would be dropped for
// the rule's without a word.
func TestBuiltinTableReachesTiling(t *testing.T) {
	tb, err := tune.Load("")
	if err != nil {
		t.Fatal(err)
	}
	lim := ir.DefaultLimits()
	lim.MaxOps, lim.MaxElements, lim.MaxStorageBytes = 1<<40, 1<<26, 1<<30
	if len(tb.Entries) < 19 { // the H200's 14 and the H100's 5 (2026-12-06)
		t.Errorf("the built-in tables hold %d entries, want at least 19", len(tb.Entries))
	}
	for key, e := range tb.Entries {
		f := strings.Split(key, "|")
		if len(f) != 5 {
			t.Errorf("%s: not name|driver|backend|mode|class", key)
			continue
		}
		s, err := tune.ParseShape(e.Shape)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			continue
		}
		if c := tune.Class(s); c != f[4] {
			t.Errorf("%s: its shape %s is of class %s", key, e.Shape, c)
		}
		b := ir.NewBuilder()
		x, w := b.Input(ir.Shape{s.M, s.K}, make([]float32, s.M*s.K)), b.Input(ir.Shape{s.K, s.N}, make([]float32, s.K*s.N))
		if s.TA {
			x = b.Input(ir.Shape{s.K, s.M}, make([]float32, s.M*s.K)).T()
		}
		if s.TB {
			w = b.Input(ir.Shape{s.N, s.K}, make([]float32, s.K*s.N)).T()
		}
		b.Output("y", x.MatMul(w))
		g, err := b.Build(lim)
		if err != nil {
			t.Fatal(err)
		}
		info := gpu.AdapterInfo{Name: f[0], Driver: f[1], Backend: f[2]}
		sp, _, err := passes.Compile(g, passes.Options{Limits: lim, MaxInvocations: 256, MaxWorkgroupStorage: 16384,
			TileFor: tb.TileFor(info, f[3] == "fast")})
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if got := sp.Program().Kernels[0].Tile; got != e.Tile {
			t.Errorf("%s: %s took tile %s, the table's is %s", key, e.Shape, passes.TileString(got), passes.TileString(e.Tile))
		}
	}
}

// TestMeasureTransposed: a shape whose operands are read through a
// transpose (the MLP step's gradients) is measured on the same logical
// operands, so its check against cpuref holds under the lean, unroll and
// warp options as under the plain staged tile, both layouts, a side the tile
// divides and sides it does not.
func TestMeasureTransposed(t *testing.T) {
	d := device(t)
	for _, s := range []tune.Shape{{M: 36, K: 70, N: 44, TA: true}, {M: 64, K: 68, N: 45, TB: true}, {M: 64, K: 32, N: 64, TA: true, TB: true}} {
		for _, name := range []string{"32x64/4x4k16v4s2", "32x64/4x4k16v4s2lw", "32x64/4x4k16v4s2luw"} {
			tile, err := passes.ParseTile(name)
			if err != nil {
				t.Fatal(err)
			}
			r, err := tune.Measure(d, s, &tile, false, 1)
			if err != nil {
				t.Fatal(err)
			}
			if r.Err != "" || !r.Exact || r.Checked != s.M*s.N || r.Tile != tile || r.Shape != s.String() {
				t.Errorf("%v tile %s: %+v", s, name, r)
			}
		}
	}
}

// TestTransposedClass: a transposed operand's shape class is its own, so
// a table entry tuned on plain operands never reaches a gradient's
// matmul, and one tuned on its layout does.
func TestTransposedClass(t *testing.T) {
	for _, c := range []struct {
		s    tune.Shape
		want string
	}{
		{tune.Shape{M: 1024, K: 4096, N: 1024}, "mlm-v4"},
		{tune.Shape{M: 1024, K: 4096, N: 1024, TA: true}, "mlm-v4-ta"},
		{tune.Shape{M: 4096, K: 1024, N: 1024, TB: true}, "lmm-v4-tb"},
		{tune.Shape{M: 33, K: 68, N: 44, TA: true}, "sms-ta"}, // vec4 along M needs M%4
		{tune.Shape{M: 32, K: 66, N: 44, TB: true}, "sms-tb"}, // vec4 along K needs K%4
	} {
		if got := tune.Class(c.s); got != c.want {
			t.Errorf("Class(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
	info := gpu.AdapterInfo{Name: "X", Driver: "Y", Backend: "vulkan"}
	plain := ir.Tile{BM: 64, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 4}
	lean := ir.Tile{BM: 32, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 4, Stages: 2, Opts: ir.TileLean}
	tab := &tune.Table{Entries: map[string]tune.Entry{
		tune.Key(info, false, "mlm-v4"):    {Tile: plain},
		tune.Key(info, false, "mlm-v4-ta"): {Tile: lean},
	}}
	for _, c := range []struct {
		ta, tb bool
		want   *ir.Tile
	}{{false, false, &plain}, {true, false, &lean}, {false, true, nil}} {
		k := &ir.Kernel{Kind: ir.KernelMatmul, M: 1024, K: 4096, N: 1024, Inputs: []ir.Operand{
			ir.PlainOperand(0, ir.Shape{1024, 4096}), ir.PlainOperand(1, ir.Shape{4096, 1024})}}
		if c.ta {
			k.Inputs[0] = ir.Operand{Buffer: 0, Shape: ir.Shape{1024, 4096}, Strides: []int{1, 1024}}
		}
		if c.tb {
			k.Inputs[1] = ir.Operand{Buffer: 1, Shape: ir.Shape{4096, 1024}, Strides: []int{1, 4096}}
		}
		got := tab.TileFor(info, false).TileFor(k)
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("ta %v tb %v: TileFor = %+v, want %+v", c.ta, c.tb, got, c.want)
		}
	}
}

// TestParseShape: shapes read back as String writes them; anything else,
// a side below 1 included, is an error.
func TestParseShape(t *testing.T) {
	for in, want := range map[string]tune.Shape{
		"4096":             {M: 4096, K: 4096, N: 4096},
		"4096x1024x1024":   {M: 4096, K: 1024, N: 1024},
		"1024x4096x1024ta": {M: 1024, K: 4096, N: 1024, TA: true},
		"4096x1024x16tb":   {M: 4096, K: 1024, N: 16, TB: true},
		"64x32x64tatb":     {M: 64, K: 32, N: 64, TA: true, TB: true},
	} {
		got, err := tune.ParseShape(in)
		if err != nil || got != want || got.String() != in && in != "4096" {
			t.Errorf("ParseShape(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-4", "4x4", "4x4x4x", "4x4x4tt", "4x0x4", "4x4x4tbta", "ta", "4ta", "4x4x4 ", "04x4x4"} {
		if got, err := tune.ParseShape(bad); err == nil {
			t.Errorf("ParseShape(%q) = %+v, want an error", bad, got)
		}
	}
}

// TestPlanStorage: tiles are planned for WebGPU's 16 KiB on a device that
// grants more, and for the device's grant under GPUCC_PLAN_STORAGE=device;
// a device that grants less is never planned past it.
func TestPlanStorage(t *testing.T) {
	for _, tc := range []struct {
		env          string
		grant, plans int
	}{
		{"", 49152, 16384},
		{"", 8192, 8192},
		{"device", 49152, 49152},
		{"device", 8192, 8192},
		{"other", 49152, 16384},
	} {
		t.Setenv("GPUCC_PLAN_STORAGE", tc.env)
		if got := tune.PlanStorage(gpu.Limits{MaxComputeWorkgroupStorageSize: uint32(tc.grant)}); got != tc.plans {
			t.Errorf("GPUCC_PLAN_STORAGE=%q, a grant of %d: plans for %d, want %d", tc.env, tc.grant, got, tc.plans)
		}
	}
}

// TestCandidatesReachTiling: every tile of the search space for a large
// vec4 shape, on NVIDIA's limits (48 KiB granted, 16 KiB planned), is one
// the tiling pass emits as it is (a candidate it changed would be measured
// under another name), the double-buffered lean tiles that won on the H100
// among them, ahead of their single-buffered twins.
func TestCandidatesReachTiling(t *testing.T) {
	l := gpu.Limits{MaxComputeInvocationsPerWorkgroup: 1024, MaxComputeWorkgroupSizeX: 1024, MaxComputeWorkgroupSizeY: 1024,
		MaxComputeWorkgroupStorageSize: 49152}
	at := candidatesReachTiling(t, tune.Shape{M: 4096, K: 1024, N: 1024}, l)
	for _, won := range []string{"64x128/8x8k8v4s2luw", "128x128/8x16k8v4s2l", "64x64/4x4k16v4s2l"} {
		i, ok := at[won]
		if !ok {
			t.Errorf("%s, an H100 winner, is not a candidate", won)
			continue
		}
		plain := won[:strings.Index(won, "s2")]
		if j, ok := at[plain]; !ok || j < i {
			t.Errorf("%s at %d: its single-buffered twin %s (at %d, %v) should follow it", won, i, plain, j, ok)
		}
	}
	t.Logf("%d candidates", len(at))
	// The thin products of the MLP step: tiles of one output a thread
	// and deep k-steps are candidates, and reach the tiling pass as
	// they are.
	for _, c := range []struct {
		s    tune.Shape
		want []string
	}{
		{tune.Shape{M: 1024, K: 4096, N: 16, TA: true}, []string{"8x16/1x1k128", "4x16/1x1k64", "16x16/1x1k32"}},
		{tune.Shape{M: 4096, K: 1024, N: 16}, []string{"8x16/1x1k64", "32x16/1x1k32"}},
		{tune.Shape{M: 16, K: 1024, N: 4096}, []string{"16x4/1x1k64", "16x32/1x1k32"}},
	} {
		at := candidatesReachTiling(t, c.s, l)
		for _, w := range c.want {
			if _, ok := at[w]; !ok {
				t.Errorf("%v: %s is not a candidate", c.s, w)
			}
		}
	}
}

// candidatesReachTiling checks that each of s's candidates on a device of
// limits l reaches the tiling pass as it is, and returns each one's place
// in the list by its name.
func candidatesReachTiling(t *testing.T, s tune.Shape, l gpu.Limits) map[string]int {
	t.Helper()
	lim := ir.DefaultLimits()
	lim.MaxOps, lim.MaxElements, lim.MaxStorageBytes = 1<<40, 1<<26, 1<<30
	b := ir.NewBuilder()
	a := b.Input(ir.Shape{s.M, s.K}, make([]float32, s.M*s.K))
	if s.TA {
		a = b.Input(ir.Shape{s.K, s.M}, make([]float32, s.M*s.K)).T()
	}
	b.Output("y", a.MatMul(b.Input(ir.Shape{s.K, s.N}, make([]float32, s.K*s.N))))
	g, err := b.Build(lim)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, c := range tune.Candidates(s, l) {
		at[passes.TileString(c)] = i
		sp, _, err := passes.Compile(g, passes.Options{Limits: lim, MaxInvocations: 1024, MaxWorkgroupStorage: tune.PlanStorage(l), Tile: &c})
		if err != nil {
			t.Fatalf("%v %s: %v", s, passes.TileString(c), err)
		}
		if got := sp.Program().Kernels[0].Tile; got != c {
			t.Errorf("%v candidate %s: the tiling pass emitted %s", s, passes.TileString(c), passes.TileString(got))
		}
	}
	return at
}
