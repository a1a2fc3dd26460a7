package gpucc

import (
	"context"
	"encoding/binary"
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// Device tensors of every dtype (issue 32). A DeviceTensor of dtype d
// holds its values as a typed kernel stores them: TypedBytes' layout
// (little-endian, d.Size() bytes an element: float16 and bfloat16 as
// their 16 bits, bool as one byte, int64 as 8), padded to whole 32-bit
// words (typedWords), in a backend Buffer of that many words. A float32
// tensor is the same as before: one word a value. The words travel
// through Device.Upload and Device.Read as float32 bit patterns, which
// every backend copies without looking at them (TestTypedDeviceTensors
// sends int64 values whose words are NaNs, signalling ones included).

// typedWords is the 32-bit words that n values of dtype t take on a device
// (wgsl.TypedWords' rule: at least one).
func typedWords(t ir.DType, n int) int { return max(1, (n*t.Size()+3)/4) }

// DType returns the tensor's dtype: float32 unless a typed graph's run
// kept an output of another dtype (RunOptions.Keep) or UploadTensor made it.
func (t *DeviceTensor) DType() ir.DType { return t.dtype }

// UploadTensor copies a host tensor of any dtype into a new DeviceTensor,
// which a typed graph's run takes for an input of that dtype and shape.
// The tensor is checked as a run checks an input: every dimension at
// least 1, Data (a float dtype's, already rounded to it; finite unless
// the runtime's Limits.NonFinite allows ±Inf and NaN) or Ints (within an
// integer dtype's range, 0 or 1 for bool) of the shape's length;
// invalid_input otherwise. A float32 tensor is Upload's.
func (rt *Runtime) UploadTensor(ctx context.Context, t Tensor) (*DeviceTensor, error) {
	shape := ir.Shape(t.Shape)
	if t.DType == ir.F32 {
		return rt.Upload(ctx, shape, t.Data)
	}
	if shape.Elements(math.MaxInt32) < 0 {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "shape", "upload: shape %v: every dimension must be at least 1, and the tensor at most 2^31-1 elements", shape)
	}
	n := ir.Node{Op: ir.OpInput, DType: t.DType, Shape: slices.Clone(shape)}
	if err := setTypedInput(&n, "upload", t, rt.opts.Limits.NonFinite); err != nil {
		return nil, err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.dead() {
		return nil, rt.errClosed()
	}
	return rt.newTypedTensorLocked(ctx, n.Shape, t.DType, n.Data, n.Ints)
}

// ReadTensor copies the tensor to the host as a Tensor of its dtype: a
// float dtype's values in Data (checked finite as Read checks them, unless
// the runtime's Limits.NonFinite allows ±Inf and NaN: then every NaN is
// the quiet NaN), an integer or bool dtype's in Ints, float64's bits in
// Ints (checked and canonicalized as a float dtype's).
func (t *DeviceTensor) ReadTensor(ctx context.Context) (Tensor, error) {
	if t == nil {
		return Tensor{}, ir.Errorf(ir.CodeInvalidTensor, -1, "", "read: nil device tensor")
	}
	if t.dtype == ir.F32 {
		data, err := t.Read(ctx, nil)
		if err != nil {
			return Tensor{}, err
		}
		return Tensor{Shape: slices.Clone(t.shape), Data: data}, nil
	}
	rt := t.rt
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if err := t.checkLocked(rt, "read"); err != nil {
		return Tensor{}, err
	}
	v, err := t.hostLocked(ctx)
	if err != nil {
		return Tensor{}, err
	}
	if v.DType.IsFloat() {
		if rt.opts.Limits.NonFinite {
			canonicalNaN(v.Data)
		} else if err := checkFinite(rt.info.Name, "tensor", v.Data); err != nil {
			return Tensor{}, err
		}
	}
	if v.DType.IsFloat64() { // as float32's: every NaN the quiet NaN, or refused
		if rt.opts.Limits.NonFinite {
			v.Ints = canonicalNaN64(v.DType, v.Ints)
		} else if err := checkFinite64(rt.info.Name, "tensor", v.DType, v.Ints); err != nil {
			return Tensor{}, err
		}
	}
	return v, nil
}

// hostLocked copies t to the host as it is, decoded to its dtype's values
// (no finiteness check: the values a run reads from a device tensor are
// not checked on any backend); rt.mu held, t checked live.
func (t *DeviceTensor) hostLocked(ctx context.Context) (Tensor, error) {
	rt := t.rt
	n := t.shape.Len()
	out := make([]float32, typedWords(t.dtype, n))
	if _, err := guard(rt, func() (struct{}, error) { return struct{}{}, rt.dev.Read(ctx, t.buf, out) }); err != nil {
		return Tensor{}, rt.wrap(err)
	}
	if t.dtype == ir.F32 {
		return Tensor{Shape: slices.Clone(t.shape), Data: out}, nil
	}
	b := make([]byte, 4*len(out))
	for k, w := range out {
		binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(w))
	}
	f, i := backend.TypedValues(t.dtype, b[:n*t.dtype.Size()])
	return Tensor{Shape: slices.Clone(t.shape), DType: t.dtype, Data: f, Ints: i}, nil
}

// newTypedTensorLocked allocates a tensor of dtype dt and uploads the
// values (f for a float dtype, i otherwise) in its device layout; rt.mu
// held.
func (rt *Runtime) newTypedTensorLocked(ctx context.Context, shape ir.Shape, dt ir.DType, f []float32, i []int64) (*DeviceTensor, error) {
	if dt == ir.F32 {
		return rt.newTensorLocked(ctx, shape, f)
	}
	// The cap is checked before the values are converted to their device
	// layout, which copies them twice (an int64 tensor of 2^22
	// values over a 1 MiB cap allocated 67 MB before its refusal).
	if err := rt.reserve(4 * int64(typedWords(dt, shape.Len()))); err != nil {
		return nil, err
	}
	b := backend.TypedBytes(dt, f, i)
	words := make([]float32, typedWords(dt, shape.Len()))
	b = append(b, make([]byte, 4*len(words)-len(b))...)
	for k := range words {
		words[k] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*k:]))
	}
	buf, err := guard(rt, func() (backend.Buffer, error) { return rt.dev.Alloc(ctx, len(words)) })
	if err != nil {
		return nil, rt.wrap(err)
	}
	if _, err := guard(rt, func() (struct{}, error) { return struct{}{}, rt.dev.Upload(ctx, buf, words) }); err != nil {
		buf.Release()
		return nil, rt.wrap(err)
	}
	return rt.adoptTypedLocked(buf, shape, dt), nil
}

// adoptTypedLocked makes buf, holding values of dtype dt in their device
// layout, a live tensor of rt; rt.mu held.
func (rt *Runtime) adoptTypedLocked(buf backend.Buffer, shape ir.Shape, dt ir.DType) *DeviceTensor {
	t := &DeviceTensor{rt: rt, buf: buf, shape: shape, dtype: dt}
	rt.tensors[t] = struct{}{}
	rt.live += t.Bytes()
	return t
}
