"""tilec.segment_reduce against numpy (the oracle: each segment reduced by numpy on its own)
and against tilec.reduce of a contiguous row of the segment's elements (bit for bit: the
fold order depends on the length only), on the simulator (conftest): every op, random
offsets with empty segments, lengths=, int32 offsets, axis=0 of a 2-D array, NaN and ±inf,
bad offsets and empty segments of max reported as tilec.ArgumentError."""
import numpy as np
import pytest

import tilec

RNG = np.random.default_rng(32)


def offsets_for(n, nsegs, rng, maxlen):
    lens = rng.integers(0, maxlen + 1, nsegs)
    lens[rng.random(nsegs) < 0.3] = 0
    off = np.concatenate([[0], np.cumsum(lens)])
    return np.minimum(off, n).astype(np.int64)


def numpy_segment(op, seg, ddof=0):
    """The oracle: numpy on the segment alone (float64 for the rounded ops)."""
    s = seg.astype(np.float64) if seg.dtype.kind == "f" else seg
    if op == "sum":
        return s.sum()
    if op == "prod":
        return s.prod()
    if op == "sumsq":
        return (s * s).sum()
    if op == "norm2":
        return np.sqrt((s.astype(np.float64) ** 2).sum())
    if op == "mean":
        return s.mean() if len(s) else np.nan
    if op in ("var", "std"):
        v = s.var(ddof=ddof) if len(s) > ddof else np.nan
        return np.sqrt(v) if op == "std" else v
    if op == "logsumexp":
        if not len(s):
            return -np.inf
        m = s.max()
        return m + np.log(np.exp(s - m).sum()) if np.isfinite(m) else m
    if op == "max":
        return s.max()
    if op == "min":
        return s.min()
    if op == "argmax":
        return np.argmax(seg)
    if op == "argmin":
        return np.argmin(seg)
    if op == "aminmax":
        return (s.min(), s.max())
    raise AssertionError(op)


EMPTY_IS_ERROR = ("max", "min", "argmax", "argmin", "aminmax")


@pytest.mark.parametrize("op", tilec.OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_every_op_against_numpy(op, dtype):
    try:
        tilec.reduce(np.zeros(2, dtype), op)
    except TypeError:
        pytest.skip("%s is not defined for %s" % (op, dtype))
    n = 400
    x = (RNG.integers(-4, 5, n) if op != "prod" else RNG.choice([-1, 1, 1, 2], n)).astype(dtype)
    if dtype.startswith("float") and op != "prod":
        x = (RNG.standard_normal(n) * 3).astype(dtype)
    off = offsets_for(n, 17, RNG, 60)
    if op in EMPTY_IS_ERROR:
        off = np.unique(off)  # no empty segment
    got = tilec.segment_reduce(x, off, op)
    for s in range(len(off) - 1):
        seg = x[off[s]:off[s + 1]]
        want = numpy_segment(op, seg)
        g = (got[0][s], got[1][s]) if op == "aminmax" else got[s]
        if op in ("argmax", "argmin"):
            assert g == want, (s, g, want)
        elif op == "aminmax":
            assert g == want, (s, g, want)
        elif dtype == "int32" and op in ("sum", "prod", "sumsq"):
            assert g.dtype == np.int64 and g == np.int64(want), (s, g, want)  # numpy's int64
        else:
            np.testing.assert_allclose(g, want, rtol=2e-5 if dtype == "float32" else 1e-12, atol=1e-5)
        # the segment's bits are those of a dense row of its elements
        if len(seg) or op not in EMPTY_IS_ERROR:
            dense = tilec.reduce(np.ascontiguousarray(seg), op)
            d = dense if op != "argmax" and op != "argmin" else dense
            assert np.asarray(d).tobytes() == np.asarray(g).tobytes() or \
                (op == "aminmax" and np.asarray(d[0]).tobytes() == np.asarray(g[0]).tobytes()), (s, d, g)


def test_lengths_axis0_and_int32_offsets():
    x = RNG.standard_normal((30, 4)).astype(np.float32)
    lengths = np.array([5, 0, 10, 15])
    got = tilec.segment_reduce(x, op="sum", lengths=lengths, axis=0)
    off = np.concatenate([[0], np.cumsum(lengths)])
    assert got.shape == (4, 4)
    for s in range(4):
        np.testing.assert_allclose(got[s], x[off[s]:off[s + 1]].astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-6)
        assert got[1].tobytes() == np.zeros(4, np.float32).tobytes()  # an empty sum: +0
    got32 = tilec.segment_reduce(x, off.astype(np.int32), "sum", axis=0)
    assert got32.tobytes() == got.tobytes()
    y = RNG.standard_normal((3, 50))
    off = np.array([0, 7, 7, 50])
    got = tilec.segment_reduce(y, off, "mean", axis=-1)
    assert got.shape == (3, 3)
    np.testing.assert_allclose(got[:, 0], y[:, :7].mean(axis=1), rtol=1e-12)
    assert np.isnan(got[:, 1]).all()


def test_specials_bitwise_and_nan_rules():
    x = RNG.standard_normal(300).astype(np.float32)
    x[[3, 40, 41, 200]] = [np.nan, np.inf, -np.inf, -0.0]
    off = np.array([0, 10, 40, 42, 100, 300])
    for op in ("sum", "max", "min", "logsumexp", "var"):
        got = tilec.segment_reduce(x, off, op)
        for s in range(len(off) - 1):
            seg = x[off[s]:off[s + 1]]
            assert np.asarray(tilec.reduce(seg, op)).tobytes() == got[s].tobytes(), (op, s)
    mx = tilec.segment_reduce(x, off, "max")
    assert np.isnan(mx[0]) and mx[2] == np.inf
    ig = tilec.segment_reduce(x, off, "max", nan="ignore")
    assert ig[0] == np.nanmax(x[:10])
    am = tilec.segment_reduce(x, off, "argmax")
    assert am[0] == 3 and am[2] == 0  # the first NaN; +inf at 40


def test_bad_offsets_and_empty_max():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(tilec.ArgumentError, match="segment 1 runs from 5 to 3, which falls"):
        tilec.segment_reduce(x, [0, 5, 3, 10], "sum")
    with pytest.raises(tilec.ArgumentError, match="ends past the extent"):
        tilec.segment_reduce(x, [0, 5, 11], "sum")
    with pytest.raises(tilec.ArgumentError, match="starts below 0"):
        tilec.segment_reduce(x, [-1, 5, 10], "sum")
    with pytest.raises(tilec.ArgumentError, match="empty segment"):
        tilec.segment_reduce(x, [0, 5, 5, 10], "max")
    np.testing.assert_array_equal(tilec.segment_reduce(x, [0, 5, 10], "sum"), [10, 35])  # cleared
    with pytest.raises(TypeError, match="offsets= .* or lengths="):
        tilec.segment_reduce(x, op="sum")
    with pytest.raises(ValueError, match="one axis"):
        tilec.segment_reduce(x, [0, 10], "sum", axis=None)
    assert tilec.segment_reduce(x, [4], "sum").shape == (0,)
