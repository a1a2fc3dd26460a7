package bench

import (
	"strings"
	"testing"
)

// userCase is a case of the user bench with cold and warm spreads.
func userCase(be string, cold, warm Spread) Case {
	return Case{Workload: "g.json", Unit: "graph", Size: 1, Backend: be, Cold: Stage{}.with(cold.MedianMs), Warm: Stage{}.with(warm.MedianMs),
		ColdSpread: cold, WarmSpread: warm}
}

func sp(lo, med, hi float64) Spread { return Spread{Runs: 5, MinMs: lo, MedianMs: med, MaxMs: hi} }

// TestVerdicts: the break-even is the first run count at which the
// backend has cost strictly less than cpu in all; overlapping warm
// spreads conclude nothing about warm runs ("no difference"), and
// overlapping cold ones nothing at all.
func TestVerdicts(t *testing.T) {
	tests := []struct {
		name       string
		cold, warm Spread // the other backend's; cpu's are cold 10 (9–11), warm 10 (9–11)
		runs       int
		says       string
	}{
		// 100 + (n-1)·1 < 10 + (n-1)·10 from n = 12 (at 11 both are 110).
		{"compile amortized", sp(95, 100, 105), sp(0.9, 1, 1.1), 12, "cheaper from run 12 on"},
		{"cheaper cold and warm", sp(4, 5, 6), sp(0.9, 1, 1.1), 1, "from the first run"},
		// 5 + (n-1)·20 < 10 + (n-1)·10 while n-1 < 0.5: the first run only.
		{"cheaper cold only", sp(4, 5, 6), sp(19, 20, 21), 0, "cheaper for the first 1 runs only"},
		{"slower cold and warm", sp(95, 100, 105), sp(19, 20, 21), 0, "cpu is cheaper from the first run"},
		{"warm overlap, cold apart", sp(95, 100, 105), sp(2, 8, 10), 0, "warm runs: no difference (the spreads overlap); cpu's cold start is cheaper by 90.0 ms"},
		{"both overlap", sp(8, 12, 20), sp(2, 8, 10), 0, "no difference: the cold and the warm runs' spreads overlap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Verdicts([]Case{userCase("cpu", sp(9, 10, 11), sp(9, 10, 11)), userCase("native", tt.cold, tt.warm)}, "cpu")
			if len(v) != 2 || v[0].Versus != "" {
				t.Fatalf("verdicts = %+v, want cpu's without a comparison and native's", v)
			}
			if v[1].BreakEvenRuns != tt.runs || !strings.Contains(v[1].Versus, tt.says) {
				t.Errorf("native: break-even %d, %q; want %d and %q", v[1].BreakEvenRuns, v[1].Versus, tt.runs, tt.says)
			}
			if strings.Contains(tt.name, "overlap") && strings.Contains(v[1].Versus, "faster") {
				t.Errorf("concludes 'faster' from overlapping spreads: %s", v[1].Versus)
			}
		})
	}
	v := Verdicts([]Case{userCase("native", sp(1, 2, 3), sp(1, 2, 3))}, "cpu")
	if len(v) != 1 || !strings.Contains(v[0].Versus, "cpu was not measured") {
		t.Errorf("without cpu: %+v", v)
	}
}

// TestDominant: the stage with the most time is named, compile being
// passes, codegen and the backend's compile together, and the first
// dispatch's wall time standing for the dispatch.
func TestDominant(t *testing.T) {
	s := Stage{}.with(20)
	s.StartupMs, s.PassesMs, s.CodegenMs, s.CompileMs, s.UploadMs, s.ReadbackMs, s.DispatchMs = 5, 2, 2, 2, 4, 3, 1
	if d, _ := describe("cold", s, sp(1, 20, 30)); d != "transfer" {
		t.Errorf("dominant = %s, want transfer (7 ms, against compile 6 and startup 5)", d)
	}
	s.FirstDispatchMs = 9
	if d, text := describe("cold", s, sp(1, 20, 30)); d != "dispatch" || !strings.Contains(text, "dispatch 9.000") {
		t.Errorf("dominant = %s (%s), want dispatch at the first dispatch's 9 ms", d, text)
	}
}
