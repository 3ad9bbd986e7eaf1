"""The package's namespace follows numpy's conventions (tilec.torch has torch's): numpy itself
is the oracle for the dtype of integer reductions (sum, prod and sumsq of int32 give int64;
mean, var, std, norm2 and logsumexp of integers give float64), for ddof=0 on every spelling
(var, std, reduce, var_mean, std_mean, segment_reduce), and for the nan spellings numpy users
reach for (nansum, nanprod, nanmean, nanvar, nanstd: all-NaN slices, empty axes, ±inf, ±0,
odd lengths, and numpy's RuntimeWarning where numpy warns). Each reduction is called twice,
so that on the compiled core the second call is the one its plan cache serves."""
import warnings

import numpy as np
import pytest

import tilec

RNG = np.random.default_rng(61)
I32 = np.iinfo(np.int32)
U32 = np.iinfo(np.uint32)
I64 = np.iinfo(np.int64)


def twice(fn, *args, **kw):
    """fn's answer, the same on its first (planned) and second (cached) call."""
    a = fn(*args, **kw)
    b = fn(*args, **kw)
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
    return a


def ints(dtype, shape):
    info = np.iinfo(dtype)
    a = RNG.integers(-1000, 1000, shape).astype(np.int64)
    a.flat[::7] = info.max
    a.flat[3::11] = info.min if info.min < 0 else 0
    if info.min >= 0:
        a = np.abs(a)
    return a.astype(dtype)


# ---- integer inputs: numpy's result dtypes ---------------------------------------------------

@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_integer_sums_are_int64(dtype, axis):
    a = ints(dtype, (5, 13))
    for name, want in (("sum", np.sum(a, axis=axis)), ("prod", np.prod(a, axis=axis)),
                       ("sumsq", np.sum(a.astype(np.int64) * a.astype(np.int64), axis=axis))):
        want = np.asarray(want).astype(np.int64)  # numpy's uint64 of a uint32: tilec's int64
        for fn in (getattr(tilec, name), lambda x, axis: tilec.reduce(x, name, axis=axis)):
            got = twice(fn, a, axis=axis)
            assert got.dtype == np.int64 and got.shape == want.shape, (name, got.dtype)
            assert np.array_equal(got, want), (name, got, want)
        # dtype= the input's: its own wrapping, as numpy's np.sum(x, dtype=np.int32)
        narrow = getattr(tilec, name)(a, axis=axis, dtype=dtype)
        assert narrow.dtype == dtype and np.array_equal(narrow, want.astype(dtype))


def test_int32_extremes_do_not_wrap():
    a = np.array([I32.max] * 3 + [1], np.int32)
    assert twice(tilec.sum, a) == np.sum(a) == 3 * I32.max + 1
    b = np.array([I32.min, I32.min, -1], np.int32)
    assert twice(tilec.sum, b) == np.sum(b)
    assert twice(tilec.prod, np.array([65536, 65536, 3], np.int32)) == 3 * 2**32
    u = np.array([U32.max, U32.max], np.uint32)
    assert twice(tilec.sum, u) == 2 * U32.max
    e = np.zeros((3, 0), np.int32)
    assert np.array_equal(twice(tilec.sum, e, axis=1), np.sum(e, axis=1))  # empty: 0, int64
    assert twice(tilec.prod, e, axis=1).tolist() == [1, 1, 1]
    assert twice(tilec.sum, np.int32(7)).dtype == np.int64  # 0-d
    assert tilec.segment_reduce(a, [0, 3, 4], "sum").tolist() == [3 * I32.max, 1]


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_integer_means_are_float64(dtype, axis):
    a = ints(dtype, (4, 11)) if dtype != "int64" else RNG.integers(-10**6, 10**6, (4, 11))
    x = a.astype(np.float64)
    for name, want in (("mean", np.mean(a, axis=axis)), ("var", np.var(a, axis=axis)),
                       ("std", np.std(a, axis=axis)),
                       ("norm2", np.sqrt(np.sum(x * x, axis=axis))),
                       ("logsumexp", np.log(np.sum(np.exp(x - x.max()), axis=axis)) + x.max()
                        if axis is None else None)):
        got = twice(getattr(tilec, name), a, axis=axis)
        assert got.dtype == np.float64, (name, got.dtype)
        assert np.array_equal(got, twice(tilec.reduce, a, name, axis=axis))
        if want is not None:
            assert np.allclose(got, want, rtol=1e-12, atol=0), (name, got, want)
    m32 = tilec.mean(a, axis=axis, dtype=np.float32)  # numpy: computed in the dtype asked for
    assert m32.dtype == np.float32 and np.allclose(m32, np.mean(a, axis=axis), rtol=1e-5,
                                                   atol=1e-6 * float(np.abs(x).max()))
    v, m = twice(tilec.var_mean, a, axis=axis)
    assert v.dtype == m.dtype == np.float64
    assert np.allclose(v, np.var(a, axis=axis), rtol=1e-12) and np.allclose(
        m, np.mean(a, axis=axis), rtol=1e-12)


def test_integer_mean_of_segments():
    a = np.array([3, 4, I32.max, I32.max, -7], np.int32)
    got = tilec.segment_reduce(a, [0, 2, 4, 5], "mean")
    assert got.dtype == np.float64
    assert got.tolist() == [np.mean(a[:2]), np.mean(a[2:4]), -7.0]


# ---- ddof: numpy's 0 on every spelling -------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ddof_zero_everywhere(dtype):
    a = (RNG.standard_normal((6, 9)) * 5 + 100).astype(dtype)
    want = np.var(a.astype(np.float64), axis=1)
    tol = 1e-5 if dtype == "float32" else 1e-12
    v = twice(tilec.var, a, axis=1)
    assert np.allclose(v, want, rtol=tol)
    for got in (twice(tilec.reduce, a, "var", axis=1), twice(tilec.var_mean, a, axis=1)[0],
                tilec.segment_reduce(a, [0, 9], "var", axis=1)[:, 0]):
        assert got.tobytes() == v.tobytes()
    s = twice(tilec.std, a, axis=1)
    for got in (twice(tilec.reduce, a, "std", axis=1), twice(tilec.std_mean, a, axis=1)[0]):
        assert got.tobytes() == s.tobytes()
    one = np.var(a.astype(np.float64), axis=1, ddof=1)
    for got in (tilec.var(a, axis=1, ddof=1), tilec.reduce(a, "var", axis=1, correction=1),
                tilec.var_mean(a, axis=1, correction=1)[0],
                tilec.segment_reduce(a, [0, 9], "var", axis=1, correction=1)[:, 0]):
        assert np.allclose(got, one, rtol=tol)
    # one element: 0 with ddof 0; NaN where n - ddof <= 0, as numpy's (which warns)
    assert (tilec.var(a[:, :1], axis=1) == 0).all()
    assert np.isnan(numpy_quiet(np.var, a[:, :1], axis=1, ddof=1)).all()
    assert np.isnan(tilec.var(a[:, :1], axis=1, ddof=1)).all()


# ---- the nan spellings: numpy's results ------------------------------------------------------

NAN_FUNCS = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd"]


def specials(dtype, shape):
    a = RNG.standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    flat[::5] = np.nan
    flat[1::13] = np.inf
    flat[2::17] = -np.inf
    flat[3::7] = -0.0
    flat[4::11] = 0.0
    return a


def same(got, want, dtype, name):
    assert got.shape == np.shape(want), (name, got.shape, np.shape(want))
    assert got.dtype == np.asarray(want).dtype, (name, got.dtype, np.asarray(want).dtype)
    tol = {"float16": 2e-2, "float32": 2e-5, "float64": 1e-12}[str(np.dtype(dtype))]
    assert np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True), (name, got, want)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (name, got, want)


def numpy_quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kw)


@pytest.mark.parametrize("name", NAN_FUNCS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
def test_nan_spellings_against_numpy(name, dtype, axis):
    a = specials(dtype, (3, 7, 5))  # odd lengths
    a[1, :, :] = np.nan  # all-NaN slices along every axis that crosses it
    if name == "nanprod":  # factors near 1, so the products stay finite
        with np.errstate(invalid="ignore"):
            a = np.where(np.isfinite(a), np.sign(a) * (np.abs(a) % 2 + 0.5), a).astype(dtype)
    for keepdims in (False, True):
        want = numpy_quiet(getattr(np, name), a, axis=axis, keepdims=keepdims)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got = getattr(tilec, name)(a, axis=axis, keepdims=keepdims)
            again = getattr(tilec, name)(a, axis=axis, keepdims=keepdims)
        same(got, want, dtype, name)
        assert got.tobytes() == again.tobytes()


@pytest.mark.parametrize("name", NAN_FUNCS)
def test_nan_spellings_all_nan_and_empty(name):
    a = np.full((4, 3), np.nan, np.float64)
    e = np.zeros((2, 0), np.float32)
    warns = name in ("nanmean", "nanvar", "nanstd")
    for x, axis in ((a, None), (a, 0), (a, 1), (e, 1), (e, None), (np.float64(np.nan), None)):
        want = numpy_quiet(getattr(np, name), x, axis=axis)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = getattr(tilec, name)(x, axis=axis)
        same(np.asarray(got), want, x.dtype, name)
        mine = [str(m.message) for m in w if issubclass(m.category, RuntimeWarning)]
        if warns:  # numpy's warning, once, and no other
            assert mine in (["Mean of empty slice"], ["Degrees of freedom <= 0 for slice."]), mine
            assert w[0].filename == __file__  # pointed at the caller's line, as numpy's
        else:
            assert mine == [], mine
    r = float(numpy_quiet(getattr(tilec, name), a))  # numpy's values: 0, 1, NaN
    assert r == 0.0 if name == "nansum" else r == 1.0 if name == "nanprod" else np.isnan(r)


def test_nan_spellings_no_warning_without_an_empty_slice():
    a = specials("float64", (4, 9))
    a[:, 0] = 1.0  # every row has a number
    for name in NAN_FUNCS:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            getattr(tilec, name)(a, axis=1)


def test_nan_spellings_ddof_dtype_out_and_signed_zero():
    a = specials("float32", (5, 8))
    a[2, :7] = np.nan  # one number left: ddof=1 gives NaN there
    for name in ("nanvar", "nanstd"):
        for ddof in (0, 1, 3):
            want = numpy_quiet(getattr(np, name), a, axis=1, ddof=ddof)
            got = numpy_quiet(getattr(tilec, name), a, axis=1, ddof=ddof)
            same(got, want, "float32", name)
            assert np.array_equal(numpy_quiet(getattr(tilec, name), a, axis=1, correction=ddof),
                                  got, equal_nan=True)
        with pytest.raises(TypeError, match="not both"):
            getattr(tilec, name)(a, ddof=1, correction=1)
        with pytest.raises(TypeError, match="unexpected keyword"):
            getattr(tilec, name)(a, nan="ignore")
    wide = tilec.nansum(a, axis=1, dtype=np.float64)
    assert wide.dtype == np.float64
    same(wide, numpy_quiet(np.nansum, a, axis=1, dtype=np.float64), "float64", "nansum")
    out = np.empty(5, np.float32)
    assert numpy_quiet(tilec.nanmean, a, axis=1, out=out) is out
    same(out, numpy_quiet(np.nanmean, a, axis=1), "float32", "nanmean")
    z = np.array([-0.0, np.nan, -0.0])
    assert np.signbit(tilec.nanprod(z)) == np.signbit(np.nanprod(z))  # (-0) * 1 * (-0) = +0
    assert tilec.nansum(z) == 0.0 and tilec.nanmax(z) == 0.0


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64"])
def test_nan_spellings_of_integers_are_the_plain_ones(dtype):
    a = ints(dtype, (3, 7))
    for name in NAN_FUNCS:
        want = getattr(np, name)(a, axis=1)
        got = getattr(tilec, name)(a, axis=1)
        want = np.asarray(want).astype(np.int64) if np.asarray(want).dtype == np.uint64 else want
        assert got.dtype == np.asarray(want).dtype, (name, got.dtype)
        scale = 1e-12 * float(np.abs(a.astype(np.float64)).max()) * a.shape[1]  # cancellation
        assert np.allclose(got, want, rtol=1e-12, atol=scale) if got.dtype.kind == "f" else \
            np.array_equal(got, want), (name, got, want)


def test_nan_spellings_in_the_namespace():
    for name in NAN_FUNCS:
        assert name in tilec.__all__ and callable(getattr(tilec, name))


@pytest.mark.parametrize("bad", [True, False, np.True_])
def test_bool_ddof_refused_by_the_nan_spellings(bad):
    a = np.arange(6, dtype=np.float32)
    for call in (lambda: tilec.nanvar(a, ddof=bad), lambda: tilec.nanstd(a, correction=bad)):
        with pytest.raises(TypeError, match="must be an int, not"):
            call()
