"""The oracle checked against itself and numpy, without tilec: its rounding against
numpy's correctly rounded casts, its bf16 conversion against the exact rounding, its sum
model against real f32 / f16 arithmetic in many orders (so it is never too tight) and
against wrong answers (so it is never too loose), and its max/min against numpy where
their semantics agree; its var/std model (VarSpec) against the contract's own computation
done in f64 in several trees, against numpy's var and std, literal answers and wrong
ones."""
import itertools
import statistics
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import numerics as nm
import test_edges


def test_round_exact_matches_numpy_casts(rng):
    """numpy's float64 -> float32 and float64 -> float16 casts round correctly to nearest
    even; round_exact must agree on random doubles, midpoints and their neighbours."""
    x = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.uniform(-50, 40, 3000),
                        rng.standard_normal(2000) * 10.0 ** rng.uniform(-9, 5, 2000)])
    f32 = np.float32(x[-200:]).astype(np.float64)  # midpoints of f32 values in range
    mids = (f32 + np.nextafter(f32.astype(np.float32), np.float32(np.inf)).astype(np.float64)) / 2
    x = np.concatenate([x, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)])
    with np.errstate(over="ignore"):
        want32 = x.astype(np.float32).astype(np.float64)
        want16 = x.astype(np.float16).astype(np.float64)
    for v, w32, w16 in zip(x, want32, want16):
        assert nm.round_exact(Fraction(float(v)), nm.F32) == w32, v
        assert nm.round_exact(Fraction(float(v)), nm.F16) == w16, v


def test_round_exact_known_values():
    assert nm.round_exact(Fraction("1.0000000596046447753906250001"), nm.F32) == 1 + 2 ** -23
    assert nm.round_exact(Fraction("1.000000059604644775390625"), nm.F32) == 1.0  # a tie, to even
    assert nm.round_exact(Fraction(2) ** -150, nm.F32) == 0.0  # half the smallest subnormal: to even
    assert nm.round_exact(Fraction(2) ** -150 * Fraction(1000001, 1000000), nm.F32) == 2.0 ** -149
    assert nm.round_exact(Fraction(65519), nm.F16) == 65504.0
    assert nm.round_exact(Fraction(65520), nm.F16) == math.inf
    assert nm.round_exact(Fraction(-65520), nm.F16) == -math.inf
    assert nm.round_exact(1 + Fraction(1, 256), nm.BF16) == 1.0
    assert nm.round_exact(1 + Fraction(3, 256), nm.BF16) == 1 + 2 ** -6
    assert math.copysign(1, nm.round_exact(Fraction(-1, 10 ** 60), nm.F32)) == -1  # -0


def test_bf16_from_f32_bits(rng):
    """The hand-written f32 -> bf16 rounding equals rounding the f32 value once, exactly;
    NaNs stay NaN, infinities stay, the largest f32 rounds to inf."""
    bits = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    # ties and their neighbours too
    ties = (rng.integers(0, 2 ** 16, 2000, dtype=np.uint64).astype(np.uint32) << 16) | 0x8000
    bits = np.concatenate([bits, ties, ties + 1, ties - 1])
    with np.errstate(invalid="ignore"):
        f = bits.view(np.float32).astype(np.float64)
    got = nm.bf16_bits_to_f64(nm.f32_bits_to_bf16_bits(bits))
    for v, g in zip(f, got):
        if math.isnan(v):
            assert math.isnan(g)
        elif math.isinf(v):
            assert g == v
        else:
            w = nm.round_exact(Fraction(float(v)), nm.BF16, negative_zero=math.copysign(1, v) < 0)
            assert g == w and math.copysign(1, g) == math.copysign(1, w), (v, g, w)
    special = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7F7FFFFF], dtype=np.uint32)
    out = nm.f32_bits_to_bf16_bits(special)
    assert list(out[:2]) == [0x7F80, 0xFF80]
    assert all(math.isnan(v) for v in nm.bf16_bits_to_f64(out[2:5]))
    assert out[5] == 0x7F80


def orders(rng, n, count):
    """Ways to add n terms: forward, backward, pairwise trees, random trees."""
    yield ("forward", list(range(n)))
    yield ("backward", list(range(n))[::-1])
    for _ in range(count):
        yield ("random", list(rng.permutation(n)))


def tree_sum(vals, acc, rng):
    """A random summation tree in acc (np.float32 / np.float64)."""
    items = [acc(v) for v in vals]
    while len(items) > 1:
        i = int(rng.integers(0, len(items) - 1))
        with np.errstate(over="ignore", invalid="ignore"):
            items[i:i + 2] = [acc(items[i] + items[i + 1])]
    return items[0]


@pytest.mark.parametrize("d", ["f16", "bf16", "f32", "f64"])
def test_sum_model_accepts_real_orders(rng, d):
    """Sums done for real in the accumulation type, in many orders and trees, then rounded
    once to the dtype, are all accepted: the model is never too tight."""
    import data
    dt = nm.DTYPES[d]
    acc = np.float32 if dt.acc is nm.F32 else np.float64
    for flavour in ["normal", "integers", "specials", "subnormal", "big", "zeros"]:
        for n in (1, 2, 3, 17, 200):
            vals = data.float_values(rng, dt, (n,), flavour)
            spec = nm.SumSpec(vals, dt)
            for name, order in orders(rng, n, 4):
                s = acc(0)
                for i in order:
                    with np.errstate(over="ignore", invalid="ignore"):
                        s = acc(s + acc(vals[i]))
                got = nm.quantize(dt, np.array([float(s)]))[0][0]
                assert spec.accepts(float(got)), (flavour, name, vals, got, spec.describe())
            got = nm.quantize(dt, np.array([float(tree_sum(vals, acc, rng))]))[0][0]
            assert spec.accepts(float(got)), (flavour, "tree", vals, got, spec.describe())


def test_sum_model_rejects_wrong_answers():
    """... and never too loose: results of the wrong arithmetic are rejected."""
    f16, f32 = nm.DTYPES["f16"], nm.DTYPES["f32"]
    # f16 accumulated in f16 (round each step) gives 1.0; in f32 then rounded once 1 + 2^-10
    s = nm.SumSpec(np.array([1.0, 2.0 ** -11, 2.0 ** -11]), f16)
    assert s.accepts(1 + 2 ** -10) and not s.accepts(1.0)
    # f16 accumulated in f16 overflows; in f32 it is 65504
    s = nm.SumSpec(np.array([65504.0, 65504.0, -65504.0]), f16)
    assert s.accepts(65504.0) and not s.accepts(math.inf) and not s.accepts(math.nan)
    # [3e38, 3e38, -inf] in f32: NaN or -inf, never +inf or a number
    big = float(np.float32(3e38))
    s = nm.SumSpec(np.array([big, big, -math.inf]), f32)
    assert s.allowed() == (None, {"nan", "-inf"})
    # a sum in double would be exact here; f32 must be within its own bound only
    s = nm.SumSpec(np.array([1.0, 2.0 ** -30] * 4), f32)
    assert s.accepts(1.0 * 4) and not s.accepts(4.5) and not s.accepts(3.999)
    # the sign of an input infinity is kept
    s = nm.SumSpec(np.array([math.inf, 1.0, -2.0]), f32)
    assert s.accepts(math.inf) and not s.accepts(-math.inf) and not s.accepts(math.nan)
    # an exact single term: nothing else
    s = nm.SumSpec(np.array([0.1]), nm.DTYPES["f64"])
    assert s.accepts(0.1) and not s.accepts(math.nextafter(0.1, 1))


def test_maxmin_agrees_with_numpy_where_semantics_agree(rng):
    """Without zeros of both signs numpy's max / nanmax and the format agree, except that
    nanmax warns on an all-NaN slice (the result, NaN, is the same)."""
    a = rng.standard_normal((40, 7))
    a[rng.random(a.shape) < 0.2] = np.nan
    a[3, :] = np.nan
    for op, f, nf in (("max", np.max, np.nanmax), ("min", np.min, np.nanmin)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # nanmax of an all-NaN slice
            want_ign = nf(a, axis=1)
        np.testing.assert_array_equal(nm.maxmin_float(a, (1,), op, "ignore"), want_ign)
        np.testing.assert_array_equal(nm.maxmin_float(a, (1,), op, "propagate"), f(a, axis=1))


def test_maxmin_zero_rule():
    """The format's -0 < +0, in any order, where numpy does not promise one."""
    for perm in itertools.permutations([-0.0, 0.0, -1.0]):
        a = np.array([perm])
        mx = nm.maxmin_float(a, (1,), "max", "propagate")[0]
        mn = nm.maxmin_float(a, (1,), "min", "propagate")[0]
        assert mx == 0 and math.copysign(1, mx) == 1
        assert mn == -1.0
    for perm in itertools.permutations([-0.0, 0.0, 2.0]):
        mn = nm.maxmin_float(np.array([perm]), (1,), "min", "ignore")[0]
        assert mn == 0 and math.copysign(1, mn) == -1


def test_int_sums_wrap():
    i32, u32, i64 = nm.DTYPES["i32"], nm.DTYPES["u32"], nm.DTYPES["i64"]
    assert nm.sum_int(np.array([2 ** 31 - 1, 1], dtype=object), (0,), i32) == -2 ** 31
    assert nm.sum_int(np.array([2 ** 32 - 1] * 3, dtype=object), (0,), u32) == 2 ** 32 - 3
    assert nm.sum_int(np.array([-2 ** 63, -2 ** 63, 5], dtype=object), (0,), i64) == 5


def test_oracle_agrees_with_stated_vectors():
    """numerics.py gives the answers test_edges.py states by hand."""
    for name, d, op, nan, vec, want in test_edges.VECTORS:
        dt = nm.DTYPES[d]
        a = np.array([math.nan if x == "nan" else x for x in vec], dtype=np.float64 if dt.is_float else object)
        e = nm.expected(dt, op, nan, a, (0,))
        if dt.is_float and op in ("prod", "sumsq", "norm2", "mean"):
            for w in want:
                assert e[()].accepts(math.nan if w == "nan" else w), name
            wrong = [-w for w in want if w != "nan"] + ([] if "nan" in want else [math.nan])
            for w in wrong:  # the other sign, or NaN where a number is stated: refused
                assert not e[()].accepts(w), name
        elif dt.is_float and op == "sum":
            interval, special = e[()].allowed()
            for w in want:
                assert e[()].accepts(math.nan if w == "nan" else w), name
            finite = [w for w in want if w != "nan" and math.isfinite(w)]
            assert (interval is None) == (not finite) or interval[0] == interval[1], name
        else:
            got = e[()]
            assert any(test_edges.matches(dt, float(got) if dt.is_float else got, w) for w in want), name


def test_exact_sums_have_one_answer():
    """Terms that every order sums exactly (small integers) leave the specs one value: a
    mean divided by a wrong count, or a sum missing a term, is refused."""
    f32, f16 = nm.DTYPES["f32"], nm.DTYPES["f16"]
    ones = np.ones(5000)
    mean = nm.MeanSpec(ones, f32)
    assert mean.accepts(1.0)
    assert not mean.accepts(float(np.float32(5000 / 5001)))
    ints = np.arange(-8, 9, dtype=np.float64).repeat(300)  # sums to 0; |x| adds up to 21600
    assert nm.SumSpec(np.append(ints, 3.0), f16).accepts(3.0)
    assert not nm.SumSpec(np.append(ints, 3.0), f16).accepts(2.0)
    sq = nm.SquaresSpec(np.array([3.0, -4.0] * 1000), f32, f32.acc)
    assert sq.accepts(25000.0) and not sq.accepts(float(np.nextafter(np.float32(25000), np.float32(0))))
    # not exact: 2^24 + 1 needs 25 bits, so its orders round
    assert nm.SumSpec(np.array([2.0 ** 24, 1.0, 1.0]), f32).accepts(2.0 ** 24)


# ---- var and std (VarSpec) ----------------------------------------------------------------


def _fma(a, b, c):
    """fma in f64: the exact a*b + c rounded once. IEEE's rules where a term is not
    finite: a finite product (however large: it is not rounded) plus an infinity or a NaN
    is that term; an infinite factor gives what a*b + c gives. An exact zero result is +0
    unless both the product and c are -0 (round to nearest)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return a * b + c
    if not math.isfinite(c):
        return c
    r = nm.round_exact(Fraction(a) * Fraction(b) + Fraction(c), nm.F64)
    if r == 0 and Fraction(a) * Fraction(b) + Fraction(c) == 0:
        neg_prod = (math.copysign(1, a) * math.copysign(1, b) < 0) if a * b == 0 else a * b < 0
        return -0.0 if (a * b == 0 and neg_prod and math.copysign(1, c) < 0) else 0.0
    return r


def _tree(vals, rng, how):
    """f64 sums of vals in one order: forward, pairwise or a random tree."""
    items = [float(v) for v in vals]
    if not items:
        return 0.0
    if how == "forward":
        s = items[0]
        for x in items[1:]:
            s = s + x
        return s
    while len(items) > 1:
        if how == "pairwise":
            items = [items[i] + items[i + 1] if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
        else:
            i = int(rng.integers(0, len(items) - 1))
            items[i:i + 2] = [items[i] + items[i + 1]]
    return items[0]


def _store(y, dt):
    """An f64 result stored in dt with numpy's casts (not numerics' rounding): once for
    f32 and f64, through f32 for f16 and bf16."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.float32(y)
        if dt.name == "f16":
            return float(f.astype(np.float16))
        if dt.name == "bf16":
            return float(nm.bf16_bits_to_f64(nm.f32_bits_to_bf16_bits(np.array([f]).view(np.uint32)))[0])
    return float(f) if dt.name == "f32" else float(y)


def contract_var(vals, dt, c, root, rng, how):
    """The contract's computation, in f64 (Python floats are IEEE doubles): K the first
    element, d = x - K, S1 and S2 in the tree `how`, M2 = max(fma(-S1, S1/n, S2), +0),
    the quotient, the root, the store."""
    v = [float(x) for x in vals]
    n = len(v)
    if n == 0:
        return _store(math.nan, dt)
    K = v[0]
    d = [x - K for x in v]
    S1 = _tree(d, rng, how)
    S2 = _tree([e * e for e in d], rng, how)
    m = _fma(-S1, S1 / n, S2)
    M2 = m if math.isnan(m) else (m if m > 0 else 0.0)
    k = max(n - c, 0)
    if k == 0:
        var = math.nan if (math.isnan(M2) or M2 == 0) else math.inf
    else:
        var = M2 / k
    y = math.sqrt(var) if root and not math.isnan(var) else var
    return _store(y, dt)


@pytest.mark.parametrize("d", ["f16", "bf16", "f32", "f64"])
def test_var_model_accepts_the_contracts_computation(rng, d):
    """The contract's own algorithm, in several summation trees, is accepted for every
    flavour of data, correction and op: the bound is never too tight."""
    import data
    dt = nm.DTYPES[d]
    for flavour in data.VAR_FINITE + data.VAR_NONFINITE:
        for n in (1, 2, 3, 17, 200, 1500):
            vals = data.values(rng, dt, (n,), flavour, (0,))
            for c in (0, 1, 2, n, n + 1):
                for root in (False, True):
                    spec = nm.VarSpec(vals, dt, c, root)
                    for how in ("forward", "pairwise", "random"):
                        got = contract_var(vals, dt, c, root, rng, how)
                        assert spec.accepts(got), (flavour, n, c, root, how, vals[:8], got, spec.describe())


@pytest.mark.parametrize("d", ["f16", "bf16", "f32", "f64"])
def test_var_model_agrees_with_numpy(rng, d):
    """numpy's var and std of the values as float64 (two passes: accurate on benign data),
    rounded to the dtype, are accepted; and the interval is tight: at most a few units of
    the dtype wide."""
    import data
    dt = nm.DTYPES[d]
    # (numpy's mean of f64 data with a large mean is a rounding of f64's away, which its
    # second pass squares: offset data is benign for it only from the narrower dtypes)
    for flavour in ("normal", "integers") + (("offset",) if d != "f64" else ()):
        for n in (2, 3, 17, 200, 3000):
            x = data.values(rng, dt, (n,), flavour, (0,)).astype(np.float64)
            for c in (0, 1, 2):
                if c >= n:
                    continue  # numpy's x / 0 warns; VarSpec's specials are checked below
                for root, f in ((False, np.var), (True, np.std)):
                    spec = nm.VarSpec(x, dt, c, root)
                    want = _store(float(f(x, ddof=c)), dt)
                    assert spec.accepts(want), (flavour, n, c, root, want, spec.describe())
                    if want == 0:
                        continue
                    # as narrow as the contract's bound allows: its width for f64 (the bound,
                    # (n + 64) 2^-50 S2 / (n - c), is some 2^9 units of f64 at var for small n),
                    # a few units of the narrower dtypes (far wider than the bound there)
                    rel = 2 * (n + 64) * Fraction(1, 2 ** 50) * spec.S2 / spec.M2 / (2 if root else 1)
                    ulp = float(np.spacing(np.float64(want))) if d == "f64" else want * float(dt.fmt.u) * 2
                    width = float(rel) * want + 4 * ulp if d == "f64" else 4 * ulp
                    assert spec.hi - spec.lo <= width, (flavour, n, c, root, spec.describe())


def test_var_model_exact_cases():
    """Answers from the definition alone: one value each (lo == hi), or the special."""
    f32, f64, f16, bf16 = (nm.DTYPES[k] for k in ("f32", "f64", "f16", "bf16"))

    def only(spec, want):
        assert spec.lo == spec.hi == want and not spec.special, spec.describe()
        assert spec.accepts(want) and not spec.accepts(math.nan)
        assert not spec.accepts(float(np.nextafter(np.float32(want), np.float32(np.inf)))), spec.describe()

    only(nm.VarSpec([1.0, 2.0, 3.0, 4.0], f32, 1), float(np.float32(5 / 3)))
    only(nm.VarSpec([1.0, 2.0, 3.0, 4.0], f32, 0), 1.25)
    only(nm.VarSpec([1.0, 2.0, 3.0, 4.0], f32), float(np.float32(5 / 3)))  # the default is 1
    only(nm.VarSpec([2.0, 4, 4, 4, 5, 5, 7, 9], f32, 0, root=True), 2.0)
    # f64: the contract's bound leaves f64 some units either side of an exact answer
    for vec, c, want in (([2.0, 4, 4, 4, 5, 5, 7, 9], 0, 4.0), ([1e16, 1e16 + 2, 1e16 + 4], 1, 4.0)):
        s = nm.VarSpec(vec, f64, c)
        assert s.accepts(want) and s.lo < want < s.hi and (s.hi - s.lo) / want < 2 ** -40, s.describe()
        assert not s.accepts(want * (1 + 2 ** -40)) and not s.accepts(-0.0)
    # constant slices: +0 only
    for vec, c in (([3.5] * 7, 1), ([-0.0, 0.0], 0), ([7.0], 0), ([-2.0] * 5, 1)):
        for root in (False, True):
            s = nm.VarSpec(vec, f32, c, root)
            assert s.accepts(0.0) and not s.accepts(-0.0) and not s.accepts(2.0 ** -149), (vec, c, s.describe())
    # 0 / 0 and M2 / 0
    for vec, c, want in (([7.0], 1, "nan"), ([5.0, 5.0], 2, "nan"), ([5.0, 5.0], 9, "nan"), ([1.0, 2.0], 2, "+inf"),
                         ([1.0, 2.0], 3, "+inf"), ([], 0, "nan"), ([], 1, "nan")):
        for root in (False, True):
            s = nm.VarSpec(vec, f32, c, root)
            assert s.special == {want} and s.lo is None, (vec, c, s.describe())
            assert s.accepts(math.nan if want == "nan" else math.inf)
            assert not s.accepts(math.inf if want == "nan" else math.nan) and not s.accepts(0.0)
    # a NaN or an infinity: NaN, whatever the correction
    for vec in ([1.0, math.inf], [math.inf, 1.0], [-math.inf], [math.inf, -math.inf], [math.nan, 1.0, 2.0]):
        for c in (0, 1, 5):
            s = nm.VarSpec(vec, f64, c)
            assert s.special == {"nan"} and s.accepts(math.nan) and not s.accepts(math.inf), (vec, c)
    # the root of a var past f32's range is not: std from the f64 var, not the stored one
    x0 = float(np.float32(1e30))
    only(nm.VarSpec([x0] + [0.0] * 7, f32, 1, root=True), float(np.float32(math.sqrt(x0 * x0 / 8))))
    s = nm.VarSpec([x0] + [0.0] * 7, f32, 1)
    assert s.lo == s.hi == math.inf and s.accepts(math.inf) and not s.accepts(3.4028234663852886e38)
    # f16: var through f32 (6.6666665 then 6.668); std of a var past 65504
    only(nm.VarSpec(np.arange(1.0, 10.0), f16, 0), 6.66796875)
    only(nm.VarSpec([60000.0, 0, 0, 0], f16, 1, root=True), 30000.0)
    only(nm.VarSpec([1.0, 2, 3, 4, 5], bf16, 1, root=True), 1.578125)
    # f64 overflow: the true var is past f64's range, so +inf (or NaN, inf - inf) only
    s = nm.VarSpec([1e300, 0.0, 0.0, 0.0], f64, 0)
    assert s.accepts(math.inf) and not s.accepts(1.7976931348623157e308)


def test_var_model_rejects_wrong_answers(rng):
    """... and never too loose: the wrong correction, the sum-of-squares formula, a sum in
    f32, a root of the stored var, -0, an infinity for 0 / 0 are refused."""
    import data
    f32, f64 = nm.DTYPES["f32"], nm.DTYPES["f64"]
    x = data.values(rng, f32, (1000,), "normal", (0,))
    for c in (0, 1, 2):
        spec = nm.VarSpec(x, f32, c)
        for wrong in (c + 1, c - 1):
            if wrong >= 0:
                assert not spec.accepts(float(np.float32(np.var(x, ddof=wrong)))), (c, wrong)
    # sum x^2 - (sum x)^2 / n in f64 over f64 data with a large mean: loses every digit
    y = data.values(rng, f64, (3000,), "offset", (0,))
    spec = nm.VarSpec(y, f64, 1)
    naive = (math.fsum(float(v) * float(v) for v in y) - math.fsum(y) ** 2 / len(y)) / (len(y) - 1)
    assert not spec.accepts(naive), (naive, spec.describe())
    # the same with 1e6 + N(0, 1) in f32 data, as the contract's example has it: the
    # one-pass formula in f64 is off by tens of percent there
    z = nm.quantize(f32, 1e6 + rng.standard_normal(100000))[0]
    spec = nm.VarSpec(z, f32, 1)
    s = q = 0.0
    for v in z.tolist():
        s, q = s + v, q + v * v
    assert not spec.accepts(float(np.float32((q - s * s / len(z)) / (len(z) - 1))))
    assert spec.accepts(float(np.float32(statistics.variance(z.tolist()))))
    # the root of the var rounded to f16: 9e8 is +inf there, its root 30000
    f16 = nm.DTYPES["f16"]
    assert not nm.VarSpec([60000.0, 0, 0, 0], f16, 1, root=True).accepts(math.inf)
    # -0 for a constant slice, +inf for 0 / 0, NaN for M2 / 0
    assert not nm.VarSpec([2.0, 2.0], f32, 0).accepts(-0.0)
    assert not nm.VarSpec([2.0, 2.0], f32, 2).accepts(math.inf)
    assert not nm.VarSpec([2.0, 3.0], f32, 2).accepts(math.nan)


def test_var_model_large_mean_bound():
    """The contract's example: 1e6 + N(0, 1) in f32 gives the data's variance to 1e-6
    relative or better; the spec's interval is that narrow (so the test of it is no looser
    than the bound)."""
    rng = np.random.default_rng(7)
    f32 = nm.DTYPES["f32"]
    z = nm.quantize(f32, 1e6 + rng.standard_normal(100000))[0]
    for c in (0, 1):
        for root in (False, True):
            s = nm.VarSpec(z, f32, c, root)
            assert (s.hi - s.lo) <= 2 * float(np.spacing(np.float32(s.hi))), s.describe()


def test_var_literals_agree_with_the_spec():
    """test_var.py's literal table, written from the contract's rules, is what VarSpec
    says: the one value it allows (or the special value alone)."""
    import test_var
    for dname, op, corr, vec, want in test_var.LITERAL:
        dt = nm.DTYPES[dname]
        x = nm.quantize(dt, np.array(vec, dtype=np.float64))[0]
        assert np.array_equal(x, np.array(vec), equal_nan=True), ("not values of " + dname, vec)
        spec = nm.expected(dt, op, "propagate", x, (0,), correction=corr)[()]
        assert spec.accepts(want), (dname, op, corr, vec, want, spec.describe())
        if math.isnan(want):
            assert spec.special == {"nan"}, (vec, spec.describe())
        elif spec.lo is not None and dname != "f64":  # f64: the bound is some units wide (above)
            assert spec.lo == spec.hi == want, (vec, want, spec.describe())


def test_expected_keeps_old_calls_and_refuses_misuse():
    f32, i32 = nm.DTYPES["f32"], nm.DTYPES["i32"]
    a = np.arange(12.0).reshape(3, 4)
    assert nm.expected(f32, "sum", "propagate", a, (1,))[0].accepts(6.0)
    v = nm.expected(f32, "var", "propagate", a, (1,))
    assert v.shape == (3,) and all(s.accepts(float(np.float32(5 / 3))) for s in v)
    assert nm.expected(f32, "std", "propagate", a, (0, 1), correction=0)[()].accepts(float(np.float32(np.std(a))))
    with pytest.raises(ValueError):
        nm.expected(f32, "sum", "propagate", a, (1,), correction=1)
    with pytest.raises(ValueError):
        nm.expected(i32, "var", "propagate", np.arange(4, dtype=object), (0,))
    note = nm.slice_notes(f32, "var", a, (1,), correction=2)((0,))
    assert "correction 2" in note and "n = 4" in note
