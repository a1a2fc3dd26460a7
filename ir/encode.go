package ir

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Encode writes g as protocol v1 JSON. Numbers are written in the shortest
// form that parses back to the same float32, so Decode(Encode(g)) == g for
// a graph of finite values. JSON has no NaN or Inf, and protocol v1 graphs
// are finite (the host's policy, Limits.NonFinite): a graph built in Go
// with non-finite values (Limits.NonFinite set) is written with bare NaN,
// +Inf and -Inf, which Decode refuses; such a graph has no protocol v1 form.
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
			b.WriteString(FormatFloat(n.Scalar))
		case n.Op.Info().Scalar:
			b.WriteString(`,"scalar":`)
			b.WriteString(FormatFloat(n.Scalar))
		case n.Op == OpInput:
			b.WriteString(`,"data":[`)
			for k, v := range n.Data {
				if k > 0 {
					b.WriteByte(',')
				}
				b.WriteString(FormatFloat(v))
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
// and false.
func formatInt(t DType, v int64) string {
	if t == Bool {
		return strconv.FormatBool(v != 0)
	}
	return strconv.FormatInt(v, 10)
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
