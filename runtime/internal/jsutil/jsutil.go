//go:build js

// Package jsutil holds what the browser backends share: awaiting a
// promise, catching JS exceptions, and copying float32 data to and from
// typed arrays.
package jsutil

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"syscall/js"
)

// Float32sToJS returns a Float32Array of n elements holding data, zero
// beyond len(data) (texture padding).
func Float32sToJS(data []float32, n int) js.Value {
	raw := make([]byte, 4*n)
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	u8 := js.Global().Get("Uint8Array").New(len(raw))
	js.CopyBytesToJS(u8, raw)
	return js.Global().Get("Float32Array").New(u8.Get("buffer"))
}

// Float32sFromJS copies every stride-th float of a Float32Array, starting
// at element 0, into a slice of n values.
func Float32sFromJS(arr js.Value, n, stride int) []float32 {
	raw := make([]byte, arr.Get("byteLength").Int())
	u8 := js.Global().Get("Uint8Array").New(arr.Get("buffer"), arr.Get("byteOffset"), len(raw))
	js.CopyBytesToGo(raw, u8)
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i*stride:]))
	}
	return out
}

// Await blocks the calling goroutine until promise settles. It must not be
// called from inside a JS callback (the event loop would never run).
func Await(promise js.Value) (js.Value, error) {
	type settled struct {
		v   js.Value
		err error
	}
	ch := make(chan settled, 1)
	then := js.FuncOf(func(_ js.Value, args []js.Value) any {
		ch <- settled{v: arg0(args)}
		return nil
	})
	catch := js.FuncOf(func(_ js.Value, args []js.Value) any {
		ch <- settled{err: JSError(arg0(args))}
		return nil
	})
	defer then.Release()
	defer catch.Release()
	promise.Call("then", then, catch)
	s := <-ch
	return s.v, s.err
}

func arg0(args []js.Value) js.Value {
	if len(args) == 0 {
		return js.Undefined()
	}
	return args[0]
}

// JSError turns a thrown JS value into a Go error.
func JSError(v js.Value) error {
	if v.Type() == js.TypeObject && v.Get("message").Type() == js.TypeString {
		return errors.New(v.Get("message").String())
	}
	return fmt.Errorf("%v", v)
}

// CatchJS turns a JS exception thrown during f into an error.
func CatchJS(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(js.Error); ok {
				err = errors.New(e.Error())
				return
			}
			err = fmt.Errorf("%v", r)
		}
	}()
	return f()
}
