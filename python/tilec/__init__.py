"""tilec for Python: reductions of numpy arrays (on a GPU when one is usable, else on tilec's
simulator) and of GPU tensors (torch, CuPy, JAX: anything with ``__cuda_array_interface__``
or ``__dlpack__``), on their device and stream, with their strides; a `.tile` program's own
kernels on arrays (run_kernel); and the `.tile` tools (check, fmt, emit, compile, explain).
Python over libtilec through ctypes, with a compiled core (tilec._core, python/tilec/_core.c)
that serves a call planned before; docs/python.md says how both are found.

    >>> import numpy, tilec
    >>> tilec.sum(numpy.arange(10, dtype=numpy.int32), backend="sim")  # numpy's int64
    array(45)

Every name of an op, dtype, NaN policy, backend and status comes from the library's own
tables (tilec_op_name, tilec_dtype_name, ...), so a row added to them is here too.
"""

import builtins as _builtins
import ctypes as _ctypes
import os as _os
import operator as _operator
import sys as _sys
import _thread
import threading as _threading
import warnings as _warnings
from ctypes import util as _ctypes_util

__all__ = ["Error", "ArgumentError", "SimulatorWarning", "PurePythonWarning", "reduce", "var_mean", "std_mean",
           "run_kernel", "check", "fmt", "emit", "compile", "explain", "library_path",
           "version", "OPS", "DTYPES", "segment_reduce"]


# ---- finding and binding the library ---------------------------------------------------

# The layout of tilec_reduce_desc and the calls bound below are those of this minor
# version (before 1.0 a minor version may change the ABI); the python suite checks that
# this line names include/tilec.h's version.
_ABI = "0.2"


def _candidates():
    env = _os.environ.get("TILEC_LIB")
    if env:
        yield env
        return  # asked for one library: never another behind the user's back
    here = _os.path.dirname(_os.path.abspath(__file__))
    try:
        from . import _install  # written by meson install: where it put the library
        yield _os.path.join(_install.LIBDIR, "libtilec.so")
    except ImportError:
        pass
    yield _os.path.join(here, "libtilec.so")
    yield _os.path.join(here, "libtilec.so." + _ABI)  # the wheel's: named by its soname
    root = _os.path.dirname(_os.path.dirname(here))  # the source tree, when run from it
    for build in sorted(_os.listdir(root)) if _os.path.isdir(root) else []:
        if build.startswith("build"):
            yield _os.path.join(root, build, "libtilec.so")
    found = _ctypes_util.find_library("tilec")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if _os.path.sep in path and not _os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            lib = _ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        if not hasattr(lib, "tilec_version"):  # a library, but another one (TILEC_LIB=libm.so.6)
            tried.append("%s (loads, but is not libtilec: it has no tilec_version)" % path)
            continue
        return lib, path
    raise ImportError("tilec: libtilec.so not found; set TILEC_LIB to its path, or build "
                      "tilec (meson setup build && ninja -C build). Tried: " +
                      ("; ".join(tried) or "nothing"))


_lib, library_path = _load()

_c_int, _c_i64, _c_size, _vp, _cp = (_ctypes.c_int, _ctypes.c_int64, _ctypes.c_size_t,
                                     _ctypes.c_void_p, _ctypes.c_char_p)
_MAX_RANK = 8


def _bind(name, res, *args):
    try:
        f = getattr(_lib, name)
    except AttributeError:
        raise ImportError("tilec: %s has no %s, so it is not a libtilec %s.x; point TILEC_LIB at "
                          "one built from the same tree as the package" % (
                              library_path, name, _ABI)) from None
    f.restype, f.argtypes = res, list(args)
    return f


_bind("tilec_version", _cp)
_found = _lib.tilec_version().decode()
if _found.split(".")[:2] != _ABI.split("."):
    raise ImportError("tilec: %s is libtilec %s; this package speaks %s.x. Point TILEC_LIB at a "
                      "libtilec.so of %s.x (build tilec from the same tree as the package)" % (
                          library_path, _found, _ABI, _ABI))

_PP = _ctypes.POINTER(_vp)
for _name, _res, _args in [
        ("tilec_dtype_name", _cp, (_c_int,)), ("tilec_op_name", _cp, (_c_int,)),
        ("tilec_nan_name", _cp, (_c_int,)), ("tilec_backend_name", _cp, (_c_int,)),
        ("tilec_status_name", _cp, (_c_int,)), ("tilec_status_message", _cp, (_c_int,)),
        ("tilec_dtype_size", _c_size, (_c_int,)), ("tilec_dtype_wide", _c_int, (_c_int,)),
        ("tilec_op_compares", _ctypes.c_bool, (_c_int,)),
        ("tilec_op_outputs", _c_int, (_c_int,)),
        ("tilec_op_takes_correction", _ctypes.c_bool, (_c_int,)),
        ("tilec_op_second_dtype", _c_int, (_c_int, _c_int)),
        ("tilec_op_supports", _ctypes.c_bool, (_c_int, _c_int, _ctypes.c_bool)),
        ("tilec_open", _c_int, (_PP,)), ("tilec_close", None, (_vp,)),
        ("tilec_diag_text", _cp, (_vp,)), ("tilec_free", None, (_vp,)),
        ("tilec_runtime_open", _c_int, (_vp, _c_int, _c_int)),
        ("tilec_runtime_backend", _c_int, (_vp,)),
        ("tilec_mem_alloc", _c_int, (_vp, _c_size, _PP)),
        ("tilec_mem_free", _c_int, (_vp, _vp)),
        ("tilec_mem_upload", _c_int, (_vp, _vp, _vp, _c_size)),
        ("tilec_mem_download", _c_int, (_vp, _vp, _vp, _c_size)),
        ("tilec_synchronize", _c_int, (_vp,)),
        ("tilec_reduce", _c_int, (_vp, _vp, _vp, _vp)),
        ("tilec_run_kernel", _c_int, (_vp, _vp, _cp, _PP, _c_size, _vp)),
        ("tilec_parse", _c_int, (_vp, _cp, _cp, _c_size, _PP)),
        ("tilec_verify", _c_int, (_vp, _vp)),
        ("tilec_format", _c_int, (_vp, _PP, _ctypes.POINTER(_c_size))),
        ("tilec_program_free", None, (_vp,)),
        ("tilec_program_kernel_count", _c_size, (_vp,)),
        ("tilec_program_kernel", _vp, (_vp, _c_size)),
        ("tilec_kernel_name", _cp, (_vp,)),
        ("tilec_kernel_is_func", _ctypes.c_bool, (_vp,)),
        ("tilec_kernel_param_count", _c_size, (_vp,)),
        ("tilec_kernel_param_at", _vp, (_vp, _c_size)),
        ("tilec_kernel_param_written", _ctypes.c_bool, (_vp, _c_size)),
        ("tilec_buffer_name", _cp, (_vp,)),
        ("tilec_buffer_dtype", _c_int, (_vp,)),
        ("tilec_buffer_rank", _c_int, (_vp,)),
        ("tilec_buffer_extent", _c_i64, (_vp, _c_int)),
        ("tilec_explain", _c_int, (_vp, _vp, _ctypes.c_uint, _PP)),
        ("tilec_emit", _c_int, (_vp, _vp, _PP, _ctypes.POINTER(_c_size))),
        ("tilec_compile", _c_int, (_vp, _vp, _PP, _ctypes.POINTER(_c_size)))]:
    _bind(_name, _res, *_args)
del _name, _res, _args


def _table(fn):
    """The names of a closed set, in enum order, read from the library until it says NULL."""
    names = []
    while len(names) < 256:
        n = fn(len(names))
        if n is None:
            break
        names.append(n.decode())
    return names


OPS = _table(_lib.tilec_op_name)          # "sum", "max", ...
DTYPES = _table(_lib.tilec_dtype_name)    # "f16", "bf16", "f32", ...
_NANS = _table(_lib.tilec_nan_name)
_BACKENDS = _table(_lib.tilec_backend_name)  # "auto", "cuda", "hip", "sim"
_STATUS = {}
for _i in range(64):
    _n = _lib.tilec_status_name(_i)
    if _n is not None:
        _STATUS[_i] = _n.decode()
del _i, _n


def version():
    """The library's version ("0.2.0"), which is also tilec.__version__."""
    return _lib.tilec_version().decode()


__version__ = version()


class Error(Exception):
    """A tilec call failed. status: the library's status name (e.g. "TILEC_ERR_VERIFY");
    diagnostics: the context's diagnostics as a terminal shows them ("" when none)."""

    def __init__(self, status, message, diagnostics=""):
        self.status = status
        self.diagnostics = diagnostics
        super().__init__(message + (":\n" + diagnostics.rstrip() if diagnostics else ""))


class ArgumentError(Error, ValueError):
    """The library refused what it was given: an argument (TILEC_ERR_INVALID_ARG: the max of
    an empty axis, memory that does not fit), or .tile text that does not parse or verify
    (TILEC_ERR_PARSE, TILEC_ERR_VERIFY). A tilec.Error and a ValueError, as numpy raises
    ValueError for the same inputs."""


# the statuses that say the input is wrong (ArgumentError); the others (no compiler, a
# budget, memory) are the environment's, and stay a plain tilec.Error
_ARG_STATUSES = ("TILEC_ERR_INVALID_ARG", "TILEC_ERR_PARSE", "TILEC_ERR_VERIFY")


class SimulatorWarning(UserWarning):
    """Issued once per process, the first time a host array (numpy) is reduced or a kernel run
    on tilec's simulator because no GPU was usable: it is correct but far slower than numpy.
    backend="sim" (or TILEC_BACKEND=sim) chooses the simulator without it."""


def _raise(st, what, diagnostics=""):
    name = _STATUS.get(st, str(st))
    cls = ArgumentError if name in _ARG_STATUSES else Error
    raise cls(name, "tilec: %s: %s" % (what, _lib.tilec_status_message(st).decode()), diagnostics)


class _Desc(_ctypes.Structure):  # tilec_reduce_desc, field for field
    _fields_ = [("op", _c_int), ("dtype", _c_int), ("rank", _c_int),
                ("shape", _c_i64 * _MAX_RANK), ("naxes", _c_int), ("axes", _c_int * _MAX_RANK),
                ("nan", _c_int), ("accumulate", _ctypes.c_bool), ("stream", _vp),
                ("strides", _ctypes.POINTER(_c_i64)), ("widen", _ctypes.c_bool), ("out2", _vp),
                ("index_i32", _ctypes.c_bool), ("correction", _ctypes.POINTER(_c_i64))]


class _Target(_ctypes.Structure):  # tilec_target
    _fields_ = [("backend", _c_int), ("arch", _cp), ("warp_size", _c_int)]


_rlock_owned, _rlock_acquire = _thread.RLock._is_owned, _thread.RLock.acquire  # C: no super()


class _Lock(_thread.RLock):
    """A context's lock: one thread at a time (the library's rule). The thread that holds it
    asking again — a finalizer (run by the garbage collector) or a signal handler that calls
    tilec while this thread is inside a tilec call on the same context — is refused with
    RuntimeError rather than left waiting for itself forever; it is not let in either, as
    the call underway may be halfway through state the nested call would read (a plan's
    descriptor, the library's diagnostics). The compiled core takes it through acquire()
    too. Released by the RLock's own C release (a with block's exit runs no Python code, so
    no handler can land between the block and the release)."""

    def acquire(self, blocking=True, timeout=-1):
        if _rlock_owned(self):
            raise RuntimeError(
                "tilec: called from inside a tilec call on the same thread (by a finalizer "
                "the garbage collector ran, or a signal handler, while tilec was running); "
                "tilec is not re-entrant: have the finalizer or handler record the work, and "
                "run it after the call returns (or in another thread)")
        try:
            return _rlock_acquire(self, blocking, timeout)
        except BaseException:  # raised by a handler after the lock was taken: not kept
            if _rlock_owned(self):
                self.release()
            raise

    __enter__ = acquire


class _Ctx:
    """One library context, used by one thread at a time (the library's rule): the lock.
    kind: the backend its runtime runs on ("sim" when "auto" found no GPU); None without one."""

    def __init__(self, backend=None, device=0):
        h = _vp()
        st = _lib.tilec_open(_ctypes.byref(h))
        if st:
            _raise(st, "tilec_open failed")
        self.h, self.lock, self.plans, self.kind = h, _Lock(), {}, None
        if backend is not None:
            self.call(_lib.tilec_runtime_open, "opening the %s backend" % backend,
                      _BACKENDS.index(backend), device)
            self.kind = _BACKENDS[_lib.tilec_runtime_backend(h)]

    def call(self, fn, what, *args):
        self.check(fn(self.h, *args), what)

    def check(self, st, what, fallback=""):
        """Raises tilec.Error (ArgumentError for a bad argument) for a failed status, with
        this context's diagnostics (or fallback when it has none)."""
        if st:
            diags = (_lib.tilec_diag_text(self.h) or b"").decode(errors="replace")
            _raise(st, what, diags or fallback)

    def __del__(self):
        if getattr(self, "h", None) and _lib is not None:
            _lib.tilec_close(self.h)


_contexts = {}
# re-entrant: a finalizer or signal handler that calls tilec while this thread opens a
# context (or warns) runs; the first context stored for a key is the one every call uses
_contexts_lock = _threading.RLock()


def _context(backend, device=0):
    key = (backend, device)
    with _contexts_lock:
        c = _contexts.get(key)
        if c is None:
            c = _contexts.setdefault(key, _Ctx(backend, device))
        return c


# ---- where host arrays run ---------------------------------------------------------------

_sim_warned = []  # one SimulatorWarning a process


def _host_backend(backend):
    """backend= of a host array (None: $TILEC_BACKEND, else "auto"), checked."""
    where = "backend"
    if backend is None:
        backend, where = _os.environ.get("TILEC_BACKEND") or "auto", "TILEC_BACKEND"
    if backend not in _BACKENDS:
        raise ValueError("tilec: %s=%r; say one of %s" % (where, backend, ", ".join(_BACKENDS)))
    return backend


def _host_context(backend):
    """The context host arrays run in, and whether this call is the one to warn that they
    run on the simulator (backend "auto" found no GPU)."""
    backend = _host_backend(backend)
    ctx = _context(backend)
    warn = backend == "auto" and ctx.kind == "sim" and not _sim_warned
    return ctx, warn


def _warn_simulator(what):
    with _contexts_lock:
        if _sim_warned:
            return
        _sim_warned.append(True)
    f, level = _sys._getframe(1), 2  # the first frame outside this module: the user's call
    while f is not None and f.f_globals.get("__name__") == __name__:
        f, level = f.f_back, level + 1
    _warnings.warn("tilec: no usable GPU (CUDA or HIP) here, so %s on tilec's simulator, "
                   "which is correct but many times slower than numpy; pass "
                   "backend='sim' (or set TILEC_BACKEND=sim) to choose it without this "
                   "warning" % what, SimulatorWarning, stacklevel=level)


def _device_backend(backend, v):
    """backend= for a GPU tensor: it runs on its own GPU, so only that backend (or auto)."""
    if backend is not None and backend not in ("auto", v.backend):
        raise ValueError("tilec: backend=%r; a GPU tensor runs on its own device (%s); "
                         "backend= chooses where host arrays (numpy) run" % (backend, v.backend))


# ---- dtypes of the array libraries ---------------------------------------------------

# numpy's dtype names (and torch's, and typestr codes of __cuda_array_interface__) to
# tilec's; a dtype missing here is not one tilec reduces
_FROM_NAME = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
              "int32": "i32", "uint32": "u32", "int64": "i64"}
_FROM_TYPESTR = {"<f2": "f16", "<f4": "f32", "<f8": "f64", "<i4": "i32", "<u4": "u32",
                 "<i8": "i64"}
_TO_NAME = {v: k for k, v in _FROM_NAME.items()}


def _tilec_dtype(name, what="the input"):
    """tilec's name of a dtype spelled as tilec ("f32", "bf16": the CLI's names), numpy
    (np.float32, "float32", "<f4", "f4") or torch (torch.float32) does."""
    if isinstance(name, str) and name in DTYPES:  # tilec's own names: "f32", "i64"
        return name
    np = _sys.modules.get("numpy")
    if np is not None and not str(name).startswith("torch."):
        try:  # np.int64, np.dtype("f4"), "float32", "<f8", "int"
            d = np.dtype(name)
            name = d.name if d.isnative else "%s (byte order %s)" % (d.name, d.byteorder)
        except (TypeError, ValueError):
            pass
    name = str(name).replace("torch.", "")
    t = _FROM_NAME.get(name)
    if t is None:
        raise TypeError("tilec: %s has dtype %s; tilec takes %s (or tilec's names %s; cast "
                        "it first, e.g. x.astype('float32'))" % (
                            what, name, ", ".join(sorted(_FROM_NAME)), ", ".join(DTYPES)))
    return t


# ---- integers: what ctypes would wrap is refused here ---------------------------------------

_I64 = (-(1 << 63), (1 << 63) - 1)


def _is_bool(v):
    np = _sys.modules.get("numpy")
    return isinstance(v, bool) or (np is not None and isinstance(v, np.bool_))


def _int(v, what, lo=None, hi=None):
    """An int argument, as Python's int: bools (Python's and numpy's), floats and anything
    without __index__ refused (TypeError); one outside [lo, hi] a ValueError naming the
    range (ctypes would wrap it silently)."""
    if _is_bool(v) or not hasattr(v, "__index__"):
        raise TypeError("tilec: %s must be an int, not %r" % (what, v))
    v = v.__index__()
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError("tilec: %s must be an int from %s to %s, not %d" % (
            what, _bound(lo), _bound(hi), v))
    return v


def _bound(b):
    for p in (31, 63):
        if b == (1 << p) - 1:
            return "2^%d - 1" % p
        if b == -(1 << p):
            return "-2^%d" % p
    return str(b)


def _warp_size(v):
    v = _int(v, "warp_size")
    if v not in (0, 32, 64):
        raise ValueError("tilec: warp_size must be 0 (the target's default), 32 or 64, not %d" % v)
    return v


def _cstr(s, what):
    """A str argument as the bytes of a C string: a NUL inside would cut it short silently."""
    if not isinstance(s, str):
        raise TypeError("tilec: %s must be a str, not %r" % (what, s))
    if "\0" in s:
        raise ValueError("tilec: %s contains a NUL character: %r" % (what, s))
    return s.encode("utf-8", "surrogateescape")


# ---- the reduction: arguments to a descriptor ---------------------------------------------

class _AxisError(ValueError, IndexError):
    """numpy's AxisError where numpy is not imported (a GPU tensor's reduction)."""


def _axis_error(msg):
    np = _sys.modules.get("numpy")
    cls = None
    if np is not None:
        cls = getattr(getattr(np, "exceptions", None), "AxisError", None) or \
            getattr(np, "AxisError", None)
    return (cls or _AxisError)(msg)


def _axis_key(axis):
    """axis as the plan cache keys it: None or a tuple of ints (so axis=True never finds the
    plan of axis=1)."""
    if axis is None:
        return None
    seq = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    return tuple(_int(a, "axis") for a in seq)


def _axes(axis, rank):
    if axis is None:
        return tuple(range(rank))
    out = []
    for a in axis:
        if not -rank <= a < rank:
            raise _axis_error("tilec: axis %d is out of range for a tensor of %d dims" % (a, rank))
        a %= rank
        if a in out:
            raise ValueError("tilec: axis %d is given twice" % a)
        out.append(a)
    if not out:
        raise ValueError("tilec: axis=() reduces nothing; give at least one axis")
    return tuple(sorted(out))


def _exact_str(s):
    """s as exactly a str when it is a str subclass (whose __eq__ and __hash__ could make it
    equal, and find the plan of, another op's or nan's name); anything else as given, for
    the checks to name."""
    return str.__str__(s) if isinstance(s, str) and type(s) is not str else s


def _op_index(op):
    if op not in OPS:
        raise ValueError("tilec: unknown op %r; the ops are %s" % (op, ", ".join(OPS)))
    return OPS.index(op)


class _Default:
    """keepdims left out (so keepdim= may stand in for it); shown as its meaning, False."""

    def __repr__(self):
        return "False"


_UNSET = _Default()


def _names(axis, keepdims, dim, keepdim):
    """torch's dim= and keepdim= as aliases of axis= and keepdims=."""
    if dim is not None:
        if axis is not None:
            raise TypeError("tilec: give axis or dim (torch's name for it), not both")
        axis = dim
    if keepdim is not None:
        if keepdims is not _UNSET:
            raise TypeError("tilec: give keepdims or keepdim (torch's name for it), not both")
        return axis, _flag(keepdim, "keepdim")
    return axis, _flag(False if keepdims is _UNSET else keepdims, "keepdims")


def _flag(v, name):
    """A yes/no argument as numpy takes it: a bool, numpy's bool or an integer (its
    __index__); a str, None or a float is a TypeError, as numpy raises, not a truth value."""
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return bool(v)
    try:
        return bool(_operator.index(v))
    except TypeError:
        raise TypeError("tilec: %s must be True or False, not %s" % (name, type(v).__name__)) \
            from None


class _Plan:
    """What a call needs that depends on the tensor's description only: the descriptor
    (and the ctypes arrays it points at), the outputs' shape and dtypes, which of them the
    call returns."""
    __slots__ = ("desc", "keep", "op", "res", "res2", "oshape", "visible")

    def outputs(self):
        """(shape, tilec dtype) of each output the library writes: out, then out2."""
        return [(self.oshape, self.res)] + ([(self.oshape, self.res2)] if self.res2 else [])


def _plan(op, dt, shape, strides, axis, keepdims, nan, out_dtype, correction, index_dtype):
    """Checks the arguments and plans the call (the element strides are dropped when
    they are the dense row-major ones). A 0-d tensor (shape ()) takes axis None only, and
    is reduced as one element."""
    if len(shape) > _MAX_RANK:
        raise ValueError("tilec: the input has %d dims; tilec reduces tensors of up to %d" % (
            len(shape), _MAX_RANK))
    for v in tuple(shape) + tuple(strides):
        if not _I64[0] <= v <= _I64[1]:
            raise ValueError("tilec: extent or stride %d does not fit 64 bits" % v)
    op, nan = _exact_str(op), _exact_str(nan)
    zero_d = not shape
    axes = _axes(axis, len(shape))  # 0-d: any axis is out of range, as numpy's AxisError says
    if zero_d:
        shape, strides, axes = (1,), (1,), (0,)
    dense = strides == tuple(_prod(shape[i + 1:]) for i in range(len(shape))) or \
        _prod(shape) <= 1
    if dense:
        strides = None
    o = _op_index(op)
    d = DTYPES.index(dt)
    if nan not in _NANS:
        raise ValueError("tilec: nan=%r; say one of %s" % (nan, ", ".join(_NANS)))
    if nan != "propagate" and not _lib.tilec_op_compares(o):
        raise ValueError("tilec: nan=%r applies to the ops that compare (%s), not %s" % (
            nan, ", ".join(x for i, x in enumerate(OPS) if _lib.tilec_op_compares(i)), op))
    if not dt.startswith(("f", "bf")):  # an integer holds no NaN: nanmax is max (numpy's)
        nan = "propagate"
    if not _lib.tilec_op_supports(o, d, False):
        raise TypeError("tilec: %s is not defined for %s inputs" % (op, _TO_NAME.get(dt, dt)))
    desc = _Desc()
    desc.op, desc.dtype, desc.rank = o, d, len(shape)
    for i, e in enumerate(shape):
        desc.shape[i] = e
    desc.naxes = len(axes)
    for i, a in enumerate(axes):
        desc.axes[i] = a
    desc.nan = _NANS.index(nan)
    wide = DTYPES[_lib.tilec_dtype_wide(d)]
    if out_dtype is not None:
        want = _tilec_dtype(out_dtype, "dtype=")
        if want == wide and wide != dt:
            desc.widen = True
        elif want != dt:
            name = _TO_NAME.get(dt, dt)
            raise TypeError("tilec: dtype=%s for a %s input; tilec writes %s%s" % (
                _TO_NAME[want], name, name, ", or %s (the wide dtype)" % _TO_NAME[wide] if wide != dt else
                " (it has no wider dtype): leave dtype out"))
    elif dt in ("i32", "u32") and op in _INT_SUMS:  # numpy's rule: an integer sum is int64
        desc.widen = True
    res = wide if desc.widen else dt
    res2 = None
    nout = _lib.tilec_op_outputs(o)
    if nout == 2:
        res2 = DTYPES[_lib.tilec_op_second_dtype(o, DTYPES.index(res))]
        if res2 in ("i32", "i64") and op.startswith("arg"):
            want = None if index_dtype is None else _tilec_dtype(index_dtype, "index_dtype=")
            if want not in (None, "i64", "i32"):
                raise TypeError("tilec: index_dtype=%r; say int64 or int32" % (index_dtype,))
            if want == "i32":
                desc.index_i32, res2 = True, "i32"
    if index_dtype is not None and not op.startswith("arg"):
        raise TypeError("tilec: index_dtype applies to argmax and argmin, not %s" % op)
    corr = None
    if correction is not None and not _lib.tilec_op_takes_correction(o):
        raise TypeError("tilec: correction applies to var and std, not %s" % op)
    if _lib.tilec_op_takes_correction(o):  # numpy's ddof=0 unless given
        corr = _c_i64(0 if correction is None else _int(correction, "correction", 0, _I64[1]))
        desc.correction = _ctypes.pointer(corr)
    st = None
    if strides is not None:
        st = (_c_i64 * len(shape))(*strides)
        desc.strides = _ctypes.cast(st, _ctypes.POINTER(_c_i64))
    p = _Plan()
    p.desc, p.keep, p.op, p.res, p.res2 = desc, (st, corr), op, res, res2
    p.oshape = () if zero_d else _out_shape(shape, axes, keepdims)
    # what the call gives back: argmax / argmin their indices (out2), aminmax both
    p.visible = (1,) if op.startswith("arg") else (0, 1) if res2 else (0,)
    return p


# numpy's dtype rules for integer inputs (the package's namespace; tilec.torch has torch's):
# an integer sum, product or sum of squares is int64 (tilec_dtype_wide: numpy gives uint32
# uint64, which tilec does not have), and the ops of floats (mean, var, ...) reduce an
# integer input as float64
_INTS = ("i32", "u32", "i64")
_INT_SUMS = ("sum", "prod", "sumsq")


_PLANS_MAX = 1024  # descriptors a context keeps; a program that makes more just plans again


def _cached_plan(ctx, req, shape, strides, dt):
    """_plan's answer for request req = (op, axis, keepdims, dtype, nan, correction,
    index_dtype) on a tensor of this description, kept by the context (whose lock the caller
    holds: a call writes the descriptor's stream and out2 before it reduces). axis and
    correction are made ints first, so a key equal to a good one (True == 1) is checked
    as itself; op and nan exactly str, so a str subclass finds only its own name's plan."""
    op, axis, keepdims, out_dtype, nan, correction, index_dtype = req
    op, nan = _exact_str(op), _exact_str(nan)
    axis, keepdims = _axis_key(axis), bool(keepdims)
    correction = None if correction is None else _int(correction, "correction")
    args = (op, dt, shape, strides, axis, keepdims, nan, out_dtype, correction, index_dtype)
    try:  # the dtypes as tilec's names: an object's dtype attribute may change, a str
        # subclass compare as another dtype; a plan is found only by what it was planned for
        key = args[:7] + (None if out_dtype is None else _tilec_dtype(out_dtype, "dtype="),
                          correction,
                          None if index_dtype is None else _tilec_dtype(index_dtype, "index_dtype="))
        p = ctx.plans.get(key)
    except TypeError:  # a dtype that is not one: _plan says so, after the checks before it
        return _plan(*args)
    if p is None:
        p = _plan(*args)
        if len(ctx.plans) >= _PLANS_MAX:
            ctx.plans.clear()
        ctx.plans[key] = p
    return p


def _out_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else e for i, e in enumerate(shape))
    return tuple(e for i, e in enumerate(shape) if i not in axes)


def _prod(t):
    p = 1
    for e in t:
        p *= e
    return p


# ---- out=: the same forms on every path ----------------------------------------------------

def _slots(out, plans):
    """out= as one entry per output the library writes (None where the call allocates),
    checked for count: None; one array, or a tuple or list of what the call returns (an
    argmax's indices, an aminmax's (min, max), var_mean's (var, mean)); or of every output
    (an argmax's (values, indices))."""
    specs = [s for p in plans for s in p.outputs()]
    visible, at = [], 0
    for p in plans:
        visible += [at + i for i in p.visible]
        at += len(p.outputs())
    if out is None:
        return specs, [None] * len(specs), visible
    given = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(given) == len(specs):
        slots = given
    elif len(given) == len(visible):
        slots = [None] * len(specs)
        for i, g in zip(visible, given):
            slots[i] = g
    else:
        what = "%d result%s" % (len(visible), "s" if len(visible) > 1 else "")
        if len(specs) != len(visible):
            what += " (or %d outputs: the values and the indices)" % len(specs)
        raise TypeError("tilec: this call returns %s; out= gives %d" % (what, len(given)))
    mine = [g for g in slots if g is not None]
    for i, g in enumerate(mine):
        if any(g is h for h in mine[:i]):
            raise ValueError("tilec: out= names the same array twice; give each output its own")
    return specs, slots, visible


def _returned(arrays, visible):
    r = [arrays[i] for i in visible]
    return r[0] if len(r) == 1 else tuple(r)


# ---- host arrays (numpy): copied to the GPU, or run on the simulator -------------------------

class _Blocks:
    """tilec_mem_alloc blocks of a context, freed together (the caller holds its lock)."""

    def __init__(self, ctx):
        self.ctx, self.ptrs = ctx, []

    def alloc(self, nbytes):
        p = _vp()
        self.ctx.call(_lib.tilec_mem_alloc, "allocating %d bytes" % nbytes,
                      _builtins.max(nbytes, 1), _ctypes.byref(p))
        self.ptrs.append(p)
        return p.value

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.ptrs:
            _lib.tilec_mem_free(self.ctx.h, p)


def _host_input(x):
    """A numpy array tilec can read: native byte order, whole-element strides."""
    import numpy as np
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError("tilec: a masked array's mask would be ignored; reduce x.filled(v) or "
                        "x.compressed() instead")
    x = np.asarray(x)
    if not x.dtype.isnative:  # big-endian data: tilec reads elements in the machine's order
        x = x.astype(x.dtype.newbyteorder("="))
    dt = _tilec_dtype(x.dtype.name)
    if x.ndim == 0 or any(s % x.itemsize for s in x.strides):
        x = np.ascontiguousarray(x).reshape(x.shape)
    return x, dt


def _check_host_out(g, shape, t):
    import numpy as np
    if not isinstance(g, np.ndarray):
        raise TypeError("tilec: out for a numpy input must be a numpy array, not %s" %
                        type(g).__name__)
    if tuple(g.shape) != tuple(shape) or g.dtype != np.dtype(_TO_NAME[t]):
        raise ValueError("tilec: out has shape %s and dtype %s; the result has shape %s and "
                         "dtype %s" % (tuple(g.shape), g.dtype, tuple(shape), _TO_NAME[t]))
    if not g.flags.writeable:
        raise ValueError("tilec: out is read-only")


def _reduce_host(x, reqs, out, backend):
    """numpy arrays: the bytes the view spans are copied into the backend's memory once (a
    GPU's when one is usable, else the simulator's), each request reduced there with the
    view's own strides, the results copied back."""
    import numpy as np
    x, dt = _host_input(x)
    shape, item = x.shape, x.itemsize
    strides = tuple(s // item for s in x.strides)
    ctx, warn = _host_context(backend)
    with ctx.lock:
        plans = [_cached_plan(ctx, r, shape, strides, dt) for r in reqs]
        specs, slots, visible = _slots(out, plans)
        for g, (s, t) in zip(slots, specs):  # every out before any work
            if g is not None:
                _check_host_out(g, s, t)
        mine = [g for g in slots if g is not None]
        for i, g in enumerate(mine):
            if any(np.shares_memory(g, h) for h in mine[:i]):
                raise ValueError("tilec: the arrays of out= overlap; give each output its own")
        results = [np.empty(s, dtype=_TO_NAME[t]) for s, t in specs]
        # the view's bytes: from its lowest to its highest element, whatever the strides' signs
        n = x.size
        lo = _builtins.sum(s * (e - 1) for s, e in zip(x.strides, shape) if s < 0) if n else 0
        hi = _builtins.sum(s * (e - 1) for s, e in zip(x.strides, shape) if s > 0) + item \
            if n else 0
        with _Blocks(ctx) as mem:
            base = mem.alloc(hi - lo)
            if n:
                ctx.call(_lib.tilec_mem_upload, "uploading the input", base,
                         x.ctypes.data + lo, hi - lo)
            dev = [mem.alloc(r.nbytes) for r in results]
            at = 0
            for p in plans:
                k = len(p.outputs())
                _launch(ctx, p, base - lo, None, dev[at], dev[at + 1] if k == 2 else None)
                at += k
            ctx.call(_lib.tilec_synchronize, "waiting for the device")
            for r, d in zip(results, dev):
                if r.nbytes:
                    ctx.call(_lib.tilec_mem_download, "downloading the output", r.ctypes.data,
                             d, r.nbytes)
    if warn:
        _warn_simulator("host arrays (numpy, torch CPU tensors) are reduced")
    for i, g in enumerate(slots):
        if g is not None:
            g[...] = results[i]
            results[i] = g
    return _returned(results, visible)


def _launch(ctx, p, ptr, stream, o1, o2):
    """One tilec_reduce of plan p on the stream; the caller holds ctx's lock."""
    desc = p.desc
    desc.stream, desc.out2 = stream, o2
    try:
        ctx.call(_lib.tilec_reduce, "reduce %s" % p.op, _ctypes.byref(desc), ptr, o1)
    finally:
        desc.stream, desc.out2 = None, None


def _reduce_cpu_torch(x, reqs, out, backend):
    """A torch CPU tensor: through numpy (views of the same memory, out= too), the results
    torch tensors again."""
    import torch
    if x.dtype == torch.bfloat16:
        raise TypeError("tilec: a bfloat16 CPU tensor has no numpy view; reduce it on the GPU "
                        "(x.cuda()) or as float32 (x.float())")
    views = {}

    def view(o):
        if not isinstance(o, torch.Tensor) or o.device.type != "cpu":
            raise TypeError("tilec: out for a CPU tensor must be a CPU tensor, not %s" % (
                getattr(o, "device", type(o).__name__),))
        if o.requires_grad:
            raise ValueError("tilec: out requires grad; tilec writes outside autograd")
        if o.dtype == torch.bfloat16:
            raise TypeError("tilec: a bfloat16 CPU tensor has no numpy view")
        v = o.numpy()
        views[id(v)] = o
        return v
    if out is not None:
        out = [view(o) for o in out] if isinstance(out, (tuple, list)) else view(out)
    r = _reduce_host(x.detach().numpy(), reqs, out, backend)

    def back(a):
        return views[id(a)] if id(a) in views else torch.from_numpy(a)
    return tuple(back(a) for a in r) if isinstance(r, tuple) else back(r)


# ---- GPU tensors: on their device and stream ---------------------------------------------

class _Gpu:
    """What a GPU tensor says of itself: pointer, shape, element strides, dtype, device,
    stream, and how to allocate an output in its library."""
    __slots__ = ("ptr", "shape", "strides", "dtype", "device", "stream", "empty", "backend",
                 "keep", "readonly")


def _torch_view(x, torch):
    v = _Gpu()
    v.ptr, v.shape, v.strides = x.data_ptr(), tuple(x.shape), tuple(x.stride())
    v.dtype = _tilec_dtype(str(x.dtype))
    v.device = x.device.index if x.device.index is not None else torch.cuda.current_device()
    v.stream = torch.cuda.current_stream(v.device).cuda_stream
    v.backend = "hip" if getattr(torch.version, "hip", None) else "cuda"
    v.readonly = False
    dev = x.device

    def empty(shape, t):
        return torch.empty(shape, dtype=getattr(torch, _TO_NAME[t]), device=dev)
    v.empty, v.keep = empty, x
    return v


def _cai_view(x):
    cai = x.__cuda_array_interface__
    v = _Gpu()
    typestr = cai["typestr"]
    if typestr == "<V2" and "bfloat16" in str(getattr(x, "dtype", "")):
        v.dtype = "bf16"
    elif typestr in _FROM_TYPESTR:
        v.dtype = _FROM_TYPESTR[typestr]
    else:
        raise TypeError("tilec: the input has typestr %s; tilec takes %s" % (
            typestr, ", ".join(sorted(_FROM_TYPESTR))))
    item = int(typestr[2:])
    v.shape = tuple(cai["shape"])
    if cai.get("strides") is None:
        v.strides = tuple(int(_prod(v.shape[i + 1:])) for i in range(len(v.shape)))
    else:
        if any(s % item for s in cai["strides"]):
            raise ValueError("tilec: the input's strides %s are not whole elements" % (
                cai["strides"],))
        v.strides = tuple(s // item for s in cai["strides"])
    v.ptr = cai["data"][0]
    v.readonly = bool(cai["data"][1])
    v.stream = cai.get("stream") or None
    v.device, v.backend, v.keep = _cai_device(x), "cuda", x
    mod = type(x).__module__.split(".")[0]
    if mod == "cupy":
        import cupy
        with cupy.cuda.Device(v.device):  # that device's current stream, not the current device's
            v.stream = cupy.cuda.get_current_stream().ptr or None

        def empty(shape, t):
            with cupy.cuda.Device(v.device):
                return cupy.empty(shape, dtype=_TO_NAME[t])
        v.empty = empty
    else:
        v.empty = None
    return v


def _cai_device(x):
    dev = getattr(x, "device", None)
    for attr in ("id", "index"):
        i = getattr(dev, attr, None)
        if isinstance(i, int):
            return i
    return 0


def _check_gpu_out(g, v, shape, t):
    _same_device(g, v)
    gv = _torch_or_cai(g)
    if gv.shape != tuple(shape) or gv.dtype != t:
        raise ValueError("tilec: out has shape %s and dtype %s; the result has shape %s "
                         "and dtype %s" % (gv.shape, _TO_NAME.get(gv.dtype), tuple(shape),
                                           _TO_NAME[t]))
    if gv.strides != tuple(_prod(shape[i + 1:]) for i in range(len(shape))) and _prod(shape) > 1:
        raise ValueError("tilec: out must be dense (row-major); its strides are %s" % (
            gv.strides,))


def _reduce_gpu(v, reqs, out, backend):
    _device_backend(backend, v)
    ctx = _context(v.backend, v.device)
    with ctx.lock:
        plans = [_cached_plan(ctx, r, v.shape, v.strides, v.dtype) for r in reqs]
        specs, slots, visible = _slots(out, plans)
        for g, (s, t) in zip(slots, specs):  # every out before any work
            if g is not None:
                _check_gpu_out(g, v, s, t)
        if v.empty is None and any(g is None for g in slots):
            raise TypeError("tilec: tilec allocates outputs for torch and CuPy tensors; for a "
                            "%s pass out= (%s)" % (type(v.keep).__name__, ", ".join(
                                "a dense array of shape %s, dtype %s" % (s, _TO_NAME[t])
                                for s, t in specs)))
        outs = [g if g is not None else v.empty(s, t) for g, (s, t) in zip(slots, specs)]
        at = 0
        for p in plans:
            k = len(p.outputs())
            _launch(ctx, p, v.ptr, v.stream, _gpu_ptr(outs[at]),
                    _gpu_ptr(outs[at + 1]) if k == 2 else None)
            at += k
    return _returned(outs, visible)


_TORCH = {}  # torch's dtypes <-> tilec's, the backend and the raw-stream call, made once


def _torch_tables(torch):
    t = {}  # made whole, then published in one step: another thread sees all of it or none
    for name, td in _FROM_NAME.items():
        if hasattr(torch, name):
            t[getattr(torch, name)] = td
            t[td] = getattr(torch, name)
    t["backend"] = "hip" if getattr(torch.version, "hip", None) else "cuda"
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    t["stream"] = raw if raw else (lambda d: torch.cuda.current_stream(d).cuda_stream)
    with _contexts_lock:
        if not _TORCH:
            _TORCH.update(t)
    return _TORCH


def _reduce_torch(x, torch, reqs, out, backend):
    """A CUDA (or ROCm) torch tensor: the common case, kept short — the plan is looked up
    by the tensor's description, outputs are x.new_empty, the stream torch's current."""
    if out is not None or len(reqs) > 1 or backend is not None:
        return _reduce_gpu(_torch_view(x, torch), reqs, out, backend)
    tt = _TORCH if "stream" in _TORCH else _torch_tables(torch)
    dt = tt.get(x.dtype) or _tilec_dtype(str(x.dtype))
    dev = x.get_device()
    ctx = _contexts.get((tt["backend"], dev)) or _context(tt["backend"], dev)
    with ctx.lock:
        p = _cached_plan(ctx, reqs[0], tuple(x.shape), tuple(x.stride()), dt)
        o1 = x.new_empty(p.oshape, dtype=tt[p.res])
        o2 = x.new_empty(p.oshape, dtype=tt[p.res2]) if p.res2 else None
        _launch(ctx, p, x.data_ptr(), tt["stream"](dev), o1.data_ptr(),
                o2.data_ptr() if o2 is not None else None)
    return _returned([o1, o2], p.visible)


def _same_device(g, v):
    """out= must be writable memory of the input's GPU: a host array there would hand the
    kernel a host pointer."""
    torch = _sys.modules.get("torch")
    if torch is not None and isinstance(g, torch.Tensor):
        if g.device.type != "cuda" or g.get_device() != v.device:
            raise ValueError("tilec: out is on %s; the input is on GPU %d: give an out there" % (
                g.device, v.device))
    elif hasattr(g, "__cuda_array_interface__"):
        cai = g.__cuda_array_interface__
        if cai["data"][1]:
            raise ValueError("tilec: out is read-only")
        if _cai_device(g) != v.device:
            raise ValueError("tilec: out is on GPU %d; the input on GPU %d" % (_cai_device(g), v.device))
    else:
        raise TypeError("tilec: out for a GPU input must be a GPU array on its device (a torch "
                        "tensor or __cuda_array_interface__), not %s" % type(g).__name__)


def _gpu_ptr(t):
    if hasattr(t, "data_ptr"):
        return t.data_ptr()
    return t.__cuda_array_interface__["data"][0]


def _torch_or_cai(x):
    torch = _sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _torch_view(x, torch)
    return _cai_view(x)


def _kind(x):
    """Where x lives: "torch-gpu", "torch-cpu", "jax", "cai" (a GPU array with
    __cuda_array_interface__), "dlpack-gpu", or "host" (numpy and anything numpy takes)."""
    torch = _sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return "torch-gpu" if x.device.type == "cuda" else "torch-cpu"
    mod = type(x).__module__.split(".")[0]
    if mod in ("jax", "jaxlib") and hasattr(x, "__dlpack__"):
        return "jax"
    if hasattr(x, "__cuda_array_interface__"):
        return "cai"
    if hasattr(x, "__dlpack__") and mod not in ("numpy", "builtins"):
        dev = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else (1, 0)
        if dev[0] in (2, 10):  # kDLCUDA, kDLROCM
            return "dlpack-gpu"
    return "host"


def _float_ops():
    """The ops of floats only (mean, var, std, norm2, logsumexp), from the library's table."""
    i32, f64 = DTYPES.index("i32"), DTYPES.index("f64")
    return tuple(o for i, o in enumerate(OPS) if _lib.tilec_op_supports(i, f64, False) and
                 not _lib.tilec_op_supports(i, i32, False))


_FLOAT_OPS = _float_ops()


def _int_name(x, k):
    """numpy's name of x's dtype when it is one of tilec's integer dtypes, else None."""
    if k == "host":
        import numpy as np
        name = getattr(getattr(x, "dtype", None), "name", None) or np.asarray(x).dtype.name
    else:
        name = str(getattr(x, "dtype", "")).replace("torch.", "")
    return name if _FROM_NAME.get(name) in _INTS else None


def _as_float(x, k, reqs):
    """numpy's rule for an integer input of an op of floats (mean, var, std, norm2,
    logsumexp): reduced as float64, or as dtype= where that is a floating dtype (numpy's
    np.mean(x, dtype=np.float32)). x cast once, in its own library; the requests' dtype=
    then the input's."""
    if not any(r[0] in _FLOAT_OPS for r in reqs if isinstance(r[0], str)):
        return x, reqs
    if _int_name(x, k) is None:
        return x, reqs
    want = "float64"
    for r in reqs:
        if r[3] is not None:
            t = _tilec_dtype(r[3], "dtype=")
            if t.startswith(("f", "bf")):
                want = _TO_NAME[t]
    if k.startswith("torch"):
        torch = _sys.modules["torch"]
        x = x.to(getattr(torch, want))
    elif k == "host":
        import numpy as np
        x = np.asarray(x).astype(want)
    else:
        x = x.astype(want)
    return x, [r[:3] + (None,) + r[4:] if r[3] is not None and
               _tilec_dtype(r[3], "dtype=") == _FROM_NAME[want] else r for r in reqs]


def _dispatch(x, reqs, out, backend):
    reqs = [(_exact_str(r[0]),) + tuple(r[1:4]) + (_exact_str(r[4]),) + tuple(r[5:])
            for r in reqs]  # op and nan as the names they spell, for every check after
    k = _kind(x)
    x, reqs = _as_float(x, k, reqs)
    if k == "torch-gpu":
        return _reduce_torch(x, _sys.modules["torch"], reqs, out, backend)
    if k == "torch-cpu":
        return _reduce_cpu_torch(x, reqs, out, backend)
    if k in ("jax", "dlpack-gpu"):
        return _reduce_dlpack(x, reqs, out, backend)
    if k == "cai":
        return _reduce_gpu(_cai_view(x), reqs, out, backend)
    return _reduce_host(x, reqs, out, backend)


def reduce(x, op="sum", axis=None, keepdims=_UNSET, dtype=None, nan="propagate", out=None,
           correction=None, index_dtype=None, *, dim=None, keepdim=None, backend=None):
    """Reduces x with op over axis (None: every axis; an int or a tuple, negative from the
    end; dim= is torch's name for it, keepdim= for keepdims). numpy arrays (and torch CPU
    tensors) run on a GPU when one is usable, copied there and back, else on tilec's
    simulator (backend= "auto", "cuda", "hip" or "sim"; None: $TILEC_BACKEND, else "auto");
    torch and CuPy tensors (anything with __cuda_array_interface__, or __dlpack__ through
    torch or CuPy) on their GPU, on the current stream, with their strides, the output made
    by their library. dtype: the output's dtype, the input's or its wide dtype (f16, bf16 ->
    f32, f32 -> f64, i32, u32 -> i64); left out, numpy's: an int32 or uint32 sum, prod or
    sumsq is int64, and mean, var, std, norm2 and logsumexp reduce an integer input as
    float64; nan: "propagate" or "ignore" (max, min, argmax, argmin, aminmax; an integer
    input holds no NaN, so "ignore" is the plain op, as numpy's nanmax of integers);
    correction: var and std's divisor is n - correction (default 0, numpy's ddof; an int,
    never a bool); index_dtype: argmax / argmin
    indices int64 (default) or int32. argmax and argmin return the indices; aminmax
    (min, max). out: an array, or a tuple or list of what the call returns (argmax and
    argmin may take (values, indices)), all checked before any work. Raises tilec.Error
    (ArgumentError, a ValueError, for what the library refuses as input) with the
    library's diagnostics."""
    axis, keepdims = _names(axis, keepdims, dim, keepdim)
    reqs = [(op, axis, keepdims, dtype, nan, correction, index_dtype)]
    # exactly str: a subclass's __eq__ and __hash__ could find another op's callable
    fast = _FAST.get((op, nan)) if type(op) is str and type(nan) is str else None
    if fast is not None:  # the compiled core: a call it has seen planned runs there
        return fast.run(x, axis, keepdims, dtype, correction, index_dtype, out, backend,
                        _dispatch, (x, reqs, out, backend))
    return _dispatch(x, reqs, out, backend)


def _reduce_py(x, op="sum", axis=None, keepdims=_UNSET, dtype=None, nan="propagate", out=None,
               correction=None, index_dtype=None, *, dim=None, keepdim=None, backend=None):
    """reduce on the Python path only: where the compiled core sent a call it does not serve."""
    axis, keepdims = _names(axis, keepdims, dim, keepdim)
    return _dispatch(x, [(op, axis, keepdims, dtype, nan, correction, index_dtype)], out,
                     backend)


def _correction(name, kw, default):
    """numpy's ddof or the array API's and torch's correction (one of them), else default."""
    if "ddof" in kw and "correction" in kw:
        raise TypeError("tilec.%s: give ddof or correction, not both" % name)
    c = kw.pop("ddof", kw.pop("correction", None))
    return default if c is None else c


def _moments(name, op, x, axis, keepdims, dim, keepdim, dtype, out, backend, kw):
    corr = _correction(name, kw, None)  # None: numpy's ddof=0 (_plan)
    if kw:
        raise TypeError("tilec.%s got an unexpected keyword argument %r" % (name, next(iter(kw))))
    axis, keepdims = _names(axis, keepdims, dim, keepdim)
    return _dispatch(x, [(op, axis, keepdims, dtype, "propagate", corr, None),
                         ("mean", axis, keepdims, dtype, "propagate", None, None)], out, backend)


def var_mean(x, axis=None, *, keepdims=_UNSET, dtype=None, out=None, dim=None, keepdim=None,
             backend=None, **kw):
    """(var, mean) of x over axis, as torch.var_mean but in the package's (numpy's)
    convention: correction (or ddof=) 0 by default, as tilec.var. Two reductions of one
    copy of x (a host array is copied to the device once): the library's var does not hand
    out its mean. out: (var, mean)."""
    return _moments("var_mean", "var", x, axis, keepdims, dim, keepdim, dtype, out, backend, kw)


def std_mean(x, axis=None, *, keepdims=_UNSET, dtype=None, out=None, dim=None, keepdim=None,
             backend=None, **kw):
    """(std, mean) of x over axis, as torch.std_mean: correction (or ddof=) 0 by default,
    as tilec.std. out: (std, mean)."""
    return _moments("std_mean", "std", x, axis, keepdims, dim, keepdim, dtype, out, backend, kw)


def _reduce_dlpack(x, reqs, out, backend):
    """A GPU array known by __dlpack__ only (JAX's): viewed without a copy by torch (or
    CuPy), reduced there, the results handed back through DLPack to the array's library."""
    if out is not None:  # before any work: its arrays cannot be written in place (JAX's)
        raise TypeError("tilec: out= is not taken for arrays known by __dlpack__ only; use the result")
    mod = type(x).__module__.split(".")[0]
    if mod in ("jax", "jaxlib"):
        import jax
        if not jax.config.jax_enable_x64:  # JAX's indices are int32 unless x64 is on
            reqs = [r[:6] + ("int32",) if r[0].startswith("arg") and r[6] is None else r
                    for r in reqs]
    try:
        import torch
        view = torch.from_dlpack(x)
    except ImportError:
        import cupy
        view = cupy.from_dlpack(x)
    r = _dispatch(view, reqs, None, backend)
    if mod in ("jax", "jaxlib"):
        import jax.dlpack
        back = jax.dlpack.from_dlpack
        r = tuple(back(a) for a in r) if isinstance(r, tuple) else back(r)
    return r


# ---- the compiled core (python/tilec/_core.c): the hot path, when it is built -------------

class PurePythonWarning(UserWarning):
    """Issued once, at import, when the package's compiled core (tilec._core) could not be
    found or loaded: every call then runs on the pure-Python path, with the same results and
    errors but several microseconds slower. TILEC_PURE_PYTHON=1 chooses that path without
    the warning."""


def _core_candidates():
    env = _os.environ.get("TILEC_CORE")
    if env:
        yield env
        return  # asked for one module: never another behind the user's back
    here = _os.path.dirname(_os.path.abspath(__file__))
    yield _os.path.join(here, "_core.abi3.so")  # installed in the package
    yield _os.path.join(_os.path.dirname(_os.path.abspath(library_path)), "_core.abi3.so")  # the build


def _load_core():
    """The compiled core, bound to the library loaded above; None (with one
    PurePythonWarning saying why) where it is absent or not this package's."""
    if _os.environ.get("TILEC_PURE_PYTHON", "") not in ("", "0"):
        return None
    import importlib.machinery
    import importlib.util
    tried = []
    for path in _core_candidates():
        if not _os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            loader = importlib.machinery.ExtensionFileLoader(__name__ + "._core", path)
            spec = importlib.util.spec_from_loader(loader.name, loader, origin=path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        except (ImportError, OSError) as e:
            tried.append("%s (%s)" % (path, e))
            continue
        abi, size = getattr(mod, "ABI", None), getattr(mod, "DESC_SIZE", None)
        if abi != _ABI or size != _ctypes.sizeof(_Desc) or not hasattr(mod, "Reducer"):
            tried.append("%s (not this package's core: built for libtilec %s with a %r-byte "
                         "descriptor; this package speaks %s, %d bytes)" % (
                             path, abi, size, _ABI, _ctypes.sizeof(_Desc)))
            continue
        try:
            mod.bind(tuple(_ctypes.cast(f, _vp).value for f in (
                _lib.tilec_reduce, _lib.tilec_mem_alloc, _lib.tilec_mem_free,
                _lib.tilec_mem_upload, _lib.tilec_mem_download, _lib.tilec_synchronize)),
                _core_plan, _core_fail)
        except Exception as e:  # noqa: BLE001 (any refusal: the Python path, with the warning)
            tried.append("%s (its bind() refused the package: %s)" % (path, e))
            continue
        _sys.modules[__name__ + "._core"] = mod
        return mod
    _warnings.warn("tilec: the compiled core (_core.abi3.so) was not loaded, so every call runs "
                   "on the pure-Python path: the same results, several microseconds slower a "
                   "call. Build it (meson setup build && ninja -C build: it needs Python.h, "
                   "Debian's python3-dev), or set TILEC_CORE to its path; TILEC_PURE_PYTHON=1 "
                   "chooses this path without the warning. Tried: " + "; ".join(tried),
                   PurePythonWarning, stacklevel=3)
    return None


def _core_plan(x, kind, req):
    """The compiled core's first call of a key: the package checks and plans it as its own
    path does (raising the same errors) and hands over what the core keeps: (context, its
    handle, its lock, the plan, the descriptor's address, outputs, which are returned as a
    bit mask, their shape, dtypes as the tensor's library spells them, and byte sizes). None:
    not a call for the core (a host array that must be copied first)."""
    op, axis, keepdims, dtype, nan, correction, index_dtype = req
    req = (OPS[op], axis, keepdims, dtype, _NANS[nan], correction, index_dtype)
    if kind == "torch":
        torch = _sys.modules["torch"]
        tt = _TORCH if "stream" in _TORCH else _torch_tables(torch)
        v = _torch_view(x, torch)
        ctx, warn, shape, strides, dt = _context(v.backend, v.device), False, v.shape, v.strides, v.dtype
        spell = tt.__getitem__
    else:
        import numpy as np
        if kind == "cupy":
            v = _cai_view(x)
            ctx, warn, shape, strides, dt = _context(v.backend, v.device), False, v.shape, v.strides, v.dtype
        else:
            if not x.dtype.isnative or not x.ndim or any(s % x.itemsize for s in x.strides):
                return None  # copied first: the package's path does it, once
            y, dt = _host_input(x)
            if y is not x:
                return None
            ctx, warn = _host_context(None)
            shape, strides = x.shape, tuple(s // x.itemsize for s in x.strides)

        def spell(t):
            return np.dtype(_TO_NAME[t])
    if req[0] in _FLOAT_OPS and dt in _INTS:
        return None  # an integer input of an op of floats: the package's path casts it
    with ctx.lock:
        p = _cached_plan(ctx, req, shape, strides, dt)
    if warn:
        _warn_simulator("host arrays (numpy, torch CPU tensors) are reduced")
    outs = p.outputs()
    n = _prod(p.oshape)
    return (ctx, ctx.h.value, ctx.lock, p, _ctypes.addressof(p.desc), len(outs),
            _builtins.sum(1 << i for i in p.visible), p.oshape,
            spell(outs[0][1]), spell(outs[1][1]) if len(outs) > 1 else None,
            n * _lib.tilec_dtype_size(DTYPES.index(outs[0][1])),
            n * _lib.tilec_dtype_size(DTYPES.index(outs[1][1])) if len(outs) > 1 else 0)


def _core_fail(ctx, st, what, plan):
    """Raises the error the package's own path raises for the status (_launch's words)."""
    ctx.check(st, "reduce %s" % plan.op if what == "reduce" else what)


_CORE = _load_core()
_FAST = {}  # (op, nan) -> the core's callable, for reduce()


def _fast_spelling(f, op, nan):
    """The spelling f as the core's callable (which runs f for what it does not serve), or f."""
    if _CORE is None:
        return f
    r = _Spelling(OPS.index(op), _NANS.index(nan), bool(_lib.tilec_op_takes_correction(
        OPS.index(op))), f)
    r.__name__ = r.__qualname__ = f.__name__
    r.__doc__, r.__module__ = f.__doc__, __name__
    r.__text_signature__ = _spelling_signature(op, nan)  # what help() and inspect show
    _FAST[(op, nan)] = _Reducer(OPS.index(op), _NANS.index(nan), False, _dispatch)
    return r


if _CORE is not None:
    class _Spelling(_CORE.Reducer):
        """A numpy spelling (tilec.sum, ...) served by the compiled core."""

        def __repr__(self):
            return "<tilec function %s>" % self.__name__

        def __reduce__(self):  # pickled by name, as a function is: tilec.sum
            return self.__name__

        def __copy__(self):
            return self

        def __deepcopy__(self, memo):
            return self
    _Reducer = _CORE.Reducer


# ---- the numpy spellings: one function per op, read from the op table ----------------------

def _spelling_keywords(op, nan):
    """The keywords a spelling takes beside dtype, out and keepdims, with their defaults, read
    from the op table: those of tilec.reduce that apply to it."""
    o = OPS.index(op)
    kws = ["dim=None", "keepdim=None", "backend=None"]
    if _lib.tilec_op_takes_correction(o):
        kws += ["ddof=0", "correction=None"]
    if op.startswith("arg"):  # the rule _desc applies to index_dtype
        kws.append("index_dtype=None")
    if nan == "propagate" and _lib.tilec_op_compares(o):
        kws.append("nan='propagate'")
    return kws


def _spelling_signature(op, nan):
    """A spelling's signature, as __text_signature__ spells it: only x and axis positional."""
    return "(x, axis=None, *, dtype=None, out=None, keepdims=False, %s)" % ", ".join(
        _spelling_keywords(op, nan))


def _spelling_doc(op, nan, name):
    o = OPS.index(op)
    kws = [k.split("=")[0] for k in _spelling_keywords(op, nan)]
    doc = ["numpy's %s of x over axis (None: every axis; an int or a tuple of ints, negative "
           "from the end). Only x and axis are positional; dtype, out, keepdims, %s are "
           "keywords." % (name, ", ".join(kws))]
    if nan == "ignore":
        doc.append("NaN are ignored (tilec.%s propagates them)." % op)
    doc.append("dtype: the result's dtype; result dtypes follow numpy's rules (see "
               "docs/python.md). out: an array for the result, or a tuple of what the call "
               "returns, checked before any work. keepdims: keep the reduced dims with extent "
               "1; dim and keepdim are torch's names for axis and keepdims. backend: where a "
               "host array runs (\"auto\", \"cuda\", \"hip\" or \"sim\"; None: "
               "$TILEC_BACKEND, else \"auto\").")
    if "ddof" in kws:
        doc.append("ddof (or correction): the divisor is n - ddof; 0 by default, as in numpy.")
    if "index_dtype" in kws:
        doc.append("Returns the indices; index_dtype: their dtype, \"int64\" (the default) or "
                   "\"int32\".")
    if "nan" in kws:
        doc.append("nan: \"propagate\" (the default: a NaN in a slice gives NaN) or "
                   "\"ignore\" (as tilec.nan%s)." % op)
    if not _lib.tilec_op_compares(o) and _lib.tilec_op_supports(o, DTYPES.index("i32"), False):
        doc.append("Integer results are computed in the result's dtype and wrap around on "
                   "overflow, as numpy's do: an explicit narrow dtype= (int32) wraps where a "
                   "wide one (int64) would not.")
    return "\n\n".join(doc)


def _spelling(op, nan):
    name = ("nan" if nan == "ignore" else "") + op
    corrects = bool(_lib.tilec_op_takes_correction(OPS.index(op)))
    takes = ("dim", "keepdim", "backend", "nan", "index_dtype", "correction") + (
        ("ddof",) if corrects else ())  # tilec.reduce's keywords, which say what is wrong

    def f(x, axis=None, *, dtype=None, out=None, keepdims=_UNSET, **kw):
        if "nan" in kw and nan == "ignore":
            raise TypeError("tilec.%s takes no nan=: it ignores NaN (tilec.%s propagates it)"
                            % (name, op))
        for k in kw:
            if k not in takes:
                raise TypeError("tilec.%s got an unexpected keyword argument %r; it takes x, "
                                "axis and the keywords dtype, out, keepdims, %s" % (
                                    name, k, ", ".join(a.split("=")[0] for a in
                                                       _spelling_keywords(op, nan))))
        kw.setdefault("nan", nan)
        if corrects:  # numpy's ddof (default 0) or the array API's correction
            kw["correction"] = _correction(name, kw, 0)
        return _reduce_py(x, op, axis=axis, keepdims=keepdims, dtype=dtype, out=out, **kw)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = _spelling_doc(op, nan, name)
    return f


for _op in OPS:
    globals()[_op] = _fast_spelling(_spelling(_op, "propagate"), _op, "propagate")
    __all__.append(_op)
    if _lib.tilec_op_compares(OPS.index(_op)):
        globals()["nan" + _op] = _fast_spelling(_spelling(_op, "ignore"), _op, "ignore")
        __all__.append("nan" + _op)
del _op
amax, amin = max, min  # noqa: F821 (made above)
__all__ += ["amax", "amin"]


# ---- numpy's nan spellings of the ops that add: NaN as a missing element -----------------
#
# The library ignores NaN only where it compares (nan="ignore"); nansum, nanprod, nanmean,
# nanvar and nanstd are numpy's algorithm over tilec's reductions, in the input's own
# library (numpy, torch, CuPy, JAX): NaN replaced by 0 (by 1 for nanprod), the count of the
# other elements a sum of the mask. An all-NaN (or empty) slice gives numpy's results: 0 for
# nansum, 1 for nanprod, NaN for nanmean, nanvar and nanstd, with numpy's RuntimeWarning
# ("Mean of empty slice", "Degrees of freedom <= 0 for slice."). Integer inputs hold no NaN:
# they are the plain spellings' (numpy's np.nansum(int32) is np.sum's int64).

def _xp(x, k):
    """The array module of x (its kind k from _kind) and x as that module's array."""
    if k.startswith("torch"):
        return _sys.modules["torch"], x
    if k == "host":
        import numpy as np
        return np, _host_input(x)[0]
    mod = type(x).__module__.split(".")[0]
    if mod in ("jax", "jaxlib"):
        import jax.numpy as jnp
        return jnp, x
    return _sys.modules[mod], x


def _nan_parts(name, x, axis, keepdims, backend, fill):
    """(module, kind, x with NaN as fill, the mask of NaN, the count of the others over axis
    kept as extent-1 dims) of a float x; None for an integer one."""
    k = _kind(x)
    xp, x = _xp(x, k)
    if _int_name(x, k) is not None:
        return None
    mask = xp.isnan(x)
    filled = xp.where(mask, xp.full_like(x, fill), x)
    keep = ~mask
    keep = keep.to(xp.int32) if k.startswith("torch") else keep.astype("int32")
    count = reduce(keep, "sum", axis=axis, keepdims=True, backend=backend)
    return xp, k, filled, mask, count


def _squeeze(a, axis, keepdims, ndim):
    """a reduced with keepdims=True, as keepdims says."""
    if keepdims or ndim == 0:
        return a
    axes = tuple(range(ndim)) if axis is None else tuple(
        sorted(_i % ndim for _i in (axis if isinstance(axis, (tuple, list)) else (axis,))))
    shape = tuple(e for i, e in enumerate(a.shape) if i not in axes)
    return a.reshape(shape)


def _divide(xp, k, top, count, like):
    """top / count in top's dtype (numpy's _divide_by_count), no warning of a 0 count."""
    if k == "host":
        with xp.errstate(divide="ignore", invalid="ignore"):
            return xp.asarray(xp.true_divide(top, count)).astype(like)
    q = top / count
    return q.to(like) if k.startswith("torch") else q.astype(like)


def _nan_result(r, out):
    np = _sys.modules.get("numpy")
    if np is not None and isinstance(r, np.generic):
        r = np.asarray(r)  # a 0-d array, as tilec.sum gives
    if out is None:
        return r
    out[...] = r
    return out


def _warn_empty(text):
    f, level = _sys._getframe(1), 2  # the user's frame, as _warn_simulator finds it
    while f is not None and f.f_globals.get("__name__") == __name__:
        f, level = f.f_back, level + 1
    _warnings.warn(text, RuntimeWarning, stacklevel=level)


def _nan_additive(name, op, fill):
    def f(x, axis=None, *, dtype=None, out=None, keepdims=False, backend=None):
        keepdims = _flag(keepdims, "keepdims")
        k = _kind(x)
        xp, x = _xp(x, k)
        if _int_name(x, k) is None:
            x = xp.where(xp.isnan(x), xp.full_like(x, fill), x)
        return _nan_result(reduce(x, op, axis=axis, keepdims=keepdims, dtype=dtype,
                                  backend=backend), out)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = ("numpy's %s: tilec.%s with NaN taken as %d (an all-NaN or empty slice "
                 "gives %d); axis, dtype, out and keepdims as tilec.%s takes them" % (
                     name, op, fill, fill, op))
    return f


nansum = _nan_additive("nansum", "sum", 0)
nanprod = _nan_additive("nanprod", "prod", 1)


def nanmean(x, axis=None, *, dtype=None, out=None, keepdims=False, backend=None):
    """numpy's nanmean: the mean of the elements that are not NaN; an all-NaN or empty slice
    gives NaN and numpy's RuntimeWarning ("Mean of empty slice"). An integer input is
    tilec.mean's (float64)."""
    keepdims = _flag(keepdims, "keepdims")
    parts = _nan_parts("nanmean", x, axis, keepdims, backend, 0)
    if parts is None:
        return _nan_result(reduce(x, "mean", axis=axis, keepdims=keepdims, dtype=dtype,
                                  backend=backend), out)
    xp, k, filled, mask, count = parts
    total = reduce(filled, "sum", axis=axis, keepdims=True, dtype=dtype, backend=backend)
    if bool((count == 0).any()):
        _warn_empty("Mean of empty slice")
    r = _divide(xp, k, total, count, total.dtype)
    return _nan_result(_squeeze(r, axis, keepdims, filled.ndim), out)


def _nan_moment(name, op, x, axis, dtype, keepdims, backend, kw):
    """nanvar's (module, variance); (None, tilec's var or std) of an integer input."""
    corr = _correction(name, kw, 0)
    if kw:
        raise TypeError("tilec.%s got an unexpected keyword argument %r" % (name, next(iter(kw))))
    ddof = _int(corr, "ddof", 0, _I64[1])
    keepdims = _flag(keepdims, "keepdims")
    parts = _nan_parts(name, x, axis, keepdims, backend, 0)
    if parts is None:
        return None, reduce(x, op, axis=axis, keepdims=keepdims, dtype=dtype,
                            correction=ddof, backend=backend)
    xp, k, filled, mask, count = parts
    total = reduce(filled, "sum", axis=axis, keepdims=True, dtype=dtype, backend=backend)
    avg = _divide(xp, k, total, count, total.dtype)
    centred = filled.to(avg.dtype) if k.startswith("torch") else filled.astype(avg.dtype)
    if k == "host":  # inf - inf is NaN, as numpy's; its warning is numpy's, not ours
        with xp.errstate(invalid="ignore"):
            centred = centred - avg
    else:
        centred = centred - avg
    centred = xp.where(mask, xp.full_like(centred, 0), centred)
    sq = reduce(centred, "sumsq", axis=axis, keepdims=True, backend=backend)
    dof = count - ddof
    bad = dof <= 0
    if bool(bad.any()):
        _warn_empty("Degrees of freedom <= 0 for slice.")
    v = _divide(xp, k, sq, xp.where(bad, xp.full_like(dof, 1), dof), sq.dtype)
    v = xp.where(bad, xp.full_like(v, float("nan")), v)
    return xp, _squeeze(v, axis, keepdims, filled.ndim)


def nanvar(x, axis=None, *, dtype=None, out=None, keepdims=False, backend=None, **kw):
    """numpy's nanvar: the variance of the elements that are not NaN, divisor n - ddof
    (ddof= or correction=, 0 by default as numpy's); NaN where n - ddof <= 0 (an all-NaN
    slice), with numpy's RuntimeWarning. An integer input is tilec.var's (float64)."""
    return _nan_result(_nan_moment("nanvar", "var", x, axis, dtype, keepdims, backend, kw)[1],
                       out)


def nanstd(x, axis=None, *, dtype=None, out=None, keepdims=False, backend=None, **kw):
    """numpy's nanstd: the square root of nanvar (ddof= 0 by default)."""
    xp, v = _nan_moment("nanstd", "std", x, axis, dtype, keepdims, backend, kw)
    return _nan_result(v if xp is None else xp.sqrt(v), out)  # None: an integer input


__all__ += ["nansum", "nanprod", "nanmean", "nanvar", "nanstd"]


# ---- .tile text ---------------------------------------------------------------------------

def _text(text):
    """.tile text as the bytes the library reads: a str as UTF-8 (surrogateescape, so a str
    decoded that way from any bytes gives them back), bytes as they are."""
    if isinstance(text, str):
        return text.encode("utf-8", "surrogateescape")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise TypeError("tilec: .tile text is a str or bytes, not %s" % type(text).__name__)


def _like(data, text):
    """What the library wrote, as the caller gave the text: bytes for bytes, else str."""
    return data if not isinstance(text, str) else data.decode("utf-8", "surrogateescape")


def _program(ctx, text, file):
    data = _text(text)
    name = _cstr(file, "file")
    prog = _vp()
    ctx.call(_lib.tilec_parse, "parsing %s" % file, name, data, len(data), _ctypes.byref(prog))
    return prog


def _with_program(text, file, fn):
    ctx = _Ctx()
    prog = _program(ctx, text, file)
    try:
        return fn(ctx, prog)
    finally:
        _lib.tilec_program_free(prog)


def _take(p, n):
    try:
        return _ctypes.string_at(p, n.value)
    finally:
        _lib.tilec_free(p)


def _target(target, backend, arch, warp_size, fn):
    """tilec_target of target= (backend=: its old name, deprecated), arch and warp_size, all
    checked before the text is parsed. None: cuda (tilec explain's default; tilec emit and
    tilec compile require --target)."""
    if backend is not None:
        if target is not None:
            raise TypeError("tilec.%s: give target (backend is its old name), not both" % fn)
        _warnings.warn("tilec.%s: backend= is now target=, the CLI's --target; backend= will "
                       "be removed" % fn, DeprecationWarning, stacklevel=3)
        target = backend
    if target is None:
        target = "cuda"
    if target not in _BACKENDS:
        raise ValueError("tilec: target=%r; say one of %s" % (target, ", ".join(_BACKENDS)))
    if arch is not None and not isinstance(arch, str):
        raise TypeError("tilec: arch is a str such as 'sm_90' or 'gfx90a', not %r" % (arch,))
    return _Target(_BACKENDS.index(target), _cstr(arch, "arch") if arch else None,
                   _warp_size(warp_size))


class _VerifyOptions(_ctypes.Structure):
    _fields_ = [("warp_size", _c_int)]


def check(text, file="<text>", warp_size=0):
    """Parses and verifies .tile text (str or bytes); raises tilec.ArgumentError with the
    diagnostics when it does not parse or breaks a rule of the format. warp_size: 0 (32),
    32 or 64."""
    o = _VerifyOptions(_warp_size(warp_size))

    def run(ctx, prog):
        ctx.check(_lib.tilec_verify(prog, _ctypes.byref(o)), "checking %s" % file)
    _with_program(text, file, run)


def fmt(text, file="<text>"):
    """The canonical form of .tile text: a str for a str (UTF-8; bytes that are not UTF-8
    come back as they went in, through surrogateescape), bytes for bytes."""
    def run(ctx, prog):
        p, n = _vp(), _c_size()
        ctx.check(_lib.tilec_format(prog, _ctypes.byref(p), _ctypes.byref(n)),
                  "formatting %s" % file)
        return _like(_take(p, n), text)
    return _with_program(text, file, run)


def _generate(fn, what, binary, text, t, file):
    """tilec_emit or tilec_compile of the text for the target."""
    def run(ctx, prog):
        p, n = _vp(), _c_size()
        ctx.check(fn(prog, _ctypes.byref(t), _ctypes.byref(p), _ctypes.byref(n)),
                  "%s %s" % (what, file))
        data = _take(p, n)
        return data if binary else _like(data, text)
    return _with_program(text, file, run)


def emit(text, target=None, arch=None, warp_size=0, file="<text>", *, backend=None):
    """CUDA or HIP source for every kernel and func of the .tile text (str for str, bytes
    for bytes). target: "cuda" (None, the default here; `tilec emit` requires --target) or
    "hip"; backend= is its old, deprecated name."""
    t = _target(target, backend, arch, warp_size, "emit")
    return _generate(_lib.tilec_emit, "emitting", False, text, t, file)


def compile(text, target=None, arch=None, warp_size=0, file="<text>", *, backend=None):
    """A CUBIN (NVRTC) or code object (hiprtc) of the .tile text, as bytes; no GPU needed.
    target: "cuda" (None, the default here; `tilec compile` requires --target) or "hip";
    backend= is its old, deprecated name."""
    t = _target(target, backend, arch, warp_size, "compile")
    return _generate(_lib.tilec_compile, "compiling", True, text, t, file)


def explain(text, target=None, arch=None, warp_size=0, dump_loop=False, file="<text>", *,
            verbose=False, backend=None):
    """Which variant lowers every tile statement, the one reason it won and what it does, as
    `tilec explain` prints it; verbose=True: each variant tried and each predicate's verdict
    (`tilec explain --verbose`); dump_loop=True adds the lowered loop IR (`--dump=loop`).
    str for str text, bytes for bytes. target: "cuda" (None, as `tilec explain`'s default), "hip" or
    "sim"; backend= is its old, deprecated name."""
    t = _target(target, backend, arch, warp_size, "explain")
    flags = (1 if dump_loop else 0) | (0 if verbose else 2)  # TILEC_EXPLAIN_LOOP, _SHORT

    def run(ctx, prog):
        p = _vp()
        st = _lib.tilec_explain(prog, _ctypes.byref(t), flags, _ctypes.byref(p))
        data = _ctypes.string_at(p) if p.value else b""
        _lib.tilec_free(p)  # the table comes back on a dispatch failure too
        ctx.check(st, "explaining %s" % file, data.decode("utf-8", "replace"))
        return _like(data, text)
    return _with_program(text, file, run)


# ---- a program's own kernels on arrays ------------------------------------------------------

def _find_kernel(prog, kernel):
    """The kernel handle of name kernel (None: the program's only kernel or func)."""
    ks = [_lib.tilec_program_kernel(prog, i) for i in range(_lib.tilec_program_kernel_count(prog))]
    names = [_lib.tilec_kernel_name(k).decode("utf-8", "surrogateescape") for k in ks]
    if kernel is None:
        if len(ks) != 1:
            raise ValueError("tilec: the program has %d kernels and funcs (%s); name the one to "
                             "run with kernel=" % (len(ks), ", ".join(names)))
        kernel = names[0]
    elif kernel not in names:
        raise ValueError("tilec: the program has no kernel %r; it has %s" % (
            kernel, ", ".join(names)))
    k = ks[names.index(kernel)]
    if _lib.tilec_kernel_is_func(k):
        raise ValueError("tilec: %s is a func: it is called from a kernel, not run" % kernel)
    return k, kernel


def _params(k):
    """(name, tilec dtype, shape) of each parameter of kernel k."""
    out = []
    for i in range(_lib.tilec_kernel_param_count(k)):
        b = _lib.tilec_kernel_param_at(k, i)
        out.append((_lib.tilec_buffer_name(b).decode(), DTYPES[_lib.tilec_buffer_dtype(b)],
                    tuple(_lib.tilec_buffer_extent(b, d) for d in range(_lib.tilec_buffer_rank(b)))))
    return out


def _host_arg(a, name, dt, shape):
    """A host argument (numpy array, or a torch CPU tensor's numpy view) checked against its
    parameter: the numpy array to copy in and back."""
    import numpy as np
    torch = _sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        if a.requires_grad or a.dtype == torch.bfloat16:
            raise TypeError("tilec: parameter %s: a CPU tensor that requires grad, or of "
                            "bfloat16, has no numpy view" % name)
        a = a.numpy()
    if not isinstance(a, np.ndarray):
        raise TypeError("tilec: parameter %s: give a numpy array (or a GPU tensor), not %s" % (
            name, type(a).__name__))
    if dt == "bf16" and a.dtype == np.uint16:
        pass  # bfloat16's bit patterns: numpy has no bfloat16
    elif a.dtype.name not in _FROM_NAME or _FROM_NAME[a.dtype.name] != dt:
        raise TypeError("tilec: parameter %s is %s; the array is %s%s" % (
            name, _TO_NAME[dt], a.dtype, " (give bfloat16 as uint16 bit patterns)"
            if dt == "bf16" else ""))
    if tuple(a.shape) != shape:
        raise ValueError("tilec: parameter %s has shape %s; the array %s" % (
            name, shape, tuple(a.shape)))
    return a


def run_kernel(text, *args, kernel=None, backend=None, file="<text>"):
    """Runs kernel `kernel` of the .tile text (None: its only kernel) for its whole grid on
    args, one array per parameter, in order, of the parameter's shape and dtype, read and
    written in place (tilec_run_kernel). numpy arrays (any layout; bfloat16 as uint16 bit
    patterns) are copied to a GPU when one is usable, else to the simulator (backend= as for
    reduce), and each array the kernel changed is copied back: an array of a parameter it
    writes must be writable (checked before anything runs). torch and CuPy tensors (any __cuda_array_interface__ array) run where they
    are, on the current stream of the first one's library, and must be dense (row-major)
    on one device. Returns None."""
    if kernel is not None:
        _cstr(kernel, "kernel")
    kinds = {_kind(a) for a in args}
    if kinds - {"host", "torch-cpu"} and kinds & {"host", "torch-cpu"}:
        raise TypeError("tilec: run_kernel takes host arrays (numpy) or GPU tensors, not both")
    if kinds & {"jax", "dlpack-gpu"}:
        raise TypeError("tilec: run_kernel writes its arrays in place; a JAX (or __dlpack__ "
                        "only) array cannot be written: pass a torch or CuPy tensor")
    gpu = bool(kinds) and not kinds & {"host", "torch-cpu"}
    if gpu:
        views = [_torch_or_cai(a) for a in args]
        _device_backend(backend, views[0])
        ctx, warn = _context(views[0].backend, views[0].device), False
    else:
        ctx, warn = _host_context(backend)
    with ctx.lock:
        prog = _program(ctx, text, file)
        try:
            k, kernel = _find_kernel(prog, kernel)
            params = _params(k)
            if len(args) != len(params):
                raise TypeError("tilec: kernel %s takes %d arrays (%s), not %d" % (
                    kernel, len(params), ", ".join(p[0] for p in params), len(args)))
            if not gpu:  # before any work: an array the kernel writes must be writable
                for i, (a, p) in enumerate(zip(args, params)):
                    if _lib.tilec_kernel_param_written(k, i) and not _host_arg(a, *p).flags.writeable:
                        raise ValueError("tilec: kernel %s writes parameter %s, whose array is read-only;"
                                         " nothing was run: pass a writable array (a.copy())" % (kernel, p[0]))
            if gpu:
                _run_gpu(ctx, prog, kernel, params, views)
            else:
                changed = _run_host(ctx, prog, kernel, params, args)
        finally:
            _lib.tilec_program_free(prog)
    if gpu:
        return None
    for a, got in changed:  # every check done: written together, or none
        a[...] = got
    if warn:
        _warn_simulator("run_kernel runs kernels of numpy arrays")
    return None


def _run_gpu(ctx, prog, kernel, params, views):
    for v, (name, dt, shape) in zip(views, params):
        if v.device != views[0].device or v.backend != views[0].backend:
            raise ValueError("tilec: parameter %s is on %s GPU %d; the first array on %s GPU %d" % (
                name, v.backend, v.device, views[0].backend, views[0].device))
        if v.dtype != dt or v.shape != shape:
            raise TypeError("tilec: parameter %s is %s%s; the tensor %s%s" % (
                name, _TO_NAME[dt], list(shape), _TO_NAME.get(v.dtype, v.dtype), list(v.shape)))
        if v.strides != tuple(_prod(shape[i + 1:]) for i in range(len(shape))) and _prod(shape) > 1:
            raise ValueError("tilec: parameter %s must be dense (row-major); the tensor's strides "
                             "are %s" % (name, v.strides))
        if v.readonly:
            raise ValueError("tilec: parameter %s: the array is read-only" % name)
    ptrs = (_vp * _builtins.max(len(views), 1))(*[v.ptr for v in views])
    ctx.check(_lib.tilec_run_kernel(ctx.h, prog, kernel.encode("utf-8", "surrogateescape"),
                                    ptrs, len(views), views[0].stream if views else None),
              "running %s" % kernel)


def _run_host(ctx, prog, kernel, params, args):
    """Copies each array in, runs, copies each out; gives (array, new contents) of those the
    kernel changed, checked writable (nothing of the caller's is written here)."""
    import numpy as np
    arrays = [_host_arg(a, *p) for a, p in zip(args, params)]
    dense = [np.ascontiguousarray(a) for a in arrays]
    after = [np.empty_like(d) for d in dense]
    with _Blocks(ctx) as mem:
        ptrs = (_vp * _builtins.max(len(dense), 1))()
        for i, d in enumerate(dense):
            ptrs[i] = mem.alloc(d.nbytes)
            if d.nbytes:
                ctx.call(_lib.tilec_mem_upload, "uploading %s" % params[i][0], ptrs[i],
                         d.ctypes.data, d.nbytes)
        ctx.check(_lib.tilec_run_kernel(ctx.h, prog, kernel.encode("utf-8", "surrogateescape"),
                                        ptrs, len(dense), None), "running %s" % kernel)
        ctx.call(_lib.tilec_synchronize, "waiting for the device")
        for i, d in enumerate(after):
            if d.nbytes:
                ctx.call(_lib.tilec_mem_download, "downloading %s" % params[i][0],
                         d.ctypes.data, ptrs[i], d.nbytes)
    changed = []
    for a, d, got, p in zip(arrays, dense, after, params):
        if d.tobytes() != got.tobytes():
            if not a.flags.writeable:
                raise ValueError("tilec: kernel %s wrote parameter %s, whose array is read-only;"
                                 " nothing was written back" % (kernel, p[0]))
            changed.append((a, got))
    return changed


# ---- segmented reductions (jagged data): tilec_reduce_segmented --------------------------

_bind("tilec_reduce_segmented", _c_int, _vp, _vp, _vp, _ctypes.c_bool, _c_i64, _vp, _vp)


_INDEX_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _segment_arg(offsets, lengths, extent=None):
    """The one check of offsets= and lengths= on every path (numpy, torch CPU and CUDA,
    CuPy, JAX; tilec.segment_reduce and tilec.torch.segment_reduce): exactly one of them; a
    1-D array of integers (a float, bool or str dtype refused, never truncated: 3.7 is not
    3); lengths 0 or more, whose running sums (the offsets) fit int64; with extent (torch's
    rule), lengths that sum to it, or offsets from 0 to it. Arrays of any library are read
    with their own operations (a GPU array's check waits for it); a list or a scalar as
    numpy reads it. Returns (name, array): "offsets" or "lengths", and the array as given (a
    list made a numpy array)."""
    if (offsets is None) == (lengths is None):
        raise TypeError("tilec: give offsets= (nsegs + 1 of them) or lengths= (nsegs), one of the two")
    name, a = ("lengths", lengths) if offsets is None else ("offsets", offsets)
    if not (hasattr(a, "dtype") and hasattr(a, "shape")):
        import numpy as np
        a = np.asarray(a)
        if a.size == 0 and a.dtype == np.float64:  # [] says no dtype: numpy's guess is float
            a = a.astype(np.int64)
    dt = getattr(a.dtype, "name", None) or str(a.dtype).replace("torch.", "")
    shape = tuple(a.shape)
    if dt not in _INDEX_DTYPES or len(shape) != 1:
        raise TypeError("tilec: %s must be a 1-D array of integers, not %s of shape %s (cast "
                        "it: a float offset or length is not rounded)" % (name, dt, shape))
    if name == "offsets" and shape[0] < 1:
        raise ValueError("tilec: offsets holds nsegs + 1 offsets: give at least one")
    if name == "lengths" and shape[0] and bool((a < 0).any()):
        raise ValueError("tilec: lengths must be 0 or more; lengths[%d] is %d" % (
            _first_negative(a), int(a[_first_negative(a)])))
    if name == "lengths" and shape[0] and int(a.max()) * shape[0] > _I64[1]:
        _lengths_fit(a)
    if extent is not None:
        if name == "lengths":
            total = int(a.sum()) if shape[0] else 0
            if total != extent:
                raise ValueError("tilec: the lengths sum to %d; they must sum to the axis's "
                                 "extent, %d (torch.segment_reduce's rule)" % (total, extent))
        elif int(a[0]) != 0 or int(a[-1]) != extent:
            raise ValueError("tilec: the offsets run from %d to %d; they must run from 0 to "
                             "the axis's extent, %d (torch.segment_reduce's rule)" % (
                                 int(a[0]), int(a[-1]), extent))
    return name, a


def _lengths_fit(a):
    """Raises unless the running sums of lengths a (0 or more), the offsets they make, all
    fit int64; checked exactly, before any sum that could wrap into an offset never given."""
    import numpy as np
    h, top = _segment_host(a), np.uint64(_I64[1])  # uint64 against uint64: never as floats
    big = np.flatnonzero(h > top) if h.dtype == np.uint64 else ()
    if len(big):
        raise ValueError("tilec: lengths[%d] is %d, past 2^63 - 1; the lengths must sum to at "
                         "most the axis's extent" % (big[0], int(h[big[0]])))
    # each length fits int64, so the first running sum past 2^63 - 1 is below 2^64: exact
    ends = np.cumsum(h.astype(np.uint64), dtype=np.uint64)
    i = int(np.argmax(ends > top))
    if int(ends[i]) > _I64[1]:
        raise ValueError("tilec: the lengths sum past 2^63 - 1 (lengths[0] to lengths[%d] sum to "
                         "%d); they must sum to at most the axis's extent" % (i, int(ends[i])))


def _segment_host(a):
    """offsets or lengths of any library (torch, CuPy, JAX, numpy) as a numpy array."""
    import numpy as np
    torch = _sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        a = a.cpu().numpy()
    elif hasattr(a, "__cuda_array_interface__") and hasattr(a, "get"):  # CuPy's, to the host
        a = a.get()
    return np.asarray(a)  # JAX's too


def _first_negative(a):
    for i in range(len(a)):
        if int(a[i]) < 0:
            return i
    return 0


def _segment_offsets(offsets, lengths):
    """offsets= or lengths= (checked by _segment_arg) as a 1-D int64 (or int32) numpy array
    of nsegs + 1 offsets."""
    import numpy as np
    name, a = _segment_arg(offsets, lengths)
    a = _segment_host(a)
    if name == "lengths":  # their sums fit int64 (_segment_arg)
        a = np.concatenate([np.zeros(1, np.int64), np.cumsum(a, dtype=np.int64)])
    if a.dtype == np.int32:
        return np.ascontiguousarray(a), True
    if a.dtype.kind == "u" and a.size and int(a.max()) > _I64[1]:
        raise ValueError("tilec: an offset passes 2^63 - 1")
    return np.ascontiguousarray(a, dtype=np.int64), False


def segment_reduce(x, offsets=None, op="sum", axis=0, *, lengths=None, nan="propagate", dtype=None,
                   correction=None, index_dtype=None, backend=None):
    """Reduces the segments of axis `axis` of x with op: segment s is x's elements
    offsets[s] to offsets[s + 1] - 1 along the axis (CSR row pointers; CUB's offsets), or
    with lengths= (torch.segment_reduce's) the next lengths[s] of them, from 0. The result
    has x's shape with that axis's extent replaced by the number of segments; argmax and
    argmin give each segment's index from its start (as tilec.argmax does), aminmax (min,
    max). Every op of tilec.OPS; nan=, dtype= (the wide dtype), correction= and
    index_dtype= as tilec.reduce takes them, with its (numpy's) defaults. offsets= and
    lengths= are integers (a float or bool array is refused, never truncated), lengths 0 or
    more: one check on every path (_segment_arg). Each segment has the bits tilec.reduce gives
    for a contiguous row of its elements. An empty segment gives what an empty axis gives
    (sum 0, prod 1, mean / var / std NaN, logsumexp -inf); for max, min, argmax, argmin
    and aminmax it is an error, as are offsets that fall, start below 0 or end past the
    axis (tilec.ArgumentError; the library finds them on the device). numpy arrays (and
    torch CPU tensors) run as tilec.reduce runs them; torch CUDA tensors on their device
    and current stream (offsets a tensor or an array; they are checked on the device, and
    the error is raised when the call waits for it, before it returns). The axis is moved
    last and the input made contiguous (a copy unless it is so already)."""
    import numpy as np
    op, nan = _exact_str(op), _exact_str(nan)  # as _dispatch: the names they spell
    torch = _sys.modules.get("torch")
    gpu = torch is not None and isinstance(x, torch.Tensor) and x.device.type == "cuda"
    if torch is not None and isinstance(x, torch.Tensor) and not gpu:
        if x.dtype == torch.bfloat16:
            raise TypeError("tilec: a bfloat16 CPU tensor has no numpy view; reduce it on the GPU")
        r = segment_reduce(x.detach().numpy(), offsets.cpu().numpy() if torch and isinstance(offsets, torch.Tensor)
                           else offsets, op, axis, lengths=lengths.cpu().numpy() if torch and
                           isinstance(lengths, torch.Tensor) else lengths, nan=nan, dtype=dtype,
                           correction=correction, index_dtype=index_dtype, backend=backend)
        return tuple(torch.from_numpy(a) for a in r) if isinstance(r, tuple) else torch.from_numpy(r)
    x, ((_, _, _, dtype, _, _, _),) = _as_float(x, "torch-gpu" if gpu else "host", [
        (op, None, False, dtype, nan, correction, index_dtype)])  # numpy's mean of ints
    if gpu:
        shape = tuple(x.shape)
        dt = _tilec_dtype(str(x.dtype))
    else:
        x, dt = _host_input(x)
        shape = x.shape
    if not shape:
        raise ValueError("tilec: a 0-d input has no axis to cut into segments")
    if axis is None:
        raise ValueError("tilec: segment_reduce takes one axis, not None")
    ax = _axes(_axis_key(axis), len(shape))
    if len(ax) != 1:
        raise ValueError("tilec: segment_reduce takes one axis, not %r" % (axis,))
    ax = ax[0]
    moved = shape[:ax] + shape[ax + 1:] + (shape[ax],)
    dense = tuple(_prod(moved[i + 1:]) for i in range(len(moved)))
    p = _plan(op, dt, moved, dense, (len(moved) - 1,), False, nan, dtype, correction, index_dtype)
    if gpu:
        name, offs = _segment_arg(offsets, lengths)
        if isinstance(offs, torch.Tensor) and offs.device != x.device:
            raise ValueError("tilec: %s are on %s; the input on %s" % (name, offs.device, x.device))
        if name == "lengths":
            ln = torch.as_tensor(offs, device=x.device).to(torch.int64)
            offs = torch.cat([ln.new_zeros(1), torch.cumsum(ln, 0)])
        else:
            offs = torch.as_tensor(offs, device=x.device)
            if offs.dtype not in (torch.int32, torch.int64):
                offs = offs.to(torch.int64)
        offs = offs.contiguous()
        if offs.dim() != 1 or offs.numel() < 1:
            raise ValueError("tilec: offsets must be 1-D with nsegs + 1 elements")
        i32, nsegs = offs.dtype == torch.int32, offs.numel() - 1
        xm = x.movedim(ax, -1).contiguous()
        oshape = moved[:-1] + (nsegs,)
        o1 = torch.empty(oshape, dtype=getattr(torch, _TO_NAME[p.res]), device=x.device)
        o2 = torch.empty(oshape, dtype=getattr(torch, _TO_NAME[p.res2]), device=x.device) if p.res2 else None
        backend_name = "hip" if getattr(torch.version, "hip", None) else "cuda"
        dev = x.get_device()
        ctx = _context(backend_name, dev)
        with ctx.lock:
            p.desc.stream = torch.cuda.current_stream(dev).cuda_stream
            p.desc.out2 = o2.data_ptr() if o2 is not None else None
            ctx.call(_lib.tilec_reduce_segmented, "segment_reduce %s" % op, _ctypes.byref(p.desc),
                     offs.data_ptr(), i32, nsegs, xm.data_ptr(), o1.data_ptr())
            ctx.call(_lib.tilec_synchronize, "waiting for the device (the offsets are checked there)")
        outs = [o.movedim(-1, ax) for o in (o1, o2) if o is not None]
        return _returned(outs + [None], p.visible)
    offs, i32 = _segment_offsets(offsets, lengths)
    nsegs = offs.size - 1
    xm = np.ascontiguousarray(np.moveaxis(x, ax, -1))
    oshape = moved[:-1] + (nsegs,)
    results = [np.empty(oshape, dtype=_TO_NAME[t]) for t in (p.res, p.res2) if t]
    ctx, warn = _host_context(backend)
    with ctx.lock, _Blocks(ctx) as mem:
        din = mem.alloc(xm.nbytes)
        if xm.nbytes:
            ctx.call(_lib.tilec_mem_upload, "uploading the input", din, xm.ctypes.data, xm.nbytes)
        doff = mem.alloc(offs.nbytes)
        ctx.call(_lib.tilec_mem_upload, "uploading the offsets", doff, offs.ctypes.data, offs.nbytes)
        dev = [mem.alloc(r.nbytes) for r in results]
        p.desc.out2 = dev[1] if len(dev) == 2 else None
        try:
            ctx.call(_lib.tilec_reduce_segmented, "segment_reduce %s" % op, _ctypes.byref(p.desc), doff, i32,
                     nsegs, din, dev[0])
        finally:
            p.desc.out2 = None
        ctx.call(_lib.tilec_synchronize, "waiting for the device (the offsets are checked there)")
        for r, d in zip(results, dev):
            if r.nbytes:
                ctx.call(_lib.tilec_mem_download, "downloading the output", r.ctypes.data, d, r.nbytes)
    if warn:
        _warn_simulator("host arrays (numpy, torch CPU tensors) are reduced")
    results = [np.moveaxis(r, -1, ax) for r in results]
    return _returned(results + [None], p.visible)


# ---- fused kernels (python/tilec/_fused.py) ----------------------------------------------

from ._fused import (softmax, log_softmax, rms_norm, layer_norm, add_rms_norm,  # noqa: E402
                     cross_entropy, fused_explain, FUSED)
__all__ += ["softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy",
            "fused_explain", "FUSED"]


# ---- the cost model's constants (docs/dispatch.md#calibrated-constants) -------------------

_bind("tilec_costs_name", _cp, _c_int)
COST_CONSTANTS = tuple(_table(_lib.tilec_costs_name))  # the library's table, in tilec_costs' order


class _Costs(_ctypes.Structure):  # tilec_costs, field for field
    _fields_ = [(n, _ctypes.c_double) for n in COST_CONSTANTS]


_bind("tilec_costs_default", _Costs)
_bind("tilec_calibrate", _c_int, _vp, _ctypes.c_uint, _ctypes.POINTER(_Costs), _PP, _PP)


def default_costs():
    """The cost model's compiled constants (an H200's), in cycles: a dict by name."""
    c = _lib.tilec_costs_default()
    return {n: getattr(c, n) for n in COST_CONSTANTS}


def calibrate(backend="auto", device=0, save=True):
    """Measures the cost model's constants on a GPU, as `tilec calibrate` does (about a second
    of micro-kernels timed by the GPU's clock). With save=True they are written to the
    device's constants file in the kernel cache's directory, which every later runtime on
    that device (this process's included) plans with. backend: "auto" (the first usable GPU),
    "cuda" or "hip"; device: its number. Returns a dict of the constants (cycles) by name,
    with "file" (where they were saved, or None) and "text" (the file's content). Raises
    tilec.Error (TILEC_ERR_UNAVAILABLE) when no GPU is usable."""
    if backend not in ("auto", "cuda", "hip"):
        raise ValueError("tilec: calibrate(backend=%r): say \"auto\", \"cuda\" or \"hip\"; the simulator "
                         "has nothing to measure" % (backend,))
    device = _int(device, "device", 0, 1023)
    flags = 0 if _flag(save, "save") else 1  # TILEC_CALIBRATE_NO_SAVE
    ctx = _context(backend, device)
    c, text, path = _Costs(), _vp(), _vp()
    with ctx.lock:
        st = _lib.tilec_calibrate(ctx.h, flags, _ctypes.byref(c),
                                  _ctypes.byref(text), _ctypes.byref(path))
        try:
            ctx.check(st, "calibrating the cost model on %s device %d" % (backend, device))
            out = {n: getattr(c, n) for n in COST_CONSTANTS}
            out["text"] = _ctypes.string_at(text).decode() if text.value else None
            out["file"] = _ctypes.string_at(path).decode(errors="surrogateescape") if path.value else None
        finally:
            _lib.tilec_free(text)
            _lib.tilec_free(path)
    return out


__all__ += ["calibrate", "default_costs", "COST_CONSTANTS"]
