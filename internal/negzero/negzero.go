// Package negzero carries the -0 floats of a value through encoding/gob,
// which leaves out a struct field equal to its zero value: -0 == 0, so an
// ir.Instr's Scalar or an ir.ProgramOutput's Const of -0 decodes as +0,
// and a kernel computing max(x, -0) then gives +0 for x = -0. Paths lists
// where the -0s are; Set puts them back after decoding.
package negzero

import (
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// xType is ir.X, which holds no float (a constant is its bits) and may be
// a DAG: Paths does not walk it.
var xType = reflect.TypeOf(ir.X{})

// Paths returns the path of every float of v that is -0: at a struct its
// field's index, at a slice or array the element's, a pointer followed
// without one. Maps, interfaces and ir.X are not walked.
func Paths(v any) [][]int {
	var out [][]int
	walk(reflect.ValueOf(v), nil, &out)
	return out
}

func walk(v reflect.Value, path []int, out *[][]int) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() && v.Type().Elem() != xType {
			walk(v.Elem(), path, out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walk(v.Field(i), append(path, i), out)
			}
		}
	case reflect.Slice, reflect.Array:
		switch v.Type().Elem().Kind() {
		case reflect.Uint8, reflect.Int32, reflect.Int, reflect.Int64, reflect.Uint32:
			return // no float in there
		}
		for i := range v.Len() {
			walk(v.Index(i), append(path, i), out)
		}
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); f == 0 && math.Signbit(f) {
			*out = append(*out, slices.Clone(path))
		}
	}
}

// Set sets the float at each path of v (a pointer) to -0, refusing a path
// that does not lead to one.
func Set(v any, paths [][]int) error {
	for _, path := range paths {
		w := reflect.ValueOf(v)
		for _, i := range path {
			for w.Kind() == reflect.Pointer && !w.IsNil() {
				w = w.Elem()
			}
			switch {
			case w.Kind() == reflect.Struct && i >= 0 && i < w.NumField() && w.Type().Field(i).IsExported():
				w = w.Field(i)
			case (w.Kind() == reflect.Slice || w.Kind() == reflect.Array) && i >= 0 && i < w.Len():
				w = w.Index(i)
			default:
				return fmt.Errorf("a -0's path %v leads nowhere", path)
			}
		}
		if k := w.Kind(); (k != reflect.Float32 && k != reflect.Float64) || !w.CanSet() {
			return fmt.Errorf("a -0's path %v does not lead to a float", path)
		}
		w.SetFloat(math.Copysign(0, -1))
	}
	return nil
}
