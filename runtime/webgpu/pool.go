//go:build !js

package webgpu

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
	out   int // buffers handed out by get and not yet put back
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

// get returns a storage buffer of size bytes, from the pool when it has
// one.
func (p *bufferPool) get(size uint64, label string) (*gpu.Buffer, bool, error) {
	k := poolKey{roundedSize(size, false), false}
	if l := p.free[k]; len(l) > 0 {
		p.out++
		buf := l[len(l)-1]
		p.free[k] = l[:len(l)-1]
		p.held -= int64(k.size)
		return buf, true, nil
	}
	buf, err := p.dev.NewBuffer(size, label)
	if err == nil {
		p.out++
	}
	return buf, false, err
}

// put returns bufs to the pool, releasing those that do not fit.
func (p *bufferPool) put(bufs ...*gpu.Buffer) {
	for _, buf := range bufs {
		p.out--
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
