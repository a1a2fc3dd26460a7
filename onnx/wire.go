package onnx

import (
	"math"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/gpucc/gpucc/ir"
	"google.golang.org/protobuf/encoding/protowire"
)

// The messages of onnx.proto that the importer reads, decoded with
// protowire against the field numbers of onnx.proto (the schema itself is
// not copied here). Fields the importer does not need are skipped; a field
// that needs something gpucc lacks (external data, a subgraph, a sparse
// initializer) is recorded so that the importer can refuse it by name.
//
// Every repeated field is counted against a bound before it grows (see
// budget), so a hostile model cannot make the decoder allocate much more
// than its own size, which Load bounds by Limits.MaxGraphBytes.

type modelProto struct {
	irVersion int64
	opsets    []opsetID
	graph     *graphProto
	functions int // local functions (field 25): nodes that call them are refused
	training  bool
}

type opsetID struct {
	domain  string
	version int64
}

type graphProto struct {
	name    string
	nodes   []nodeProto
	inits   []tensorProto
	sparse  int // sparse initializers, refused
	inputs  []valueInfo
	outputs []valueInfo
}

type nodeProto struct {
	inputs, outputs      []string
	name, opType, domain string
	attrs                []attrProto
}

// attrProto is an AttributeProto. Lists are kept as they travel (packed or
// not) and expanded on use, within the element limit.
type attrProto struct {
	name    string
	ref     string // ref_attr_name: only meaningful inside functions, refused
	typ     int32
	f       float32
	i       int64
	s       []byte
	t       *tensorProto
	floats  []float32
	ints    []int64
	strings [][]byte
	g       *graphProto // a graph attribute (If's branches)
	other   string      // a kind the importer cannot use ("tensors", "graphs", …), if present
}

// tensorProto is a TensorProto. Data fields are held as the bytes they
// travel in (a packed field, or raw_data) and converted once the element
// count is known to be within the limits.
type tensorProto struct {
	dims     []int64
	dataType int32
	name     string
	raw      []byte
	hasRaw   bool
	packed   [][]byte // float_data, int32_data, int64_data, double_data, uint64_data: packed or one value each
	field    protowire.Number
	wireType protowire.Type
	external bool // data_location EXTERNAL or external_data entries
	strings  int  // string_data entries: strings are refused
	segment  bool
}

type valueInfo struct {
	name      string
	elemType  int32
	hasType   bool
	nonTensor string // "sequence", "map", "optional", "sparse tensor", if so typed
	dims      []dimProto
	hasShape  bool
}

type dimProto struct {
	value int64
	param string
	set   bool // dim_value or dim_param present
}

// budget bounds what decoding may allocate: the bytes of the structures
// it builds (each repeated field's elements at their size in memory, and
// the string copies), charged before each append, within
// DecodeBytesPerByte times the model's size plus DecodeSlack. Exceeding
// it is limit_exceeded. Before 2026-12-04 it counted elements, one per
// wire byte, so a 16 MB model of empty node attributes (2 bytes each, a
// 170-byte struct in memory) peaked at 4.96 GB (issue 30, finding 4).
type budget struct {
	nodes, inits int   // counted over the model and its subgraphs
	depth        int   // the subgraphs being decoded, nested
	mem          int64 // bytes still allowed
	l            ir.Limits
}

// DecodeBytesPerByte and DecodeSlack bound what decoding a model
// allocates besides the model's own bytes: 5 bytes of structures a byte
// of model, plus 1 MiB (what a small model of many nodes and no weights
// needs), charged before each is made at its counted length. Weights are
// sub-slices of the model, not copies. With the model itself, read in
// one allocation (readAll), Load allocates at most DecodeBytesPerByte+1
// bytes a byte of model plus about 3 MiB, within the 8× that issue 30
// asks (TestDecodeMemory, TestDecodeMemoryFile).
const (
	DecodeBytesPerByte = 5
	DecodeSlack        = 1 << 20
)

// MaxGraphDepth bounds how deeply graph attributes (If's branches) nest:
// a fixed bound, so that decoding recurses a bounded number of times.
// Their nodes, initializers and structures count against the model's
// limits and budget as the main graph's do.
const MaxGraphDepth = 16

func newBudget(l ir.Limits, size int) *budget {
	return &budget{l: l, mem: DecodeBytesPerByte*int64(size) + DecodeSlack}
}

// take charges n bytes of decoded structures for what.
func (b *budget) take(n int64, what string) *ir.Error {
	if b.mem < n {
		return ir.Errorf(ir.CodeLimitExceeded, -1, what, "decoding the model's %s needs more memory than %d bytes a byte of model (and %d MiB) allow (a fixed bound of the decoder: the model is malformed or hostile)", what, DecodeBytesPerByte, DecodeSlack>>20)
	}
	b.mem -= n
	return nil
}

// The in-memory sizes charged per element.
var (
	sizeNode   = int64(unsafe.Sizeof(nodeProto{}))
	sizeAttr   = int64(unsafe.Sizeof(attrProto{}))
	sizeTensor = int64(unsafe.Sizeof(tensorProto{}))
	sizeValue  = int64(unsafe.Sizeof(valueInfo{}))
	sizeDim    = int64(unsafe.Sizeof(dimProto{}))
	sizeOpset  = int64(unsafe.Sizeof(opsetID{}))
	sizeSlice  = int64(unsafe.Sizeof([]byte(nil)))
	sizeGraph  = int64(unsafe.Sizeof(graphProto{}))
)

// countFields counts the fields of message b by number (numbers below 32;
// a malformed tail ends the count, and walk reports it): the repeated
// fields' slices are then made once at their length, charged before they
// are made, instead of doubling as they are appended to (which allocated
// up to 4 times what they hold).
func countFields(b []byte) (c [32]int) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return c
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return c
		}
		b = b[n:]
		if num < 32 {
			c[num]++
		}
	}
	return c
}

// strCost is what a string of n bytes costs in a []string: its header
// and its bytes, rounded up to the allocator's 8.
func strCost(n int) int64 { return 16 + (int64(n)+7)&^7 }

// decodeError is invalid_graph for a malformed protobuf message.
func decodeError(where string, format string, args ...any) *ir.Error {
	return ir.Errorf(ir.CodeInvalidGraph, -1, where, "malformed ONNX model: "+format, args...)
}

// fieldFunc handles one field of a message: its number, wire type and the
// bytes of its value (the whole value for bytes fields, the encoded
// varint/fixed otherwise).
type fieldFunc func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error

// walk calls f for every field of the message b. Groups (deprecated) are
// skipped whole; a truncated or malformed field is invalid_graph.
func walk(b []byte, where string, f fieldFunc) *ir.Error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return decodeError(where, "bad field tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var u uint32
			u, n = protowire.ConsumeFixed32(b)
			x = uint64(u)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return decodeError(where, "field %d: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
		if typ == protowire.StartGroupType {
			continue
		}
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

// str returns a bytes field as a string, which must be UTF-8 (onnx.proto's
// strings are).
func str(v []byte, typ protowire.Type, where string) (string, *ir.Error) {
	if typ != protowire.BytesType {
		return "", decodeError(where, "a string field has wire type %d", typ)
	}
	if !utf8.Valid(v) {
		return "", decodeError(where, "a string field is not UTF-8")
	}
	return string(v), nil
}

func wantType(typ, want protowire.Type, where string) *ir.Error {
	if typ != want {
		return decodeError(where, "wire type %d where %d is expected", typ, want)
	}
	return nil
}

func decodeModel(b []byte, bud *budget) (*modelProto, *ir.Error) {
	m := &modelProto{}
	c := countFields(b)
	if err := bud.take(int64(c[8])*sizeOpset, "opset imports"); err != nil {
		return nil, err
	}
	m.opsets = make([]opsetID, 0, c[8])
	err := walk(b, "model", func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error {
		switch num {
		case 1: // ir_version
			if err := wantType(typ, protowire.VarintType, "model.ir_version"); err != nil {
				return err
			}
			m.irVersion = int64(x)
		case 7: // graph
			if err := wantType(typ, protowire.BytesType, "model.graph"); err != nil {
				return err
			}
			g, err := decodeGraph(v, bud)
			if err != nil {
				return err
			}
			m.graph = g
		case 8: // opset_import
			if err := wantType(typ, protowire.BytesType, "model.opset_import"); err != nil {
				return err
			}
			var o opsetID
			err := walk(v, "model.opset_import", func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error {
				var err *ir.Error
				switch num {
				case 1:
					o.domain, err = str(v, typ, "opset_import.domain")
				case 2:
					err = wantType(typ, protowire.VarintType, "opset_import.version")
					o.version = int64(x)
				}
				return err
			})
			if err != nil {
				return err
			}
			m.opsets = append(m.opsets, o)
		case 20:
			m.training = true
		case 25:
			m.functions++
		}
		return nil
	})
	return m, err
}

func decodeGraph(b []byte, bud *budget) (*graphProto, *ir.Error) {
	g := &graphProto{}
	l := bud.l
	c := countFields(b)
	switch {
	case c[1] > l.MaxNodes:
		return nil, ir.LimitErrorf("MaxNodes", -1, "graph.node", "the model has more than %d nodes (the node limit)", l.MaxNodes)
	case c[5] > l.MaxNodes:
		return nil, ir.LimitErrorf("MaxNodes", -1, "graph.initializer", "the model has more than %d initializers (the node limit)", l.MaxNodes)
	}
	if err := bud.take(int64(c[1])*sizeNode+int64(c[5])*sizeTensor+int64(c[11]+c[12])*sizeValue+int64(c[12])*sizeRead, "graph"); err != nil {
		return nil, err
	}
	g.nodes, g.inits = make([]nodeProto, 0, c[1]), make([]tensorProto, 0, c[5])
	g.inputs, g.outputs = make([]valueInfo, 0, min(c[11], l.MaxNodes)), make([]valueInfo, 0, min(c[12], l.MaxOutputs))
	var inputs, outputs int
	err := walk(b, "graph", func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error {
		if typ != protowire.BytesType {
			return nil // no scalar field of GraphProto is read
		}
		var err *ir.Error
		switch num {
		case 1: // node
			if bud.nodes++; bud.nodes > l.MaxNodes {
				return ir.LimitErrorf("MaxNodes", -1, "graph.node", "the model has more than %d nodes (the node limit)", l.MaxNodes)
			}
			var n nodeProto
			n, err = decodeNode(v, bud)
			g.nodes = append(g.nodes, n)
		case 2:
			g.name, err = str(v, typ, "graph.name")
		case 5: // initializer
			if bud.inits++; bud.inits > l.MaxNodes {
				return ir.LimitErrorf("MaxNodes", -1, "graph.initializer", "the model has more than %d initializers (the node limit)", l.MaxNodes)
			}
			var t tensorProto
			t, err = decodeTensor(v, bud, "graph.initializer")
			g.inits = append(g.inits, t)
		case 15:
			g.sparse++
		case 11, 12: // input, output
			field, count, max, limit := "graph.input", &inputs, l.MaxNodes, "MaxNodes"
			if num == 12 {
				field, count, max, limit = "graph.output", &outputs, l.MaxOutputs, "MaxOutputs"
			}
			if *count++; *count > max {
				return ir.LimitErrorf(limit, -1, field, "the model has more than %d %ss (the limit)", max, field[6:])
			}
			var vi valueInfo
			vi, err = decodeValueInfo(v, bud, field)
			if num == 11 {
				g.inputs = append(g.inputs, vi)
			} else {
				g.outputs = append(g.outputs, vi)
			}
		}
		return err
	})
	return g, err
}

func decodeNode(b []byte, bud *budget) (nodeProto, *ir.Error) {
	var n nodeProto
	c := countFields(b)
	// Each input is charged its entry in the import's read index too.
	if err := bud.take(16*int64(c[1]+c[2])+sizeRead*int64(c[1])+sizeAttr*int64(c[5]), "node fields"); err != nil {
		return n, err
	}
	n.inputs, n.outputs, n.attrs = make([]string, 0, c[1]), make([]string, 0, c[2]), make([]attrProto, 0, c[5])
	err := walk(b, "node", func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error {
		var err *ir.Error
		var s string
		switch num {
		case 1, 2:
			if err = bud.take(strCost(len(v))-16, "node inputs and outputs"); err != nil {
				return err
			}
			if s, err = str(v, typ, "node.input"); err != nil {
				return err
			}
			if num == 1 {
				n.inputs = append(n.inputs, s)
			} else {
				n.outputs = append(n.outputs, s)
			}
		case 3, 4, 7:
			if err = bud.take(strCost(len(v)), "node names"); err != nil {
				return err
			}
			s, err = str(v, typ, "node.name")
			switch num {
			case 3:
				n.name = s
			case 4:
				n.opType = s
			default:
				n.domain = s
			}
		case 5:
			if err = wantType(typ, protowire.BytesType, "node.attribute"); err != nil {
				return err
			}
			var a attrProto
			a, err = decodeAttr(v, bud)
			n.attrs = append(n.attrs, a)
		}
		return err
	})
	return n, err
}

func decodeAttr(b []byte, bud *budget) (attrProto, *ir.Error) {
	var a attrProto
	if c := countFields(b); c[9] > 0 {
		if err := bud.take(sizeSlice*int64(c[9]), "attribute strings"); err != nil {
			return a, err
		}
		a.strings = make([][]byte, 0, c[9])
	}
	err := walk(b, "attribute", func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error {
		var err *ir.Error
		switch num {
		case 1:
			if err = bud.take(strCost(len(v)), "attribute names"); err != nil {
				return err
			}
			a.name, err = str(v, typ, "attribute.name")
		case 21:
			a.ref, err = str(v, typ, "attribute.ref_attr_name")
		case 20:
			err = wantType(typ, protowire.VarintType, "attribute.type")
			a.typ = int32(x)
		case 2:
			err = wantType(typ, protowire.Fixed32Type, "attribute.f")
			a.f = math.Float32frombits(uint32(x))
		case 3:
			err = wantType(typ, protowire.VarintType, "attribute.i")
			a.i = int64(x)
		case 4:
			err = wantType(typ, protowire.BytesType, "attribute.s")
			a.s = v
		case 5:
			if err = wantType(typ, protowire.BytesType, "attribute.t"); err != nil {
				return err
			}
			if err = bud.take(sizeTensor, "attribute tensors"); err != nil {
				return err
			}
			var t tensorProto
			t, err = decodeTensor(v, bud, "attribute.t")
			a.t = &t
		case 7: // floats, packed or not
			err = appendFloats(&a.floats, typ, v, x, bud)
		case 8: // ints
			err = appendInts(&a.ints, typ, v, x, bud)
		case 9:
			if err = wantType(typ, protowire.BytesType, "attribute.strings"); err == nil {
				a.strings = append(a.strings, v)
			}
		case 6:
			if err = wantType(typ, protowire.BytesType, "attribute.g"); err != nil {
				return err
			}
			if bud.depth >= MaxGraphDepth {
				return ir.Errorf(ir.CodeLimitExceeded, -1, "attribute.g", "graph attributes nest more than %d deep (a fixed bound)", MaxGraphDepth)
			}
			if err = bud.take(sizeGraph, "graph attributes"); err != nil {
				return err
			}
			bud.depth++
			a.g, err = decodeGraph(v, bud)
			bud.depth--
		case 10:
			a.other = "tensors"
		case 11:
			a.other = "graphs"
		case 22, 23:
			a.other = "sparse tensor"
		case 14, 15:
			a.other = "type proto"
		}
		return err
	})
	return a, err
}

func appendFloats(dst *[]float32, typ protowire.Type, v []byte, x uint64, bud *budget) *ir.Error {
	switch typ {
	case protowire.Fixed32Type:
		if err := bud.take(4, "attribute list elements"); err != nil {
			return err
		}
		*dst = append(*dst, math.Float32frombits(uint32(x)))
	case protowire.BytesType:
		if len(v)%4 != 0 {
			return decodeError("attribute.floats", "a packed float list of %d bytes", len(v))
		}
		if err := bud.take(int64(len(v)), "attribute list elements"); err != nil {
			return err
		}
		*dst = slices.Grow(*dst, len(v)/4)
		for ; len(v) > 0; v = v[4:] {
			u, _ := protowire.ConsumeFixed32(v)
			*dst = append(*dst, math.Float32frombits(u))
		}
	default:
		return decodeError("attribute.floats", "wire type %d", typ)
	}
	return nil
}

func appendInts(dst *[]int64, typ protowire.Type, v []byte, x uint64, bud *budget) *ir.Error {
	switch typ {
	case protowire.VarintType:
		if err := bud.take(8, "list elements"); err != nil {
			return err
		}
		*dst = append(*dst, int64(x))
	case protowire.BytesType:
		k := countVarints(v)
		if err := bud.take(8*int64(k), "list elements"); err != nil {
			return err
		}
		*dst = slices.Grow(*dst, k)
		for len(v) > 0 {
			u, n := protowire.ConsumeVarint(v)
			if n < 0 {
				return decodeError("ints", "a packed varint list: %v", protowire.ParseError(n))
			}
			*dst = append(*dst, int64(u))
			v = v[n:]
		}
	default:
		return decodeError("ints", "wire type %d", typ)
	}
	return nil
}

// countVarints returns the number of varints in a packed field: the bytes
// without the continuation bit.
func countVarints(v []byte) int {
	n := 0
	for _, c := range v {
		if c < 0x80 {
			n++
		}
	}
	return n
}

func decodeTensor(b []byte, bud *budget, where string) (tensorProto, *ir.Error) {
	var t tensorProto
	c := countFields(b)
	data := c[4] + c[5] + c[7] + c[10] + c[11]
	// A data field's slice header, and the 8 bytes an unpacked value's
	// encoding is copied into; unpacked dims cost 8 bytes each.
	if err := bud.take((sizeSlice+8)*int64(data)+8*int64(c[1]), where); err != nil {
		return t, err
	}
	t.packed, t.dims = make([][]byte, 0, data), make([]int64, 0, c[1])
	err := walk(b, where, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error {
		var err *ir.Error
		switch num {
		case 1:
			err = appendInts(&t.dims, typ, v, x, bud)
		case 2:
			err = wantType(typ, protowire.VarintType, where+".data_type")
			t.dataType = int32(x)
		case 3:
			t.segment = true
		case 8:
			if err = bud.take(strCost(len(v)), "tensor names"); err != nil {
				return err
			}
			t.name, err = str(v, typ, where+".name")
		case 9:
			err = wantType(typ, protowire.BytesType, where+".raw_data")
			t.raw, t.hasRaw = v, true
		case 4, 5, 7, 10, 11:
			if t.field != 0 && t.field != num {
				return decodeError(where, "data in two fields (%d and %d)", t.field, num)
			}
			t.field = num
			if typ != protowire.BytesType { // one unpacked value: keep its encoding
				var enc []byte
				switch typ {
				case protowire.VarintType:
					enc = protowire.AppendVarint(nil, x)
				case protowire.Fixed32Type:
					enc = protowire.AppendFixed32(nil, uint32(x))
				case protowire.Fixed64Type:
					enc = protowire.AppendFixed64(nil, x)
				}
				t.packed = append(t.packed, enc)
			} else {
				t.packed = append(t.packed, v)
			}
		case 6:
			t.strings++
		case 13:
			t.external = true
		case 14:
			t.external = t.external || x == 1
		}
		return err
	})
	return t, err
}

func decodeValueInfo(b []byte, bud *budget, where string) (valueInfo, *ir.Error) {
	var vi valueInfo
	err := walk(b, where, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error {
		switch num {
		case 1:
			if err := bud.take(strCost(len(v)), "value names"); err != nil {
				return err
			}
			s, err := str(v, typ, where+".name")
			vi.name = s
			return err
		case 2:
			if err := wantType(typ, protowire.BytesType, where+".type"); err != nil {
				return err
			}
			vi.hasType = true
			return walk(v, where+".type", func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error {
				switch num {
				case 1:
					return decodeTensorType(v, bud, &vi, where)
				case 4:
					vi.nonTensor = "sequence"
				case 5:
					vi.nonTensor = "map"
				case 9:
					vi.nonTensor = "optional"
				case 8:
					vi.nonTensor = "sparse tensor"
				}
				return nil
			})
		}
		return nil
	})
	return vi, err
}

func decodeTensorType(b []byte, bud *budget, vi *valueInfo, where string) *ir.Error {
	return walk(b, where+".type.tensor_type", func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error {
		switch num {
		case 1:
			vi.elemType = int32(x)
		case 2:
			vi.hasShape = true
			c := countFields(v)
			if err := bud.take(sizeDim*int64(c[1]), "dimensions"); err != nil {
				return err
			}
			vi.dims = make([]dimProto, 0, c[1])
			return walk(v, where+".shape", func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error {
				if num != 1 {
					return nil
				}
				var d dimProto
				err := walk(v, where+".shape.dim", func(num protowire.Number, typ protowire.Type, v []byte, x uint64) *ir.Error {
					switch num {
					case 1:
						d.value, d.param, d.set = int64(x), "", true
					case 2:
						if err := bud.take(strCost(len(v)), "dimension names"); err != nil {
							return err
						}
						s, err := str(v, typ, where+".shape.dim.dim_param")
						d.param, d.value, d.set = s, 0, true
						return err
					}
					return nil
				})
				vi.dims = append(vi.dims, d)
				return err
			})
		}
		return nil
	})
}
