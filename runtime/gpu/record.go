//go:build !js

package gpu

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The declarations of wgpu-native 0.19's webgpu.h that recording needs;
// the library itself is linked by github.com/cogentcore/webgpu.
typedef struct gpuccOpaque* gpuccHandle;
typedef void (*gpuccErrorCallback)(int type, char const *message, void *userdata);
void wgpuDevicePushErrorScope(gpuccHandle device, int filter);
void wgpuDevicePopErrorScope(gpuccHandle device, gpuccErrorCallback callback, void *userdata);
gpuccHandle wgpuDeviceCreateCommandEncoder(gpuccHandle device, void const *descriptor);
gpuccHandle wgpuCommandEncoderBeginComputePass(gpuccHandle encoder, void const *descriptor);

// WGPUComputePassTimestampWrites and WGPUComputePassDescriptor.
typedef struct {
	gpuccHandle query_set;
	uint32_t begin, end;
} gpucc_pass_ts;
typedef struct {
	void const *next;
	char const *label;
	gpucc_pass_ts const *ts;
} gpucc_pass_desc;
void wgpuComputePassEncoderSetPipeline(gpuccHandle pass, gpuccHandle pipeline);
void wgpuComputePassEncoderSetBindGroup(gpuccHandle pass, uint32_t index, gpuccHandle group, size_t n, uint32_t const *offsets);
void wgpuComputePassEncoderDispatchWorkgroups(gpuccHandle pass, uint32_t x, uint32_t y, uint32_t z);
void wgpuComputePassEncoderEnd(gpuccHandle pass);
void wgpuComputePassEncoderRelease(gpuccHandle pass);
void wgpuCommandEncoderCopyBufferToBuffer(gpuccHandle encoder, gpuccHandle src, uint64_t srcOff, gpuccHandle dst, uint64_t dstOff, uint64_t size);
void wgpuCommandEncoderWriteTimestamp(gpuccHandle encoder, gpuccHandle set, uint32_t index);
void wgpuCommandEncoderResolveQuerySet(gpuccHandle encoder, gpuccHandle set, uint32_t first, uint32_t count, gpuccHandle dst, uint64_t off);
gpuccHandle wgpuCommandEncoderFinish(gpuccHandle encoder, void const *descriptor);
void wgpuCommandEncoderRelease(gpuccHandle encoder);
void wgpuCommandBufferRelease(gpuccHandle buffer);
void wgpuQueueSubmit(gpuccHandle queue, size_t n, gpuccHandle const *buffers);

typedef struct {
	gpuccHandle pipeline, group;
	uint32_t x, y, z;
} gpucc_dispatch;

typedef struct {
	gpuccHandle src;
	uint64_t src_off;
	gpuccHandle dst;
	uint64_t dst_off, n;
} gpucc_copy;

// gpucc_rec is one recording's device, queue, timestamps (ts_set NULL
// when untimed) and outcome. The two timestamps are written by the
// compute pass itself (ts_pass; else by the encoder around the pass and
// the copies after it) and resolved into ts_read at ts_off: straight
// there when ts_direct (ts_read may take query results: wgpu's mappable
// primary buffers), else into ts_resolve and copied.
typedef struct {
	gpuccHandle device, queue;
	gpuccHandle ts_set, ts_resolve, ts_read;
	uint64_t ts_off;
	int32_t ts_pass, ts_direct;
	int32_t err;
	char msg[1024];
	gpuccHandle kept; // a command buffer recorded for later (mode 2), or NULL
} gpucc_rec;

static void gpucc_rec_error(int type, char const *message, void *u) {
	gpucc_rec *r = u;
	r->err = type;
	if (type != 0 && message != NULL) {
		strncpy(r->msg, message, sizeof r->msg - 1);
	}
}

// gpucc_record records the copies pre (staged uploads), then the
// dispatches into one compute pass, then the copies, with the pass
// between timestamps when r->ts_set is set (the copies after it too when
// the encoder writes them), and submits them
// (mode 1; mode 0 releases it unsubmitted: BenchmarkRecord times the
// recording alone; mode 2 keeps it in r->kept for gpucc_submit_kept): the
// whole recording inside one validation error scope (WGPUErrorFilter_Validation
// is 0), popped before the submission, so that a recording with an error
// is released and never submitted (wgpu-native aborts the process on an
// invalid submission).
static void gpucc_record(gpucc_rec *r, gpucc_copy const *pre, size_t np, gpucc_dispatch const *ds, size_t nd, gpucc_copy const *cs, size_t nc, int mode) {
	wgpuDevicePushErrorScope(r->device, 0);
	gpuccHandle enc = wgpuDeviceCreateCommandEncoder(r->device, NULL);
	for (size_t i = 0; i < np; i++) {
		wgpuCommandEncoderCopyBufferToBuffer(enc, pre[i].src, pre[i].src_off, pre[i].dst, pre[i].dst_off, pre[i].n);
	}
	int pass_ts = r->ts_set != NULL && r->ts_pass;
	if (r->ts_set != NULL && !pass_ts) {
		wgpuCommandEncoderWriteTimestamp(enc, r->ts_set, 0);
	}
	if (nd > 0 || pass_ts) {
		gpucc_pass_ts tw = {r->ts_set, 0, 1};
		gpucc_pass_desc pd = {NULL, NULL, &tw};
		gpuccHandle pass = wgpuCommandEncoderBeginComputePass(enc, pass_ts ? &pd : NULL);
		for (size_t i = 0; i < nd; i++) {
			wgpuComputePassEncoderSetPipeline(pass, ds[i].pipeline);
			wgpuComputePassEncoderSetBindGroup(pass, 0, ds[i].group, 0, NULL);
			wgpuComputePassEncoderDispatchWorkgroups(pass, ds[i].x, ds[i].y, ds[i].z);
		}
		wgpuComputePassEncoderEnd(pass);
		wgpuComputePassEncoderRelease(pass);
	}
	for (size_t i = 0; i < nc; i++) {
		wgpuCommandEncoderCopyBufferToBuffer(enc, cs[i].src, cs[i].src_off, cs[i].dst, cs[i].dst_off, cs[i].n);
	}
	if (r->ts_set != NULL) {
		if (!pass_ts) {
			wgpuCommandEncoderWriteTimestamp(enc, r->ts_set, 1);
		}
		if (r->ts_direct) {
			wgpuCommandEncoderResolveQuerySet(enc, r->ts_set, 0, 2, r->ts_read, r->ts_off);
		} else {
			wgpuCommandEncoderResolveQuerySet(enc, r->ts_set, 0, 2, r->ts_resolve, 0);
			wgpuCommandEncoderCopyBufferToBuffer(enc, r->ts_resolve, 0, r->ts_read, r->ts_off, 16);
		}
	}
	gpuccHandle cmd = wgpuCommandEncoderFinish(enc, NULL);
	wgpuDevicePopErrorScope(r->device, gpucc_rec_error, r);
	wgpuCommandEncoderRelease(enc);
	if (r->err == 0 && mode == 1) {
		wgpuQueueSubmit(r->queue, 1, &cmd);
	}
	if (r->err == 0 && mode == 2) {
		r->kept = cmd;
		cmd = NULL;
	}
	if (cmd != NULL) {
		wgpuCommandBufferRelease(cmd);
	}
}

// gpucc_unmap unmaps buffer inside a validation error scope, its outcome
// in r (wgpu calls the scope's callback before the pop returns).
void wgpuBufferUnmap(gpuccHandle buffer);
static void gpucc_unmap(gpucc_rec *r, gpuccHandle buffer) {
	r->err = 0;
	r->msg[0] = 0;
	wgpuDevicePushErrorScope(r->device, 0);
	wgpuBufferUnmap(buffer);
	wgpuDevicePopErrorScope(r->device, gpucc_rec_error, r);
}

// gpucc_write writes n bytes at off of buffer through the queue, as
// wgpuQueueWriteBuffer does, inside a validation error scope, its outcome
// in r.
void wgpuQueueWriteBuffer(gpuccHandle queue, gpuccHandle buffer, uint64_t off, void const *data, size_t n);
static void gpucc_write(gpucc_rec *r, gpuccHandle buffer, uint64_t off, void const *data, size_t n) {
	r->err = 0;
	r->msg[0] = 0;
	wgpuDevicePushErrorScope(r->device, 0);
	wgpuQueueWriteBuffer(r->queue, buffer, off, data, n);
	wgpuDevicePopErrorScope(r->device, gpucc_rec_error, r);
}

// gpucc_submit_kept submits the command buffer gpucc_record kept, and
// releases it.
static void gpucc_submit_kept(gpucc_rec *r) {
	wgpuQueueSubmit(r->queue, 1, &r->kept);
	wgpuCommandBufferRelease(r->kept);
	r->kept = NULL;
}

// gpucc_drop_kept releases the kept command buffer, unsubmitted.
static void gpucc_drop_kept(gpucc_rec *r) {
	if (r->kept != NULL) {
		wgpuCommandBufferRelease(r->kept);
		r->kept = NULL;
	}
}
*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
)

// The binding's objects hold their wgpu-native handles in unexported
// fields: these mirror the layouts of cogentcore/webgpu v0.23.0 (a device
// reference, then the object's own handle; or the handle alone), which
// rawLayout checks when a device opens.
type (
	rawPair   struct{ device, ref C.gpuccHandle }
	rawSingle struct{ ref C.gpuccHandle }
)

// rawLayout reports how a binding type's layout differs from its mirror,
// or nil: Open refuses to record through a mirror that would read the
// wrong words.
func rawLayout() error {
	pair := []string{"deviceRef", "ref"}
	for _, c := range []struct {
		v      any
		fields []string
	}{{wgpu.Buffer{}, pair}, {wgpu.Queue{}, pair}, {wgpu.Device{}, []string{"ref"}},
		{wgpu.ComputePipeline{}, []string{"ref"}}, {wgpu.BindGroup{}, []string{"ref"}}, {wgpu.QuerySet{}, []string{"ref"}}} {
		t := reflect.TypeOf(c.v)
		ok := t.NumField() == len(c.fields) && t.Size() == uintptr(len(c.fields))*unsafe.Sizeof(uintptr(0))
		for i := 0; ok && i < len(c.fields); i++ {
			f := t.Field(i)
			ok = f.Name == c.fields[i] && f.Type.Kind() == reflect.Pointer && f.Offset == uintptr(i)*unsafe.Sizeof(uintptr(0))
		}
		if !ok {
			return fmt.Errorf("the binding's %v is not laid out as gpucc's mirror of cogentcore/webgpu v0.23.0 (%v)", t, c.fields)
		}
	}
	return nil
}

// recorder is what a device keeps for recordSubmit: the outcome in C
// memory (wgpu's error callback writes it) and the arrays, reused; and
// the next run, recorded ahead (ahead.go).
type recorder struct {
	rec   *C.gpucc_rec
	recDs []C.gpucc_dispatch
	recCs []C.gpucc_copy
	recPs []C.gpucc_copy
	next  ahead
}

// free gives the C memory back; the device is closing.
func (r *recorder) free() {
	if r.rec != nil {
		C.gpucc_drop_kept(r.rec)
		C.free(unsafe.Pointer(r.rec))
		r.rec = nil
	}
}

// unmapBuffer unmaps buf as (*wgpu.Buffer).Unmap does, in one error
// scope, with the outcome in C memory: the binding's Unmap made a cgo
// handle and a closure for its scope's callback at each call (2.6 of a
// resident run's 31 allocations, 2026-12-05); d.mu is held.
func (d *Device) unmapBuffer(buf *wgpu.Buffer) error {
	r, err := d.recMem()
	if err != nil {
		return err
	}
	r.device = singleRef(unsafe.Pointer(d.dev))
	C.gpucc_unmap(r, pairRef(unsafe.Pointer(buf)))
	if r.err != 0 {
		return errors.New("wgpu.(*Buffer).Unmap(): " + C.GoString(&r.msg[0]))
	}
	return nil
}

// writeRaw writes data at off of buf as (*wgpu.Queue).WriteBuffer does,
// in one error scope with its outcome in C memory, where the binding made
// a cgo handle and a closure at each call (a run's small host inputs take
// one each); d.mu is held.
func (d *Device) writeRaw(buf *wgpu.Buffer, off uint64, data []byte) error {
	r, err := d.recMem()
	if err != nil {
		return err
	}
	r.device = singleRef(unsafe.Pointer(d.dev))
	r.queue = pairRef(unsafe.Pointer(d.queue))
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	C.gpucc_write(r, pairRef(unsafe.Pointer(buf)), C.uint64_t(off), p, C.size_t(len(data)))
	if r.err != 0 {
		return errors.New("wgpu.(*Queue).WriteBuffer(): " + C.GoString(&r.msg[0]))
	}
	return nil
}

// recMem is the device's C memory for recordings' outcomes, made at its
// first use; d.mu is held.
func (d *Device) recMem() (*C.gpucc_rec, error) {
	if d.rec == nil {
		d.rec = (*C.gpucc_rec)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gpucc_rec{}))))
		if d.rec == nil {
			return nil, errors.New("record: out of memory")
		}
	}
	return d.rec, nil
}

// dropKept releases the command buffer recorded ahead, if any; d.mu is
// held.
func (d *Device) dropKept() {
	if d.rec != nil && d.rec.kept != nil {
		C.gpucc_drop_kept(d.rec)
	}
	d.next.kept = false
}

// submitKept submits the command buffer recorded ahead; d.mu is held,
// and one is kept.
func (d *Device) submitKept() {
	C.gpucc_submit_kept(d.rec)
	d.next.kept = false
	d.n.Submits++
	d.n.Ahead++
	d.submitted()
}

func pairRef(p unsafe.Pointer) C.gpuccHandle   { return (*rawPair)(p).ref }
func singleRef(p unsafe.Pointer) C.gpuccHandle { return (*rawSingle)(p).ref }

// copyOp is one buffer-to-buffer copy recorded after a run's dispatches.
type copyOp struct {
	src    *wgpu.Buffer
	srcOff uint64
	dst    *wgpu.Buffer
	dstOff uint64
	n      uint64
}

// tsPlace is where a timed recording resolves its two timestamps: the 16
// bytes at off (a multiple of 256) of buf, a MapRead buffer: the device's
// own (tsRead) or a run's read staging buffer, after its outputs, so
// that one map reads both.
type tsPlace struct {
	buf *wgpu.Buffer
	off uint64
}

// recordSubmit records ds (their bind groups bgs) into one compute pass,
// then copies, and submits them, the pass timed into ts unless ts is nil:
// one cgo call and one error scope, where the binding took an error scope
// for each of creating the encoder, ending the pass, each copy, each
// timestamp call and finishing (9 for a timed run of one kernel). A
// validation error comes back with wgpu's message and nothing is
// submitted. d.mu is held.
func (d *Device) recordSubmit(ds []Dispatch, bgs []*wgpu.BindGroup, copies []copyOp, ts *tsPlace) error {
	return d.recordRun(ds, bgs, copies, ts, modeSubmit)
}

// What recordRun does with what it recorded.
const (
	modeRelease = 0 // nothing: the recording alone is timed
	modeSubmit  = 1
	modeKeep    = 2 // keep it for submitKept (no pending copies go first)
)

// tsCommands is what timing a recording adds to it besides the pass's
// own timestamps: the resolve, and the copy out of tsResolve unless the
// resolve lands in the read buffer itself; the encoder's two timestamp
// writes unless the pass writes them.
func (d *Device) tsCommands() int {
	n := 1
	if !d.tsDirect {
		n++
	}
	if !d.tsPass {
		n += 2
	}
	return n
}

// recordRun is recordSubmit, with what it recorded submitted, released
// or kept by mode.
func (d *Device) recordRun(ds []Dispatch, bgs []*wgpu.BindGroup, copies []copyOp, ts *tsPlace, mode int) error {
	submit := mode == modeSubmit
	d.n.Encoders++
	d.n.Scopes++
	r, err := d.recMem()
	if err != nil {
		return err
	}
	r.err, r.msg[0] = 0, 0
	r.ts_set, r.ts_resolve, r.ts_read, r.ts_off = nil, nil, nil, 0
	r.ts_pass, r.ts_direct = cBool(d.tsPass), cBool(d.tsDirect)
	r.device = singleRef(unsafe.Pointer(d.dev))
	r.queue = pairRef(unsafe.Pointer(d.queue))
	if ts != nil {
		r.ts_set = singleRef(unsafe.Pointer(d.tsQuery))
		r.ts_resolve = pairRef(unsafe.Pointer(d.tsResolve))
		r.ts_read = pairRef(unsafe.Pointer(ts.buf))
		r.ts_off = C.uint64_t(ts.off)
		d.n.Commands += d.tsCommands()
	}
	// The arrays hold C handles only, so they may live in Go memory.
	d.recDs = d.recDs[:0]
	for i := range ds {
		g := ds[i].Groups
		d.recDs = append(d.recDs, C.gpucc_dispatch{pipeline: singleRef(unsafe.Pointer(ds[i].Pipeline.pipe)),
			group: singleRef(unsafe.Pointer(bgs[i])), x: C.uint32_t(g[0]), y: C.uint32_t(g[1]), z: C.uint32_t(g[2])})
	}
	d.recCs = cCopies(d.recCs[:0], copies)
	var pre []copyOp
	if submit {
		pre = d.pendingCopies() // staged uploads go first (stage.go)
	}
	d.recPs = cCopies(d.recPs[:0], pre)
	d.n.Commands += len(d.recCs) + len(d.recPs)
	var dp *C.gpucc_dispatch
	if len(d.recDs) > 0 {
		dp = &d.recDs[0]
	}
	if mode == modeKeep {
		d.dropKept()
	}
	C.gpucc_record(r, first(d.recPs), C.size_t(len(d.recPs)), dp, C.size_t(len(d.recDs)), first(d.recCs), C.size_t(len(d.recCs)), C.int(mode))
	if r.err != 0 {
		// The staged uploads' copies stay pending for the next
		// submission: a refused run loses no tensor's data.
		return errors.New("wgpu: recording: " + C.GoString(&r.msg[0]))
	}
	if submit {
		d.n.Submits++
		d.submitted()
	}
	return nil
}

func cBool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// cCopies appends copies to cs as C structs.
func cCopies(cs []C.gpucc_copy, copies []copyOp) []C.gpucc_copy {
	for _, c := range copies {
		cs = append(cs, C.gpucc_copy{src: pairRef(unsafe.Pointer(c.src)), src_off: C.uint64_t(c.srcOff),
			dst: pairRef(unsafe.Pointer(c.dst)), dst_off: C.uint64_t(c.dstOff), n: C.uint64_t(c.n)})
	}
	return cs
}

// first is the address of cs's first element, or nil.
func first(cs []C.gpucc_copy) *C.gpucc_copy {
	if len(cs) == 0 {
		return nil
	}
	return &cs[0]
}
