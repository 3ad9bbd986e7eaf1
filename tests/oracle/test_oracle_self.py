"""The oracle checked against itself and numpy, without tilec: its rounding against
numpy's correctly rounded casts, its bf16 conversion against the exact rounding, its sum
model against real f32 / f16 arithmetic in many orders (so it is never too tight) and
against wrong answers (so it is never too loose), and its max/min against numpy where
their semantics agree."""
import itertools
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
