package onnx_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"github.com/gpucc/gpucc/passes"
)

// sliceEdges are the starts, ends and steps FuzzSliceViews draws most
// often: the int64 extremes, the axis's bounds and their neighbours.
var sliceEdges = []int64{math.MinInt64, math.MinInt64 + 1, math.MaxInt64, math.MaxInt64 - 1, -1 << 32, 1 << 32,
	-7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}

// fuzzParams reads a fuzz case's parameters from its bytes, a byte (or 8)
// at a time, and zeros once they run out.
type fuzzParams struct{ b []byte }

func (p *fuzzParams) byte() int {
	if len(p.b) == 0 {
		return 0
	}
	v := p.b[0]
	p.b = p.b[1:]
	return int(v)
}

// index is a start, end or step: mostly an edge, else 8 raw bytes.
func (p *fuzzParams) index() int64 {
	k := p.byte()
	if k < 224 {
		return sliceEdges[k%len(sliceEdges)]
	}
	var raw [8]byte
	for i := range raw {
		raw[i] = byte(p.byte())
	}
	return int64(binary.LittleEndian.Uint64(raw[:]))
}

// numpySlice is the indices ONNX's Slice (13) takes of an axis of length
// d, as its spec and ONNX Runtime say: a negative start or end counts
// from the end, then each is clamped, to [0, d] stepping forward, and
// stepping backward a start to [0, d-1] and an end to [-1, d-1]. That is
// numpy's x[start:end:step] (ONNX's reference evaluator's), but for a
// backward start below -d, which numpy clamps to -1 (an empty slice) and
// the spec to 0. Written as a walk, not a count, as the importer does it.
func numpySlice(start, end, step int64, d int64) []int {
	norm := func(x int64, lo int64) int64 {
		if x < 0 {
			x += d
		}
		if step > 0 {
			return min(max(x, 0), d)
		}
		return min(max(x, lo), d-1)
	}
	var idx []int
	b, e := norm(start, 0), norm(end, -1)
	for i := b; step > 0 && i < e || step < 0 && i > e; i += step {
		idx = append(idx, int(i))
		// The next index passes the end: checked without computing it,
		// which could wrap.
		if step > 0 && step >= e-i || step < 0 && (step == math.MinInt64 || -step >= i-e) {
			break
		}
	}
	return idx
}

// sliceCase is one Slice: per sliced axis (in the node's order), its
// axis as given (negative counts from the end), start, end and step
// (0: no steps input).
type sliceCase struct {
	axes               []int64
	starts, ends, step []int64
}

// FuzzSliceViews imports a run-time Slice of a Slice (a view of a view)
// of an input or of an elementwise result, starts, ends, axes and steps
// drawn from the int64 extremes and the axes' bounds, and requires numpy's
// elements, bit for bit (-0, a subnormal and ±3e38 among them), from the
// reference (cpuref.Eval) and from the compiled program (passes.Compile
// run by cpuref.RunProgram: the views, their offsets and strides, as
// every backend's kernels read them); an empty slice, a step of 0, an
// axis out of range or named twice is refused with a code, never a panic.
func FuzzSliceViews(f *testing.F) {
	f.Add([]byte{2, 3, 4, 0, 1, 1, 13, 19, 14})
	f.Add([]byte{3, 2, 3, 4, 1, 2, 0, 12, 2, 13, 1, 14, 2, 13, 12, 19, 20, 14})
	f.Add([]byte{1, 6, 0, 1, 0, 0, 1, 12})
	f.Add([]byte{2, 5, 5, 1, 2, 1, 255, 0, 0, 0, 0, 0, 0, 0, 128, 2, 11, 0, 13, 3, 10})
	f.Fuzz(func(t *testing.T, b []byte) {
		shape, pre, cases := sliceViewCase(&fuzzParams{b})
		checkSliceViews(t, shape, pre, cases)
	})
}

// sliceViewCase draws one FuzzSliceViews case from p.
func sliceViewCase(p *fuzzParams) ([]int64, bool, [2]sliceCase) {
	rank := 1 + p.byte()%3
	shape := make([]int64, rank)
	for d := range shape {
		shape[d] = int64(1 + p.byte()%6)
	}
	pre := p.byte()%2 == 1
	var cases [2]sliceCase
	for s := range cases {
		n := p.byte() % (rank + 1)
		withSteps := p.byte()%2 == 1
		for range n {
			c := &cases[s]
			c.axes = append(c.axes, int64(p.byte()%(2*rank))-int64(rank))
			c.starts = append(c.starts, p.index())
			c.ends = append(c.ends, p.index())
			if withSteps {
				c.step = append(c.step, p.index())
			}
		}
	}
	return shape, pre, cases
}

// TestSliceViewsRandom runs 3,000 of FuzzSliceViews' cases drawn from a
// fixed generator: at least a fifth of them import (the rest are empty
// or invalid slices, refused with a code).
func TestSliceViewsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	imported := 0
	for range 3000 {
		b := make([]byte, 48)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		shape, pre, cases := sliceViewCase(&fuzzParams{b})
		if checkSliceViews(t, shape, pre, cases) {
			imported++
		}
	}
	if imported < 600 {
		t.Errorf("%d of 3000 cases imported", imported)
	}
	t.Logf("%d of 3000 cases imported", imported)
}

// sliceChain is one FuzzSliceViews case as part of a model: input x<i>
// (of shape, holding x), optionally times 1.5, sliced twice to y<i>, and
// z<i> = y<i>·y<i>; want holds numpy's y and z, valid says whether numpy's
// result is a valid, non-empty slice.
type sliceChain struct {
	nodes, inits, inputs, outputs []msg
	x, y, z                       []float32
	valid                         bool
}

func newSliceChain(i int, shape []int64, pre bool, cases [2]sliceCase) *sliceChain {
	ch := &sliceChain{valid: true}
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i) - 7.5
	}
	edges := []float32{float32(math.Copysign(0, -1)), math.Float32frombits(1), 3e38, -3e38, 0.1}
	for i, v := range edges {
		if i < n {
			x[(i*7+3)%n] = v
		}
	}
	x[n-1] = math.Float32frombits(0x807fffff) // the buffer's last element: a subnormal
	ch.x = x
	// The expected values: numpy's slicing of x (times 1.5 when pre), by
	// index lists per axis.
	cur := slices.Clone(shape)
	pick := [][]int{}
	for d := range shape {
		all := make([]int, shape[d])
		for i := range all {
			all[i] = i
		}
		pick = append(pick, all)
	}
	for _, c := range cases {
		seen := map[int]bool{}
		for k, a := range c.axes {
			ax := int(a)
			if ax < 0 {
				ax += len(shape)
			}
			st := int64(1)
			if c.step != nil {
				st = c.step[k]
			}
			if ax < 0 || ax >= len(shape) || seen[ax] || st == 0 {
				ch.valid = false
				break
			}
			seen[ax] = true
			idx := numpySlice(c.starts[k], c.ends[k], st, cur[ax])
			next := make([]int, len(idx))
			for j, i := range idx {
				next[j] = pick[ax][i]
			}
			pick[ax], cur[ax] = next, int64(len(idx))
		}
	}
	for _, d := range cur {
		ch.valid = ch.valid && d > 0
	}
	name := func(s string) string { return fmt.Sprintf("%s%d", s, i) }
	src := name("x")
	if pre {
		ch.inits = append(ch.inits, floats(name("k"), nil, 1.5))
		ch.nodes = append(ch.nodes, node("Mul", name("pre"), []string{src, name("k")}, []string{name("xk")}))
		src = name("xk")
	}
	for s, c := range cases {
		out := name(fmt.Sprintf("y%d_", s))
		if s == len(cases)-1 {
			out = name("y")
		}
		ins := []string{src, out + "st", out + "en", out + "ax"}
		k := int64(len(c.axes))
		ch.inits = append(ch.inits, int64s(ins[1], []int64{k}, c.starts...), int64s(ins[2], []int64{k}, c.ends...), int64s(ins[3], []int64{k}, c.axes...))
		if c.step != nil {
			ins = append(ins, out+"sp")
			ch.inits = append(ch.inits, int64s(ins[4], []int64{k}, c.step...))
		}
		ch.nodes = append(ch.nodes, node("Slice", out, ins, []string{out}))
		src = out
	}
	ch.nodes = append(ch.nodes, node("Mul", name("sq"), []string{name("y"), name("y")}, []string{name("z")}))
	ch.inputs = []msg{valueInfo(name("x"), shape...)}
	ch.outputs = []msg{valueInfo(name("y"), cur...), valueInfo(name("z"), cur...)}
	if !ch.valid {
		return ch
	}
	strides := make([]int, len(shape))
	for d, s := len(shape)-1, 1; d >= 0; d-- {
		strides[d], s = s, s*int(shape[d])
	}
	var walk func(d, off int)
	walk = func(d, off int) {
		if d == len(shape) {
			v := x[off]
			if pre {
				v *= 1.5
			}
			ch.y, ch.z = append(ch.y, v), append(ch.z, v*v)
			return
		}
		for _, i := range pick[d] {
			walk(d+1, off+i*strides[d])
		}
	}
	walk(0, 0)
	return ch
}

// sameBits fails t unless got is want, bit for bit.
func sameSliceBits(t *testing.T, what string, want, got []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, numpy's %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("%s[%d] = %v, numpy's %v", what, i, got[i], want[i])
		}
	}
}

// checkSliceViews builds and checks one FuzzSliceViews case, and says
// whether it imported.
func checkSliceViews(t *testing.T, shape []int64, pre bool, cases [2]sliceCase) bool {
	t.Helper()
	ch := newSliceChain(0, shape, pre, cases)
	m := model(13, graph(ch.nodes, ch.inits, ch.inputs, ch.outputs))
	g, err := onnx.Load(bytes.NewReader(m), onnx.Options{Limits: ir.Limits{NonFinite: true}})
	if !ch.valid {
		if err == nil {
			t.Fatalf("shape %v, slices %+v: imported; numpy's result is empty or the slice invalid", shape, cases)
		}
		var e *ir.Error
		if !errors.As(err, &e) || e.Code == ir.CodeInternal {
			t.Fatalf("shape %v, slices %+v: %v, want a user code", shape, cases, err)
		}
		return false
	}
	if err != nil {
		t.Fatalf("shape %v, slices %+v: %v", shape, cases, err)
	}
	if err := g.SetInputWith("x0", ch.x, ir.Limits{NonFinite: true}); err != nil {
		t.Fatal(err)
	}
	what := fmt.Sprintf("shape %v, pre %v, slices %+v", shape, pre, cases)
	vals := cpuref.Eval(g)
	sameSliceBits(t, "cpuref.Eval: y of "+what, ch.y, vals[g.Outputs[0].ID])
	sameSliceBits(t, "cpuref.Eval: z of "+what, ch.z, vals[g.Outputs[1].ID])
	pr, _, err := passes.Compile(g, passes.Options{CheckEach: true})
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, g)
	}
	got := cpuref.RunProgram(pr.Program())
	sameSliceBits(t, "the compiled program: y of "+what, ch.y, got["y0"])
	sameSliceBits(t, "the compiled program: z of "+what, ch.z, got["z0"])
	return true
}

// TestSliceViewsBackends: 48 of FuzzSliceViews' imported cases, as one
// model of 48 inputs and 96 outputs (views of views of the inputs and of
// elementwise results at offsets up to the buffer's last element), give
// numpy's bits on every backend: the kernels' reads of operand offsets
// and strides, not only the program's meaning.
func TestSliceViewsBackends(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	var chains []*sliceChain
	var nodes, inits, inputs, outputs []msg
	for len(chains) < 48 {
		b := make([]byte, 48)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		shape, pre, cases := sliceViewCase(&fuzzParams{b})
		ch := newSliceChain(len(chains), shape, pre, cases)
		if !ch.valid {
			continue
		}
		chains = append(chains, ch)
		nodes, inits = append(nodes, ch.nodes...), append(inits, ch.inits...)
		inputs, outputs = append(inputs, ch.inputs...), append(outputs, ch.outputs...)
	}
	limits := ir.Limits{NonFinite: true, MaxOutputs: 2 * len(chains)}
	g, err := onnx.Load(bytes.NewReader(model(13, graph(nodes, inits, inputs, outputs))), onnx.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range chains {
		if err := g.SetInputWith(fmt.Sprintf("x%d", i), ch.x, limits); err != nil {
			t.Fatal(err)
		}
	}
	pr, _, err := passes.Compile(g, passes.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	offsets := 0
	for _, k := range pr.Program().Kernels {
		for _, in := range k.Inputs {
			if in.Offset > 0 {
				offsets++
			}
		}
	}
	t.Logf("%d kernels, %d of their operands at an offset", len(pr.Program().Kernels), offsets)
	if offsets < 12 { // 16 on 2026-12-05
		t.Errorf("%d operands at an offset: the cases do not reach the views", offsets)
	}
	ctx := context.Background()
	for _, be := range []string{"cpu", "native", "wasm", "webgpu"} {
		t.Run(be, func(t *testing.T) {
			rt, err := gpucc.Open(ctx, gpucc.Options{Backend: be, AllowSoftware: true, Limits: limits})
			if err != nil {
				if os.Getenv("GPUCC_REQUIRE_"+strings.ToUpper(be)) != "" {
					t.Fatal(err)
				}
				t.Skipf("%s: %v", be, err)
			}
			defer rt.Close()
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			res, err := exe.Run(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, ch := range chains {
				sameSliceBits(t, fmt.Sprintf("%s: y%d", be, i), ch.y, res.Outputs[fmt.Sprintf("y%d", i)].Data)
				sameSliceBits(t, fmt.Sprintf("%s: z%d", be, i), ch.z, res.Outputs[fmt.Sprintf("z%d", i)].Data)
			}
		})
	}
}

// TestSliceBackwardFromBelow: a backward Slice whose start is below -d
// starts at 0, as ONNX's spec (Slice-13: a start clamped to [0, d-1]
// stepping backward) and ONNX Runtime say, of a run-time input, of an
// elementwise result and of a constant: gpucc clamped it to -1, numpy's
// way, and refused the empty slice that gave.
func TestSliceBackwardFromBelow(t *testing.T) {
	for _, pre := range []bool{false, true} {
		for _, c := range []struct {
			shape []int64
			cases [2]sliceCase
		}{
			{[]int64{3}, [2]sliceCase{{axes: []int64{0}, starts: []int64{-7}, ends: []int64{math.MinInt64}, step: []int64{-1}}}},
			{[]int64{4, 3}, [2]sliceCase{{axes: []int64{-1}, starts: []int64{-100}, ends: []int64{-100}, step: []int64{-2}}, {axes: []int64{0}, starts: []int64{math.MinInt64}, ends: []int64{-5}, step: []int64{math.MinInt64}}}},
		} {
			if !checkSliceViews(t, c.shape, pre, c.cases) {
				t.Errorf("shape %v, slices %+v: refused", c.shape, c.cases)
			}
		}
	}
	// Of a constant: [10, 20, 30][-7::-1] is [10].
	m := model(13, graph([]msg{node("Slice", "s", []string{"c", "st", "en", "ax", "sp"}, []string{"y"})},
		[]msg{floats("c", []int64{3}, 10, 20, 30), int64s("st", []int64{1}, -7), int64s("en", []int64{1}, math.MinInt64), int64s("ax", []int64{1}, 0), int64s("sp", []int64{1}, -1)},
		nil, []msg{valueInfo("y", 1)}))
	g, err := onnx.Load(bytes.NewReader(m), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if y := cpuref.Eval(g)[g.Outputs[0].ID]; !slices.Equal(y, []float32{10}) {
		t.Errorf("a constant's [-7::-1]: %v, want [10]", y)
	}
}
