package ir_test

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// graphFromBytes builds an arbitrary, usually invalid, graph from b: each
// node takes an op, two argument references, a rank, dimensions, a scalar
// and a name choice; the last bytes pick outputs. Validate must judge every
// such graph without panicking.
func graphFromBytes(b []byte) *ir.Graph {
	g := &ir.Graph{}
	next := func() byte {
		if len(b) == 0 {
			return 0
		}
		c := b[0]
		b = b[1:]
		return c
	}
	for len(b) > 8 && len(g.Nodes) < 40 {
		op := ir.Op(int(next()) % (len(ir.Ops()) + 3)) // every op, and beyond the table
		n := ir.Node{Op: op}
		for k := range int(next() % 3) {
			n.Args = append(n.Args, ir.NodeID(int8(next()))-ir.NodeID(k))
		}
		rank := int(next() % 10)
		for range rank {
			n.Shape = append(n.Shape, int(int8(next())))
		}
		var s [4]byte
		for k := range s {
			s[k] = next()
		}
		n.Scalar = math.Float32frombits(binary.LittleEndian.Uint32(s[:]))
		switch c := next(); {
		case c%7 == 1:
			n.Name = "x"
		case c%7 == 2:
			n.Name, n.Param = "p", true
		case c%7 == 3:
			n.Param = true
		}
		if op == ir.OpInput || next()%5 == 0 {
			n.Data = make([]float32, max(0, ir.Shape(n.Shape).Elements(64)))
			for k := range n.Data {
				n.Data[k] = float32(int8(next())) / 4
			}
		}
		g.Nodes = append(g.Nodes, n)
	}
	for _, c := range b {
		g.Outputs = append(g.Outputs, ir.Output{Name: string(rune('a' + c%5)), ID: ir.NodeID(int8(c))})
	}
	return g
}

// FuzzValidate feeds arbitrary Go-built graphs to Validate: it must never
// panic, every error has a code, and a graph it accepts survives Encode and
// Decode unchanged.
func FuzzValidate(f *testing.F) {
	for _, c := range irtest.Suite()[:6] {
		f.Add(ir.Encode(c.Graph)) // not the format graphFromBytes reads: just varied bytes
	}
	f.Add([]byte{1, 0, 1, 3, 0, 0, 128, 63, 0, 0, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		g := graphFromBytes(b)
		limits := ir.Limits{MaxElements: 64, MaxStorageBytes: 4096, MaxOps: 1 << 16}
		err := ir.Validate(g, limits)
		if err != nil {
			var e *ir.Error
			if !errors.As(err, &e) || e.Code == "" || e.Code == ir.CodeInternal {
				t.Fatalf("error without a user code: %v", err)
			}
			return
		}
		back, err := ir.DecodeBytes(ir.Encode(g), limits)
		if err != nil {
			t.Fatalf("a valid graph does not decode from its encoding: %v\n%s", err, g)
		}
		if back.String() != g.String() {
			t.Fatalf("round trip changed the graph:\n%s\nbecame\n%s", g, back)
		}
	})
}
