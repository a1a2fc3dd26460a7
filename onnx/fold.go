package onnx

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// Folding at import: the values every integer and bool tensor takes, and
// the data movement of constants of any type. Float32 arithmetic is never
// folded here: it runs as table ops (cpuref's, or the backends', bits).

// strides returns the row-major strides of shape.
func strides(shape []int) []int {
	s := make([]int, len(shape))
	n := 1
	for k := len(shape) - 1; k >= 0; k-- {
		s[k] = n
		n *= shape[k]
	}
	return s
}

// take returns the constant of shape whose element i is t's element
// idx(i), idx given as the flat index of t for each output element.
func (c *importer) take(t *Tensor, shape []int, idx func(out []int) int) (*Tensor, *ir.Error) {
	r, err := c.newConst(t.Type, shape)
	if err != nil {
		return nil, err
	}
	n := r.Len()
	pos := make([]int, len(shape))
	for i := 0; i < n; i++ {
		j := idx(pos)
		switch {
		case t.Type == Float32:
			r.Float32[i] = t.Float32[j]
		case t.Type == Float64:
			r.Float64[i] = t.Float64[j]
		default:
			r.Int64[i] = t.Int64[j]
		}
		for k := len(pos) - 1; k >= 0; k-- {
			if pos[k]++; pos[k] < shape[k] {
				break
			}
			pos[k] = 0
		}
	}
	return r, nil
}

// broadcastIndex returns the flat index into a tensor of shape s of the
// element that numpy broadcasting reads for output position pos (of a
// rank at least len(s)).
func broadcastIndex(s []int, st []int, pos []int) int {
	off := len(pos) - len(s)
	j := 0
	for k, d := range s {
		if d != 1 {
			j += pos[k+off] * st[k]
		}
	}
	return j
}

// broadcastConst returns the numpy broadcast shape of a and b (zero-sized
// dimensions included), or false.
func broadcastConst(a, b []int) ([]int, bool) {
	s, ok := ir.BroadcastShape(a, b)
	return []int(s), ok
}

// number is one element of a constant, as the operation needs it.
type number struct {
	i int64
	f float64 // float32 and float64 values
}

func (t *Tensor) at(j int) number {
	switch t.Type {
	case Float32:
		return number{f: float64(t.Float32[j])}
	case Float64:
		return number{f: t.Float64[j]}
	}
	return number{i: t.Int64[j]}
}

func (t *Tensor) set(j int, v number) {
	switch t.Type {
	case Float32:
		t.Float32[j] = float32(v.f)
	case Float64:
		t.Float64[j] = v.f
	default:
		t.Int64[j] = v.i
	}
}

// elementwise folds f over constants broadcast together, into a result of
// type dt.
func (c *importer) elementwise(dt DataType, f func(x []number) (number, *ir.Error), args ...*Tensor) (*Tensor, *ir.Error) {
	shape := []int{}
	for _, a := range args {
		s, ok := broadcastConst(shape, a.Shape)
		if !ok {
			return nil, c.invalid("shapes %v and %v do not broadcast", shape, a.Shape)
		}
		shape = s
	}
	r, err := c.newConst(dt, shape)
	if err != nil {
		return nil, err
	}
	sts := make([][]int, len(args))
	for k, a := range args {
		sts[k] = strides(a.Shape)
	}
	pos := make([]int, len(shape))
	x := make([]number, len(args))
	for i := 0; i < r.Len(); i++ {
		for k, a := range args {
			x[k] = a.at(broadcastIndex(a.Shape, sts[k], pos))
		}
		v, err := f(x)
		if err != nil {
			return nil, err
		}
		r.set(i, v)
		for k := len(pos) - 1; k >= 0; k-- {
			if pos[k]++; pos[k] < shape[k] {
				break
			}
			pos[k] = 0
		}
	}
	return r, nil
}

// wrapInt wraps v to the range of integer type dt, as the fixed-width
// arithmetic of ONNX's integer ops does.
func wrapInt(dt DataType, v int64) int64 {
	switch dt {
	case Int8:
		return int64(int8(v))
	case Uint8:
		return int64(uint8(v))
	case Int16:
		return int64(int16(v))
	case Uint16:
		return int64(uint16(v))
	case Int32:
		return int64(int32(v))
	case Uint32:
		return int64(uint32(v))
	case Bool:
		if v != 0 {
			return 1
		}
	}
	return v
}

// castNumber converts v of type from to type to as the run time's Cast
// does (ir.Convert), so that a folded Cast gives the value a run-time one
// gives: float to integer truncates toward zero, and a float whose
// truncation is outside the integer's range (or NaN, ±Inf) is refused, as
// the run time faults: checking int64's range alone, it wrapped 3e9 to
// int32's -1294967296 and 300 to uint8's 44 (TestCastFoldRange); integer
// to integer wraps, and a uint64 without an int64 carrier is refused.
// (The constant's own check refused that one already.)
func castNumber(v number, from, to DataType) (number, bool) {
	fromInt := from.isInt()
	t, typed := to.irDType()
	switch {
	case to == Bool && fromInt:
		return number{i: b2i(v.i != 0)}, true
	case to == Bool:
		return number{i: b2i(v.f != 0)}, true
	case to.isInt() && fromInt:
		w := wrapInt(to, v.i)
		return number{i: w}, !typed || t.InRange(w)
	case to.isInt() && typed:
		x, ok := ir.Float64ToInt(t, v.f)
		return number{i: x}, ok
	case to.isInt():
		t := math.Trunc(v.f)
		if math.IsNaN(t) || t < -9.2e18 || t > 9.2e18 {
			return number{}, false
		}
		return number{i: wrapInt(to, int64(t))}, true
	case to == Float32 && fromInt:
		return number{f: float64(float32(v.i))}, true
	case to == Float32:
		return number{f: float64(float32(v.f))}, true
	case fromInt:
		return number{f: float64(v.i)}, true
	}
	return number{f: v.f}, true
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
