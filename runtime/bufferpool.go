//go:build !js

package runtime

import "github.com/gpucc/gpucc/runtime/gpu"

// bufferPool keeps released device buffers for reuse by later runs,
// keyed by exact size and kind, up to limit bytes in all. Reuse needs no
// clearing: every program writes each of its non-input buffers in full
// before reading it, and input buffers are uploaded in full.
type bufferPool struct {
	dev   *gpu.Device
	limit int64 // bytes kept; negative: keep nothing
	held  int64 // bytes now in free
	free  map[poolKey][]*gpu.Buffer
}

type poolKey struct {
	size    uint64
	uniform bool
}

// roundedSize is the size the device gives a request of n bytes.
func roundedSize(n uint64, uniform bool) uint64 {
	m := uint64(4)
	if uniform {
		m = 16
	}
	return max((n+m-1)/m*m, m)
}

// get returns a buffer of size bytes, from the pool when it has one.
func (p *bufferPool) get(size uint64, uniform bool, label string) (*gpu.Buffer, bool, error) {
	k := poolKey{roundedSize(size, uniform), uniform}
	if l := p.free[k]; len(l) > 0 {
		buf := l[len(l)-1]
		p.free[k] = l[:len(l)-1]
		p.held -= int64(k.size)
		return buf, true, nil
	}
	var buf *gpu.Buffer
	var err error
	if uniform {
		buf, err = p.dev.NewUniform(make([]byte, size), label)
	} else {
		buf, err = p.dev.NewBuffer(size, label)
	}
	return buf, false, err
}

// put returns bufs to the pool, releasing those that do not fit.
func (p *bufferPool) put(bufs []*gpu.Buffer) {
	for _, buf := range bufs {
		sz := int64(buf.Size())
		if p.held+sz > p.limit {
			buf.Release()
			continue
		}
		k := poolKey{buf.Size(), buf.Uniform()}
		p.free[k] = append(p.free[k], buf)
		p.held += sz
	}
}

// drain releases every pooled buffer.
func (p *bufferPool) drain() {
	for k, l := range p.free {
		for _, buf := range l {
			buf.Release()
		}
		delete(p.free, k)
	}
	p.held = 0
}
