"""The package's contract beyond the numerics (test_numpy.py): arguments checked before any
work and before ctypes could wrap them, out= in every form on every path, the errors and
warnings it raises, its namespace, var_mean, torch's names, where host arrays run (the
simulator, or a GPU: a fake HIP runtime stands for one, tests/fake_hip.c), run_kernel
against sums computed by numpy, and the .tile tools' names, defaults and text types.
"""
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import tilec
from conftest import LIB, run_py

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def example(name):
    with open(os.path.join(ROOT, "examples", name)) as f:
        return f.read()


ROW_SUM, COL_SUM = example("row_sum.tile"), example("col_sum.tile")
FAKE_HIP = os.path.join(os.path.dirname(os.path.abspath(LIB)), "tests", "libfake_hip6.so")
# no GPU for AUTO, wherever the suite runs: CUDA without NVRTC and HIP without a runtime are
# unusable, so AUTO takes the simulator
NO_GPU = {"TILEC_NVRTC_PATH": "/nonexistent/libnvrtc.so", "TILEC_HIP_PATH": "/nonexistent/libamdhip64.so"}


# ---- integers that ctypes would wrap -------------------------------------------------------

def test_integers_are_range_checked():
    for bad in (2**32 + 64, 2**64, 2**31 + 32, -(2**32) + 32, 48, -32):
        for call in (lambda: tilec.explain(ROW_SUM, warp_size=bad),
                     lambda: tilec.check(ROW_SUM, warp_size=bad),
                     lambda: tilec.emit(ROW_SUM, warp_size=bad)):
            with pytest.raises(ValueError, match="warp_size must be 0 .*, 32 or 64, not %d" % bad):
                call()
    for bad in (True, np.bool_(True), 64.0, "64"):
        with pytest.raises(TypeError, match="warp_size must be an int"):
            tilec.check(ROW_SUM, warp_size=bad)
    assert "warp size 64" in tilec.explain(ROW_SUM, target="sim", warp_size=np.int64(64))
    y = np.ones((4, 6), np.float32)
    with pytest.raises(ValueError, match="2\\^63"):
        tilec.var(y, ddof=2**63)
    with pytest.raises(TypeError, match="correction must be an int"):
        tilec.var(y, ddof=np.bool_(True))
    with pytest.raises(np.AxisError):
        tilec.sum(y, axis=2**32)  # would be axis 0 in a C int
    with pytest.raises(ValueError, match="NUL"):
        tilec.check(ROW_SUM, file="a\0b")
    with pytest.raises(ValueError, match="NUL"):
        tilec.emit(ROW_SUM, arch="sm_90\0x")


# ---- out= (defect 10) --------------------------------------------------------------------------

A = np.array([[3, 9, -1, 9], [0, -5, 2, 7], [4, 4, 4, -8]], np.float32)


def test_out_forms():
    vals, idx = np.full(3, 99, np.float32), np.full(3, 99, np.int64)
    r = tilec.argmax(A, axis=1, out=(vals, idx))  # the GPU path took the pair; numpy's now too
    assert r is idx and idx.tolist() == [1, 3, 0] and vals.tolist() == [9, 7, 4]
    for form in (lambda i: [i], lambda i: (i,), lambda i: i):
        i = np.full(3, 99, np.int64)
        assert tilec.argmin(A, axis=1, out=form(i)) is i and i.tolist() == [2, 1, 3]
    lo, hi = np.empty(3, np.float32), np.empty(3, np.float32)
    got = tilec.aminmax(A, axis=1, out=[lo, hi])
    assert got[0] is lo and got[1] is hi and lo.tolist() == [-1, -5, -8] and hi.tolist() == [9, 7, 4]
    s = np.empty((), np.float32)
    assert tilec.sum(A, out=(s,)) is s and s == A.sum()


def test_out_checked_before_any_work():
    lo = np.full(3, 42, np.float32)
    for bad_hi in (np.empty(4, np.float32), np.empty(3, np.float64), [0.0, 0.0, 0.0],
                   np.empty((3, 1), np.float32)):
        with pytest.raises((ValueError, TypeError)):
            tilec.aminmax(A, axis=1, out=(lo, bad_hi))
        assert lo.tolist() == [42, 42, 42]  # the first out was not written
    ro = np.empty(3, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tilec.aminmax(A, axis=1, out=(lo, ro))
    with pytest.raises(ValueError, match="twice"):
        tilec.aminmax(A, axis=1, out=(lo, lo))
    both = np.empty(6, np.float32)
    with pytest.raises(ValueError, match="overlap"):
        tilec.aminmax(A, axis=1, out=(both[:3], both[2:5]))
    assert tilec.aminmax(A, axis=1, out=(both[0::2], both[1::2]))[1] is not None  # apart: fine
    with pytest.raises(TypeError, match="returns 1 result; out= gives 2"):
        tilec.sum(A, axis=1, out=(lo, lo.copy()))
    with pytest.raises(TypeError, match="values and the indices"):
        tilec.argmax(A, axis=1, out=(lo, lo.copy(), lo.copy()))
    with pytest.raises(TypeError, match="numpy array"):
        tilec.sum(A, axis=1, out=([1.0, 2.0, 3.0],))
    with pytest.raises(TypeError, match="not both"):
        tilec.sum(A, axis=1, dim=0)
    with pytest.raises(TypeError, match=r"tilec writes float32, or float64 \(the wide dtype\)"):
        tilec.sum(A, axis=1, dtype=np.float16)
    with pytest.raises(TypeError, match=r"tilec writes float64 \(it has no wider dtype\): leave dtype out"):
        tilec.argmax(A.astype(np.float64), axis=1, dtype=np.float32)
    assert lo.tolist() == [42, 42, 42]


# ---- axes, 0-d inputs and the .tile text's bytes (defect 11) -------------------------------------

def test_axis_bools_and_zero_d():
    y = np.ones((2, 3), np.float32)
    for bad in (True, np.bool_(True), np.bool_(False), [0, np.bool_(True)]):
        with pytest.raises(TypeError, match="axis must be an int"):
            tilec.sum(y, axis=bad)  # numpy: TypeError as well
    z = np.array(2.5, np.float32)
    for axis in (0, -1, (0,)):
        with pytest.raises(np.AxisError) as e:
            tilec.sum(z, axis=axis)
        assert isinstance(e.value, ValueError) and isinstance(e.value, IndexError)
    with pytest.raises(np.AxisError):
        tilec.var_mean(z, axis=0)
    assert tilec.sum(z) == 2.5 and tilec.argmax(z) == 0
    with pytest.raises(np.AxisError, match="out of range"):
        tilec.sum(y, axis=-3)


def test_text_in_is_text_out():
    src = ("# caf\xe9 in Latin-1, not UTF-8\n" + ROW_SUM).encode("latin-1")
    tilec.check(src)  # accepted, as before
    out = tilec.fmt(src)
    assert isinstance(out, bytes) and b"caf\xe9" in out
    assert tilec.fmt(out) == out
    s = src.decode("utf-8", "surrogateescape")  # what open(..., errors="surrogateescape") reads
    got = tilec.fmt(s)
    assert isinstance(got, str) and got.encode("utf-8", "surrogateescape") == out
    assert isinstance(tilec.explain(src), bytes) and isinstance(tilec.explain(s), str)
    try:
        assert isinstance(tilec.emit(src), bytes) and isinstance(tilec.emit(s), str)
    except tilec.Error as e:
        if e.status != "TILEC_ERR_UNAVAILABLE":
            raise


def test_a_library_that_is_not_tilec():
    code = """
try:
    import tilec
except ImportError as e:
    print("ImportError:", e)
"""
    e = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), TILEC_LIB="libm.so.6")
    r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "ImportError: tilec: libtilec.so not found" in r.stdout
    assert "libm.so.6 (loads, but is not libtilec" in r.stdout


# ---- Python habits -----------------------------------------------------------------------------

def test_namespace_version_and_errors():
    public = {n for n in dir(tilec) if not n.startswith("_")}
    assert public == set(tilec.__all__) and len(tilec.__all__) == len(set(tilec.__all__))
    assert not [n for n in public if isinstance(getattr(tilec, n), types.ModuleType)]
    for n in ("sum", "nanmax", "var_mean", "std_mean", "run_kernel", "amax", "Error",
              "ArgumentError", "SimulatorWarning", "OPS", "DTYPES", "explain"):
        assert n in public, n
    assert tilec.__version__ == tilec.version()
    import re
    with open(os.path.join(ROOT, "include", "tilec.h")) as f:
        header = f.read()
    assert tilec.__version__ == ".".join(
        re.search(r"#define TILEC_VERSION_%s (\d+)" % p, header).group(1)
        for p in ("MAJOR", "MINOR", "PATCH"))
    # numpy raises ValueError for the max of nothing: so does tilec, a tilec.Error as well
    with pytest.raises(ValueError) as e:
        tilec.max(np.zeros((3, 0), np.float32), axis=1)
    assert isinstance(e.value, tilec.ArgumentError) and isinstance(e.value, tilec.Error)
    assert e.value.status == "TILEC_ERR_INVALID_ARG" and "empty" in e.value.diagnostics
    with pytest.raises(ValueError) as e:
        tilec.check("kernel k(A: f32[4] global) threads=32 {\n  cta.bogus()\n}\n")
    assert e.value.status in ("TILEC_ERR_PARSE", "TILEC_ERR_VERIFY")
    assert issubclass(tilec.Error, Exception) and not issubclass(tilec.Error, ValueError)


def test_torch_names_and_dtype_spellings():
    y = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert np.array_equal(tilec.sum(y, dim=1, keepdim=True), y.sum(axis=1, keepdims=True))
    assert np.array_equal(tilec.reduce(y, "max", dim=(0, 2)), y.max(axis=(0, 2)))
    assert tilec.var_mean(y, dim=2, keepdim=True)[1].shape == (2, 3, 1)
    with pytest.raises(TypeError, match="axis or dim"):
        tilec.reduce(y, "sum", 1, dim=1)
    with pytest.raises(TypeError, match="keepdims or keepdim"):
        tilec.sum(y, axis=1, keepdims=True, keepdim=True)
    # keepdims as numpy takes it: bools and integers; a str, None or a float is a TypeError
    # (a truth value made keepdims="no" keep the axis)
    for k in (True, 1, np.bool_(True), np.int64(1)):
        assert tilec.sum(y, axis=1, keepdims=k).shape == y.sum(axis=1, keepdims=True).shape == (2, 1, 4)
    assert tilec.sum(y, axis=1, keepdims=0).shape == (2, 4)
    for k in ("no", None, 2.0):
        with pytest.raises(TypeError):
            y.sum(axis=1, keepdims=k)
        with pytest.raises(TypeError, match="keepdims must be True or False"):
            tilec.sum(y, axis=1, keepdims=k)
    with pytest.raises(TypeError, match="keepdims must be"):
        tilec.var_mean(y, axis=1, keepdims="yes")
    # keepdims given as False (or 0, np.False_) is still given: keepdim beside it is refused,
    # and keepdim's own errors name keepdim
    for k in (False, 0, np.False_):
        with pytest.raises(TypeError, match="keepdims or keepdim"):
            tilec.sum(y, axis=1, keepdims=k, keepdim=True)
    with pytest.raises(TypeError, match="keepdim must be True or False"):
        tilec.sum(y, axis=1, keepdim="no")
    assert tilec.sum(y, axis=1, keepdims=np.False_).shape == (2, 4)
    # the CLI's names (f32, bf16, i32...) and numpy's, both
    h = np.full(5000, 1.0, np.float16)
    assert tilec.sum(h, dtype="f32") == 5000.0 and tilec.sum(h, dtype="float32") == 5000.0
    assert tilec.sum(y, dtype="f64").dtype == np.float64
    assert tilec.argmax(y, axis=0, index_dtype="i32").dtype == np.int32
    with pytest.raises(TypeError, match="f16, bf16, f32"):
        tilec.sum(y, dtype="f128")


@pytest.mark.parametrize("fn,op", [("var_mean", "var"), ("std_mean", "std")])
def test_var_mean(fn, op):
    rng = np.random.default_rng(29)
    a = rng.standard_normal((5, 17)) * 3 + 1e3
    f = getattr(tilec, fn)
    v, m = f(a, axis=1)  # numpy's default, as tilec.var's: ddof 0
    assert np.allclose(v, getattr(np, op)(a, axis=1), rtol=1e-12)
    assert np.allclose(m, a.mean(axis=1), rtol=1e-14)
    v0, m0 = f(a, axis=1, ddof=1)
    assert np.allclose(v0, getattr(np, op)(a, axis=1, ddof=1), rtol=1e-12)
    assert np.array_equal(m0, m)
    assert np.allclose(f(a, correction=5)[0], getattr(np, op)(a, ddof=5), rtol=1e-12)
    ov, om = np.empty(5), np.empty(5)
    got = f(a, axis=1, out=(ov, om))
    assert got[0] is ov and got[1] is om and np.array_equal(ov, v) and np.array_equal(om, m)
    with pytest.raises(TypeError, match="returns 2 results"):
        f(a, axis=1, out=ov)
    with pytest.raises(TypeError, match="unexpected keyword"):
        f(a, axis=1, nan="ignore")
    k = f(a.astype(np.float32), axis=0, keepdims=True)
    assert k[0].shape == k[1].shape == (1, 17) and k[0].dtype == np.float32


# ---- where host arrays run ------------------------------------------------------------------------

def test_backend_argument(monkeypatch):
    y = np.arange(6, dtype=np.float32)
    assert tilec.sum(y, backend="sim") == 15
    with pytest.raises(ValueError, match="backend='gpu'; say one of auto, cuda, hip, sim"):
        tilec.sum(y, backend="gpu")
    monkeypatch.setenv("TILEC_BACKEND", "GPU")
    with pytest.raises(ValueError, match="TILEC_BACKEND='GPU'"):
        tilec.sum(y)
    assert tilec.sum(y, backend="sim") == 15  # the argument over the environment


def test_one_warning_when_the_simulator_is_chosen_for_you():
    code = """
import warnings, numpy as np, tilec
with open("examples/row_sum.tile") as f:
    ROW_SUM = f.read()
y = np.arange(8, dtype=np.float32).reshape(2, 4)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    tilec.sum(y, backend="sim")            # asked for: no warning
    print("asked", len(w))
    tilec.sum(y); tilec.max(y, axis=1); tilec.var_mean(y)
    tilec.run_kernel(ROW_SUM, np.ones((4, 8), np.float32), np.empty(4, np.float32))
print("auto", [(x.category.__name__, x.filename) for x in w if x.category is not ResourceWarning])
print("kind", tilec._context("auto").kind)
"""
    out = run_py(code, **NO_GPU)
    assert "asked 0" in out and "kind sim" in out
    assert "auto [('SimulatorWarning', '<string>')]" in out, out  # once, at the caller's line
    out = run_py(code, TILEC_BACKEND="sim", **NO_GPU)
    assert "auto []" in out, out  # the environment chose it: no warning


def test_numpy_on_a_gpu_through_the_backend_auto_picks():
    """A fake HIP device (tests/fake_hip.c: memory is the process's, a launch is counted but
    computes nothing): AUTO picks it, a numpy array is copied there, reduced by a kernel
    hiprtc compiled for it, copied back, and no simulator warning is given; the simulator,
    asked for in the same process, gives numpy's values."""
    if not os.path.exists(FAKE_HIP):
        pytest.skip("the fake HIP runtime (tests/fake_hip.c) is not built: cmocka is missing")
    try:
        tilec.compile(ROW_SUM, target="hip", arch="gfx90a")
    except tilec.Error as e:
        if e.status != "TILEC_ERR_UNAVAILABLE":
            raise
        pytest.skip("hiprtc is not installed here, so nothing is compiled for the fake GPU")
    out = run_py("""
import ctypes, os, warnings, numpy as np, tilec
fake = ctypes.CDLL(os.environ["TILEC_HIP_PATH"])  # the library's own handle of it
x = np.arange(300 * 37, dtype=np.float32).reshape(300, 37)
with warnings.catch_warnings():
    warnings.simplefilter("error")
    n = fake.fake_hip_launches()
    r = tilec.sum(x[:, ::-1], axis=1)
    print("kind", tilec._context("auto").kind, "launches", fake.fake_hip_launches() - n)
    print("result", r.shape, r.dtype)
    n = fake.fake_hip_launches()
    v, m = tilec.var_mean(x, axis=0)
    print("var_mean launches", fake.fake_hip_launches() - n)
    s = tilec.sum(x, axis=1, backend="sim")
    print("sim", np.array_equal(s, x.sum(axis=1)), fake.fake_hip_launches() - n)
    b = np.zeros(4, np.float32)
    n = fake.fake_hip_launches()
    with open("examples/row_sum.tile") as f:
        tilec.run_kernel(f.read(), np.ones((4, 8), np.float32), b)
    print("run_kernel launches", fake.fake_hip_launches() - n)
""", TILEC_HIP_PATH=FAKE_HIP, FAKE_HIP_ARCH="gfx90a", TILEC_NVRTC_PATH="/nonexistent/libnvrtc.so")
    assert "kind hip launches 1" in out, out
    assert "result (300,) float32" in out and "var_mean launches 2" in out
    assert "sim True 2" in out and "run_kernel launches 1" in out


# ---- run_kernel ------------------------------------------------------------------------------------

def test_run_kernel_on_numpy():
    rng = np.random.default_rng(3)
    a = rng.integers(-1000, 1000, size=(4, 8)).astype(np.float32)  # sums exact in f32
    b = np.full(4, np.nan, np.float32)
    assert tilec.run_kernel(ROW_SUM, a, b) is None
    assert np.array_equal(b, a.sum(axis=1))
    # any layout in, any layout back: a transposed input, every other element of an output
    t = np.ascontiguousarray(a.T).T
    out = np.full(8, -1.0, np.float32)
    tilec.run_kernel(ROW_SUM.encode(), t, out[::2], kernel="row_sum")
    assert np.array_equal(out[::2], a.sum(axis=1)) and (out[1::2] == -1).all()
    c = rng.integers(-50, 50, size=(96, 40)).astype(np.float32)
    d = np.empty(40, np.float32)
    c.flags.writeable = False  # read, not written: fine
    tilec.run_kernel(COL_SUM, c, d)
    assert np.array_equal(d, c.sum(axis=0))


def test_run_kernel_refusals():
    a, b = np.ones((4, 8), np.float32), np.full(4, 7.0, np.float32)
    with pytest.raises(TypeError, match="takes 2 arrays \\(A, B\\), not 1"):
        tilec.run_kernel(ROW_SUM, a)
    with pytest.raises(ValueError, match="parameter B has shape \\(4,\\); the array \\(5,\\)"):
        tilec.run_kernel(ROW_SUM, a, np.empty(5, np.float32))
    with pytest.raises(TypeError, match="parameter A is float32; the array is float64"):
        tilec.run_kernel(ROW_SUM, a.astype(np.float64), b)
    with pytest.raises(ValueError, match="no kernel 'rows'; it has row_sum"):
        tilec.run_kernel(ROW_SUM, a, b, kernel="rows")
    two = ROW_SUM + "func f(x: f32[4] shared) threads=32 {\n  cta.fill(x, 0.0)\n}\n"
    with pytest.raises(ValueError, match="2 kernels and funcs \\(row_sum, f\\); name the one"):
        tilec.run_kernel(two, a, b)
    with pytest.raises(ValueError, match="f is a func"):
        tilec.run_kernel(two, np.empty(4, np.float32), kernel="f")
    ro = np.full(4, 7.0, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writes parameter B, whose array is read-only; nothing was run"):
        tilec.run_kernel(ROW_SUM, a, ro)
    # told before anything runs, so even when the run would leave B as it is (B holds the
    # row sums of ones already: 8)
    same = np.full(4, 8.0, np.float32)
    same.flags.writeable = False
    with pytest.raises(ValueError, match="writes parameter B, whose array is read-only; nothing was run"):
        tilec.run_kernel(ROW_SUM, a, same)
    ra = np.ones((4, 8), np.float32)
    ra.flags.writeable = False  # A is only read: a read-only array is fine
    out = np.zeros(4, np.float32)
    tilec.run_kernel(ROW_SUM, ra, out)
    assert out.tolist() == [8.0] * 4
    with pytest.raises(tilec.ArgumentError) as e:
        tilec.run_kernel("kernel k(A: f32[4] global) threads=32 {\n  cta.copy(A A)\n}\n",
                         np.empty(4, np.float32), file="k.tile")
    assert "k.tile:2:" in e.value.diagnostics
    with pytest.raises(TypeError, match="numpy array"):
        tilec.run_kernel(ROW_SUM, [[1.0] * 8] * 4, b)
    assert b.tolist() == [7.0] * 4  # nothing was written by any of these


# ---- the .tile tools: the CLI's names and defaults ----------------------------------------------

def test_target_names_and_defaults():
    assert "target cuda sm_90" in tilec.explain(ROW_SUM)  # the CLI's default, not sim's
    assert "target sim" in tilec.explain(ROW_SUM, "sim")
    # the CLI's forms: short by default, the whole table with verbose (tilec explain --verbose)
    short, full = tilec.explain(ROW_SUM, "sim"), tilec.explain(ROW_SUM, "sim", verbose=True)
    assert "why:" in short and "why:" not in full and len(full) > len(short)
    assert "loop kernel" in tilec.explain(ROW_SUM, "sim", dump_loop=True)
    assert "loop kernel" not in short
    with pytest.warns(DeprecationWarning, match="backend= is now target="):
        assert "target sim" in tilec.explain(ROW_SUM, backend="sim")
    with pytest.raises(TypeError, match="not both"):
        tilec.explain(ROW_SUM, target="sim", backend="sim")
    with pytest.raises(ValueError, match="target='ptx'"):
        tilec.emit(ROW_SUM, target="ptx")
    try:
        assert "__global__" in tilec.emit(ROW_SUM, target="cuda")
        with pytest.warns(DeprecationWarning):
            assert tilec.emit(ROW_SUM, backend="hip") == tilec.emit(ROW_SUM, target="hip")
    except tilec.Error as e:
        if e.status != "TILEC_ERR_UNAVAILABLE":
            raise


# ---- the cost model's constants ------------------------------------------------------------------

def test_default_costs_are_the_documented_ones():
    # the table of docs/dispatch.md (its constants block), read here: not the library's numbers
    import re
    with open(os.path.join(ROOT, "docs", "dispatch.md")) as f:
        block = f.read().split("<!-- constants:begin -->")[1].split("<!-- constants:end -->")[0]
    doc = {m.group(1): float(m.group(2)) for m in re.finditer(r"^\| `(\w+)` \| ([0-9.]+) \|", block, re.M)}
    assert doc and set(doc) == set(tilec.COST_CONSTANTS)
    assert tilec.default_costs() == doc


def test_calibrate_needs_a_gpu():
    with pytest.raises(ValueError, match="the simulator has nothing to measure"):
        tilec.calibrate(backend="sim")
    with pytest.raises(ValueError):
        tilec.calibrate(device=-1)
    with pytest.raises(TypeError):
        tilec.calibrate(backend="cuda", save="yes")
    try:
        r = tilec.calibrate(save=False)
    except tilec.Error as e:  # no GPU here: said so, not crashed
        assert e.status == "TILEC_ERR_UNAVAILABLE"
        assert "GPU" in str(e)
        return
    # on a GPU: every constant measured, nothing saved, the file's text returned
    assert set(tilec.COST_CONSTANTS) <= set(r) and r["file"] is None
    assert all(0 < r[n] < 100000 for n in tilec.COST_CONSTANTS)
    assert r["text"].startswith("# The in-kernel cost model's constants")
