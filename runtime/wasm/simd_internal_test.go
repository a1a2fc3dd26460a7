package wasm

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// The SIMD gate. wasm kernels are built without SIMD128 (cbuild.WasmCFlags)
// because wazero v1.12's amd64 compiler miscompiles v128.bitselect under
// vector register pressure: its lowering reloads the pand'ed temporary from
// a stale spill slot, so a vectorised relu, maximum or minimum returns its
// first operand. TestSIMDCompilerMatchesInterpreter is what has to pass
// before SIMD comes back: it builds fused kernels WITH simd128 and runs
// each module under wazero's compiler and its interpreter (which lowers
// nothing to machine code), requiring the same bits from both and
// cpuref's. The cases known to hit the bug are listed in simdKnownBad:
// there a difference is expected and logged. They no longer reproduce it
// since the C tiles of 5ae9eac changed the packed routine's register
// pressure, so this test cannot tell a fixed wazero from a lost repro:
// TestWazeroSIMDRepro keeps the C from before as a file and decides. It
// also found that the bug is not bitselect's: with every bitselect
// rewritten as and/andnot/or the module is still wrong (v1.12.0 is
// wazero's latest release on 2026-12-04).

// simdCFlags are cbuild.WasmCFlags with SIMD128 on (relaxed SIMD still
// off: it allows fused multiply-adds), what the build used before d3a74ae.
func simdCFlags() []string {
	var out []string
	for _, f := range cbuild.WasmCFlags {
		if f == "-mno-simd128" {
			out = append(out, "-msimd128", "-mno-relaxed-simd")
			continue
		}
		out = append(out, f)
	}
	return out
}

// buildSIMD compiles a unit's source to a module with simd128, bypassing
// cbuild's feature check (which refuses such a module by design).
func buildSIMD(t *testing.T, tc *cbuild.Toolchain, source string) []byte {
	t.Helper()
	dir := t.TempDir()
	src, obj, out := filepath.Join(dir, "k.c"), filepath.Join(dir, "k.o"), filepath.Join(dir, "k.wasm")
	if err := os.WriteFile(src, []byte(source), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{
		append(append([]string{tc.Clang}, simdCFlags()...), "-o", obj, src),
		append(append([]string{tc.WasmLD}, cbuild.WasmLDFlags...), "-o", out, obj),
	} {
		if b, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", filepath.Base(cmd[0]), err, b)
		}
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// usesSIMD reports whether a module's target_features section lists
// simd128 as used, i.e. whether Clang vectorised anything in it.
func usesSIMD(t *testing.T, wasm []byte) bool {
	feats, err := cbuild.Features(wasm)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(feats, "+simd128")
}

// simdCase is a graph whose fused kernels vectorise. packed builds it
// with the packed matmul, which wasm used before 18c69a5 (codegen/c's
// matmulPrelude keeps wasm on the unpacked one since).
type simdCase struct {
	name   string
	graph  *ir.Graph
	packed bool
}

// unpackedMarker opens matmulPrelude's wasm-only branch; packedSource
// turns it off, so that wasm builds the packed routine of the #else.
const unpackedMarker = "#ifdef __wasm__\n/* wasm: the unpacked 2x8 tiles;"

func packedSource(t *testing.T, src string) string {
	t.Helper()
	if !strings.Contains(src, unpackedMarker) {
		t.Fatalf("codegen/c's matmul prelude no longer opens with %q: update packedSource", unpackedMarker)
	}
	return strings.Replace(src, unpackedMarker, "#if 0\n/* wasm: the unpacked 2x8 tiles;", 1)
}

// simdCases are the op suite's graphs (every fourth unless all), the
// matmul epilogues of codegen/c's TestMatmulEpilogues on both matmul
// routines, and random convolutions with their fused epilogues.
func simdCases(t *testing.T, all bool) []simdCase {
	var cs []simdCase
	for i, c := range irtest.Suite() {
		if all || i%4 == 0 {
			cs = append(cs, simdCase{name: "suite/" + c.Name, graph: c.Graph})
		}
	}
	// TestMatmulEpilogues' shapes and epilogues (codegen/c): the packed
	// matmul's relu epilogue after 5x3x9 was the first case found.
	shapes := [][3]int{{5, 3, 9}, {4, 3, 9}, {9, 6, 33}}
	if all {
		shapes = append(shapes, [][3]int{{6, 3, 9}, {5, 4, 9}, {5, 3, 10}, {3, 7, 15}, {5, 11, 17}}...)
	}
	epilogues := []struct {
		name string
		f    func(c, row ir.Tensor) ir.Tensor
	}{
		{"relu", func(c, _ ir.Tensor) ir.Tensor { return c.AddScalar(0.5).Relu() }},
		{"relu-bias", func(c, row ir.Tensor) ir.Tensor { return c.Add(row.Broadcast(c.Shape())).Relu() }},
		{"max", func(c, _ ir.Tensor) ir.Tensor { return c.MaximumScalar(-0.25) }},
		{"min", func(c, _ ir.Tensor) ir.Tensor { return c.MinimumScalar(0.25) }},
	}
	for _, s := range shapes {
		for _, e := range epilogues {
			b := ir.NewBuilder()
			a := b.Input(ir.Shape{s[0], s[1]}, irtest.Values(1, s[0]*s[1], 2))
			w := b.Input(ir.Shape{s[1], s[2]}, irtest.Values(2, s[1]*s[2], 2))
			row := b.Input(ir.Shape{1, s[2]}, irtest.Values(5, s[2], 2))
			b.Output(e.name, e.f(a.MatMul(w), row))
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for _, packed := range []bool{false, true} {
				kind := "matmul"
				if packed {
					kind = "matmul-packed"
				}
				cs = append(cs, simdCase{fmt.Sprintf("%s/%dx%dx%d/%s", kind, s[0], s[1], s[2], e.name), g, packed})
			}
		}
	}
	// Convolutions with their fused bias, relu and residual epilogues; the
	// second case found is random conv 11 (seed 1011).
	for _, seed := range []uint64{3, 7, 11, 19, 23} {
		cs = append(cs, simdCase{name: fmt.Sprintf("conv/random-%d", seed), graph: irtest.RandomConv(seed).Graph(1000 + seed)})
	}
	return cs
}

// simdKnownBad are the cases on which wazero v1.12.0's amd64 compiler is
// known to disagree with its interpreter (the bitselect miscompile): a
// difference there is logged, not an error.
// Measured 2026-12-02 with GPUCC_SIMD_GATE=all (182 cases, all
// vectorised): the packed routine at M = 5 (5×3×9, 5×4×9, 5×3×10) with
// each of the four epilogues. Every other case passes: the whole op suite,
// the unpacked routine that wasm builds today, its other packed shapes,
// and the random convolutions (conv 11, the second case found before
// d3a74ae, no longer triggers it with today's conv kernel).
var simdKnownBad = map[string]bool{}

func init() {
	for _, s := range []string{"5x3x9", "5x4x9", "5x3x10"} {
		for _, e := range []string{"relu", "relu-bias", "max", "min"} {
			simdKnownBad["matmul-packed/"+s+"/"+e] = true
		}
	}
}

// wazeroDevice is a wasm device on a wazero runtime of the given mode,
// with no toolchain: it runs the prebuilt modules it is given.
func wazeroDevice(compiler bool) *device {
	return &device{eng: newWazero(compiler), modules: map[string]*module{}, tcErr: fmt.Errorf("prebuilt modules only")}
}

// runPrebuilt runs program p with module wasm on d and returns its
// outputs by name.
func runPrebuilt(ctx context.Context, d *device, p *ir.Sealed, unit *c.Unit, wasm []byte) (map[string][]float32, error) {
	exe, err := d.Compile(ctx, &backend.Program{IR: p, Prebuilt: Artifact(unit, wasm)}, nil)
	if err != nil {
		return nil, err
	}
	defer exe.Release()
	call := &backend.Call{Args: make([]backend.Arg, len(p.Program().Buffers)), Dests: make([]backend.Dest, len(p.Program().Outputs)), Stats: &backend.Stats{}}
	for i, b := range p.Program().Buffers {
		call.Args[i].Host = b.Data
	}
	got := map[string][]float32{}
	for i, o := range p.Program().Outputs {
		got[o.Name] = make([]float32, o.Shape.Len())
		call.Dests[i].Host = got[o.Name]
	}
	return got, exe.Run(ctx, call)
}

// firstDiff names the first output element where a and b differ in bits
// (outputs that the plan holds as constants, which no kernel writes, aside).
func firstDiff(p *ir.Program, a, b map[string][]float32) string {
	for _, o := range p.Outputs {
		if o.Buffer < 0 {
			continue
		}
		for i := range a[o.Name] {
			if x, y := math.Float32bits(a[o.Name][i]), math.Float32bits(b[o.Name][i]); x != y {
				return fmt.Sprintf("%s[%d] = %#08x vs %#08x", o.Name, i, x, y)
			}
		}
	}
	return ""
}

func TestSIMDCompilerMatchesInterpreter(t *testing.T) {
	if goruntime.GOARCH != "amd64" && goruntime.GOARCH != "arm64" {
		t.Skip("wazero has no compiler on " + goruntime.GOARCH)
	}
	tc, err := cbuild.Find()
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_WASM") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx := context.Background()
	comp, interp := wazeroDevice(true), wazeroDevice(false)
	defer comp.Close()
	defer interp.Close()
	// Every case is a Clang run: GPUCC_SIMD_GATE=all runs the whole op
	// suite and every matmul shape (the check before SIMD comes back);
	// -short the known cases and every fifth other.
	cases := simdCases(t, os.Getenv("GPUCC_SIMD_GATE") == "all")
	if testing.Short() {
		var short []simdCase
		for i, c := range cases {
			if simdKnownBad[c.name] || i%5 == 0 {
				short = append(short, c)
			}
		}
		cases = short
	}
	vectorised, knownSeen := 0, 0
	for _, tcase := range cases {
		t.Run(tcase.name, func(t *testing.T) {
			limits := ir.Limits{MaxStorageBytes: 64 << 20, MaxOps: 1 << 40}
			p, _, err := passes.Compile(tcase.graph, passes.Options{Limits: limits})
			if err != nil {
				t.Fatal(err)
			}
			unit, err := c.Target{}.Emit(p)
			if err != nil {
				t.Fatal(err)
			}
			src := unit.Source
			if tcase.packed {
				src = packedSource(t, src)
			}
			wasm := buildSIMD(t, tc, src)
			if usesSIMD(t, wasm) {
				vectorised++
			}
			want := cpuref.RunProgram(p.Program())
			gotI, err := runPrebuilt(ctx, interp, p, unit, wasm)
			if err != nil {
				t.Fatalf("interpreter: %v", err)
			}
			if d := firstDiff(p.Program(), gotI, want); d != "" {
				t.Fatalf("the interpreter differs from cpuref (a SIMD kernel that is wrong in the C, not in wazero): %s", d)
			}
			gotC, err := runPrebuilt(ctx, comp, p, unit, wasm)
			if err != nil {
				t.Fatalf("compiler: %v", err)
			}
			d := firstDiff(p.Program(), gotC, gotI)
			known := simdKnownBad[tcase.name] && goruntime.GOARCH == "amd64" && wazeroVersion == "v1.12.0"
			switch {
			case known && d == "":
				// Not an error: the miscompile needs enough live vectors,
				// and the packed routine's C changed with the kernel tiles
				// of 5ae9eac, so a pass is not proof that wazero is fixed.
				t.Logf("wazero %s's compiler gives the interpreter's bits on %s, a case it miscompiled before 5ae9eac "+
					"(v128.bitselect from a stale spill slot)", wazeroVersion, tcase.name)
			case known:
				knownSeen++
				t.Logf("known wazero %s miscompile, as expected: compiler vs interpreter %s", wazeroVersion, d)
			case d != "":
				t.Errorf("wazero's compiler differs from its interpreter on a SIMD128 module: compiler vs interpreter %s", d)
			}
		})
	}
	if vectorised == 0 {
		t.Errorf("no case's module uses simd128: the SIMD flags did not take (%v)", simdCFlags())
	}
	t.Logf("%d of %d cases vectorised; %d known miscompiles reproduced", vectorised, len(cases), knownSeen)
}
