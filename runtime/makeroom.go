package runtime

// makeRoom keeps a bounded cache under max entries: when m is full it
// releases and removes one arbitrary entry, so the next one fits. The wasm
// and native backends bound their compiled-code caches with it.
func makeRoom[V any](m map[string]V, max int, release func(V)) {
	if len(m) < max {
		return
	}
	for k, v := range m {
		release(v)
		delete(m, k)
		return
	}
}
