package onnx_test

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// A small ONNX writer for the tests: messages built field by field with
// protowire against onnx.proto's field numbers, as Load reads them.

type msg []byte

func (m msg) bytes(num protowire.Number, v []byte) msg {
	m = protowire.AppendTag(m, num, protowire.BytesType)
	return protowire.AppendBytes(m, v)
}

func (m msg) str(num protowire.Number, s string) msg { return m.bytes(num, []byte(s)) }

func (m msg) varint(num protowire.Number, v int64) msg {
	m = protowire.AppendTag(m, num, protowire.VarintType)
	return protowire.AppendVarint(m, uint64(v))
}

func (m msg) fixed32(num protowire.Number, v float32) msg {
	m = protowire.AppendTag(m, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(m, math.Float32bits(v))
}

// model returns a ModelProto of graph with the default-domain opset.
func model(opset int64, graph msg) []byte {
	op := msg(nil).varint(2, opset)
	return msg(nil).varint(1, 8).bytes(8, op).bytes(7, graph)
}

// graph returns a GraphProto.
func graph(nodes []msg, inits []msg, inputs []msg, outputs []msg) msg {
	var g msg
	for _, n := range nodes {
		g = g.bytes(1, n)
	}
	g = g.str(2, "test")
	for _, t := range inits {
		g = g.bytes(5, t)
	}
	for _, v := range inputs {
		g = g.bytes(11, v)
	}
	for _, v := range outputs {
		g = g.bytes(12, v)
	}
	return g
}

// node returns a NodeProto.
func node(op, name string, inputs, outputs []string, attrs ...msg) msg {
	var n msg
	for _, s := range inputs {
		n = n.str(1, s)
	}
	for _, s := range outputs {
		n = n.str(2, s)
	}
	n = n.str(3, name).str(4, op)
	for _, a := range attrs {
		n = n.bytes(5, a)
	}
	return n
}

func attrInt(name string, v int64) msg {
	return msg(nil).str(1, name).varint(20, 2).varint(3, v)
}

func attrFloat(name string, v float32) msg {
	return msg(nil).str(1, name).varint(20, 1).fixed32(2, v)
}

func attrInts(name string, vs ...int64) msg {
	var packed []byte
	for _, v := range vs {
		packed = protowire.AppendVarint(packed, uint64(v))
	}
	return msg(nil).str(1, name).varint(20, 7).bytes(8, packed)
}

// floats returns a float32 TensorProto in raw_data.
func floats(name string, dims []int64, vs ...float32) msg {
	t := msg(nil)
	for _, d := range dims {
		t = t.varint(1, d)
	}
	raw := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return t.varint(2, 1).str(8, name).bytes(9, raw)
}

// int64s returns an int64 TensorProto in int64_data (packed).
func int64s(name string, dims []int64, vs ...int64) msg {
	t := msg(nil)
	for _, d := range dims {
		t = t.varint(1, d)
	}
	var packed []byte
	for _, v := range vs {
		packed = protowire.AppendVarint(packed, uint64(v))
	}
	return t.varint(2, 7).str(8, name).bytes(7, packed)
}

// valueInfo returns a ValueInfoProto of a float32 tensor; a dimension
// of -1 is the dynamic "N".
func valueInfo(name string, dims ...int64) msg {
	var shape msg
	for _, d := range dims {
		dim := msg(nil).varint(1, d)
		if d < 0 {
			dim = msg(nil).str(2, "N")
		}
		shape = shape.bytes(1, dim)
	}
	tt := msg(nil).varint(1, 1).bytes(2, shape)
	return msg(nil).str(1, name).bytes(2, msg(nil).bytes(1, tt))
}

func mathBits(v float32) uint32 { return math.Float32bits(v) }

func inf() float64 { return math.Inf(1) }

func attrStr(name, v string) msg {
	return msg(nil).str(1, name).varint(20, 3).str(4, v)
}
