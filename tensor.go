package gpucc

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	goruntime "runtime"
	"slices"
	"sync"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// Value is an input value: host data (a Tensor, made by NewTensor) or a
// *DeviceTensor.
type Value interface{ value() }

// Inputs gives a run's inputs by name. An input left out takes the data
// embedded in the graph.
type Inputs map[string]Value

// Tensor is a tensor in host memory: an output of a run, or an input
// value.
type Tensor struct {
	Shape []int     `json:"shape"`
	Data  []float32 `json:"data"`
	// DType is the values' dtype: float32 (the zero value) unless set. A
	// float dtype's values are in Data (float16 and bfloat16 as float32
	// values already rounded to them), an integer or bool dtype's in Ints
	// (bool 0 or 1), float64's bits in Ints (ir.F64Bits, ir.F64Value).
	DType ir.DType `json:"-"`
	Ints  []int64  `json:"-"`
}

func (Tensor) value() {}

// MarshalJSON writes t as {"shape":[…],"data":[…]}. A scalar's shape is
// [] and a tensor without values has data [], never null: the encoding
// result-v1.schema.json publishes, whether the slices are nil or empty.
// A tensor of another dtype than float32 also says "dtype", and its data
// are integers, or true and false for bool; a float32 tensor's JSON is
// unchanged.
func (t Tensor) MarshalJSON() ([]byte, error) {
	shape := t.Shape
	if shape == nil {
		shape = []int{}
	}
	var data any = t.Data
	switch {
	case t.DType == ir.Bool:
		b := make([]bool, len(t.Ints))
		for i, v := range t.Ints {
			b[i] = v != 0
		}
		data = b
	case t.DType.IsFloat64():
		data = jsonFloat64s(t.Ints)
	case !t.DType.IsFloat():
		data = t.Ints
		if t.Ints == nil {
			data = []int64{}
		}
	case t.Data == nil:
		data = []float32{}
	}
	if t.DType.IsFloat() && firstNonFinite(t.Data) >= 0 {
		data = jsonFloats(t.Data)
	}
	if t.DType == ir.F32 {
		return json.Marshal(struct {
			Shape []int `json:"shape"`
			Data  any   `json:"data"`
		}{shape, data})
	}
	return json.Marshal(struct {
		Shape []int  `json:"shape"`
		DType string `json:"dtype"`
		Data  any    `json:"data"`
	}{shape, t.DType.String(), data})
}

// jsonFloats is data for MarshalJSON when it holds ±Inf or NaN, which
// JSON cannot spell: they are written as the strings "Infinity",
// "-Infinity" and "NaN" (protobuf's JSON mapping), and only a host that
// allows non-finite values (ir.Limits.NonFinite) returns them.
type jsonFloats []float32

func (d jsonFloats) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for k, v := range d {
		if k > 0 {
			b = append(b, ',')
		}
		switch {
		case v != v:
			b = append(b, `"NaN"`...)
		case math.IsInf(float64(v), 1):
			b = append(b, `"Infinity"`...)
		case math.IsInf(float64(v), -1):
			b = append(b, `"-Infinity"`...)
		default:
			e, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, e...)
		}
	}
	return append(b, ']'), nil
}

// NewTensor returns data in host memory, of the given shape, as an input
// value. data is read, never kept or written. A nil shape is a scalar's
// (ir.Shape{}), as everywhere in gpucc: Run, RunWith and a generated
// package's Inputs all refuse it for an input of another shape, with
// invalid_input.
func NewTensor(shape ir.Shape, data []float32) Tensor { return Tensor{Shape: shape, Data: data} }

// DeviceTensor is a tensor in a Runtime's device memory (host or wasm
// memory on the cpu, wasm and native backends). Runtime.Upload and
// RunOptions.Keep make them; Release frees one. A DeviceTensor is used
// through its Runtime, so it is safe for concurrent use.
type DeviceTensor struct {
	rt    *Runtime
	buf   backend.Buffer // nil once released; guarded by rt.mu
	shape ir.Shape
	dtype ir.DType // its values' (typed_tensor.go): float32 but for a typed graph's
	// donated says a run consumed it (RunOptions.Donate): buf is nil.
	donated bool
	// donating says a run claimed it to consume it (RunOptions.Donate):
	// another run's donation is refused until that run ends.
	donating bool
}

func (*DeviceTensor) value() {}

// Shape returns the tensor's shape.
func (t *DeviceTensor) Shape() ir.Shape { return slices.Clone(t.shape) }

// Bytes returns the device memory the tensor holds: 4 bytes a value for
// float32, whole 32-bit words of its dtype's values otherwise.
func (t *DeviceTensor) Bytes() int64 { return 4 * int64(typedWords(t.dtype, t.shape.Len())) }

// Upload copies host data into a new DeviceTensor. The data must be
// float32 values of the shape's length, finite unless the runtime's
// Limits.NonFinite allows ±Inf and NaN, and every dimension at
// least 1, as in a graph: no input can take a tensor of shape [0].
func (rt *Runtime) Upload(ctx context.Context, shape ir.Shape, data []float32) (*DeviceTensor, error) {
	if shape.Elements(math.MaxInt32) < 0 {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "shape", "upload: shape %v: every dimension must be at least 1, and the tensor at most 2^31-1 elements", shape)
	}
	if err := checkShape("upload", shape, shape, data); err != nil {
		return nil, err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.dead() {
		return nil, rt.errClosed()
	}
	if rt.opts.Limits.NonFinite {
		return rt.newTensorLocked(ctx, slices.Clone(shape), data)
	}
	cu, ok := rt.dev.(backend.CheckedUploader)
	if !ok {
		if err := checkFiniteInput("upload", data); err != nil {
			return nil, err
		}
		return rt.newTensorLocked(ctx, slices.Clone(shape), data)
	}
	// The check rides on the copy into staging: the data is read once.
	n := 4 * int64(len(data))
	if err := rt.reserve(n); err != nil {
		return nil, err
	}
	buf, err := guard(rt, func() (backend.Buffer, error) { return rt.dev.Alloc(ctx, len(data)) })
	if err != nil {
		return nil, rt.wrap(err)
	}
	k, err := guard(rt, func() (int, error) { return cu.UploadChecked(ctx, buf, data) })
	if err != nil || k >= 0 {
		buf.Release()
		if err != nil {
			return nil, rt.wrap(err)
		}
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "upload", "input %q value %d is %v; inputs must be finite float32", "upload", k, data[k])
	}
	return rt.adoptLocked(buf, slices.Clone(shape)), nil
}

// newTensorLocked allocates a tensor and uploads data into it; rt.mu held.
func (rt *Runtime) newTensorLocked(ctx context.Context, shape ir.Shape, data []float32) (*DeviceTensor, error) {
	n := 4 * int64(len(data))
	if err := rt.reserve(n); err != nil {
		return nil, err
	}
	buf, err := guard(rt, func() (backend.Buffer, error) { return rt.dev.Alloc(ctx, len(data)) })
	if err != nil {
		return nil, rt.wrap(err)
	}
	if _, err := guard(rt, func() (struct{}, error) { return struct{}{}, rt.dev.Upload(ctx, buf, data) }); err != nil {
		buf.Release()
		return nil, rt.wrap(err)
	}
	return rt.adoptLocked(buf, shape), nil
}

// adoptLocked makes buf a live tensor of rt; rt.mu held.
func (rt *Runtime) adoptLocked(buf backend.Buffer, shape ir.Shape) *DeviceTensor {
	return rt.adoptTypedLocked(buf, shape, ir.F32)
}

// checkLocked returns an invalid_tensor error unless t is live on rt;
// rt.mu held.
func (t *DeviceTensor) checkLocked(rt *Runtime, use string) error {
	return t.checkNamedLocked(rt, use, "")
}

// checkNamedLocked is checkLocked for the use named use+name, a string
// made only for an error (a run checks each resident input: "input "+name
// was built three times a run of relu(a*b+c)).
func (t *DeviceTensor) checkNamedLocked(rt *Runtime, use, name string) error {
	switch {
	case t == nil:
		return ir.Errorf(ir.CodeInvalidTensor, -1, "", "%s%s: nil device tensor", use, name)
	case t.rt != rt:
		return ir.Errorf(ir.CodeInvalidTensor, -1, "", "%s%s: the device tensor belongs to another runtime", use, name)
	case rt.dev == nil:
		return ir.Errorf(ir.CodeInvalidTensor, -1, "", "%s%s: the device tensor's runtime is closed", use, name)
	case rt.dead():
		return rt.errClosed()
	case t.buf == nil && t.donated:
		return ir.Errorf(ir.CodeInvalidTensor, -1, "", "%s%s: the device tensor was donated to a run (RunOptions.Donate) and released", use, name)
	case t.buf == nil:
		return ir.Errorf(ir.CodeInvalidTensor, -1, "", "%s%s: the device tensor was released", use, name)
	}
	return nil
}

// Read copies the tensor to the host, into out when it has the tensor's
// length (nil: a new slice), and returns the values. Reading checks that
// every value is finite (non_finite_output otherwise), unless the
// runtime's Limits.NonFinite allows ±Inf and NaN: then every NaN is read
// as the quiet NaN 0x7fc00000. A tensor of another dtype is read with
// ReadTensor (invalid_input here).
func (t *DeviceTensor) Read(ctx context.Context, out []float32) ([]float32, error) {
	if t == nil {
		return nil, ir.Errorf(ir.CodeInvalidTensor, -1, "", "read: nil device tensor")
	}
	rt := t.rt
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if err := t.checkLocked(rt, "read"); err != nil {
		return nil, err
	}
	if t.dtype != ir.F32 {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "", "read: the tensor holds %v values; ReadTensor reads them", t.dtype)
	}
	n := t.shape.Len()
	if out == nil {
		out = make([]float32, n)
	}
	if len(out) != n {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "", "read: tensor of shape %v into a slice of %d values", t.shape, len(out))
	}
	if rt.opts.Limits.NonFinite {
		if _, err := guard(rt, func() (struct{}, error) { return struct{}{}, rt.dev.Read(ctx, t.buf, out) }); err != nil {
			return nil, rt.wrap(err)
		}
		canonicalNaN(out)
		return out, nil
	}
	if cr, ok := rt.dev.(backend.CheckedReader); ok { // the check rides on the copy out of staging
		k, err := guard(rt, func() (int, error) { return cr.ReadChecked(ctx, t.buf, out) })
		if err != nil {
			return nil, rt.wrap(err)
		}
		if k >= 0 {
			return nil, nonFiniteOutputWhat(rt.info.Name, "tensor", k, out[k])
		}
		return out, nil
	}
	if _, err := guard(rt, func() (struct{}, error) { return struct{}{}, rt.dev.Read(ctx, t.buf, out) }); err != nil {
		return nil, rt.wrap(err)
	}
	if err := checkFinite(rt.info.Name, "tensor", out); err != nil {
		return nil, err
	}
	return out, nil
}

// Release frees the tensor's device memory. Releasing twice, or after the
// Runtime's Close, is an invalid_tensor error.
func (t *DeviceTensor) Release() error {
	if t == nil {
		return ir.Errorf(ir.CodeInvalidTensor, -1, "", "release: nil device tensor")
	}
	rt := t.rt
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if err := t.checkLocked(rt, "release"); err != nil {
		return err
	}
	t.releaseLocked()
	return nil
}

func (t *DeviceTensor) releaseLocked() {
	if t.buf == nil {
		return
	}
	t.buf.Release()
	t.buf = nil
	delete(t.rt.tensors, t)
	t.rt.live -= t.Bytes()
}

// checkHost checks host data against an input's shape: the same shape,
// and every value a finite float32.
func checkHost(name string, want, shape ir.Shape, data []float32) error {
	if err := checkShape(name, want, shape, data); err != nil {
		return err
	}
	return checkFiniteInput(name, data)
}

// checkShape checks host data's shape and length against an input's.
func checkShape(name string, want, shape ir.Shape, data []float32) error {
	if !want.Equal(shape) {
		return ir.Errorf(ir.CodeInvalidInput, -1, name, "input %q has shape %v, the graph needs %v", name, shape, want)
	}
	if len(data) != want.Len() {
		return ir.Errorf(ir.CodeInvalidInput, -1, name, "input %q holds %d values, shape %v needs %d", name, len(data), want, want.Len())
	}
	return nil
}

// checkFiniteInput returns invalid_input when data holds ±Inf or NaN.
func checkFiniteInput(name string, data []float32) error {
	if k := firstNonFinite(data); k >= 0 {
		return ir.Errorf(ir.CodeInvalidInput, -1, name, "input %q value %d is %v; inputs must be finite float32", name, k, data[k])
	}
	return nil
}

// checkFinite returns non_finite_output when data holds ±Inf or NaN.
func checkFinite(backendName, what string, data []float32) error {
	if k := firstNonFinite(data); k >= 0 {
		return nonFiniteOutputWhat(backendName, what, k, data[k])
	}
	return nil
}

// nonFiniteOutput is the non_finite_output error of output name's
// element k.
func nonFiniteOutput(backendName, name string, k int, v float32) error {
	return nonFiniteOutputWhat(backendName, fmt.Sprintf("output %q", name), k, v)
}

func nonFiniteOutputWhat(backendName, what string, k int, v float32) error {
	return backend.Errorf(ir.CodeNonFiniteOutput, backendName, "%s element %d is %v; outputs must be finite float32", what, k, v)
}

// scanChunk is the fewest values one goroutine of firstNonFinite scans.
// Below it a single scan is faster than starting goroutines; above it the
// scan of a large tensor is spread over every core (a 64M-value output was
// scanned in about 60 ms on one H200 host core, longer than its readback).
const scanChunk = 1 << 20

// firstNonFinite returns the index of the first ±Inf or NaN in data, or -1.
func firstNonFinite(data []float32) int {
	parts := min(goruntime.GOMAXPROCS(0), (len(data)+scanChunk-1)/scanChunk)
	if parts <= 1 {
		return scanNonFinite(data)
	}
	found := make([]int, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(data)/parts, (p+1)*len(data)/parts
		wg.Go(func() {
			found[p] = scanNonFinite(data[lo:hi])
			if found[p] >= 0 {
				found[p] += lo
			}
		})
	}
	wg.Wait()
	for _, k := range found {
		if k >= 0 {
			return k
		}
	}
	return -1
}

// QuietNaN is the bits of the NaN every output NaN is returned as when
// ir.Limits.NonFinite allows non-finite outputs: IEEE 754 leaves a NaN's
// sign and payload to the hardware (x86 makes ∞−∞ 0xffc00000, GPUs
// 0x7fc00000), so the host makes them one, and every backend returns
// cpuref's bits.
const QuietNaN = 0x7fc00000

// canonicalNaN makes every NaN in data the quiet NaN QuietNaN.
func canonicalNaN(data []float32) {
	q := math.Float32frombits(QuietNaN)
	for k, v := range data {
		if v != v {
			data[k] = q
		}
	}
}

func scanNonFinite(data []float32) int {
	for k, v := range data {
		if math.Float32bits(v)&0x7f800000 == 0x7f800000 {
			return k
		}
	}
	return -1
}
