"""float32 arithmetic in pure Python, as gpucc's cpuref defines it.

Every value is a Python float that holds a float32 exactly. add, sub and
mul compute in float64 and round once to float32 (struct packing, ties to
even): for two float32 operands that is the correctly rounded float32
result, because float64 has more than twice float32's precision (a
product is exact in float64; a sum rounds twice harmlessly). Subnormals
are kept. Nothing is fused.

The other elementwise ops (div, sqrt, exp, log, tanh, erf, sigmoid,
maximum, minimum, floor, ceil, round) are ports of their expressions in
gpucc's op table (ir/xmath.go, ir/xround.go): float32 add, sub and mul,
comparisons, selects, bitcasts and u32 integer steps only, in the same
order, so they give cpuref's bits for every input. u32 values are Python
ints kept in [0, 2^32) by masking; a select computes only the branch it
takes, which gives the same value because every step is total.
"""

import math
import struct

_F = struct.Struct("<f")
_U = struct.Struct("<I")
M32 = 0xFFFFFFFF
INF = math.inf
NEG_ZERO = -0.0


def f32(x):
    """x rounded to the nearest float32 (ties to even), ±Inf past the range."""
    try:
        return _F.unpack(_F.pack(x))[0]
    except OverflowError:  # struct refuses what rounds to ±Inf
        return math.copysign(INF, x)


def bits(x):
    """The IEEE bits of float32 x."""
    try:
        return _U.unpack(_F.pack(x))[0]
    except OverflowError:
        return 0xFF800000 if x < 0 else 0x7F800000


def from_bits(b):
    """The float32 whose bits are b."""
    return _F.unpack(_U.pack(b & M32))[0]


def add(a, b):
    return f32(a + b)


def sub(a, b):
    return f32(a - b)


def mul(a, b):
    return f32(a * b)


# u32 helpers: wrapping arithmetic and shifts by a count modulo 32 (X's rules).
def uadd(a, b):
    return (a + b) & M32


def usub(a, b):
    return (a - b) & M32


def shl(a, n):
    return (a << (n & 31)) & M32


def shr(a, n):
    return a >> (n & 31)


SIGN_BIT = 0x80000000
ABS_MASK = 0x7FFFFFFF
EXP_INF = 0x7F800000
QNAN = 0x7FC00000


class _Class:
    """classify: the bit facts of a float operand."""

    __slots__ = ("bits", "abs", "sign", "nan", "inf", "zero")

    def __init__(self, x):
        b = bits(x)
        self.bits = b
        self.abs = b & ABS_MASK
        self.sign = b & SIGN_BIT
        self.nan = self.abs > EXP_INF
        self.inf = self.abs == EXP_INF
        self.zero = self.abs == 0


def _normalize24(m):
    s = 0
    for below, by in ((1 << 8, 16), (1 << 16, 8), (1 << 20, 4), (1 << 22, 2), (1 << 23, 1)):
        if m < below:
            m = shl(m, by)
            s = uadd(s, by)
    return m, s


def _unpack(c):
    ef = shr(c.bits, 23) & 0xFF
    frac = c.bits & 0x7FFFFF
    sub_ = ef == 0
    m, s = _normalize24(frac if sub_ else frac | 0x800000)
    return m, usub(65 if sub_ else uadd(ef, 64), s)


def _round_pack(sign, be_off, q, sticky):
    normal = be_off >= 513
    sh = min(usub(513, be_off), 26)
    drop = 2 if normal else uadd(2, sh)
    keep = shr(q, drop)
    lost = q & usub(shl(1, drop), 1)
    half = shl(1, usub(drop, 1))
    tie = lost == half
    up = half < lost or (tie and (sticky or (keep & 1) == 1))
    exp = shl(usub(be_off, 513), 23) if normal else 0
    b = uadd(uadd(exp, keep), 1 if up else 0)
    over = be_off >= 512 + 255
    return from_bits(sign | (EXP_INF if over else b))


def div(a, b):
    """a / b, correctly rounded: long division of the significands (divBody)."""
    ca, cb = _Class(a), _Class(b)
    sign = ca.sign ^ cb.sign
    nan = ca.nan or cb.nan or (ca.inf and cb.inf) or (ca.zero and cb.zero)
    if nan:
        return from_bits(QNAN)
    if ca.inf or cb.zero:
        return from_bits(sign | EXP_INF)
    if ca.zero or cb.inf:
        return from_bits(sign)
    ma, ea = _unpack(ca)
    mb, eb = _unpack(cb)
    lt = ma < mb
    r = shl(ma, 1) if lt else ma
    q = 0
    for _ in range(26):
        ge = r >= mb
        q = shl(q, 1) | (1 if ge else 0)
        r = shl(usub(r, mb) if ge else r, 1)
    be_off = usub(usub(uadd(ea, 512 + 127), eb), 1 if lt else 0)
    return _round_pack(sign, be_off, q, r != 0)


def sqrt(x):
    """√x, correctly rounded: the digit-by-digit integer square root (sqrtBody)."""
    c = _Class(x)
    neg = c.sign != 0 and not (c.zero or c.nan)
    if c.nan or c.zero or c.inf or c.sign != 0:
        return from_bits(QNAN) if neg else x
    m, e = _unpack(c)
    odd = (e & 1) == 0
    if odd:
        m = shl(m, 1)
    r = q = 0
    for i in range(26):
        if 23 - 2 * i >= 0:
            pair = shr(m, 23 - 2 * i) & 3
        elif i == 12:
            pair = shl(m & 1, 1)
        else:
            pair = 0
        r = shl(r, 2) | pair
        t = shl(q, 2) | 1
        ge = r >= t
        if ge:
            r = usub(r, t)
        q = shl(q, 1) | (1 if ge else 0)
    w = usub(uadd(e, 512 - 191), 1 if odd else 0)
    return _round_pack(0, uadd(shr(w, 1), 383), q, r != 0)


def _exp2k(k_off):
    h = shr(k_off, 1)
    return from_bits(shl(usub(h, 1), 23)), from_bits(shl(usub(usub(k_off, h), 1), 23))


def _k_float(k_off):
    return sub(from_bits(uadd(0x4B000000, k_off)), 8388608.0 + 256)


def _round_int(y):
    c = _Class(y)
    ey = shr(c.bits, 23) & 0xFF
    my = (c.bits & 0x7FFFFF) | 0x800000
    sh = 31 if ey < 119 else usub(150, ey)
    mag = shr(uadd(my, shl(1, usub(sh, 1))), sh)
    return uadd(256, mag) if c.sign == 0 else usub(256, mag)


def _poly(x, *c):
    p = c[0]
    for k in c[1:]:
        p = add(mul(p, x), k)
    return p


def _c(v):
    """A float32 constant of the table (F(v)): v rounded once."""
    return f32(v)


LOG2E = from_bits(0x3FB8AA3B)  # float32(math.Log2E)
_EXP_P = tuple(map(_c, (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                        1.6666665459e-1, 5.0000001201e-1)))
_LN2_HI = _c(0.693359375)
_LN2_LO = _c(-2.12194440e-4)


def exp(x):
    """eˣ (expBody): Cody and Waite's reduction, Cephes' expf polynomial, 2^k in two factors."""
    c = _Class(x)
    pos = c.sign == 0
    over = pos and 0x42B20000 < c.abs
    under = (not pos) and 0x42D00000 < c.abs
    if c.nan:
        return x
    if under:
        return 0.0
    if over:
        return INF
    xc = x
    k_off = _round_int(mul(xc, LOG2E))
    k = _k_float(k_off)
    r = sub(sub(xc, mul(k, _LN2_HI)), mul(k, _LN2_LO))
    z = mul(r, r)
    p = _poly(r, *_EXP_P)
    y = add(add(mul(p, z), r), 1.0)
    a, b = _exp2k(k_off)
    return mul(mul(y, a), b)


_LOG_P = tuple(map(_c, (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                        1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                        3.3333331174e-1)))


def log(x):
    """ln x (logBody): Cephes' logf polynomial in m-1, k·ln2 in two parts."""
    c = _Class(x)
    neg = c.sign != 0 and not c.zero
    if c.nan:
        return x
    if neg:
        return from_bits(QNAN)
    if c.inf:
        return x
    if c.zero:
        return from_bits(SIGN_BIT | EXP_INF)
    m, e = _unpack(c)
    frac = m & 0x7FFFFF
    big = 0x3504F3 < frac
    mf = from_bits((0x3F000000 if big else 0x3F800000) | frac)
    k = _k_float(uadd(uadd(e, 256 - 191), 1 if big else 0))
    f = sub(mf, 1.0)
    z = mul(f, f)
    p = _poly(f, *_LOG_P)
    y = mul(mul(p, f), z)
    y = add(y, mul(k, _LN2_LO))
    y = add(y, mul(z, -0.5))
    return add(add(f, y), mul(k, _LN2_HI))


_TANH_P = tuple(map(_c, (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
                         -3.33332819422e-1)))


def tanh(x):
    """tanh x (tanhBody): Cephes' polynomial below 0.625, else 1 - 2/(e^2|x| + 1)."""
    c = _Class(x)
    if c.nan:
        return x
    ax = from_bits(c.abs)
    if c.abs < 0x3F200000:
        s = mul(ax, ax)
        v = add(mul(mul(_poly(s, *_TANH_P), s), ax), ax)
    elif c.abs < 0x4111999A:
        e = exp(mul(ax, 2.0))
        v = sub(1.0, div(2.0, add(e, 1.0)))
    else:
        v = 1.0
    return from_bits(c.sign | bits(v))


_ERF_SMALL = tuple(map(_c, (8.776226e-05, -0.0008232923, 0.0052085086, -0.026862236, 0.11283744,
                            -0.37612638, 0.12837917)))
_ERF_T = (
    (_c(1.3125), tuple(map(_c, (-0.0011358858, 0.0048250635, -0.00095174205, -0.022245081, 0.038973957,
                                0.01962781, -0.16425866, 0.2644931, -0.20151852, 0.06343143)))),
    (_c(2.125), tuple(map(_c, (0.00025558984, -0.0013414087, 0.0018737793, 0.0018165164, -0.012495743,
                               0.02636106, -0.033037398, 0.02622424, -0.01234082, 0.0026540293)))),
    (_c(3.25), tuple(map(_c, (-2.0943853e-05, 8.2563834e-05, -0.00017276678, 0.00026343457,
                              -0.00031314217, 0.0002865561, -0.00019587156, 9.486641e-05,
                              -2.9187418e-05, 4.3027494e-06)))),
)


def erf(x):
    """erf x (erfBody): odd, x + x·P(x²) below 0.875, 1 - Q(|x| - c) to 3.9192059, then 1."""
    c = _Class(x)
    if c.nan:
        return x
    ax = from_bits(c.abs)
    if c.abs < 0x3F600000:
        v = add(ax, mul(ax, _poly(mul(ax, ax), *_ERF_SMALL)))
    elif c.abs < 0x407AD445:
        mid, q = _ERF_T[0] if c.abs < 0x3FE00000 else _ERF_T[1] if c.abs < 0x40200000 else _ERF_T[2]
        v = sub(1.0, _poly(sub(ax, mid), *q))
    else:
        v = 1.0
    return from_bits(c.sign | bits(v))


def neg(x):
    """x with its sign bit flipped."""
    return from_bits(bits(x) ^ SIGN_BIT)


def _order_key(c):
    return c.bits | SIGN_BIT if c.sign == 0 else c.bits ^ M32


def _pick(a, b, larger):
    ca, cb = _Class(a), _Class(b)
    if ca.nan:
        return a
    if cb.nan:
        return b
    ka, kb = _order_key(ca), _order_key(cb)
    lt = ka < kb if larger else kb < ka
    return b if lt else a


def maximum(a, b):
    """The larger operand, -0 < +0; NaN if either is (a's when both are)."""
    return _pick(a, b, True)


def minimum(a, b):
    return _pick(a, b, False)


def floor(x):
    """The largest integer not above x, exactly (floorX)."""
    b = bits(x)
    ab = b & ABS_MASK
    neg_ = (b >> 31) == 1
    small = ab < 0x3F800000
    big = 0x4AFFFFFF < ab
    if big:
        return x
    if small:
        if neg_:
            return x if ab == 0 else -1.0
        return 0.0
    shift = usub(shr(ab, 23), 127)
    mask = shr(0x7FFFFF, shift)
    trunc = from_bits(b & (mask ^ M32))
    if neg_:
        return trunc if (b & mask) == 0 else sub(trunc, 1.0)
    return trunc


def ceil(x):
    return neg(floor(neg(x)))


def round_even(x):
    """x rounded to the nearest integer, ties to even, exactly (roundX)."""
    b = bits(x)
    sign = b & SIGN_BIT
    ab = b & ABS_MASK
    if 0x4AFFFFFF < ab:
        return x
    if ab < 0x3F000001:
        return from_bits(sign)
    below_one = ab < 0x3F800000
    shift = 0 if below_one else usub(shr(ab, 23), 127)
    t = from_bits(ab & (shr(0x7FFFFF, shift) ^ M32))
    f = sub(from_bits(ab), t)
    even = (ab & shr(0x800000, shift)) == 0
    if f > 0.5:
        up = 1.0
    elif f == 0.5:
        up = 0.0 if even else 1.0
    else:
        up = 0.0
    mag = 1.0 if below_one else add(t, up)
    return from_bits(sign | bits(mag))


def rsqrt(x):
    return div(1.0, sqrt(x))


def sigmoid(x):
    """div(1, exp(neg(x)) + 1): ONNX's reference order."""
    return div(1.0, add(exp(neg(x)), 1.0))


def relu(x):
    return x if x > 0 else 0.0


def positive(x):
    return 1.0 if x > 0 else 0.0


def greater(a, b):
    return 1.0 if a > b else 0.0


def greater_equal(a, b):
    return 1.0 if a >= b else 0.0


def equal(a, b):
    return 1.0 if a == b else 0.0


def mask(c, b):
    return b if c > 0 else NEG_ZERO


# The elementwise ops by wire name: binary ones take (a, b), unary ones (a,).
BINARY = {"add": add, "sub": sub, "mul": mul, "div": div, "maximum": maximum, "minimum": minimum,
          "greater": greater, "greater_equal": greater_equal, "equal": equal, "mask": mask}
UNARY = {"relu": relu, "positive": positive, "neg": neg, "exp": exp, "log": log, "tanh": tanh,
         "sqrt": sqrt, "rsqrt": rsqrt, "sigmoid": sigmoid, "erf": erf, "floor": floor, "ceil": ceil,
         "round": round_even}
# The binary ops with an {a, scalar} form (the table's ScalarForm).
SCALAR_FORMS = ("add", "sub", "mul", "div", "maximum", "minimum")
# The binary ops that broadcast a and b by numpy's rule (every binary elementwise op).
BROADCASTING = tuple(BINARY)


def parse(text):
    """The float32 nearest the decimal number text, rounded once, as Go's
    ParseFloat(text, 32) does; None when it overflows float32."""
    d = float(text)
    if math.isinf(d) or math.isnan(d):
        return None
    r = f32(d)
    if math.isinf(r):
        return None
    # Rounding to float64 first can err only when it lands exactly on a
    # midpoint between two float32s: decide that case exactly.
    if d != r and _is_midpoint(d):
        from fractions import Fraction
        exact = Fraction(text)
        lo, hi = sorted((r, _next_toward(r, d)))
        mid = (Fraction(lo) + Fraction(hi)) / 2
        if exact < mid:
            r = lo
        elif exact > mid:
            r = hi
        if math.isinf(r):
            return None
    return r


def _next_toward(r, d):
    b = bits(r)
    away = (d > r) == (r >= 0) if r != 0 else True
    if r == 0:
        return from_bits((b & SIGN_BIT) | 1) if d != 0 else r
    return from_bits(b + 1 if away else b - 1)


def _is_midpoint(d):
    lo = f32(d)
    other = _next_toward(lo, d)
    return not math.isinf(other) and (lo + other) / 2 == d


def round_data(values):
    """values rounded to float32 each; ValueError names the first that is
    not finite or overflows float32."""
    out = []
    for k, v in enumerate(values):
        v = float(v)
        r = f32(v)
        if math.isinf(r) or math.isnan(r):
            raise ValueError("value %d (%r) is not a finite float32" % (k, v))
        out.append(r)
    return out


def shortest(v):
    """The shortest decimal that reads back as float32 v ("60", "0.1", "-0")."""
    if math.isnan(v) or math.isinf(v):
        return repr(v)
    if v == int(v) and abs(v) < 1e16:
        return ("-0" if math.copysign(1, v) < 0 else "0") if v == 0 else "%d" % int(v)
    for p in range(1, 10):
        s = "%.*g" % (p, v)
        if f32(float(s)) == v:
            return s
    return repr(v)


class Data(list):
    """A list of float32 values that prints them as gpucc's JSON does:
    [0, 60, 120], not [0.0, 60.0, 120.0]. It is a list in every other way."""

    def __repr__(self):
        return "[" + ", ".join(shortest(v) for v in self) + "]"

    __str__ = __repr__
