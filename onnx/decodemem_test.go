package onnx_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"google.golang.org/protobuf/encoding/protowire"
)

// floods are models of about size bytes made of one repeated field
// each: issue 30's amplification table (a 16 MB model of empty node
// attributes peaked at 4.96 GB, 310× its size).
func floods(size int) map[string][]byte {
	rep := func(n int, m msg) []msg {
		out := make([]msg, n)
		for i := range out {
			out[i] = m
		}
		return out
	}
	count := func(each int) int { return size / each }
	relu := func(attrs ...msg) msg { return node("Relu", "", []string{"x"}, []string{"y"}, attrs...) }
	var ints []byte
	for range size {
		ints = protowire.AppendVarint(ints, 1)
	}
	floatsList := make([]byte, size)
	nodeWith := func(m msg) []byte { // one node holding m as raw fields
		return model(13, graph([]msg{append(relu(), m...)}, nil, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)}))
	}
	var attrs, inputs, strs msg
	for range count(2) {
		attrs = attrs.bytes(5, nil) // an empty AttributeProto
	}
	for range count(3) {
		inputs = inputs.str(1, "x") // node inputs
	}
	for range count(3) {
		strs = strs.str(9, "s") // attribute strings
	}
	dims := msg(nil)
	for range count(2) {
		dims = dims.varint(1, 1) // tensor dims, unpacked
	}
	vdims := msg(nil)
	for range count(4) {
		vdims = vdims.bytes(1, msg(nil).varint(1, 1))
	}
	return map[string][]byte{
		"empty attributes": nodeWith(attrs),
		"node inputs":      nodeWith(inputs),
		"attribute strings": model(13, graph([]msg{relu(append(msg(nil).str(1, "a").varint(20, 8), strs...))}, nil,
			[]msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)})),
		"attribute ints":     model(13, graph([]msg{relu(msg(nil).str(1, "a").varint(20, 7).bytes(8, ints))}, nil, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)})),
		"attribute floats":   model(13, graph([]msg{relu(msg(nil).str(1, "a").varint(20, 6).bytes(7, floatsList))}, nil, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)})),
		"empty nodes":        model(13, graph(rep(count(2), nil), nil, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)})),
		"relu nodes":         model(13, graph(rep(count(14), relu()), nil, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)})),
		"tensor dims":        model(13, graph([]msg{relu()}, []msg{append(dims, msg(nil).varint(2, 1).str(8, "t")...)}, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)})),
		"empty initializers": model(13, graph([]msg{relu()}, rep(count(2), nil), []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)})),
		"empty inputs":       model(13, graph([]msg{relu()}, nil, append(rep(count(2), nil), valueInfo("x", 2)), []msg{valueInfo("y", 2)})),
		"value dims":         model(13, graph([]msg{relu()}, nil, []msg{msg(nil).str(1, "x").bytes(2, msg(nil).bytes(1, msg(nil).varint(1, 1).bytes(2, vdims)))}, []msg{valueInfo("y", 2)})),
	}
}

// TestDecodeMemory loads floods of 1, 4 and 16 MB (16 only without
// -short) of each repeated field with limits that let them through
// decoding, and checks that Load allocates at most 8 bytes a byte of
// model plus 3 MiB: whatever the model, it is refused or imported
// within that (TotalAlloc, which bounds the peak).
func TestDecodeMemory(t *testing.T) {
	sizes := []int{1 << 20, 4 << 20, 16 << 20}
	if testing.Short() {
		sizes = sizes[:2]
	}
	l := ir.Limits{MaxNodes: 1 << 30, MaxGraphBytes: 64 << 20, MaxOutputs: 1 << 30, MaxAttrValues: 1 << 30}
	for _, size := range sizes {
		for name, doc := range floods(size) {
			t.Run(fmt.Sprintf("%s/%dMB", name, size>>20), func(t *testing.T) {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				_, err := onnx.Load(bytes.NewReader(doc), onnx.Options{Limits: l})
				runtime.ReadMemStats(&after)
				alloc := after.TotalAlloc - before.TotalAlloc
				ratio := float64(alloc) / float64(len(doc))
				t.Logf("%d bytes: %d allocated (%.2f×): %v", len(doc), alloc, ratio, err)
				if alloc > 8*uint64(len(doc))+3<<20 {
					t.Errorf("%d bytes of model allocated %d (%.1f×)", len(doc), alloc, ratio)
				}
			})
		}
	}
}

// TestDecodeMemoryFile: a model read from a file (as gpucc run and import
// read one) is read in one allocation of its size, so Load allocates the
// model once and its decoded structures within their budget: at most
// DecodeBytesPerByte+1 bytes a byte of model, plus 3 MiB. A doubling
// series of reads allocated 3× the model more (8.0× for 16 MB of packed
// floats).
func TestDecodeMemoryFile(t *testing.T) {
	l := ir.Limits{MaxNodes: 1 << 30, MaxGraphBytes: 64 << 20, MaxOutputs: 1 << 30, MaxAttrValues: 1 << 30}
	size := 16 << 20
	if testing.Short() {
		size = 4 << 20
	}
	for name, doc := range floods(size) {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "flood.onnx")
			if err := os.WriteFile(path, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err = onnx.Load(f, onnx.Options{Limits: l})
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			ratio := float64(alloc) / float64(len(doc))
			t.Logf("%d bytes from a file: %d allocated (%.2f×): %v", len(doc), alloc, ratio, err)
			if alloc > (onnx.DecodeBytesPerByte+1)*uint64(len(doc))+3<<20 {
				t.Errorf("%d bytes of model read from a file allocated %d (%.1f×), over %d× and 3 MiB", len(doc), alloc, ratio, onnx.DecodeBytesPerByte+1)
			}
		})
	}
}
