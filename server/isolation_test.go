package server_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/server"
)

// craftedGraphs are graphs of one structure each whose input names were
// chosen to collide with the default names of unnamed inputs, by wire id
// or by IR id (the lowering of a broadcast moves wire node 3 to IR node 4).
// data fills the inputs in node order.
var craftedGraphs = []struct {
	name string
	doc  func(data [][]float32) string
}{
	{"a name like a shifted unnamed input's IR id", func(d [][]float32) string {
		return fmt.Sprintf(`{"version":1,"nodes":[{"id":0,"op":"input","name":"input4","shape":[2,3],"data":%s},{"id":1,"op":"input","shape":[3],"data":%s},
			{"id":2,"op":"add","a":0,"b":1},{"id":3,"op":"input","shape":[2,3],"data":%s},{"id":4,"op":"sub","a":2,"b":3}],"outputs":[{"name":"d","id":4}]}`,
			list(d[0]), list(d[1]), list(d[2]))
	}},
	{"names of op ids", func(d [][]float32) string {
		return fmt.Sprintf(`{"version":1,"nodes":[{"id":0,"op":"input","name":"input2","shape":[6],"data":%s},{"id":1,"op":"input","shape":[6],"data":%s},
			{"id":2,"op":"sub","a":0,"b":1},{"id":3,"op":"input","name":"input1_","shape":[6],"data":%s},{"id":4,"op":"mul","a":2,"b":3}],"outputs":[{"name":"d","id":4}]}`,
			list(d[0]), list(d[1]), list(d[2]))
	}},
	{"unnamed", func(d [][]float32) string {
		return fmt.Sprintf(`{"version":1,"nodes":[{"id":0,"op":"input","shape":[6],"data":%s},{"id":1,"op":"input","shape":[6],"data":%s},
			{"id":2,"op":"sub","a":0,"b":1},{"id":3,"op":"input","shape":[6],"data":%s},{"id":4,"op":"add","a":2,"b":3}],"outputs":[{"name":"d","id":4}]}`,
			list(d[0]), list(d[1]), list(d[2]))
	}},
}

func list(v []float32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = ir.FormatFloat(x)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// TestClientsNeverSeeEachOthersData: two clients send graphs of one
// structure with crafted input names and their own data, alternately, on
// every backend; each answer is cpuref's on that client's own data, so no
// input kept data from another request (the cache holds executables, not
// data) or was bound by a name that meant another input.
func TestClientsNeverSeeEachOthersData(t *testing.T) {
	h := server.New(server.Options{AllowSoftware: true})
	defer h.Close(context.Background())
	h.Grant("alice")
	h.Grant("bob")
	clients := []*server.Client{h.Client("alice"), h.Client("bob")}
	r := rand.New(rand.NewPCG(1, 2))
	for _, b := range backendsUnderTest {
		t.Run(b, func(t *testing.T) {
			for _, cg := range craftedGraphs {
				for round := range 4 {
					c := clients[round%2]
					data := [][]float32{make([]float32, 6), make([]float32, 3), make([]float32, 6)}
					if !strings.Contains(cg.doc(data), `"shape":[3]`) {
						data[1] = make([]float32, 6)
					}
					for _, d := range data {
						for i := range d {
							d[i] = float32(r.IntN(2000) - 1000) // exact in every backend
						}
					}
					doc := cg.doc(data)
					g, err := ir.DecodeBytes([]byte(doc), ir.Limits{})
					if err != nil {
						t.Fatalf("%s: %v", cg.name, err)
					}
					want := cpuref.Eval(g)[g.Outputs[0].ID]
					rep := c.Execute(context.Background(), server.Request{Graph: strings.NewReader(doc), Backend: b})
					if !rep.OK && rep.Error.Code == ir.CodeBackendUnavailable {
						if env := requireEnv[b]; env != "" && os.Getenv(env) != "" {
							t.Fatalf("%s=%s but %s", env, os.Getenv(env), rep.Error.Message)
						}
						t.Skip(rep.Error.Message)
					}
					if !rep.OK {
						t.Fatalf("%s, round %d: %s %s", cg.name, round, rep.Error.Code, rep.Error.Message)
					}
					got := rep.Value.Outputs["d"].Data
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s, round %d (%s): d = %v, want %v (its own data)", cg.name, round, c.ID(), got, want)
						}
					}
				}
			}
		})
	}
}

// TestCollidingNamesRefused: the graphs, where a named input takes
// an unnamed input's default name, are refused, not run on a guess.
func TestCollidingNamesRefused(t *testing.T) {
	h := server.New(server.Options{Policy: server.Policy{Backends: []string{"cpu"}}})
	defer h.Close(context.Background())
	h.Grant("g")
	c := h.Client("g")
	for _, doc := range []string{
		`{"version":1,"nodes":[{"id":0,"op":"input","name":"input1","shape":[2],"data":[10,20]},{"id":1,"op":"input","shape":[2],"data":[1,2]},{"id":2,"op":"sub","a":0,"b":1}],"outputs":[{"name":"d","id":2}]}`,
		`{"version":1,"nodes":[{"id":0,"op":"input","shape":[2],"data":[10,20]},{"id":1,"op":"input","name":"input0","shape":[2],"data":[1,2]},{"id":2,"op":"sub","a":0,"b":1}],"outputs":[{"name":"d","id":2}]}`,
	} {
		if r := c.Execute(context.Background(), server.Request{Graph: strings.NewReader(doc), Backend: "cpu"}); r.OK || r.Error.Code != ir.CodeInvalidGraph {
			t.Errorf("%s: %+v %+v, want invalid_graph", doc, r.Value, r.Error)
		}
	}
}

// TestCacheHoldsNoData: after many large requests of distinct structures,
// the idle host holds no more memory than before (the cache keeps 64
// executables per backend, and used to keep each one's request data).
func TestCacheHoldsNoData(t *testing.T) {
	h := server.New(server.Options{PoolBytes: -1, Policy: server.Policy{Backends: []string{"cpu"}}})
	defer h.Close(context.Background())
	h.Grant("g")
	c := h.Client("g")
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	warm := `{"version":1,"nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2]},{"id":1,"op":"neg","a":0}],"outputs":[{"name":"y","id":0}]}`
	c.Execute(context.Background(), server.Request{Graph: strings.NewReader(warm), Backend: "cpu"})
	before := heap()
	const n, size = 12, 1<<20 - 16 // 12 structures of 4 MiB of input each
	for k := range n {
		var b strings.Builder
		fmt.Fprintf(&b, `{"version":1,"nodes":[{"id":0,"op":"input","shape":[%d],"data":[`, size-k)
		for i := range size - k {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("1")
		}
		b.WriteString(`]},{"id":1,"op":"neg","a":0}],"outputs":[{"name":"y","id":1}]}`)
		if r := c.Execute(context.Background(), server.Request{Graph: strings.NewReader(b.String()), Backend: "cpu"}); !r.OK {
			t.Fatalf("%+v", r.Error)
		}
	}
	after := heap()
	if grew := int64(after) - int64(before); grew > 8<<20 {
		t.Errorf("the idle heap grew by %d MiB after %d requests of 4 MiB (from %d to %d MiB)", grew>>20, n, before>>20, after>>20)
	}
	t.Logf("idle heap %d MiB before, %d MiB after %d requests of 4 MiB", before>>20, after>>20, n)
}
