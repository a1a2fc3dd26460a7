package onnx_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"runtime"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// bytesModel is a MatMul by a 256×256 float32 initializer, its weights
// 256 KiB of the model's bytes: ±0, a subnormal, ±3e38 and a pattern.
func bytesModel() []byte {
	w := make([]float32, 256*256)
	for i := range w {
		w[i] = float32(i%97) - 48
	}
	w[0], w[1], w[2], w[3], w[4] = 0, float32(negZero()), 1e-45, 3e38, -3e38
	return model(13, graph([]msg{node("MatMul", "", []string{"x", "w"}, []string{"y"})},
		[]msg{floats("w", []int64{256, 256}, w...)},
		[]msg{valueInfo("x", 1, 256)}, []msg{valueInfo("y", 1, 256)}))
}

func negZero() float64 { return -1 / inf() }

// TestBytesInPlace: a model read through onnx.Bytes imports as through a
// bytes.Reader, graph for graph (its constants' bits in ir.Encode), without
// allocating a copy of its bytes; a Parse of it specializes alike; one
// over MaxGraphBytes is limit_exceeded as before, and a reader already
// read from gives what is left, as a read to its end would.
func TestBytesInPlace(t *testing.T) {
	raw := bytesModel()
	lim := ir.Limits{NonFinite: true}
	load := func(r io.Reader) (*ir.Graph, uint64) {
		t.Helper()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		g, err := onnx.Load(r, onnx.Options{Limits: lim})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		return g, after.TotalAlloc - before.TotalAlloc
	}
	want, copied := load(bytes.NewReader(raw))
	got, inPlace := load(onnx.Bytes(raw))
	if !bytes.Equal(ir.Encode(got), ir.Encode(want)) {
		t.Fatal("the graph imported through onnx.Bytes differs from the one through bytes.Reader")
	}
	t.Logf("a %d-byte model: Load allocated %d bytes through bytes.Reader, %d through onnx.Bytes", len(raw), copied, inPlace)
	if inPlace+uint64(len(raw)) > copied+uint64(len(raw))/8 {
		t.Errorf("Load of onnx.Bytes allocated %d bytes, bytes.Reader's %d: want the %d-byte copy saved", inPlace, copied, len(raw))
	}
	if _, err := onnx.Load(onnx.Bytes(raw), onnx.Options{Limits: ir.Limits{NonFinite: true, MaxGraphBytes: int64(len(raw) - 1)}}); !errors.Is(err, ir.ErrLimitExceeded) {
		t.Errorf("a model one byte over MaxGraphBytes through onnx.Bytes: %v, want limit_exceeded", err)
	}
	if _, err := onnx.Load(onnx.Bytes(raw), onnx.Options{Limits: ir.Limits{NonFinite: true, MaxGraphBytes: int64(len(raw))}}); err != nil {
		t.Errorf("a model of exactly MaxGraphBytes through onnx.Bytes: %v", err)
	}
	if _, err := onnx.Load(onnx.Bytes(nil), onnx.Options{Limits: lim}); err == nil {
		t.Error("an empty model through onnx.Bytes imported")
	}
	// A reader read from first: what is left, here the model after a
	// prefix the caller consumed.
	r := onnx.Bytes(append([]byte("HEAD"), raw...))
	if _, err := io.ReadFull(r, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if g, _ := load(r); !bytes.Equal(ir.Encode(g), ir.Encode(want)) {
		t.Error("a model after a 4-byte prefix read through onnx.Bytes differs")
	}
	m, err := onnx.Parse(onnx.Bytes(raw), onnx.Options{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Specialize(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ir.Encode(g), ir.Encode(want)) {
		t.Error("Parse of onnx.Bytes then Specialize differs from Load")
	}
}

// TestRawFloat32Bits: float32 raw_data reads bit for bit, whatever the
// bits: ±0, the smallest and largest subnormals, ±3e38, the largest
// float32, ±Inf, quiet and signalling NaNs with payloads, and a sweep;
// an empty tensor reads empty, and raw_data one byte short or long of
// its dimensions is invalid_graph.
func TestRawFloat32Bits(t *testing.T) {
	bits := []uint32{0, 0x80000000, 1, 0x807fffff, 0x007fffff, 0x7e61bcca, 0xfe61bcca, 0x7f7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fc00001, 0xff800001, 0x7f800001, 0x3f800000}
	for v := uint32(12345); len(bits) < 4099; v = v*2654435761 + 1 {
		bits = append(bits, v)
	}
	vs := make([]float32, len(bits))
	for i, b := range bits {
		vs[i] = math.Float32frombits(b)
	}
	for _, n := range []int{0, 1, 7, len(bits)} {
		tn, err := onnx.ReadTensor(onnx.Bytes(floats("t", []int64{int64(n)}, vs[:n]...)), ir.Limits{NonFinite: true})
		if err != nil {
			t.Fatalf("%d elements: %v", n, err)
		}
		if len(tn.Float32) != n {
			t.Fatalf("%d elements read as %d", n, len(tn.Float32))
		}
		for i, x := range tn.Float32 {
			if math.Float32bits(x) != bits[i] {
				t.Fatalf("%d elements: element %d is %#08x, want %#08x", n, i, math.Float32bits(x), bits[i])
			}
		}
	}
	raw := make([]byte, 4*7)
	for _, r := range [][]byte{raw[:4*7-1], append(raw, 0)} {
		m := msg(nil).varint(1, 7).varint(2, 1).str(8, "t").bytes(9, r)
		if _, err := onnx.ReadTensor(onnx.Bytes(m), ir.Limits{}); !errors.Is(err, ir.ErrInvalidGraph) {
			t.Errorf("7 float32 elements in %d bytes of raw_data: %v, want invalid_graph", len(r), err)
		}
	}
}
