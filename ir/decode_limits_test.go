package ir_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/gpucc/gpucc/ir"
)

// wantCode fails unless err is an *ir.Error with code.
func wantCode(t *testing.T, err error, code ir.Code) *ir.Error {
	t.Helper()
	var e *ir.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
	return e
}

// TestDecodeExactKeys: keys match exactly, never case-folded, and a key
// appears once (issue 11, item 8).
func TestDecodeExactKeys(t *testing.T) {
	ok := graph(in3, out0)
	tests := []struct{ name, doc string }{
		{"VERSION", strings.Replace(ok, `"version"`, `"VERSION"`, 1)},
		{"Nodes", strings.Replace(ok, `"nodes"`, `"Nodes"`, 1)},
		{"OP", strings.Replace(ok, `"op"`, `"OP"`, 1)},
		{"long s shape", strings.Replace(ok, `"shape"`, `"ſhape"`, 1)},
		{"Kelvin-sign id", strings.Replace(ok, `"name":"y","id"`, `"name":"y","\u212ad"`, 1)},
		{"output NAME", strings.Replace(ok, `"name"`, `"NAME"`, 1)},
		{"duplicate version", strings.Replace(ok, `"version":1`, `"version":1,"version":1`, 1)},
		{"duplicate nodes", strings.Replace(ok, `"outputs"`, `"nodes":[],"outputs"`, 1)},
		{"duplicate op", strings.Replace(ok, `"op":"input"`, `"op":"full","op":"input"`, 1)},
		{"duplicate data", strings.Replace(ok, `"data":[1,2,3]`, `"data":[1,2,3],"data":[4,5,6]`, 1)},
		{"duplicate escaped key", strings.Replace(ok, `"data":[1,2,3]`, `"data":[1,2,3],"d\u0061ta":[4,5,6]`, 1)},
		{"duplicate output id", strings.Replace(ok, `"id":0}]`, `"id":0,"id":0}]`, 1)},
	}
	if _, err := ir.DecodeBytes([]byte(ok), ir.Limits{}); err != nil {
		t.Fatalf("the unmodified graph: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ir.DecodeBytes([]byte(tt.doc), ir.Limits{})
			wantCode(t, err, ir.CodeInvalidGraph)
		})
	}
}

// TestErrorsQuoteShort: an attacker's string is quoted cut short, so an
// error never grows with the document (issue 11, item 4).
func TestErrorsQuoteShort(t *testing.T) {
	long := strings.Repeat("é", 1<<19) // 1 MiB, multi-byte runes
	num := "1" + strings.Repeat("0", 1<<20)
	tests := []struct {
		name string
		doc  string
	}{
		{"op name", graph(`{"id":0,"op":"`+long+`","shape":[1],"value":1}`, out0)},
		{"unknown key", graph(`{"id":0,"`+long+`":1}`, out0)},
		{"unknown top-level key", `{"` + long + `":1}`},
		{"number literal", graph(`{"id":0,"op":"full","shape":[1],"value":`+num+`}`, out0)},
		{"data literal", graph(`{"id":0,"op":"input","shape":[1],"data":[-`+num+`]}`, out0)},
		{"integer literal", graph(`{"id":`+num+`}`, out0)},
		{"input name", graph(`{"id":0,"op":"input","name":"`+long+`","shape":[1],"data":[1]}`, out0)},
		{"output name", graph(in3, `{"name":"`+long+`","id":0}`)},
		{"output name and missing node", graph(in3, `{"name":"`+long[:200]+`","id":7}`)},
		{"duplicate long key", graph(`{"id":0,"op":"full","shape":[1],"value":1,"`+long+`":1,"`+long+`":2}`, out0)},
		{"broken string", graph(`{"id":0,"op":"`+long+"\x00"+`"}`, out0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ir.DecodeBytes([]byte(tt.doc), ir.Limits{})
			if err == nil {
				t.Fatal("accepted")
			}
			if n := len(err.Error()); n > 1200 {
				t.Errorf("error of %d bytes: %.200s…", n, err)
			}
		})
	}
	// Validate quotes the names of a graph built in Go too.
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{1}, []float32{1})
	b.Output(long, x)
	b.Output(long, x)
	if _, err := b.Build(ir.Limits{}); err == nil || len(err.Error()) > 1200 {
		t.Errorf("Build: error of %d bytes", len(fmt.Sprint(err)))
	}
}

func TestQuote(t *testing.T) {
	if got, want := ir.Quote("op"), `"op"`; got != want {
		t.Errorf("Quote(op) = %s, want %s", got, want)
	}
	s := ir.Quote(strings.Repeat("ж", 100)) // 200 bytes, 2 per rune
	if want := `"` + strings.Repeat("ж", 32) + `"… (200 bytes)`; s != want {
		t.Errorf("Quote = %s, want %s", s, want)
	}
}

// TestQuoteBytesNearTheCut: a literal of 65 to 67 bytes, just past the
// quoted length and short of its rune-boundary slack, panicked in QuoteBytes
// (found by FuzzDecode in CI's short run: a 70-digit version number).
func TestQuoteBytesNearTheCut(t *testing.T) {
	for n := 60; n <= 72; n++ {
		lit := strings.Repeat("1", n)
		got := ir.QuoteBytes([]byte(lit))
		want := `"` + lit + `"`
		if n > 64 {
			want = `"` + lit[:64] + `"… (` + fmt.Sprint(n) + ` bytes)`
		}
		if got != want {
			t.Errorf("QuoteBytes(%d bytes) = %s, want %s", n, got, want)
		}
		doc := `{"version":` + lit + `}`
		if _, err := ir.DecodeBytes([]byte(doc), ir.Limits{}); err == nil {
			t.Errorf("version of %d digits accepted", n)
		}
	}
}

// TestOutputBytesLimit: outputs count against MaxOutputBytes, each output
// counted, so 16 outputs of one 1M-element tensor are refused (issue 11,
// item 5).
func TestOutputBytesLimit(t *testing.T) {
	var outs []string
	for k := range 16 {
		outs = append(outs, fmt.Sprintf(`{"name":"o%d","id":0}`, k))
	}
	doc := graph(`{"id":0,"op":"full","shape":[1048576],"value":1}`, strings.Join(outs, ","))
	_, err := ir.DecodeBytes([]byte(doc), ir.Limits{})
	if e := wantCode(t, err, ir.CodeLimitExceeded); !strings.HasPrefix(e.Field, "outputs[") {
		t.Errorf("field %q, want an output", e.Field)
	}
	// Eight such outputs are exactly the default 32 MiB: accepted.
	doc = graph(`{"id":0,"op":"full","shape":[1048576],"value":1}`, strings.Join(outs[:8], ","))
	if _, err := ir.DecodeBytes([]byte(doc), ir.Limits{}); err != nil {
		t.Errorf("8 outputs of 4 MiB: %v", err)
	}
	if _, err := ir.DecodeBytes([]byte(doc), ir.Limits{MaxOutputBytes: 8<<22 - 1}); err == nil {
		t.Error("8 outputs of 4 MiB accepted under a limit one byte smaller")
	}
}

// TestSaturatingTotals: with the element, storage and ops limits raised to
// MaxInt64, a [2^31,2^31] tensor's storage (2^64 bytes) and a matmul's
// operations overflow int64; they must be refused, not wrap around to pass
// (issue 11, item 6).
func TestSaturatingTotals(t *testing.T) {
	huge := ir.Limits{MaxElements: math.MaxInt64, MaxStorageBytes: math.MaxInt64, MaxOps: math.MaxInt64, MaxOutputBytes: math.MaxInt64}
	docs := map[string]string{
		"storage": graph(`{"id":0,"op":"full","shape":[2147483648,2147483648],"value":1}`, out0),
		"summed storage": graph(`{"id":0,"op":"full","shape":[1073741824,1073741824],"value":1},`+
			`{"id":1,"op":"relu","a":0},{"id":2,"op":"relu","a":1},{"id":3,"op":"relu","a":2}`, out0),
		"matmul ops": graph(`{"id":0,"op":"full","shape":[1,3037000500],"value":1},{"id":1,"op":"full","shape":[3037000500,1],"value":1},`+
			`{"id":2,"op":"matmul","a":1,"b":0}`, out0),
		"life ops": graph(`{"id":0,"op":"full","shape":[1,2305843009213693952],"value":1},{"id":1,"op":"life","a":0}`, `{"name":"y","id":1}`),
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			_, err := ir.DecodeBytes([]byte(doc), huge)
			wantCode(t, err, ir.CodeLimitExceeded)
		})
	}
	// The same through Validate, for a graph built in Go.
	g := &ir.Graph{Nodes: []ir.Node{{Op: ir.OpFull, Shape: ir.Shape{1 << 31, 1 << 31}, Scalar: 1}}, Outputs: []ir.Output{{Name: "y", ID: 0}}}
	wantCode(t, ir.Validate(g, huge), ir.CodeLimitExceeded)
	if got := ir.SatMul(1<<62, 4); got != math.MaxInt64 {
		t.Errorf("SatMul(2^62, 4) = %d", got)
	}
	if got := ir.SatAdd(math.MaxInt64-1, 2); got != math.MaxInt64 {
		t.Errorf("SatAdd = %d", got)
	}
}

// TestGraphBytesScale: the document limit follows the storage limit unless
// set, and a document over it is refused before it is parsed.
func TestGraphBytesScale(t *testing.T) {
	if got := (ir.Limits{}).WithDefaults().MaxGraphBytes; got != 256<<20 {
		t.Errorf("default MaxGraphBytes %d, want 256 MiB", got)
	}
	if got := (ir.Limits{MaxStorageBytes: 1 << 30}).WithDefaults().MaxGraphBytes; got != 8<<30 {
		t.Errorf("MaxGraphBytes at 1 GiB of storage: %d, want 8 GiB", got)
	}
	doc := graph(in3, out0)
	// 8 × MaxInt64 saturates, and the reader's one byte more must too.
	if _, err := ir.Decode(strings.NewReader(doc), ir.Limits{MaxStorageBytes: math.MaxInt64}); err != nil {
		t.Errorf("storage limit MaxInt64: %v", err)
	}
	_, err := ir.Decode(strings.NewReader(doc+strings.Repeat(" ", 100)), ir.Limits{MaxGraphBytes: int64(len(doc))})
	wantCode(t, err, ir.CodeLimitExceeded)
	if _, err := ir.Decode(strings.NewReader(doc), ir.Limits{MaxGraphBytes: int64(len(doc))}); err != nil {
		t.Errorf("a document exactly at the limit: %v", err)
	}
	// Broken JSON past the limit reports the limit, not the break.
	_, err = ir.Decode(strings.NewReader(`{"version":1,`+strings.Repeat(` `, 100)+`}}}`), ir.Limits{MaxGraphBytes: 64})
	wantCode(t, err, ir.CodeLimitExceeded)
}

// allocated returns the bytes f allocates in all, garbage included: an
// upper bound on the memory it needs at its peak.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeMemory checks the package promise: Decode allocates at most 4
// bytes per byte of document plus 1 MiB, whatever the document (issue 11,
// item 3: the old decoder took 140 bytes per byte of a flood of {}).
func TestDecodeMemory(t *testing.T) {
	var chain, wide, late, dims, nest, outs bytes.Buffer
	chain.WriteString(`{"version":1,"nodes":[{"id":0,"op":"input","shape":[1048576],"data":[`)
	for k := range 1 << 20 {
		if k > 0 {
			chain.WriteByte(',')
		}
		chain.WriteString("-1.1754944e-38")
	}
	chain.WriteString(`]}`)
	for k := 1; k < 512; k++ {
		fmt.Fprintf(&chain, `,{"id":%d,"op":"relu","a":%d}`, k, k-1)
	}
	chain.WriteString(`],"outputs":[{"name":"y","id":511}]}`)

	wide.WriteString(`{"version":1,"nodes":[`)
	for k := range 512 {
		if k > 0 {
			wide.WriteByte(',')
		}
		fmt.Fprintf(&wide, `{"id":%d,"op":"full","shape":[1048576],"value":1}`, k)
	}
	wide.WriteString(`],"outputs":[{"name":"y","id":511}]}`)

	// Data before its shape: the reader cannot preallocate, and stops at
	// the element limit.
	late.WriteString(`{"version":1,"nodes":[{"id":0,"op":"input","data":[`)
	late.WriteString(strings.Repeat("1,", 1<<21))
	late.WriteString(`1],"shape":[1048576]}],"outputs":[{"name":"y","id":0}]}`)

	dims.WriteString(`{"version":1,"nodes":[{"id":0,"op":"full","value":1,"shape":[`)
	dims.WriteString(strings.Repeat("1,", 5<<20))
	dims.WriteString(`1]}],"outputs":[{"name":"y","id":0}]}`)

	nest.WriteString(`{"version":1,"nodes":[{"id":0,"op":"full","shape":[1],"value":1,"data":`)
	nest.WriteString(strings.Repeat("[", 1<<20))

	outs.WriteString(`{"version":1,"outputs":[`)
	outs.WriteString(strings.Repeat(`{"name":"y","id":0},`, 1<<19))

	docs := []struct {
		name   string
		doc    []byte
		limits ir.Limits
	}{
		{"10 MB of empty nodes", []byte(`{"version":1,"nodes":[` + strings.Repeat(`{},`, 10<<20/3) + `{}],"outputs":[]}`), ir.Limits{}},
		{"10 MB of valid empty-ish nodes", []byte(`{"version":1,"nodes":[` + strings.Repeat(`{"id":0,"op":"full","shape":[],"value":0},`, 10<<20/42) + `{}]}`), ir.Limits{}},
		{"huge shape", dims.Bytes(), ir.Limits{}},
		{"deep nesting", nest.Bytes(), ir.Limits{}},
		{"a flood of outputs", outs.Bytes(), ir.Limits{}},
		{"512-node chain from a full-size input", chain.Bytes(), ir.Limits{MaxStorageBytes: 4 << 30, MaxOps: 1 << 40}},
		{"512 nodes at the element limit", wide.Bytes(), ir.Limits{MaxStorageBytes: 4 << 30, MaxOps: 1 << 40}},
		{"data before shape, over the limit", late.Bytes(), ir.Limits{}},
		{"data before shape", []byte(`{"version":1,"nodes":[{"id":0,"op":"input","data":[` + strings.Repeat("1,", 1<<20-1) + `1],"shape":[1048576]}],"outputs":[{"name":"y","id":0}]}`), ir.Limits{}},
		{"one 4M-element input", []byte(`{"version":1,"nodes":[{"id":0,"op":"input","shape":[4194304],"data":[` + strings.Repeat("0,", 1<<22-1) + `0]}],"outputs":[{"name":"y","id":0}]}`), ir.Limits{MaxElements: 1 << 22}},
	}
	for _, tt := range docs {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = ir.DecodeBytes(tt.doc, tt.limits) })
			bound := 4*uint64(len(tt.doc)) + 1<<20
			t.Logf("%d bytes of JSON: %d bytes allocated (%.2f per byte), error %.80v", len(tt.doc), n, float64(n)/float64(len(tt.doc)), err)
			if n > bound {
				t.Errorf("allocated %d bytes for a %d-byte document, over the stated bound of %d", n, len(tt.doc), bound)
			}
		})
	}
}

// TestDecodeClaims: a data array is allocated for the values that arrive,
// never for the count its shape claims before them. A 90-byte document
// claiming 2^20 int64 values allocated their 8.4 MB before reading its
// one value, and under limits raised for large graphs a shape of 2^31
// elements claimed 16 GiB (2^28 of them allocated 2.1 GB); from memory or
// a file (size known) or from a stream (chunks), each is refused within
// the package's bound of 4 bytes a byte plus 1 MiB.
func TestDecodeClaims(t *testing.T) {
	raised := ir.Limits{MaxElements: 1 << 31, MaxStorageBytes: 1 << 40, MaxOps: 1 << 50}
	docs := []struct {
		name   string
		doc    string
		limits ir.Limits
	}{
		{"float32 2^20 claimed, one value", `{"version":1,"nodes":[{"id":0,"op":"input","shape":[1048576],"data":[1]}]}`, ir.Limits{}},
		{"int64 2^20 claimed, one value", `{"version":1,"nodes":[{"id":0,"op":"input","dtype":"int64","shape":[1048576],"data":[1]}]}`, ir.Limits{}},
		{"int64 2^31 claimed, raised limits", `{"version":1,"nodes":[{"id":0,"op":"input","dtype":"int64","shape":[2147483648],"data":[1,2]}]}`, raised},
		{"float32 2^31 claimed, raised limits", `{"version":1,"nodes":[{"id":0,"op":"input","shape":[2147483648],"data":[1,2]}]}`, raised},
		{"bool 2^31 claimed, body cut", `{"version":1,"nodes":[{"id":0,"op":"input","dtype":"bool","shape":[2147483648],"data":[true`, raised},
		{"2^31 claimed, data before shape", `{"version":1,"nodes":[{"id":0,"op":"input","data":[1,2,3],"shape":[2147483648]}]}`, raised},
	}
	for _, tt := range docs {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				var err error
				n := allocated(func() {
					var r io.Reader = strings.NewReader(tt.doc)
					if stream {
						r = io.MultiReader(r) // no Len: the size is not known
					}
					_, err = ir.Decode(r, tt.limits)
				})
				t.Logf("%d bytes: %d allocated, %v", len(tt.doc), n, err)
				if err == nil {
					t.Fatal("decoded")
				}
				if bound := 4*uint64(len(tt.doc)) + 1<<20; n > bound {
					t.Errorf("allocated %d bytes for a %d-byte document, over the stated bound of %d", n, len(tt.doc), bound)
				}
			})
		}
	}
}

// TestDecodeStreamed: a graph decodes to the same nodes from memory (its
// arrays sized by the document's length), from a file and from a stream
// (its arrays gathered in chunks), for arrays of each carrier across the
// chunks' boundaries.
func TestDecodeStreamed(t *testing.T) {
	doc := func(dtype string, n int, shapeFirst bool, v func(int) string) string {
		var b strings.Builder
		data := make([]string, n)
		for k := range data {
			data[k] = v(k)
		}
		shape := fmt.Sprintf(`"shape":[%d]`, n)
		arr := `"data":[` + strings.Join(data, ",") + `]`
		if shapeFirst {
			fmt.Fprintf(&b, `{"version":1,"nodes":[{"id":0,"op":"input","dtype":%q,%s,%s}],"outputs":[{"name":"y","id":0}]}`, dtype, shape, arr)
		} else {
			fmt.Fprintf(&b, `{"version":1,"nodes":[{"id":0,"op":"input","dtype":%q,%s,%s}],"outputs":[{"name":"y","id":0}]}`, dtype, arr, shape)
		}
		return b.String()
	}
	dir := t.TempDir()
	for _, n := range []int{1, 2, 1<<14 - 1, 1 << 14, 1<<14 + 1, 3<<14 + 5} {
		for _, shapeFirst := range []bool{true, false} {
			for _, c := range []struct {
				dtype string
				v     func(int) string
			}{
				{"float32", func(k int) string { return fmt.Sprint(float32(k) * -1.5) }},
				{"int64", func(k int) string { return fmt.Sprint(int64(k) * -(1 << 40)) }},
				{"bool", func(k int) string { return fmt.Sprint(k%3 == 0) }},
			} {
				d := doc(c.dtype, n, shapeFirst, c.v)
				want, err := ir.DecodeBytes([]byte(d), ir.Limits{})
				if err != nil {
					t.Fatalf("%s n=%d: %v", c.dtype, n, err)
				}
				path := filepath.Join(dir, "g.json")
				if err := os.WriteFile(path, []byte(d), 0o644); err != nil {
					t.Fatal(err)
				}
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				fromFile, err := ir.Decode(f, ir.Limits{})
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				streamed, err := ir.Decode(iotest.HalfReader(strings.NewReader(d)), ir.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(want, streamed) || !reflect.DeepEqual(want, fromFile) {
					t.Errorf("%s n=%d shape first %v: the streamed or file graph differs from the in-memory one", c.dtype, n, shapeFirst)
				}
				if x := want.Nodes[0]; len(x.Data)+len(x.Ints) != n || n > 1 && (x.Data != nil && x.Data[1] != -1.5 || x.Ints != nil && c.dtype == "int64" && x.Ints[1] != -(1<<40)) {
					t.Errorf("%s n=%d: values %v %v", c.dtype, n, x.Data[:min(2, len(x.Data))], x.Ints[:min(2, len(x.Ints))])
				}
			}
		}
	}
}
