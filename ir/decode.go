package ir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// wireNode is one protocol v1 node as it travels, read field by field by
// readNode. Pointers and nil slices tell "absent" from zero.
type wireNode struct {
	ID     *int
	Op     *string
	Shape  []int
	Data   []float32 // parsed while read, at most Limits.MaxElements values
	Ints   []int64   // an integer or bool dtype's data, parsed while read
	Value  []byte    // the number (or boolean) as written: parsed once the dtype is known
	DType  *DType
	A      *int
	B      *int
	C      *int
	D      *int
	Scalar *float32
	Name   *string
	Param  *bool
	Axes   []int               // non-nil when present, even if empty
	Keep   *bool               // keepdims
	Attrs  map[string]wireAttr // keys that name an attribute of some op (see AttrSpec)
}

type wireOutput struct {
	Name *string
	ID   *int
}

// Decode reads one protocol v1 graph and validates it against limits (zero
// fields mean the defaults). Decoding is strict: keys must match exactly
// (no case folding), a repeated key, an unknown field, a wrong type,
// trailing data, a non-finite number and a value that overflows float32
// are refused (invalid_graph); r failing to read (a directory, a device)
// is an io error.
//
// Protocol v1 as gpucc reads it also has the training extension: an input
// may carry "name" (unique among inputs) and "param": true (a named
// trainable parameter), and every binary elementwise op (add, sub, mul,
// div, maximum, minimum) broadcasts a and b by numpy's rule: shapes are
// right-aligned and a dimension of size 1, or a missing one, stretches to
// the other's (v1's broadcast of a trailing suffix b is the special case).
// Such a node decodes to a broadcast node for each operand whose shape is
// not the result's, followed by the op, so IR node ids then run ahead of
// wire ids; errors found while decoding name the wire id.
//
// sum and max (a reduction; "op": "max" is a gpucc extension) take
// optional "axes", a list of axes to reduce (negative ones count from the
// end; each at most once; absent: every axis) and "keepdims" (default
// false). Every reduction decodes to the keepdims form (see ReduceTarget);
// without keepdims it is followed by a reshape that drops the reduced
// axes, except that reducing every axis gives shape [] directly.
//
// Input names: an input without "name" is named "input<N>", N its wire
// id (DefaultInputName), however many nodes the lowering inserts before
// it. Where it did insert some, the IR node carries that name; elsewhere
// the wire id is the node id and the node stays unnamed, as in a graph
// built in Go, and gpucc.Seal names it by that id. A graph in which the
// default name is also another input's "name" is refused (invalid_graph,
// field "name"), whichever comes first: a name never means two inputs.
//
// Memory: Decode streams the document. It reads at most
// Limits.MaxGraphBytes bytes, stops counting nodes, outputs and dimensions
// at their limit plus one, and holds one JSON token at a time, never the
// document: tensor data is parsed number by number into at most
// Limits.MaxElements values per node, allocated for the values that
// arrive, never for the count a shape claims before them (sized by what
// the rest of the document can hold when its length is known, gathered in
// chunks from a stream). What it allocates in all, garbage included, is
// at most 4 bytes per byte of the document plus 1 MiB at any limits
// (TestDecodeMemory measures it on floods of empty nodes, huge shapes,
// deep chains and 512 nodes at the element limit; TestDecodeClaims on
// shapes of 2^31 elements with a few bytes of data).
func Decode(r io.Reader, limits Limits) (*Graph, error) {
	l := limits.withDefaults()
	cr := &cappedReader{r: r, left: SatAdd(l.MaxGraphBytes, 1)}
	g, err := decodeGraph(jsontext.NewDecoder(cr), docSize(r), l)
	if cr.left <= 0 { // read past the limit: report that, not where the JSON broke
		return nil, LimitErrorf("MaxGraphBytes", -1, "", "graph JSON exceeds the limit of %d bytes", l.MaxGraphBytes)
	}
	if cr.err != nil { // the reader failed (a directory, a device), not the document
		return nil, Errorf(CodeIO, -1, "", "reading graph: %v", cr.err)
	}
	if err != nil {
		return nil, err
	}
	if err := validate(g, l, false); err != nil { // the reader checked every value
		return nil, err
	}
	return g, nil
}

// DecodeBytes is Decode on an in-memory document.
func DecodeBytes(raw []byte, limits Limits) (*Graph, error) {
	if l := limits.withDefaults(); int64(len(raw)) > l.MaxGraphBytes {
		return nil, LimitErrorf("MaxGraphBytes", -1, "", "graph JSON exceeds the limit of %d bytes", l.MaxGraphBytes)
	}
	return Decode(bytes.NewReader(raw), limits)
}

// docSize is r's length when it is known before r is read (a
// bytes.Reader's or strings.Reader's Len, a regular file's size past its
// offset), else -1. It only sizes allocations: a document longer than it
// said still decodes, its arrays growing as they are read.
func docSize(r io.Reader) int64 {
	switch r := r.(type) {
	case interface{ Len() int }:
		return int64(r.Len())
	case *os.File:
		fi, err := r.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		off, err := r.Seek(0, io.SeekCurrent)
		if err != nil {
			return -1
		}
		return max(0, fi.Size()-off)
	}
	return -1
}

// cappedReader reads at most left bytes of r and remembers a read error
// that is not io.EOF (the JSON decoder reports it only as broken JSON).
type cappedReader struct {
	r    io.Reader
	left int64
	err  error
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// jsonError turns an error of the JSON reader into invalid_graph. Its text
// may quote the document (a duplicate name, say), so it is cut short.
func jsonError(err error) *Error {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &se):
		return Errorf(CodeInvalidGraph, -1, "", "duplicate key at %s (byte %d); every key may appear once", truncate(string(se.JSONPointer), quoteMax), se.ByteOffset)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return Errorf(CodeInvalidGraph, -1, "", "malformed JSON: the document ends early")
	case errors.As(err, &se):
		return Errorf(CodeInvalidGraph, -1, "", "malformed JSON at byte %d: %s", se.ByteOffset, truncate(se.Err.Error(), quoteMax))
	}
	return Errorf(CodeInvalidGraph, -1, "", "malformed JSON: %s", truncate(err.Error(), quoteMax))
}

// reader reads the document token by token for decodeGraph and readNode.
// Every method reports the first error as an *Error naming node and field.
type reader struct {
	dec *jsontext.Decoder
	// size is the document's length when known before it is read (an
	// in-memory reader's Len, a regular file's size), else -1: a data
	// array allocates for what the rest of the document can spell, never
	// for what its shape claims.
	size int64
	// nonFinite is Limits.NonFinite: whether a float may be one of the
	// strings that spell ±Inf and NaN (Encode writes them).
	nonFinite bool
}

// room is how many values the rest of the document can hold (each takes
// a byte and, but the last, a comma), or -1 when its size is not known.
func (r reader) room() int64 {
	if r.size < 0 {
		return -1
	}
	return max(0, r.size-r.dec.InputOffset())/2 + 1
}

// kind peeks at the next token's kind.
func (r reader) kind() jsontext.Kind { return r.dec.PeekKind() }

// delim reads the delimiter want ('{', '}', '[', ']').
func (r reader) delim(node int, field string, want jsontext.Kind) *Error {
	if k := r.dec.PeekKind(); k != want {
		return r.wrongKind(node, field, k, want)
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return jsonError(err)
	}
	return nil
}

// wrongKind explains that a value of kind got stands where want belongs.
func (r reader) wrongKind(node int, field string, got, want jsontext.Kind) *Error {
	names := map[jsontext.Kind]string{'{': "an object", '}': "the end of an object", '[': "an array", ']': "the end of an array",
		'"': "a string", '0': "a number", 'n': "null", 't': "a boolean", 'f': "a boolean"}
	if _, ok := names[got]; !ok { // broken JSON (a byte no value starts with) or the end: let the decoder say which
		_, err := r.dec.ReadToken()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return jsonError(err)
	}
	return Errorf(CodeInvalidGraph, node, field, "expected %s, got %s", names[want], names[got])
}

// key reads an object key. Keys are compared exactly: one that is not a
// short ASCII name is returned quoted and truncated, and will be unknown.
func (r reader) key() (string, *Error) {
	if k := r.dec.PeekKind(); k != '"' {
		return "", r.wrongKind(-1, "", k, '"')
	}
	v, err := r.dec.ReadValue() // the quoted name, still in the decoder's buffer
	if err != nil {
		return "", jsonError(err)
	}
	if len(v) > 66 {
		return Quote(string(v[1:65])), nil // unknown anyway
	}
	var buf [64]byte
	name, err := jsontext.AppendUnquote(buf[:0], v)
	if err != nil {
		return "", jsonError(err)
	}
	return string(name), nil
}

// number reads one JSON number and returns its text, which is only valid
// until the next read.
func (r reader) number(node int, field string) ([]byte, *Error) {
	if k := r.dec.PeekKind(); k != '0' {
		return nil, r.wrongKind(node, field, k, '0')
	}
	v, err := r.dec.ReadValue()
	if err != nil {
		return nil, jsonError(err)
	}
	return v, nil
}

// integer reads a JSON number that must be an int.
func (r reader) integer(node int, field string) (int, *Error) {
	v, err := r.number(node, field)
	if err != nil {
		return 0, err
	}
	n, perr := strconv.Atoi(string(v))
	if perr != nil {
		return 0, Errorf(CodeInvalidGraph, node, field, "expected an integer, got %s", QuoteBytes(v))
	}
	return n, nil
}

// float reads a JSON number as the nearest float32, which must be finite,
// or, under Limits.NonFinite, a string that spells ±Inf or NaN ("NaN",
// "Infinity", "-Infinity": Encode's spelling).
func (r reader) float(node int, field string) (float32, *Error) {
	if r.dec.PeekKind() == '"' {
		return r.nonFiniteString(node, field)
	}
	v, err := r.number(node, field)
	if err != nil {
		return 0, err
	}
	return parseNumber(node, field, v)
}

// nonFiniteString reads a string where a float is due: one that spells
// ±Inf or NaN, which only the host's Limits.NonFinite admits.
func (r reader) nonFiniteString(node int, field string) (float32, *Error) {
	raw, err := r.dec.ReadValue()
	if err != nil {
		return 0, jsonError(err)
	}
	v, ok := nonFiniteWire(raw)
	switch {
	case !ok:
		return 0, Errorf(CodeInvalidGraph, node, field, "expected a number, got the string %s (the strings a number may be are \"NaN\", \"Infinity\" and \"-Infinity\")", QuoteBytes(raw[1:len(raw)-1]))
	case !r.nonFinite:
		return 0, Errorf(CodeInvalidGraph, node, field, "%s is a non-finite value, which the host's finite policy refuses (Limits.NonFinite; gpucc --non-finite)", QuoteBytes(raw[1:len(raw)-1]))
	}
	return v, nil
}

// str reads a JSON string of at most max bytes.
func (r reader) str(node int, field string, max int) (string, *Error) {
	if k := r.dec.PeekKind(); k != '"' {
		return "", r.wrongKind(node, field, k, '"')
	}
	tok, err := r.dec.ReadValue()
	if err != nil {
		return "", jsonError(err)
	}
	if len(tok) > 6*max+2 { // longer than max even if every byte was escaped
		return "", Errorf(CodeInvalidGraph, node, field, "string of %d bytes exceeds %d bytes", len(tok)-2, max)
	}
	s, uerr := jsontext.AppendUnquote(nil, tok)
	if uerr != nil {
		return "", jsonError(uerr)
	}
	if len(s) > max {
		return "", Errorf(CodeInvalidGraph, node, field, "string of %d bytes exceeds %d bytes", len(s), max)
	}
	return string(s), nil
}

// boolean reads true or false.
func (r reader) boolean(node int, field string) (bool, *Error) {
	k := r.dec.PeekKind()
	if k != 't' && k != 'f' {
		return false, r.wrongKind(node, field, k, 't')
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return false, jsonError(err)
	}
	return k == 't', nil
}

// each calls f for every element of an array, stopping at f's error.
func (r reader) each(node int, field string, f func() *Error) *Error {
	if err := r.delim(node, field, '['); err != nil {
		return err
	}
	for r.kind() != ']' {
		if err := f(); err != nil {
			return err
		}
	}
	return r.delim(node, field, ']')
}

// members calls f for every key of an object; f reads the value.
func (r reader) members(node int, field string, f func(key string) *Error) *Error {
	if err := r.delim(node, field, '{'); err != nil {
		return err
	}
	for r.kind() != '}' {
		k, err := r.key()
		if err != nil {
			return err
		}
		if err := f(k); err != nil {
			return err
		}
	}
	return r.delim(node, field, '}')
}

// decodeGraph reads the top-level object and decodes each node as it
// arrives, so nothing is kept but the graph under construction.
func decodeGraph(dec *jsontext.Decoder, size int64, l Limits) (*Graph, *Error) {
	r := reader{dec: dec, size: size, nonFinite: l.NonFinite}
	var version *int
	var outs []wireOutput
	d := decoder{g: &Graph{}, l: l, names: map[string]int{}, unnamed: map[int]bool{}}
	err := r.members(-1, "", func(key string) *Error {
		switch key {
		case "version":
			v, err := r.integer(-1, "version")
			if err != nil {
				return err
			}
			if v != 1 {
				return Errorf(CodeInvalidGraph, -1, "version", "unsupported version %d; this host speaks version 1", v)
			}
			version = &v
		case "nodes":
			return r.each(-1, "nodes", func() *Error {
				i := len(d.ids)
				if i == l.MaxNodes {
					return LimitErrorf("MaxNodes", -1, "nodes", "more than %d nodes exceed the limit of %d", l.MaxNodes, l.MaxNodes)
				}
				w, err := readNode(r, i, l)
				if err != nil {
					return err
				}
				return d.node(i, &w)
			})
		case "outputs":
			return r.each(-1, "outputs", func() *Error {
				k := len(outs)
				if k == l.MaxOutputs {
					return LimitErrorf("MaxOutputs", -1, "outputs", "more than %d outputs exceed the limit of %d", l.MaxOutputs, l.MaxOutputs)
				}
				o, err := readOutput(r, k)
				outs = append(outs, o)
				return err
			})
		default:
			return Errorf(CodeInvalidGraph, -1, "", "unknown field %s", Quote(key))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, Errorf(CodeInvalidGraph, -1, "", "unexpected data after the graph object")
	}
	if version == nil {
		return nil, Errorf(CodeInvalidGraph, -1, "version", "missing; this host speaks version 1")
	}
	for k, o := range outs {
		field := fmt.Sprintf("outputs[%d]", k)
		if o.Name == nil {
			return nil, Errorf(CodeInvalidGraph, -1, field+".name", "missing")
		}
		if o.ID == nil {
			return nil, Errorf(CodeInvalidGraph, -1, field+".id", "missing")
		}
		if *o.ID < 0 || *o.ID >= len(d.ids) {
			return nil, Errorf(CodeInvalidGraph, -1, field+".id", "output %s refers to node %d, graph has %d nodes", Quote(*o.Name), *o.ID, len(d.ids))
		}
		d.g.Outputs = append(d.g.Outputs, Output{Name: *o.Name, ID: d.ids[*o.ID]})
	}
	return d.g, nil
}

// readOutput reads output k: {"name": string, "id": int}.
func readOutput(r reader, k int) (wireOutput, *Error) {
	var o wireOutput
	field := fmt.Sprintf("outputs[%d]", k)
	err := r.members(-1, field, func(key string) *Error {
		switch key {
		case "name":
			s, err := r.str(-1, field+".name", maxNameBytes)
			o.Name = &s
			return err
		case "id":
			n, err := r.integer(-1, field+".id")
			o.ID = &n
			return err
		}
		return Errorf(CodeInvalidGraph, -1, field, "unknown field %s", Quote(key))
	})
	return o, err
}

// maxNameBytes bounds input and output names.
const maxNameBytes = 256

// readNode reads wire node i, field by field. Tensor data is parsed as it
// is read, into at most as many values as the node's shape (when it came
// first) or the per-tensor element limit allows. A new node field is one
// more case here and a field of wireNode; nodeFromWire gives it meaning.
func readNode(r reader, i int, l Limits) (wireNode, *Error) {
	var w wireNode
	err := r.members(i, "", func(key string) *Error {
		var err *Error
		switch key {
		case "id":
			n, e := r.integer(i, key)
			w.ID, err = &n, e
		case "a":
			n, e := r.integer(i, key)
			w.A, err = &n, e
		case "b":
			n, e := r.integer(i, key)
			w.B, err = &n, e
		case "c":
			n, e := r.integer(i, key)
			w.C, err = &n, e
		case "d":
			n, e := r.integer(i, key)
			w.D, err = &n, e
		case "dtype":
			s, e := r.str(i, key, 16)
			if e != nil {
				return e
			}
			t, ok := ParseDType(s)
			if ok && !ProtocolDTypes.Has(t) {
				return Errorf(CodeUnsupported, i, key, "dtype %s is not a protocol v1 dtype (gpucc reads it from .onnx models and .npy files); the dtypes are float32, float16, bfloat16, int32, int64, uint8, int8, uint32 and bool", Quote(s))
			}
			if !ok {
				return Errorf(CodeInvalidGraph, i, key, "unknown dtype %s; the dtypes are float32, float16, bfloat16, int32, int64, uint8, int8, uint32 and bool", Quote(s))
			}
			if t != F32 && (w.Data != nil || w.Value != nil) {
				return Errorf(CodeInvalidGraph, i, key, "must come before data and value: a %v node's values are read as %v", t, t)
			}
			w.DType = &t
		case "op":
			s, e := r.str(i, key, 64) // longer than any op
			w.Op, err = &s, e
		case "name":
			s, e := r.str(i, key, maxNameBytes)
			w.Name, err = &s, e
		case "param":
			b, e := r.boolean(i, key)
			w.Param, err = &b, e
		case "value":
			w.Value, err = r.scalarToken(i, key)
		case "scalar":
			v, e := r.float(i, key)
			w.Scalar, err = &v, e
		case "shape":
			w.Shape, err = readShape(r, i)
		case "data":
			switch t := w.dtype(); {
			case !t.IsFloat():
				w.Ints, err = readInts(r, i, t, w.Shape, l)
			default:
				w.Data, err = readData(r, i, t, w.Shape, l)
			}
		case "axes":
			w.Axes, err = readAxes(r, i)
		case "keepdims":
			b, e := r.boolean(i, key)
			w.Keep, err = &b, e
		default:
			if !attrNames[key] {
				return Errorf(CodeInvalidGraph, i, "", "unknown field %s", Quote(key))
			}
			left := l.MaxAttrValues
			for _, a := range w.Attrs {
				left -= len(a.vals)
			}
			a, e := readAttr(r, i, key, left)
			if w.Attrs == nil {
				w.Attrs = map[string]wireAttr{}
			}
			w.Attrs[key], err = a, e
		}
		return err
	})
	return w, err
}

// dtype returns the node's dtype as read so far (float32 when absent).
func (w *wireNode) dtype() DType {
	if w.DType == nil {
		return F32
	}
	return *w.DType
}

// scalarToken reads a number or a boolean and returns it as written (a
// copy), to be parsed once the node's dtype is known.
func (r reader) scalarToken(node int, field string) ([]byte, *Error) {
	k := r.dec.PeekKind()
	if k == '"' { // a float dtype's ±Inf or NaN, under Limits.NonFinite; parseScalar reads it
		if !r.nonFinite {
			_, err := r.nonFiniteString(node, field)
			return nil, err
		}
		v, err := r.dec.ReadValue()
		if err != nil {
			return nil, jsonError(err)
		}
		return append([]byte(nil), v...), nil
	}
	if k != '0' && k != 't' && k != 'f' {
		return nil, r.wrongKind(node, field, k, '0')
	}
	v, err := r.dec.ReadValue()
	if err != nil {
		return nil, jsonError(err)
	}
	return append([]byte(nil), v...), nil
}

// parseScalar parses a value token as dtype t: a finite number rounded
// once to a float dtype, an integer literal of an integer dtype, true or
// false for bool, each within t's range.
func parseScalar(node int, field string, t DType, raw []byte) (float32, int64, *Error) {
	switch {
	case t == Bool:
		switch string(raw) {
		case "true":
			return 0, 1, nil
		case "false":
			return 0, 0, nil
		}
		return 0, 0, Errorf(CodeInvalidGraph, node, field, "a bool value is true or false, got %s", QuoteBytes(raw))
	case !t.IsFloat():
		v, err := strconv.ParseInt(string(raw), 10, 64)
		if lo, hi := t.Range(); err != nil || v < lo || v > hi {
			return 0, 0, Errorf(CodeInvalidGraph, node, field, "a %v value is an integer from %d to %d, got %s", t, lo, hi, QuoteBytes(raw))
		}
		return 0, v, nil
	case raw[0] == '"':
		if v, ok := nonFiniteWire(raw); ok && !t.IsFloat64() {
			return v, 0, nil
		}
		return 0, 0, Errorf(CodeInvalidGraph, node, field, "a %v value is a number, got %s", t, QuoteBytes(raw))
	case raw[0] == 't' || raw[0] == 'f':
		return 0, 0, Errorf(CodeInvalidGraph, node, field, "a %v value is a number, got %s", t, QuoteBytes(raw))
	case t == F32:
		f, err := parseNumber(node, field, raw)
		return f, 0, err
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	v := RoundFloat64(t, f)
	if err != nil || math.IsInf(float64(v), 0) {
		return 0, 0, Errorf(CodeInvalidGraph, node, field, "%s is not a finite %v", QuoteBytes(raw), t)
	}
	return v, 0, nil
}

// readInts reads an integer or bool dtype's data: integer literals (bool:
// true and false), at most as many as the node's shape (when it came
// first) or the per-tensor element limit allows.
func readInts(r reader, i int, t DType, shape Shape, l Limits) ([]int64, *Error) {
	max := l.MaxElements
	if shape != nil {
		if n := shape.Elements(l.MaxElements); n >= 0 {
			max = n
		}
	}
	out := newValues[int64](r, max)
	err := r.each(i, "data", func() *Error {
		if out.n == max {
			return LimitErrorf("MaxElements", i, "data", "has more than %d values, the most its shape or the element limit allows", max)
		}
		raw, err := r.scalarToken(i, "data")
		if err != nil {
			return err
		}
		_, v, err := parseScalar(i, "data", t, raw)
		if err != nil {
			err.Msg = fmt.Sprintf("value %d: %s", out.n, err.Msg)
			return err
		}
		out.add(v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out.all(), nil
}

// values gathers a data array's values as they are read, allocating for
// the values that arrive, never for the count a shape claims before them:
// a document of known size preallocates the lesser of that count and what
// the rest of the document can hold (reader.room), so a 90-byte document
// claiming 2^20 int64 values allocated 8.4 MB before its first value
// (2.1 GB for a shape of 2^28 under raised limits); read from a stream,
// values are gathered in chunks and copied once at the end, so the peak
// is twice the data, never the many times a growing slice leaves behind.
type values[T any] struct {
	n    int64
	want int64 // the most values the array may hold
	out  []T   // the chunk being filled
	full [][]T // chunks filled, streaming
	one  bool  // out was sized for the whole array
}

const valueChunk = 1 << 14

func newValues[T any](r reader, want int64) *values[T] {
	v := &values[T]{want: want}
	if room := r.room(); room >= 0 {
		v.out, v.one = make([]T, 0, min(want, room)), true
	}
	return v
}

func (v *values[T]) add(x T) {
	if !v.one && len(v.out) == cap(v.out) {
		if v.out != nil {
			v.full = append(v.full, v.out)
		}
		v.out = make([]T, 0, min(valueChunk, v.want-v.n))
	}
	v.out = append(v.out, x)
	v.n++
}

// all returns the values read, in one slice.
func (v *values[T]) all() []T {
	if v.out == nil {
		return []T{}
	}
	if len(v.full) == 0 {
		return v.out
	}
	all := make([]T, 0, v.n)
	for _, c := range v.full {
		all = append(all, c...)
	}
	return append(all, v.out...)
}

// readShape reads a shape of at most MaxRank dimensions.
func readShape(r reader, i int) ([]int, *Error) {
	s := make([]int, 0, 4)
	err := r.each(i, "shape", func() *Error {
		if len(s) == MaxRank {
			return Errorf(CodeInvalidGraph, i, "shape", "rank above the maximum rank %d", MaxRank)
		}
		d, err := r.integer(i, "shape")
		s = append(s, d)
		return err
	})
	return s, err
}

// readAxes reads a reduction's axes: at most MaxRank integers (more
// would repeat one or leave the rank).
func readAxes(r reader, i int) ([]int, *Error) {
	s := make([]int, 0, 4)
	err := r.each(i, "axes", func() *Error {
		if len(s) == MaxRank {
			return Errorf(CodeInvalidGraph, i, "axes", "more than %d axes; the maximum rank is %d", MaxRank, MaxRank)
		}
		d, err := r.integer(i, "axes")
		s = append(s, d)
		return err
	})
	return s, err
}

// readData reads an array of numbers, each rounded once to float32. Its
// length is bounded by the node's shape when that came first (and is
// valid), else by the per-tensor element limit; nodeFromWire checks it
// against the shape. Its values are allocated as they arrive (values).
func readData(r reader, i int, t DType, shape Shape, l Limits) ([]float32, *Error) {
	max, exact := l.MaxElements, false
	if shape != nil {
		if n := shape.Elements(l.MaxElements); n >= 0 {
			max, exact = n, true
		}
	}
	out := newValues[float32](r, max)
	err := r.each(i, "data", func() *Error {
		if out.n == max {
			if exact {
				return Errorf(CodeInvalidGraph, i, "data", "has more than the %d values its shape needs", max)
			}
			return LimitErrorf("MaxElements", i, "data", "has more than %d values, the limit of elements per tensor", max)
		}
		var v float32
		var err *Error
		if t == F32 {
			v, err = r.float(i, "data")
		} else if r.dec.PeekKind() == '"' { // ±Inf and NaN, which float16 and bfloat16 hold
			v, err = r.nonFiniteString(i, "data")
		} else { // float16, bfloat16: one rounding from the decimal (RoundFloat64)
			var raw []byte
			if raw, err = r.number(i, "data"); err == nil {
				v, _, err = parseScalar(i, "data", t, raw)
			}
		}
		if err != nil {
			err.Msg = fmt.Sprintf("value %d: %s", out.n, err.Msg)
			return err
		}
		out.add(v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out.all(), nil
}

// isBinary reports whether op is a binary elementwise op, whose operands
// broadcast.
func isBinary(op Op) bool { return op.Info().Elementwise && op.Info().Args == 2 }

// decoder turns wire nodes into IR nodes. A broadcasting binary op
// becomes up to three IR nodes (broadcasts, then the op), so wire ids and IR ids
// differ after the first one: ids maps each wire id to its IR node, and
// errors found while decoding name the wire id.
type decoder struct {
	g       *Graph
	l       Limits
	ids     []NodeID       // IR node of each wire node decoded so far
	names   map[string]int // wire id of each named input, default names included
	unnamed map[int]bool   // wire ids of the inputs named by DefaultInputName
	storage int64
	squeeze Shape // set by nodeFromWire: the reshape after a reduction without keepdims
}

// node decodes wire node i and appends its IR node(s) to d.g.
func (d *decoder) node(i int, w *wireNode) *Error {
	d.squeeze = nil
	n, err := d.nodeFromWire(i, w)
	if err != nil {
		return err
	}
	if d.squeeze != nil { // a reduction without keepdims: the keepdims form, then a reshape
		d.g.Nodes = append(d.g.Nodes, n)
		n = Node{Op: OpReshape, Args: []NodeID{NodeID(len(d.g.Nodes) - 1)}, Shape: d.squeeze, DType: n.DType}
		if err := d.count(i, n.Shape, n.DType); err != nil {
			return err
		}
	}
	if isBinary(n.Op) {
		for k, a := range n.Args { // numpy's broadcast of a and b, checked by nodeFromWire
			if !d.g.Nodes[a].Shape.Equal(n.Shape) {
				dt := d.g.Nodes[a].DType
				d.g.Nodes = append(d.g.Nodes, Node{Op: OpBroadcast, Args: []NodeID{a}, Shape: n.Shape, DType: dt})
				n.Args[k] = NodeID(len(d.g.Nodes) - 1)
				if err := d.count(i, n.Shape, dt); err != nil {
					return err
				}
			}
		}
	}
	d.ids = append(d.ids, NodeID(len(d.g.Nodes)))
	d.g.Nodes = append(d.g.Nodes, n)
	return nil
}

// count adds a node of shape s and dtype t to the summed storage, against
// the limit.
func (d *decoder) count(i int, s Shape, t DType) *Error {
	d.storage = SatAdd(d.storage, SatMul(int64(t.Size()), int64(s.Len())))
	if over(d.storage, d.l.MaxStorageBytes) {
		return LimitErrorf("MaxStorageBytes", i, "shape", "summed storage reaches %s bytes, over the limit of %d", total(d.storage), d.l.MaxStorageBytes)
	}
	return nil
}

func (d *decoder) nodeFromWire(i int, w *wireNode) (Node, *Error) {
	g, l := d.g, d.l
	bad := func(field, format string, a ...any) (Node, *Error) {
		return Node{}, Errorf(CodeInvalidGraph, i, field, format, a...)
	}
	if w.ID == nil {
		return bad("id", "missing")
	}
	if *w.ID != i {
		return bad("id", "id %d at position %d; ids must run 0..n-1 in order", *w.ID, i)
	}
	if w.Op == nil {
		return bad("op", "missing")
	}
	op, variant, ok := WireOp(*w.Op) // binary ops with a scalar operand become their scalar forms
	if !ok {
		return bad("op", "unknown op %s", Quote(*w.Op))
	}
	if variant != 0 && w.Scalar != nil {
		if w.B != nil {
			return bad("scalar", "%s takes either b or scalar, not both", *w.Op)
		}
		op = variant
	}
	info := op.Info()
	reduction := info.Combine != 0
	if (w.Axes != nil || w.Keep != nil) && !reduction {
		field := "axes"
		if w.Axes == nil {
			field = "keepdims"
		}
		return bad(field, "not allowed for op %s; only sum and max reduce over axes", *w.Op)
	}
	allowed := map[string]bool{"a": info.Args >= 1, "b": info.Args >= 2, "c": info.Args >= 3, "d": info.Args == 4,
		"shape": info.Shaped && !reduction, "data": op == OpInput,
		"value": op == OpFull, "scalar": info.Scalar && op != OpFull}
	present := map[string]bool{"a": w.A != nil, "b": w.B != nil, "c": w.C != nil, "d": w.D != nil, "shape": w.Shape != nil,
		"data": w.Data != nil || w.Ints != nil, "value": w.Value != nil, "scalar": w.Scalar != nil}
	for _, f := range []string{"a", "b", "c", "d", "shape", "data", "value", "scalar"} {
		if present[f] && !allowed[f] {
			return bad(f, "not allowed for op %s", *w.Op)
		}
		if !present[f] && allowed[f] {
			if f == "b" && info.ScalarForm != 0 {
				return bad("b", "%s needs b (a tensor) or scalar (a number)", *w.Op)
			}
			return bad(f, "missing, op %s needs it", *w.Op)
		}
	}
	if w.Name != nil && op != OpInput {
		return bad("name", "not allowed for op %s; only inputs are named", *w.Op)
	}
	if w.Param != nil && op != OpInput {
		return bad("param", "not allowed for op %s; only inputs are parameters", *w.Op)
	}
	n := Node{Op: op}
	if len(info.Attrs) > 0 || len(w.Attrs) > 0 {
		attrs, err := attrsFromWire(i, op, w.Attrs)
		if err != nil {
			return Node{}, err
		}
		n.Attrs = attrs
	}
	if w.Name != nil {
		if *w.Name == "" || len(*w.Name) > 256 {
			return bad("name", "name must be 1 to 256 bytes long")
		}
		if j, dup := d.names[*w.Name]; dup {
			if d.unnamed[j] {
				return bad("name", "input name %s is the default name of unnamed input node %d; name node %d, or choose another name", Quote(*w.Name), j, j)
			}
			return bad("name", "duplicate input name %s (also node %d)", Quote(*w.Name), j)
		}
		d.names[*w.Name] = i
		n.Name = *w.Name
	} else if op == OpInput { // named by its wire id, which lowering never shifts
		name := DefaultInputName(i)
		if j, dup := d.names[name]; dup {
			return bad("name", "this unnamed input's default name %s is node %d's name; name this input, or rename node %d", Quote(name), j, j)
		}
		d.names[name] = i
		d.unnamed[i] = true
		if NodeID(len(d.g.Nodes)) != NodeID(i) { // its IR id ran ahead: keep the wire id's name
			n.Name = name
		}
	}
	if w.Param != nil {
		if *w.Param && w.Name == nil {
			return bad("param", "a parameter needs a name: its update is returned under it")
		}
		n.Param = *w.Param
	}
	for k, ref := range []*int{w.A, w.B, w.C, w.D}[:info.Args] {
		if *ref < 0 || *ref >= i {
			return bad(argField(k), "reference %d must point to an earlier node (0..%d)", *ref, i-1)
		}
		n.Args = append(n.Args, d.ids[*ref])
	}
	argTypes := make([]DType, len(n.Args))
	for k, a := range n.Args {
		argTypes[k] = g.Nodes[a].DType
	}
	dt, err := ResultDType(i, op, argTypes, w.dtype())
	if err != nil {
		return Node{}, err
	}
	if w.DType != nil && dt != *w.DType {
		return bad("dtype", "%s over %v gives %v, the node says %v", *w.Op, argTypes, dt, *w.DType)
	}
	n.DType = dt
	if reduction {
		target, result, err := ReduceTarget(i, g.Nodes[n.Args[0]].Shape, w.Axes, w.Axes == nil, w.Keep != nil && *w.Keep)
		if err != nil {
			return Node{}, err
		}
		n.Shape = target
		if !result.Equal(target) {
			d.squeeze = result
		}
	} else if w.Shape != nil {
		if len(w.Shape) > MaxRank {
			return bad("shape", "rank %d exceeds the maximum rank %d", len(w.Shape), MaxRank)
		}
		for k, d := range w.Shape {
			if d < 1 {
				return bad("shape", "dimension %d is %d; zero-sized and negative dimensions are not supported", k, d)
			}
		}
		if Shape(w.Shape).Elements(l.MaxElements) < 0 {
			return Node{}, LimitErrorf("MaxElements", i, "shape", "shape %v exceeds the limit of %d elements per tensor", Shape(w.Shape), l.MaxElements)
		}
		n.Shape = append(Shape{}, w.Shape...)
		if info.Args > 0 {
			if err := CheckTarget(i, op, g.Nodes[n.Args[0]].Shape, n.Shape); err != nil {
				return Node{}, err
			}
		}
	} else {
		args := make([]Shape, len(n.Args))
		for k, a := range n.Args {
			args[k] = g.Nodes[a].Shape
		}
		if isBinary(op) && !args[0].Equal(args[1]) {
			s, err := broadcastBinary(i, op, args[0], args[1])
			if err != nil {
				return Node{}, err
			}
			args[0], args[1] = s, s // broadcast by nodes, in node
		}
		s, err := InferShape(i, op, args, n.Attrs)
		if err != nil {
			return Node{}, err
		}
		if s.Elements(l.MaxElements) < 0 {
			return Node{}, LimitErrorf("MaxElements", i, "shape", "result shape %v exceeds the limit of %d elements per tensor", s, l.MaxElements)
		}
		n.Shape = s
	}
	if err := d.count(i, n.Shape, n.DType); err != nil {
		return Node{}, err
	}
	switch {
	case w.Value != nil:
		f, v, err := parseScalar(i, "value", n.DType, w.Value)
		if err != nil {
			return Node{}, err
		}
		n.Scalar = f
		if !n.DType.IsFloat() {
			n.Ints = []int64{v}
		}
	case w.Scalar != nil:
		n.Scalar = *w.Scalar
	}
	if op == OpInput {
		if m := max(len(w.Data), len(w.Ints)); m != n.Shape.Len() {
			return bad("data", "has %d values, shape needs %d", m, n.Shape.Len())
		}
		n.Data, n.Ints = w.Data, w.Ints
	}
	return n, nil
}

// parseNumber parses one JSON number straight to the nearest float32, so a
// decimal is rounded once (not through float64).
func parseNumber(node int, field string, raw []byte) (float32, *Error) {
	f, err := strconv.ParseFloat(string(raw), 32)
	if err != nil || math.IsInf(f, 0) {
		return 0, Errorf(CodeInvalidGraph, node, field, "%s is not a finite float32", QuoteBytes(raw))
	}
	return float32(f), nil
}
