package wgsl

import (
	"maps"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// fusedLang is l with each function that has a fused twin (ir.Fused:
// division, tanh's division) defined by the twin's body under the
// function's own name (codegen.Lang.Native), its constants exact literals:
// a kernel of Target{Fused: true} calls prim_div as before and computes
// it with fma().
func fusedLang(l codegen.Lang) codegen.Lang {
	lit := l
	lit.Const, lit.Native = nil, nil
	native := maps.Clone(l.Native)
	if native == nil {
		native = map[string]string{}
	}
	for name, twin := range ir.Fused() {
		f := &ir.Func{Name: name, Params: twin.Params, Body: twin.Body}
		native[name] = strings.Join(codegen.Define(lit, []*ir.Func{f}, 0), "\n")
	}
	l.Native = native
	return l
}
