"""The Python package against oracles that share nothing with tilec: Python's exact integer
arithmetic and math.fsum (correctly rounded sums), numpy's argmax / max / var in f64, on
views with every kind of stride and inputs with negatives, +-inf, NaN, +-0, subnormals and
integer extremes. Runs on the simulator (numpy arrays; conftest.py chooses it); scripts/gpu-python
is the GPU half.
"""
import math
import os

import numpy as np
import pytest

import tilec

RNG = np.random.default_rng(20261203)
FLOATS = ["float16", "float32", "float64"]
INTS = ["int32", "uint32", "int64"]
TOL = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-12}


def data(dtype, shape, special=True):
    """Values of every sign and size; floats with +-inf, NaN, +-0 and subnormals when
    special, integers with their extremes."""
    n = int(np.prod(shape))
    if dtype in INTS:
        info = np.iinfo(dtype)
        v = RNG.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
        v[: min(n, 3)] = [info.min, info.max, 0][: min(n, 3)]
        return RNG.permutation(v).reshape(shape)
    v = (RNG.standard_normal(n) * 10).astype(dtype)
    if special and n >= 8:
        tiny = np.finfo(dtype).smallest_subnormal
        v[:6] = [0.0, -0.0, tiny, -tiny * 3, np.finfo(dtype).max / 4, -1.5]
        v = RNG.permutation(v)
    return v.reshape(shape)


def views(a):
    """The array itself and views of it: transposed, reversed (negative strides), every
    other element, a broadcast dim (stride 0)."""
    yield "dense", a
    if a.ndim >= 2:
        yield "transposed", a.T
        yield "reversed", a[::-1, ::-1]
        yield "strided", a[::2, 1::2]
        yield "broadcast", np.broadcast_to(a[:, :1], a.shape)
    else:
        yield "reversed", a[::-1]
        yield "strided", a[::3]


def slices(x, axes):
    """Each output element's slice, as a flat list in logical (row-major) order."""
    keep = [d for d in range(x.ndim) if d not in axes]
    moved = np.moveaxis(x, list(axes), list(range(x.ndim - len(axes), x.ndim)))
    out_shape = tuple(x.shape[d] for d in keep)
    flat = moved.reshape(out_shape + (-1,))
    return out_shape, [flat[idx] for idx in np.ndindex(out_shape)] if out_shape else [flat]


def wrap(v, dtype):
    bits = np.iinfo(dtype).bits
    v &= (1 << bits) - 1
    if np.iinfo(dtype).min < 0 and v >> (bits - 1):
        v -= 1 << bits
    return v


def want_sum(s, dtype):
    if dtype in INTS:
        return wrap(sum(int(e) for e in s), "int64")  # numpy's int64 (uint32: tilec's int64)
    f = [float(e) for e in s]
    if any(math.isnan(e) for e in f) or (math.inf in f and -math.inf in f):
        return math.nan
    if math.inf in f or -math.inf in f:
        return math.inf if math.inf in f else -math.inf
    return math.fsum(f)


def close(got, want, scale, tol):
    got, want = float(got), float(want)
    if math.isnan(want):
        return math.isnan(got)
    if math.isinf(want):
        return got == want
    return abs(got - want) <= tol * max(scale, 1e-300) + 1e-300


AXES = [None, 0, 1, (0, 1), -1]


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("axis", AXES)
def test_sum_every_view(dtype, axis):
    a = data(dtype, (7, 33))
    for name, x in views(a):
        axes = tuple(range(x.ndim)) if axis is None else tuple(
            sorted(d % x.ndim for d in (axis if isinstance(axis, tuple) else (axis,))))
        got = tilec.sum(x, axis=axis)
        oshape, sl = slices(x, axes)
        assert got.shape == oshape and got.dtype == np.sum(x, axis=axis).dtype.name.replace(
            "uint64", "int64"), name  # numpy's dtype rule (a uint32 sum: tilec's int64)
        for g, s in zip(np.ravel(got), sl):
            w = want_sum(s, dtype)
            if dtype in INTS:
                assert int(g) == w, (name, axes)
            else:
                scale = math.fsum(abs(float(e)) for e in s if math.isfinite(float(e)))
                assert close(g, w, scale, TOL[dtype]), (name, axes, g, w)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_compare_ops_exact(dtype, op):
    a = data(dtype, (5, 19))
    if dtype in FLOATS:
        a[1, 3] = np.nan
        a[2, 4] = np.inf
        a[3, 5] = -np.inf
    for name, x in views(a):
        for axis in (0, 1, None):
            got = getattr(tilec, op)(x, axis=axis)
            want = getattr(np, op)(x, axis=axis)  # numpy: NaN propagates; the first index
            assert got.shape == np.shape(want), (name, axis)
            if op.startswith("arg"):
                assert got.dtype == np.int64
                assert np.array_equal(got, want), (name, axis, got, want)
            else:
                assert np.array_equal(got, want, equal_nan=dtype in FLOATS), (name, axis)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_ignore(dtype):
    a = data(dtype, (4, 9), special=False)
    a[0, ::2] = np.nan
    a[2, 5] = np.nan
    ops = [("nanmax", np.nanmax), ("nanmin", np.nanmin), ("nanargmax", np.nanargmax), ("nanargmin", np.nanargmin)]
    for op, ref in ops:
        got = getattr(tilec, op)(a, axis=1)
        assert np.array_equal(got, ref(a, axis=1)), op


@pytest.mark.parametrize("dtype", INTS)
def test_nan_spellings_of_integers_are_the_plain_ops(dtype):
    """An integer holds no NaN: nanmax, nanmin, nanargmax, nanargmin (and nanaminmax,
    nan="ignore") of integers give numpy's plain answers in numpy's dtypes (once a
    ValueError), on the extremes, every axis and a strided view; the additive nan
    spellings give numpy's too."""
    a = data(dtype, (5, 8))
    for x in (a, a[::-1, ::3]):
        for axis in (None, 0, 1, (0, 1)):
            for keepdims in (False, True):
                kw = dict(axis=axis, keepdims=keepdims)
                for name in ("nanmax", "nanmin", "nansum", "nanmean", "nanvar"):
                    got, want = getattr(tilec, name)(x, **kw), getattr(np, name)(x, **kw)
                    if name == "nansum":  # numpy's uint64 of a uint32: tilec's int64 (docs)
                        want = want.astype(np.int64)
                    assert got.dtype == want.dtype and got.shape == want.shape, (name, kw)
                    assert np.allclose(got, want, rtol=1e-9, atol=0) if name in ("nanmean", "nanvar") \
                        else np.array_equal(got, want), (name, kw, got, want)  # float64: its order
                lo, hi = tilec.nanaminmax(x, **kw)
                assert np.array_equal(lo, np.min(x, **kw)) and np.array_equal(hi, np.max(x, **kw))
                assert lo.dtype == hi.dtype == x.dtype
                assert np.array_equal(tilec.reduce(x, "max", nan="ignore", **kw), np.max(x, **kw))
            if isinstance(axis, tuple):
                continue
            for name in ("nanargmax", "nanargmin"):
                got, want = getattr(tilec, name)(x, axis=axis), getattr(np, name)(x, axis=axis)
                assert got.dtype == np.int64 and np.array_equal(got, want), (name, axis)
                i32 = getattr(tilec, name)(x, axis=axis, index_dtype="int32")
                assert i32.dtype == np.int32 and np.array_equal(i32, want), (name, axis)


def test_nan_spellings_of_dtypes_tilec_does_not_reduce_say_what_the_plain_ones_say():
    for dt in ("bool", "int8", "uint8", "int16", "uint16", "uint64"):
        x = np.arange(6).reshape(2, 3).astype(dt)
        for name in ("max", "min", "argmax", "argmin", "aminmax"):
            with pytest.raises(TypeError) as plain:
                getattr(tilec, name)(x, axis=1)
            with pytest.raises(TypeError) as nan:
                getattr(tilec, "nan" + name)(x, axis=1)
            assert str(nan.value) == str(plain.value) and dt in str(nan.value)


def test_nan_ignore_refused_where_meaningless():
    with pytest.raises(ValueError, match="ops that compare"):
        tilec.reduce(np.arange(4, dtype=np.int32), "sum", nan="ignore")
    with pytest.raises(ValueError, match="ops that compare"):
        tilec.reduce(np.ones(4, np.float32), "sum", nan="ignore")
    with pytest.raises(TypeError, match="takes no nan"):
        tilec.nanmax(np.ones(4, np.float32), nan="propagate")


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_ops_against_f64(dtype):
    a = data(dtype, (6, 21), special=False)
    x = a.astype(np.float64)
    n = a.shape[1]
    for op, want in [
            ("sumsq", [math.fsum(float(e) ** 2 for e in r) for r in x]),
            ("norm2", [math.sqrt(math.fsum(float(e) ** 2 for e in r)) for r in x]),
            ("mean", [math.fsum(r) / n for r in x]),
            ("logsumexp", [max(r) + math.log(math.fsum(math.exp(e - max(r)) for e in r)) for r in x])]:
        got = tilec.reduce(a, op, axis=1)
        for g, w, r in zip(got, want, x):
            scale = {"sumsq": w, "norm2": w, "mean": math.fsum(abs(r)) / n, "logsumexp": abs(w) + 1}[op]
            assert close(g, w, scale, TOL[dtype] * 4), (op, g, w)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ddof", [0, 1, 5])
def test_var_std(dtype, ddof):
    a = (data(dtype, (5, 17), special=False) + 1e4).astype(dtype)  # an offset: the one-pass
    x = a.astype(np.float64)                                     # formula would cancel
    for op in ("var", "std"):
        got = getattr(tilec, op)(a, axis=1, ddof=ddof)
        want = getattr(np, op)(x, axis=1, ddof=ddof)
        assert np.allclose(got, want, rtol=TOL[dtype] * 10, atol=0), (op, got, want)
    # reduce() and var_mean take numpy's ddof=0 too (tilec.torch has torch's correction=1)
    assert np.allclose(tilec.reduce(a, "var", axis=1), np.var(x, axis=1), rtol=1e-5)
    assert np.array_equal(tilec.var_mean(a, axis=1)[0], tilec.var(a, axis=1))
    with pytest.raises(ValueError, match="correction"):
        tilec.var(a, correction=-1)
    with pytest.raises(TypeError, match="not both"):
        tilec.var(a, ddof=1, correction=1)


@pytest.mark.parametrize("dtype", INTS)
def test_integer_prod_wraps(dtype):
    a = data(dtype, (3, 11))
    got = tilec.prod(a, axis=1)  # numpy's rule: int64, wrapping there
    assert got.dtype == np.int64
    narrow = tilec.prod(a, axis=1, dtype=dtype)  # asked for: the input's dtype, wrapping there
    assert narrow.dtype == dtype
    for g, n, r in zip(got, narrow, a):
        p = 1
        for e in r:
            p *= int(e)
        assert int(g) == wrap(p, "int64") and int(n) == wrap(p, dtype)


def test_aminmax_and_indices():
    a = data("float32", (4, 13))
    lo, hi = tilec.aminmax(a, axis=1)
    assert np.array_equal(lo, a.min(1)) and np.array_equal(hi, a.max(1))
    i32 = tilec.argmax(a, axis=0, index_dtype="int32")
    assert i32.dtype == np.int32 and np.array_equal(i32, a.argmax(0))
    # the index over several axes: the flat offset in the reduced dims, row-major
    b = data("int32", (3, 4, 5))
    got = tilec.argmin(b, axis=(0, 2))
    want = [int(np.argmin(b[:, j, :].ravel())) for j in range(4)]
    assert list(got) == want


def test_widen_keepdims_out():
    a = np.full((3, 1000), 2**30, dtype=np.int32)
    assert tilec.sum(a, axis=1, dtype=np.int32)[0] == wrap(1000 * 2**30, "int32")
    wide = tilec.sum(a, axis=1)  # numpy's int64
    assert wide.dtype == np.int64 and list(wide) == [1000 * 2**30] * 3
    k = tilec.sum(a, axis=1, keepdims=True)
    assert k.shape == (3, 1)
    out = np.empty(3, np.int64)
    assert tilec.sum(a, axis=1, out=out) is out
    with pytest.raises(ValueError, match="shape"):
        tilec.sum(a, axis=1, out=np.empty(4, np.int64))
    with pytest.raises(TypeError, match="wide"):
        tilec.sum(a, dtype=np.float64)
    h = np.full(5000, 1.0, np.float16)
    assert tilec.sum(h, dtype="float32") == 5000.0  # f16 rounding would stop at 4096


def test_zero_dim_and_empty():
    z = tilec.sum(np.float64(2.5))
    assert z.shape == () and z == 2.5  # numpy's answer for a 0-d input, keepdims or not
    assert tilec.max(np.float32(-1.5), keepdims=True).shape == ()
    assert tilec.sum(np.ones((3, 4), np.int32), axis=[0, 1]) == 12  # a list of axes
    assert tilec.sum(np.zeros((0, 3), np.float32), axis=0).tolist() == [0.0] * 3
    assert np.isnan(tilec.mean(np.zeros((3, 0), np.float32), axis=1)).all()
    with pytest.raises(tilec.Error) as e:
        tilec.max(np.zeros((3, 0), np.float32), axis=1)
    assert e.value.status == "TILEC_ERR_INVALID_ARG" and "empty" in e.value.diagnostics


def test_bad_arguments():
    a = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="out of range"):
        tilec.sum(a, axis=2)
    with pytest.raises(ValueError, match="twice"):
        tilec.sum(a, axis=(1, -1))
    with pytest.raises(TypeError, match="cast"):
        tilec.sum(np.ones(3, np.int8))
    with pytest.raises(ValueError, match="unknown op"):
        tilec.reduce(a, "median")
    with pytest.raises(TypeError, match="dtype=int64 for a float64 input"):
        tilec.reduce(np.ones(3, np.int32), "norm2", dtype=np.int64)  # reduced as float64


def test_every_op_has_a_spelling():
    for op in tilec.OPS:
        assert callable(getattr(tilec, op)), op


EXAMPLE = open(os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                            "row_sum.tile")).read()


def test_tile_text_tools():
    canon = tilec.fmt(EXAMPLE)
    assert tilec.fmt(canon) == canon
    tilec.check(canon)
    assert "row_sum" in tilec.explain(canon)
    with pytest.raises(tilec.Error) as e:
        tilec.check("kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
                    "  cta.sum(B, A, axes=(5), accum=false)\n}\n", file="bad.tile")
    assert e.value.status == "TILEC_ERR_VERIFY"
    assert "bad.tile:2:" in e.value.diagnostics
    try:
        src = tilec.emit(canon, target="cuda", arch="sm_90")
        assert '__global__' in src and "row_sum" in src
        cubin = tilec.compile(canon, target="cuda", arch="sm_90")
        assert cubin[:4] == b"\x7fELF"
    except tilec.Error as err:
        if err.status != "TILEC_ERR_UNAVAILABLE":
            raise
        pytest.skip("NVRTC is not installed here: %s" % err)


def test_the_example_runs():
    import subprocess
    import sys
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    r = subprocess.run([sys.executable, os.path.join(root, "examples", "reduce.py")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "row maxima: [-7. -1.  5. 11.]" in r.stdout
    assert "row_sum.tile's kernel: [ 28.  92. 156. 220.]" in r.stdout  # 0+1+...+7, 8+...+15, ...


def test_byte_order_masks_and_rank():
    x = np.arange(-12, 12, dtype=np.float32).reshape(4, 6)
    assert tilec.sum(x.astype(">f4")) == -12.0  # big-endian data read as numbers, not bytes
    assert np.array_equal(tilec.max(x.astype(">f4"), axis=1), [-7, -1, 5, 11])
    assert tilec.sum(np.arange(10, dtype=">i4")) == 45
    with pytest.raises(TypeError, match="mask"):
        tilec.sum(np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0]))
    with pytest.raises(ValueError, match="up to 8"):
        tilec.sum(np.ones((1,) * 9, np.float32))


def test_arguments_checked_whatever_was_cached():
    y = np.ones((4, 6), np.float32)
    for bad in (True, 1.0, "1"):
        tilec.sum(y, axis=1)  # a plan for axis=1 in the cache: True == 1.0 == 1 must not find it
        with pytest.raises(TypeError, match="axis must be an int"):
            tilec.sum(y, axis=bad)
    tilec.var(y, correction=1)
    with pytest.raises(TypeError, match="correction must be an int"):
        tilec.var(y, correction=1.0)
    with pytest.raises(ValueError, match="2\\^63"):
        tilec.var(y, ddof=2**64)  # would wrap to 0 in 64 bits
    assert np.isinf(tilec.var(np.array([1, 2, 3, 10], np.float32), ddof=2**63 - 1)) or \
        np.isnan(tilec.var(np.array([1, 2, 3, 10], np.float32), ddof=2**63 - 1))
    with pytest.raises(TypeError, match="applies to argmax"):
        tilec.aminmax(y, index_dtype="int32")
    with pytest.raises(TypeError):
        tilec.max(y, 1, np.empty(4))  # numpy's max takes out third; here out is keyword-only


def test_dtype_spellings():
    y = np.arange(6, dtype=np.float32)
    for d in ("f8", "<f8", "float64", np.float64, np.dtype("float64")):
        assert tilec.sum(y, dtype=d).dtype == np.float64, d
    assert tilec.argmax(y, index_dtype=np.int32).dtype == np.int32


def test_package_speaks_the_headers_version():
    header = open(os.path.join(os.path.dirname(__file__), "..", "..", "include", "tilec.h")).read()
    import re
    major = re.search(r"#define TILEC_VERSION_MAJOR (\d+)", header).group(1)
    minor = re.search(r"#define TILEC_VERSION_MINOR (\d+)", header).group(1)
    assert tilec._ABI == "%s.%s" % (major, minor)
    assert tilec.version().startswith(tilec._ABI + ".")


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_wide_compare_ops(dtype):
    """argmax, argmin, aminmax of 64-bit values (128-bit keys): the i64 extremes and values
    that differ only in their low 32 bits (an f64 cannot tell 2^53 + 1 from 2^53), rows
    long enough for several CTAs."""
    a = data(dtype, (3, 5000), special=False)
    if dtype == "int64":
        a[0, 100:104] = [2 ** 53 + 1, 2 ** 53, (7 << 32) + 1, 2 ** 63 - 1]
        a[1, 4000:4002] = [-2 ** 63, -2 ** 63]
    else:
        a[0, 4999] = np.nextafter(a[0].max(), np.inf)  # one ulp above the rest, last
        a[2, 7] = np.nan
    for axis in (0, 1, None):
        assert np.array_equal(tilec.argmax(a, axis=axis), np.argmax(a, axis=axis)), axis
        assert np.array_equal(tilec.argmin(a, axis=axis), np.argmin(a, axis=axis)), axis
        lo, hi = tilec.aminmax(a, axis=axis)
        assert lo.dtype == a.dtype and hi.dtype == a.dtype
        assert np.array_equal(lo, np.min(a, axis=axis), equal_nan=dtype == "float64"), axis
        assert np.array_equal(hi, np.max(a, axis=axis), equal_nan=dtype == "float64"), axis
