package backend

import (
	"context"
	"fmt"
)

// HostBuffer is a Buffer in host memory: the device memory of the cpu,
// wasm and native backends.
type HostBuffer struct{ Data []float32 }

// Len returns the number of values.
func (b *HostBuffer) Len() int { return len(b.Data) }

// Release drops the memory.
func (b *HostBuffer) Release() { b.Data = nil }

// HostMemory implements Device's buffer methods with HostBuffers, for
// backends whose device memory is host memory. Embed it.
type HostMemory struct{}

// Alloc returns a zeroed HostBuffer of n values.
func (HostMemory) Alloc(ctx context.Context, n int) (Buffer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &HostBuffer{Data: make([]float32, n)}, nil
}

// Upload copies data into b, a HostBuffer.
func (HostMemory) Upload(ctx context.Context, b Buffer, data []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	hb, err := hostBuffer(b, len(data))
	if err != nil {
		return err
	}
	copy(hb.Data, data)
	return nil
}

// Read copies b, a HostBuffer, into out.
func (HostMemory) Read(ctx context.Context, b Buffer, out []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	hb, err := hostBuffer(b, len(out))
	if err != nil {
		return err
	}
	copy(out, hb.Data)
	return nil
}

func hostBuffer(b Buffer, n int) (*HostBuffer, error) {
	hb, ok := b.(*HostBuffer)
	if !ok {
		return nil, fmt.Errorf("%T is not a host buffer", b)
	}
	if len(hb.Data) != n {
		return nil, fmt.Errorf("host buffer of %d values, transfer of %d", len(hb.Data), n)
	}
	return hb, nil
}

// HostData returns the values of a host Arg: its Host slice or its
// HostBuffer's memory.
func HostData(a Arg) []float32 {
	if a.Buf != nil {
		if hb, ok := a.Buf.(*HostBuffer); ok {
			return hb.Data
		}
		return nil
	}
	return a.Host
}
