package codegen

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Workers bounds how many kernels Each generates at once; 0 means
// GOMAXPROCS. Tests set 1 to compare against the serial order.
var Workers = 0

// Each calls gen(i) for every i in [0, n), several at once: a model's
// kernels are generated independently of each other (each reads its own
// ir.Kernel and the shared, immutable tables), so their text is the same
// in any order. gen must write only its own result slot. A panic in gen
// is raised again, as it was, in the caller's goroutine (the lowest such
// i's), where a backend's recover can see it, instead of killing the
// process from a worker.
func Each(n int, gen func(i int)) {
	w := Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	w = min(w, n)
	if w <= 1 {
		for i := range n {
			gen(i)
		}
		return
	}
	panics := make([]any, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				func() {
					defer func() {
						if r := recover(); r != nil {
							panics[i] = r
						}
					}()
					gen(i)
				}()
			}
		}()
	}
	wg.Wait()
	for _, r := range panics {
		if r != nil {
			panic(r)
		}
	}
}
