package gpucc_test

import (
	"fmt"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// The shared helpers, under the names the tests of this package use.
var (
	backends              = gpucctest.Backends
	bits                  = gpucctest.Bits
	expect                = gpucctest.Expect
	checkRun              = gpucctest.CheckRun
	checkNonFinite        = gpucctest.CheckNonFinite
	checkAgainst          = gpucctest.CheckAgainst
	expectedOf            = gpucctest.RefOf
	compare               = gpucctest.Compare
	build                 = gpucctest.Build
	openCache             = gpucctest.OpenCache
	files                 = gpucctest.Files
	cacheOffWritesNothing = gpucctest.CacheOffWritesNothing
)

func open(t testing.TB, backend string, opts ...func(*gpucc.Options)) *gpucc.Runtime {
	t.Helper()
	return gpucctest.Open(t, backend, opts...)
}

func TestSuite(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for _, c := range irtest.Suite() {
				t.Run(c.Name, func(t *testing.T) { checkRun(t, rt, c.Graph) })
			}
		})
	}
}

func TestRandomGraphs(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 10
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for seed := range n {
				g := irtest.Random(uint64(seed), 12)
				t.Run(itoa(seed), func(t *testing.T) { checkRun(t, rt, g) })
			}
			for seed := range n / 2 { // every elementwise op, over extreme values
				g := irtest.RandomOps(uint64(seed), 12)
				t.Run("ops/"+itoa(seed), func(t *testing.T) { checkRun(t, rt, g) })
			}
		})
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestRandomRows runs random compositions of exp, sum, max, div and
// broadcasts over rows (irtest.RandomRows; passes.TestRandomRows checks
// their kernel count) on every backend, bit for bit against cpuref: short
// rows (a thread each in WGSL), rows of a workgroup, several leaves per
// thread, and a rank-3 shape whose per-row values broadcast along a
// middle axis.
func TestRandomRows(t *testing.T) {
	shapes := []ir.Shape{{5, 13}, {3, 256}, {2, 2039}, {2, 3, 509}}
	n := 4
	if testing.Short() {
		n = 2
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for _, s := range shapes {
				for seed := range n {
					g, _ := irtest.RandomRows(uint64(seed), s)
					t.Run(fmt.Sprintf("%v/%d", s, seed), func(t *testing.T) { checkRun(t, rt, g) })
				}
			}
		})
	}
}
