package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// defaultConvTile is the implicit GEMM's tile of a conv kernel that has
// none (a program the tiling pass did not see): TileFallback's, which
// fits any device.
var defaultConvTile = ir.Tile{BM: 8, BN: 8, TM: 1, TN: 1, BK: 8, Vector: 1}

// convTile is conv kernel k's tile (ir.Tile), defaultConvTile for none.
func convTile(k *ir.Kernel) ir.Tile {
	if k.Tile == (ir.Tile{}) {
		return defaultConvTile
	}
	return k.Tile
}

// conv emits a convolution: the window kernel for a tile that says so
// (ir.Tile.Windowed), else the implicit GEMM. Both keep cpuref.Conv2D's
// order: one accumulator per output from Params.zero, adding each product
// (c, kh, kw) ascending, x read as +0 in the padding, each product
// rounded on its own (times Params.one) unless fast. Then the epilogue, at
// the same element.
func conv(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, fast bool) {
	if convTile(k).Windowed() {
		convWindow(b, k, s, fast)
		return
	}
	convGEMM(b, k, s, fast)
}

// convLoopCost is the loop cost of a conv kernel (as LoopBudget counts
// it): the GEMM's k-tile loop, as matmul's; the window kernel has none.
func convLoopCost(k *ir.Kernel) int {
	t := convTile(k)
	if t.Windowed() {
		return 0
	}
	_, _, K := ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs).GEMM()
	return MatmulLoopCost(K, t.BK)
}

// convGEMM emits a convolution as an implicit GEMM (ir.Conv2D.GEMM): for
// each group, C[pixel, channel] = Σ_k X[pixel, k]·W[k, channel] with
// k = (c, kh, kw) ascending, where X's elements are read straight from x
// (the tap's input element, or +0 in the padding; no im2col buffer) and W
// is the weight's [MG, K] rows. The machinery is matmul's: a BM×BN tile
// of outputs per workgroup, (BM/TM)×(BN/TN) threads each owning TM×TN
// scalar accumulators, BK-deep slices of X and W staged through
// workgroup memory, the next slice fetched into registers while the
// current one is multiplied, the last, partial slice after the loop (the
// vec4 matmul's k loop, gemmLoop), so the loop cost is MatmulLoopCost. Threads run along pixels (lid.x): the
// patch loads and the output stores of neighbouring threads are
// neighbouring elements for stride 1. Workgroups are numbered channel
// tile fastest, then pixel tile, then group.
func convGEMM(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, fast bool) {
	c := ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	t := convTile(k)
	P, MG, K := c.GEMM()
	tx, ty := t.BM/t.TM, t.BN/t.TN
	threads := tx * ty
	pTiles, cTiles := (P+t.BM-1)/t.BM, (MG+t.BN-1)/t.BN
	total := pTiles * cTiles * c.Group
	s.Workgroup = [3]int{tx, ty, 1}
	s.Groups = codegen.Groups1D(total, maxGroupsPerDim)
	u := Lang.Uint
	ohw, khw := c.OH*c.OW, c.KH*c.KW
	pw := t.BN + 1 // Ws's pitch: its rows are stored k fastest (see below)
	x, w := k.Inputs[0], k.Inputs[1]

	// With two stages (t.Stages == 2) the tiles are double-buffered and
	// indexed [stage][kk][pixel or channel], as the staged vec4 matmul's
	// (gemmLoop): one barrier a k-tile, and every read's index but the
	// constant kk is the same along k.
	staged := t.Stages == 2
	if staged {
		fmt.Fprintf(b, "var<workgroup> Xs: array<array<array<f32, %d>, %d>, 2>; // Xs[stage][kk][pixel]\n", t.BM, t.BK)
		fmt.Fprintf(b, "var<workgroup> Ws: array<array<array<f32, %d>, %d>, 2>; // Ws[stage][kk][channel]\n\n", pw, t.BK)
	} else {
		fmt.Fprintf(b, "var<workgroup> Xs: array<f32, %d>; // Xs[kk * %d + pixel]\n", t.BK*t.BM, t.BM)
		fmt.Fprintf(b, "var<workgroup> Ws: array<f32, %d>; // Ws[kk * %d + channel]\n\n", t.BK*pw, pw)
	}
	fmt.Fprintf(b, "@compute @workgroup_size(%d, %d)\n", tx, ty)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	b.WriteString("\tlet wid = wg.x + wg.y * nwg.x;\n")
	fmt.Fprintf(b, "\tif (wid >= %s) { return; }\n", u(total))
	fmt.Fprintf(b, "\tlet ct = wid %% %s;\n\tlet pt = wid / %s %% %s;\n\tlet grp = wid / %s;\n", u(cTiles), u(cTiles), u(pTiles), u(cTiles*pTiles))
	fmt.Fprintf(b, "\tlet p0 = pt * %s;\n\tlet n0 = ct * %s;\n\tlet c0 = grp * %s;\n", u(t.BM), u(t.BN), u(c.CG))
	fmt.Fprintf(b, "\tlet tid = lid.y * %du + lid.x;\n", tx)
	for m := 0; m < t.TM; m++ {
		for n := 0; n < t.TN; n++ {
			// The uniform zero, not a literal: see the package doc.
			fmt.Fprintf(b, "\tvar c%d_%d = params.zero;\n", m, n)
		}
	}

	// The X tile is BK×BM, pixels fastest: element e is (kk, col) =
	// (e / BM, e % BM). Thread tid loads elements tid + j·threads; its
	// pixels' coordinates do not depend on the k-tile, so they are worked
	// out once, per distinct column ("slot"), where the tile's shape lets
	// the generator see them: one column when threads is a multiple of BM,
	// kk then tid / BM + j·threads/BM; BM/threads columns when BM is a
	// multiple of threads, kk then a constant.
	nx := (t.BK*t.BM + threads - 1) / threads
	type xload struct{ slot, kk string } // "" slot: worked out at the load
	xl := make([]xload, nx)
	slots := map[int]bool{}
	hoist := func(name, col string) {
		fmt.Fprintf(b, "\tlet q%s = p0 + %s;\n", name, col)
		fmt.Fprintf(b, "\tlet xn%s = q%s / %s;\n\tlet xr%s = q%s %% %s;\n", name, name, u(ohw), name, name, u(ohw))
		fmt.Fprintf(b, "\tlet xh%s = xr%s / %s * %s;\n\tlet xw%s = xr%s %% %s * %s;\n", name, name, u(c.OW), u(c.SH), name, name, u(c.OW), u(c.SW))
	}
	switch {
	case threads%t.BM == 0:
		hoist("0", fmt.Sprintf("tid %% %s", u(t.BM)))
		for j := range xl {
			xl[j] = xload{"0", fmt.Sprintf("tid / %s + %s", u(t.BM), u(j*threads/t.BM))}
		}
	case t.BM%threads == 0:
		for j := range xl {
			col := j * threads % t.BM
			name := fmt.Sprint(col)
			if !slots[col] {
				slots[col] = true
				hoist(name, fmt.Sprintf("tid + %s", u(col)))
			}
			xl[j] = xload{name, u(j * threads / t.BM)}
		}
	}
	// Which guards a load needs, known here: the last pixel tile may run
	// past P, the last k-tile past K, and taps may fall in the padding
	// only on the sides that have some (or where the kernel's reach runs
	// past the input).
	pixEdge, kEdge := P%t.BM != 0, K%t.BK != 0
	top, left := c.PT > 0, c.PL > 0
	bottom := (c.OH-1)*c.SH+(c.KH-1)*c.DH >= c.PT+c.H
	right := (c.OW-1)*c.SW+(c.KW-1)*c.DW >= c.PL+c.W
	xIdx := codegen.Offset(Lang, x, []string{"xn", "c0 + ci", "ph - " + u(c.PT), "pw - " + u(c.PL)})
	// The weight's row of channel ch (of the group) at tap kq.
	wRow := "grp * " + u(c.MG) + " + ch"
	wIdx := fmt.Sprintf("(%s) * %s + kq", wRow, u(K))
	if !w.Plain() {
		wIdx = codegen.Offset(Lang, w, []string{wRow, "kq / " + u(khw), "kq % " + u(khw) + " / " + u(c.KW), "kq % " + u(c.KW)})
	}
	nw := (t.BK*t.BN + threads - 1) / threads
	for j := 0; j < nx; j++ {
		fmt.Fprintf(b, "\tvar rx%d = 0.0;\n", j)
	}
	for j := 0; j < nw; j++ {
		fmt.Fprintf(b, "\tvar rw%d = 0.0;\n", j)
	}
	// The k loop is matmul's (gemmLoop), double-buffered when staged.
	loop := gemmLoop{K: K, BK: t.BK, k: u(K), stages: 1}
	if staged {
		loop.stages = 2
	}
	// fetch loads the k-tile at kt into the registers rx, rw.
	loop.fetch = func(in, kt string) {
		for j, l := range xl {
			e := j * threads
			fmt.Fprintf(b, "%s{\n", in)
			guard := []string{}
			name, kk := l.slot, l.kk
			if name == "" {
				fmt.Fprintf(b, "%s\tlet e = tid + %s;\n", in, u(e))
				fmt.Fprintf(b, "%s\tlet q = p0 + e %% %s;\n", in, u(t.BM))
				fmt.Fprintf(b, "%s\tlet xn = q / %s;\n%s\tlet xr = q %% %s;\n", in, u(ohw), in, u(ohw))
				fmt.Fprintf(b, "%s\tlet xh = xr / %s * %s;\n%s\tlet xw = xr %% %s * %s;\n", in, u(c.OW), u(c.SH), in, u(c.OW), u(c.SW))
				kk = "e / " + u(t.BM)
				if (j+1)*threads > t.BK*t.BM {
					guard = append(guard, "e < "+u(t.BK*t.BM))
				}
			} else {
				fmt.Fprintf(b, "%s\tlet xn = xn%s;\n%s\tlet xh = xh%s;\n%s\tlet xw = xw%s;\n", in, name, in, name, in, name)
				if (j+1)*threads > t.BK*t.BM {
					guard = append(guard, fmt.Sprintf("tid + %s < %s", u(e), u(t.BK*t.BM)))
				}
			}
			if pixEdge {
				guard = append(guard, fmt.Sprintf("q%s < %s", name, u(P)))
			}
			fmt.Fprintf(b, "%s\tlet kq = %s + %s;\n", in, kt, kk)
			if kEdge {
				guard = append(guard, "kq < "+u(K))
			}
			fmt.Fprintf(b, "%s\tlet ci = kq / %s;\n%s\tlet kr = kq %% %s;\n", in, u(khw), in, u(khw))
			fmt.Fprintf(b, "%s\tlet ph = xh + kr / %s * %s;\n%s\tlet pw = xw + kr %% %s * %s;\n", in, u(c.KW), u(c.DH), in, u(c.KW), u(c.DW))
			guard = append(guard, padGuards(c, top, bottom, left, right)...)
			fmt.Fprintf(b, "%s\trx%d = 0.0;\n", in, j)
			fmt.Fprintf(b, "%s\t%s\n%s}\n", in, guarded(guard, fmt.Sprintf("rx%d = in0[%s];", j, xIdx)), in)
		}
		// W's tile is BK×BN, loaded k fastest (the weight's rows are
		// contiguous along k): element e is (kk, ch) = (e % BK, e / BK),
		// at Ws[kk·(BN+1) + ch], a row padded so those stores spread over
		// the banks.
		for j := 0; j < nw; j++ {
			fmt.Fprintf(b, "%s{\n%s\tlet e = tid + %s;\n", in, in, u(j*threads))
			fmt.Fprintf(b, "%s\tlet ch = n0 + e / %s;\n%s\tlet kq = %s + e %% %s;\n", in, u(t.BK), in, kt, u(t.BK))
			guard := []string{}
			if (j+1)*threads > t.BK*t.BN {
				guard = append(guard, "e < "+u(t.BK*t.BN))
			}
			if MG%t.BN != 0 {
				guard = append(guard, "ch < "+u(MG))
			}
			if kEdge {
				guard = append(guard, "kq < "+u(K))
			}
			fmt.Fprintf(b, "%s\trw%d = 0.0;\n", in, j)
			fmt.Fprintf(b, "%s\t%s\n%s}\n", in, guarded(guard, fmt.Sprintf("rw%d = in1[%s];", j, wIdx)), in)
		}
	}
	// store writes the fetched registers into workgroup memory (stage
	// names the buffer when staged).
	loop.store = func(in, stage string) {
		for j := 0; j < nx; j++ {
			e := j * threads
			at := fmt.Sprintf("tid + %s", u(e))
			if staged {
				at = fmt.Sprintf("%s][(tid + %s) / %s][(tid + %s) %% %s", stage, u(e), u(t.BM), u(e), u(t.BM))
			}
			if (j+1)*threads > t.BK*t.BM {
				fmt.Fprintf(b, "%sif (tid + %s < %s) { Xs[%s] = rx%d; }\n", in, u(e), u(t.BK*t.BM), at, j)
			} else {
				fmt.Fprintf(b, "%sXs[%s] = rx%d;\n", in, at, j)
			}
		}
		for j := 0; j < nw; j++ {
			at := fmt.Sprintf("(tid + %s) %% %s * %s + (tid + %s) / %s", u(j*threads), u(t.BK), u(pw), u(j*threads), u(t.BK))
			if staged {
				at = fmt.Sprintf("%s][(tid + %s) %% %s][(tid + %s) / %s", stage, u(j*threads), u(t.BK), u(j*threads), u(t.BK))
			}
			if (j+1)*threads > t.BK*t.BN {
				fmt.Fprintf(b, "%sif (tid + %s < %s) { Ws[%s] = rw%d; }\n", in, u(j*threads), u(t.BK*t.BN), at, j)
			} else {
				fmt.Fprintf(b, "%sWs[%s] = rw%d;\n", in, at, j)
			}
		}
	}
	// multiply adds steps k-steps of the staged tile's products.
	loop.multiply = func(in, stage string, steps int) {
		for kk := 0; kk < steps; kk++ {
			as := func(m int) { fmt.Fprintf(b, "Xs[%du + lid.x]", kk*t.BM+m*tx) }
			bs := func(n int) { fmt.Fprintf(b, "Ws[%du + lid.y]", kk*pw+n*ty) }
			if staged {
				as = func(m int) { fmt.Fprintf(b, "Xs[%s][%d][lid.x + %du]", stage, kk, m*tx) }
				bs = func(n int) { fmt.Fprintf(b, "Ws[%s][%d][lid.y + %du]", stage, kk, n*ty) }
			}
			kStep(b, in, t.TM, t.TN, as, bs, t.TM, t.TN, scalarProduct, fast)
		}
	}
	loop.emit(b)
	// The epilogue: output (pixel q, channel ch) is element
	// ((n·M + grp·MG + ch)·OH + oh)·OW + ow of [N,M,OH,OW].
	body := codegen.Body(Lang, k, load(k, "i"), "acc[r]")
	if t.TM*t.TN > 1 && t.TM*t.TN*len(body) > epilogueLoopLines {
		convEpilogueLoop(b, k, t, c)
		return
	}
	guard, index := fmt.Sprintf("q < %s && ch < %s", u(P), u(MG)), fmt.Sprintf("ob + (grp * %s + ch) * %s", u(c.MG), u(ohw))
	for m := 0; m < t.TM; m++ {
		fmt.Fprintf(b, "\t{\n\t\tlet q = p0 + lid.x + %s;\n", u(m*tx))
		fmt.Fprintf(b, "\t\tlet ob = q / %s * %s + q %% %s;\n", u(ohw), u(c.M*ohw), u(ohw))
		for n := 0; n < t.TN; n++ {
			fmt.Fprintf(b, "\t\t{\n\t\t\tlet ch = n0 + lid.y + %s;\n", u(n*ty))
			epilogueAt(b, k, 3, guard, index, fmt.Sprintf("c%d_%d", m, n))
			b.WriteString("\t\t}\n")
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
}

// padGuards are the tests that a tap's input row ph and column pw lie in
// x of convolution c, not in its padding, on the sides where some may
// not (top, bottom, left, right).
func padGuards(c ir.Conv2D, top, bottom, left, right bool) []string {
	u := Lang.Uint
	var g []string
	if top {
		g = append(g, "ph >= "+u(c.PT))
	}
	if bottom {
		g = append(g, "ph < "+u(c.PT+c.H))
	}
	if left {
		g = append(g, "pw >= "+u(c.PL))
	}
	if right {
		g = append(g, "pw < "+u(c.PL+c.W))
	}
	return g
}

// guarded is statement st under the conditions guard, on one line.
func guarded(guard []string, st string) string {
	if len(guard) == 0 {
		return st
	}
	return fmt.Sprintf("if (%s) { %s }", strings.Join(guard, " && "), st)
}

// epilogueLoopLines bounds an unrolled epilogue: a GEMM tile whose
// TM×TN copies of the epilogue would be more lines than this renders it
// once, in a loop over the thread's outputs (convEpilogueLoop). SwiftShader
// (the page's WebGPU in Chromium without a GPU) compiles a kernel's
// straight-line code slowly: PP-OCRv4's recognizer has ten convolutions
// whose hard-swish epilogue (a NaN-aware clip and a division, 60 lines)
// unrolled 64 times made 165 KB kernels of 5-12 s each, 1.2 s with the
// loop. A bias and a relu (4 lines, 256 unrolled for 8×8) stay unrolled.
const epilogueLoopLines = 512

// convEpilogueLoop renders the epilogue once, in a loop over the thread's
// TM×TN outputs (epilogueLoop).
func convEpilogueLoop(b *strings.Builder, k *ir.Kernel, t ir.Tile, c ir.Conv2D) {
	u := Lang.Uint
	P, MG, _ := c.GEMM()
	ohw, tx, ty := c.OH*c.OW, t.BM/t.TM, t.BN/t.TN
	epilogueLoop(b, k, t.TM, t.TN, func(m, n int) string { return fmt.Sprintf("c%d_%d", m, n) },
		fmt.Sprintf("\t\tlet q = p0 + lid.x + r / %s * %s;\n\t\tlet ch = n0 + lid.y + r %% %s * %s;\n", u(t.TN), u(tx), u(t.TN), u(ty)),
		fmt.Sprintf("q < %s && ch < %s", u(P), u(MG)), fmt.Sprintf("q / %s * %s + q %% %s + (grp * %s + ch) * %s", u(ohw), u(c.M*ohw), u(ohw), u(c.MG), u(ohw)))
}

// convWindow emits the window kernel of a depthwise convolution (CG = 1,
// ir.Tile.Windowed): a workgroup computes a BM×BN tile (rows × columns)
// of one output channel's plane. It stages the input window those outputs
// read (ir.Conv2D.Window, +0 in the padding) in workgroup memory, reads
// the channel's KH·KW weights into registers, and each thread (a column,
// lid.x, and a band of TM consecutive rows, lid.y) reads each window
// element its outputs need once, then sums each output's products
// (kh, kw) ascending from Params.zero: cpuref's order, its one input
// channel's loop of one. Workgroups are numbered column tile fastest,
// then row tile, then plane (n·M + m).
func convWindow(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, fast bool) {
	c := ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	t := convTile(k)
	th, tw, tm := t.BM, t.BN, t.TM
	ty := th / tm
	threads := tw * ty
	rowTiles, colTiles := (c.OH+th-1)/th, (c.OW+tw-1)/tw
	total := c.N * c.M * rowTiles * colTiles
	wh, ww := c.Window(th, tw)
	s.Workgroup = [3]int{tw, ty, 1}
	s.Groups = codegen.Groups1D(total, maxGroupsPerDim)
	u := Lang.Uint
	x, w := k.Inputs[0], k.Inputs[1]
	fmt.Fprintf(b, "var<workgroup> Xw: array<f32, %d>; // the input window, %d rows of %d\n\n", wh*ww, wh, ww)
	fmt.Fprintf(b, "@compute @workgroup_size(%d, %d)\n", tw, ty)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	b.WriteString("\tlet wid = wg.x + wg.y * nwg.x;\n")
	fmt.Fprintf(b, "\tif (wid >= %s) { return; }\n", u(total))
	fmt.Fprintf(b, "\tlet oh0 = wid / %s %% %s * %s;\n\tlet ow0 = wid %% %s * %s;\n", u(colTiles), u(rowTiles), u(th), u(colTiles), u(tw))
	fmt.Fprintf(b, "\tlet plane = wid / %s;\n\tlet m = plane %% %s;\n\tlet nn = plane / %s;\n\tlet ci = m / %s;\n", u(colTiles*rowTiles), u(c.M), u(c.M), u(c.MG))
	fmt.Fprintf(b, "\tlet tid = lid.y * %du + lid.x;\n", tw)
	top, left := c.PT > 0, c.PL > 0
	bottom := (rowTiles*th-1)*c.SH+(c.KH-1)*c.DH >= c.PT+c.H
	right := (colTiles*tw-1)*c.SW+(c.KW-1)*c.DW >= c.PL+c.W
	xIdx := codegen.Offset(Lang, x, []string{"nn", "ci", "ph - " + u(c.PT), "pw - " + u(c.PL)})
	for j := 0; j*threads < wh*ww; j++ {
		fmt.Fprintf(b, "\t{\n\t\tlet e = tid + %s;\n", u(j*threads))
		in := "\t\t"
		if (j+1)*threads > wh*ww {
			fmt.Fprintf(b, "\t\tif (e < %s) {\n", u(wh*ww))
			in = "\t\t\t"
		}
		fmt.Fprintf(b, "%slet ph = oh0 * %s + e / %s;\n%slet pw = ow0 * %s + e %% %s;\n", in, u(c.SH), u(ww), in, u(c.SW), u(ww))
		fmt.Fprintf(b, "%svar xv = 0.0;\n", in)
		fmt.Fprintf(b, "%s%s\n%sXw[e] = xv;\n", in, guarded(padGuards(c, top, bottom, left, right), fmt.Sprintf("xv = in0[%s];", xIdx)), in)
		if (j+1)*threads > wh*ww {
			b.WriteString("\t\t}\n")
		}
		b.WriteString("\t}\n")
	}
	for kh := range c.KH {
		for kw := range c.KW {
			fmt.Fprintf(b, "\tlet w%d_%d = in1[%s];\n", kh, kw, codegen.Offset(Lang, w, []string{"m", "0u", u(kh), u(kw)}))
		}
	}
	b.WriteString("\tworkgroupBarrier();\n")
	// Output r of the thread, tap (kh, kw), reads window row
	// (lid.y·TM + r)·SH + kh·DH, column lid.x·SW + kw·DW.
	fmt.Fprintf(b, "\tlet wr = lid.y * %s;\n\tlet wc = lid.x * %s;\n", u(tm*c.SH), u(c.SW))
	seen := map[int]bool{}
	for r := range tm {
		for kh := range c.KH {
			o := r*c.SH + kh*c.DH
			if seen[o] {
				continue
			}
			seen[o] = true
			for kw := range c.KW {
				fmt.Fprintf(b, "\tlet x%d_%d = Xw[(wr + %s) * %s + wc + %s];\n", o, kw, u(o), u(ww), u(kw*c.DW))
			}
		}
	}
	rowEdge, colEdge := c.OH%th != 0, c.OW%tw != 0
	for r := range tm {
		fmt.Fprintf(b, "\t{\n\t\tlet oh = oh0 + lid.y * %s + %s;\n\t\tlet ow = ow0 + lid.x;\n", u(tm), u(r))
		var guard []string
		if rowEdge {
			guard = append(guard, "oh < "+u(c.OH))
		}
		if colEdge {
			guard = append(guard, "ow < "+u(c.OW))
		}
		in := "\t\t"
		if len(guard) > 0 {
			fmt.Fprintf(b, "\t\tif (%s) {\n", strings.Join(guard, " && "))
			in = "\t\t\t"
		}
		fmt.Fprintf(b, "%svar acc = params.zero;\n", in)
		for kh := range c.KH {
			for kw := range c.KW {
				fmt.Fprintf(b, "%sacc = acc + %s;\n", in, product(fmt.Sprintf("x%d_%d * w%d_%d", r*c.SH+kh*c.DH, kw, kh, kw), fast))
			}
		}
		fmt.Fprintf(b, "%slet i = plane * %s + oh * %s + ow;\n", in, u(c.OH*c.OW), u(c.OW))
		tabs := len(in)
		b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), "acc"), tabs))
		b.WriteString(codegen.Indent(stores(k, "i"), tabs))
		if len(guard) > 0 {
			b.WriteString("\t\t}\n")
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
}
