package ir

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Encode writes g as protocol v1 JSON, always a valid JSON document.
// Numbers are written in the shortest form that parses back to the same
// float32, so Decode(Encode(g)) == g for a graph of finite values. JSON has
// no NaN or Inf: a graph built in Go with non-finite values (Limits.
// NonFinite set) has each written as the string "NaN", "Infinity" or
// "-Infinity", the spelling of a result's JSON (docs/protocol.md), which
// Decode reads back under Limits.NonFinite only (every NaN as the quiet
// NaN 0x7fc00000, the one NaN gpucc returns) and refuses under the finite
// policy, the seed's rule for guest graphs (invalid_graph): such a graph
// round-trips where the host admits non-finite values and is refused
// elsewhere, never read as another value (TestEncodeNonFinite). Before
// 2026-12-05 it wrote bare NaN, +Inf and -Inf, which is not JSON. A
// dtype protocol v1 does not have (float64, int16, uint16, uint64) is
// written with its values as they are, float64's as decimals (not the
// bits it is carried in), and Decode refuses the dtype (unsupported).
// Broadcast and reshape nodes are written as the gpucc extension ops
// "broadcast" and "reshape" (with "a" and "shape"), which Decode reads; a
// reduction over axes as "axes" with "keepdims": true; every attribute
// (see AttrSpec) as its key, defaults included.
func Encode(g *Graph) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":1,"nodes":[`)
	for i, n := range g.Nodes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":`)
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`,"op":"`)
		b.WriteString(n.Op.Info().Wire)
		b.WriteByte('"')
		if n.Name != "" {
			b.WriteString(`,"name":`)
			b.WriteString(quote(n.Name))
		}
		if n.Param {
			b.WriteString(`,"param":true`)
		}
		if n.DType != F32 { // before data and value, which it types
			b.WriteString(`,"dtype":"` + n.DType.String() + `"`)
		}
		if n.Op.Info().Combine != 0 {
			writeAxes(&b, n.Shape)
		} else if n.Op.Info().Shaped {
			b.WriteString(`,"shape":[`)
			for k, d := range n.Shape {
				if k > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Itoa(d))
			}
			b.WriteByte(']')
		}
		for k, a := range n.Args {
			b.WriteString(`,"` + argField(k) + `":`)
			b.WriteString(strconv.Itoa(int(a)))
		}
		writeAttrs(&b, n.Op, n.Attrs)
		switch {
		case n.Op == OpFull && !n.DType.IsFloat():
			b.WriteString(`,"value":`)
			b.WriteString(formatInt(n.DType, n.Ints[0]))
		case n.Op == OpInput && !n.DType.IsFloat():
			b.WriteString(`,"data":[`)
			for k, v := range n.Ints {
				if k > 0 {
					b.WriteByte(',')
				}
				b.WriteString(formatInt(n.DType, v))
			}
			b.WriteByte(']')
		case n.Op == OpFull:
			b.WriteString(`,"value":`)
			b.WriteString(wireFloat(n.Scalar))
		case n.Op.Info().Scalar:
			b.WriteString(`,"scalar":`)
			b.WriteString(wireFloat(n.Scalar))
		case n.Op == OpInput:
			b.WriteString(`,"data":[`)
			for k, v := range n.Data {
				if k > 0 {
					b.WriteByte(',')
				}
				b.WriteString(wireFloat(v))
			}
			b.WriteByte(']')
		}
		b.WriteByte('}')
	}
	b.WriteString(`],"outputs":[`)
	for k, o := range g.Outputs {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":`)
		b.WriteString(quote(o.Name))
		b.WriteString(`,"id":`)
		b.WriteString(strconv.Itoa(int(o.ID)))
		b.WriteByte('}')
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// writeAxes writes a reduction's target as the wire's axes: none for the
// whole-tensor target [], else the axes where the target is 1, with
// keepdims (the IR form; Decode then gives the same target back).
func writeAxes(b *bytes.Buffer, target Shape) {
	if len(target) == 0 {
		return
	}
	b.WriteString(`,"axes":[`)
	sep := ""
	for d, n := range target {
		if n == 1 {
			b.WriteString(sep + strconv.Itoa(d))
			sep = ","
		}
	}
	b.WriteString(`],"keepdims":true`)
}

// formatInt formats an integer or bool dtype's value: an integer, or true
// and false; float64's, carried as its bits, as its value (wireFloat64).
func formatInt(t DType, v int64) string {
	switch {
	case t == Bool:
		return strconv.FormatBool(v != 0)
	case t.IsFloat64():
		return wireFloat64(F64Value(v))
	}
	return strconv.FormatInt(v, 10)
}

// The strings that spell a non-finite value in protocol v1 JSON, as in a
// result's JSON: JSON numbers cannot.
const (
	wireNaN    = `"NaN"`
	wireInf    = `"Infinity"`
	wireNegInf = `"-Infinity"`
)

// wireFloat is v as a protocol v1 value: FormatFloat's number, or the
// string that spells a non-finite value.
func wireFloat(v float32) string {
	switch {
	case v != v:
		return wireNaN
	case math.IsInf(float64(v), 1):
		return wireInf
	case math.IsInf(float64(v), -1):
		return wireNegInf
	}
	return FormatFloat(v)
}

// wireFloat64 is wireFloat of a float64 value.
func wireFloat64(v float64) string {
	switch {
	case v != v:
		return wireNaN
	case math.IsInf(v, 1):
		return wireInf
	case math.IsInf(v, -1):
		return wireNegInf
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// nonFiniteWire is the value a protocol v1 string spells (raw, quoted as
// read), if it spells one.
func nonFiniteWire(raw []byte) (float32, bool) {
	switch string(raw) {
	case wireNaN:
		return float32(math.NaN()), true
	case wireInf:
		return float32(math.Inf(1)), true
	case wireNegInf:
		return float32(math.Inf(-1)), true
	}
	return 0, false
}

// FormatFloat formats v as the shortest decimal that parses back to v as a
// float32. Negative zero keeps its sign.
func FormatFloat(v float32) string {
	return strconv.FormatFloat(float64(v), 'g', -1, 32)
}

// quote returns s as a JSON string (strconv.Quote's \x escapes are not JSON).
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
