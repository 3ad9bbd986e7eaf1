"""tilec's fused kernels from Python: softmax, log_softmax, rms_norm, layer_norm,
add_rms_norm and cross_entropy over the last axis (tilec_fused; docs/python.md, "Fused
kernels"), on numpy arrays (on a GPU when one is usable, else the simulator), torch tensors
(CUDA on their stream, CPU through numpy), CuPy arrays and JAX arrays (through DLPack), with
torch's argument names. Accumulation is in f32; results in the input's dtype unless dtype=
says otherwise.
"""

import builtins as _builtins
import ctypes as _ctypes
import numbers as _numbers
import sys as _sys

import tilec as _t

_c_int, _c_i64, _vp = _ctypes.c_int, _ctypes.c_int64, _ctypes.c_void_p


class _FDesc(_ctypes.Structure):  # tilec_fused_desc, field for field
    _fields_ = [("op", _c_int), ("dtype", _c_int), ("out_dtype", _c_int), ("rows", _c_i64),
                ("cols", _c_i64), ("row_stride", _c_i64), ("eps", _ctypes.c_double),
                ("weight", _ctypes.c_bool), ("bias", _ctypes.c_bool), ("stats", _ctypes.c_bool),
                ("ignore_index", _c_i64), ("stream", _vp), ("math", _c_int)]


class _FArgs(_ctypes.Structure):  # tilec_fused_args
    _fields_ = [("x", _vp), ("y", _vp), ("weight", _vp), ("bias", _vp), ("residual", _vp),
                ("mean", _vp), ("rstd", _vp), ("target", _vp), ("lse", _vp)]


_t._bind("tilec_fused_name", _ctypes.c_char_p, _c_int)
_t._bind("tilec_math_name", _ctypes.c_char_p, _c_int)
_t._bind("tilec_fused", _c_int, _vp, _vp, _vp)
_t._bind("tilec_fused_explain", _c_int, _vp, _vp, _ctypes.POINTER(_vp))
_t._bind("tilec_fused_desc_default", _FDesc, _c_int, _c_int, _c_i64, _c_i64)

FUSED = tuple(_t._table(_t._lib.tilec_fused_name))  # the library's table: "softmax", ...
_DT = ("f16", "bf16", "f32")
_F32_MAX = 3.4028234663852886e38


def _fail(name, msg, exc=ValueError):
    raise exc("tilec.%s: %s" % (name, msg))


def _last_axis(name, dim, ndim):
    if ndim < 1:
        _fail(name, "the input is a scalar; it needs at least one axis")
    if isinstance(dim, bool) or not isinstance(dim, int):
        _fail(name, "dim must be an int, not %r" % (dim,), TypeError)
    if dim not in (-1, ndim - 1):
        _fail(name, "dim=%d; tilec's fused kernels run over the last axis: move it there "
              "(x.movedim(%d, -1) / np.moveaxis(x, %d, -1)) and back" % (dim, dim, dim))


def _norm_shape(name, normalized_shape, shape):
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if len(ns) != 1 or ns[0] != shape[-1]:
        _fail(name, "normalized_shape=%s; tilec normalises over the last axis only, "
              "normalized_shape=(%d,) for this input" % (ns, shape[-1] if shape else 0))


class _Arr:
    """An array's pointer (device memory), shape, element strides, tilec dtype."""
    __slots__ = ("ptr", "shape", "strides", "dt", "keep")


def _rows_layout(name, shape, strides):
    """(rows, cols, row_stride) when the leading axes are one run of rows of a dense last
    axis, else None (the caller copies)."""
    cols = shape[-1]
    rows = 1
    for e in shape[:-1]:
        rows *= e
    if cols > 1 and strides[-1] != 1:
        return None
    lead = [(e, s) for e, s in zip(shape[:-1], strides[:-1]) if e != 1]
    if not lead:
        return rows, cols, cols
    rs = lead[-1][1]
    for (e0, s0), (e1, s1) in zip(lead, lead[1:]):
        if s0 != s1 * e1:
            return None
    if rs < cols:
        return None
    return rows, cols, rs


def _out_dtype(name, dt, dtype):
    if dtype is None:
        return dt
    o = _t._tilec_dtype(dtype, "dtype=")
    if o not in _DT:
        _fail(name, "dtype=%s; the fused kernels write float16, bfloat16 or float32" % (dtype,))
    return o


class _Call:
    """One fused call's descriptor and buffers, before it runs."""

    def __init__(self, name, dt, rows, cols, stride, out_dt):
        if dt not in _DT:
            _fail(name, "the input is %s; the fused kernels take float16, bfloat16 or float32 "
                  "(cast it first)" % _t._TO_NAME.get(dt, dt), TypeError)
        self.name = name
        self.d = _t._lib.tilec_fused_desc_default(FUSED.index(name), _t.DTYPES.index(dt), rows, cols)
        self.d.out_dtype = _t.DTYPES.index(out_dt)
        self.d.row_stride = stride
        self.a = _FArgs()


# ---- the array libraries -----------------------------------------------------------------

def _numpy_run(name, x, extra, spec, backend):
    """numpy: upload x (its rows at their stride) and the extras, run, download the outputs.
    extra: {field: numpy array}; spec(rows, cols, stride, dt) -> (_Call, {field: (shape, dt)})."""
    import numpy as np
    x, dt = _t._host_input(x)
    shape = x.shape
    lay = _rows_layout(name, shape, tuple(s // x.itemsize for s in x.strides)) if x.size else None
    if lay is None:
        x = np.ascontiguousarray(x)
        lay = (_t._prod(shape[:-1]), shape[-1], shape[-1])
    rows, cols, stride = lay
    call, outs = spec(rows, cols, stride, dt)
    _no_empty_rows(name, rows, cols, outs)
    results = {f: np.empty(s, dtype=_t._TO_NAME[t]) for f, (s, t) in outs.items()}
    if rows == 0 or cols == 0:
        if "residual" in extra:  # h = x + residual: as empty as the residual
            results["residual"] = np.empty_like(np.ascontiguousarray(extra["residual"]))
        return results, False
    ctx, warn = _t._host_context(backend)
    nbytes = ((rows - 1) * stride + cols) * x.itemsize
    with ctx.lock, _t._Blocks(ctx) as mem:
        base = mem.alloc(nbytes)
        ctx.call(_t._lib.tilec_mem_upload, "uploading the input", base, x.ctypes.data, nbytes)
        call.a.x = base
        for f, arr in extra.items():
            arr = np.ascontiguousarray(arr)
            p = mem.alloc(arr.nbytes)
            ctx.call(_t._lib.tilec_mem_upload, "uploading %s" % f, p, arr.ctypes.data, arr.nbytes)
            setattr(call.a, f, p)
        dev = {f: mem.alloc(r.nbytes) for f, r in results.items()}
        for f, p in dev.items():
            setattr(call.a, f, p)
        if "residual" in extra:  # read, then written in place: its device copy is the output
            dev["residual"] = call.a.residual
            results["residual"] = np.empty_like(np.ascontiguousarray(extra["residual"]))
        ctx.call(_t._lib.tilec_fused, name, _ctypes.byref(call.d), _ctypes.byref(call.a))
        ctx.call(_t._lib.tilec_synchronize, "waiting for the device")
        for f, r in results.items():
            if r.nbytes:
                ctx.call(_t._lib.tilec_mem_download, "downloading %s" % f, r.ctypes.data, dev[f], r.nbytes)
    return results, warn


def _no_empty_rows(name, rows, cols, outs):
    """Rows of no values have no statistic or loss: refused rather than left unwritten."""
    if rows and not cols:
        what = [("loss" if name == "cross_entropy" else "y") if f == "y" else f
                for f, (s, _) in outs.items() if _t._prod(s)]
        if what:
            _fail(name, "the input's last axis is empty: its %d row%s no values, so none has a %s; "
                  "give rows of at least one value" % (rows, " has" if rows == 1 else "s have", " and ".join(what)))


def _dense(a):
    """A GPU array as a dense one of its library (itself when it is)."""
    return a.contiguous() if hasattr(a, "contiguous") else __import__("cupy").ascontiguousarray(a)


def _fused(name, x, spec, extra, out, backend):
    """Runs fused op `name` on x (any supported array); extra: {field: array of x's library};
    returns {field: result} in x's library."""
    kind = _t._kind(x)
    if kind == "torch-cpu":
        import torch
        if x.dtype == torch.bfloat16 or any(getattr(e, "dtype", None) == torch.bfloat16 for e in extra.values()):
            _fail(name, "a bfloat16 CPU tensor has no numpy view; run it on the GPU (x.cuda()) or "
                  "as float32", TypeError)
        r, warn = _numpy_run(name, x.detach().numpy(), {f: e.detach().numpy() for f, e in extra.items()},
                             spec, backend)
        r = {f: torch.from_numpy(a) for f, a in r.items()}
    elif kind == "host":
        r, warn = _numpy_run(name, x, extra, spec, backend)
    elif kind in ("jax", "dlpack-gpu"):
        if out is not None:
            _fail(name, "out= is not taken for arrays known by __dlpack__ only; use the result", TypeError)
        try:
            import torch
            conv = torch.from_dlpack
        except ImportError:
            import cupy
            conv = cupy.from_dlpack
        # a JAX array is immutable: the residual add_rms_norm writes h into is a copy
        ex = {f: (conv(e).clone() if hasattr(conv(e), "clone") else conv(e).copy()) if f == "residual" else conv(e)
              for f, e in extra.items()}
        r = _fused(name, conv(x), spec, ex, None, backend)
        if type(x).__module__.split(".")[0] in ("jax", "jaxlib"):
            import jax.dlpack
            r = {f: jax.dlpack.from_dlpack(a) for f, a in r.items()}
        return r
    else:
        r = _gpu_run(name, x, spec, extra, backend)
        warn = False
    if warn:
        _t._warn_simulator("host arrays (numpy, torch CPU tensors) run")
    return r


def _gpu_run(name, x, spec, extra, backend):
    v = _t._torch_or_cai(x)
    _t._device_backend(backend, v)
    lay = _rows_layout(name, v.shape, v.strides) if _t._prod(v.shape) else None
    if lay is None:  # rows the kernel cannot walk: a dense copy in x's library
        x = _dense(x)
        v = _t._torch_or_cai(x)
        lay = (_t._prod(v.shape[:-1]), v.shape[-1], v.shape[-1])
    rows, cols, stride = lay
    call, outs = spec(rows, cols, stride, v.dtype)
    _no_empty_rows(name, rows, cols, outs)
    if v.empty is None:
        _fail(name, "tilec allocates outputs for torch and CuPy arrays only", TypeError)
    results = {f: v.empty(s, t) for f, (s, t) in outs.items()}
    if rows == 0 or cols == 0:
        if "residual" in extra:  # h = x + residual: as empty as the residual
            results["residual"] = extra["residual"]
        return results
    keep = []
    for f, e in extra.items():
        _t._same_device(e, v)
        e = _dense(e)
        keep.append(e)
        setattr(call.a, f, _t._gpu_ptr(e))
    if "residual" in extra:
        results["residual"] = keep[list(extra).index("residual")]
    call.a.x = v.ptr
    for f, r in results.items():
        if f != "residual":
            setattr(call.a, f, _t._gpu_ptr(r))
    ctx = _t._context(v.backend, v.device)
    call.d.stream = v.stream
    with ctx.lock:
        ctx.call(_t._lib.tilec_fused, name, _ctypes.byref(call.d), _ctypes.byref(call.a))
    res = extra.get("residual")
    if res is not None and results["residual"] is not res:  # a strided residual ran on a dense copy:
        res[...] = results["residual"]                      # the caller's is updated in place all the same
        results["residual"] = res
    return results


def _same_kind(name, what, x, e):
    """An extra array (weight, bias, residual, target) of x's library and place."""
    if e is None:
        return None
    kx, ke = _t._kind(x), _t._kind(e)
    if kx != ke:
        _fail(name, "%s is a %s array while the input is a %s one; pass it in the input's "
              "library and device" % (what, ke, kx), TypeError)
    return e


def _dt_of(e):
    return _t._tilec_dtype(getattr(e, "dtype", ""), "that array")


def _check_vec(name, what, e, cols, dt):
    if e is None:
        return
    shape = tuple(e.shape)
    if shape != (cols,):
        _fail(name, "%s has shape %s; it must be (%d,), one value a column" % (what, shape, cols))
    if _dt_of(e) != dt:
        _fail(name, "%s is %s; it must be the input's dtype, %s" % (what, _t._TO_NAME[_dt_of(e)], _t._TO_NAME[dt]),
              TypeError)


# ---- the functions -----------------------------------------------------------------------

_MATH = tuple(_t._table(_t._lib.tilec_math_name))  # the library's table: "exact", "approx"


def _math_of(name, approx):
    if not isinstance(approx, bool):
        _fail(name, "approx=%r; it is True (the GPU's hardware exponential) or False (the same bits "
              "everywhere, the default)" % (approx,), TypeError)
    return _MATH.index("approx" if approx else "exact")


def _rowwise(name, x, dim, dtype, out, backend, approx):
    shape = tuple(x.shape)
    _last_axis(name, dim, len(shape))
    math = _math_of(name, approx)

    def spec(rows, cols, stride, dt):
        c = _Call(name, dt, rows, cols, stride, _out_dtype(name, dt, dtype))
        c.d.math = math
        return c, {"y": (shape, _t.DTYPES[c.d.out_dtype])}
    y = _fused(name, x, spec, {}, out, backend)["y"]
    return _into(name, out, y)


def _into(name, out, y):
    if out is None:
        return y
    if tuple(out.shape) != tuple(y.shape) or str(out.dtype) != str(y.dtype):
        _fail(name, "out has shape %s and dtype %s; the result has shape %s and dtype %s" % (
            tuple(out.shape), out.dtype, tuple(y.shape), y.dtype))
    out[...] = y
    return out


def softmax(x, dim=-1, *, dtype=None, out=None, backend=None, approx=False):
    """exp(x - logsumexp(x)) over the last axis, in one pass of the row (torch.softmax).
    approx=True: the GPU's hardware exponential (faster, within about 2^-21 + |x| 2^-24, not the same
    bits on every GPU and the simulator)."""
    return _rowwise("softmax", x, dim, dtype, out, backend, approx)


def log_softmax(x, dim=-1, *, dtype=None, out=None, backend=None, approx=False):
    """x - logsumexp(x) over the last axis (torch.log_softmax); approx as softmax's."""
    return _rowwise("log_softmax", x, dim, dtype, out, backend, approx)


def _eps_of(name, eps, dt, default):
    if eps is None:
        if default is not None:
            return default
        import numpy as np  # torch's default for rms_norm: the input dtype's machine epsilon
        return float(np.finfo({"f16": np.float16, "f32": np.float32}.get(dt, np.float32)).eps) \
            if dt != "bf16" else 2.0 ** -7
    if isinstance(eps, bool) or not isinstance(eps, _numbers.Real) or not 0 < eps <= _F32_MAX:
        _fail(name, "eps=%r; it must be a positive finite number that fits float32 (at most %g, "
              "as it is added to a float32 statistic)" % (eps, _F32_MAX))
    return float(eps)


def _norm(name, x, normalized_shape, weight, bias, eps, default_eps, out, backend, stats, residual=None):
    shape = tuple(x.shape)
    _norm_shape(name, normalized_shape, shape)
    extra = {}
    for f, e in (("weight", weight), ("bias", bias), ("residual", residual)):
        if e is not None:
            extra[f] = _same_kind(name, f, x, e)

    def spec(rows, cols, stride, dt):
        _check_vec(name, "weight", weight, cols, dt)
        _check_vec(name, "bias", bias, cols, dt)
        if residual is not None:
            if tuple(residual.shape) != shape or _dt_of(residual) != dt:
                _fail(name, "residual has shape %s and dtype %s; it must be the input's, %s and %s" % (
                    tuple(residual.shape), getattr(residual, "dtype", "?"), shape, _t._TO_NAME[dt]))
        c = _Call(name, dt, rows, cols, stride, dt)
        c.d.eps = _eps_of(name, eps, dt, default_eps)
        c.d.weight, c.d.bias, c.d.stats = weight is not None, bias is not None, stats
        outs = {"y": (shape, dt)}
        if stats:
            if name == "layer_norm":
                outs["mean"] = (shape[:-1], "f32")
            outs["rstd"] = (shape[:-1], "f32")
        return c, outs
    return _fused(name, x, spec, extra, out, backend)


def rms_norm(x, normalized_shape, weight=None, eps=None, *, out=None, return_rstd=False, backend=None):
    """x * rsqrt(mean(x^2) + eps) [* weight] over the last axis (torch.nn.functional.rms_norm;
    eps None: the dtype's machine epsilon, as torch). return_rstd: also the f32 rstd a row."""
    r = _norm("rms_norm", x, normalized_shape, weight, None, eps, None, out, backend, return_rstd)
    y = _into("rms_norm", out, r["y"])
    return (y, r["rstd"]) if return_rstd else y


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, *, out=None, return_stats=False,
               backend=None):
    """(x - mean) * rsqrt(var + eps) [* weight] [+ bias] over the last axis
    (torch.nn.functional.layer_norm). return_stats: (y, mean, rstd), f32 a row."""
    r = _norm("layer_norm", x, normalized_shape, weight, bias, eps, 1e-5, out, backend, return_stats)
    y = _into("layer_norm", out, r["y"])
    return (y, r["mean"], r["rstd"]) if return_stats else y


def add_rms_norm(x, residual, weight=None, eps=None, *, backend=None):
    """h = x + residual (rounded to x's dtype), then rms_norm(h): the residual stream of an
    LLM block. Returns (rms_norm(h), h); a torch or CuPy residual is updated in place (it is h)."""
    r = _norm("add_rms_norm", x, (tuple(x.shape)[-1],) if len(x.shape) else (), weight, None, eps, None, None,
              backend, False, residual=residual)
    return r["y"], r["residual"]


def cross_entropy(input, target, ignore_index=-100, reduction="mean", *, return_lse=False, backend=None,
                  approx=False):
    """logsumexp(input) - input[target] per row (torch.nn.functional.cross_entropy over the last
    axis with class-index targets), 0 where target == ignore_index; reduction "none", "sum" or
    "mean" (over the rows not ignored, as torch). return_lse: also the f32 logsumexp a row.
    approx as softmax's."""
    name = "cross_entropy"
    math = _math_of(name, approx)
    if reduction not in ("none", "sum", "mean"):
        _fail(name, "reduction=%r; say 'none', 'sum' or 'mean'" % (reduction,))
    x = input
    shape = tuple(x.shape)
    if len(shape) < 1:
        _fail(name, "the input is a scalar; it needs a class axis")
    if tuple(target.shape) != shape[:-1]:
        _fail(name, "target has shape %s; it must be the input's without its last axis, %s" % (
            tuple(target.shape), shape[:-1]))
    if _dt_of(target) != "i64":
        _fail(name, "target is %s; class indices are int64" % (getattr(target, "dtype", "?"),), TypeError)
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
        _fail(name, "ignore_index must be an int", TypeError)
    if not -2 ** 63 <= ignore_index < 2 ** 63:
        _fail(name, "ignore_index=%d is outside int64, the targets' dtype" % ignore_index)

    def spec(rows, cols, stride, dt):
        c = _Call(name, dt, rows, cols, stride, dt)
        c.d.ignore_index, c.d.stats, c.d.math = ignore_index, return_lse, math
        outs = {"y": (shape[:-1], dt)}
        if return_lse:
            outs["lse"] = (shape[:-1], "f32")
        return c, outs
    r = _fused(name, x, spec, {"target": _same_kind(name, "target", x, target)}, None, backend)
    loss = r["y"]
    if reduction != "none":
        keep = target != ignore_index
        total = (loss.astype("float32") if hasattr(loss, "astype") else loss.float()).sum()
        if reduction == "mean":
            n = keep.sum()
            total = total / n
        loss = total.astype(loss.dtype) if hasattr(total, "astype") else total.to(loss.dtype)
    return (loss, r["lse"]) if return_lse else loss


def fused_explain(name, dtype, rows, cols, *, row_stride=0, weight=False, bias=False, stats=False,
                  eps=None, ignore_index=-100, backend=None, approx=False):
    """The plan of a fused kernel as text: the generated tile program(s) and the variants."""
    if name not in FUSED:
        raise ValueError("tilec.fused_explain: %r is not one of %s" % (name, ", ".join(FUSED)))
    dt = _t._tilec_dtype(dtype, "dtype")
    c = _Call(name, dt, rows, cols, row_stride, dt)
    c.d.weight, c.d.bias, c.d.stats, c.d.ignore_index = weight, bias, stats, ignore_index
    c.d.math = _math_of("fused_explain", approx)
    if eps is not None:
        c.d.eps = eps
    ctx, _ = _t._host_context(backend)
    text = _vp()
    with ctx.lock:
        ctx.call(_t._lib.tilec_fused_explain, "explaining %s" % name, _ctypes.byref(c.d), _ctypes.byref(text))
        s = _ctypes.string_at(text.value).decode()
        _t._lib.tilec_free(text)
    return s
