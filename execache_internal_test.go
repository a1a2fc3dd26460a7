package gpucc

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	_ "github.com/gpucc/gpucc/runtime/cpu"
)

// TestExecutableCache: graphs of one structure share an executable that
// holds none of their data; each run sees its own data, every input bound
// (a named one too); the least recently used executable is released.
func TestExecutableCache(t *testing.T) {
	rt, err := Open(context.Background(), Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	c := NewExecutableCache(rt, 2)
	defer c.Close()
	graph := func(n int, a, b []float32) *ir.Graph {
		bl := ir.NewBuilder()
		x := bl.NamedInput("input3", ir.Shape{n}, a) // a default name, of no input here
		y := bl.Input(ir.Shape{n}, b)
		bl.Output("d", x.Sub(y))
		g, err := bl.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, tt := range []struct {
		a, b, want []float32
	}{
		{[]float32{10, 20}, []float32{1, 2}, []float32{9, 18}},
		{[]float32{100, 200}, []float32{3, 4}, []float32{97, 196}},
	} {
		res, err := c.Run(context.Background(), graph(2, tt.a, tt.b))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, res.Outputs["d"].Data); diff != "" {
			t.Errorf("d (-want +got):\n%s", diff)
		}
	}
	if n := c.Len(); n != 1 {
		t.Errorf("%d executables for one structure", n)
	}
	for _, n := range []int{3, 4} {
		if _, err := c.Run(context.Background(), graph(n, make([]float32, n), make([]float32, n))); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Len(); n != 2 {
		t.Errorf("%d executables cached, the bound is 2", n)
	}
	if c.Contains(graph(2, []float32{1, 1}, []float32{1, 1})) {
		t.Error("the least recently used executable is still cached")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		for i, b := range e.exe.Plan().Program.Buffers {
			if b.Data != nil {
				t.Errorf("cached buffer %d holds %d values of a request's data", i, len(b.Data))
			}
		}
	}
}

// TestSealNamesByWireID: an unnamed input is named by its wire id, which
// the broadcast before it does not shift (issue 19: a generated package
// exposed wire node 3 as Input4).
func TestSealNamesByWireID(t *testing.T) {
	g, err := ir.DecodeBytes([]byte(`{"version":1,"nodes":[{"id":0,"op":"input","shape":[2,3],"data":[1,2,3,4,5,6]},{"id":1,"op":"input","shape":[3],"data":[1,2,3]},
		{"id":2,"op":"add","a":0,"b":1},{"id":3,"op":"input","shape":[2,3],"data":[1,2,3,4,5,6]},{"id":4,"op":"mul","a":2,"b":3}],"outputs":[{"name":"y","id":4}]}`), ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Seal(g, ir.Limits{}, Profile{}, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range plan.Inputs {
		names = append(names, in.Name)
	}
	if diff := cmp.Diff([]string{"input0", "input1", "input3"}, names); diff != "" {
		t.Errorf("input names (-want +got):\n%s", diff)
	}
}

// TestStructureKeyOncePerRequest: a run through the cache hashes its
// graph's structure once, whether it compiles or finds the executable,
// and so does a request that asks Cached, Prepare and Run (a server's).
func TestStructureKeyOncePerRequest(t *testing.T) {
	ctx := context.Background()
	rt, err := Open(ctx, Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	c := NewExecutableCache(rt, 2)
	defer c.Close()
	bl := ir.NewBuilder()
	x := bl.Input(ir.Shape{4}, []float32{1, 2, 3, 4})
	bl.Output("y", x.Add(x))
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	keys := func(what string, f func() error) {
		t.Helper()
		before := structureKeys.Load()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if n := structureKeys.Load() - before; n != 1 {
			t.Errorf("%s computed the structure key %d times, want once", what, n)
		}
	}
	keys("a run that compiles", func() error { _, err := c.Run(ctx, g); return err })
	keys("a run of a cached structure", func() error { _, err := c.Run(ctx, g); return err })
	keys("a request", func() error {
		req := c.Request(g)
		if !req.Cached() {
			t.Error("the request's structure is not cached")
		}
		if err := req.Prepare(ctx); err != nil {
			return err
		}
		_, err := req.Run(ctx)
		return err
	})
}
