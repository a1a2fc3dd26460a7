package gpucc

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// digestSample is a plan with every field the digest covers set.
func digestSample() *Plan {
	kernel := func(name string) ir.Kernel {
		return ir.Kernel{Name: name, Kind: ir.KernelMatmul, Nodes: []ir.NodeID{3},
			Inputs:  []ir.Operand{{Buffer: 1, Shape: ir.Shape{2, 3}, Strides: []int{1, 2}}},
			Outputs: []int{4}, Shape: ir.Shape{5, 6},
			Body:   []ir.Instr{{Kind: ir.InstrOp, Op: ir.OpAdd, Args: [2]int32{1, 2}, Scalar: 1.5, Operand: 1, Node: 7, DType: ir.F32}},
			Stores: []int32{0}, M: 1, K: 2, N: 3, Tile: ir.Tile{BM: 1, BN: 2, TM: 3, TN: 4, BK: 5, Vector: 6}, Blocks: 2,
			Reduce: ir.OpSum, Keep: ir.Shape{1}, Attrs: []int{1},
			Scratch: []ir.Buffer{{Len: 2, Shape: ir.Shape{2}, Node: 1}}}
	}
	k := kernel("k")
	k.Parts = []ir.Kernel{kernel("part")}
	return &Plan{
		Program: &ir.Program{
			Buffers: []ir.Buffer{{Len: 2, Shape: ir.Shape{2}, Node: 1, Input: true, Data: []float32{1, 2}}},
			Kernels: []ir.Kernel{k},
			Outputs: []ir.ProgramOutput{{Name: "y", Shape: ir.Shape{2}, Buffer: 0, Const: 1}},
		},
		Prebuilt: map[string][]byte{"native": {1, 2}, "webgpu": {3}},
	}
}

// TestKernelsDigestCoversEveryField changes each field of a plan's
// program and kernels, found by reflection so that a new field cannot be
// forgotten, and checks that the digest BindKernels records changes:
// kernels generated for one program must not pass for another. Left out
// on purpose: input data (no kernel depends on it) and what Load checks
// against the program itself (Inputs, Profile). The artifacts are opaque
// bytes by backend: each byte, each name and their number count.
func TestKernelsDigestCoversEveryField(t *testing.T) {
	skipped := map[string]bool{".Inputs": true, ".Profile": true, ".PassesMs": true,
		".KernelsSHA256": true, ".sealed": true, ".limits": true}
	skipPath := func(path string) bool {
		for p := path; p != ""; p = p[:max(strings.LastIndexAny(p, ".[("), 0)] {
			if skipped[p] || strings.HasSuffix(p, ".Data") { // any buffer's data
				return true
			}
		}
		return false
	}

	base := kernelsDigest(digestSample())
	check := func(path string, at func(*Plan) reflect.Value, change func(reflect.Value)) {
		p := digestSample()
		change(at(p))
		if changed := kernelsDigest(p) != base; changed == skipPath(path) {
			t.Errorf("changing Plan%s: digest changed = %v, want %v", path, changed, !skipPath(path))
		}
	}
	var walk func(v reflect.Value, path string, at func(*Plan) reflect.Value)
	walk = func(v reflect.Value, path string, at func(*Plan) reflect.Value) {
		if skipPath(path) && v.Kind() != reflect.Slice {
			return
		}
		switch v.Kind() {
		case reflect.Map:
			check(path+"(len)", at, func(m reflect.Value) { m.SetMapIndex(reflect.ValueOf("x"), reflect.ValueOf([]byte{})) })
			for _, key := range v.MapKeys() {
				check(path+"["+key.String()+"](name)", at, func(m reflect.Value) {
					val := m.MapIndex(key)
					m.SetMapIndex(key, reflect.Value{})
					m.SetMapIndex(reflect.ValueOf(key.String()+"x"), val)
				})
				for j := range v.MapIndex(key).Len() {
					check(fmt.Sprintf("%s[%s][%d]", path, key, j), at, func(m reflect.Value) {
						b := slices.Clone(m.MapIndex(key).Bytes())
						b[j]++
						m.SetMapIndex(key, reflect.ValueOf(b))
					})
				}
			}
		case reflect.Pointer:
			walk(v.Elem(), path, func(p *Plan) reflect.Value { return at(p).Elem() })
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().Field(i)
				if !f.IsExported() {
					if !skipPath(path + "." + f.Name) {
						t.Errorf("Plan%s.%s: an unexported field; say whether the digest covers it", path, f.Name)
					}
					continue
				}
				walk(v.Field(i), path+"."+f.Name, func(p *Plan) reflect.Value { return at(p).Field(i) })
			}
		case reflect.Slice, reflect.Array:
			if v.Kind() == reflect.Slice {
				check(path+"(len)", at, func(s reflect.Value) { s.Set(reflect.Append(s, reflect.Zero(s.Type().Elem()))) })
			}
			for j := range v.Len() {
				walk(v.Index(j), fmt.Sprintf("%s[%d]", path, j), func(p *Plan) reflect.Value { return at(p).Index(j) })
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			check(path, at, func(x reflect.Value) { x.SetInt(x.Int() + 1) })
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			check(path, at, func(x reflect.Value) { x.SetUint(x.Uint() + 1) })
		case reflect.Bool:
			check(path, at, func(x reflect.Value) { x.SetBool(!x.Bool()) })
		case reflect.String:
			check(path, at, func(x reflect.Value) { x.SetString(x.String() + "x") })
		case reflect.Float32, reflect.Float64:
			check(path, at, func(x reflect.Value) { x.SetFloat(x.Float() + 1) })
		default:
			t.Errorf("Plan%s: field of kind %v; teach this test to change it", path, v.Kind())
		}
	}
	walk(reflect.ValueOf(digestSample()).Elem(), "", func(p *Plan) reflect.Value { return reflect.ValueOf(p).Elem() })
}
