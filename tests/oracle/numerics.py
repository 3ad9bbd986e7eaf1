"""numerics.py — the format's arithmetic, written from docs/format.md alone.

Nothing here comes from tilec: no table, no constant, no conversion routine. The element
formats, the rounding, the format's max/min (with -0 below +0 and its NaN policies), the
integer wraparound and the set of results a float sum may have are all derived from the
format's text and IEEE 754, with numpy used only for storage and for operations whose
semantics match the format exactly (stated at each use).

Values travel as float64 numpy arrays for the float dtypes (every f16, bf16, f32 value is
exactly a double) and as Python ints for the integer dtypes.
"""
import math
from fractions import Fraction

import numpy as np


class Fmt:
    """A binary floating-point format: p significand bits (the implicit one included),
    normal exponents emin..emax."""

    def __init__(self, name, p, emin, emax):
        self.name, self.p, self.emin, self.emax = name, p, emin, emax
        self.max = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax  # largest finite
        # exact values at or above this round to infinity (halfway past the largest finite)
        self.overflow = (2 - Fraction(2) ** -p) * Fraction(2) ** emax
        self.min_normal = Fraction(2) ** emin
        self.min_sub = Fraction(2) ** (emin - p + 1)  # the smallest subnormal
        self.u = Fraction(1, 2 ** p)  # unit roundoff of round-to-nearest


F16 = Fmt("f16", 11, -14, 15)
BF16 = Fmt("bf16", 8, -126, 127)
F32 = Fmt("f32", 24, -126, 127)
F64 = Fmt("f64", 53, -1022, 1023)


class DType:
    def __init__(self, name, size, kind, fmt=None, acc=None, bits=None, signed=None, storage=None):
        self.name, self.size, self.kind = name, size, kind  # kind: 'float' or 'int'
        self.fmt, self.acc = fmt, acc  # float: its format and its accumulation format
        self.bits, self.signed = bits, signed  # int
        self.storage = np.dtype(storage)  # how its bits are held in a raw file

    @property
    def is_float(self):
        return self.kind == "float"

    @property
    def lo(self):
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def hi(self):
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    def __repr__(self):
        return self.name


# "Accumulation: f16 and bf16 accumulate in f32 and round once when stored; f32 in f32;
# f64 in f64; integers in their own type (sums wrap modulo 2^bits)." (format.md)
DTYPES = {
    "f16": DType("f16", 2, "float", F16, F32, storage="<u2"),
    "bf16": DType("bf16", 2, "float", BF16, F32, storage="<u2"),
    "f32": DType("f32", 4, "float", F32, F32, storage="<u4"),
    "f64": DType("f64", 8, "float", F64, F64, storage="<u8"),
    "i32": DType("i32", 4, "int", bits=32, signed=True, storage="<i4"),
    "u32": DType("u32", 4, "int", bits=32, signed=False, storage="<u4"),
    "i64": DType("i64", 8, "int", bits=64, signed=True, storage="<i8"),
}
FLOATS = ["f16", "bf16", "f32", "f64"]
INTS = ["i32", "u32", "i64"]

# ---- rounding, once, from an exact value --------------------------------------------------


def round_exact(q, fmt, negative_zero=False):
    """The value of format fmt nearest to the exact rational q, ties to even (IEEE 754
    round-to-nearest), as a float (every format here fits in a double); +-inf past the
    largest finite. negative_zero gives -0.0 for q == 0 (the sign of a written -0)."""
    q = Fraction(q)
    if q == 0:
        return -0.0 if negative_zero else 0.0
    sign = -1 if q < 0 else 1
    a = abs(q)
    # e = floor(log2(a)), from the bit lengths, corrected by one step either way
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    elif Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, fmt.emin)  # below the normal range the quantum stays that of 2^emin
    quantum = Fraction(2) ** (e - fmt.p + 1)
    m = a / quantum
    n = m.numerator // m.denominator  # floor
    rest = m - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    r = n * quantum
    if r > fmt.max:  # only a value at or past fmt.overflow gets here
        return sign * math.inf
    return sign * float(r)  # exact: r is a value of fmt, so of double


def f32_bits_to_bf16_bits(bits32):
    """bf16 bit patterns from f32 bit patterns (uint32 array): round to nearest, ties to
    even, on the 16 bits dropped; a NaN stays a NaN (quiet bit set, sign and top payload
    kept) — it must not round into an infinity."""
    b = np.asarray(bits32, dtype=np.uint32).astype(np.uint64)
    is_nan = ((b & 0x7F800000) == 0x7F800000) & ((b & 0x007FFFFF) != 0)
    lsb = (b >> 16) & 1
    rounded = ((b + 0x7FFF + lsb) >> 16) & 0xFFFF
    quiet = ((b >> 16) | 0x0040) & 0xFFFF
    return np.where(is_nan, quiet, rounded).astype(np.uint16)


def bf16_bits_to_f64(bits16):
    b = np.asarray(bits16, dtype=np.uint16).astype(np.uint32) << 16
    with np.errstate(invalid="ignore"):
        return b.view(np.float32).astype(np.float64)


def quantize(dt, values):
    """Float64 candidates -> (exact values of dtype dt as float64, raw bit patterns).
    Used to make test data only: how a candidate is rounded does not matter, what the
    kernel gets is the returned values, exactly."""
    v = np.asarray(values, dtype=np.float64)
    if dt.name == "f16":
        with np.errstate(over="ignore", invalid="ignore"):
            h = v.astype(np.float16)
        return h.astype(np.float64), h.view(np.uint16)
    if dt.name == "bf16":
        with np.errstate(over="ignore", invalid="ignore"):
            bits = f32_bits_to_bf16_bits(v.astype(np.float32).view(np.uint32))
        return bf16_bits_to_f64(bits), bits
    if dt.name == "f32":
        with np.errstate(over="ignore", invalid="ignore"):
            f = v.astype(np.float32)
        return f.astype(np.float64), f.view(np.uint32)
    if dt.name == "f64":
        return v.copy(), v.view(np.uint64)
    raise ValueError(dt)


def float_to_bits(dt, values):
    """Bit patterns of values that are exactly of dtype dt (a check, not a rounding)."""
    vals, bits = quantize(dt, values)
    v = np.asarray(values, dtype=np.float64)
    same = (vals == v) | (np.isnan(vals) & np.isnan(v))
    assert same.all() and (np.signbit(vals) == np.signbit(v)).all(), "not a value of " + dt.name
    return bits


def decode(dt, raw, shape):
    """A raw little-endian file's bytes -> float64 values (floats) or an object array of
    Python ints (integers), in shape."""
    a = np.frombuffer(raw, dtype=dt.storage)
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    if a.size != n:
        raise ValueError("%s: %d elements in the file, %d expected" % (dt.name, a.size, n))
    if dt.name == "f16":
        with np.errstate(invalid="ignore"):
            v = a.view(np.float16).astype(np.float64)
    elif dt.name == "bf16":
        v = bf16_bits_to_f64(a)
    elif dt.name == "f32":
        with np.errstate(invalid="ignore"):
            v = a.view(np.float32).astype(np.float64)
    elif dt.name == "f64":
        v = a.view(np.float64).copy()
    else:
        v = np.array([int(x) for x in a], dtype=object)
    return v.reshape(shape)


def encode(dt, values):
    """Values (float64 exact in dt, or ints in range) -> raw little-endian bytes."""
    if dt.is_float:
        return np.ascontiguousarray(float_to_bits(dt, values)).astype(dt.storage).tobytes()
    ints = [int(x) for x in np.asarray(values, dtype=object).ravel()]
    assert all(dt.lo <= x <= dt.hi for x in ints), "integer out of range for " + dt.name
    return np.array(ints, dtype=dt.storage).tobytes()


# ---- reductions ------------------------------------------------------------------------------


def _slices(a, axes, init):
    """Moves the reduced axes of a to the end and flattens them: (kept..., n); with init
    (shape kept), the old destination value becomes one more element of every slice —
    accum=true folds it in exactly once, dst = op(dst_old, reduce(src)), which for sum,
    max and min (either NaN policy) is the reduction of the slice with dst_old added."""
    a = np.asarray(a)
    axes = sorted(set(x % a.ndim for x in axes))
    kept = [d for d in range(a.ndim) if d not in axes]
    t = np.transpose(a, kept + axes)
    kept_shape = tuple(a.shape[d] for d in kept)
    t = t.reshape(kept_shape + (-1,))
    if init is not None:
        init = np.asarray(init, dtype=t.dtype).reshape(kept_shape + (1,))
        t = np.concatenate([t, init], axis=-1)
    return t, kept_shape


def maxmin_float(a, axes, op, nan, init=None):
    """The format's max / min over axes of float64 values a.

    - nan=propagate: a NaN anywhere in a slice makes its result NaN (numpy's max does the
      same); nan=ignore: NaNs are skipped and an all-NaN slice gives NaN (numpy's nanmax
      too, with a warning).
    - "+0 above -0": max(-0, +0) = +0 and min(-0, +0) = -0 in any order. numpy's maximum
      does not promise which zero it returns, so the sign is decided here from the slice.
    - identities -inf / +inf: a slice of -inf gives -inf under max."""
    t, kept = _slices(a, axes, init)
    isn = np.isnan(t)
    fill = -np.inf if op == "max" else np.inf
    m = (np.max if op == "max" else np.min)(np.where(isn, fill, t), axis=-1).astype(np.float64)
    zero = m == 0
    if op == "max":  # the largest is a zero: +0 when the slice holds one
        has = ((t == 0) & ~np.signbit(t)).any(axis=-1)
        m = np.where(zero, np.where(has, 0.0, -0.0), m)
    else:
        has = ((t == 0) & np.signbit(t)).any(axis=-1)
        m = np.where(zero, np.where(has, -0.0, 0.0), m)
    nan_mask = isn.all(axis=-1) if nan == "ignore" else isn.any(axis=-1)
    return np.where(nan_mask, np.nan, m).reshape(kept)


def maxmin_int(a, axes, op, init=None):
    t, kept = _slices(np.asarray(a, dtype=object), axes, init)
    f = max if op == "max" else min
    flat = t.reshape(-1, t.shape[-1])
    return np.array([f(int(x) for x in row) for row in flat], dtype=object).reshape(kept)


def wrap(x, dt):
    """A Python int modulo 2^bits, as the type's value (two's complement for signed)."""
    x %= 1 << dt.bits
    if dt.signed and x > dt.hi:
        x -= 1 << dt.bits
    return x


def sum_int(a, axes, dt, init=None):
    """Exact integer sums, then wrapped modulo 2^bits (format.md: integers accumulate in
    their own type and wrap; wrapping each step or once at the end is the same)."""
    t, kept = _slices(np.asarray(a, dtype=object), axes, init)
    flat = t.reshape(-1, t.shape[-1])
    return np.array([wrap(sum(int(x) for x in row), dt) for row in flat], dtype=object).reshape(kept)


SCALE = 1074  # every double is an integer multiple of 2^-1074


def _exact_ints(v):
    """float64 values (finite) -> Python ints, exactly v * 2^1074."""
    out = []
    for x in v:
        n, d = float(x).as_integer_ratio()
        out.append((n << SCALE) // d)  # d is a power of two <= 2^1074: exact
    return out


def exact_sums(terms, acc):
    """Whether every partial sum of every order of the terms (exact rationals with
    power-of-two denominators) is exact in acc: they are multiples of a power of two q at
    or above acc's smallest subnormal, and their magnitudes add up to at most 2^p * q, so
    each partial sum is a multiple of q of at most p bits (any order sums [3, -5, 8]
    exactly)."""
    nonzero = [abs(Fraction(t)) for t in terms if t]
    if not nonzero:
        return True
    q = min(Fraction(t.numerator & -t.numerator, t.denominator) for t in nonzero)
    total = sum(nonzero)
    return q >= acc.min_sub and total <= q * 2 ** acc.p and total <= acc.max


class SumSpec:
    """What a float sum of one slice may give, whatever order the variant adds in.

    The slice's n terms (the old destination included under accum=true) are added in the
    accumulation format acc with round-to-nearest, in an order and tree the format leaves
    to the variant. Any such sum, when no step overflows, is within
    E = gamma(n-1) * sum|x| of the exact sum S, gamma(k) = k*u / (1 - k*u) (the classical
    bound for every summation tree; a step whose result is subnormal is exact, so
    subnormals need no extra term), and the result is then rounded once to the dtype
    (f16/bf16; for f32 and f64 acc is the dtype). Rounding is monotone, so the finite
    results lie in [round(S - E), round(S + E)].

    Overflow: every partial sum lies between -N and P (the sums of the negative and of
    the positive terms), each off by at most a factor (1 + gamma). When P(1 + gamma) can
    reach acc's overflow threshold some order gives +inf, likewise -inf for N; when both
    can, adding the two partial infinities gives NaN. An input +inf gives +inf, or NaN if
    a -inf can appear (from the input or an overflow); an input NaN, or +inf and -inf in
    the input, always give NaN."""

    def __init__(self, vals, dt):
        v = np.asarray(vals, dtype=np.float64).ravel()
        self.n = v.size
        fin = v[np.isfinite(v)]
        self.has_nan = bool(np.isnan(v).any())
        self.has_pinf = bool((v == np.inf).any())
        self.has_ninf = bool((v == -np.inf).any())
        ints = _exact_ints(fin)
        den = 1 << SCALE
        self.S = Fraction(sum(ints), den)
        self.P = Fraction(sum(x for x in ints if x > 0), den)
        self.N = Fraction(-sum(x for x in ints if x < 0), den)
        acc = dt.acc
        k = max(self.n - 1, 0)
        self.gamma = k * acc.u / (1 - k * acc.u)
        self.E = 0 if exact_sums([Fraction(x, den) for x in ints], acc) else self.gamma * (self.P + self.N)
        self.pos_ovf = self.P * (1 + self.gamma) >= acc.overflow
        self.neg_ovf = self.N * (1 + self.gamma) >= acc.overflow
        self.dt = dt
        fmt = dt.fmt
        self.lo = round_exact(self.S - self.E, fmt)
        self.hi = round_exact(self.S + self.E, fmt)

    def allowed(self):
        """(finite interval or None, set of non-finite results allowed: 'nan', '+inf', '-inf')."""
        if self.has_nan or (self.has_pinf and self.has_ninf):
            return None, {"nan"}
        if self.has_pinf:  # +inf stays, unless a partial -inf (an overflow) meets it
            return None, {"+inf"} | ({"nan"} if self.neg_ovf else set())
        if self.has_ninf:
            return None, {"-inf"} | ({"nan"} if self.pos_ovf else set())
        special = set()
        if self.pos_ovf:
            special.add("+inf")
        if self.neg_ovf:
            special.add("-inf")
        if self.pos_ovf and self.neg_ovf:
            special.add("nan")
        # the finite results of orders in which nothing overflowed; rounding past the
        # dtype's largest finite (f16 from f32, say) is an infinity as well
        if self.hi == math.inf:
            special.add("+inf")
        if self.lo == -math.inf:
            special.add("-inf")
        return (self.lo, self.hi), special

    def accepts(self, got):
        interval, special = self.allowed()
        if math.isnan(got):
            return "nan" in special
        if got == math.inf:
            return "+inf" in special
        if got == -math.inf:
            return "-inf" in special
        # the sign of a zero sum is left to the order (the identity is +0), so it is not
        # compared: -0 and +0 both lie in an interval that holds 0
        return interval is not None and interval[0] <= got <= interval[1]

    def describe(self):
        interval, special = self.allowed()
        parts = []
        if interval:
            parts.append("[%r, %r]" % interval)
        parts += sorted(special)
        exact = float(self.S) if abs(self.S) < 2 ** 1023 else (math.inf if self.S > 0 else -math.inf)
        return "one of " + " or ".join(parts) + " (exact sum %.17g over %d terms)" % (exact, self.n)


class ProdSpec:
    """What a float product of one slice may give, whatever order the variant multiplies in.

    The n factors (the old destination included under accum=true) are multiplied in the
    accumulation format with round-to-nearest, in an order the format leaves to the
    variant. When no partial product leaves the normal range, each step rounds once with
    a relative error of at most u, so any order is within gamma(n-1) * |P| of the exact
    product P; the result is then rounded once to the dtype. Every partial product lies
    between the product of the magnitudes below 1 and that of those above 1 (an order may
    take all of one kind first). When the second can reach the overflow threshold, an
    order may give the infinity of the product's sign besides the bounded value (1e30 *
    1e30 * 1e-30 in f32 is +inf in one order and 1e30 in another). When the first can fall
    below the smallest normal, a step's error is no longer relative (subnormals, or 0): only
    the sign holds, and a bound on the magnitude, the exact one grown by the roundings plus
    what two subnormal units lost, grown by the factors above 1, then rounded to the dtype
    (as the result is). Either way NaN is allowed where an infinity (given or an overflow)
    can meet a zero (given or an underflow).

    Otherwise: a NaN factor, or an infinity and a zero, give NaN; an infinity gives an
    infinity, a zero a zero, each with the sign of the product of the signs (IEEE 754
    multiplication gives the sign exactly, in any order)."""

    def __init__(self, vals, dt):
        v = np.asarray(vals, dtype=np.float64).ravel()
        self.n = v.size
        self.dt = dt
        neg = int(np.signbit(v[~np.isnan(v)]).sum()) % 2 == 1
        self.sign = -1.0 if neg else 1.0
        self.has_nan = bool(np.isnan(v).any())
        self.has_inf = bool(np.isinf(v).any())
        self.has_zero = bool((v == 0).any())
        acc = dt.acc

        def product(xs):  # exactly: an integer (multiplied as a balanced tree) times a power of two
            nums, exp = [], 0
            for x in xs:
                n, d = float(x).as_integer_ratio()  # d is a power of two
                nums.append(abs(n))
                exp -= d.bit_length() - 1
            while len(nums) > 1:
                nums = [nums[i] * nums[i + 1] if i + 1 < len(nums) else nums[i] for i in range(0, len(nums), 2)]
            return Fraction(nums[0] if nums else 1) * Fraction(2) ** exp

        fin = v[np.isfinite(v) & (v != 0)]
        mags = np.abs(fin)
        big, small = product(mags[mags > 1]), product(mags[mags < 1])
        self.ovf, self.unf = big >= acc.overflow, small < acc.min_normal
        self.nan_too = (self.ovf or self.has_inf) and (self.unf or self.has_zero)
        self.P = product(mags)
        k = max(self.n - 1, 0)
        gamma = k * acc.u / (1 - k * acc.u)
        if self.unf:
            self.top = self.P * (1 + gamma) + 2 * acc.min_sub * big  # a bound on the magnitude
        else:
            self.lo = round_exact(self.P * (1 - gamma), dt.fmt)
            self.hi = round_exact(self.P * (1 + gamma), dt.fmt)

    def accepts(self, got):
        if self.has_nan or (self.has_inf and self.has_zero):
            return math.isnan(got)
        if math.isnan(got):
            return self.nan_too
        if math.copysign(1.0, got) != self.sign:
            return False
        if self.has_inf:
            return math.isinf(got)
        if math.isinf(got) and self.ovf:
            return True
        if self.unf:  # the magnitude's bound, rounded to the dtype as the result is (monotone)
            return math.isfinite(got) and abs(got) <= round_exact(self.top, self.dt.fmt)
        if self.has_zero:
            return got == 0
        return self.lo <= abs(got) <= self.hi

    def describe(self):
        if self.has_nan or (self.has_inf and self.has_zero):
            return "NaN"
        sign = "-" if self.sign < 0 else "+"
        also = " or NaN" if self.nan_too else ""
        if self.unf and not self.has_inf:
            top = round_exact(self.top, self.dt.fmt)
            return "a value of sign %s up to %.6g%s%s (an order of the factors goes subnormal)" % (
                sign, top, " or %sinf" % sign if self.ovf else "", also)
        if self.has_inf:
            return sign + "inf"
        if self.has_zero:
            return sign + "0"
        return "%s[%r, %r]%s%s (exact product over %d factors)" % (
            sign, self.lo, self.hi, " or %sinf" % sign if self.ovf else "", also, self.n)


def _round_inf(q, fmt):
    """round_exact, passing an infinity through."""
    return q if isinstance(q, float) and math.isinf(q) else round_exact(q, fmt)


def _sqrt_bounds(q, k=160):
    """Rationals lo <= sqrt(q) <= hi within a factor 1 +- 2^-k of it (q >= 0)."""
    q = Fraction(q)
    if q <= 0:
        return Fraction(0), Fraction(0)
    a, b = q.numerator, q.denominator
    r = math.isqrt(a * b * 4 ** k)
    den = b * 2 ** k
    return Fraction(r, den), Fraction(r + 1, den)


class SquaresSpec:
    """What a sum of squares of one slice may give (sumsq, and norm2 before its root).

    Each square x*x is rounded once in the accumulation format acc (format.md: never fused
    into the addition), so it is within u*x^2, or within half a subnormal unit where x^2
    is below acc's normal range; the rounded squares are then summed in any order and
    tree, within gamma(n-1) of their sum. Together: within E = gamma(n) * S + k * min_sub
    of the exact S = sum x^2, k the squares below the normal range, so the fold is an acc
    value between acc's roundings of S - E and S + E. Every term is >= +0: a zero fold
    is +0. When S(1 + gamma(n)) reaches acc's overflow threshold an order (or one square)
    overflows: the fold may be +inf. A NaN gives NaN; an infinity +inf.

    accum=true (sumsq): the old value is added once, to the fold, in acc; the sum is then
    rounded to the dtype. Addition and the roundings are monotone; an exact cancellation
    gives +0, so a zero result is +0 here too."""

    def __init__(self, vals, dt, acc, old=None):
        v = np.asarray(vals, dtype=np.float64).ravel()
        self.n, self.dt, self.acc = v.size, dt, acc
        fin = [Fraction(float(x)) for x in v[np.isfinite(v)]]
        sq = [x * x for x in fin]
        self.S = sum(sq, Fraction(0))
        k_sub = sum(1 for t in sq if 0 < t < acc.min_normal)
        g = self.n * acc.u / (1 - self.n * acc.u)
        E = g * self.S + k_sub * acc.min_sub
        if exact_sums(sq, acc):  # every square, and every sum of them, exact in acc
            E = 0
        fold_nan = bool(np.isnan(v).any())
        fold_inf = bool(np.isinf(v).any())  # the fold is +inf, exactly
        ovf = self.S * (1 + g) >= acc.overflow  # the fold may be +inf
        f_lo, f_hi = round_exact(max(self.S - E, Fraction(0)), acc), round_exact(self.S + E, acc)
        self.special, self.lo, self.hi = set(), None, None
        old = None if old is None else float(old)
        if fold_nan or (old is not None and math.isnan(old)):
            self.special = {"nan"}
        elif old == -math.inf:
            self.special = {"nan"} if fold_inf else {"-inf"} | ({"nan"} if ovf or f_hi == math.inf else set())
        elif fold_inf or old == math.inf:
            self.special = {"+inf"}
        else:
            if ovf or f_hi == math.inf:
                self.special.add("+inf")
            self.lo, self.hi = self.result(f_lo, old, lower=True), self.result(f_hi, old, lower=False)
            if self.hi == math.inf:
                self.special.add("+inf")
            if self.lo == -math.inf:
                self.special.add("-inf")

    def result(self, fold, old, lower):
        """The stored result of a fold of acc value fold (a bound: lower or upper)."""
        if old is not None and not math.isinf(fold):
            fold = round_exact(Fraction(fold) + Fraction(old), self.acc)
        return _round_inf(fold, self.dt.fmt)

    def accepts(self, got):
        if math.isnan(got):
            return "nan" in self.special
        if math.isinf(got):
            return ("+inf" if got > 0 else "-inf") in self.special
        if self.lo is None or (got == 0 and math.copysign(1.0, got) < 0):
            return False  # a zero is +0 (above)
        return self.lo <= got <= self.hi

    def describe(self):
        parts = ["[%r, %r]" % (self.lo, self.hi)] if self.lo is not None else []
        exact = float(self.S) if self.S < 2 ** 1023 else math.inf
        return "one of " + " or ".join(parts + sorted(self.special)) + \
            " (exact sum of squares %.17g over %d terms)" % (exact, self.n)


class Norm2Spec(SquaresSpec):
    """norm2: the square root of the fold of squares, rounded once in the accumulation
    format and then once to the dtype. Its accumulation format holds the square of every
    value (format.md): f64 for bf16, f32 and f64, f32 for f16. sqrt and the roundings are
    monotone, so the results lie between those of the fold's bounds (each root bounded by
    rationals within 2^-160 of it, the outer side taken: at worst an ulp looser)."""

    def result(self, fold, old, lower):
        if math.isinf(fold):
            return fold
        lo, hi = _sqrt_bounds(Fraction(fold))
        return _round_inf(round_exact(lo if lower else hi, self.acc), self.dt.fmt)


def sumsq_float_specs(a, axes, dt, init=None):
    """A SquaresSpec per output; init: the old destination values (accum=true), added once
    to each fold, not squared."""
    t, kept = _slices(np.asarray(a, dtype=np.float64), axes, None)
    flat = t.reshape(-1, t.shape[-1])
    olds = [None] * len(flat) if init is None else np.asarray(init, dtype=np.float64).ravel()
    return np.array([SquaresSpec(row, dt, dt.acc, o) for row, o in zip(flat, olds)], dtype=object).reshape(kept)


def norm2_float_specs(a, axes, dt):
    t, kept = _slices(np.asarray(a, dtype=np.float64), axes, None)
    flat = t.reshape(-1, t.shape[-1])
    acc = F64 if dt.name in ("bf16", "f32", "f64") else F32
    return np.array([Norm2Spec(row, dt, acc) for row in flat], dtype=object).reshape(kept)


def sumsq_int(a, axes, dt, init=None):
    """Exact integer sums of squares (and the old value, not squared, under accum=true),
    wrapped modulo 2^bits (as sums)."""
    t, kept = _slices(np.asarray(a, dtype=object), axes, None)
    flat = t.reshape(-1, t.shape[-1])
    olds = [0] * len(flat) if init is None else np.asarray(init, dtype=object).ravel()
    return np.array([wrap(sum(int(x) * int(x) for x in row) + int(o), dt) for row, o in zip(flat, olds)],
                    dtype=object).reshape(kept)


class MeanSpec(SumSpec):
    """mean: the sum (a SumSpec, in the accumulation format acc, not yet rounded to the
    dtype) divided by the count n converted to acc, the quotient rounded once in acc and
    then once to the dtype. The sum of a variant is an acc value within [S - E, S + E], so
    it lies between acc's roundings of those; division by a positive number and the
    roundings are monotone. The non-finite results are the sum's (an infinity over n stays
    one)."""

    def __init__(self, vals, dt):
        SumSpec.__init__(self, vals, dt)
        acc = dt.acc
        n_acc = Fraction(round_exact(self.n, acc))

        def mean(q):
            s = round_exact(q, acc)
            return s if math.isinf(s) else _round_inf(round_exact(Fraction(s) / n_acc, acc), dt.fmt)

        self.lo, self.hi = mean(self.S - self.E), mean(self.S + self.E)

    def describe(self):
        return SumSpec.describe(self).replace("exact sum", "sum, before the division by %d," % self.n)


def mean_float_specs(a, axes, dt):
    t, kept = _slices(np.asarray(a, dtype=np.float64), axes, None)
    flat = t.reshape(-1, t.shape[-1])
    return np.array([MeanSpec(row, dt) for row in flat], dtype=object).reshape(kept)


class LseSpec:
    """logsumexp: ln(sum of exp(x)) of one slice, from the definition in float64 with the
    maximum m taken out (m + ln(fsum(exp(x - m))), math.exp and math.log: no code of
    tilec's). NaN anywhere gives NaN, +inf gives +inf, nothing but -inf gives -inf.

    The fold keeps the sum of exp(x - m) in f32 (the accumulation format of f16, bf16 and
    f32): each of its n - 1 merges rounds an addition, a product and an exponential, a
    relative error of at most 4u each (u = 2^-24), so the sum is within a factor
    (1 +- 4(n - 1)u) of the exact one, and its log within 4(n - 1)u + 2^-40 (the float64
    reference's own error, far below that) of the exact log. The result is then rounded
    to f32 and to the dtype: monotone, so it lies in [round(L - E), round(L + E)].

    f64 folds its sum in f64 (u = 2^-53) and rounds the result once to f64; the float64
    reference's own error is then not negligible: math.exp's and the log's rounding, at
    most 2^-52 (1 + ln n) absolute, taken as 2^-46 (n < 2^40), and m + ln(s) 2^-52 |L|."""

    def __init__(self, vals, dt):
        v = np.asarray(vals, dtype=np.float64).ravel()
        self.n = v.size
        self.special = None
        if np.isnan(v).any():
            self.special = "nan"
        elif (v == np.inf).any():
            self.special = "+inf"
        elif self.n == 0 or (v == -np.inf).all():
            self.special = "-inf"
        if self.special:
            return
        m = float(v.max())
        L = Fraction(m) + Fraction(math.log(math.fsum(math.exp(x - m) for x in v.tolist())))
        if dt.name == "f64":
            E = 4 * max(self.n - 1, 0) * Fraction(1, 2 ** 53) + Fraction(1, 2 ** 46) + abs(L) * Fraction(1, 2 ** 51)
            self.L = float(L)
            self.lo = round_exact(L - E, F64)
            self.hi = round_exact(L + E, F64)
            return
        E = 4 * max(self.n - 1, 0) * Fraction(1, 2 ** 24) + Fraction(1, 2 ** 40) + abs(L) * Fraction(1, 2 ** 50)
        self.L = float(L)
        self.lo = _round_inf(round_exact(L - E, F32), dt.fmt)  # f64 to f32 to the dtype, as tilec rounds
        self.hi = _round_inf(round_exact(L + E, F32), dt.fmt)

    def accepts(self, got):
        if self.special:
            return (math.isnan(got) and self.special == "nan") or got == {"+inf": math.inf, "-inf": -math.inf}.get(self.special)
        return self.lo <= got <= self.hi

    def describe(self):
        if self.special:
            return self.special
        return "[%r, %r] (logsumexp %r of %d elements)" % (self.lo, self.hi, self.L, self.n)


def lse_float_specs(a, axes, dt, init=None):
    """With init (accum=true), the old value is one more element of each slice: the format's
    log(exp(old) + sum of exp(x))."""
    t, kept = _slices(np.asarray(a, dtype=np.float64), axes, init)
    flat = t.reshape(-1, t.shape[-1])
    return np.array([LseSpec(row, dt) for row in flat], dtype=object).reshape(kept)


def _scaled_ints(v):
    """Finite float64 values -> (Python ints X, shift s) with v_i = X_i * 2^-s exactly, s
    the smallest that makes every X_i an integer (so the ints stay as short as the data
    allows: a few dozen bits for f16, not 2^1074's scale)."""
    ratios = [float(x).as_integer_ratio() for x in v]  # denominators are powers of two
    s = max((d.bit_length() - 1 for _, d in ratios), default=0)
    return [n << (s - (d.bit_length() - 1)) for n, d in ratios], s


def _var_round(y, dt):
    """A var/std result held in f64 (a float, possibly +inf) stored in dt: once for f32
    and f64, through f32 for f16 and bf16 (two roundings, as the contract says)."""
    if math.isinf(y):
        return y
    if dt.name in ("f16", "bf16"):
        return _round_inf(round_exact(Fraction(y), F32), dt.fmt)
    return round_exact(Fraction(y), dt.fmt)


class VarSpec:
    """var (and std, root=True) of one slice with correction c: var = M2 / max(n - c, 0),
    M2 = sum of (x - mean)^2, std = sqrt(var); what any implementation of var's contract
    (K the slice's first element, d = x - K in f64, S1 and S2 = sums of d and of d*d
    rounded, in f64 and any tree, M2 = max(fma(-S1, S1/n, S2), +0), the quotient and the
    root in f64, correctly rounded) may give.

    Exact: M2 from the inputs' exact values (integers after one common scaling), so the
    mean is never rounded. The contract's rigorous bound on the f64 quotient before the
    last rounding is E = (n + 64) * 2^-50 * S2 / max(n - c, 1), S2 = sum of (x - x0)^2
    exactly, x0 the element of the slice the lowering shifts by (format.md: the first one
    it names, reduced index 0 or, for a grid statement, the one at the lowest address), taken
    here as the one that makes S2 largest. A first-order count of the roundings
    stays below it: d (u), d*d (u), the tree of S2 (gamma(n-1)), the tree of S1
    (gamma(n), which by Cauchy-Schwarz moves S1^2/n by at most 2 gamma(n) S2), S1/n and the
    fma (u S2 each) and the quotient: (3n + 6) * 2^-53 * S2 / (n - c) at most (u = 2^-53;
    S2 <= (n + 1) M2, as (x0 - mean)^2 is one term of M2). Where a square, the fma, a quotient or a partial sum goes below f64's
    normal range its error is absolute, not relative (f64 data of 1e-160 and less): at
    most a half subnormal unit each, so (n + 4) * 2^-1074 / max(n - c, 1) + 2^-1074 more
    (none for a constant slice: every d is 0 and everything is exact, +0).

    The f64 value lies in [v - E, v + E]; it is then rooted (std: correctly rounded in f64)
    and stored (once for f32 and f64, through f32 for f16 and bf16): all monotone, so the
    result lies between the stored images of the interval's ends (the roots bounded by
    rationals within 2^-160, the outer side taken). A zero result is +0, never -0.

    Special values: a NaN or an infinity in the slice, or an empty slice, give NaN. n - c
    <= 0 gives +inf where M2 > 0 and NaN where M2 == 0 (x / 0); NaN is allowed beside
    +inf there only when the bound cannot keep the computed M2 above 0. Where S2 (1 + its
    rounding) reaches f64's overflow threshold a square or a sum may overflow: the result
    may then also be +inf or NaN (inf - inf in the fma), beside the bounded value."""

    def __init__(self, vals, dt, correction=None, root=False):
        v = np.asarray(vals, dtype=np.float64).ravel()
        c = 1 if correction is None else int(correction)
        self.n, self.c, self.dt, self.root = v.size, c, dt, root
        self.special, self.lo, self.hi = set(), None, None
        self.M2 = self.var = None
        self.reason = ""
        if self.n == 0:
            self.special, self.reason = {"nan"}, "an empty slice"
            return
        if not np.isfinite(v).all():
            self.special, self.reason = {"nan"}, "NaN or an infinity in the slice"
            return
        n = self.n
        X, s = _scaled_ints(v)
        K = X[0]
        D = [x - K for x in X]
        S1 = sum(D)
        S2 = sum(d * d for d in D)
        den = 1 << (2 * s)
        self.M2 = Fraction(n * S2 - S1 * S1, n * den)  # sum of (x - mean)^2, exactly
        # sum of (x - x0)^2 = M2 + n (x0 - mean)^2, for the element x0 the lowering shifts by:
        # format.md lets it be any of the slice's (a grid statement's is the one at the lowest
        # address, which a reversed view makes another than reduced index 0), so the largest
        total = sum(X)
        far = max(abs(n * x - total) for x in X)  # n |x0 - mean|, scaled
        self.S2 = self.M2 + Fraction(far * far, n * den)
        u = Fraction(1, 2 ** 53)
        tiny = F64.min_sub if S2 else 0
        err_m2 = (n + 64) * Fraction(1, 2 ** 50) * self.S2 + (n + 4) * tiny
        ovf = self.S2 * (1 + 2 * (n + 4) * u) >= F64.overflow
        k = max(n - c, 0)
        if ovf:
            self.special |= {"+inf", "nan"}
        if k == 0:
            if self.M2 == 0:
                self.special, self.reason = {"nan"}, "0 / 0: n - correction <= 0 and M2 = 0"
            else:
                self.special.add("+inf")
                self.reason = "M2 / 0: n - correction <= 0 and M2 > 0"
                if self.M2 <= err_m2:  # the computed M2 may be 0: 0 / 0
                    self.special.add("nan")
            return
        self.var = self.M2 / k
        E = err_m2 / k + tiny
        lo = round_exact(max(self.var - E, Fraction(0)), F64)
        hi = round_exact(self.var + E, F64)
        if root:
            lo = lo if math.isinf(lo) else round_exact(_sqrt_bounds(Fraction(lo))[0], F64)
            hi = hi if math.isinf(hi) else round_exact(_sqrt_bounds(Fraction(hi))[1], F64)
        self.lo, self.hi = _var_round(lo, dt), _var_round(hi, dt)

    def exact(self):
        """The exact result as a float (std: within 2^-160 relative), or None when special."""
        if self.var is None:
            return None
        q = _sqrt_bounds(self.var)[0] if self.root else self.var
        return float(q) if q < 2 ** 1023 else math.inf

    def accepts(self, got):
        if math.isnan(got):
            return "nan" in self.special
        if got == math.inf and "+inf" in self.special:
            return True
        if self.lo is None or (got == 0 and math.copysign(1.0, got) < 0):
            return False  # never -0
        return self.lo <= got <= self.hi

    def describe(self):
        parts = ["[%r, %r]" % (self.lo, self.hi)] if self.lo is not None else []
        what = "std" if self.root else "var"
        tail = "%s of %d elements, correction %d" % (what, self.n, self.c)
        if self.var is not None:
            tail = "exact %s %.17g, " % (what, self.exact()) + tail
        if self.reason:
            tail = self.reason + "; " + tail
        return "one of " + " or ".join(parts + sorted(self.special)) + " (" + tail + ")"


def var_float_specs(a, axes, dt, correction=None, root=False):
    """A VarSpec per output of var (std: root=True) over axes (kept shape, an object
    array); correction None is the default, 1."""
    t, kept = _slices(np.asarray(a, dtype=np.float64), axes, None)
    flat = t.reshape(int(np.prod(kept, dtype=np.int64)), t.shape[-1])  # (an empty axis: slices of 0)
    return np.array([VarSpec(row, dt, correction, root) for row in flat], dtype=object).reshape(kept)


def std_float_specs(a, axes, dt, correction=None):
    return var_float_specs(a, axes, dt, correction, root=True)


def prod_float_specs(a, axes, dt, init=None):
    """A ProdSpec per output of a float product over axes (kept shape, an object array)."""
    t, kept = _slices(np.asarray(a, dtype=np.float64), axes, init)
    flat = t.reshape(-1, t.shape[-1])
    return np.array([ProdSpec(row, dt) for row in flat], dtype=object).reshape(kept)


def prod_int(a, axes, dt, init=None):
    """Exact integer products, then wrapped modulo 2^bits (as sums: wrapping each step or
    once at the end is the same, multiplication being a ring operation)."""
    t, kept = _slices(np.asarray(a, dtype=object), axes, init)
    flat = t.reshape(-1, t.shape[-1])
    out = []
    for row in flat:
        p = 1
        for x in row:
            p = wrap(p * int(x), dt)
        out.append(p)
    return np.array(out, dtype=object).reshape(kept)


def sum_float_specs(a, axes, dt, init=None):
    """A SumSpec per output of a float sum over axes (kept shape, an object array)."""
    t, kept = _slices(np.asarray(a, dtype=np.float64), axes, init)
    flat = t.reshape(-1, t.shape[-1])
    return np.array([SumSpec(row, dt) for row in flat], dtype=object).reshape(kept)


# ---- comparison ------------------------------------------------------------------------------


class Mismatch:
    def __init__(self, index, got, want, note=""):
        self.index, self.got, self.want, self.note = index, got, want, note

    def __str__(self):
        s = "[%s] got %s, want %s" % (",".join(map(str, self.index)), fmt_value(self.got), self.want)
        return s + (" (%s)" % self.note if self.note else "")


def fmt_value(x):
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if x == 0:
            return "-0.0" if math.copysign(1, x) < 0 else "+0.0"
        return repr(x)
    return str(x)


# the float ops whose results are ranges (specs with accepts / describe), not exact values
SPEC_OPS = ("sum", "prod", "sumsq", "norm2", "mean", "logsumexp", "var", "std")
# the ops defined on float dtypes only, those of values of at most 32 bits (none since
# logsumexp took f64), and those that take no accum (format.md)
FLOAT_ONLY = ("norm2", "mean", "logsumexp", "var", "std")
NARROW_ONLY = ()
NO_ACCUM = ("norm2", "mean", "var", "std")
# the ops that take a correction (var and std: the divisor is max(n - correction, 0))
CORRECTION_OPS = ("var", "std")


def compare(dt, op, got, want, note_fn=None):
    """got: decoded output (kept shape); want: from expected() (same shape).
    Returns a list of Mismatch. max/min and integer sums are exact — a NaN matches any
    NaN (the format does not fix payloads), otherwise the bits must be equal, so -0 and +0
    differ; float sums must be a result the SumSpec allows."""
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if dt.is_float and op not in SPEC_OPS:
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        # both are exact values of dt, so equal float64 bits are equal dt bits
        same = (g.view(np.uint64) == w.view(np.uint64)) | (np.isnan(g) & np.isnan(w))
        bad = np.argwhere(~same.reshape(got.shape)) if got.shape else ([()] if not same else [])
        return [Mismatch(tuple(i), float(g[tuple(i)]), fmt_value(float(w[tuple(i)])),
                         note_fn(tuple(i)) if note_fn else "") for i in bad]
    out = []
    for idx in np.ndindex(*got.shape) if got.shape else [()]:
        g, w = got[idx], want[idx]
        if dt.is_float:
            ok = w.accepts(float(g))
            g, w = float(g), (w.describe() if not ok else None)
        else:
            ok = int(g) == int(w)
            g, w = int(g), str(int(w))
        if not ok:
            out.append(Mismatch(idx, g, w, note_fn(idx) if note_fn else ""))
    return out


def slice_notes(dt, op, a, axes, init=None, correction=None):
    """A function idx -> what is special about output idx's slice (for messages)."""
    t, _ = _slices(a, axes, init)

    def note(idx):
        sl = t[idx]
        parts = []
        if dt.is_float:
            v = sl.astype(np.float64)
            if np.isnan(v).all():
                parts.append("an all-NaN slice")
            elif np.isnan(v).any():
                parts.append("NaN in the slice")
            if op in ("max", "min") and (v == 0).any():
                parts.append("zeros in the slice")
            if op in CORRECTION_OPS:
                if np.isinf(v).any():
                    parts.append("an infinity in the slice")
                parts.append("n = %d, correction %d" % (v.size, 1 if correction is None else correction))
        if sl.size <= 8:
            parts.append("slice [" + ", ".join(fmt_value(float(x)) if dt.is_float else str(x) for x in sl) + "]")
        return "; ".join(parts)

    return note


def expected(dt, op, nan, a, axes, init=None, correction=None):
    """The expected result of op over axes of a (kept shape): exact values for max/min
    and integer sums, SumSpecs for float sums; correction: var's and std's (None: the
    default, 1), and nothing else's."""
    if correction is not None and op not in CORRECTION_OPS:
        raise ValueError("a correction is for var and std, not " + op)
    if op in CORRECTION_OPS:
        if not dt.is_float:
            raise ValueError("%s is defined for float dtypes only, not %s" % (op, dt.name))
        return var_float_specs(a, axes, dt, correction, root=op == "std")
    if dt.is_float:
        if op == "sum":
            return sum_float_specs(a, axes, dt, init)
        if op == "prod":
            return prod_float_specs(a, axes, dt, init)
        if op == "sumsq":
            return sumsq_float_specs(a, axes, dt, init)
        if op == "norm2":
            return norm2_float_specs(a, axes, dt)
        if op == "mean":
            return mean_float_specs(a, axes, dt)
        if op == "logsumexp":
            return lse_float_specs(a, axes, dt, init)
        return maxmin_float(a, axes, op, nan, init)
    if op == "sum":
        return sum_int(a, axes, dt, init)
    if op == "prod":
        return prod_int(a, axes, dt, init)
    if op == "sumsq":
        return sumsq_int(a, axes, dt, init)
    return maxmin_int(a, axes, op, init)
