package gobcheck

import (
	"bytes"
	"encoding/gob"
	"reflect"
	"strings"
	"testing"
)

type node struct {
	Name  string
	Kids  []node
	Data  []float32
	Bytes []byte
	Pair  [2]int32
	Ptr   *leaf
	Tags  map[string]int
	C     complex64
	On    bool
	U     uint8
	fn    func() // unexported: not sent
}

type leaf struct{ X float64 }

func encode(t testing.TB, vs ...any) []byte {
	var b bytes.Buffer
	enc := gob.NewEncoder(&b)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

var loose = Limits{MaxDepth: 64, MaxBytes: 1 << 30}

// TestCheckAccepts: what an Encoder of the same types writes passes, one
// value or several (each with its type definitions before it), and the
// decoder then reads it; the cost counts the slices' and strings' bytes.
func TestCheckAccepts(t *testing.T) {
	n := node{Name: "root", Kids: []node{{Name: "a", Data: []float32{1, -0.5}}, {Kids: []node{{U: 7}}}},
		Bytes: []byte("xyz"), Pair: [2]int32{-1, 1 << 30}, Ptr: &leaf{X: -2}, Tags: map[string]int{"k": 3}, C: 1i, On: true}
	b := encode(t, n, []int{1, 2, 3}, &leaf{X: 1})
	cost, rest, err := Check(b, loose, reflect.TypeFor[node](), reflect.TypeFor[[]int](), reflect.TypeFor[*leaf]())
	if err != nil || rest != 0 {
		t.Fatal(rest, err)
	}
	// The first two values, and the third's messages left unread.
	if _, rest, err := Check(b, loose, reflect.TypeFor[node](), reflect.TypeFor[[]int]()); err != nil || rest != len(encode(t, n, []int{1, 2, 3}, &leaf{X: 1}))-len(encode(t, n, []int{1, 2, 3})) {
		t.Errorf("two values of three: %d bytes left, %v", rest, err)
	}
	if cost <= 0 {
		t.Errorf("cost %d", cost)
	}
	dec := gob.NewDecoder(bytes.NewReader(b))
	var got node
	if err := dec.Decode(&got); err != nil || got.Kids[1].Kids[0].U != 7 {
		t.Fatal(err, got)
	}
	// One slice of 1000 float32s alone: its 4000 bytes.
	cost, _, err = Check(encode(t, make([]float32, 1000)), loose, reflect.TypeFor[[]float32]())
	if err != nil || cost != 4000 {
		t.Errorf("[]float32 of 1000: cost %d, %v; want 4000", cost, err)
	}
}

// TestCheckRefuses: each limit and each way a sender's stream differs
// from the receiver's types is refused with a message saying so.
func TestCheckRefuses(t *testing.T) {
	deep := node{}
	for range 40 {
		deep = node{Kids: []node{deep}}
	}
	type extra struct {
		Name  string
		Extra []int
	}
	type renamed struct{ Nome string }
	type fewer struct{ Name string }
	good := encode(t, node{Name: "x"})
	// good's last message is short: its count, then the value; one byte
	// more inside it, after the value's terminator.
	longer := append(append([]byte{}, good...), 0x00)
	longer[lastMessage(good)]++
	for _, tt := range []struct {
		name string
		b    []byte
		lim  Limits
		want string
		typ  reflect.Type
	}{
		{"too deep", encode(t, deep), Limits{MaxDepth: 20, MaxBytes: 1 << 30}, "nested more than 20", nil},
		{"over budget", encode(t, make([]int64, 1000)), Limits{MaxDepth: 8, MaxBytes: 7999}, "allocate more than 7999", reflect.TypeFor[[]int64]()},
		{"a field more", encode(t, extra{Name: "x", Extra: []int{1}}), loose, "field for field", nil},
		{"a field renamed", encode(t, renamed{"x"}), loose, "field for field", nil},
		{"a field fewer", encode(t, fewer{"x"}), loose, "field for field", nil},
		{"another type", encode(t, 3.5), loose, "field for field", nil},
		{"truncated", good[:len(good)-2], loose, "message", nil},
		{"empty", nil, loose, "ends", nil},
		{"a value's bytes after it", longer, loose, "after a value", nil},
	} {
		typ := tt.typ
		if typ == nil {
			typ = reflect.TypeFor[node]()
		}
		_, _, err := Check(tt.b, tt.lim, typ)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}

// lastMessage returns where b's last message starts (its count, one byte
// for a short message).
func lastMessage(b []byte) int {
	s := &stream{b: b}
	last := 0
	for len(s.b) > 0 {
		last = len(b) - len(s.b)
		n, _ := s.uint()
		s.b = s.b[n:]
	}
	return last
}

// FuzzCheck: Check never panics, and a stream it accepts decodes without
// the decoder failing in a way Check should have seen (a fatal error
// would end the fuzzer).
func FuzzCheck(f *testing.F) {
	f.Add(encode(f, node{Name: "root", Kids: []node{{Name: "a", Data: []float32{1}}}, Tags: map[string]int{"k": 1}}))
	f.Add(encode(f, node{Ptr: &leaf{1}, Pair: [2]int32{1, 2}, Bytes: []byte{1}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := Limits{MaxDepth: 16, MaxBytes: 64*int64(len(b)) + 4096}
		if _, _, err := Check(b, lim, reflect.TypeFor[node]()); err != nil {
			return
		}
		var n node
		gob.NewDecoder(bytes.NewReader(b)).Decode(&n)
	})
}
