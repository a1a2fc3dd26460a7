package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// gobUint is encoding/gob's unsigned integer.
func gobUint(u uint64) []byte {
	if u < 128 {
		return []byte{byte(u)}
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], u)
	i := 0
	for b[i] == 0 {
		i++
	}
	return append([]byte{byte(-(8 - i))}, b[i:]...)
}

// craftedRequest is a BuildRequest's type definitions, as Encode sends
// them, then a value message of the request's type id holding body.
func craftedRequest(t *testing.T, body []byte) []byte {
	b, err := BuildRequest{Program: &ir.Program{}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// The last message is the value: its count, then the type id (64:
	// ff 80, the first user type) and the request.
	var last int
	for at := 0; at < len(b); {
		last = at
		n, w := uint64(b[at]), 1
		if n > 0x7f {
			w = 1 + -int(int8(b[at]))
			n = 0
			for _, c := range b[at+1 : at+w] {
				n = n<<8 | uint64(c)
			}
		}
		at += w + int(n)
	}
	msg := append([]byte{0xff, 0x80}, body...)
	return append(append(b[:last:last], gobUint(uint64(len(msg)))...), msg...)
}

// TestServeBuildHostile: requests that encoding/gob alone would let end
// the server or allocate hundreds of times their size are refused
// invalid_graph before decoding, with little allocated. Without
// gobcheck, the first (10 MB, kernel Parts nested 2^21 deep) ended the
// test binary with "fatal error: stack overflow" (1 GB of stack), and the
// second (2^20 empty kernels, 1 MB) allocated 368 MiB.
func TestServeBuildHostile(t *testing.T) {
	ctx := context.Background()
	// Field deltas: request.Program (1), program.Kernels (2), a kernel's
	// Tile (12, always sent) and Parts (+5 from Tile).
	deep := &bytes.Buffer{}
	const depth = 1 << 21
	deep.Write([]byte{0x01, 0x02, 0x01})
	for range depth {
		deep.Write([]byte{0x0c, 0x00, 0x05, 0x01})
	}
	deep.Write([]byte{0x0c, 0x00, 0x00})
	deep.Write(make([]byte, depth+2))
	empty := &bytes.Buffer{}
	const kernels = 1 << 20
	empty.Write([]byte{0x01, 0x02})
	empty.Write(gobUint(kernels))
	empty.Write(make([]byte, kernels+2))
	for _, tt := range []struct {
		name string
		body []byte
		want string
	}{
		{"nested parts", deep.Bytes(), "nested more than"},
		{"empty kernels", empty.Bytes(), "would allocate more than"},
	} {
		req := craftedRequest(t, tt.body)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ServeBuild(ctx, bytes.NewReader(req), ir.Limits{})
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ir.ErrInvalidGraph) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want invalid_graph saying %q", tt.name, err, tt.want)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 4*uint64(len(req))+(16<<20) {
			t.Errorf("%s: a request of %d bytes allocated %d", tt.name, len(req), got)
		}
	}
}

// foreignRequest is BuildRequest as another sender defines it: with a
// field the server's type lacks, whose own type nests (gob skips such a
// field, recursing once a level however deep it goes).
type foreignRequest struct {
	Program *ir.Program
	Extra   *foreignNest
}

type foreignNest struct {
	Next *foreignNest
	X    int
}

// TestServeBuildForeignTypes: a request whose sender's types are not
// BuildRequest's field for field is refused before decoding (invalid_graph),
// so the decoder never skips a field; a request over MaxBuildRequest is
// limit_exceeded.
func TestServeBuildForeignTypes(t *testing.T) {
	nest := &foreignNest{X: 1}
	for range 64 {
		nest = &foreignNest{Next: nest, X: 1}
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(foreignRequest{Program: &ir.Program{}, Extra: nest}); err != nil {
		t.Fatal(err)
	}
	_, err := ServeBuild(context.Background(), bytes.NewReader(b.Bytes()), ir.Limits{})
	if !errors.Is(err, ir.ErrInvalidGraph) || !strings.Contains(err.Error(), "field for field") {
		t.Errorf("a foreign type: %v, want invalid_graph before decoding", err)
	}
	_, err = ServeBuild(context.Background(), bytes.NewReader(make([]byte, MaxBuildRequest+1)), ir.Limits{})
	if !errors.Is(err, ir.ErrLimitExceeded) {
		t.Errorf("a request of %d bytes: %v, want limit_exceeded", MaxBuildRequest+1, err)
	}
}

// FuzzBuildRequest: whatever bytes a page's module request holds,
// decoding it (gobcheck, then gob) and generating its C (the -0 paths, the
// program's seal or the graph's validation, the emitter) answer an error
// with a code or the C, never a panic nor a fatal error: the server's path
// up to Clang. Seeds: a program (matmul, bias, relu, a sum, a -0 scalar)
// and a typed graph.
func FuzzBuildRequest(f *testing.F) {
	bl := ir.NewBuilder()
	a := bl.Input(ir.Shape{4, 6}, make([]float32, 24))
	b := bl.Input(ir.Shape{6, 5}, make([]float32, 30))
	s := a.MatMul(b).Relu()
	bl.Output("s", s)
	bl.Output("t", s.Sum())
	bl.Output("m", s.MinimumScalar(float32(math.Copysign(0, -1))))
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		f.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Options{})
	if err != nil {
		f.Fatal(err)
	}
	for _, req := range []BuildRequest{{Program: p.WithoutData().Program()}, {Graph: irtest.Typed()[0].Graph, SIMD: true}} {
		enc, err := req.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeBuildRequest(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ir.ErrInvalidGraph) && !errors.Is(err, ir.ErrLimitExceeded) {
				t.Fatalf("decoding: %v, want invalid_graph", err)
			}
			return
		}
		if _, err := buildSource(req, ir.Limits{}); err != nil && errors.Is(err, ir.ErrInternal) && strings.Contains(err.Error(), "panicked") {
			t.Fatal(err)
		}
	})
}
