package gpucc

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

type fixedTiles struct{}

func (fixedTiles) TileFor(*ir.Kernel) *ir.Tile { return nil }

// TestSealOptionsKeepsEveryField: every field of passes.Options that a
// caller sets reaches the passes, the device fields over the profile's
// too; only Limits is the host's. It sets each field in turn by
// reflection, so a field added to passes.Options is covered without a
// change here (Seal once copied a list of fields, and SpreadConv was not
// on it).
func TestSealOptionsKeepsEveryField(t *testing.T) {
	prof, err := passes.LookupProfile(passes.ProfileNames()[0])
	if err != nil {
		t.Fatal(err)
	}
	limits := ir.DefaultLimits()
	typ := reflect.TypeOf(passes.Options{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "Limits" {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			var popts passes.Options
			v := reflect.ValueOf(&popts).Elem().Field(i)
			switch f.Type.Kind() {
			case reflect.Bool:
				v.SetBool(true)
			case reflect.Int:
				v.SetInt(7)
			case reflect.String:
				v.SetString("fold")
			case reflect.Pointer:
				v.Set(reflect.New(f.Type.Elem()))
			case reflect.Interface:
				switch f.Name {
				case "TileFor":
					v.Set(reflect.ValueOf(fixedTiles{}))
				case "Dump":
					v.Set(reflect.ValueOf(&bytes.Buffer{}))
				default:
					t.Fatalf("field %s: no value to set for %v", f.Name, f.Type)
				}
			default:
				t.Fatalf("field %s: no value to set for %v", f.Name, f.Type)
			}
			got := reflect.ValueOf(sealOptions(limits, prof, popts)).Field(i)
			if !reflect.DeepEqual(got.Interface(), v.Interface()) {
				t.Errorf("Seal's options have %s = %v, the caller set %v", f.Name, got, v)
			}
		})
	}
	o := sealOptions(limits, prof, passes.Options{})
	if d := prof.Options(limits); !reflect.DeepEqual(o, d) {
		t.Errorf("zero options: got %+v, the profile's %+v", o, d)
	}
}
