package runtime_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// fixture is mlp_train_public.expect.json: PyTorch 2.11's float64 run with a
// per-value bound (see testdata/fixtures/README.md).
type fixture struct {
	Steps  int     `json:"steps"`
	LR     float32 `json:"lr"`
	Losses values  `json:"losses"`
	Params map[string]struct {
		Shape []int `json:"shape"`
		values
	} `json:"params"`
}

type values struct {
	Data  []float64 `json:"data"`
	Bound []float64 `json:"bound"`
}

func loadFixture(t *testing.T) (*ir.Graph, *fixture) {
	t.Helper()
	dir := filepath.Join("..", "testdata", "fixtures")
	f, err := os.Open(filepath.Join(dir, "mlp_train_public.graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := ir.Decode(f, ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "mlp_train_public.expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want fixture
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	return g, &want
}

// within checks got against want's float64 data, value by value, and
// returns the largest |got - data| / bound.
func within(t *testing.T, what string, got []float32, want values) float64 {
	t.Helper()
	if len(got) != len(want.Data) || len(want.Bound) != len(want.Data) {
		t.Fatalf("%s: %d values, fixture has %d (and %d bounds)", what, len(got), len(want.Data), len(want.Bound))
	}
	worst := 0.0
	for i, v := range got {
		d := math.Abs(float64(v) - want.Data[i])
		if d > want.Bound[i] {
			t.Errorf("%s[%d] = %v, PyTorch float64 %v: |diff| %.3g over the bound %.3g", what, i, v, want.Data[i], d, want.Bound[i])
		}
		worst = max(worst, d/want.Bound[i])
	}
	return worst
}

// TestTrainFixture trains the seed's MLP fixture for its 5 steps on every
// backend and compares every loss and final parameter with PyTorch.
func TestTrainFixture(t *testing.T) {
	g, want := loadFixture(t)
	for _, backend := range []string{"cpu", "webgpu", "wasm", "native"} {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			res, err := rt.Train(g, "loss", want.LR, want.Steps)
			if err != nil {
				t.Fatal(err)
			}
			worst := within(t, "loss", res.Losses, want.Losses)
			for name, p := range want.Params {
				got, ok := res.Params[name]
				if !ok {
					t.Fatalf("no parameter %q in the result", name)
				}
				worst = max(worst, within(t, name, got.Data, p.values))
			}
			t.Logf("%s: %d steps, %d kernels per step; max |diff|/bound over all losses and parameters: %.4f",
				backend, want.Steps, res.Kernels, worst)
		})
	}
}

// TestTrainSameOnEveryBackend: a training run is bit-identical on every
// backend (GPU backends may flush subnormals, which this graph never
// produces).
func TestTrainSameOnEveryBackend(t *testing.T) {
	g, want := loadFixture(t)
	ref, err := open(t, "cpu").Train(g, "loss", want.LR, want.Steps)
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"webgpu", "wasm", "native"} {
		t.Run(backend, func(t *testing.T) {
			res, err := open(t, backend).Train(g, "loss", want.LR, want.Steps)
			if err != nil {
				t.Fatal(err)
			}
			if !same(res.Losses, ref.Losses) {
				t.Errorf("losses %v, cpu %v", res.Losses, ref.Losses)
			}
			for name, p := range ref.Params {
				if !same(res.Params[name].Data, p.Data) {
					t.Errorf("parameter %s differs from cpu's", name)
				}
			}
		})
	}
}

func same(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestTrainLeavesGraph: Train reads the graph's parameters but never
// writes them, and refuses a negative step count.
func TestTrainLeavesGraph(t *testing.T) {
	g, _ := loadFixture(t)
	before := append([]float32(nil), g.Nodes[g.Input("w1")].Data...)
	rt := open(t, "cpu")
	if _, err := rt.Train(g, "loss", 0.1, 2); err != nil {
		t.Fatal(err)
	}
	if !same(before, g.Nodes[g.Input("w1")].Data) {
		t.Error("Train changed the caller's parameter data")
	}
	if _, err := rt.Train(g, "loss", 0.1, -1); err == nil {
		t.Error("Train accepted -1 steps")
	}
}

// TestRandomViewGraphs runs random graphs with broadcasts and reshapes
// through each compiled backend, bit for bit against cpuref.
func TestRandomViewGraphs(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	for _, backend := range []string{"webgpu", "wasm"} {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for seed := range n {
				checkRun(t, rt, irtest.RandomViews(uint64(5000+seed), 12))
			}
		})
	}
}
