package backend

// EvictIdle closes and removes the entries of loaded that no executable
// holds (refs returns 0) until at most bound such idle entries remain. It
// is the bound on idle compiled artifacts (pipelines, modules, libraries)
// that every backend keeps for reuse.
func EvictIdle[K comparable, V any](loaded map[K]V, bound int, refs func(V) int, close func(V)) {
	idle := 0
	for _, v := range loaded {
		if refs(v) == 0 {
			idle++
		}
	}
	for k, v := range loaded {
		if idle <= bound {
			return
		}
		if refs(v) == 0 {
			close(v)
			delete(loaded, k)
			idle--
		}
	}
}
