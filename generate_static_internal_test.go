package gpucc

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestStaticCacheMatchesEachLength: in cpuref, each step p ≥ 1 of the
// rewritten gpt2kv_grow (a static cache of 12 rows) gives the logits and
// the present rows 0 … p of the grown model specialized to a past of p
// rows and fed the rewrite's rows 0 … p-1, bit for bit (step 0 has no
// grown counterpart: a past of 0 rows is empty). This holds while
// attention takes one order at the grown and the static lengths: masked
// keys past the position add exact zeros to its ascending sums. So does
// gqa_kv (gqa_kv.py: grouped-query attention, 4 query heads over 2 key
// and value heads repeated by repeat_kv), whose attention reads each
// shared head through a broadcast (ir.GroupAttention): the rewrite
// refused it before ("node 26 (broadcast) reads the cache").
func TestStaticCacheMatchesEachLength(t *testing.T) {
	for _, c := range []struct {
		file                string
		layers, heads, head int
	}{{"gpt2kv_grow.onnx", 2, 4, 16}, {"gqa_kv.onnx", 1, 2, 4}} {
		t.Run(c.file, func(t *testing.T) { matchesEachLength(t, c.file, c.layers, c.heads, c.head) })
	}
}

// matchesEachLength is TestStaticCacheMatchesEachLength of one fixture,
// whose caches are [1, heads, rows, head] for each of its layers.
func matchesEachLength(t *testing.T, file string, layers, heads, head int) {
	const capacity = 12
	raw, err := os.ReadFile(filepath.Join("onnx", "testdata", "transformers", file))
	if err != nil {
		t.Fatal(err)
	}
	limits := ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1e11, NonFinite: true}
	m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var names []string
	for l := range layers {
		for _, kv := range []string{"key", "value"} {
			names = append(names, fmt.Sprintf("past_key_values.%d.%s", l, kv))
		}
	}
	spec := func(rows int) *ir.Graph {
		s := map[string][]int{StepInputIDs: {1, 1}, StepPosition: {1}}
		for _, n := range names {
			s[n] = []int{1, heads, rows, head}
		}
		g, err := m.Specialize(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	var pairs []CachePair
	for _, n := range names {
		pairs = append(pairs, CachePair{Past: n, Present: "present." + n[len("past_key_values."):], Shape: ir.Shape{1, heads, capacity, head}})
	}
	rw, err := staticCache(spec(capacity-1), spec(capacity), pairs, capacity, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rw.g.Nodes {
		if n.Op == ir.OpAttention && file == "gqa_kv.onnx" && len(n.Shape) != 5 {
			t.Errorf("the attention is %v; want its shared heads read in place, [1,2,2,1,4]", n.Shape)
		}
	}
	run := func(g *ir.Graph, token, pos int64, pasts map[string][]float32) map[string][]float32 {
		g.Nodes[g.Input(StepInputIDs)].Ints = []int64{token}
		g.Nodes[g.Input(StepPosition)].Ints = []int64{pos}
		for n, v := range pasts {
			g.Nodes[g.Input(n)].Data = v
		}
		vals, err := cpuref.EvalTyped(g)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]float32{}
		for _, o := range g.Outputs {
			out[o.Name] = vals[o.ID].F
		}
		return out
	}
	cache := map[string][]float32{}
	for _, n := range names {
		cache[n] = make([]float32, heads*capacity*head)
	}
	// rows returns rows 0 … k-1 of a [1,heads,capacity,head] cache.
	rows := func(c []float32, k int) []float32 {
		var r []float32
		for h := range heads {
			r = append(r, c[h*capacity*head:(h*capacity+k)*head]...)
		}
		return r
	}
	token := int64(3) // in both fixtures' vocabularies
	for p := range int64(capacity) {
		st := run(rw.g, token, p, cache)
		if p >= 1 {
			pasts := map[string][]float32{}
			for _, n := range names {
				pasts[n] = rows(cache[n], int(p))
			}
			gr := run(spec(int(p)), token, p, pasts)
			for name, want := range gr {
				got := st[name]
				if name != StepLogits {
					got = rows(got, int(p)+1)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("step %d: %s[%d] = %v rewritten, %v grown to %d rows", p, name, i, got[i], want[i], p+1)
					}
				}
			}
		}
		for _, n := range names {
			cache[n] = st["present."+n[len("past_key_values."):]]
		}
		token = argmax(st[StepLogits])
	}
}

// TestStaticCacheStepCost: the static-cache rewrite's step (gpt2kv_grow,
// 128 rows) compiles on native and wasm to one float segment whose
// kernels write each present once, whole, and nothing else of the cache's
// size: 27 kernels writing 140,800 bytes a step, of which the 4 presents
// are 131,072 (the model's own static cache, gpt2kv.onnx, writes 272,384).
// The rewrite wrote 337,920 bytes in 30 kernels of 2 float segments before:
// its write mask was a bool compared and cast in a typed segment, so each
// row, broadcast to the cache's shape, crossed to the next segment as a
// buffer, and the mask's broadcast, shared by the 4 caches, was stored at
// the cache's size and read back by each. The same tokens and logits' bits
// are TestGenerateGrowingCache's.
func TestStaticCacheStepCost(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("onnx", "testdata", "transformers", "gpt2kv_grow.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	limits := ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1e11, NonFinite: true, MaxElements: 1 << 26}
	m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	for _, be := range []string{"native", "wasm"} {
		t.Run(be, func(t *testing.T) {
			rt, err := Open(context.Background(), Options{Backend: be, Limits: limits})
			if err != nil {
				if os.Getenv("GPUCC_REQUIRE_"+strings.ToUpper(be)) != "" {
					t.Fatal(err)
				}
				t.Skipf("%s: %v", be, err)
			}
			defer rt.Close()
			d, err := rt.NewDecoder(context.Background(), m, DecoderOptions{MaxLen: 128})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Release()
			sc, ok := d.stepCost()
			if !ok {
				t.Fatal("no step cost on", be)
			}
			const present = 4 * 4 * 128 * 16
			if sc.caches != 4*present || sc.segments != 1 || sc.cost.BytesWritten > sc.caches+16<<10 {
				t.Errorf("%d kernels in %d segments writing %d bytes (the caches %d); want 1 segment writing the caches and at most 16 KiB more", sc.kernels, sc.segments, sc.cost.BytesWritten, sc.caches)
			}
			whole := 0
			for _, s := range d.exe.split.segs {
				if s.plan == nil {
					continue
				}
				p := s.plan.Program
				for _, k := range p.Kernels {
					for _, o := range k.Outputs {
						if 4*p.Buffers[o].Len >= present {
							whole++
						}
					}
				}
			}
			if whole != 4 {
				t.Errorf("%d buffers of the cache's size written a step; want the 4 presents", whole)
			}
			if !strings.Contains(d.Explain(), fmt.Sprintf("step: %d kernels in 1 compiled segments, writing %d bytes", sc.kernels, sc.cost.BytesWritten)) {
				t.Errorf("Explain = %q", d.Explain())
			}
			t.Logf("%s: %d kernels, %d bytes written, %d read a step", be, sc.kernels, sc.cost.BytesWritten, sc.cost.BytesRead)
		})
	}
}
