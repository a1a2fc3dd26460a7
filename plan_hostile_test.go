package gpucc_test

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// gobUint is encoding/gob's unsigned integer.
func gobUint(u uint64) []byte {
	if u < 128 {
		return []byte{byte(u)}
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], u)
	i := 0
	for b[i] == 0 {
		i++
	}
	return append([]byte{byte(-(8 - i))}, b[i:]...)
}

// withValue is gob stream b with its last message's value replaced by
// body, its type id kept.
func withValue(b, body []byte) []byte {
	read := func(at int) (uint64, int) { // a gob uint at b[at:], and its width
		if b[at] <= 0x7f {
			return uint64(b[at]), 1
		}
		w := -int(int8(b[at]))
		var x uint64
		for _, c := range b[at+1 : at+1+w] {
			x = x<<8 | uint64(c)
		}
		return x, 1 + w
	}
	var last int
	for at := 0; at < len(b); {
		last = at
		n, w := read(at)
		at += w + int(n)
	}
	_, w := read(last)
	_, idw := read(last + w)
	msg := append(append([]byte{}, b[last+w:last+w+idw]...), body...)
	return append(append(b[:last:last], gobUint(uint64(len(msg)))...), msg...)
}

// TestDecodePlanHostile: a plan whose kernels' Parts nest 2^21 deep (10
// MB, 4 bytes a level) is refused invalid_graph before gob decodes it;
// decoded, it passed the goroutine's 1 GB stack, a fatal error that ended
// the process. A plan EncodePlan wrote still decodes (TestPlanKeepsNegativeZero).
func TestDecodePlanHostile(t *testing.T) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&gpucc.Plan{Program: &ir.Program{}}); err != nil {
		t.Fatal(err)
	}
	// Field deltas: the plan's Program (1), the program's Kernels (2), a
	// kernel's Tile (12, always sent) and Parts (+5 from Tile).
	const depth = 1 << 21
	var body bytes.Buffer
	body.Write([]byte{0x01, 0x02, 0x01})
	for range depth {
		body.Write([]byte{0x0c, 0x00, 0x05, 0x01})
	}
	body.Write([]byte{0x0c, 0x00, 0x00})
	body.Write(make([]byte, depth+2))
	_, err := gpucc.DecodePlan(withValue(b.Bytes(), body.Bytes()))
	if !errors.Is(err, ir.ErrInvalidGraph) || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("a plan nested %d deep: %v, want invalid_graph before decoding", depth, err)
	}
}
