package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// Attention's workgroup: attRows query rows of one batch index, attLanes
// threads per row, keys staged attKeys at a time.
const (
	attLanes = 16
	attKeys  = 16
)

// attRows is the query rows of a workgroup for head width d: as many as
// keep the staged q rows, one key tile and the tile's scores within
// WebGPU's default 16 KiB of workgroup memory.
func attRows(d, e int) int {
	r := 16
	for r > 1 && 4*(r*(d+1)+attKeys*(max(d, e)+1)+r*attKeys+r*attLanes+r) > 16384 {
		r /= 2
	}
	return r
}

// attentionRows emits the first attention kernel (cpuref.Attention's
// order), kept for AttTile{} and for heads too wide for attentionSliced: it
// shares each query row's scores among the threads of its outputs,
// instead of the nest's thread per output recomputing them: a workgroup
// holds attRows query rows of one batch index (its q rows staged once),
// attLanes threads per row. Pass 1 walks the keys in tiles of attKeys
// (each tile of k staged through workgroup memory), lane x scoring key
// x of each tile and keeping the maximum of its keys; the row's lanes
// then fold their maxima (maximum selects: any grouping gives cpuref's
// bits). Pass 2 walks the tiles again: each lane scores its key and
// stores p = exp(t − m) in workgroup memory; lane 0 adds the tile's p to
// l in ascending key order; v's tile replaces k's, and each lane adds
// p·v[j,e] to its outputs e = lane, lane + attLanes, … in ascending key
// order. Each output is o / l, then the epilogue. Every score is matmul's
// accumulator of q·k (d ascending, unrolled) times the scale plus the
// mask, as the nest computes it, so the bits are cpuref's.
func attentionRows(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) {
	a := ir.AttentionKernel(k)
	S, T, D, E := a.S, a.T, a.D, a.E
	R, L := attRows(D, E), attLanes
	W := max(D, E) + 1 // a staged key's pitch: one more than a row, against bank conflicts
	per := (E + L - 1) / L
	s.Workgroup = [3]int{R * L, 1, 1}
	s.Groups = [3]int{(S + R - 1) / R, max(a.Batch.Len(), 1), 1}
	scale := Lang.Const(len(codegen.Constants(k)) - 1) // the nest's Params[0], after the body's slots
	// off renders the buffer index of operand j at [z, r, c].
	off := func(j int, r, c string) string {
		op := k.Inputs[j]
		n := len(op.Shape)
		terms := []string{codegen.Index(Lang, op.Batch(), "z")}
		if st := op.Strides[n-2]; st != 0 && op.Shape[n-2] > 1 {
			terms = append(terms, fmt.Sprintf("(%s) * %du", r, st))
		}
		if st := op.Strides[n-1]; st != 0 && op.Shape[n-1] > 1 {
			terms = append(terms, fmt.Sprintf("(%s) * %du", c, st))
		}
		return strings.Join(terms, " + ")
	}
	apply := func(name string, op ir.Op, args ...string) string {
		n := &codegen.Nest{Body: []codegen.Stmt{codegen.Apply(name, op, args...)}}
		return strings.Join(n.Render(Lang, k), "\n")
	}
	fmt.Fprintf(b, "var<workgroup> Qs: array<f32, %d>;\n", R*(D+1))
	fmt.Fprintf(b, "var<workgroup> KVs: array<f32, %d>;\n", attKeys*W)
	fmt.Fprintf(b, "var<workgroup> Ps: array<f32, %d>;\n", R*attKeys)
	fmt.Fprintf(b, "var<workgroup> Ms: array<f32, %d>;\n", R*L)
	fmt.Fprintf(b, "var<workgroup> Ls: array<f32, %d>;\n\n", R)
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", R*L)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet tid = lid.x;\n\tlet r = tid / %du;\n\tlet lane = tid %% %du;\n", L, L)
	fmt.Fprintf(b, "\tlet z = wg.y;\n\tlet qi = wg.x * %du + r;\n", R)
	// Stage the workgroup's q rows (0 past S).
	for e0 := 0; e0 < R*D; e0 += R * L {
		fmt.Fprintf(b, "\t{\n\t\tlet e = tid + %du;\n", e0)
		fmt.Fprintf(b, "\t\tlet qr = e / %du;\n\t\tlet qd = e %% %du;\n\t\tlet row = wg.x * %du + qr;\n", D, D, R)
		fmt.Fprintf(b, "\t\tif (e < %du) {\n\t\t\tvar x = params.zero;\n", R*D)
		fmt.Fprintf(b, "\t\t\tif (row < %du) { x = in0[%s]; }\n", S, off(0, "row", "qd"))
		fmt.Fprintf(b, "\t\t\tQs[qr * %du + qd] = x;\n\t\t}\n\t}\n", D+1)
	}
	// stage copies rows kt… of operand j (cols wide) into KVs.
	stage := func(j, cols, keys int) {
		for e0 := 0; e0 < keys*cols; e0 += R * L {
			fmt.Fprintf(b, "\t\t{\n\t\t\tlet e = tid + %du;\n", e0)
			fmt.Fprintf(b, "\t\t\tif (e < %du) {\n", keys*cols)
			fmt.Fprintf(b, "\t\t\t\tlet kr = e / %du;\n\t\t\t\tlet kc = e %% %du;\n", cols, cols)
			fmt.Fprintf(b, "\t\t\t\tKVs[kr * %du + kc] = in%d[%s];\n\t\t\t}\n\t\t}\n", W, j, off(j, "kt + kr", "kc"))
		}
	}
	// score declares ts, row r's score of key kt + lane (lane < keys).
	score := func() {
		b.WriteString("\t\t\tvar sc = params.zero;\n")
		for d := range D {
			fmt.Fprintf(b, "\t\t\tsc = sc + %s;\n", Lang.Keep(fmt.Sprintf("Qs[r * %du + %du] * KVs[lane * %du + %du]", D+1, d, W, d)))
		}
		t := Lang.Keep("sc * " + scale)
		if k.Masked() {
			t += fmt.Sprintf(" + in3[%s]", off(3, "min(qi, "+fmt.Sprint(S-1)+"u)", "kt + lane"))
		}
		if a.Causal {
			t = Lang.Select("qi < kt + lane", Lang.Opaque(0xff800000), t) // opaque: Tint refuses a constant -Inf
		}
		fmt.Fprintf(b, "\t\t\tlet ts = %s;\n", t)
	}
	// tiles emits body(keys) over the key tiles: a loop over the whole
	// ones, then the last, partial one (keys known here).
	tiles := func(body func(keys int)) {
		whole, rest := T/attKeys*attKeys, T%attKeys
		if whole > 0 {
			fmt.Fprintf(b, "\tfor (var kt = 0u; kt < %du; kt += %du) {\n", whole, attKeys)
			body(attKeys)
			b.WriteString("\t}\n")
		}
		if rest > 0 {
			fmt.Fprintf(b, "\t{\n\t\tlet kt = %du;\n", whole)
			body(rest)
			b.WriteString("\t}\n")
		}
	}
	// Pass 1: each lane's maximum over its keys, then the row's.
	fmt.Fprintf(b, "\tvar mr = %s;\n", Lang.Opaque(0xff800000))
	tiles(func(keys int) {
		b.WriteString("\t\tworkgroupBarrier();\n")
		stage(1, D, keys)
		b.WriteString("\t\tworkgroupBarrier();\n")
		fmt.Fprintf(b, "\t\tif (lane < %du) {\n", keys)
		score()
		b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "mr", "ts", "mx"), 3))
		b.WriteString("\t\t\tmr = mx;\n\t\t}\n")
	})
	fmt.Fprintf(b, "\tMs[tid] = mr;\n\tworkgroupBarrier();\n\tmr = Ms[r * %du];\n", L)
	fmt.Fprintf(b, "\tfor (var x = 1u; x < %du; x++) {\n\t\tlet mv = Ms[r * %du + x];\n", L, L)
	b.WriteString(codegen.Indent(codegen.Combine(Lang, ir.OpMax, "mr", "mv", "mx"), 2))
	b.WriteString("\t\tmr = mx;\n\t}\n")
	// Pass 2: p = exp(t − m), l in key order (lane 0), o per output.
	b.WriteString("\tvar ls = params.zero;\n")
	for x := range per {
		fmt.Fprintf(b, "\tvar o%d = params.zero;\n", x)
	}
	tiles(func(keys int) {
		b.WriteString("\t\tworkgroupBarrier();\n")
		stage(1, D, keys)
		b.WriteString("\t\tworkgroupBarrier();\n")
		fmt.Fprintf(b, "\t\tif (lane < %du) {\n", keys)
		score()
		b.WriteString(codegen.Indent(strings.Split(apply("us", ir.OpSub, "ts", "mr"), "\n"), 3))
		b.WriteString(codegen.Indent(strings.Split(apply("ps", ir.OpExp, "us"), "\n"), 3))
		fmt.Fprintf(b, "\t\t\tPs[r * %du + lane] = ps;\n\t\t}\n", attKeys)
		b.WriteString("\t\tworkgroupBarrier();\n")
		stage(2, E, keys)
		b.WriteString("\t\tworkgroupBarrier();\n")
		b.WriteString("\t\tif (lane == 0u) {\n")
		for j := range keys {
			fmt.Fprintf(b, "\t\t\tls = ls + Ps[r * %du + %du];\n", attKeys, j)
		}
		b.WriteString("\t\t}\n")
		for j := range keys {
			fmt.Fprintf(b, "\t\t{\n\t\t\tlet pj = Ps[r * %du + %du];\n", attKeys, j)
			for x := range per {
				e := fmt.Sprintf("lane + %du", x*L)
				v := fmt.Sprintf("KVs[%du + min(%s, %du)]", j*W, e, E-1)
				fmt.Fprintf(b, "\t\t\to%d = o%d + %s;\n", x, x, Lang.Keep("pj * "+v))
			}
			b.WriteString("\t\t}\n")
		}
	})
	b.WriteString("\tif (lane == 0u) { Ls[r] = ls; }\n\tworkgroupBarrier();\n\tls = Ls[r];\n")
	fmt.Fprintf(b, "\tif (qi >= %du) { return; }\n", S)
	for x := range per {
		fmt.Fprintf(b, "\t{\n\t\tlet ve = lane + %du;\n\t\tif (ve < %du) {\n", x*L, E)
		b.WriteString(codegen.Indent(strings.Split(apply(fmt.Sprintf("acc%d", x), ir.OpDiv, fmt.Sprintf("o%d", x), "ls"), "\n"), 3))
		fmt.Fprintf(b, "\t\t\tlet i = (z * %du + qi) * %du + ve;\n", S, E)
		b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), fmt.Sprintf("acc%d", x)), 3))
		b.WriteString(codegen.Indent(stores(k, "i"), 3))
		b.WriteString("\t\t}\n\t}\n")
	}
	b.WriteString("}\n")
}

// attentionRowsLoops: two passes over the whole key tiles, and the lanes'
// fold of their maxima.
func attentionRowsLoops(k *ir.Kernel) int {
	a := ir.AttentionKernel(k)
	return 2*(a.T/attKeys+1) + attLanes
}
