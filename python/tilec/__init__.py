"""tilec for Python: reductions of numpy arrays (on tilec's simulator) and of GPU tensors
(torch, CuPy, JAX: anything with ``__cuda_array_interface__`` or ``__dlpack__``), on their
device and stream, with their strides, and the `.tile` tools (check, fmt, emit, compile,
explain). Pure Python over libtilec through ctypes; docs/python.md says how it is found.

    >>> import numpy, tilec
    >>> tilec.sum(numpy.arange(10, dtype=numpy.int32))
    array(45, dtype=int32)

Every name of an op, dtype, NaN policy and status comes from the library's own tables
(tilec_op_name, tilec_dtype_name, ...), so a row added to them is here too.
"""

import builtins
import ctypes
import ctypes.util
import os
import sys
import threading

__all__ = ["Error", "reduce", "check", "fmt", "emit", "compile", "explain", "library_path",
           "version", "OPS", "DTYPES"]


# ---- finding and binding the library ---------------------------------------------------

def _candidates():
    env = os.environ.get("TILEC_LIB")
    if env:
        yield env
        return  # asked for one library: never another behind the user's back
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from . import _install  # written by meson install: where it put the library
        yield os.path.join(_install.LIBDIR, "libtilec.so")
    except ImportError:
        pass
    yield os.path.join(here, "libtilec.so")
    root = os.path.dirname(os.path.dirname(here))  # the source tree, when run from it
    for build in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        if build.startswith("build"):
            yield os.path.join(root, build, "libtilec.so")
    found = ctypes.util.find_library("tilec")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("tilec: libtilec.so not found; set TILEC_LIB to its path, or build "
                      "tilec (meson setup build && ninja -C build). Tried: " +
                      ("; ".join(tried) or "nothing"))


_lib, library_path = _load()

# The layout of tilec_reduce_desc and the calls bound below are those of this minor
# version (before 1.0 a minor version may change the ABI); the python suite checks that
# this line names include/tilec.h's version.
_ABI = "0.2"

_c_int, _c_i64, _c_size, _vp, _cp = (ctypes.c_int, ctypes.c_int64, ctypes.c_size_t,
                                     ctypes.c_void_p, ctypes.c_char_p)
_MAX_RANK = 8


def _bind(name, res, *args):
    f = getattr(_lib, name)
    f.restype, f.argtypes = res, list(args)
    return f


_lib.tilec_version.restype = ctypes.c_char_p
_found = _lib.tilec_version().decode()
if _found.split(".")[:2] != _ABI.split("."):
    raise ImportError("tilec: %s is libtilec %s; this package speaks %s.x. Point TILEC_LIB at a "
                      "libtilec.so of %s.x (build tilec from the same tree as the package)" % (
                          library_path, _found, _ABI, _ABI))

for _name, _res, _args in [
        ("tilec_version", _cp, ()),
        ("tilec_dtype_name", _cp, (_c_int,)), ("tilec_op_name", _cp, (_c_int,)),
        ("tilec_nan_name", _cp, (_c_int,)), ("tilec_backend_name", _cp, (_c_int,)),
        ("tilec_status_name", _cp, (_c_int,)), ("tilec_status_message", _cp, (_c_int,)),
        ("tilec_dtype_size", _c_size, (_c_int,)), ("tilec_dtype_wide", _c_int, (_c_int,)),
        ("tilec_op_compares", ctypes.c_bool, (_c_int,)),
        ("tilec_op_outputs", _c_int, (_c_int,)),
        ("tilec_op_takes_correction", ctypes.c_bool, (_c_int,)),
        ("tilec_op_second_dtype", _c_int, (_c_int, _c_int)),
        ("tilec_op_supports", ctypes.c_bool, (_c_int, _c_int, ctypes.c_bool)),
        ("tilec_open", _c_int, (ctypes.POINTER(_vp),)), ("tilec_close", None, (_vp,)),
        ("tilec_diag_text", _cp, (_vp,)), ("tilec_free", None, (_vp,)),
        ("tilec_runtime_open", _c_int, (_vp, _c_int, _c_int)),
        ("tilec_mem_alloc", _c_int, (_vp, _c_size, ctypes.POINTER(_vp))),
        ("tilec_mem_free", _c_int, (_vp, _vp)),
        ("tilec_mem_upload", _c_int, (_vp, _vp, _vp, _c_size)),
        ("tilec_mem_download", _c_int, (_vp, _vp, _vp, _c_size)),
        ("tilec_reduce", _c_int, (_vp, _vp, _vp, _vp)),
        ("tilec_parse", _c_int, (_vp, _cp, _cp, _c_size, ctypes.POINTER(_vp))),
        ("tilec_verify", _c_int, (_vp, _vp)),
        ("tilec_format", _c_int, (_vp, ctypes.POINTER(_vp), ctypes.POINTER(_c_size))),
        ("tilec_program_free", None, (_vp,)),
        ("tilec_explain", _c_int, (_vp, _vp, ctypes.c_bool, ctypes.POINTER(_vp))),
        ("tilec_emit", _c_int, (_vp, _vp, ctypes.POINTER(_vp), ctypes.POINTER(_c_size))),
        ("tilec_compile", _c_int, (_vp, _vp, ctypes.POINTER(_vp), ctypes.POINTER(_c_size)))]:
    _bind(_name, _res, *_args)


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
_BACKENDS = _table(_lib.tilec_backend_name)
_STATUS = {}
for _i in range(64):
    _n = _lib.tilec_status_name(_i)
    if _n is not None:
        _STATUS[_i] = _n.decode()


def version():
    return _lib.tilec_version().decode()


class Error(Exception):
    """A tilec call failed. status: the library's status name (e.g. "TILEC_ERR_VERIFY");
    diagnostics: the context's diagnostics as a terminal shows them ("" when none)."""

    def __init__(self, status, message, diagnostics=""):
        self.status = status
        self.diagnostics = diagnostics
        super().__init__(message + (":\n" + diagnostics.rstrip() if diagnostics else ""))


class _Desc(ctypes.Structure):  # tilec_reduce_desc, field for field
    _fields_ = [("op", _c_int), ("dtype", _c_int), ("rank", _c_int),
                ("shape", _c_i64 * _MAX_RANK), ("naxes", _c_int), ("axes", _c_int * _MAX_RANK),
                ("nan", _c_int), ("accumulate", ctypes.c_bool), ("stream", _vp),
                ("strides", ctypes.POINTER(_c_i64)), ("widen", ctypes.c_bool), ("out2", _vp),
                ("index_i32", ctypes.c_bool), ("correction", ctypes.POINTER(_c_i64))]


class _Target(ctypes.Structure):  # tilec_target
    _fields_ = [("backend", _c_int), ("arch", _cp), ("warp_size", _c_int)]


class _Ctx:
    """One library context, used by one thread at a time (the library's rule): the lock."""

    def __init__(self, backend=None, device=0):
        h = _vp()
        st = _lib.tilec_open(ctypes.byref(h))
        if st:
            raise Error(_STATUS.get(st, str(st)), "tilec_open failed")
        self.h, self.lock, self.plans = h, threading.Lock(), {}
        if backend is not None:
            self.call(_lib.tilec_runtime_open, "opening the %s backend" % backend,
                      _BACKENDS.index(backend), device)

    def call(self, fn, what, *args):
        self.check(fn(self.h, *args), what)

    def check(self, st, what, fallback=""):
        """Raises tilec.Error for a failed status, with this context's diagnostics (or
        fallback when it has none)."""
        if st:
            diags = (_lib.tilec_diag_text(self.h) or b"").decode(errors="replace")
            raise Error(_STATUS.get(st, str(st)),
                        "tilec: %s: %s" % (what, _lib.tilec_status_message(st).decode()),
                        diags or fallback)

    def __del__(self):
        if getattr(self, "h", None) and _lib is not None:
            _lib.tilec_close(self.h)


_contexts = {}
_contexts_lock = threading.Lock()


def _context(backend, device=0):
    key = (backend, device)
    with _contexts_lock:
        c = _contexts.get(key)
        if c is None:
            c = _contexts[key] = _Ctx(backend, device)
        return c


# ---- dtypes of the array libraries ---------------------------------------------------

# numpy's dtype names (and torch's, and typestr codes of __cuda_array_interface__) to
# tilec's; a dtype missing here is not one tilec reduces
_FROM_NAME = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
              "int32": "i32", "uint32": "u32", "int64": "i64"}
_FROM_TYPESTR = {"<f2": "f16", "<f4": "f32", "<f8": "f64", "<i4": "i32", "<u4": "u32",
                 "<i8": "i64"}
_TO_NAME = {v: k for k, v in _FROM_NAME.items()}


def _tilec_dtype(name, what="the input"):
    if isinstance(name, str) and name in DTYPES:  # tilec's own names: "f32", "i64"
        return name
    if "numpy" in sys.modules and not str(name).startswith("torch."):
        try:  # np.int64, np.dtype("f4"), "float32", "<f8", "int"
            d = sys.modules["numpy"].dtype(name)
            name = d.name if d.isnative else "%s (byte order %s)" % (d.name, d.byteorder)
        except (TypeError, ValueError):
            pass
    name = str(name).replace("torch.", "")
    t = _FROM_NAME.get(name)
    if t is None:
        raise TypeError("tilec: %s has dtype %s; tilec reduces %s (cast it first, e.g. "
                        "x.astype('float32'))" % (what, name, ", ".join(
                            sorted(_FROM_NAME))))
    return t


# ---- the reduction: arguments to a descriptor ---------------------------------------------

def _int(v, what):
    """An int argument, as Python's int: bools, floats and anything without __index__ refused."""
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError("tilec: %s must be an int, not %r" % (what, v))
    return v.__index__()


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
            raise ValueError("tilec: axis %d is out of range for a tensor of %d dims" % (a, rank))
        a %= rank
        if a in out:
            raise ValueError("tilec: axis %d is given twice" % a)
        out.append(a)
    if not out:
        raise ValueError("tilec: axis=() reduces nothing; give at least one axis")
    return tuple(sorted(out))


def _op_index(op):
    if op not in OPS:
        raise ValueError("tilec: unknown op %r; the ops are %s" % (op, ", ".join(OPS)))
    return OPS.index(op)


class _Plan:
    """What a call needs that depends on the tensor's description only: the descriptor
    (and the ctypes arrays it points at), the output's shape and dtypes."""
    __slots__ = ("desc", "keep", "res", "res2", "oshape")


_I64 = (-(1 << 63), (1 << 63) - 1)


def _plan(op, dt, shape, strides, axis, keepdims, nan, out_dtype, correction, index_dtype):
    """Checks the arguments and plans the call (the element strides are dropped when
    they are the dense row-major ones)."""
    if len(shape) > _MAX_RANK:
        raise ValueError("tilec: the input has %d dims; tilec reduces tensors of up to %d" % (
            len(shape), _MAX_RANK))
    for v in tuple(shape) + tuple(strides):
        if not _I64[0] <= v <= _I64[1]:
            raise ValueError("tilec: extent or stride %d does not fit 64 bits" % v)
    axes = _axes(axis, len(shape))
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
    if nan != "propagate" and not dt.startswith(("f", "bf")):
        raise ValueError("tilec: nan=%r applies to floating-point inputs; this one is %s" % (
            nan, _TO_NAME.get(dt, dt)))
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
            raise TypeError("tilec: dtype=%s for a %s input; tilec writes %s, or %s (the wide "
                            "dtype)" % (_TO_NAME[want], _TO_NAME.get(dt, dt), _TO_NAME.get(dt, dt),
                                        _TO_NAME[wide]))
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
    if correction is not None:
        if not _lib.tilec_op_takes_correction(o):
            raise TypeError("tilec: correction applies to var and std, not %s" % op)
        if not 0 <= correction <= _I64[1]:
            raise ValueError("tilec: correction must be an int from 0 to 2^63 - 1, not %r" % (
                correction,))
        corr = _c_i64(correction)
        desc.correction = ctypes.pointer(corr)
    st = None
    if strides is not None:
        st = (_c_i64 * len(shape))(*strides)
        desc.strides = ctypes.cast(st, ctypes.POINTER(_c_i64))
    p = _Plan()
    p.desc, p.keep, p.res, p.res2 = desc, (st, corr), res, res2
    p.oshape = _out_shape(shape, axes, keepdims)
    return p


_PLANS_MAX = 1024  # descriptors a context keeps; a program that makes more just plans again


def _cached_plan(ctx, op, dt, shape, strides, axis, keepdims, nan, out_dtype, correction,
                 index_dtype):
    """_plan's answer for these arguments, kept by the context (whose lock the caller
    holds: a call writes the descriptor's stream and out2 before it reduces). axis and
    correction are made ints first, so a key equal to a good one (True == 1) is checked
    as itself."""
    key = (op, dt, shape, strides, _axis_key(axis), bool(keepdims), nan, out_dtype,
           None if correction is None else _int(correction, "correction"), index_dtype)
    try:
        p = ctx.plans.get(key)
    except TypeError:  # an unhashable argument (a dtype object): plan without the cache
        return _plan(*key)
    if p is None:
        p = _plan(*key)
        if len(ctx.plans) >= _PLANS_MAX:
            ctx.plans.clear()
        ctx.plans[key] = p
    return p


def _out_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else e for i, e in enumerate(shape))
    return tuple(e for i, e in enumerate(shape) if i not in axes)


# ---- numpy arrays: on the simulator --------------------------------------------------------

def _reduce_numpy(x, op, axis, keepdims, dtype, nan, out, correction, index_dtype):
    import numpy as np
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError("tilec: a masked array's mask would be ignored; reduce x.filled(v) or "
                        "x.compressed() instead")
    x = np.asarray(x)
    if not x.dtype.isnative:  # big-endian data: tilec reads elements in the machine's order
        x = x.astype(x.dtype.newbyteorder("="))
    zero_d = x.ndim == 0
    dt = _tilec_dtype(x.dtype.name)
    item = x.itemsize
    if zero_d or any(s % item for s in x.strides):
        x = np.ascontiguousarray(x).reshape(x.shape or (1,))
    shape = x.shape
    strides = tuple(s // item for s in x.strides)
    ctx = _context("sim")
    with ctx.lock:
        p = _cached_plan(ctx, op, dt, shape, strides, axis, keepdims, nan, dtype, correction,
                         index_dtype)
        desc, res, res2 = p.desc, p.res, p.res2
        oshape = () if zero_d else p.oshape
        first = np.empty(oshape, dtype=_np_dtype(res))
        second = np.empty(oshape, dtype=_np_dtype(res2)) if res2 else None
        # the view's bytes: from its lowest to its highest element, whatever the strides' signs
        n = x.size
        lo = builtins.sum(s * (e - 1) for s, e in zip(x.strides, shape) if s < 0) if n else 0
        hi = builtins.sum(s * (e - 1) for s, e in zip(x.strides, shape) if s > 0) + item if n else 0
        span = builtins.max(hi - lo, 1)
        bufs = []

        def alloc(nbytes):
            p = _vp()
            ctx.call(_lib.tilec_mem_alloc, "allocating %d bytes" % nbytes, builtins.max(nbytes, 1),
                     ctypes.byref(p))
            bufs.append(p)
            return p.value

        try:
            base = alloc(span)
            if n:
                ctx.call(_lib.tilec_mem_upload, "uploading the input", base,
                         x.ctypes.data + lo, hi - lo)
            o1 = alloc(first.nbytes)
            o2 = alloc(second.nbytes) if second is not None else None
            desc.out2 = o2
            ctx.call(_lib.tilec_reduce, "reduce %s" % op, ctypes.byref(desc), base - lo, o1)
            if first.nbytes:
                ctx.call(_lib.tilec_mem_download, "downloading the output", first.ctypes.data,
                         o1, first.nbytes)
            if second is not None and second.nbytes:
                ctx.call(_lib.tilec_mem_download, "downloading the output", second.ctypes.data,
                         o2, second.nbytes)
        finally:
            desc.out2 = None
            for p in bufs:
                _lib.tilec_mem_free(ctx.h, p)
    result = _pick(op, first, second)
    return _deliver(result, out)


def _np_dtype(t):
    import numpy as np
    return np.dtype(_TO_NAME[t])


def _pick(op, first, second):
    """What the call returns: numpy's answer — the indices of argmax / argmin, (min, max) of
    aminmax, else the one output."""
    if second is None:
        return first
    if op.startswith("arg"):
        return second
    return (first, second)


def _deliver(result, out):
    if out is None:
        return result
    if isinstance(result, tuple):
        if not isinstance(out, tuple) or len(out) != len(result):
            raise TypeError("tilec: this op has %d outputs; pass out=(a, b)" % len(result))
        return tuple(_deliver(r, o) for r, o in zip(result, out))
    if tuple(out.shape) != tuple(result.shape) or str(out.dtype) != str(result.dtype):
        raise ValueError("tilec: out has shape %s and dtype %s; the result has shape %s and "
                         "dtype %s" % (tuple(out.shape), out.dtype, tuple(result.shape),
                                       result.dtype))
    out[...] = result
    return out


# ---- GPU tensors: on their device and stream ---------------------------------------------

class _Gpu:
    """What a GPU tensor says of itself: pointer, shape, element strides, dtype, device,
    stream, and how to allocate an output in its library."""
    __slots__ = ("ptr", "shape", "strides", "dtype", "device", "stream", "empty", "backend",
                 "keep")


def _torch_view(x, torch):
    v = _Gpu()
    v.ptr, v.shape, v.strides = x.data_ptr(), tuple(x.shape), tuple(x.stride())
    v.dtype = _tilec_dtype(str(x.dtype))
    v.device = x.device.index if x.device.index is not None else torch.cuda.current_device()
    v.stream = torch.cuda.current_stream(v.device).cuda_stream
    v.backend = "hip" if getattr(torch.version, "hip", None) else "cuda"
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
        raise TypeError("tilec: the input has typestr %s; tilec reduces %s" % (
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


def _prod(t):
    p = 1
    for e in t:
        p *= e
    return p


def _launch(ctx, p, op, ptr, stream, o1, o2):
    """One tilec_reduce of plan p on the stream; the caller holds ctx's lock."""
    desc = p.desc
    desc.stream, desc.out2 = stream, o2
    try:
        ctx.call(_lib.tilec_reduce, "reduce %s" % op, ctypes.byref(desc), ptr, o1)
    finally:
        desc.out2 = None


def _reduce_gpu(v, op, axis, keepdims, dtype, nan, out, correction, index_dtype):
    ctx = _context(v.backend, v.device)
    with ctx.lock:
        p = _cached_plan(ctx, op, v.dtype, v.shape or (1,), v.strides or (1,), axis, keepdims,
                         nan, dtype, correction, index_dtype)
        outs = _gpu_outputs(v, out, p.oshape if v.shape else (), p.res, p.res2,
                            op.startswith("arg"))
        _launch(ctx, p, op, v.ptr, v.stream, _gpu_ptr(outs[0]),
                _gpu_ptr(outs[1]) if p.res2 else None)
    return _pick(op, outs[0], outs[1] if p.res2 else None) if out is None else out


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


def _reduce_torch(x, torch, op, axis, keepdims, dtype, nan, out, correction, index_dtype):
    """A CUDA (or ROCm) torch tensor: the common case, kept short — the plan is looked up
    by the tensor's description, outputs are x.new_empty, the stream torch's current."""
    if out is not None:
        return _reduce_gpu(_torch_view(x, torch), op, axis, keepdims, dtype, nan, out,
                           correction, index_dtype)
    tt = _TORCH if "stream" in _TORCH else _torch_tables(torch)
    dt = tt.get(x.dtype) or _tilec_dtype(str(x.dtype))
    dev = x.get_device()
    shape = tuple(x.shape)
    ctx = _contexts.get((tt["backend"], dev)) or _context(tt["backend"], dev)
    with ctx.lock:
        p = _cached_plan(ctx, op, dt, shape or (1,), x.stride() or (1,), axis, keepdims, nan,
                         dtype, correction, index_dtype)
        oshape = p.oshape if shape else ()
        o1 = x.new_empty(oshape, dtype=tt[p.res])
        o2 = x.new_empty(oshape, dtype=tt[p.res2]) if p.res2 else None
        _launch(ctx, p, op, x.data_ptr(), tt["stream"](dev), o1.data_ptr(),
                o2.data_ptr() if o2 is not None else None)
    return _pick(op, o1, o2)


def _gpu_outputs(v, out, oshape, res, res2, indices_only=False):
    want = [(oshape, res)] + ([(oshape, res2)] if res2 else [])
    if out is None:
        if v.empty is None:
            raise TypeError("tilec: tilec allocates outputs for torch and CuPy tensors; for a "
                            "%s pass out= (a dense tensor of shape %s, dtype %s)" % (
                                type(v.keep).__name__, oshape, _TO_NAME[res]))
        return [v.empty(s, t) for s, t in want]
    given = list(out) if isinstance(out, tuple) else [out]
    if res2 and len(given) == 1 and indices_only:
        # argmax / argmin with one out: the indices; the values go to a scratch tensor
        if v.empty is None:
            raise TypeError("tilec: pass out=(values, indices) for this tensor type")
        given = [v.empty(oshape, res)] + given
    if len(given) != len(want):
        raise TypeError("tilec: this op writes %d outputs; out= gives %d" % (len(want), len(given)))
    for g, (s, t) in zip(given, want):
        _same_device(g, v)
        gv = _torch_or_cai(g)
        if gv.shape != tuple(s) or gv.dtype != t:
            raise ValueError("tilec: out has shape %s and dtype %s; the result has shape %s "
                             "and dtype %s" % (gv.shape, _TO_NAME.get(gv.dtype), tuple(s),
                                               _TO_NAME[t]))
        if gv.strides != tuple(_prod(s[i + 1:]) for i in range(len(s))) and _prod(s) > 1:
            raise ValueError("tilec: out must be dense (row-major); its strides are %s" % (
                gv.strides,))
    return given


def _same_device(g, v):
    """out= must be writable memory of the input's GPU: a host array there would hand the
    kernel a host pointer."""
    torch = sys.modules.get("torch")
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
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _torch_view(x, torch)
    return _cai_view(x)


def reduce(x, op="sum", axis=None, keepdims=False, dtype=None, nan="propagate", out=None,
           correction=None, index_dtype=None):
    """Reduces x with op over axis (None: every axis; an int or a tuple, negative from the
    end). numpy arrays run on tilec's simulator; torch and CuPy tensors (anything with
    __cuda_array_interface__, or __dlpack__ through torch or CuPy) on their GPU, on the
    current stream, with their strides, the output made by their library. dtype: the
    output's dtype, the input's (default) or its wide dtype (f16, bf16 -> f32, f32 -> f64,
    i32, u32 -> i64); nan: "propagate" or "ignore" (max, min, argmax, argmin, aminmax of
    floats); correction: var and std's divisor is n - correction (default 1, torch's;
    numpy's ddof); index_dtype: argmax / argmin indices int64 (default) or int32. argmax
    and argmin return the indices; aminmax (min, max). Raises tilec.Error with the
    library's diagnostics."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if x.device.type != "cuda":
            return _reduce_cpu_torch(x, op, axis, keepdims, dtype, nan, out, correction,
                                     index_dtype)
        return _reduce_torch(x, torch, op, axis, keepdims, dtype, nan, out, correction,
                             index_dtype)
    mod = type(x).__module__.split(".")[0]
    if mod in ("jax", "jaxlib") and hasattr(x, "__dlpack__"):
        return _reduce_dlpack(x, mod, op, axis, keepdims, dtype, nan, out, correction,
                              index_dtype)
    if hasattr(x, "__cuda_array_interface__"):
        return _reduce_gpu(_cai_view(x), op, axis, keepdims, dtype, nan, out, correction,
                           index_dtype)
    if hasattr(x, "__dlpack__") and mod not in ("numpy", "builtins"):
        dev = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else (1, 0)
        if dev[0] in (2, 10):  # kDLCUDA, kDLROCM
            return _reduce_dlpack(x, mod, op, axis, keepdims, dtype, nan, out, correction,
                                  index_dtype)
    return _reduce_numpy(x, op, axis, keepdims, dtype, nan, out, correction, index_dtype)


def _reduce_cpu_torch(x, op, axis, keepdims, dtype, nan, out, correction, index_dtype):
    """A torch CPU tensor: through numpy on the simulator, the result a torch tensor again."""
    import torch
    if x.dtype == torch.bfloat16:
        raise TypeError("tilec: a bfloat16 CPU tensor has no numpy view; reduce it on the GPU "
                        "(x.cuda()) or as float32 (x.float())")
    r = _reduce_numpy(x.detach().numpy(), op, axis, keepdims, dtype, nan, None, correction,
                      index_dtype)
    r = tuple(torch.from_numpy(a) for a in r) if isinstance(r, tuple) else torch.from_numpy(r)
    if out is None:
        return r
    pairs = zip(r, out) if isinstance(r, tuple) else [(r, out)]
    for a, o in pairs:
        if tuple(o.shape) != tuple(a.shape) or o.dtype != a.dtype:
            raise ValueError("tilec: out has shape %s and dtype %s; the result has shape %s and "
                             "dtype %s" % (tuple(o.shape), o.dtype, tuple(a.shape), a.dtype))
        o.copy_(a)
    return out


def _reduce_dlpack(x, mod, op, axis, keepdims, dtype, nan, out, correction, index_dtype):
    """A GPU array known by __dlpack__ only (JAX's): viewed without a copy by torch (or
    CuPy), reduced there, the result handed back through DLPack to the array's library."""
    if out is not None:  # before any work: its arrays cannot be written in place (JAX's)
        raise TypeError("tilec: out= is not taken for arrays known by __dlpack__ only; use the result")
    if mod in ("jax", "jaxlib") and op.startswith("arg") and index_dtype is None:
        import jax
        if not jax.config.jax_enable_x64:  # JAX's indices are int32 unless x64 is on
            index_dtype = "int32"
    try:
        import torch
        view = torch.from_dlpack(x)
    except ImportError:
        import cupy
        view = cupy.from_dlpack(x)
    r = reduce(view, op, axis, keepdims, dtype, nan, None, correction, index_dtype)
    if mod in ("jax", "jaxlib"):
        import jax.dlpack
        back = jax.dlpack.from_dlpack
        r = tuple(back(a) for a in r) if isinstance(r, tuple) else back(r)
    return r


# ---- the numpy spellings: one function per op, read from the op table ----------------------

def _spelling(op, nan):
    name = ("nan" if nan == "ignore" else "") + op
    corrects = bool(_lib.tilec_op_takes_correction(OPS.index(op)))

    def f(x, axis=None, *, dtype=None, out=None, keepdims=False, **kw):
        if "nan" in kw and nan == "ignore":
            raise TypeError("tilec.%s takes no nan=: it ignores NaN (tilec.%s propagates it)"
                            % (name, op))
        kw.setdefault("nan", nan)
        if corrects:  # numpy's ddof (default 0) or the array API's correction
            if "ddof" in kw and "correction" in kw:
                raise TypeError("tilec.%s: give ddof or correction, not both" % name)
            kw["correction"] = kw.pop("ddof", kw.get("correction", 0))
        return reduce(x, op, axis=axis, keepdims=keepdims, dtype=dtype, out=out, **kw)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = ("numpy's %s: tilec.reduce(x, %r, axis, keepdims, dtype, nan=%r, out)%s" % (
        name, op, nan, "; ddof= (or correction=), 0 by default as in numpy" if corrects else ""))
    return f


for _op in OPS:
    globals()[_op] = _spelling(_op, "propagate")
    __all__.append(_op)
    if _lib.tilec_op_compares(OPS.index(_op)):
        globals()["nan" + _op] = _spelling(_op, "ignore")
        __all__.append("nan" + _op)
amax, amin, nanamax, nanamin = max, min, nanmax, nanmin  # noqa: F821 (made above)
__all__ += ["amax", "amin"]


# ---- .tile text ---------------------------------------------------------------------------

def _program(ctx, text, file):
    if not isinstance(text, (str, bytes)):
        raise TypeError("tilec: .tile text is a str or bytes, not %s" % type(text).__name__)
    if not isinstance(file, str):
        raise TypeError("tilec: file names the text in diagnostics: a str, not %r" % (file,))
    data = text.encode() if isinstance(text, str) else text
    prog = _vp()
    ctx.call(_lib.tilec_parse, "parsing %s" % file, file.encode(), data, len(data),
             ctypes.byref(prog))
    return prog


def _with_program(text, file, fn):
    ctx = _Ctx()
    prog = _program(ctx, text, file)
    try:
        return fn(ctx, prog)
    finally:
        _lib.tilec_program_free(prog)


def _prog_call(ctx, fn, what, prog, *args):
    ctx.check(fn(prog, *args), what)


def _take(p, n, text=True):
    try:
        return ctypes.string_at(p, n.value).decode() if text else ctypes.string_at(p, n.value)
    finally:
        _lib.tilec_free(p)


def _target(backend, arch, warp_size):
    if backend not in _BACKENDS:
        raise ValueError("tilec: backend %r; say one of %s" % (backend, ", ".join(_BACKENDS)))
    if arch is not None and not isinstance(arch, str):
        raise TypeError("tilec: arch is a str such as 'sm_90' or 'gfx90a', not %r" % (arch,))
    return _Target(_BACKENDS.index(backend), arch.encode() if arch else None,
                   _int(warp_size, "warp_size"))


class _VerifyOptions(ctypes.Structure):
    _fields_ = [("warp_size", _c_int)]


def check(text, file="<text>", warp_size=0):
    """Parses and verifies .tile text; raises tilec.Error with the diagnostics when it
    breaks a rule of the format."""
    def run(ctx, prog):
        o = _VerifyOptions(warp_size)
        _prog_call(ctx, _lib.tilec_verify, "checking %s" % file, prog, ctypes.byref(o))
    _with_program(text, file, run)


def fmt(text, file="<text>"):
    """The canonical form of .tile text."""
    def run(ctx, prog):
        p, n = _vp(), _c_size()
        _prog_call(ctx, _lib.tilec_format, "formatting %s" % file, prog, ctypes.byref(p),
                   ctypes.byref(n))
        return _take(p, n)
    return _with_program(text, file, run)


def _generate(fn, what, binary, text, backend, arch, warp_size, file):
    """tilec_emit or tilec_compile of the text for the target: its bytes (text or binary)."""
    t = _target(backend, arch, warp_size)  # checked before the text is parsed

    def run(ctx, prog):
        p, n = _vp(), _c_size()
        _prog_call(ctx, fn, "%s %s" % (what, file), prog, ctypes.byref(t), ctypes.byref(p),
                   ctypes.byref(n))
        return _take(p, n, text=not binary)
    return _with_program(text, file, run)


def emit(text, backend="cuda", arch=None, warp_size=0, file="<text>"):
    """CUDA or HIP source for every kernel and func of the .tile text."""
    return _generate(_lib.tilec_emit, "emitting", False, text, backend, arch, warp_size, file)


def compile(text, backend="cuda", arch=None, warp_size=0, file="<text>"):
    """A CUBIN (NVRTC) or code object (hiprtc) of the .tile text, as bytes; no GPU needed."""
    return _generate(_lib.tilec_compile, "compiling", True, text, backend, arch, warp_size, file)


def explain(text, backend="sim", arch=None, warp_size=0, dump_loop=False, file="<text>"):
    """For every tile statement: each variant tried, each predicate's verdict, the winner."""
    t = _target(backend, arch, warp_size)

    def run(ctx, prog):
        p = _vp()
        st = _lib.tilec_explain(prog, ctypes.byref(t), bool(dump_loop), ctypes.byref(p))
        text = ctypes.string_at(p).decode() if p.value else ""
        _lib.tilec_free(p)  # the table comes back on a dispatch failure too
        ctx.check(st, "explaining %s" % file, text)
        return text
    return _with_program(text, file, run)
