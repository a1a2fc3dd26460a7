package ir

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// AttrSpec declares one integer attribute of an op: its row lists them
// (OpInfo.Attrs), and decoding, encoding, the text form, validation, the
// cache keys and the JSON Schema all read that list, with no code per op.
//
// On the wire each attribute is a key of the node: an attribute of Len 1
// is a JSON integer, any other a list of integers. In Node.Attrs the
// values of a node's attributes are flattened in the order its row
// declares them; a variable-length attribute (Len 0) is stored as its
// count followed by its values. PackAttrs builds that layout and
// Op.Attr reads an attribute back out of it.
type AttrSpec struct {
	Name    string // the wire key and the text form's name
	Len     int    // number of values; 0: a list of any length up to Limits.MaxAttrValues
	Default []int  // the value when the key is absent; nil: the attribute is required
}

// MaxAttrMagnitude bounds every attribute value: |v| ≤ 2^31-1, so that a
// shape rule's arithmetic on attributes cannot overflow an int.
const MaxAttrMagnitude = 1<<31 - 1

// attrNames is every attribute name of the table, for the decoder (a
// node's keys arrive before its op may be known).
var attrNames = map[string]bool{}

// nodeFields are the wire keys of a node that are not attributes: no
// attribute may be named so.
var nodeFields = []string{"id", "op", "a", "b", "c", "dtype", "shape", "data", "value", "scalar", "name", "param", "axes", "keepdims"}

// checkAttrSpecs panics on a row whose attributes are malformed: an
// empty, repeated or reserved name, a negative length, a default of the
// wrong length. It runs once, in init: a table error is a build error.
func checkAttrSpecs(op Op, specs []AttrSpec) {
	seen := map[string]bool{}
	for _, s := range specs {
		switch {
		case s.Name == "" || seen[s.Name] || slices.Contains(nodeFields, s.Name):
			panic(fmt.Sprintf("ir: op %s: attribute name %q is empty, repeated or a node field", op, s.Name))
		case s.Len < 0 || s.Default != nil && s.Len > 0 && len(s.Default) != s.Len:
			panic(fmt.Sprintf("ir: op %s: attribute %s has length %d and a default of %d values", op, s.Name, s.Len, len(s.Default)))
		}
		seen[s.Name] = true
		attrNames[s.Name] = true
	}
}

// Attr returns the values of op's attribute name in attrs (a validated
// node's Attrs), or nil when op declares no such attribute. The slice
// shares attrs' storage.
func (op Op) Attr(attrs []int, name string) []int {
	at := 0
	for _, s := range op.Info().Attrs {
		n := s.Len
		if n == 0 {
			n = attrs[at]
			at++
		}
		if s.Name == name {
			return attrs[at : at+n : at+n]
		}
		at += n
	}
	return nil
}

// PackAttrs returns op's attributes in Node.Attrs' layout from values
// given by name; an attribute left out takes its default. A name op does
// not declare, a value list of the wrong length and a required attribute
// left out are refused (invalid_graph, field the attribute's name).
func PackAttrs(op Op, vals map[string][]int) ([]int, error) {
	a, err := packAttrs(-1, op, vals)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// packAttrs is PackAttrs naming node in its errors.
func packAttrs(node int, op Op, vals map[string][]int) ([]int, *Error) {
	specs := op.Info().Attrs
	for name := range vals {
		if !slices.ContainsFunc(specs, func(s AttrSpec) bool { return s.Name == name }) {
			return nil, Errorf(CodeInvalidGraph, node, name, "not allowed for op %s", op.Info().Wire)
		}
	}
	var out []int
	for _, s := range specs {
		v, ok := vals[s.Name]
		if !ok {
			if s.Default == nil {
				return nil, Errorf(CodeInvalidGraph, node, s.Name, "missing, op %s needs it", op.Info().Wire)
			}
			v = s.Default
		}
		if s.Len == 0 {
			out = append(out, len(v))
		} else if len(v) != s.Len {
			return nil, Errorf(CodeInvalidGraph, node, s.Name, "op %s's %s takes %d values, got %d", op.Info().Wire, s.Name, s.Len, len(v))
		}
		out = append(out, v...)
	}
	return out, nil
}

// checkAttrs checks a node's Attrs against its row: the layout (every
// declared attribute, fixed ones at their length, variable ones with a
// count that fits), no values left over, at most l.MaxAttrValues values,
// each within ±MaxAttrMagnitude. What the values mean (a stride ≥ 1, say)
// is the row's Shape rule's to check.
func checkAttrs(node int, op Op, attrs []int, l Limits) *Error {
	specs := op.Info().Attrs
	if len(specs) == 0 {
		if len(attrs) != 0 {
			return Errorf(CodeInvalidGraph, node, "attrs", "op %s takes no attributes, node has %d values", op, len(attrs))
		}
		return nil
	}
	if len(attrs) > l.MaxAttrValues {
		return LimitErrorf("MaxAttrValues", node, "attrs", "%d attribute values exceed the limit of %d per node", len(attrs), l.MaxAttrValues)
	}
	at := 0
	for _, s := range specs {
		n := s.Len
		if n == 0 {
			if at >= len(attrs) || attrs[at] < 0 || attrs[at] > len(attrs)-at-1 {
				return Errorf(CodeInvalidGraph, node, s.Name, "the attributes of op %s end before %s's values", op, s.Name)
			}
			n = attrs[at]
			at++
		}
		if at+n > len(attrs) {
			return Errorf(CodeInvalidGraph, node, s.Name, "the attributes of op %s end before %s's %d values", op, s.Name, n)
		}
		for _, v := range attrs[at : at+n] {
			if v > MaxAttrMagnitude || v < -MaxAttrMagnitude {
				return Errorf(CodeInvalidGraph, node, s.Name, "%s value %d is outside ±%d", s.Name, v, MaxAttrMagnitude)
			}
		}
		at += n
	}
	if at != len(attrs) {
		return Errorf(CodeInvalidGraph, node, "attrs", "op %s's attributes take %d values, node has %d", op, at, len(attrs))
	}
	return nil
}

// attrsText renders a node's attributes for the text form:
// " strides=[1,1] group=1" (a Len 1 attribute as a number).
func attrsText(op Op, attrs []int) string {
	var b strings.Builder
	for _, s := range op.Info().Attrs {
		v := op.Attr(attrs, s.Name)
		b.WriteString(" " + s.Name + "=")
		if s.Len == 1 {
			b.WriteString(strconv.Itoa(v[0]))
			continue
		}
		b.WriteString(intsText(v))
	}
	return b.String()
}

// intsText is v as "[1,2,3]".
func intsText(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// writeAttrs writes a node's attributes as wire keys, every one (defaults
// too), so that Decode(Encode(g)) gives Attrs back unchanged.
func writeAttrs(b *bytes.Buffer, op Op, attrs []int) {
	for _, s := range op.Info().Attrs {
		v := op.Attr(attrs, s.Name)
		b.WriteString(`,"` + s.Name + `":`)
		if s.Len == 1 {
			b.WriteString(strconv.Itoa(v[0]))
			continue
		}
		b.WriteString(intsText(v))
	}
}

// readAttr reads an attribute's wire value, an integer or a list of
// integers, at most max values: its length is checked against the row
// once the op is known (wireAttr).
func readAttr(r reader, i int, key string, max int) (wireAttr, *Error) {
	if r.kind() != '[' {
		n, err := r.integer(i, key)
		return wireAttr{vals: []int{n}, scalar: true}, err
	}
	var vals []int
	err := r.each(i, key, func() *Error {
		if len(vals) == max {
			return LimitErrorf("MaxAttrValues", i, key, "more than %d values exceed the limit of %d attribute values per node", max, max)
		}
		n, err := r.integer(i, key)
		vals = append(vals, n)
		return err
	})
	return wireAttr{vals: vals}, err
}

// wireAttr is an attribute as read: its values, and whether it was a bare
// integer rather than a list.
type wireAttr struct {
	vals   []int
	scalar bool
}

// attrsFromWire checks the attributes read for node i against op's row
// (a Len 1 attribute is an integer, any other a list of its length; an
// undeclared key is refused) and packs them, defaults filled in.
func attrsFromWire(i int, op Op, ws map[string]wireAttr) ([]int, *Error) {
	specs := op.Info().Attrs
	vals := make(map[string][]int, len(ws))
	for name, w := range ws {
		k := slices.IndexFunc(specs, func(s AttrSpec) bool { return s.Name == name })
		if k < 0 {
			return nil, Errorf(CodeInvalidGraph, i, name, "not allowed for op %s", op.Info().Wire)
		}
		if one := specs[k].Len == 1; one != w.scalar {
			want := "an integer"
			if !one {
				want = "a list of integers"
			}
			return nil, Errorf(CodeInvalidGraph, i, name, "op %s's %s is %s", op.Info().Wire, name, want)
		}
		vals[name] = w.vals
	}
	return packAttrs(i, op, vals)
}
