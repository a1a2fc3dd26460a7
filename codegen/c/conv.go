package c

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// convPrelude holds the convolution's register tile (see conv): CV_R
// output channels × CV_W pixels of one output row. Natively with AVX2 4
// channels × 16 pixels in 8 ymm accumulators; with SSE 2 × 16 in 4-lane
// vectors. wasm gets tiles that fit the 16 XMM registers wazero allocates:
// with SIMD128 4 channels × 8 pixels (8 v128 accumulators), without it
// (its vectors become scalars) 2 × 4, 8 scalar accumulators; the 2 × 16
// tile it had, 32 scalars, spilled on every product (a 1×1 conv of 480
// channels on 6×80 took 571 ms under wazero, 3.2 natively).
const convPrelude = `
#if defined(__AVX2__) && !defined(__wasm__)
typedef float cvec __attribute__((vector_size(32)));
#define CV_VL 8
#define CV_R 4
#define CV_W 16
#elif defined(__wasm__) && defined(__wasm_simd128__)
typedef float cvec __attribute__((vector_size(16)));
#define CV_VL 4
#define CV_R 4
#define CV_W 8
#elif defined(__wasm__)
typedef float cvec __attribute__((vector_size(16)));
#define CV_VL 4
#define CV_R 2
#define CV_W 4
#else
typedef float cvec __attribute__((vector_size(16)));
#define CV_VL 4
#define CV_R 2
#define CV_W 16
#endif
#define CV_NV (CV_W / CV_VL)
/* CV_SPLAT and CV_GATHER build a vector element by element with constant indices: a loop storing
 * lanes by a variable index goes through the stack when the vectors are scalars (wasm without
 * SIMD128), three memory operations per lane in the innermost loop. */
#if CV_VL == 8
#define CV_SPLAT(s) ((cvec){(s), (s), (s), (s), (s), (s), (s), (s)})
#define CV_GATHER(p, st) ((cvec){(p)[0], (p)[(st)], (p)[2 * (st)], (p)[3 * (st)], (p)[4 * (st)], (p)[5 * (st)], (p)[6 * (st)], (p)[7 * (st)]})
#else
#define CV_SPLAT(s) ((cvec){(s), (s), (s), (s)})
#define CV_GATHER(p, st) ((cvec){(p)[0], (p)[(st)], (p)[2 * (st)], (p)[3 * (st)]})
#endif

/* CV_MB output channels make cv_ctile's block: 32 (4 ymm, 8 xmm or v128), 8 in wasm without SIMD128. */
#if defined(__wasm__) && !defined(__wasm_simd128__)
#define CV_MB 8
#else
#define CV_MB 32
#endif

/* cv_ctile computes one output pixel of CV_MB output channels into t[m]: x is the window at the
 * pixel's first tap, wp the channels' weights, ld per tap, taps (c, kh, kw) ascending. For
 * convolutions a few pixels wide, whose pixel tiles would be mostly idle lanes. Each lane is one
 * output: one accumulator from +0, a rounded product (x first, as cv_tile) and a rounded add per tap. */
static inline __attribute__((always_inline)) void cv_ctile(float *restrict t, const float *restrict wp,
	const float *restrict x, idx cg, idx kh, idx kw, idx dh, idx dw, idx ww, idx cs, idx ld) {
	cvec acc[CV_MB / CV_VL];
	for (int v = 0; v < CV_MB / CV_VL; v++)
		acc[v] = CV_SPLAT(F(0u));
	for (idx c = 0; c < cg; c++)
		for (idx i = 0; i < kh; i++)
			for (idx j = 0; j < kw; j++) {
				const cvec xv = CV_SPLAT(x[c * cs + i * dh * ww + j * dw]);
				for (int v = 0; v < CV_MB / CV_VL; v++) {
					cvec w;
					__builtin_memcpy(&w, wp + v * CV_VL, sizeof w);
					const cvec p = xv * w;
					acc[v] = acc[v] + p;
				}
				wp += ld;
			}
	for (int v = 0; v < CV_MB / CV_VL; v++)
		__builtin_memcpy(t + v * CV_VL, &acc[v], sizeof acc[v]);
}

/* cv_tile computes R output channels × CV_W pixels into t[r*CV_W + q]: x is the window at the tile's first
 * tap (row stride ww, channel stride cs, pixel stride sw), wp the R channels' weights, R per tap, taps
 * (c, kh, kw) ascending. Each lane is one output: one accumulator from +0, a rounded product and a
 * rounded add per tap. */
static inline __attribute__((always_inline)) void cv_tile(float *restrict t, const float *restrict wp,
	const float *restrict x, idx cg, idx kh, idx kw, idx dh, idx dw, idx sw, idx ww, idx cs, int R) {
	cvec acc[CV_R][CV_NV];
	for (int r = 0; r < R; r++)
		for (int v = 0; v < CV_NV; v++)
			acc[r][v] = CV_SPLAT(F(0u));
	for (idx c = 0; c < cg; c++)
		for (idx i = 0; i < kh; i++)
			for (idx j = 0; j < kw; j++) {
				const float *restrict xp = x + c * cs + i * dh * ww + j * dw;
				cvec xv[CV_NV];
				for (int v = 0; v < CV_NV; v++) {
					if (sw == 1)
						__builtin_memcpy(&xv[v], xp + v * CV_VL, sizeof xv[v]);
					else
						xv[v] = CV_GATHER(xp + v * CV_VL * sw, sw);
				}
				for (int r = 0; r < R; r++) {
					const cvec wv = CV_SPLAT(wp[r]);
					for (int v = 0; v < CV_NV; v++) {
						const cvec p = xv[v] * wv;
						acc[r][v] = acc[r][v] + p;
					}
				}
				wp += R;
			}
	for (int r = 0; r < R; r++)
		for (int v = 0; v < CV_NV; v++)
			__builtin_memcpy(t + r * CV_W + v * CV_VL, &acc[r][v], sizeof acc[r][v]);
}
`

// convGeometry is how conv lays out one kernel's work: tiles of ohb output
// rows of one image and group, a window of ww columns and rh rows per
// input channel (the input those rows read, the padding as +0 and 16-pixel
// tiles rounded up), and the scratch for the group's packed weights and
// the window.
type convGeometry struct {
	c               ir.Conv2D
	ohb, rb, ww, rh int
	// narrow: at most 4 output pixels a row, 8 channels a group and 9 taps
	// a channel (a longer row of weights makes packing them by tap cost
	// more than it saves: the VAD's 1×256 STFT doubled), so
	// tiles run over channels (cv_ctile), the weights packed tap by tap
	// with the group's channels contiguous, mgp (MG rounded up to 32,
	// zeros beyond) apart.
	narrow bool
	mgp    int
}

// wpk is the floats of a group's packed weights.
func (g convGeometry) wpk() int {
	if g.narrow {
		return g.mgp * g.c.Taps()
	}
	return g.c.MG * g.c.Taps()
}

func convGeometryOf(k *ir.Kernel) convGeometry {
	c := ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	g := convGeometry{c: c}
	owp := (c.OW + 15) / 16 * 16
	g.ww = (owp-1)*c.SW + (c.KW-1)*c.DW + 1
	g.ohb = min(c.OH, max(4, 16384/(c.CG*g.ww*c.SH)))
	g.rb = (c.OH + g.ohb - 1) / g.ohb
	g.rh = (g.ohb-1)*c.SH + (c.KH-1)*c.DH + 1
	g.narrow = c.OW <= 4 && c.MG >= 8 && c.KH*c.KW <= 9
	g.mgp = (c.MG + 31) / 32 * 32
	return g
}

// scratch is the floats one call of the kernel needs: the packed weights
// of a group and the window.
func (g convGeometry) scratch() int { return g.wpk() + g.c.CG*g.rh*g.ww }

// ConvScratch is the scratch of a convolution kernel (see conv).
func ConvScratch(k *ir.Kernel) int { return convGeometryOf(k).scratch() }

// conv writes a convolution and its epilogue as tiles of ohb output rows
// of one image and one group: an implicit GEMM whose k is the taps
// (c, kh, kw) ascending. Per tile it packs the rows of the group's input
// channels that the tile reads into a window in scratch, with the padding
// written as +0 (so every tap is a product, as cpuref's, and the inner
// loop has no bounds), and, at a group's first tile, the group's weights
// into strips of CV_R channels, tap by tap. Each register tile (cv_tile)
// then keeps one accumulator per output from +0 over (c, kh, kw)
// ascending, a rounded product and a rounded add per tap:
// cpuref.Conv2D's order, so the bits are its bits. The epilogue runs per
// output after its accumulator is final. Operands are read through their
// strides.
func conv(b *strings.Builder, k *ir.Kernel) int {
	g := convGeometryOf(k)
	c := g.c
	u := Lang.Uint
	taps := c.Taps()
	xAt := codegen.Offset(Lang, k.Inputs[0], []string{"n", "g * " + u(c.CG) + " + ci", "ih", "iw"})
	wAt := codegen.Offset(Lang, k.Inputs[1], []string{"m", "ci", "kh", "kw"})
	cs := g.rh * g.ww
	fmt.Fprintf(b, "\tfloat *restrict wpk = scratch, *restrict win = scratch + %s;\n", u(g.wpk()))
	b.WriteString("\tfor (idx tl = t0; tl < t1; tl++) {\n")
	fmt.Fprintf(b, "\t\tconst idx rb = tl %% %s, g = tl / %s %% %s, n = tl / %s;\n", u(g.rb), u(g.rb), u(c.Group), u(g.rb*c.Group))
	fmt.Fprintf(b, "\t\tconst idx oh0 = rb * %s, oh1 = oh0 + %s < %s ? oh0 + %s : %s;\n", u(g.ohb), u(g.ohb), u(c.OH), u(g.ohb), u(c.OH))
	// The group's weights, strip by strip: strip s of rs channels holds
	// tap t's weights at s·CV_R·taps + t·rs + r.
	b.WriteString("\t\tif (tl == t0 || rb == 0) {\n")
	if g.narrow {
		// Tap t's weights at t·mgp + ml, zeros past MG.
		fmt.Fprintf(b, "\t\t\tfor (idx ci = 0; ci < %s; ci++)\n", u(c.CG))
		fmt.Fprintf(b, "\t\t\tfor (idx kh = 0; kh < %s; kh++)\n", u(c.KH))
		fmt.Fprintf(b, "\t\t\tfor (idx kw = 0; kw < %s; kw++) {\n", u(c.KW))
		fmt.Fprintf(b, "\t\t\t\tfloat *restrict wt = wpk + ((ci * %s + kh) * %s + kw) * %s;\n", u(c.KH), u(c.KW), u(g.mgp))
		fmt.Fprintf(b, "\t\t\t\tfor (idx ml = 0; ml < %s; ml++) {\n", u(c.MG))
		fmt.Fprintf(b, "\t\t\t\t\tconst idx m = g * %s + ml;\n", u(c.MG))
		fmt.Fprintf(b, "\t\t\t\t\twt[ml] = in1[%s];\n\t\t\t\t}\n", wAt)
		fmt.Fprintf(b, "\t\t\t\tfor (idx ml = %s; ml < %s; ml++)\n\t\t\t\t\twt[ml] = %s;\n", u(c.MG), u(g.mgp), Lang.Float(0))
		b.WriteString("\t\t\t}\n\t\t}\n")
	} else {
		fmt.Fprintf(b, "\t\t\tfor (idx ml = 0; ml < %s; ml++) {\n", u(c.MG))
		fmt.Fprintf(b, "\t\t\t\tconst idx m = g * %s + ml, s = ml / CV_R, r = ml %% CV_R;\n", u(c.MG))
		fmt.Fprintf(b, "\t\t\t\tconst idx rs = (s + 1) * CV_R <= %s ? CV_R : %s %% CV_R;\n", u(c.MG), u(c.MG))
		fmt.Fprintf(b, "\t\t\t\tfor (idx ci = 0; ci < %s; ci++)\n", u(c.CG))
		fmt.Fprintf(b, "\t\t\t\tfor (idx kh = 0; kh < %s; kh++)\n", u(c.KH))
		fmt.Fprintf(b, "\t\t\t\tfor (idx kw = 0; kw < %s; kw++)\n", u(c.KW))
		fmt.Fprintf(b, "\t\t\t\t\twpk[s * CV_R * %s + ((ci * %s + kh) * %s + kw) * rs + r] = in1[%s];\n", u(taps), u(c.KH), u(c.KW), wAt)
		b.WriteString("\t\t\t}\n\t\t}\n")
	}
	// The window: rows oh0·SH - PT … of the group's channels, columns -PL …
	fmt.Fprintf(b, "\t\tconst idx rh = (oh1 - oh0 - 1) * %s + %s;\n", u(c.SH), u((c.KH-1)*c.DH+1))
	fmt.Fprintf(b, "\t\tfor (idx ci = 0; ci < %s; ci++)\n", u(c.CG))
	b.WriteString("\t\tfor (idx r = 0; r < rh; r++) {\n")
	fmt.Fprintf(b, "\t\t\tfloat *restrict row = win + ci * %s + r * %s;\n", u(cs), u(g.ww))
	fmt.Fprintf(b, "\t\t\tconst idx ph = oh0 * %s + r, ih = ph - %s;\n", u(c.SH), u(c.PT))
	fmt.Fprintf(b, "\t\t\tif (ph < %s || ph >= %s) {\n", u(c.PT), u(c.PT+c.H))
	fmt.Fprintf(b, "\t\t\t\tfor (idx q = 0; q < %s; q++)\n\t\t\t\t\trow[q] = %s;\n", u(g.ww), Lang.Float(0))
	b.WriteString("\t\t\t\tcontinue;\n\t\t\t}\n")
	lo, hi := min(c.PL, g.ww), min(c.PL+c.W, g.ww)
	if lo > 0 {
		fmt.Fprintf(b, "\t\t\tfor (idx q = 0; q < %s; q++)\n\t\t\t\trow[q] = %s;\n", u(lo), Lang.Float(0))
	}
	fmt.Fprintf(b, "\t\t\tfor (idx q = %s; q < %s; q++) {\n\t\t\t\tconst idx iw = q - %s;\n\t\t\t\trow[q] = in0[%s];\n\t\t\t}\n", u(lo), u(hi), u(c.PL), xAt)
	if hi < g.ww {
		fmt.Fprintf(b, "\t\t\tfor (idx q = %s; q < %s; q++)\n\t\t\t\trow[q] = %s;\n", u(hi), u(g.ww), Lang.Float(0))
	}
	b.WriteString("\t\t}\n")
	load := func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "at"))
	}
	strips := func(first, count, rows string) {
		fmt.Fprintf(b, "\t\tfor (idx s = %s; s < %s; s++)\n", first, count)
		b.WriteString("\t\tfor (idx oh = oh0; oh < oh1; oh++)\n")
		fmt.Fprintf(b, "\t\tfor (idx ow0 = 0; ow0 < %s; ow0 += CV_W) {\n", u(c.OW))
		fmt.Fprintf(b, "\t\t\tfloat t[CV_R * CV_W];\n")
		fmt.Fprintf(b, "\t\t\tcv_tile(t, wpk + s * CV_R * %s, win + (oh - oh0) * %s * %s + ow0 * %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n",
			u(taps), u(c.SH), u(g.ww), u(c.SW), u(c.CG), u(c.KH), u(c.KW), u(c.DH), u(c.DW), u(c.SW), u(g.ww), u(cs), rows)
		fmt.Fprintf(b, "\t\t\tfor (idx r = 0; r < %s; r++)\n", rows)
		fmt.Fprintf(b, "\t\t\tfor (idx q = 0; q < CV_W && ow0 + q < %s; q++) {\n", u(c.OW))
		fmt.Fprintf(b, "\t\t\t\tconst idx at = ((n * %s + g * %s + s * CV_R + r) * %s + oh) * %s + ow0 + q;\n", u(c.M), u(c.MG), u(c.OH), u(c.OW))
		b.WriteString("\t\t\t\tconst float acc = t[r * CV_W + q];\n")
		b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, "acc"), 4))
		b.WriteString(codegen.Indent(stores(k, "at"), 4))
		b.WriteString("\t\t\t}\n\t\t}\n")
	}
	if g.narrow {
		// Per output pixel, blocks of CV_MB channels.
		b.WriteString("\t\tfor (idx oh = oh0; oh < oh1; oh++)\n")
		fmt.Fprintf(b, "\t\tfor (idx ow = 0; ow < %s; ow++)\n", u(c.OW))
		fmt.Fprintf(b, "\t\tfor (idx m0 = 0; m0 < %s; m0 += CV_MB) {\n", u(c.MG))
		b.WriteString("\t\t\tfloat t[CV_MB];\n")
		fmt.Fprintf(b, "\t\t\tcv_ctile(t, wpk + m0, win + (oh - oh0) * %s * %s + ow * %s, %s, %s, %s, %s, %s, %s, %s, %s);\n",
			u(c.SH), u(g.ww), u(c.SW), u(c.CG), u(c.KH), u(c.KW), u(c.DH), u(c.DW), u(g.ww), u(cs), u(g.mgp))
		fmt.Fprintf(b, "\t\t\tfor (idx r = 0; r < CV_MB && m0 + r < %s; r++) {\n", u(c.MG))
		fmt.Fprintf(b, "\t\t\t\tconst idx at = ((n * %s + g * %s + m0 + r) * %s + oh) * %s + ow;\n", u(c.M), u(c.MG), u(c.OH), u(c.OW))
		b.WriteString("\t\t\t\tconst float acc = t[r];\n")
		b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, "acc"), 4))
		b.WriteString(codegen.Indent(stores(k, "at"), 4))
		b.WriteString("\t\t\t}\n\t\t}\n\t}\n")
		return c.N * c.Group * g.rb
	}
	strips("0", u(c.MG)+" / CV_R", "CV_R")
	fmt.Fprintf(b, "\t\tif (%s %% CV_R != 0) {\n", u(c.MG))
	strips(u(c.MG)+" / CV_R", u(c.MG)+" / CV_R + 1", u(c.MG)+" % CV_R")
	b.WriteString("\t\t}\n\t}\n")
	return c.N * c.Group * g.rb
}
