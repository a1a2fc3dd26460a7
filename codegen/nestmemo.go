package codegen

import (
	"sync"

	"github.com/gpucc/gpucc/ir"
)

// nestMemo holds, for the kernels of a program being generated
// (MemoNests), each kernel's nest once built: a kernel's writer, its
// Funcs and Constants, its loop check and every Render for it (an
// attention writer renders a dozen small nests, each asking for the
// constant slots before them) all ask NestOf, and ViT-Tiny's attention
// nest, its scores unrolled over the head's 64 dimensions, was built
// afresh each time: 69 MB of its 98 MB WGSL Emit.
var nestMemo sync.Map // *ir.Kernel -> *nestSlot

type nestSlot struct {
	once sync.Once
	n    *Nest
}

// MemoNests makes NestOf build the nest of each kernel of ks at most once
// until release is called; the generator calls it around a program's
// generation, when its kernels cannot change (a Sealed program is
// immutable). The nests are shared: callers of NestOf must not modify
// one. A kernel that another generation already holds is left to it (its
// nest is the same, a pure function of the kernel).
func MemoNests(ks []ir.Kernel) (release func()) {
	slots := make([]*nestSlot, len(ks))
	for i := range ks {
		if !HasNest(ks[i].Kind) {
			continue
		}
		s := &nestSlot{}
		if _, held := nestMemo.LoadOrStore(&ks[i], s); !held {
			slots[i] = s
		}
	}
	return func() {
		for i, s := range slots {
			if s != nil {
				nestMemo.CompareAndDelete(&ks[i], s)
			}
		}
	}
}
