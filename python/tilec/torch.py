"""tilec's reductions as torch operators: ``import tilec.torch as tt; tt.sum(x, dim=1)``.

Each reduction is a torch custom operator in the namespace ``tilec`` (torch.library.custom_op:
a schema, a fake kernel that gives the output's shape and dtype without running anything, the
CUDA and CPU implementations through ``tilec.reduce``, and an autograd formula where one is
standard), so that torch.compile traces through it without a graph break, autograd
differentiates it, and a CUDA graph captures it. The public functions take torch's argument
names (dim, keepdim, dtype, correction) and turn them into the operator's arguments; the
operators are also ``torch.ops.tilec.<name>``. docs/python.md ("torch: custom operators,
autograd, torch.compile") has the table of ops, gradients and rules.

Needs torch 2.4 or newer (torch.library.custom_op); importing it without torch, or with an
older one, raises ImportError saying so.
"""

import builtins as _builtins
import operator as _operator
import re as _re
from typing import Optional as _Optional

try:
    import torch
except ImportError as _e:
    raise ImportError("tilec.torch needs torch (2.4 or newer, for torch.library.custom_op), "
                      "which is not importable here (%s); tilec.reduce itself works without "
                      "it" % _e) from None


def _torch_version():
    m = _re.match(r"(\d+)\.(\d+)", str(getattr(torch, "__version__", "")))
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


_lib_mod = getattr(torch, "library", None)
if _torch_version() < (2, 4) or not all(hasattr(_lib_mod, n) for n in (
        "custom_op", "register_fake", "register_autograd")):
    raise ImportError("tilec.torch needs torch 2.4 or newer (torch.library.custom_op, "
                      "register_fake, register_autograd); this is torch %s. Upgrade torch, or "
                      "call tilec.reduce on torch tensors directly" % (
                          getattr(torch, "__version__", "of unknown version"),))

import tilec as _tilec  # noqa: E402

__all__ = ["sum", "mean", "prod", "sumsq", "norm2", "amax", "amin", "max", "min",
           "logsumexp", "var", "std", "argmax", "argmin", "aminmax", "segment_reduce", "OPS",
           "GRADIENTS", "softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm",
           "cross_entropy"]

# ---- dtypes: tilec's, as torch names them ----------------------------------------------

_TILEC = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32",
          torch.float64: "f64", torch.int32: "i32", torch.int64: "i64"}
if hasattr(torch, "uint32"):
    _TILEC[torch.uint32] = "u32"
# the dtype a reduction may write instead of the input's (tilec_dtype_wide)
_WIDE = {torch.float16: torch.float32, torch.bfloat16: torch.float32,
         torch.float32: torch.float64, torch.float64: torch.float64,
         torch.int32: torch.int64, torch.int64: torch.int64}
if hasattr(torch, "uint32"):
    _WIDE[torch.uint32] = torch.int64
# integer dtypes torch sums into int64 that tilec does not read: cast to int32 first
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_SMALL_INTS = (torch.bool, torch.int8, torch.uint8, torch.int16)
_INT32S = tuple(d for d in _TILEC if d in (torch.int32, getattr(torch, "uint32", None)))


def _supports_table():
    """{(op, tilec dtype): bool} from the library's own table (tilec_op_supports), so the
    fake kernels refuse what the real ones refuse; empty (everything allowed, the real
    kernel then says no) where the package does not expose the table."""
    lib = getattr(_tilec, "_lib", None)
    fn = getattr(lib, "tilec_op_supports", None)
    if fn is None:
        return {}
    try:
        return {(op, dt): bool(fn(i, j, False)) for i, op in enumerate(_tilec.OPS)
                for j, dt in enumerate(_tilec.DTYPES)}
    except Exception:  # noqa: BLE001 (a table is a help, never a reason to fail the import)
        return {}


_SUPPORTS = _supports_table()
_NEEDS_ONE = ("max", "min", "argmax", "argmin", "aminmax")  # over an empty axis: an error
_FLOAT_OPS = _tilec._FLOAT_OPS  # mean, var, std, norm2, logsumexp: floating inputs only


def _check_dtype(op, x):
    """TypeError (tilec's words) when tilec does not reduce x's dtype with op."""
    td = _TILEC.get(x.dtype)
    if td is None:
        raise TypeError("tilec: the input has dtype %s; tilec takes %s" % (
            x.dtype, ", ".join(str(d).replace("torch.", "") for d in _TILEC)))
    if not _SUPPORTS.get((op, td), True):
        raise TypeError("tilec: %s is not defined for %s inputs" % (
            op, str(x.dtype).replace("torch.", "")))


def _out_dtype(op, x, dtype):
    """The output's dtype: the input's, or its wide dtype when dtype= asks for it."""
    _check_dtype(op, x)
    if dtype is None or dtype == x.dtype:
        return x.dtype
    if dtype == _WIDE[x.dtype]:
        return dtype
    raise TypeError("tilec: dtype=%s for a %s input; the operator writes %s or %s (the wide "
                    "dtype); the functions of tilec.torch cast the input for other dtypes" % (
                        dtype, x.dtype, x.dtype, _WIDE[x.dtype]))


# ---- dims ---------------------------------------------------------------------------------

def _axes(rank, dim):
    """dim (None, or a list of ints, negative from the end) as a sorted tuple of the axes
    reduced; None (and [], torch's "every dim") reduces every axis. A 0-d tensor takes
    dim 0 or -1, as torch does."""
    if dim is None or len(dim) == 0:
        return tuple(range(rank))
    n = _builtins.max(rank, 1)
    out = []
    for d in dim:
        if not -n <= d < n:
            raise IndexError("tilec: dimension out of range (expected to be in range of "
                             "[%d, %d], but got %d)" % (-n, n - 1, d))
        d %= n
        if d in out:
            raise RuntimeError("tilec: dim %d appears multiple times in the list of dims" % d)
        out.append(d)
    return tuple(sorted(out)) if rank else ()


def _tilec_axis(rank, dim):
    """The axis argument of tilec.reduce: None for every axis (and for a 0-d tensor)."""
    if rank == 0 or dim is None or len(dim) == 0:
        return None
    return _axes(rank, dim)


def _out_shape(shape, axes, keepdim):
    if keepdim:
        return [1 if i in axes else e for i, e in enumerate(shape)]
    return [e for i, e in enumerate(shape) if i not in axes]


def _dim_list(dim, name):
    """A function's dim (None, an int, or a list / tuple of ints) as the operator's int[]?."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple, torch.Size)):
        dims = [_index(d, name) for d in dim]
        return dims if dims else None  # torch: dim=() / [] reduces every dim
    return [_index(dim, name)]


def _index(d, name):
    if type(d) is int:  # the common case, in plain Python (torch.compile traces it as such)
        return d
    if isinstance(d, bool):
        raise TypeError("tilec.torch.%s: dim must be an int or a list of ints, not a bool" % name)
    try:
        return _operator.index(d)
    except TypeError:
        raise TypeError("tilec.torch.%s: dim must be an int, a list of ints or None, not %s" % (
            name, type(d).__name__)) from None


# ---- the operators -----------------------------------------------------------------------

_DEVICES = ("cuda", "cpu")
_A = "(Tensor x, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> Tensor"
_B = "(Tensor x, int[]? dim=None, bool keepdim=False) -> Tensor"
_C = "(Tensor x, int[]? dim=None, int correction=1, bool keepdim=False) -> Tensor"
_PAIR = "(Tensor x, int[]? dim=None, bool keepdim=False) -> (Tensor, Tensor)"
_VALUES_INDICES = "(Tensor x, int dim, bool keepdim=False) -> (Tensor, Tensor)"


def _run(x, op, dim, keepdim, **kw):
    """The real kernel: tilec.reduce on x's device (CUDA: torch's current stream; CPU: the
    package's host path), outputs new tensors of their own."""
    return _tilec.reduce(x, op, axis=_tilec_axis(x.dim(), dim), keepdims=keepdim, **kw)


def _fake(x, op, dim, keepdim, dtype=None):
    """The fake kernel's output: shape and dtype as the real kernel gives them."""
    out_dtype = _out_dtype(op, x, dtype)
    axes = _axes(x.dim(), dim)
    if op in _NEEDS_ONE:
        for a in axes:
            if x.shape[a] == 0:
                raise _tilec.ArgumentError(
                    "TILEC_ERR_INVALID_ARG", "tilec: %s over an empty dim (%d) has no "
                    "result" % (op, a))
    return x.new_empty(_out_shape(x.shape, axes, keepdim), dtype=out_dtype)


def _define(name, schema, impl, fake):
    op = torch.library.custom_op("tilec::" + name, mutates_args=(), device_types=_DEVICES,
                                 schema=schema)(impl)
    op.register_fake(fake)
    return op


def _with_dtype(name, op):  # schema _A
    def impl(x, dim=None, keepdim=False, dtype=None):  # None: the input's, as the fake says
        return _run(x, op, dim, keepdim, dtype=x.dtype if dtype is None else dtype)

    def fake(x, dim=None, keepdim=False, dtype=None):
        return _fake(x, op, dim, keepdim, dtype)
    impl.__name__ = fake.__name__ = name
    return _define(name, _A, impl, fake)


def _plain(name, op):  # schema _B
    def impl(x, dim=None, keepdim=False):
        return _run(x, op, dim, keepdim)

    def fake(x, dim=None, keepdim=False):
        out = _fake(x, op, dim, keepdim)
        return out.new_empty(out.shape, dtype=torch.int64) if op.startswith("arg") else out
    impl.__name__ = fake.__name__ = name
    return _define(name, _B, impl, fake)


def _corrected(name, op):  # schema _C
    def impl(x, dim=None, correction=1, keepdim=False):
        return _run(x, op, dim, keepdim, correction=correction)

    def fake(x, dim=None, correction=1, keepdim=False):
        if correction < 0:
            raise ValueError("tilec: correction must be an int from 0 to 2^63 - 1, not %d" %
                             correction)
        return _fake(x, op, dim, keepdim)
    impl.__name__ = fake.__name__ = name
    return _define(name, _C, impl, fake)


def _pair(name, op):  # schema _PAIR: aminmax's (min, max)
    def impl(x, dim=None, keepdim=False):
        return _run(x, op, dim, keepdim)

    def fake(x, dim=None, keepdim=False):
        return _fake(x, op, dim, keepdim), _fake(x, op, dim, keepdim)
    impl.__name__ = fake.__name__ = name
    return _define(name, _PAIR, impl, fake)


def _values_indices(name, op):  # schema _VALUES_INDICES: torch.max(x, dim)'s pair
    def impl(x, dim, keepdim=False):
        axes = _axes(x.dim(), [dim])
        shape = _out_shape(x.shape, axes, keepdim)
        values = x.new_empty(shape)
        indices = x.new_empty(shape, dtype=torch.int64)
        _tilec.reduce(x, op, axis=_tilec_axis(x.dim(), [dim]), keepdims=keepdim,
                      out=(values, indices))
        return values, indices

    def fake(x, dim, keepdim=False):
        values = _fake(x, op, [dim], keepdim)
        return values, values.new_empty(values.shape, dtype=torch.int64)
    impl.__name__ = fake.__name__ = name
    return _define(name, _VALUES_INDICES, impl, fake)


# name of the operator (torch.ops.tilec.NAME) -> (factory, tilec's op)
_OPERATORS = {"sum": (_with_dtype, "sum"), "mean": (_with_dtype, "mean"),
              "prod": (_with_dtype, "prod"), "sumsq": (_with_dtype, "sumsq"),
              "norm2": (_with_dtype, "norm2"), "amax": (_plain, "max"),
              "amin": (_plain, "min"), "logsumexp": (_plain, "logsumexp"),
              "argmax": (_plain, "argmax"), "argmin": (_plain, "argmin"),
              "var": (_corrected, "var"), "std": (_corrected, "std"),
              "aminmax": (_pair, "aminmax"), "max_dim": (_values_indices, "argmax"),
              "min_dim": (_values_indices, "argmin")}
_ops = {name: make(name, op) for name, (make, op) in _OPERATORS.items()}  # CustomOpDefs
OPS = tuple(_ops)  # the operators' names, as torch.ops.tilec knows them
# what the public functions call: the OpOverloads (torch.ops.tilec.NAME.default), which
# torch.compile puts in its graph as they are
_call = {name: getattr(torch.ops.tilec, name).default for name in OPS}


# ---- autograd: backward formulas in plain torch ops (so AOTAutograd traces them) ---------

def _keep(t, axes, keepdim):
    """t (an output or its gradient) with the reduced dims back as extent 1."""
    if not keepdim:
        for a in axes:  # increasing: each lands where it was
            t = t.unsqueeze(a)
    return t


def _count(shape, axes):
    """Elements reduced into each output: the product of the reduced extents (SymInts too)."""
    n = 1
    for a in axes:
        n = n * shape[a]
    return n


def _mean_keep(x, axes):
    return x.mean(dim=axes, keepdim=True) if axes else x


def _sum_keep(x, axes):
    return x.sum(dim=axes, keepdim=True) if axes else x


def _autograd(name, grad):
    """Registers grad(ctx, g, x, out) -> the input's gradient as the backward of operator
    name, whose arguments are (x, dim, keepdim[, dtype]) or var / std's (x, dim, correction,
    keepdim): the input's gradient in its dtype, None for the other arguments."""
    corrected = name in ("var", "std")

    def setup_context(ctx, inputs, output):
        x, dim = inputs[0], inputs[1]
        ctx.n_args = len(inputs)
        ctx.axes = _axes(x.dim(), dim)
        ctx.keepdim = inputs[3] if corrected else inputs[2]
        ctx.correction = inputs[2] if corrected else 0
        ctx.shape, ctx.xdtype = x.shape, x.dtype
        ctx.save_for_backward(x, output)

    def backward(ctx, g):
        x, out = ctx.saved_tensors
        gx = grad(ctx, g, x, out).to(ctx.xdtype) if ctx.needs_input_grad[0] else None
        return (gx,) + (None,) * (ctx.n_args - 1)
    backward.__name__ = name + "_backward"
    _ops[name].register_autograd(backward, setup_context=setup_context)


def _g_sum(ctx, g, x, out):
    return _keep(g, ctx.axes, ctx.keepdim).expand(ctx.shape)


def _g_mean(ctx, g, x, out):
    return _keep(g, ctx.axes, ctx.keepdim).expand(ctx.shape) / _count(ctx.shape, ctx.axes)


def _g_sumsq(ctx, g, x, out):
    return _keep(g, ctx.axes, ctx.keepdim) * 2 * x


def _g_extreme(ctx, g, x, out):
    """amax / amin: the gradient split evenly among the elements equal to the result (ties),
    as torch's amax does."""
    mask = (x == _keep(out, ctx.axes, ctx.keepdim)).to(g.dtype)
    return _keep(g, ctx.axes, ctx.keepdim) * mask / _sum_keep(mask, ctx.axes)


def _g_norm2(ctx, g, x, out):
    """x / norm, 0 where the norm is 0 (torch's vector_norm)."""
    norm = _keep(out, ctx.axes, ctx.keepdim)
    scale = (_keep(g, ctx.axes, ctx.keepdim) / norm).masked_fill(norm == 0, 0)
    return x * scale


def _g_logsumexp(ctx, g, x, out):
    return _keep(g, ctx.axes, ctx.keepdim) * (x - _keep(out, ctx.axes, ctx.keepdim)).exp()


def _g_var(ctx, g, x, out):
    centred = x - _mean_keep(x, ctx.axes)
    return _keep(g, ctx.axes, ctx.keepdim) * centred * 2 / (
        _count(ctx.shape, ctx.axes) - ctx.correction)


def _g_std(ctx, g, x, out):
    std = _keep(out, ctx.axes, ctx.keepdim)
    scale = (_keep(g, ctx.axes, ctx.keepdim) / std).masked_fill(std == 0, 0)
    return scale * (x - _mean_keep(x, ctx.axes)) / (_count(ctx.shape, ctx.axes) - ctx.correction)


def _g_prod(ctx, g, x, out):
    """The product of the other elements of each slice (exclusive products from the left
    and from the right), right where the slice holds zeros too."""
    if x.dim() == 0:
        return g
    if x.numel() == 0:
        return g.new_zeros(ctx.shape)
    axes = ctx.axes
    rest = [i for i in range(x.dim()) if i not in axes]
    perm = rest + list(axes)
    inverse = [perm.index(i) for i in range(x.dim())]
    xp = x.to(g.dtype).permute(perm)
    flat = xp.reshape([x.shape[i] for i in rest] + [-1])
    ones = torch.ones_like(flat[..., :1])
    left = torch.cat([ones, flat[..., :-1]], -1).cumprod(-1)
    right = torch.cat([flat[..., 1:], ones], -1).flip(-1).cumprod(-1).flip(-1)
    gk = _keep(g, axes, ctx.keepdim).permute(perm).reshape([x.shape[i] for i in rest] + [1])
    return (left * right * gk).reshape(xp.shape).permute(inverse)


for _name, _grad in (("sum", _g_sum), ("mean", _g_mean), ("sumsq", _g_sumsq),
                     ("norm2", _g_norm2), ("prod", _g_prod), ("amax", _g_extreme),
                     ("amin", _g_extreme), ("logsumexp", _g_logsumexp), ("var", _g_var),
                     ("std", _g_std)):
    _autograd(_name, _grad)
del _name, _grad


def _values_indices_autograd(name):
    """max_dim / min_dim: the gradient goes to the element whose index the call returned, as
    torch.max(x, dim)'s does."""
    def setup_context(ctx, inputs, output):
        x, dim, keepdim = inputs
        ctx.dim, ctx.keepdim, ctx.shape, ctx.xdtype = dim % _builtins.max(x.dim(), 1), \
            keepdim, x.shape, x.dtype
        ctx.zero_d = x.dim() == 0
        ctx.save_for_backward(output[1])

    def backward(ctx, g, g_indices):
        (indices,) = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None, None, None
        if ctx.zero_d:
            return g.to(ctx.xdtype), None, None
        if not ctx.keepdim:
            g, indices = g.unsqueeze(ctx.dim), indices.unsqueeze(ctx.dim)
        gx = g.new_zeros(ctx.shape).scatter(ctx.dim, indices, g)
        return gx.to(ctx.xdtype), None, None
    backward.__name__ = name + "_backward"
    _ops[name].register_autograd(backward, setup_context=setup_context)


_values_indices_autograd("max_dim")
_values_indices_autograd("min_dim")

# which public function has a gradient (docs/python.md's table; the tests read it)
GRADIENTS = {"sum": True, "mean": True, "prod": True, "sumsq": True, "norm2": True,
             "amax": True, "amin": True, "max": True, "min": True, "logsumexp": True,
             "var": True, "std": True, "argmax": False, "argmin": False, "aminmax": False}


# ---- the public functions: torch's names and defaults ----------------------------------------

def _sum_like(name, x, dim, keepdim, dtype):
    """sum, prod, sumsq: torch's dtypes — an integer input sums into int64 unless dtype says
    otherwise (tilec widens i32 and u32; bool and 8- and 16-bit integers are cast to int32
    first); a dtype other than the input's and its wide one casts the input first."""
    if dtype is None:
        if x.dtype in _SMALL_INTS:
            x = x.to(torch.int32)
        if x.dtype in _INT32S:
            dtype = torch.int64
    elif dtype != x.dtype and dtype != _WIDE.get(x.dtype):
        x, dtype = x.to(dtype), None
    return _call[name](x, _dim_list(dim, name), keepdim, dtype)


def _float_only(name, x, dtype=None):
    """mean, norm2, var, std, logsumexp: floating inputs (or a floating dtype=), as torch's."""
    want = dtype if dtype is not None else x.dtype
    if want not in _FLOATS:
        raise TypeError("tilec.torch.%s takes floating-point inputs (as torch's does), not %s%s"
                        % (name, want, "; pass dtype=torch.float32" if name in (
                            "mean", "norm2") else "; cast it first, e.g. x.float()"))
    if dtype is not None and dtype != x.dtype and dtype != _WIDE.get(x.dtype):
        return x.to(dtype), None
    return x, dtype


def sum(x, dim=None, keepdim=False, *, dtype=None):
    """torch.sum: the sum over dim (None: every dim; an int or a list of ints). An integer
    input sums into int64 (torch's rule); dtype= the output's dtype (the input is cast to it
    first, or tilec accumulates in it when it is the input's wide dtype)."""
    return _sum_like("sum", x, dim, keepdim, dtype)


def prod(x, dim=None, keepdim=False, *, dtype=None):
    """torch.prod over dim (any set of dims here); integer inputs multiply into int64."""
    return _sum_like("prod", x, dim, keepdim, dtype)


def sumsq(x, dim=None, keepdim=False, *, dtype=None):
    """The sum of squares (x.square().sum(dim) in one pass); integers into int64."""
    return _sum_like("sumsq", x, dim, keepdim, dtype)


def mean(x, dim=None, keepdim=False, *, dtype=None):
    """torch.mean: floating inputs, or dtype= a floating dtype to compute in."""
    x, dtype = _float_only("mean", x, dtype)
    return _call["mean"](x, _dim_list(dim, "mean"), keepdim, dtype)


def norm2(x, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.vector_norm(x, 2, dim, keepdim, dtype=dtype)."""
    x, dtype = _float_only("norm2", x, dtype)
    return _call["norm2"](x, _dim_list(dim, "norm2"), keepdim, dtype)


def amax(x, dim=None, keepdim=False):
    """torch.amax (NaN propagates); the gradient is split evenly among ties."""
    return _call["amax"](x, _dim_list(dim, "amax"), keepdim)


def amin(x, dim=None, keepdim=False):
    """torch.amin (NaN propagates); the gradient is split evenly among ties."""
    return _call["amin"](x, _dim_list(dim, "amin"), keepdim)


def _extreme(name, whole, pair, x, dim, keepdim):
    if dim is None:
        return _call[whole](x, None, keepdim)
    if isinstance(dim, (list, tuple)):
        raise TypeError("tilec.torch.%s: dim is one int here (as torch's %s(x, dim) returns "
                        "(values, indices)); tilec.torch.a%s takes a list" % (name, name, name))
    return _call[pair](x, _index(dim, name), keepdim)


def max(x, dim=None, keepdim=False):
    """torch.max: without dim the maximum (a tensor, as amax); with dim (an int) the pair
    (values, indices), the gradient going to the element the index names."""
    return _extreme("max", "amax", "max_dim", x, dim, keepdim)


def min(x, dim=None, keepdim=False):
    """torch.min: without dim the minimum; with dim (an int) (values, indices)."""
    return _extreme("min", "amin", "min_dim", x, dim, keepdim)


def logsumexp(x, dim=None, keepdim=False):
    """torch.logsumexp over dim (None: every dim, which torch's does not take)."""
    _float_only("logsumexp", x)
    return _call["logsumexp"](x, _dim_list(dim, "logsumexp"), keepdim)


def var(x, dim=None, *, correction=1, keepdim=False):
    """torch.var: the divisor is n - correction (1, Bessel's, by default, as torch's)."""
    _float_only("var", x)
    return _call["var"](x, _dim_list(dim, "var"), _index(correction, "var"), keepdim)


def std(x, dim=None, *, correction=1, keepdim=False):
    """torch.std: the square root of var, correction 1 by default."""
    _float_only("std", x)
    return _call["std"](x, _dim_list(dim, "std"), _index(correction, "std"), keepdim)


def argmax(x, dim=None, keepdim=False):
    """torch.argmax: int64 indices (of the flattened reduced dims when dim is None or a
    list); no gradient."""
    return _call["argmax"](x, _dim_list(dim, "argmax"), keepdim)


def argmin(x, dim=None, keepdim=False):
    """torch.argmin: int64 indices; no gradient."""
    return _call["argmin"](x, _dim_list(dim, "argmin"), keepdim)


def aminmax(x, *, dim=None, keepdim=False):
    """torch.aminmax: the pair (min, max) in one pass; no gradient. As torch's, dim=None gives
    0-d results whatever keepdim says (torch 2.11 measured on the H200)."""
    return _call["aminmax"](x, _dim_list(dim, "aminmax"), keepdim if dim is not None else False)


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """torch.segment_reduce's signature: reduces the segments of data's dim `axis` with
    reduce ("sum", "mean", "max", "min", "prod", or any op of tilec.OPS), the segments given
    by lengths= or offsets= (integer tensors; a float or bool one refused, never truncated).
    As torch's, the lengths must sum to the axis's extent (offsets run from 0 to it), unless
    unsafe=True. A plain function over tilec.segment_reduce, not a custom operator: no
    autograd, no torch.compile tracing. initial= is not taken, and an empty segment of max or
    min is an error (tilec.ArgumentError) where torch fills it with -inf / +inf."""
    if indices is not None or initial is not None:
        raise TypeError("tilec.torch.segment_reduce takes lengths= or offsets=; indices= and "
                        "initial= are not taken")
    if not isinstance(data, torch.Tensor):
        raise TypeError("tilec.torch.segment_reduce: data must be a torch tensor, not %s" %
                        type(data).__name__)
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError("tilec.torch.segment_reduce: axis must be an int, not %r" % (axis,))
    n = _builtins.max(data.dim(), 1)
    if not -n <= axis < n:
        raise IndexError("tilec: dimension out of range (expected to be in range of [%d, %d], "
                         "but got %d)" % (-n, n - 1, axis))
    extent = None if unsafe or data.dim() == 0 else data.shape[axis]
    _tilec._segment_arg(offsets, lengths, extent)  # the package's one check, torch's rule
    if reduce in _FLOAT_OPS and data.dtype not in _FLOATS:
        raise TypeError("tilec.torch.segment_reduce: %s takes floating-point data (as torch's "
                        "does), not %s; cast it first, e.g. data.float()" % (reduce, data.dtype))
    return _tilec.segment_reduce(  # torch's: the data's dtype (not numpy's int64), correction 1
        data, offsets, reduce, axis, lengths=lengths,
        dtype=None if reduce in _FLOAT_OPS or str(reduce).startswith("arg") else data.dtype,
        correction=1 if reduce in ("var", "std") else None)


# ---- fused kernels: forward only (no autograd formula; a backward through them raises) ----

_OptDtype = "ScalarType? dtype=None"


def _fused_rowwise(name):
    def impl(x, dtype=None, approx=False):
        return getattr(_tilec, name)(x, dtype=dtype, approx=approx)

    def fake(x, dtype=None, approx=False):
        return torch.empty_like(x, dtype=dtype or x.dtype, memory_format=torch.contiguous_format)
    return _define(name, "(Tensor x, %s, bool approx=False) -> Tensor" % _OptDtype, impl, fake)


_softmax_op = _fused_rowwise("softmax")
_log_softmax_op = _fused_rowwise("log_softmax")


def _fused_dtype(name, x, dim, dtype):
    if not isinstance(x, torch.Tensor):
        raise TypeError("tilec.torch.%s: x must be a torch tensor, not %s" % (name, type(x).__name__))
    if dim not in (-1, x.dim() - 1):
        raise ValueError("tilec.torch.%s: dim=%r; tilec's fused kernels run over the last axis" % (name, dim))


def _approx(name, approx):
    if not isinstance(approx, bool):
        raise TypeError("tilec.torch.%s: approx must be True or False, not %r" % (name, approx))
    return approx


def softmax(x, dim=-1, *, dtype=None, approx=False):
    """torch.softmax over the last axis as one fused tilec kernel (a custom operator,
    torch.ops.tilec.softmax, that torch.compile traces without a graph break). approx=True:
    the GPU's hardware exponential (faster, not the same bits everywhere: tilec.softmax)."""
    _fused_dtype("softmax", x, dim, dtype)
    return _softmax_op(x, dtype, _approx("softmax", approx))


def log_softmax(x, dim=-1, *, dtype=None, approx=False):
    """torch.log_softmax over the last axis (torch.ops.tilec.log_softmax); approx as softmax's."""
    _fused_dtype("log_softmax", x, dim, dtype)
    return _log_softmax_op(x, dtype, _approx("log_softmax", approx))


def _rms_impl(x, normalized_shape, weight=None, eps=None):
    return _tilec.rms_norm(x, normalized_shape, weight, eps)


def _same_fake(x, *args, **kw):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


_rms_op = _define("rms_norm", "(Tensor x, int[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor",
                  _rms_impl, _same_fake)


def _ln_impl(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _tilec.layer_norm(x, normalized_shape, weight, bias, eps)


_ln_op = _define("layer_norm", "(Tensor x, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
                 "float eps=1e-05) -> Tensor", _ln_impl, _same_fake)


def rms_norm(x, normalized_shape, weight=None, eps=None):
    """torch.nn.functional.rms_norm over the last axis (torch.ops.tilec.rms_norm)."""
    ns = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _rms_op(x, ns, weight, eps)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.layer_norm over the last axis (torch.ops.tilec.layer_norm)."""
    ns = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _ln_op(x, ns, weight, bias, eps)


@torch.library.custom_op("tilec::add_rms_norm", mutates_args=("residual",), device_types=_DEVICES)
def _add_rms_op(x: torch.Tensor, residual: torch.Tensor, weight: _Optional[torch.Tensor] = None,
                eps: _Optional[float] = None) -> torch.Tensor:
    y, h = _tilec.add_rms_norm(x, residual, weight, eps)
    if h is not residual and h.data_ptr() != residual.data_ptr():  # a CPU tensor went through numpy
        residual.copy_(h)
    return y


@_add_rms_op.register_fake
def _(x, residual, weight=None, eps=None):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def add_rms_norm(x, residual, weight=None, eps=None):
    """h = x + residual written into residual, then rms_norm(h): returns (y, residual)
    (torch.ops.tilec.add_rms_norm mutates residual)."""
    return _add_rms_op(x, residual, weight, eps), residual


def _ce_impl(input, target, ignore_index=-100, reduction="mean", approx=False):
    return _tilec.cross_entropy(input, target, ignore_index, reduction, approx=approx)


def _ce_fake(input, target, ignore_index=-100, reduction="mean", approx=False):
    shape = input.shape[:-1] if reduction == "none" else ()
    return input.new_empty(shape)


_ce_op = _define("cross_entropy", "(Tensor input, Tensor target, int ignore_index=-100, str reduction='mean', "
                 "bool approx=False) -> Tensor", _ce_impl, _ce_fake)


def cross_entropy(input, target, ignore_index=-100, reduction="mean", *, approx=False):
    """torch.nn.functional.cross_entropy with class-index targets over the last axis
    (torch.ops.tilec.cross_entropy); no weight= or label_smoothing=. approx as softmax's."""
    return _ce_op(input, target, ignore_index, reduction, _approx("cross_entropy", approx))
