package onnx

import (
	"bytes"
	"io"
	"io/fs"

	"github.com/gpucc/gpucc/ir"
)

// Bytes returns a reader of the serialized model raw that Load,
// LoadContext, Parse, ReadSignature and ReadTensor decode where it lies:
// they hold raw, not a copy of it, so a caller that has the model in
// memory imports it holding its bytes once (a copy was 1× the model more,
// 46.7 MB for ResNet-18). raw must not change until they return, nor while
// a Model that Parse made from it is in use: the Model keeps slices of it.
// Other readers read it as a bytes.Reader; the functions above take what
// is left unread.
func Bytes(raw []byte) io.Reader { return &inPlace{Reader: bytes.NewReader(raw), raw: raw} }

// inPlace is Bytes's reader: a bytes.Reader that also gives its slice.
type inPlace struct {
	*bytes.Reader
	raw []byte
}

// rest takes the bytes not yet read, as a read to the end would.
func (p *inPlace) rest() []byte {
	b := p.raw[len(p.raw)-p.Len():]
	p.Seek(0, io.SeekEnd)
	return b
}

// readAll reads r whole, refusing more than max bytes before it holds them.
// A reader from Bytes is taken as it is; others are read into one
// allocation of the size the reader says, not a doubling series (which
// allocates up to 3× the model): a bytes.Reader's Len, a file's size.
func readAll(r io.Reader, max int64) ([]byte, *ir.Error) {
	if p, ok := r.(*inPlace); ok {
		if int64(p.Len()) > max {
			return nil, overMax(max)
		}
		return p.rest(), nil
	}
	var buf bytes.Buffer
	size := int64(-1)
	switch f := r.(type) {
	case interface{ Len() int }:
		size = int64(f.Len())
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	if size >= 0 && size <= max {
		buf.Grow(int(size) + bytes.MinRead)
	}
	n, err := buf.ReadFrom(io.LimitReader(r, ir.SatAdd(max, 1)))
	if err != nil {
		return nil, ir.Errorf(ir.CodeIO, -1, "", "reading the model: %v", err)
	}
	if n > max {
		return nil, overMax(max)
	}
	return buf.Bytes(), nil
}

func overMax(max int64) *ir.Error {
	return ir.LimitErrorf("MaxGraphBytes", -1, "", "the model exceeds the limit of %d bytes", max)
}
