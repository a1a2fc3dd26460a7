package backend

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEvictIdle(t *testing.T) {
	for _, tt := range []struct {
		name  string
		refs  map[string]int
		bound int
		kept  []string
	}{
		{"under the bound", map[string]int{"a": 0, "b": 1}, 1, []string{"a", "b"}},
		{"idle past the bound", map[string]int{"a": 0, "b": 0, "c": 2}, 1, nil}, // one of a, b goes
		{"held entries stay", map[string]int{"a": 1, "b": 3}, 0, []string{"a", "b"}},
		{"every idle one at bound 0", map[string]int{"a": 0, "b": 0, "c": 1}, 0, []string{"c"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			type entry struct{ refs int }
			loaded := map[string]*entry{}
			for k, r := range tt.refs {
				loaded[k] = &entry{r}
			}
			var closed []string
			EvictIdle(loaded, tt.bound, func(e *entry) int { return e.refs }, func(e *entry) {
				for k, v := range loaded {
					if v == e {
						closed = append(closed, k)
					}
				}
			})
			idle := 0
			for k, e := range loaded {
				if e.refs == 0 {
					idle++
				}
				if slices.Contains(closed, k) {
					t.Errorf("%s closed but still loaded", k)
				}
			}
			if idle > tt.bound {
				t.Errorf("%d idle entries left, bound %d", idle, tt.bound)
			}
			if len(closed)+len(loaded) != len(tt.refs) {
				t.Errorf("closed %v, loaded %d of %d", closed, len(loaded), len(tt.refs))
			}
			if tt.kept != nil {
				var keys []string
				for k := range loaded {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				if diff := cmp.Diff(tt.kept, keys); diff != "" {
					t.Errorf("kept (-want +got):\n%s", diff)
				}
			}
		})
	}
}
