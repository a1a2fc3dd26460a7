//go:build !js

package gpu

import "github.com/cogentcore/webgpu/wgpu"

// Counts is what a device has asked of wgpu-native since it was opened,
// by kind of call. A run's cost beyond its kernels is mostly these: each
// wait is a round trip to the GPU (about 18 µs on the H200), each
// submission about 10, and each error scope the binding pushes around a
// call (a cgo handle, a closure, a push and a pop inside wgpu) a slice of
// the recording's 9 µs. Tests pin what a run costs in each (a change that
// adds a call fails them); nothing here can be timed without a GPU.
//
// Every call the package makes that a count covers goes through this
// file's wrappers (TestCallsCounted checks the sources), so the counts
// are the calls, not an estimate. Pipeline creation (Compile, CompileAll)
// is not counted: it happens once per kernel, not per run.
type Counts struct {
	Submits    int // queue submissions
	Waits      int // poll loops until the GPU is done with something: each a round trip
	Scopes     int // validation error scopes pushed and popped, the binding's and this package's
	Encoders   int // command encoders recorded
	BindGroups int // bind groups created
	Buffers    int // buffers created (storage, uniform, staging)
	Writes     int // queue.WriteBuffer calls
	Maps       int // buffer maps asked for
	// Commands are the commands recorded besides the dispatches and
	// their pass, each a small operation of its own on the GPU: buffer
	// copies (staged uploads, readbacks, the timestamps' copy out of the
	// resolve buffer), query resolves, and the encoder's timestamp
	// writes. A pass's own timestamps (timestampWrites) are part of its
	// begin and end, not commands.
	Commands int
	// Ahead counts the submissions of a command buffer that the run
	// before recorded during its wait for the GPU (ahead.go): such a run
	// records nothing on its own path; the Encoders it counts are the
	// next run's.
	Ahead int
}

// Sub returns c minus o, field by field: what happened between two reads.
func (c Counts) Sub(o Counts) Counts {
	return Counts{Submits: c.Submits - o.Submits, Waits: c.Waits - o.Waits, Scopes: c.Scopes - o.Scopes,
		Encoders: c.Encoders - o.Encoders, BindGroups: c.BindGroups - o.BindGroups, Buffers: c.Buffers - o.Buffers,
		Writes: c.Writes - o.Writes, Maps: c.Maps - o.Maps, Commands: c.Commands - o.Commands, Ahead: c.Ahead - o.Ahead}
}

// Counts returns what the device has asked of wgpu so far.
func (d *Device) Counts() Counts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// RoundTrips returns how many submissions the device has made to its
// queue and how many times it has waited for the GPU (Counts' Submits and
// Waits).
func (d *Device) RoundTrips() (submits, waits int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n.Submits, d.n.Waits
}

// The wrappers below, and recordSubmit (record.go, which records and
// submits a whole run in one cgo call), are the only places the package
// makes these calls; d.mu is held by each caller.

func (d *Device) createBuffer(desc *wgpu.BufferDescriptor) (*wgpu.Buffer, error) {
	d.n.Buffers++
	d.n.Scopes++
	return d.dev.CreateBuffer(desc)
}

func (d *Device) createBindGroup(desc *wgpu.BindGroupDescriptor) (*wgpu.BindGroup, error) {
	d.n.BindGroups++
	d.n.Scopes++
	return d.dev.CreateBindGroup(desc)
}

func (d *Device) writeBuffer(buf *wgpu.Buffer, off uint64, data []byte) error {
	d.n.Writes++
	d.n.Scopes++
	return d.writeRaw(buf, off, data) // record.go: the scope's outcome in C memory
}

func (d *Device) unmap(buf *wgpu.Buffer) error {
	d.n.Scopes++
	return d.unmapBuffer(buf) // record.go: the scope's outcome in C memory
}

// startMap maps buf (see asyncMap), in the outcome memory of a done map
// where the device keeps one (newMap).
func (d *Device) startMap(buf *wgpu.Buffer, mode wgpu.MapMode, offset, n uint64) (*asyncMap, error) {
	d.n.Maps++
	d.n.Scopes++
	m := d.newMap()
	if err := m.start(buf, mode, offset, n); err != nil {
		return nil, err
	}
	return m, nil
}

// poll polls the device once without blocking and reports whether its
// queue is empty.
func (d *Device) poll() bool { return d.dev.Poll(false, nil) }
