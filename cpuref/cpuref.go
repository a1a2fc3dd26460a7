// Package cpuref is gpucc's reference: it defines, and computes, the exact
// answer every backend must reproduce.
//
// # Semantics
//
// All values are IEEE-754 binary32 (float32) with round-to-nearest-even.
// Subnormals are kept, never flushed. Every intermediate rounds to float32:
//
//   - add, sub, mul (tensor or scalar operand): one operation, one rounding.
//     A product is rounded before anything adds to it. There is no fused
//     multiply-add anywhere: `a*b+c` written as two nodes rounds twice, on
//     every backend, even where a driver would contract it.
//   - relu(x) = x if x > 0, else +0. So relu(-0) = +0 and relu(NaN) = +0.
//   - positive(x) = 1 if x > 0, else 0 (also 0 for NaN).
//   - transpose moves values; it never changes a bit.
//   - permute(x) with perm (numpy's transpose of any rank: output axis k is
//     x's axis perm[k]) moves values; it never changes a bit.
//   - broadcast(x) to a shape S (numpy's broadcast_to: x's shape,
//     right-aligned with S, has each dimension S's or 1): out at the
//     multi-index idx of S is x at idx with S's extra leading dimensions
//     dropped and every dimension where x has size 1 read at 0. It moves
//     values; it never changes a bit.
//   - reshape(x) to S of the same element count: the same elements in the
//     same row-major order. It never changes a bit.
//   - matmul C[i,j]: acc starts at +0; for k = 0, 1, …, K-1 in ascending
//     order, p = round(A[i,k]·B[k,j]) and acc = round(acc + p). Each product
//     and each partial sum rounds separately. A tiled kernel reproduces this
//     exactly as long as every output keeps one accumulator that walks k in
//     ascending order. A batched matmul ([..., m,k] × [..., k,n], rank 2 to
//     4) is this per matrix, its batch dimensions broadcast as broadcast's
//     are: each batch's bits are the 2-D matmul's.
//   - conv2d(x, w): (ir.Conv2D: x [N,C,H,W], w [M,C/g,kH,kW], strides,
//     pads, dilations, g groups) out[n,m,oh,ow] is one accumulator that
//     starts at +0 and, for c = 0 … C/g-1, then kh = 0 … kH-1, then
//     kw = 0 … kW-1 (ascending, kw fastest: the weight's own row-major
//     order, which is the K order of an implicit GEMM over [M, C/g·kH·kW]),
//     adds p = round(xp·w[m,c,kh,kw]) with one rounding each, where xp is
//     x[n, (m/(M/g))·(C/g)+c, oh·sH-pT+kh·dH, ow·sW-pL+kw·dW], or +0 where
//     that position lies in the padding. Padding is zeros, as in ONNX: a
//     padded tap adds round(+0·w), which is ±0 (changing nothing, since the
//     accumulator is never -0) or NaN for an infinite or NaN weight.
//   - conv_transpose2d(x, w): (ir.ConvTranspose2D: x [N,C,H,W], w
//     [C,M/g,kH,kW], strides, pads, dilations, g groups, output_padding)
//     out[n,m,oh,ow] is one accumulator that starts at +0 and, for c over
//     the C/g input channels of m's group ascending, then kh = 0 … kH-1,
//     then kw = 0 … kW-1 (kw fastest), adds p = round(x[n,c,ih,iw]·
//     w[c, m mod (M/g), kh, kw]) with one rounding each, for each tap whose
//     th = oh+pT-kh·dH and tw = ow+pL-kw·dW are ≥ 0 and multiples of sH and
//     sW with ih = th/sH < H and iw = tw/sW < W. Other taps add nothing (ONNX
//     scatters only x's elements, so an infinite weight that meets no
//     element of x makes no NaN); an output that no tap reaches is +0.
//     This is conv2d's input gradient with conv2d's weight in the same
//     order, per input element, as conv2d visits (m, kh, kw).
//   - resize2d(x): (ir.Resize2D: x [N,C,H,W] to [N,C,OH,OW], per axis the
//     taps I0, I1 and float32 weights W0, W1 of ir.ResizeTaps, computed
//     from the attributes in float64) nearest is x[n,c,I0h[oh],I0w[ow]],
//     unchanged (and so is an axis of one input element, linear or not);
//     linear is, for j = 0, 1 and h_0 = I0h[oh], h_1 = I1h[oh],
//     r_j = round(round(W0w[ow]·x[n,c,h_j,I0w[ow]]) + round(W1w[ow]·
//     x[n,c,h_j,I1w[ow]])), then round(round(W0h[oh]·r_0) +
//     round(W1h[oh]·r_1)): the columns first, as ONNX's reference
//     interpolates the last axis innermost.
//   - pad(x): (ir.Pad: x of rank 1 to 4, pads before and after each axis,
//     a mode, the constant from value_bits) out[o] is x at, along each
//     axis d, index i = o[d] - before[d] mapped into x by the mode:
//     constant leaves i (an i outside x makes the element the constant),
//     edge clamps it, wrap takes it modulo n, reflect takes j = i modulo
//     2(n-1) and then 2(n-1) - j where j ≥ n (an axis of one element
//     reads it). A copy: nothing is rounded.
//   - attention(q, k, v, mask): (ir.Attention: q [...,S,D], k [...,T,D],
//     v [...,T,E], mask broadcast to [...,S,T], scale, causal) per batch
//     index and query row i, a_j is matmul's accumulator of q[i,:]·k[j,:];
//     t_j = round(round(a_j·scale) + mask[i,j]), or -Inf for j > i when
//     causal; m = maximum of the t_j; then from l = +0 and o_e = +0, for j
//     ascending, p = exp(round(t_j − m)), l = round(l + p) and o_e =
//     round(o_e + round(p·v[j,e])); out[i,e] = div(o_e, l). Every key is
//     visited, masked or not; a fully masked row is NaN. ir/attention.go
//     says why this order and not the unfused softmax's. Where the
//     shapes take the online order (ir.Attention.Block: long rows), the
//     keys go in blocks of Block from m = -MaxFloat32: per block m' =
//     maximum of m and its t_j, c = exp(round(m − m')), l and o_e
//     rounded times c, then its keys as above with m', m = m'. Where
//     ir.AttentionSplit also cuts the keys into parts (Attention.Chunk),
//     each part runs that order alone from its first key, and the parts'
//     m_c, l_c, o_c combine: M = maximum of the m_c, then from +0, for c
//     ascending, L = round(L + round(l_c·w)) and O_e = round(O_e +
//     round(o_c,e·w)) with w = exp(round(m_c − M)); out = div(O_e, L).
//   - maxpool2d(x): (ir.Pool2D: x [N,C,H,W], a kH×kW window, strides,
//     pads, dilations) out[n,c,oh,ow] starts at -Inf and, for kh = 0 …
//     kH-1, then kw = 0 … kW-1, becomes maximum(acc, x[n, c,
//     oh·sH-pT+kh·dH, ow·sW-pL+kw·dW]) (maximum below: -0 < +0, NaN wins)
//     for each tap inside x; taps in the padding are skipped (ONNX pads
//     with -Inf), and the shape rule keeps pads below the window, so every
//     window holds a tap of x unless dilation steps over it.
//   - maxpool2d_grad(x, g): (maxpool2d's geometry over x; g of its output's
//     shape) each window selects one tap: walking its taps inside x as
//     maxpool2d does, the first, and then each at which the accumulator's
//     bits change — the first tap, (kh, kw) ascending, holding the bits of
//     the window's maximum (ties to the earliest, +0 over -0, the first
//     NaN; a window of -Inf its first tap; a window without taps in x
//     none). dx[n,c,h,w] is one accumulator from +0 that, over the windows
//     (oh, ow) ascending that select (h, w), adds g[n,c,oh,ow], rounding
//     each add: maxpool2d's input gradient, PyTorch's routing of ties.
//   - sum(x) of n elements: pad x with -0.0 to P, the smallest power of two
//     ≥ n, then reduce the contiguous pairwise tree
//     sum(x[lo:hi]) = sum(x[lo:mid]) + sum(x[mid:hi]), mid = (lo+hi)/2.
//     Because x + (-0) == x for every x (including +0 and -0), padding never
//     changes a value, so any reduction that combines aligned power-of-two
//     blocks in this tree order (for example a GPU workgroup reducing 256
//     contiguous elements, then a second pass over the partials) gets the
//     same bits.
//   - sum(x, axes) (the IR target: x's shape with 1 at each reduced axis;
//     see ir.ReduceTarget): each output element's leaves are the elements
//     of x that it covers, in row-major order of the reduced axes (the
//     last reduced axis varies fastest), reduced by the tree above (padded
//     with -0 to a power of two). Reducing every axis is therefore
//     bit-identical to the whole sum, with or without keepdims.
//   - every other reduction (max(x, axes), …): the same leaves and the
//     same tree, combined by its row's Combine and padded with its
//     Identity (ir.OpInfo), so a new reduction row needs no rule here. For
//     max: combined by maximum (below) and padded with -Inf, for which
//     maximum(v, -Inf) = v.
//     maximum is associative except for which NaN it returns (a's when
//     both are), so the tree gives the leftmost NaN leaf when there is one;
//     -0 < +0. It compares integer keys, so it never flushes.
//   - life(x) on an [h,w] grid: a cell is alive when x > 0. Neighbours wrap
//     around both edges (a torus; a 1×1 grid is its own eight neighbours).
//     A cell is 1 in the next step when it has exactly 3 live neighbours, or
//     is alive and has exactly 2; otherwise 0.
//   - full(v): every element is v.
//
// The ops below (protocol extension: "op" names div, maximum, minimum,
// neg, exp, log, tanh, sqrt, rsqrt; the binary ones take b or scalar like
// add) are defined by their expressions in the op table (ir/xmath.go),
// written only in float32 add, sub and mul, comparisons, selects, bitcasts
// and u32 integer add, sub, shifts and masks. No libm, no hardware
// division, square root or transcendental: every backend evaluates the
// same sequence and gets the same bits. Each float step rounds on its own
// and is never contracted (see add, sub, mul above); constants are hidden
// from compilers that reassociate (see codegen.Lang.Const).
//
//   - div(a, b): IEEE division, correctly rounded (ties to even) for every
//     input, subnormal operands and results included, ±Inf on overflow.
//     The significands A, B in [1, 2) are taken apart by u32 steps; a
//     reciprocal estimate (Newton's iteration) and one correction give a
//     faithful quotient q, whose exact remainder A - q·B (Dekker's
//     product, error-free without fused multiply-adds) decides the
//     correct rounding; a subnormal result rounds that once more onto its
//     grid, a tie settled by the remainder's sign (ir/xmath.go's divBody
//     has the proof). NaN if either is NaN, for 0/0 and for ±Inf/±Inf;
//     x/±0 and ±Inf/x are ±Inf and 0/x and x/±Inf ±0, the sign the xor of
//     the operands' signs.
//   - maximum(a, b), minimum(a, b): the larger (smaller) operand by an
//     integer comparison of order keys, -0 < +0; NaN if either is NaN (a's
//     if both are).
//   - neg(x): x with its sign bit flipped (neg(+0) = -0).
//   - sqrt(x): correctly rounded: a reciprocal square-root estimate
//     (Newton's iteration) and one correction give a faithful root q of
//     the significand M in [1, 4), and M - q² by Dekker's product decides
//     the rounding exactly (ir/xmath.go's sqrtBody). sqrt(±0) = ±0,
//     sqrt(+Inf) = +Inf, NaN for x < 0.
//   - rsqrt(x) = div(1, sqrt(x)): two correct roundings. rsqrt(±0) = ±Inf,
//     rsqrt(+Inf) = +0, NaN for x < 0.
//   - exp(x): k = round(x·log2 e), halves away from zero (|x·log2 e| +
//     2^23 rounds it, and an exact half adds one; C takes it by u32 steps
//     on the bits, ir.ExpIntegerK: the same k), r = (x - k·c1) - k·c2
//     with c1 = 0.693359375 (exact products), e^r by Cephes' expf
//     polynomial ((P(r)·r² + r) + 1, Horner's rule), times 2^k as two
//     exact powers of two, so only the last product rounds into the
//     subnormal range or overflows. x > 89 gives +Inf, x < -104 gives +0,
//     exp(NaN) = NaN.
//   - log(x): x = m·2^k with m in [√½, √2) (a subnormal's fraction
//     normalised as a float, exactly), f = m - 1 (exact), ln(1+f) by Cephes' logf
//     polynomial, k·ln 2 added in two parts. log(±0) = -Inf, log(+Inf) =
//     +Inf, NaN for x < 0.
//   - tanh(x): for |x| < 0.625 Cephes' tanhf polynomial x + x·s·P(s),
//     s = x²; else ±(1 - div(2, exp(2|x|) + 1)), and ±1 from |x| ≥ 9.1.
//     tanh(±0) = ±0, tanh(±Inf) = ±1.
//   - erf(x): odd, from |x| (ir's erfBody): below 0.875, x + x·P(x²), P
//     a degree-6 fit of erf(x)/x - 1; from 0.875 to 3.9192059 (0x407ad445,
//     the least float whose erf rounds to 1), 1 - Q(|x| - c), Q a degree-9
//     fit of erfc on [0.875, 1.75), [1.75, 2.5) and [2.5, 3.9192059)
//     around c = 1.3125, 2.125, 3.25; ±1 from there and for ±Inf. Horner's rule, each
//     step rounded; no division and no exp. erf(±0) = ±0, subnormals give
//     x + x·0.12837917 (flushed GPUs: ±0), erf(NaN) = NaN.
//   - sigmoid(x) = div(1, exp(neg(x)) + 1), the order of ONNX's reference:
//     0 where e^-x overflows (x below about -88.7), 1 once e^-x + 1
//     rounds to 1 (x above about 16.6).
//   - greater(a, b), greater_equal(a, b), equal(a, b): 1 where a > b
//     (a >= b, a == b) by float comparison, else 0; 0 if either is NaN,
//     and -0 == +0.
//   - mask(c, b): b where c > 0, else -0, by a select: mask(c, x) +
//     mask(1 - c, y) for c of 1 and 0 is where(c, x, y) bit for bit.
//   - floor(x), ceil(x): exact, by clearing fraction bits (u32 steps) and
//     subtracting 1 (floor of a negative x with a fraction, exact there);
//     ceil(x) = neg(floor(neg(x))). floor(-0) = -0, ceil(-0.5) = -0;
//     |x| ≥ 2^23, ±Inf and NaN are x.
//   - round(x): to the nearest integer, ties to even (numpy's round),
//     exact: the integer part and the exact fraction by u32 steps, 1 added
//     to the magnitude where the fraction is over 0.5 or is 0.5 and the
//     integer part odd; round(-0.5) = -0.
//   - sin(x), cos(x), tan(x) (ir/xtrig.go): |x| = k·π/2 + r, k =
//     round(|x|·2/π) < 2^17, r by π/2 in eight parts (seven of 7 bits, so
//     each product k·part is exact), each subtraction's rounding error
//     kept by two-sum and added back once; Cephes' sinf polynomial for
//     sin r, Horner's rule in r² for cos r, Cephes' tanf polynomial for
//     tan r and 1/r - r·P(r²) (cot's Taylor series to r¹³) for -cot r;
//     the quadrant k mod 4 picks one and its sign, sin and tan odd in x.
//     NaN from |x| ≥ ir.TrigMax (205887, below 2^17·π/2) on, at ±Inf and
//     NaN: gpucc does not reduce larger arguments (a GPU's sin gives
//     noise there); sin(±0) = ±0. Within 1.4 ULP (tan 1.8) of float64.
//   - asin(x), acos(x), atan(x): Cephes' asinf (above ½, π/2 - 2·asin
//     √((1-|x|)/2)), acosf (π - 2·asin √((1+x)/2) below -½, 2·asin
//     √((1-x)/2) above ½, else π/2 - asin x) and atanf (|x| reduced to
//     below tan π/8 through -1/|x| or (|x|-1)/(|x|+1)), π's float32 and
//     its remainder added apart; NaN beyond ±1 for asin and acos. Within
//     2.2 ULP (asin just above ½), 1.1 (acos) and 1.4 (atan).
//   - sinh(x), cosh(x): sinh by Cephes' sinhf polynomial for |x| ≤ 1;
//     else e^|x|/2 ∓ div(½, e^|x|), and (e^{|x|/2}/2)·e^{|x|/2} above 88
//     (where e^|x| overflows first); sinh odd, ±Inf beyond 89.4. Within
//     1.4 ULP.
//   - asinh(x), acosh(x), atanh(x): Cephes' asinhf (a polynomial below ½,
//     ln(|x| + √(x²+1)) to 1500, ln|x| + ln 2 beyond), acoshf (a
//     polynomial times √(x-1) for x - 1 below ¼, ln(x + √(x²-1)) with x²
//     by Dekker's product to 1500, ln x + ln 2 beyond; NaN below 1) and
//     atanhf (a polynomial below ½, ½·ln(div(1+|x|, 1-|x|)); ±Inf at ±1,
//     NaN beyond). Within 1.9 ULP.
//   - pow(a, b): C's pow. An integer b with |b| ≤ 64 by repeated
//     squaring of a (of div(1, a) for b < 0) in the order of ONNX Pow's
//     constant exponents, so a folded and a run-time exponent agree
//     (within 2 + |b| ULP); otherwise exp(b·log|a|), negated for a < 0
//     and b an odd integer (within 2 + 2|ln aᵇ| ULP: log's rounding is
//     scaled by b·ln|a|). NaN for a finite a < 0 and a finite b that is
//     no integer; a^±0 = 1, 1^b = 1 (NaN b too), (-1)^±Inf = 1.
//
// Accuracy against float64: the largest error over every one of the 2^32
// float32 inputs for the unary ops (erf's row: over every 1021st, 4.2
// million inputs, and cpuref's TestErf's dense windows around its region
// edges and saturation point, until an exhaustive run), and over 640
// million random and hard pairs for div. The table is bench/accuracy's output (-write, from its
// exhaustive run on the H200 host's 16 cores, bench/RESULTS.md); the
// benchmark tier's `bench/device.sh ops` reruns it with -check, which fails if
// any input's error exceeds its row:
//
//	div    correctly rounded, subnormal results included (no miss)
//	sqrt   correctly rounded (0.500 ULP)
//	rsqrt  1.490 ULP
//	exp    0.990 ULP
//	log    0.829 ULP
//	tanh   1.330 ULP
//	erf    1.042 ULP
//
// maximum, minimum and neg use no float add, sub or mul, and div, sqrt
// and rsqrt use them only on normal values (significands, their
// products' error terms, and the like; operands and results are taken
// apart and put together by u32 steps), so they never flush: a flushing
// GPU gives Eval's value for them. exp, log and tanh flush like any
// arithmetic. The definitions of div and sqrt are the same bits as the
// integer long division and digit-by-digit root they replaced in
// December 2026 (ir's xmath_test.go: every float32 input for the unary
// ops that use them, millions of pairs for div).
//
// GPU backends may depart from Eval in exactly one way, which WGSL and GLSL
// ES permit: flushing subnormal operands and results of arithmetic to zero,
// and reading subnormal operands of comparisons as zero (the H200's Vulkan
// driver and SwiftShader do both: relu of a subnormal is +0 on each).
// EvalFlushed computes that value; a GPU result must equal Eval's value or
// EvalFlushed's, element by element. The cpu, wasm and native backends keep
// subnormals.
//
// # Dtypes
//
// A node's dtype (ir.DType; float32 unless it says otherwise) is checked
// by its op's type rule (ir.OpInfo.Types). EvalTyped computes graphs of
// every dtype; on float32 nodes over float32 operands it is Eval, bit for
// bit. The rules, one per row:
//
//   - Narrow floats: float16 and bfloat16 values are stored narrow (as float32 values
//     already rounded to the type). Each op computes in float32 exactly as
//     above (its expression, its reduction tree) and rounds the result to
//     the narrow type after every op (ir.DType.Round: ties to even, ±Inf
//     beyond the largest finite value, subnormals kept, NaN kept), a
//     reduction after each combination of its tree. For + − × ÷ √ this
//     double rounding equals one correct rounding of the exact result:
//     float32's 24 bits are at least 2p + 2 of float16's p = 11 and
//     bfloat16's p = 8 (Figueroa 1995), and float32's exponent range covers
//     every such result of float16 operands and is bfloat16's own.
//     TestDoubleRoundingExact checks it against exact arithmetic: √ over
//     every bit pattern of both types, the binary ops over 1.2 million
//     pairs each.
//   - Integers: add, sub, mul, neg and the reductions' adds wrap in two's
//     complement (numpy's and ONNX's): each row's Int rule in int64, the
//     result reduced to the dtype's width (ir.DType.Wrap). maximum,
//     minimum, relu (of signed integers) and max compare values.
//   - div(a, b), mod(a, b) of integers: div truncates toward zero
//     (INT_MIN / -1 wraps to INT_MIN); mod takes the divisor's sign (ONNX's Mod with fmod 0, Python's
//     %). A division or modulo by zero has no right answer: the run fails
//     with ir.CodeIntegerFault, naming the node and the element, and
//     returns no value.
//   - greater, greater_equal, equal over any numeric dtype give bool (1 or
//     0; over float32 operands a node may instead say float32, protocol
//     v1's 1.0 or 0.0); over floats they compare as float32 does (false
//     for NaN, -0 == +0).
//   - and, or, xor, not: bool logic.
//   - bit_and, bit_or, bit_xor, bit_not: two's complement bits of the
//     integer dtype.
//   - shift_left, shift_right: unsigned integers only (ONNX's BitShift);
//     a count of the dtype's width or more gives 0.
//   - where(c, a, b): a where the bool c is true, else b, any dtype,
//     unchanged.
//   - gather(x, i) along axis (ONNX's Gather): x's elements at the int32
//     or int64 indices i of that axis, unchanged; a negative index counts
//     from the end, and one outside [-d, d) fails the run with
//     ir.CodeInvalidInput naming it (never a read out of bounds).
//   - gather_elements(x, i) along axis (ONNX's GatherElements): i's
//     shape; each element is x's at its own position with the axis
//     coordinate its index, wrapped and checked as gather's.
//   - scatter_nd(x, u, i), scatter_elements(x, u, i) (ONNX's ScatterND,
//     ScatterElements; ir/scatter.go): x's copy with the update elements
//     applied one at a time in row-major order over u's shape, each to the
//     element its index names (ir.ScatterOf; indices wrapped and checked as
//     gather's): reduction none stores it (of two updates aimed at one
//     element the later wins), add, mul, max and min combine the element
//     and the update by the add, mul, maximum and minimum rows (integers
//     wrap, narrow floats round after each), in that order.
//   - cast(x) to the node's dtype, as ONNX's Cast (ir.Convert): between
//     floats, one rounding from the exact value; integer to float, one
//     rounding from the exact integer (never through float32 first);
//     float to integer, truncation toward zero, and NaN, ±Inf or a value
//     outside the target's range fails the run with ir.CodeIntegerFault;
//     integer to integer wraps; anything to bool is x != 0 (NaN is true).
//   - Float64, carried as its bits: the rows that name it compute their
//     ir.OpInfo.F64 in IEEE binary64 (add, sub, mul, div, maximum,
//     minimum, neg, sqrt, pow, exp, log, the comparisons; exp, log and pow
//     are Go's math package's), sum and max over axes by the float32
//     reduction tree in float64, cast to and from float64 by one rounding
//     from the exact value. Nothing narrows it to float32 on the way.
//   - Uint64 holds [0, 2^63-1] in int64: its rows compute int64's bits,
//     which are uint64's below 2^63, and a result of 2^63 or more (a
//     carry into the top bit, 0 - 1, ^x, a cast of a negative integer) is
//     refused with ir.CodeUnsupported naming the node and the element.
//     int16 and uint16 wrap as the other integers do.
//
// Intermediates may overflow to ±Inf or become NaN (relu and positive may
// hide them again). Whether inputs, constants and outputs may be is host
// policy (ir.Limits.NonFinite): by default an output that is not finite is
// an error, reported by the runtime, never a value; with it, it is the
// value, every NaN returned as the quiet NaN 0x7fc00000 (a NaN's sign and
// payload are the hardware's, so they are not part of the answer).
package cpuref

import (
	"math"
	"slices"
	"strconv"

	"github.com/gpucc/gpucc/ir"
)

// Eval evaluates every node of a validated float32 graph and returns the
// values, indexed by node id. A graph with another dtype or a typed row is
// EvalTyped's: Eval panics on it rather than narrow a value.
func Eval(g *ir.Graph) [][]float32 { return exact.eval(g) }

// EvalFlushed is Eval on a machine that flushes subnormals: every
// arithmetic operation (add, sub, mul, and those inside matmul and sum)
// reads subnormal operands as zero and writes subnormal results as zero,
// keeping the sign (a product by its exact value: one that rounds up to
// 2^-126 from below is flushed too, as NVIDIA's driver does), and every
// comparison (life's alive test too) reads subnormal operands as zero (NVIDIA's flushing compares; measured as
// relu(subnormal) = +0 on the H200 and on SwiftShader). WGSL and GLSL ES allow this, and the H200 and
// SwiftShader do it; it is the one place where GPU backends may depart from
// Eval, and then only to EvalFlushed's value. It is not the reference.
func EvalFlushed(g *ir.Graph) [][]float32 { return arith{flush: true}.eval(g) }

// arith is float32 arithmetic, optionally flushing subnormals.
type arith struct{ flush bool }

// exact is the reference arithmetic.
var exact = arith{}

// f flushes x when x is subnormal and a is a flushing arith.
func (ar arith) f(x float32) float32 {
	if ar.flush && x != 0 && math.Abs(float64(x)) < 0x1p-126 {
		return float32(math.Copysign(0, float64(x)))
	}
	return x
}

// flushed returns x with every element flushed (x itself for the
// reference arithmetic).
func (ar arith) flushed(x []float32) []float32 {
	if !ar.flush {
		return x
	}
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = ar.f(v)
	}
	return out
}

func (ar arith) eval(g *ir.Graph) [][]float32 {
	for i := range g.Nodes {
		if n := &g.Nodes[i]; n.DType != ir.F32 || n.Op.Info().Typed {
			panic("cpuref: Eval computes float32 graphs; node " + strconv.Itoa(i) + " (" + n.Op.String() + ", " + n.DType.String() + ") is EvalTyped's")
		}
	}
	vals := make([][]float32, len(g.Nodes))
	for i := range g.Nodes {
		vals[i] = ar.node(g, i, vals)
	}
	return vals
}

// node computes node i of g from the already computed values of its
// arguments (vals is indexed by node id).
func (ar arith) node(g *ir.Graph, i int, vals [][]float32) []float32 {
	n := &g.Nodes[i]
	arg := func(k int) []float32 { return vals[n.Args[k]] }
	if x := n.Op.Info().Expr; x != nil {
		a, b := arg(0), arg(0)
		if len(n.Args) == 2 {
			b = arg(1)
		}
		// A whole node at once: the expression is flattened once and
		// evaluated a chunk of elements per step.
		out := make([]float32, len(a))
		if len(n.Args) == 2 {
			compile(x).runSlice(out, a, b, 0, ar, nil)
		} else {
			compile(x).runSlice(out, a, nil, n.Scalar, ar, nil)
		}
		return out
	}
	if n.Op.IsReduction() {
		return ar.reduce(n.Op, arg(0), g.Nodes[n.Args[0]].Shape, n.Shape, 1)
	}
	switch n.Op {
	case ir.OpInput:
		return n.Data
	case ir.OpFull:
		out := make([]float32, n.Shape.Len())
		for k := range out {
			out[k] = n.Scalar
		}
		return out
	case ir.OpTranspose:
		return TransposeLast(arg(0), g.Nodes[n.Args[0]].Shape)
	case ir.OpMatmul:
		return ar.batchMatmul(arg(0), arg(1), g.Nodes[n.Args[0]].Shape, g.Nodes[n.Args[1]].Shape, nil)
	case ir.OpConv2D:
		return ar.conv2d(arg(0), arg(1), ir.Conv2DOf(g.Nodes[n.Args[0]].Shape, g.Nodes[n.Args[1]].Shape, n.Attrs), nil)
	case ir.OpConvTranspose2D:
		return ar.convTranspose2d(arg(0), arg(1), ir.ConvTranspose2DOf(g.Nodes[n.Args[0]].Shape, g.Nodes[n.Args[1]].Shape, n.Attrs), nil)
	case ir.OpResize2D:
		return ar.resize2d(arg(0), ir.Resize2DOf(g.Nodes[n.Args[0]].Shape, n.Attrs), nil)
	case ir.OpPad:
		return Pad(arg(0), ir.PadOf(g.Nodes[n.Args[0]].Shape, n.Attrs))
	case ir.OpAttention:
		shapes := make([]ir.Shape, 4)
		for j, a := range n.Args {
			shapes[j] = g.Nodes[a].Shape
		}
		at := ir.AttentionOf(shapes, n.Attrs)
		return ar.attention(arg(0), arg(1), arg(2), Broadcast(arg(3), shapes[3], at.Scores()), at, nil)
	case ir.OpMaxPool2D:
		return ar.maxpool2d(arg(0), ir.Pool2DOf(g.Nodes[n.Args[0]].Shape, n.Attrs), nil)
	case ir.OpMaxPool2DGrad:
		return ar.maxpool2dGrad(arg(0), arg(1), ir.Pool2DOf(g.Nodes[n.Args[0]].Shape, n.Attrs), nil)
	case ir.OpLife: // its alive test is a comparison, which flushes too
		return Life(ar.flushed(arg(0)), n.Shape[0], n.Shape[1])
	case ir.OpPermute:
		a := arg(0)
		out := make([]float32, len(a))
		for i, j := range ir.PermuteSources(g.Nodes[n.Args[0]].Shape, n.Op.Attr(n.Attrs, "perm")) {
			out[i] = a[j]
		}
		return out
	case ir.OpBroadcast:
		return Broadcast(arg(0), g.Nodes[n.Args[0]].Shape, n.Shape)
	case ir.OpReshape:
		return arg(0)
	}
	panic("cpuref: unknown op " + n.Op.String())
}

// Binary applies an elementwise two-operand op once: its table
// expression (see ir.OpInfo.Expr) on a and b.
func Binary(op ir.Op, a, b float32) float32 { return EvalX(op.Info().Expr, a, b, false) }

// Unary applies an elementwise one-operand op; s is the scalar operand of
// a scalar form.
func Unary(op ir.Op, a, s float32) float32 { return EvalX(op.Info().Expr, a, s, false) }

func (ar arith) add(a, b float32) float32 { return ar.f(float32(ar.f(a) + ar.f(b))) }
func (ar arith) sub(a, b float32) float32 { return ar.f(float32(ar.f(a) - ar.f(b))) }

// mul is a float32 product. A flushing arith flushes a product whose exact
// value is below 2^-126 in magnitude, also where it rounds up to 2^-126:
// NVIDIA's driver detects tininess before rounding (the H100 gave
// 0.5 × 0x00ffffff = +0, not 0x00800000, on 2026-12-05). Sums need no
// such rule: a float32 sum below 2^-125 in magnitude is exact (a multiple
// of 2^-149, fewer than 2^24 of them).
func (ar arith) mul(a, b float32) float32 {
	a, b = ar.f(a), ar.f(b)
	if !ar.flush { // Eval's path: no float64 product
		return a * b
	}
	if p := float64(a) * float64(b); p != 0 && math.Abs(p) < 0x1p-126 {
		return float32(math.Copysign(0, p))
	}
	return ar.f(a * b)
}

// Transpose returns the [cols,rows] transpose of a row-major [rows,cols] matrix.
func Transpose(a []float32, rows, cols int) []float32 {
	out := make([]float32, len(a))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			out[c*rows+r] = a[r*cols+c]
		}
	}
	return out
}

// TransposeLast returns a, row-major of shape s (rank ≥ 2), with its last
// two axes swapped: Transpose of each matrix of the batch.
func TransposeLast(a []float32, s ir.Shape) []float32 {
	r := len(s)
	rows, cols := s[r-2], s[r-1]
	out := make([]float32, 0, len(a))
	for z := 0; z < len(a); z += rows * cols {
		out = append(out, Transpose(a[z:z+rows*cols], rows, cols)...)
	}
	return out
}

// Broadcast returns x, of shape from, broadcast to shape to (numpy's
// broadcast_to; see the package doc).
func Broadcast(x []float32, from, to ir.Shape) []float32 {
	out := make([]float32, to.Len())
	off := len(to) - len(from)
	for i := range out {
		at, rest, inner := 0, i, 1 // at: x's element; inner: x's row-major stride of d
		for d := len(to) - 1; d >= off; d-- {
			c := rest % to[d]
			rest /= to[d]
			if from[d-off] != 1 {
				at += c * inner
			}
			inner *= from[d-off]
		}
		out[i] = x[at]
	}
	return out
}

// Matmul returns a [m,k] × b [k,n] with the reference accumulation order.
func Matmul(a, b []float32, m, k, n int) []float32 { return exact.matmul(a, b, m, k, n) }

// BatchMatmul returns a [..., m,k] × b [..., k,n], row-major of shapes sa
// and sb (rank 2 to 4; the batch dimensions, all but the last two,
// broadcast by numpy's rule): each matrix of the result is Matmul's of
// the two matrices it multiplies, bit for bit.
func BatchMatmul(a, b []float32, sa, sb ir.Shape) []float32 {
	return exact.batchMatmul(a, b, sa, sb, nil)
}

// batchMatmul is BatchMatmul, checking stop as matmulUntil does.
func (ar arith) batchMatmul(a, b []float32, sa, sb ir.Shape, stop func() bool) []float32 {
	ra, rb := len(sa), len(sb)
	m, k, n := sa[ra-2], sa[ra-1], sb[rb-1]
	batch, _ := ir.BroadcastShape(sa[:ra-2], sb[:rb-2])
	if len(batch) == 0 {
		return ar.matmulUntil(a, b, m, k, n, stop)
	}
	wa, wb := append(slices.Clone(batch), m, k), append(slices.Clone(batch), k, n)
	if !sa.Equal(wa) {
		a = Broadcast(a, sa, wa)
	}
	if !sb.Equal(wb) {
		b = Broadcast(b, sb, wb)
	}
	out := make([]float32, 0, batch.Len()*m*n)
	for z := range batch.Len() {
		out = append(out, ar.matmulUntil(a[z*m*k:(z+1)*m*k], b[z*k*n:(z+1)*k*n], m, k, n, stop)...)
	}
	return out
}

func (ar arith) matmul(a, b []float32, m, k, n int) []float32 {
	return ar.matmulUntil(a, b, m, k, n, nil)
}

// matmulUntil is matmul that checks stop (when not nil) before each row
// and returns early, the rest of out zero, once it reports true.
func (ar arith) matmulUntil(a, b []float32, m, k, n int, stop func() bool) []float32 {
	out := make([]float32, m*n)
	for i := 0; i < m; i++ {
		if stop != nil && stop() {
			break
		}
		row := a[i*k : (i+1)*k]
		for j := 0; j < n; j++ {
			var acc float32
			for p, av := range row {
				// Each product and each sum rounds on its own: the explicit
				// float32 conversions in add and mul forbid Go to fuse them.
				acc = ar.add(acc, ar.mul(av, b[p*n+j]))
			}
			out[i*n+j] = acc
		}
	}
	return out
}

// Sum returns the reference pairwise sum of x (see the package doc).
func Sum(x []float32) float32 {
	p := 1
	for p < len(x) {
		p *= 2
	}
	leaves := make([]float32, p)
	copy(leaves, x)
	for k := len(x); k < p; k++ {
		leaves[k] = math.Float32frombits(ir.OpSum.Info().Identity)
	}
	return exact.tree(ir.OpSum, leaves)
}

// Reduce returns the reduction op (sum or max) of x, of shape arg, to the
// kept shape keep (see the package doc): one value per element of keep.
func Reduce(op ir.Op, x []float32, arg, keep ir.Shape) []float32 {
	return exact.reduce(op, x, arg, keep, 1)
}

// reduce computes each output's tree; with blocks > 1, each output's
// padded leaves are cut into that many aligned blocks and the result holds
// each block's subtree, output by output.
func (ar arith) reduce(op ir.Op, x []float32, arg, keep ir.Shape, blocks int) []float32 {
	return ar.reduceUntil(op, x, arg, keep, blocks, nil)
}

// reduceUntil is reduce that checks stop (when not nil) before each output
// and returns early, short, once it reports true.
func (ar arith) reduceUntil(op ir.Op, x []float32, arg, keep ir.Shape, blocks int, stop func() bool) []float32 {
	red := ir.ReductionOf(arg, keep)
	p := 1
	for p < red.Leaves {
		p *= 2
	}
	out := make([]float32, 0, red.Outputs*blocks)
	leaves := make([]float32, p)
	pad := math.Float32frombits(op.Info().Identity)
	for o := range red.Outputs {
		if stop != nil && stop() {
			break
		}
		base := ir.Offset(red.Kept, o)
		for r := range red.Leaves {
			leaves[r] = x[base+ir.Offset(red.Reduced, r)]
		}
		for r := red.Leaves; r < p; r++ {
			leaves[r] = pad
		}
		for b := range blocks {
			out = append(out, ar.tree(op, leaves[b*p/blocks:(b+1)*p/blocks]))
		}
	}
	return out
}

// tree reduces a power-of-two count of leaves by the contiguous pairwise
// tree of op's combining op (ir.OpInfo.Combine), level by level. A
// combine that is one float add (sum's) takes a shortcut, in place and
// about 5× faster on a million leaves; TestTreeShortcut checks that it
// gives treeX's bits.
func (ar arith) tree(op ir.Op, leaves []float32) float32 {
	if !isAdd(op.Info().Combine.Info().Expr) {
		return ar.treeX(op, leaves)
	}
	buf := append([]float32(nil), leaves...)
	for width := 1; width < len(buf); width *= 2 {
		for i := 0; i < len(buf); i += 2 * width {
			buf[i] = ar.add(buf[i], buf[i+width])
		}
	}
	return buf[0]
}

// isAdd reports whether x is Arg(0) + Arg(1).
func isAdd(x *ir.X) bool {
	return x.Op == ir.XAdd && x.Args[0].Op == ir.XArg && x.Args[0].Arg == 0 && x.Args[1].Op == ir.XArg && x.Args[1].Arg == 1
}

// treeX is tree by the combining op's expression, for any reduction.
func (ar arith) treeX(op ir.Op, leaves []float32) float32 {
	comb := compile(op.Info().Combine.Info().Expr)
	cur := append([]float32(nil), leaves...)
	h := len(cur) / 2
	a, b := make([]float32, h), make([]float32, h)
	scratch := make([]uint32, len(comb)*min(chunk, max(h, 1)))
	for len(cur) > 1 {
		h := len(cur) / 2
		for i := range h {
			a[i], b[i] = cur[2*i], cur[2*i+1]
		}
		cur = cur[:h]
		for lo := 0; lo < h; lo += chunk {
			hi := min(lo+chunk, h)
			comb.runSlice(cur[lo:hi], a[lo:hi], b[lo:hi], 0, ar, scratch)
		}
	}
	return cur[0]
}

// Life returns one toroidal Game of Life step of an [h,w] grid.
func Life(x []float32, h, w int) []float32 {
	out := make([]float32, h*w)
	for r := 0; r < h; r++ {
		for c := 0; c < w; c++ {
			live := 0
			for dr := -1; dr <= 1; dr++ {
				for dc := -1; dc <= 1; dc++ {
					if dr == 0 && dc == 0 {
						continue
					}
					rr, cc := (r+dr+h)%h, (c+dc+w)%w
					if x[rr*w+cc] > 0 {
						live++
					}
				}
			}
			if live == 3 || live == 2 && x[r*w+c] > 0 {
				out[r*w+c] = 1
			}
		}
	}
	return out
}

// ReduceFull returns the reduction op (its row's tree: see Reduce) of n
// copies of v without materialising them, in O(log n) combines: the
// constant folder uses it, and it is tested against Reduce.
func ReduceFull(op ir.Op, v float32, n int) float32 {
	combine := op.Info().Combine
	levels := 0
	for 1<<levels < n {
		levels++
	}
	// full[j] is the sum of a complete subtree of 2^j copies of v.
	full := make([]float32, levels+1)
	full[0] = v
	for j := 1; j <= levels; j++ {
		full[j] = Binary(combine, full[j-1], full[j-1])
	}
	var sub func(level, count int) float32
	sub = func(level, count int) float32 {
		switch {
		case count == 0:
			return math.Float32frombits(op.Info().Identity)
		case count == 1<<level:
			return full[level]
		}
		half := 1 << (level - 1)
		return Binary(combine, sub(level-1, min(count, half)), sub(level-1, max(count-half, 0)))
	}
	return sub(levels, n)
}

// Conv2D returns conv2d of x and w (row-major, geometry c) with the
// reference order (see the package doc).
func Conv2D(x, w []float32, c ir.Conv2D) []float32 { return exact.conv2d(x, w, c, nil) }

// conv2d is Conv2D that checks stop (when not nil) before each output
// row and returns early, the rest zero, once it reports true.
func (ar arith) conv2d(x, w []float32, c ir.Conv2D, stop func() bool) []float32 {
	out := make([]float32, c.N*c.M*c.OH*c.OW)
	at := 0
	for n := range c.N {
		for m := range c.M {
			c0 := m / c.MG * c.CG // the group's first input channel
			for oh := range c.OH {
				if stop != nil && stop() {
					return out
				}
				for ow := range c.OW {
					var acc float32
					for ci := range c.CG {
						xc := x[(n*c.C+c0+ci)*c.H*c.W:]
						wc := w[(m*c.CG+ci)*c.KH*c.KW:]
						for kh := range c.KH {
							ih := oh*c.SH - c.PT + kh*c.DH
							for kw := range c.KW {
								iw := ow*c.SW - c.PL + kw*c.DW
								var xv float32 // +0: the padding
								if ih >= 0 && ih < c.H && iw >= 0 && iw < c.W {
									xv = xc[ih*c.W+iw]
								}
								acc = ar.add(acc, ar.mul(xv, wc[kh*c.KW+kw]))
							}
						}
					}
					out[at] = acc
					at++
				}
			}
		}
	}
	return out
}

// ConvTranspose2D returns conv_transpose2d of x and w (row-major,
// geometry c) with the reference order (see the package doc).
func ConvTranspose2D(x, w []float32, c ir.ConvTranspose2D) []float32 {
	return exact.convTranspose2d(x, w, c, nil)
}

// convTranspose2d is ConvTranspose2D that checks stop (when not nil)
// before each output row and returns early, the rest zero, once it
// reports true.
func (ar arith) convTranspose2d(x, w []float32, c ir.ConvTranspose2D, stop func() bool) []float32 {
	out := make([]float32, c.N*c.M*c.OH*c.OW)
	at := 0
	for n := range c.N {
		for m := range c.M {
			c0, mm := m/c.MG*c.CG, m%c.MG // the group's first input channel; m within it
			for oh := range c.OH {
				if stop != nil && stop() {
					return out
				}
				for ow := range c.OW {
					var acc float32
					for ci := range c.CG {
						xc := x[(n*c.C+c0+ci)*c.H*c.W:]
						wc := w[((c0+ci)*c.MG+mm)*c.KH*c.KW:]
						for kh := range c.KH {
							th := oh + c.PT - kh*c.DH
							if th < 0 || th%c.SH != 0 || th/c.SH >= c.H {
								continue
							}
							for kw := range c.KW {
								tw := ow + c.PL - kw*c.DW
								if tw < 0 || tw%c.SW != 0 || tw/c.SW >= c.W {
									continue
								}
								acc = ar.add(acc, ar.mul(xc[th/c.SH*c.W+tw/c.SW], wc[kh*c.KW+kw]))
							}
						}
					}
					out[at] = acc
					at++
				}
			}
		}
	}
	return out
}

// Resize2D returns resize2d of x (row-major, geometry r) in the reference
// order (see the package doc).
func Resize2D(x []float32, r ir.Resize2D) []float32 { return exact.resize2d(x, r, nil) }

// resize2d is Resize2D that checks stop (when not nil) before each output
// row and returns early, the rest zero, once it reports true.
func (ar arith) resize2d(x []float32, r ir.Resize2D, stop func() bool) []float32 {
	out := make([]float32, r.N*r.C*r.OH*r.OW)
	at := 0
	for nc := range r.N * r.C {
		xc := x[nc*r.H*r.W:]
		for oh := range r.OH {
			if stop != nil && stop() {
				return out
			}
			for ow := range r.OW {
				row := func(h int) float32 {
					if !r.Cols.Linear() {
						return xc[h*r.W+r.Cols.I0[ow]]
					}
					return ar.add(ar.mul(r.Cols.W0[ow], xc[h*r.W+r.Cols.I0[ow]]), ar.mul(r.Cols.W1[ow], xc[h*r.W+r.Cols.I1[ow]]))
				}
				if !r.Rows.Linear() {
					out[at] = row(r.Rows.I0[oh])
				} else {
					out[at] = ar.add(ar.mul(r.Rows.W0[oh], row(r.Rows.I0[oh])), ar.mul(r.Rows.W1[oh], row(r.Rows.I1[oh])))
				}
				at++
			}
		}
	}
	return out
}

// MaxPool2D returns maxpool2d of x (row-major, geometry c) in the
// reference order (see the package doc).
func MaxPool2D(x []float32, c ir.Pool2D) []float32 { return exact.maxpool2d(x, c, nil) }

// maxpool2d is MaxPool2D that checks stop (when not nil) before each
// output row and returns early, the rest zero, once it reports true.
func (ar arith) maxpool2d(x []float32, c ir.Pool2D, stop func() bool) []float32 {
	maximum := compile(ir.OpMaximum.Info().Expr)
	out := make([]float32, c.N*c.C*c.OH*c.OW)
	at := 0
	for nc := range c.N * c.C {
		xc := x[nc*c.H*c.W:]
		for oh := range c.OH {
			if stop != nil && stop() {
				return out
			}
			for ow := range c.OW {
				acc := float32(math.Inf(-1))
				for kh := range c.KH {
					ih := oh*c.SH - c.PT + kh*c.DH
					for kw := range c.KW {
						iw := ow*c.SW - c.PL + kw*c.DW
						if ih >= 0 && ih < c.H && iw >= 0 && iw < c.W {
							acc = maximum.run(acc, xc[ih*c.W+iw], ar)
						}
					}
				}
				out[at] = acc
				at++
			}
		}
	}
	return out
}
