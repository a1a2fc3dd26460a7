// Package gobcheck checks a gob stream from a sender that is not trusted
// before encoding/gob decodes it. gob is not hardened against adversarial
// input (its package doc says so), and two things in it end a process:
//
//   - nesting: the decoder recurses once a level, with no limit, through a
//     recursive type of the receiver's (an ir.Kernel's Parts) or through a
//     field the receiver lacks, which it skips as deeply as the sender's own
//     type definitions nest; 4 bytes a level of ir.Kernel.Parts passed the
//     goroutine's 1 GB stack limit in 10 MB, a fatal error no recover
//     catches;
//   - allocation: a slice of N elements costs the sender N bytes (an empty
//     struct is its terminator alone) and the receiver N times the
//     element's size (368 bytes an ir.Kernel).
//
// Check walks the stream as the decoder will: the sender's type
// definitions must be the receiver's types exactly, field for field (so no
// field is skipped), the values may nest MaxDepth deep, and what the
// decoder will allocate for them is summed and held to MaxBytes.
package gobcheck

import (
	"encoding"
	"encoding/gob"
	"errors"
	"fmt"
	"reflect"
)

// Limits bound a stream's values.
type Limits struct {
	MaxDepth int   // structs, slices, arrays and maps nested in a value
	MaxBytes int64 // what decoding its values allocates, summed
}

// gob's built-in type ids (encoding/gob's type.go), and its bounds.
const (
	tBool      = 1
	tInt       = 2
	tUint      = 3
	tFloat     = 4
	tBytes     = 5
	tString    = 6
	tComplex   = 7
	firstUser  = 64
	tooBig     = (1 << 30) << (^uint(0) >> 62) // a message's largest count
	sliceChunk = 10 << 20                      // saferio's chunk: a larger slice grows by append
)

// Check reports whether b holds, in order, one value of each of types (the
// Go types a single gob.Decoder will decode into, pointers allowed), with
// their type definitions, within lim. It returns what decoding them will
// allocate (the slices, strings, maps and pointed-to values; the messages'
// own bytes aside) and how many bytes follow the last value, unread.
func Check(b []byte, lim Limits, types ...reflect.Type) (cost int64, rest int, err error) {
	c, err := check(b, lim, types)
	return c.cost, len(c.rest), err
}

func check(b []byte, lim Limits, types []reflect.Type) (*checker, error) {
	c := &checker{lim: lim, wire: map[int64]*wireType{}, compat: map[pair]bool{}}
	s := &stream{b: b}
	defer func() { c.rest = s.b }()
	for _, t := range types {
		if err := c.supported(t, map[reflect.Type]bool{}); err != nil {
			return c, err
		}
		id, msg, err := c.nextValue(s)
		if err != nil {
			return c, err
		}
		if !c.matches(t, id) {
			return c, fmt.Errorf("gob: the sender's type %d is not %v, field for field", id, t)
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			if d, err := msg.uint(); err != nil || d != 0 {
				return c, errors.New("gob: a value other than a struct does not start with its zero delta")
			}
		}
		if err := c.walk(msg, t, 0); err != nil {
			return c, err
		}
		if len(msg.b) != 0 {
			return c, fmt.Errorf("gob: %d bytes after a value in its message", len(msg.b))
		}
	}
	return c, nil
}

type checker struct {
	lim    Limits
	wire   map[int64]*wireType // the sender's definitions, by id
	compat map[pair]bool
	cost   int64
	rest   []byte // the bytes after the last value read
}

type pair struct {
	t  reflect.Type
	id int64
}

// stream is bytes being read.
type stream struct{ b []byte }

var errShort = errors.New("gob: the stream ends inside a value")

// uint reads gob's unsigned integer.
func (s *stream) uint() (uint64, error) {
	if len(s.b) == 0 {
		return 0, errShort
	}
	c := s.b[0]
	s.b = s.b[1:]
	if c <= 0x7f {
		return uint64(c), nil
	}
	n := -int(int8(c))
	if n > 8 || n > len(s.b) {
		return 0, errors.New("gob: a malformed unsigned integer")
	}
	var x uint64
	for _, c := range s.b[:n] {
		x = x<<8 | uint64(c)
	}
	s.b = s.b[n:]
	return x, nil
}

// int reads gob's signed integer.
func (s *stream) int() (int64, error) {
	x, err := s.uint()
	i := int64(x >> 1)
	if x&1 != 0 {
		i = ^i
	}
	return i, err
}

// count reads a length that must not exceed the bytes left (each element
// of a slice, map or string takes one at least).
func (s *stream) count() (int64, error) {
	n, err := s.uint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(s.b)) {
		return 0, fmt.Errorf("gob: a length of %d with %d bytes left", n, len(s.b))
	}
	return int64(n), nil
}

// nextValue reads messages up to the next value's, recording the type
// definitions before it, and returns its type id and its message.
func (c *checker) nextValue(s *stream) (int64, *stream, error) {
	for {
		n, err := s.uint()
		if err != nil {
			return 0, nil, err
		}
		if n >= uint64(tooBig) || n > uint64(len(s.b)) || n == 0 {
			return 0, nil, fmt.Errorf("gob: a message of %d bytes with %d left", n, len(s.b))
		}
		msg := &stream{b: s.b[:n]}
		s.b = s.b[n:]
		id, err := msg.int()
		if err != nil {
			return 0, nil, err
		}
		if id >= 0 {
			return id, msg, nil
		}
		id = -id
		if id < firstUser || c.wire[id] != nil {
			return 0, nil, fmt.Errorf("gob: a definition of type %d, reserved or defined already", id)
		}
		var w wireType
		if err := c.decode(msg, reflect.ValueOf(&w).Elem(), 0); err != nil {
			return 0, nil, fmt.Errorf("gob: the definition of type %d: %w", id, err)
		}
		if len(msg.b) != 0 {
			return 0, nil, fmt.Errorf("gob: %d bytes after the definition of type %d", len(msg.b), id)
		}
		c.wire[id] = &w
	}
}

// The sender's type definitions, as gob sends them (encoding/gob's
// wireType and the types it points to, field for field).
type (
	commonType struct {
		Name string
		Id   int32
	}
	arrayType struct {
		CommonType commonType
		Elem       int32
		Len        int
	}
	sliceType struct {
		CommonType commonType
		Elem       int32
	}
	fieldType struct {
		Name string
		Id   int32
	}
	structType struct {
		CommonType commonType
		Field      []fieldType
	}
	mapType struct {
		CommonType commonType
		Key, Elem  int32
	}
	encoderType struct{ CommonType commonType }
	wireType    struct {
		ArrayT                                        *arrayType
		SliceT                                        *sliceType
		StructT                                       *structType
		MapT                                          *mapType
		GobEncoderT, BinaryMarshalerT, TextMarshalerT *encoderType
	}
)

// decode reads a definition into v (a wireType and what it holds: structs,
// pointers, a slice, strings and integers), as gob's delta encoding lays
// it out.
func (c *checker) decode(s *stream, v reflect.Value, depth int) error {
	if depth > 8 {
		return errors.New("nested too deeply")
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return c.decode(s, v.Elem(), depth+1)
	case reflect.Struct:
		field := -1
		for len(s.b) > 0 {
			d, err := s.uint()
			if err != nil {
				return err
			}
			if d == 0 {
				return nil
			}
			if d > uint64(v.NumField()-1-field) {
				return errors.New("a field out of range")
			}
			field += int(d)
			if err := c.decode(s, v.Field(field), depth+1); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		n, err := s.count()
		if err != nil {
			return err
		}
		v.Set(reflect.MakeSlice(v.Type(), int(n), int(n)))
		for i := range int(n) {
			if err := c.decode(s, v.Index(i), depth+1); err != nil {
				return err
			}
		}
		return nil
	case reflect.String:
		n, err := s.count()
		if err != nil {
			return err
		}
		v.SetString(string(s.b[:n]))
		s.b = s.b[n:]
		return nil
	case reflect.Int, reflect.Int32:
		i, err := s.int()
		if err == nil && !v.OverflowInt(i) {
			v.SetInt(i)
		} else if err == nil {
			err = errors.New("an integer out of range")
		}
		return err
	}
	panic("gobcheck: decode of " + v.Type().String()) // the definitions' types above only
}

var (
	gobDecoder      = reflect.TypeFor[gob.GobDecoder]()
	binaryDecoder   = reflect.TypeFor[encoding.BinaryUnmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// supported refuses a receiving type Check does not follow: an interface,
// a channel or function in a field gob sends, or a type with its own
// decoding method.
func (c *checker) supported(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	if p := reflect.PointerTo(t); p.Implements(gobDecoder) || p.Implements(binaryDecoder) || p.Implements(textUnmarshaler) {
		return fmt.Errorf("gobcheck: %v decodes itself", t)
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return c.supported(t.Elem(), seen)
	case reflect.Map:
		if err := c.supported(t.Key(), seen); err != nil {
			return err
		}
		return c.supported(t.Elem(), seen)
	case reflect.Struct:
		for _, f := range sent(t) {
			if err := c.supported(f.Type, seen); err != nil {
				return err
			}
		}
		return nil
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return nil
	}
	return fmt.Errorf("gobcheck: %v is not a type Check follows", t)
}

// sent returns the fields of struct t that gob sends, in order: the
// exported ones that are not channels or functions.
func sent(t reflect.Type) []reflect.StructField {
	var fs []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		e := f.Type
		for e.Kind() == reflect.Pointer {
			e = e.Elem()
		}
		if f.IsExported() && e.Kind() != reflect.Chan && e.Kind() != reflect.Func {
			fs = append(fs, f)
		}
	}
	return fs
}

// matches reports whether the sender's type id is Go type t exactly: the
// same kind, and for a struct the same fields, in order, by name and type.
// So the decoder skips nothing, and what nests is t's own recursion.
func (c *checker) matches(t reflect.Type, id int64) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	k := pair{t, id}
	if ok, seen := c.compat[k]; seen {
		return ok // true while in progress: a recursive type
	}
	c.compat[k] = true
	ok := c.match(t, id)
	c.compat[k] = ok
	return ok
}

func (c *checker) match(t reflect.Type, id int64) bool {
	switch t.Kind() {
	case reflect.Bool:
		return id == tBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return id == tInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return id == tUint
	case reflect.Float32, reflect.Float64:
		return id == tFloat
	case reflect.Complex64, reflect.Complex128:
		return id == tComplex
	case reflect.String:
		return id == tString
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
		return id == tBytes
	}
	w := c.wire[id]
	if w == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Slice:
		return w.SliceT != nil && c.matches(t.Elem(), int64(w.SliceT.Elem))
	case reflect.Array:
		return w.ArrayT != nil && w.ArrayT.Len == t.Len() && c.matches(t.Elem(), int64(w.ArrayT.Elem))
	case reflect.Map:
		return w.MapT != nil && c.matches(t.Key(), int64(w.MapT.Key)) && c.matches(t.Elem(), int64(w.MapT.Elem))
	case reflect.Struct:
		fs := sent(t)
		if w.StructT == nil || len(w.StructT.Field) != len(fs) {
			return false
		}
		for i, f := range fs {
			if w.StructT.Field[i].Name != f.Name || !c.matches(f.Type, int64(w.StructT.Field[i].Id)) {
				return false
			}
		}
		return true
	}
	return false
}

// walk reads a value of type t (which the sender's type matches) and adds
// what decoding it allocates to c.cost.
func (c *checker) walk(s *stream, t reflect.Type, depth int) error {
	switch t.Kind() {
	case reflect.Pointer:
		if err := c.charge(int64(t.Elem().Size())); err != nil {
			return err
		}
		return c.walk(s, t.Elem(), depth)
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		_, err := s.uint()
		return err
	case reflect.Complex64, reflect.Complex128:
		if _, err := s.uint(); err != nil {
			return err
		}
		_, err := s.uint()
		return err
	case reflect.String:
		n, err := s.count()
		if err != nil {
			return err
		}
		s.b = s.b[n:]
		return c.charge(n)
	}
	if depth++; depth > c.lim.MaxDepth {
		return fmt.Errorf("gob: values nested more than %d deep", c.lim.MaxDepth)
	}
	switch t.Kind() {
	case reflect.Struct:
		fs := sent(t)
		field := -1
		for len(s.b) > 0 {
			d, err := s.uint()
			if err != nil {
				return err
			}
			if d == 0 {
				return nil
			}
			if d > uint64(len(fs)-1-field) {
				return fmt.Errorf("gob: a field of %v out of range", t)
			}
			field += int(d)
			if err := c.walk(s, fs[field].Type, depth); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		n, err := s.count()
		if err != nil {
			return err
		}
		size := n * int64(t.Elem().Size())
		if size > sliceChunk {
			size *= 2 // grown by append: the old array and the new one at once
		}
		if err := c.charge(size); err != nil {
			return err
		}
		if t.Elem().Kind() == reflect.Uint8 {
			s.b = s.b[n:]
			return nil
		}
		for range n {
			if len(s.b) == 0 {
				return errShort
			}
			if err := c.walk(s, t.Elem(), depth); err != nil {
				return err
			}
		}
		return nil
	case reflect.Array:
		n, err := s.uint()
		if err != nil {
			return err
		}
		if n != uint64(t.Len()) {
			return fmt.Errorf("gob: an array of %d elements for %v", n, t)
		}
		for range n {
			if err := c.walk(s, t.Elem(), depth); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		n, err := s.count()
		if err != nil {
			return err
		}
		// A map entry: its key and value, and about as much again of the
		// map's own (buckets, control bytes, growth).
		if err := c.charge(2 * n * int64(t.Key().Size()+t.Elem().Size())); err != nil {
			return err
		}
		for range n {
			if err := c.walk(s, t.Key(), depth); err != nil {
				return err
			}
			if err := c.walk(s, t.Elem(), depth); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("gobcheck: %v is not a type Check follows", t)
}

// charge adds n bytes to what decoding allocates, within the limit.
func (c *checker) charge(n int64) error {
	if c.cost += n; c.cost > c.lim.MaxBytes {
		return fmt.Errorf("gob: decoding the values would allocate more than %d bytes", c.lim.MaxBytes)
	}
	return nil
}
