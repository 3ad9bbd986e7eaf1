"""The compiled core (python/tilec/_core.c, docs/python.md "The compiled core"): that the
limited-API module is what `import tilec` loaded when the suite runs on it
(TILEC_EXPECT_CORE=1, the meson test `python`) and not when it runs on the pure-Python path
(TILEC_PURE_PYTHON=1, the test `python-pure`); that a repeated call is served by it and
gives the bits the pure-Python path gives; that its plans survive threads and a clear; that a
call from a finalizer or signal handler inside a call is refused, never hung; that
the package falls back with one warning where the module cannot be loaded.

The rest of the suite (test_numpy.py, test_api.py) runs on whichever path loaded, so the
meson suite runs every check on both.
"""
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import conftest
import tilec
from conftest import LIB

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PURE = os.environ.get("TILEC_PURE_PYTHON", "") not in ("", "0")
needs_core = pytest.mark.skipif(tilec._CORE is None, reason="the compiled core is not loaded")

# CPython's stable ABI exports these with a leading underscore (the _SizeT calls of
# PY_SSIZE_T_CLEAN, Py_DECREF's _Py_Dealloc, the singletons); any other _Py name is private
STABLE_UNDERSCORED = {"_PyArg_ParseTuple_SizeT", "_PyArg_ParseTupleAndKeywords_SizeT",
                      "_PyObject_CallFunction_SizeT", "_PyObject_CallMethod_SizeT",
                      "_Py_BuildValue_SizeT", "_Py_Dealloc", "_Py_FalseStruct", "_Py_NoneStruct",
                      "_Py_TrueStruct", "_Py_NotImplementedStruct", "_Py_EllipsisObject",
                      "_Py_IncRef", "_Py_DecRef"}


def run_py(code, **env):
    """conftest's run_py with host arrays on the simulator unless env says otherwise."""
    return conftest.run_py(code, **dict({"TILEC_BACKEND": "sim"}, **env))


def test_the_path_the_suite_asked_for_is_the_one_loaded():
    if PURE:
        assert tilec._CORE is None and type(tilec.sum).__name__ == "function"
        return
    if os.environ.get("TILEC_EXPECT_CORE") != "1":
        pytest.skip("TILEC_EXPECT_CORE=1 is not set (the meson test `python` sets it)")
    core = tilec._CORE
    assert core is not None, ("import tilec did not load the compiled core: is it built (meson "
                              "says so at setup; it needs Python.h, Debian's python3-dev)? The "
                              "PurePythonWarning of the import says what was tried")
    assert core.__name__ == "tilec._core" and sys.modules["tilec._core"] is core
    assert core.__file__.endswith("_core.abi3.so"), core.__file__
    if os.environ.get("TILEC_CORE"):  # the one asked for (python-core-asan: the ASan build)
        assert os.path.samefile(core.__file__, os.environ["TILEC_CORE"]), core.__file__
    assert core.LIMITED_API == 0x030B0000  # built on the limited API of 3.11
    assert isinstance(tilec.sum, core.Reducer) and isinstance(tilec.nanargmax, core.Reducer)
    if shutil.which("nm"):  # it calls nothing of CPython's outside the stable ABI
        syms = subprocess.run(["nm", "-D", "--undefined-only", core.__file__],
                              capture_output=True, text=True, check=True).stdout.split()
        private = [s for s in syms if s.startswith("_Py") and s not in STABLE_UNDERSCORED]
        assert not private, private
        assert any(s.startswith("Py") for s in syms)


@needs_core
def test_a_repeated_call_is_served_by_the_core():
    x = np.arange(-30, 30, dtype=np.float32).reshape(6, 10)[:, ::-3]
    h0, m0, _ = tilec._CORE.stats()
    a = tilec.sum(x, axis=1)
    h1, m1, _ = tilec._CORE.stats()
    b = tilec.sum(x, axis=1)
    h2, m2, _ = tilec._CORE.stats()
    # the first call: planned by the package, then run by the core; the second: the core's
    assert (m1 - m0, h1 - h0) == (1, 1) and (m2 - m1, h2 - h1) == (0, 1)
    assert np.array_equal(a, b) and np.array_equal(a, x.astype(np.float64).sum(axis=1))
    # a different spelling of the same request is its own key, planned once by the package
    c = tilec.reduce(x, "sum", axis=(1,))
    d = tilec.reduce(x, "sum", dim=-1)
    assert np.array_equal(c, a) and np.array_equal(d, a)
    # what the core does not read goes to the package: a list axis, a backend, a 0-d array
    h, m, _ = tilec._CORE.stats()
    assert np.array_equal(tilec.sum(x, axis=[1]), a)
    assert np.array_equal(tilec.sum(x, axis=1, backend="sim"), a)
    assert tilec.sum(np.float32(2.5)) == 2.5
    assert tilec._CORE.stats()[:2] == (h, m)


# calls whose results must be the same bits on both paths: (expression, data)
CASES = [
    "tilec.sum(f, axis=1)", "tilec.sum(f, 0, keepdims=True)", "tilec.max(f, axis=(0, 1))",
    "tilec.nanmax(f, axis=1)", "tilec.argmax(f, axis=0)", "tilec.nanargmin(f, axis=1, index_dtype='int32')",
    "tilec.aminmax(f, axis=1)", "tilec.var(f, axis=1)", "tilec.std(f, axis=1, ddof=1)",
    "tilec.var(f, axis=0, correction=2)", "tilec.mean(f, dim=1, keepdim=True)",
    "tilec.logsumexp(f, axis=1)", "tilec.norm2(f)", "tilec.sum(f, axis=1, dtype=np.float64)",
    "tilec.prod(i, axis=1)", "tilec.sum(i, axis=0, dtype='int64')", "tilec.min(i[::-1, ::2], axis=1)",
    "tilec.reduce(f, 'var', 1)", "tilec.reduce(f, 'max', 1, nan='ignore')",
    "tilec.var_mean(f, axis=1)", "tilec.reduce(f.T, 'sumsq', axis=-1)",
]
DATA = """
import numpy as np, tilec
f = np.array([[1.5, -np.inf, np.nan, -0.0, 3e-45, 7.25, -2.0], [0.0, 1e30, -1e30, 2.5, -3.5, 1.0, 8.0],
              [np.nan, np.nan, 1.0, 2.0, np.inf, -np.inf, 0.5]], np.float32)
i = np.array([[2**31 - 1, -2**31, 7, -1, 0], [3, -5, 11, 2, -9]], np.int32)
def show(r):
    rs = r if isinstance(r, tuple) else (r,)
    return ";".join("%s:%s:%s" % (a.dtype, a.shape, np.ascontiguousarray(a).tobytes().hex()) for a in rs)
for c in CASES:
    for _ in range(2):  # the second call: the core's kept plan
        try:
            print(c, show(eval(c)))
        except Exception as e:
            print(c, type(e).__name__, repr(str(e)))
"""


def test_both_paths_give_the_same_bits_and_errors():
    code = "CASES = %r\n%s" % (CASES + ["tilec.max(np.zeros((3, 0), np.float32), axis=1)",
                                       "tilec.sum(f, axis=2)", "tilec.sum(f, axis=(1, 1))",
                                       "tilec.max(i, axis=1, nan='ignore')"], DATA)
    core = run_py(code, TILEC_PURE_PYTHON=None)
    pure = run_py(code, TILEC_PURE_PYTHON="1")
    assert core == pure
    assert core.count("\n") == 2 * (len(CASES) + 4) and "Error" in core


@needs_core
def test_threads_and_a_clear_while_calls_run():
    xs = [np.arange(n * 7, dtype=np.float32).reshape(n, 7) for n in (3, 5, 9)]
    want = [x.astype(np.float64).sum(axis=1).astype(np.float32) for x in xs]
    bad, stop = [], threading.Event()

    def work(x, w):
        for _ in range(20):
            if not np.array_equal(tilec.sum(x, axis=1), w):
                bad.append(x.shape)

    def clear():
        while not stop.is_set():
            tilec._CORE.clear()
    ts = [threading.Thread(target=work, args=a) for a in zip(xs, want)]
    c = threading.Thread(target=clear)
    c.start()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    stop.set()
    c.join()
    assert not bad


def test_the_fallback_warns_once_and_works():
    code = """
import warnings
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    import numpy as np, tilec
    r = tilec.sum(np.arange(5, dtype=np.int32))
print(tilec._CORE, int(r), [str(x.message) for x in w if x.category is tilec.PurePythonWarning])
"""
    out = run_py(code, TILEC_CORE="/nonexistent/_core.abi3.so", TILEC_PURE_PYTHON=None)
    assert out.startswith('None 10 ["tilec: the compiled core (_core.abi3.so) was not loaded')
    assert "/nonexistent/_core.abi3.so (absent)" in out and out.count("was not loaded") == 1
    # a file that is not a module of this package: refused, the same warning
    out = run_py(code, TILEC_CORE=LIB, TILEC_PURE_PYTHON=None)
    assert out.startswith("None 10 [") and "was not loaded" in out
    # asked for: no warning
    assert run_py(code, TILEC_PURE_PYTHON="1").strip() == "None 10 []"


# ---- the torch path, on a stand-in: a fake torch over numpy memory, on a fake HIP device ----

FAKE_HIP = os.path.join(os.path.dirname(os.path.abspath(LIB)), "tests", "libfake_hip6.so")
FAKE_TORCH = '''
"""A stand-in for torch with what the package reads of a CUDA tensor, over numpy memory,
counting the allocations it is asked for."""
import numpy as _np
made = {"new_empty": 0, "empty_like": 0}
class dtype:
    def __init__(s, name): s.name = name
    def __repr__(s): return "torch." + s.name
    __str__ = __repr__
float16, float32, float64, int32, int64, uint32 = (dtype(n) for n in (
    "float16", "float32", "float64", "int32", "int64", "uint32"))
_NP = {float16: _np.float16, float32: _np.float32, float64: _np.float64, int32: _np.int32,
       int64: _np.int64, uint32: _np.uint32}
_TO = {_np.dtype(v): k for k, v in _NP.items()}
class Size(tuple): pass
class device:
    type = "cuda"
    def __init__(s, index): s.index = index
class version: hip = "6.2"
class _Stream: cuda_stream = 0
class cuda:
    current_device = staticmethod(lambda: 0)
    current_stream = staticmethod(lambda d=None: _Stream())
class _C:
    _cuda_getCurrentRawStream = staticmethod(lambda d: 0)
class Tensor:
    def __init__(s, a): s._a, s.device, s.dtype = a, device(0), _TO[a.dtype]
    @property
    def shape(s): return Size(s._a.shape)
    def stride(s): return tuple(x // s._a.itemsize for x in s._a.strides)
    def data_ptr(s): return s._a.ctypes.data
    def get_device(s): return 0
    def is_contiguous(s): return bool(s._a.flags.c_contiguous)
    def new_empty(s, shape, dtype=None):
        made["new_empty"] += 1
        return Tensor(_np.empty(shape, _NP[dtype or s.dtype]))
    def expand(s, shape): return Tensor(_np.broadcast_to(s._a, shape))
def empty_like(t):
    made["empty_like"] += 1
    return Tensor(_np.empty(t._a.shape, t._a.dtype))
'''


def test_torch_tensors_through_the_core():
    """The core's torch path with a stand-in torch (its tensors are numpy memory on a fake
    HIP device, whose launches are counted and compute nothing): the first call is planned by
    the package and run by the core (its outputs: x.new_empty, and the template of the next
    ones, checked once), the next served with outputs made by empty_like of the template, out= of one dense tensor taken as it is, anything else (a strided out, a wrong
    dtype) checked and refused by the package."""
    if tilec._CORE is None:
        pytest.skip("the compiled core is not loaded")
    if not os.path.exists(FAKE_HIP):
        pytest.skip("the fake HIP runtime (tests/fake_hip.c) is not built: cmocka is missing")
    try:
        tilec.compile("kernel k(a: f32[4] global, b: f32[1] global) { b = sum(a, axis=0) }",
                      target="hip", arch="gfx90a")
    except tilec.Error as e:
        if e.status != "TILEC_ERR_UNAVAILABLE":
            pass  # the text is not the point: only whether hiprtc is here
        if e.status == "TILEC_ERR_UNAVAILABLE":
            pytest.skip("hiprtc is not installed here, so nothing is compiled for the fake GPU")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "torch"))
        with open(os.path.join(d, "torch", "__init__.py"), "w") as f:
            f.write(FAKE_TORCH)
        out = run_py("""
import ctypes, os, numpy as np, torch, tilec
fake = ctypes.CDLL(os.environ["TILEC_HIP_PATH"])
x = torch.Tensor(np.arange(300 * 37, dtype=np.float32).reshape(300, 37)[:, ::-1])
def step(what, fn):
    n, s, m = fake.fake_hip_launches(), tilec._CORE.stats(), dict(torch.made)
    try:
        r = fn()
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    s2 = tilec._CORE.stats()
    desc = r if isinstance(r, str) else "tuple of %d" % len(r) if isinstance(r, tuple) else \\
        "%s %s %s" % (type(r).__name__, tuple(r.shape), r.dtype)
    print("%s: %s; launches %d, served %d, planned %d, new_empty %d, empty_like %d" % (
        what, desc, fake.fake_hip_launches() - n, s2[0] - s[0], s2[1] - s[1],
        torch.made["new_empty"] - m["new_empty"], torch.made["empty_like"] - m["empty_like"]))
    return r
step("first", lambda: tilec.sum(x, axis=1))
step("second", lambda: tilec.sum(x, axis=1))
step("reduce", lambda: tilec.reduce(x, "sum", 1))
o = torch.Tensor(np.empty(300, np.float32))
r = step("out", lambda: tilec.sum(x, axis=1, out=o))
print("out is o", r is o)
step("strided out", lambda: tilec.sum(x, axis=1, out=torch.Tensor(np.empty(600, np.float32)[::2])))
step("f64 out", lambda: tilec.sum(x, axis=1, out=torch.Tensor(np.empty(300, np.float64))))
step("argmax", lambda: tilec.argmax(x, dim=0))
step("argmax again", lambda: tilec.argmax(x, dim=0))
step("aminmax", lambda: tilec.aminmax(x, axis=1))
step("aminmax again", lambda: tilec.aminmax(x, axis=1))
step("var keepdim", lambda: tilec.var(x, dim=1, keepdim=True, ddof=1))
step("var keepdim again", lambda: tilec.var(x, dim=1, keepdim=True, ddof=1))
step("bad axis", lambda: tilec.sum(x, axis=2))
o1 = torch.Tensor(np.empty((1, 300), np.float32).T)  # (300, 1), strides (1, 300): not dense
step("size-1 strided out", lambda: tilec.sum(x, axis=1, keepdims=True, out=o1))
class Sub(torch.Tensor):
    pass
step("subclass", lambda: tilec.sum(Sub(x._a), axis=1))
step("subclass out", lambda: tilec.sum(x, axis=1, out=Sub(np.empty(300, np.float32))))
""", TILEC_HIP_PATH=FAKE_HIP, FAKE_HIP_ARCH="gfx90a", TILEC_NVRTC_PATH="/nonexistent/libnvrtc.so",
                     PYTHONPATH=d + os.pathsep + os.path.join(ROOT, "python"), TILEC_BACKEND=None)
    want = [
        "first: Tensor (300,) torch.float32; launches 1, served 1, planned 1, new_empty 2, empty_like 1",
        "second: Tensor (300,) torch.float32; launches 1, served 1, planned 0, new_empty 0, empty_like 1",
        "reduce: Tensor (300,) torch.float32; launches 1, served 1, planned 0, new_empty 0, empty_like 1",
        "out: Tensor (300,) torch.float32; launches 1, served 1, planned 0, new_empty 0, empty_like 0",
        "out is o True",
        "strided out: ValueError: tilec: out must be dense (row-major); its strides are (2,); "
        "launches 0, served 0, planned 0",
        "f64 out: ValueError: tilec: out has shape (300,) and dtype float64; the result has shape "
        "(300,) and dtype float32; launches 0, served 0, planned 0",
        "argmax: Tensor (37,) torch.int64; launches 1, served 1, planned 1, new_empty 4, empty_like 2",
        "argmax again: Tensor (37,) torch.int64; launches 1, served 1, planned 0, new_empty 0, empty_like 2",
        "aminmax: tuple of 2; launches 1, served 1, planned 1",
        "aminmax again: tuple of 2; launches 1, served 1, planned 0, new_empty 0, empty_like 2",
        "var keepdim: Tensor (300, 1) torch.float32; launches 1, served 1, planned 1",
        "var keepdim again: Tensor (300, 1) torch.float32; launches 1, served 1, planned 0",
        "bad axis: AxisError: tilec: axis 2 is out of range for a tensor of 2 dims; launches 0, "
        "served 0, planned 1",
        "size-1 strided out: ValueError: tilec: out must be dense (row-major); its strides are "
        "(1, 300); launches 0, served 0",
        "subclass: Tensor (300,) torch.float32; launches 1, served 0, planned 0",
        # an out= subclass's shape, strides and pointer are its own: the package's to check
        "subclass out: Sub (300,) torch.float32; launches 1, served 0, planned 0"]
    lines = out.splitlines()
    for w in want:
        assert any(line.startswith(w) for line in lines), "%s\nnot in:\n%s" % (w, out)


# ---- from the review of the core: each a call that once crashed or differed -----------------

def test_review_defects_stay_fixed():
    code = r'''
import copy, pickle, numpy as np, tilec
core = tilec._CORE
x = np.arange(6, dtype=np.float32).reshape(2, 3)
# an int subclass whose __index__ is not its value: planned by the package as __index__ says,
# and never kept under its C value (a later axis=0 got axis 1's plan)
class I(int):
    __index__ = lambda s: 1
print("subclass", tilec.sum(x, axis=I(0)).tolist(), tilec.sum(x, axis=0).tolist())
print("ddof", tilec.var(x, 1, ddof=I(0)).tolist(), tilec.var(x, 1, ddof=0).tolist())
# a finalizer that clears the table while the table is being cleared (1024 plans kept)
fired = []
class D:
    dtype = np.dtype(np.float32)
    def __del__(self):
        if not fired and core is not None:
            fired.append(1)
            core.clear()
y = np.ones(3, np.float32)
for i in range(1030):
    tilec.sum(y, dtype=D())
print("finalizer", float(tilec.sum(y)))
# a Reducer made without __init__ is an error, not a crash
if core is not None:
    R = core.Reducer
    try:
        R.__new__(R)(1, 2, 3)
    except TypeError as e:
        print("uninitialised", "without __init__" in str(e))
else:
    print("uninitialised True")
# the spellings pickle and copy as functions do
print("pickle", pickle.loads(pickle.dumps(tilec.sum)) is tilec.sum, copy.deepcopy(tilec.max) is tilec.max)
# a dtype spelled by a str made anew each call finds its plan
if core is not None:
    s0 = core.stats()
    for _ in range(3):
        tilec.sum(x, axis=1, dtype="".join(["float", "64"]))
    s1 = core.stats()
    print("str dtype planned", s1[1] - s0[1], "ran", s1[0] - s0[0])
else:
    print("str dtype planned 1 ran 3")
'''
    for env in ({"TILEC_PURE_PYTHON": None}, {"TILEC_PURE_PYTHON": "1"}):
        out = run_py(code, **env)
        assert "subclass [3.0, 12.0] [3.0, 5.0, 7.0]" in out, out
        assert "ddof [1.0, 1.0] [0.6666666865348816, 0.6666666865348816]" in out, out
        assert "finalizer 3.0" in out and "uninitialised True" in out and "pickle True True" in out, out
        assert "str dtype planned 1 ran 3" in out, out


@needs_core
def test_specials_served_by_the_core_against_hand_written_values():
    """Where the format decides the value — NaN, ±0, ±inf, a subnormal — the core's second
    call (its kept plan) against values written by hand, not against tilec."""
    f = np.array([[1.5, -np.inf, np.nan, -0.0, 3e-45, 7.25], [-0.0, -0.0, -0.0, -0.0, -0.0, -0.0],
                  [np.inf, 1.0, -np.inf, 2.0, 0.5, 3e-45]], np.float32)
    for _ in range(2):
        h = tilec._CORE.stats()[0]
        m, nm, s = tilec.max(f, axis=1), tilec.nanmax(f, axis=1), tilec.sum(f, axis=1)
        am = tilec.nanargmin(f, axis=1)
        assert np.isnan(m[0]) and m[1] == 0 and np.signbit(m[1]) and m[2] == np.inf
        assert nm.tolist() == [7.25, -0.0, np.inf] and np.signbit(nm[1])
        assert np.isnan(s[0]) and s[1] == 0 and np.signbit(s[1]) and np.isnan(s[2])  # inf + -inf
        assert am.tolist() == [1, 0, 2]
        assert tilec.min(f[0, 4:6], axis=0) == np.float32(3e-45)  # a subnormal kept
    assert tilec._CORE.stats()[0] - h == 5  # the second round all served by the core


# ---- the core's references, its key and its callables' words ------------------------------

def test_a_str_the_core_forgot_is_not_used_after():
    """A dtype= str the core had made canonical and then forgot (its table of 256 values
    full, emptied for the index_dtype= of the same call) is not used after it is freed: the
    plan keeps a reference of its own. Under the meson test `python-core-asan` (the core
    built with AddressSanitizer, objects on malloc) the old borrowed reference is a
    heap-use-after-free; here the answer is checked against numpy's."""
    code = r'''
import numpy as np, tilec
x = np.arange(6, dtype=np.float32).reshape(2, 3)
for i in range(256):  # 256 str values refused by the package: the core's table is full
    try:
        tilec.argmax(x, axis=5, dtype="".join(["float", "32"]) if i == 0 else "junk%d" % i)
    except (TypeError, ValueError):
        pass
for _ in range(2):  # planned (the table emptied on the way), then served
    r = tilec.argmax(x, axis=1, dtype="".join(["float", "32"]), index_dtype="".join(["int", "64"]))
    print("argmax", r.dtype, r.tolist())
if tilec._CORE is not None:
    tilec._CORE.clear()  # drops the plan: the references it holds
print("after", tilec.argmax(x, axis=0, index_dtype="".join(["int", "32"])).tolist())
'''
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = ["argmax int64 %s" % x.argmax(axis=1).tolist()] * 2 + ["after %s" % x.argmax(axis=0).tolist()]
    for env in ({"TILEC_PURE_PYTHON": None}, {"TILEC_PURE_PYTHON": "1"}):
        assert run_py(code, **env).splitlines() == want


POISON = r'''
import numpy as np, tilec
x = np.arange(6, dtype=np.float32).reshape(2, 3)
def show(name, f):
    try:
        r = f()
        r = "%s %s" % (r.dtype, r.tolist()) if hasattr(r, "dtype") else repr(r)
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    print(name, "->", r)
class T(tuple):  # its items say axis 0; iterated, as the package reads it, axis 1
    def __iter__(self):
        return iter((1,))
show("sum axis=T((0,))", lambda: tilec.sum(x, axis=T((0,))))
show("sum axis=(0,)", lambda: tilec.sum(x, axis=(0,)))
show("reduce axis=T((0,))", lambda: tilec.reduce(x, "sum", T((0,))))
show("reduce axis=(0,)", lambda: tilec.reduce(x, "sum", (0,)))
show("max dim=T((0,))", lambda: tilec.max(x, dim=T((0,))))
show("max dim=(0,)", lambda: tilec.max(x, dim=(0,)))
class I(int):  # 0, whose __index__ says 1
    __index__ = lambda s: 1
show("keepdims=I(0)", lambda: tilec.sum(x, axis=0, keepdims=I(0)))
show("keepdims=False", lambda: tilec.sum(x, axis=0, keepdims=False))
show("var ddof=I(0)", lambda: tilec.var(x, axis=1, ddof=I(0)))
show("var ddof=0", lambda: tilec.var(x, axis=1, ddof=0))
class Flip:  # a dtype= numpy reads at every call, through its dtype attribute
    dtype = np.dtype(np.float32)
f = Flip()
show("dtype=f (float32)", lambda: tilec.sum(x, axis=1, dtype=f))
Flip.dtype = np.dtype(np.float64)
show("dtype=f (now float64)", lambda: tilec.sum(x, axis=1, dtype=f))
Flip.dtype = np.dtype(np.int64)
show("index_dtype=f (int64)", lambda: tilec.argmax(x, axis=1, index_dtype=f))
Flip.dtype = np.dtype(np.int32)
show("index_dtype=f (now int32)", lambda: tilec.argmax(x, axis=1, index_dtype=f))
class S(str):  # "float32" that hashes and compares as "float64"
    def __hash__(self):
        return hash("float64")
    def __eq__(self, o):
        return str.__eq__("float64", o)
show("dtype=S('float32')", lambda: tilec.sum(x, axis=1, dtype=S("float32")))
show("dtype='float32'", lambda: tilec.sum(x, axis=1, dtype="float32"))
show("dtype='float64'", lambda: tilec.sum(x, axis=1, dtype="float64"))
class Op(str):  # "max" that hashes and compares as "sum"
    def __hash__(self):
        return hash("sum")
    def __eq__(self, o):
        return str.__eq__("sum", o)
show("reduce op=Op('max')", lambda: tilec.reduce(x, Op("max"), 1))
show("reduce op='max'", lambda: tilec.reduce(x, "max", 1))
show("reduce op='sum'", lambda: tilec.reduce(x, "sum", 1))
class Liar(str):  # equal to every name, hashing as "max" or "ignore"
    def __eq__(self, o):
        return True
    def __hash__(self):
        return hash("max" if str.__eq__(self, "sum") else "ignore")
xn, xi = x.copy(), x.astype(np.int32)
xn[0, 1] = np.nan
show("max planned", lambda: tilec.reduce(x, "max", 1))  # first: the liar must not find it
show("reduce op=Liar('sum')", lambda: tilec.reduce(x, Liar("sum"), 1))
show("reduce int op=Liar('sum')", lambda: tilec.reduce(xi, Liar("sum"), 1))  # not a mean's cast
show("segment int op=Liar('sum')", lambda: tilec.segment_reduce(xi, [0, 3], Liar("sum"), axis=1))
show("nan planned", lambda: tilec.reduce(xn, "max", 1, nan="ignore"))
show("max nan=Liar('propagate')", lambda: tilec.reduce(xn, "max", 1, nan=Liar("propagate")))
'''


def test_subclasses_and_changing_objects_do_not_poison_the_plans():
    """The core keys a plan only by what the package planned: an axis given as a tuple
    subclass (whose iteration says other axes than its items), an int subclass (keepdims,
    ddof), a dtype= or index_dtype= object whose meaning changes between calls, a str
    subclass that compares as another dtype or op — each is planned by the package as it
    reads it, and a later plain call gets its own answer. Both paths print the same, and
    the plain calls' answers are numpy's."""
    core = run_py(POISON, TILEC_PURE_PYTHON=None)
    pure = run_py(POISON, TILEC_PURE_PYTHON="1")
    assert core == pure, "core:\n%s\npure:\n%s" % (core, pure)
    got = dict(line.split(" -> ") for line in core.splitlines())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    f32 = lambda a: "float32 %s" % a.astype(np.float32).tolist()  # noqa: E731
    assert got["sum axis=(0,)"] == f32(x.sum(axis=0))
    assert got["reduce axis=(0,)"] == f32(x.sum(axis=0))
    assert got["max dim=(0,)"] == f32(x.max(axis=0))
    assert got["keepdims=False"] == f32(x.sum(axis=0))
    assert got["var ddof=0"] == f32(x.astype(np.float64).var(axis=1))
    assert got["dtype=f (float32)"] == f32(x.sum(axis=1))
    assert got["dtype=f (now float64)"] == "float64 %s" % x.astype(np.float64).sum(axis=1).tolist()
    assert got["index_dtype=f (int64)"] == "int64 [2, 2]"
    assert got["index_dtype=f (now int32)"] == "int32 [2, 2]"
    assert got["dtype='float32'"] == f32(x.sum(axis=1))
    assert got["dtype='float64'"] == "float64 %s" % x.astype(np.float64).sum(axis=1).tolist()
    assert got["reduce op='max'"] == f32(x.max(axis=1))
    assert got["reduce op='sum'"] == f32(x.sum(axis=1))
    # a str subclass that equals every name and hashes as another's: its own name's answer
    assert got["reduce op=Liar('sum')"] == f32(x.sum(axis=1))
    assert got["reduce int op=Liar('sum')"] == "int64 %s" % x.astype(np.int64).sum(axis=1).tolist()
    assert got["segment int op=Liar('sum')"] == "int64 [[3], [12]]"
    assert got["nan planned"] == f32(np.array([2, 5]))
    assert got["max nan=Liar('propagate')"] == "float32 [nan, 5.0]"


SIGNATURE_CODE = r'''
import inspect, pydoc, numpy as np, tilec
x = np.arange(6, dtype=np.float32).reshape(2, 3)
for name in ("sum", "var", "nanargmax"):
    print(name, "doc", pydoc.render_doc(getattr(tilec, name), renderer=pydoc.plaintext).splitlines()[2])
    print(name, "sig", inspect.signature(getattr(tilec, name)))
print("sum wraps", "wrap around on overflow" in tilec.sum.__doc__, "max wraps", "wrap" in tilec.max.__doc__)
print("sum doc", "numpy's rules" in tilec.sum.__doc__ and "(x, axis, keepdims" not in tilec.sum.__doc__)
for kw in ({"axes": 1}, {"axis\0": 1}, {"\udc80": 1}, {"ddof": 1}, {"nan": "ignore"}):
    for f in (tilec.sum, tilec.nanmax):
        try:
            r = f(x, **kw)
            print(f.__name__, ascii(kw), "->", r.tolist())
        except Exception as e:
            print(f.__name__, ascii(kw), "->", type(e).__name__, ascii(str(e))[1:-1])
'''


def test_the_spellings_signatures_docs_and_keyword_errors():
    """help() shows each spelling's signature (the core's callables carry a
    __text_signature__; the pure path's are functions); the docstring says which arguments
    are keywords, that result dtypes follow numpy's rules and where integers wrap; a
    keyword that is not the spelling's — a typo, a name with a NUL or a lone surrogate in it
    — is the same TypeError on both paths, naming the public spelling and what it takes."""
    core = run_py(SIGNATURE_CODE, TILEC_PURE_PYTHON=None)
    pure = run_py(SIGNATURE_CODE, TILEC_PURE_PYTHON="1")
    for out in (core, pure):
        assert "sum doc sum(x, axis=None, *, dtype=None, out=None, keepdims=False" in out, out
        assert "sum wraps True max wraps False" in out and "sum doc True" in out, out
        err = ("TypeError tilec.sum got an unexpected keyword argument %s; it takes x, axis and "
               "the keywords dtype, out, keepdims, dim, keepdim, backend")
        assert "sum {'axes': 1} -> " + err % "'axes'" in out, out
        assert "sum {'axis\\x00': 1} -> " + err % "'axis\\\\x00'" in out, out
        assert "sum {'\\udc80': 1} -> " + err % "'\\\\udc80'" in out, out
        assert "sum {'ddof': 1} -> " + err % "'ddof'" in out, out
        assert "nanmax {'nan': 'ignore'} -> TypeError tilec.nanmax takes no nan=" in out, out
    # the core's callables: their own signatures, the keywords each takes
    assert ("sum sig (x, axis=None, *, dtype=None, out=None, keepdims=False, dim=None, "
            "keepdim=None, backend=None)") in core or tilec._CORE is None, core
    assert "var sig (x, axis=None, *, dtype=None, out=None, keepdims=False, dim=None, " \
        "keepdim=None, backend=None, ddof=0, correction=None)" in core or tilec._CORE is None, core
    assert "nanargmax doc nanargmax(x, axis=None, *, dtype=None, out=None, keepdims=False, " \
        "dim=None, keepdim=None, backend=None, index_dtype=None)" in core or tilec._CORE is None, core
    # every line but the signatures is the same on both paths
    same = lambda s: [ln for ln in s.splitlines() if " sig " not in ln and " doc " not in ln]  # noqa: E731
    assert same(core) == same(pure)


@needs_core
def test_a_reducer_and_its_fallback_in_a_cycle_are_collected():
    """A Reducer whose fallback reaches it back (a spelling's function reaches the module
    that holds the spelling) is a cycle the collector sees and frees: the Reducer visits
    its fallback."""
    import gc
    import weakref

    def make():
        box = []

        def fallback(*args, **kw):
            return box
        box.append(tilec._CORE.Reducer(0, 0, False, fallback))
        return weakref.ref(fallback)
    w = make()
    gc.collect()
    assert w() is None


# ---- tilec called from inside tilec: a finalizer or a signal handler ------------------------

REENTRY = r'''
import faulthandler, gc, signal, time, warnings, numpy as np
warnings.simplefilter("ignore")
import tilec
faulthandler.dump_traceback_later(60, exit=True)  # a call that waits for itself: fail, not hang
x = np.arange(12, dtype=np.float32).reshape(3, 4)
want = {k: x.astype(np.float64).sum(axis=k).astype(np.float32) for k in (0, 1)}
inner, refused, wrong = [], [], []

def nested():  # what a finalizer or handler does: its own call, refused or right
    try:
        inner.append(np.array_equal(tilec.sum(x, axis=0), want[0]))
    except RuntimeError as e:
        assert "not re-entrant" in str(e), e
        refused.append(e)

def calls(n):  # n calls, and on until one nested call was refused (30 s at most)
    i, end = 0, time.monotonic() + 30
    while i < n or not refused and time.monotonic() < end:
        yield i
        i += 1

def outer(i):
    r = tilec.sum(x, axis=i % 2, keepdims=bool(i % 3))
    if not np.array_equal(r.reshape(want[i % 2].shape), want[i % 2]):
        wrong.append(i)
    if tilec._CORE:
        tilec._CORE.clear()  # so every call plans again, under the lock

# 1. the lock held by this thread: the call is refused at once, on either path (the core's
# second call of a key takes the lock in C), and the lock still works after
ctx = tilec._context("sim")
tilec.sum(x, axis=0)  # planned: the core's next call of it takes the lock in C
for _ in range(2):
    with ctx.lock:
        nested()
    if tilec._CORE:
        tilec._CORE.clear()  # and then the package's planning, in Python
print("held", len(refused), len(inner), float(tilec.sum(x)))

# 2. a finalizer in a reference cycle, run by the garbage collector inside a call
class Node:
    def __init__(self):
        self.me = self
    def __del__(self):
        nested()
refused.clear()
for i in calls(150):
    gc.disable()
    Node()
    gc.set_threshold(3 + i % 40)  # the next collection lands somewhere inside tilec.sum
    gc.enable()
    outer(i)
gc.set_threshold(700)
gc.collect()
print("gc", len(refused) > 0, all(inner), wrong)

# 3. a signal handler
refused.clear()
signal.signal(signal.SIGALRM, lambda *a: nested())
signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
for i in calls(400):
    outer(i)
signal.setitimer(signal.ITIMER_REAL, 0)
print("signal", len(refused) > 0, all(inner), wrong)
print("after", float(tilec.sum(x)), float(tilec.max(x)))
'''


def test_a_call_from_a_finalizer_or_signal_handler_inside_a_call_is_refused_not_hung():
    """A context's lock refuses the thread that holds it (RuntimeError) where it once waited
    for itself forever: a finalizer the garbage collector runs, or a signal handler, that
    calls tilec while tilec is running on that thread. The outer calls still give numpy's
    sums, the nested ones numpy's or the error; run on the suite's path (the core, the
    pure-Python path, the core under ASan)."""
    out = run_py(REENTRY)
    assert "held 2 0 66.0" in out, out
    assert "gc True True []" in out, out
    assert "signal True True []" in out, out
    assert "after 66.0 11.0" in out, out
