//go:build cgo && !js

package webgpu

import "github.com/gpucc/gpucc/runtime/gpu"

// bufferPool keeps released device buffers for reuse by later runs,
// keyed by exact size and kind, up to limit bytes in all. Reuse needs no
// clearing: every program writes each of its non-input buffers in full
// before reading it, and input buffers are uploaded in full.
//
// When a buffer put back does not fit, the least recently put back
// buffers are released to make room for it. The pool used to release the
// newcomer instead: once one large run had filled it (relu(a*b+c) over 64M
// is four 256 MiB buffers, the whole default bound), every later run of
// other sizes allocated all its buffers afresh for the Runtime's life.
// Fresh buffers cost wgpu's zero fill and the driver's first touch at each
// run: on the H200, softmax [8192,1024] without pooling took 2.4–2.9 ms a
// run against 0.38 ms pooled, and the MLP train step 10–16 ms against 4–5
// (BenchmarkHistory with GPUCC_POOL_BYTES=-1, bench/RESULTS.md). The
// buffers most recently used are the likeliest to be asked for again.
//
// With the default bound (auto), the pool may keep more: as many bytes
// as the program once had handed out at the same time beyond those it
// has out now. A program that holds many outputs at once and then
// releases them (200 launched runs, each keeping a 16 MiB output) finds
// them all again at its next round instead of allocating all but the
// bound's worth afresh: a fresh buffer costs wgpu's zero fill and the
// driver's allocation (0.53 ms a run on the H200 against 0.077 for one
// that reused its buffer). The device then never holds more through the
// pool than the program did at its peak; a failed allocation releases
// every pooled buffer and tries once more.
//
// A warm run's take and put allocate nothing: a size's list keeps its
// memory while it is empty (the buffers of a steady loop of runs come
// and go), and the least recently put back buffer is found by its put's
// sequence number, only when the pool must release one. (A list of
// container/list allocated an element at every put, two allocations a
// run of relu(a*b+c) on resident inputs, until 2026-12-05.)
type bufferPool struct {
	dev      *gpu.Device
	limit    int64                // bytes kept; negative: keep nothing
	auto     bool                 // the limit is the default one, raised to the peak
	held     int64                // bytes now in free
	free     map[poolKey][]pooled // each size's buffers, least recently put back first
	count    int                  // buffers in free
	seq      uint64               // puts so far
	out      int                  // buffers handed out by get and not yet put back
	outBytes int64                // their bytes
	peak     int64                // the most outBytes has been
}

// pooled is a buffer in the pool and the sequence number of its put.
type pooled struct {
	buf *gpu.Buffer
	seq uint64
}

// maxEmptyKeys bounds the sizes whose empty list the pool keeps for the
// next put; past it, an emptied list is dropped (a server that runs many
// programs of many sizes does not keep a key for each).
const maxEmptyKeys = 256

type poolKey struct {
	size    uint64
	uniform bool
}

// newPool makes a pool that keeps limit bytes; auto raises the limit to
// the program's peak (see bufferPool).
func newPool(dev *gpu.Device, limit int64, auto bool) *bufferPool {
	return &bufferPool{dev: dev, limit: limit, auto: auto, free: map[poolKey][]pooled{}}
}

// bound is the bytes the pool may keep now.
func (p *bufferPool) bound() int64 {
	if p.auto && p.limit >= 0 {
		return max(p.limit, p.peak-p.outBytes)
	}
	return p.limit
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
	return p.take(size, func() string { return label })
}

// take is get with the new buffer's label made only when the pool has no
// buffer to give (a run's labels were formatted for each of its buffers
// on every run, pooled or not).
func (p *bufferPool) take(size uint64, label func() string) (*gpu.Buffer, bool, error) {
	k := poolKey{roundedSize(size, false), false}
	if l := p.free[k]; len(l) > 0 {
		e := l[len(l)-1]
		l[len(l)-1] = pooled{}
		if len(l) == 1 && len(p.free) > maxEmptyKeys {
			delete(p.free, k)
		} else {
			p.free[k] = l[:len(l)-1]
		}
		p.count--
		p.held -= int64(k.size)
		p.taken(k.size)
		return e.buf, true, nil
	}
	name := label()
	buf, err := p.dev.NewBuffer(size, name)
	if err != nil && p.count > 0 {
		// The device may be out of memory that the pool holds.
		p.drain()
		buf, err = p.dev.NewBuffer(size, name)
	}
	if err != nil {
		return nil, false, err
	}
	p.taken(k.size)
	return buf, false, nil
}

// taken counts a buffer of size bytes handed out.
func (p *bufferPool) taken(size uint64) {
	p.out++
	p.outBytes += int64(size)
	p.peak = max(p.peak, p.outBytes)
}

// put returns bufs to the pool, releasing the least recently put back
// buffers to make room; a buffer larger than the whole pool is released.
//
// They go back last first, so that gets of the same sizes in the same
// order (the next run of the same program) take them back in that order:
// each buffer of the run the same as the last time, and so its cached
// dispatch list and bind groups.
func (p *bufferPool) put(bufs ...*gpu.Buffer) {
	for i := len(bufs) - 1; i >= 0; i-- {
		buf := bufs[i]
		p.out--
		sz := int64(buf.Size())
		p.outBytes -= sz
		bound := p.bound()
		if sz > bound {
			buf.Release()
			continue
		}
		for p.held+sz > bound {
			p.evictOldest()
		}
		k := poolKey{buf.Size(), buf.Uniform()}
		p.seq++
		p.free[k] = append(p.free[k], pooled{buf, p.seq})
		p.count++
		p.held += sz
	}
}

// evictOldest releases the least recently put back buffer, the first of
// its size's list whose put came first; the pool is not empty.
func (p *bufferPool) evictOldest() {
	var k poolKey
	first := true
	for key, l := range p.free {
		if len(l) > 0 && (first || l[0].seq < p.free[k][0].seq) {
			k, first = key, false
		}
	}
	l := p.free[k]
	buf := l[0].buf
	copy(l, l[1:])
	l[len(l)-1] = pooled{}
	if len(l) == 1 {
		delete(p.free, k)
	} else {
		p.free[k] = l[:len(l)-1]
	}
	p.count--
	p.held -= int64(buf.Size())
	buf.Release()
}

// drain releases every pooled buffer.
func (p *bufferPool) drain() {
	for p.count > 0 {
		p.evictOldest()
	}
	clear(p.free)
}
