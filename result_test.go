package gpucc

import (
	"reflect"
	"testing"
)

// TestTimingsAdd: Add sums every numeric field of Timings (a field added
// to Timings and forgotten in Add fails here) and takes the clock of the
// run it adds, unless that run names none.
func TestTimingsAdd(t *testing.T) {
	var sum, run Timings
	s, r := reflect.ValueOf(&sum).Elem(), reflect.ValueOf(&run).Elem()
	for i := range s.NumField() {
		switch f := s.Field(i); f.Kind() {
		case reflect.Float64:
			f.SetFloat(10)
			r.Field(i).SetFloat(float64(1 + i))
		case reflect.Int64:
			f.SetInt(10)
			r.Field(i).SetInt(int64(1 + i))
		case reflect.String:
			f.SetString("gpu-timestamp")
			r.Field(i).SetString("wall")
		default:
			t.Fatalf("Timings.%s: a %v, which this test does not know how to add", s.Type().Field(i).Name, f.Kind())
		}
	}
	sum.Add(run)
	for i := range s.NumField() {
		name := s.Type().Field(i).Name
		switch f := s.Field(i); f.Kind() {
		case reflect.Float64:
			if f.Float() != float64(11+i) {
				t.Errorf("%s = %v after Add, want %v", name, f.Float(), 11+i)
			}
		case reflect.Int64:
			if f.Int() != int64(11+i) {
				t.Errorf("%s = %v after Add, want %v", name, f.Int(), 11+i)
			}
		case reflect.String:
			if f.String() != "wall" {
				t.Errorf("%s = %q after Add, want the added run's", name, f.String())
			}
		}
	}
	sum.Add(Timings{})
	if sum.DispatchClock != "wall" {
		t.Errorf("adding a run without a clock changed it to %q", sum.DispatchClock)
	}
}
