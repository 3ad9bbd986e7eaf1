"""tilec.torch: tilec's reductions as torch custom operators (python/tilec/torch.py).

Where torch (2.4 or newer) is not importable the tests that need it skip, saying so; the
two that check the ImportError of `import tilec.torch` without torch (or with one too old)
run everywhere. On the GPU machine scripts/gpu-torch runs this file: the schemas and fake
kernels (torch.library.opcheck, and the shapes and dtypes of torch's own ops on meta
tensors), results against torch's ops in float64, gradients (torch.autograd.gradcheck in
float64, and torch's own gradients where tilec takes no float64), torch.compile with
fullgraph=True (static and dynamic shapes, forward and backward), CUDA graphs (torch's
capture and replay, and a CuPy graph of tilec.reduce) and the CPU path.
"""
import os
import subprocess
import sys

import pytest

try:
    import torch
except ImportError:
    torch = None

HAVE_TORCH = torch is not None and hasattr(getattr(torch, "library", None), "custom_op")
CUDA = HAVE_TORCH and torch.cuda.is_available()
needs_torch = pytest.mark.skipif(
    not HAVE_TORCH, reason="torch 2.4 or newer is not importable here (scripts/gpu-torch runs "
    "this file on the GPU machine)")
needs_cuda = pytest.mark.skipif(
    not CUDA, reason="%s (scripts/gpu-torch runs this file on the GPU machine)" % (
        "no CUDA device through torch here" if HAVE_TORCH else
        "torch 2.4 or newer is not importable here"))

if HAVE_TORCH:
    import tilec.torch as tt
import tilec  # noqa: E402

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(tilec.__file__)))


# ---- the import's error, without torch or with an old one (runs everywhere) -------------

def _import_in_child(prelude):
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_DIR + os.pathsep + env.get("PYTHONPATH", "")
    code = prelude + "\ntry:\n    import tilec.torch\nexcept ImportError as e:\n" \
        "    print('IMPORTERROR', e)\nelse:\n    print('IMPORTED')\n"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    return r.stdout + r.stderr


def test_import_without_torch_says_so():
    out = _import_in_child("import sys\nsys.modules['torch'] = None  # import torch fails")
    assert "IMPORTERROR" in out and "needs torch" in out and "2.4" in out, out


def test_import_with_old_torch_says_so():
    out = _import_in_child(
        "import sys, types\nt = types.ModuleType('torch')\nt.__version__ = '2.3.1'\n"
        "t.library = types.ModuleType('torch.library')\nsys.modules['torch'] = t")
    assert "IMPORTERROR" in out and "2.4" in out and "2.3.1" in out, out


# ---- helpers ----------------------------------------------------------------------------

def distinct(shape, dtype=None, device="cuda", seed=0):
    """Values without ties (a permutation of n / n, centred), so that max, min and their
    indices have one answer and finite differences do not cross a tie."""
    g = torch.Generator().manual_seed(seed)
    n = 1
    for e in shape:
        n *= e
    x = (torch.randperm(n, generator=g).to(torch.float64) - n / 2) / max(n, 1)
    return x.reshape(shape).to(dtype or torch.float32).to(device)


def normal(shape, dtype=None, device="cuda", seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype or torch.float32).to(device)


def dims_arg(dim):
    return None if dim is None else (tuple(dim) if isinstance(dim, list) else dim)


def ref_dims(x, dim):
    """torch's own ops take a tuple of dims (every dim for None)."""
    if dim is None:
        return tuple(range(x.dim()))
    return tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)


def close(got, want, atol, what):
    """|got - want| <= atol elementwise (want and atol in float64)."""
    got = got.to(torch.float64)
    assert got.shape == want.shape, "%s: shape %s, torch's %s" % (what, got.shape, want.shape)
    err = (got - want).abs()
    bad = ~(err <= atol)
    assert not bool(bad.any()), "%s: %d of %d elements off by more than the bound; worst %g" % (
        what, int(bad.sum()), bad.numel(), float(err.max()))


# ---- schemas and fake kernels ------------------------------------------------------------

SCHEMAS = {
    "sum": "tilec::sum(Tensor x, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> Tensor",
    "mean": "tilec::mean(Tensor x, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> Tensor",
    "prod": "tilec::prod(Tensor x, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> Tensor",
    "sumsq": "tilec::sumsq(Tensor x, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> Tensor",
    "norm2": "tilec::norm2(Tensor x, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> Tensor",
    "amax": "tilec::amax(Tensor x, int[]? dim=None, bool keepdim=False) -> Tensor",
    "amin": "tilec::amin(Tensor x, int[]? dim=None, bool keepdim=False) -> Tensor",
    "logsumexp": "tilec::logsumexp(Tensor x, int[]? dim=None, bool keepdim=False) -> Tensor",
    "argmax": "tilec::argmax(Tensor x, int[]? dim=None, bool keepdim=False) -> Tensor",
    "argmin": "tilec::argmin(Tensor x, int[]? dim=None, bool keepdim=False) -> Tensor",
    "var": "tilec::var(Tensor x, int[]? dim=None, int correction=1, bool keepdim=False) -> Tensor",
    "std": "tilec::std(Tensor x, int[]? dim=None, int correction=1, bool keepdim=False) -> Tensor",
    "aminmax": "tilec::aminmax(Tensor x, int[]? dim=None, bool keepdim=False) -> (Tensor, Tensor)",
    "max_dim": "tilec::max_dim(Tensor x, int dim, bool keepdim=False) -> (Tensor, Tensor)",
    "min_dim": "tilec::min_dim(Tensor x, int dim, bool keepdim=False) -> (Tensor, Tensor)",
}


@needs_torch
def test_schemas():
    assert set(tt.OPS) == set(SCHEMAS)
    for name, want in SCHEMAS.items():
        op = getattr(torch.ops.tilec, name).default
        assert str(op._schema) == want
        assert torch.Tag.pt2_compliant_tag in op.tags, name


def _torch_dtype_of(name, x):
    if name in ("sum", "prod", "sumsq"):
        return torch.sum(x).dtype  # integers into int64
    if name in ("argmax", "argmin"):
        return torch.int64
    return x.dtype


FAKE_DIMS = [None, 0, -1, [0, 2], [2, 0, 1], []]


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_fake_shapes_and_dtypes_are_torchs(dtype):
    """On meta tensors (the fake kernel): every function's shape is torch.sum's for the same
    dims and keepdim, its dtype torch's (integer sums into int64, indices int64)."""
    dt = getattr(torch, dtype)
    funcs = {"sum": tt.sum, "prod": tt.prod, "sumsq": tt.sumsq, "amax": tt.amax,
             "amin": tt.amin, "argmax": tt.argmax, "argmin": tt.argmin}
    if dt.is_floating_point:
        funcs.update({"mean": tt.mean, "norm2": tt.norm2, "var": tt.var, "std": tt.std,
                      "logsumexp": tt.logsumexp})
    x = torch.empty(3, 4, 5, dtype=dt, device="meta")
    for dim in FAKE_DIMS:
        for keepdim in (False, True):
            want = torch.sum(x, dim=dims_arg(dim) if dim != [] else None, keepdim=keepdim).shape
            for name, f in funcs.items():
                r = f(x, dim, keepdim=keepdim)
                assert r.device.type == "meta"
                assert r.shape == want and r.dtype == _torch_dtype_of(name, x), (
                    name, dim, keepdim, r.shape, r.dtype)
            lo, hi = tt.aminmax(x, dim=dim, keepdim=keepdim)
            # torch.aminmax's own rule: dim=None gives 0-d results whatever keepdim says
            assert lo.shape == hi.shape == (() if dim is None else want) and lo.dtype == hi.dtype == dt
    v, i = tt.max(x, 1, keepdim=True)
    assert v.shape == i.shape == (3, 1, 5) and v.dtype == dt and i.dtype == torch.int64
    s = torch.empty((), dtype=dt, device="meta")  # 0-d: dim None, 0 or -1
    for dim in (None, 0, -1):
        assert tt.sum(s, dim).shape == () and tt.amax(s, dim, keepdim=True).shape == ()


@needs_torch
def test_fake_refuses_what_the_kernel_refuses():
    m = torch.empty(2, 0, 3, device="meta")
    assert tt.sum(m, 1).shape == (2, 3)  # an empty sum is 0
    with pytest.raises(ValueError):
        tt.amax(m, 1)  # the max of nothing: tilec's ArgumentError, a ValueError
    with pytest.raises(TypeError):  # the op itself, past the wrapper's float check: the table's no
        torch.ops.tilec.logsumexp(torch.empty(3, dtype=torch.int32, device="meta"), [0], False)
    # 64-bit inputs have arg-reductions: int64 indices, no refusal
    assert tt.argmax(torch.empty(3, 5, dtype=torch.float64, device="meta"), 1).dtype == torch.int64
    assert tt.argmin(torch.empty(3, 5, dtype=torch.int64, device="meta"), 0).shape == (5,)
    with pytest.raises(TypeError):
        tt.mean(torch.empty(3, dtype=torch.int32, device="meta"))
    with pytest.raises(IndexError):
        tt.sum(torch.empty(3, 4, device="meta"), 2)
    with pytest.raises(TypeError):
        tt.max(torch.empty(3, 4, device="meta"), [0, 1])
    with pytest.raises(TypeError):
        torch.ops.tilec.sum(torch.empty(3, device="meta"), None, False, torch.float16)
    # dtype= other than the input's and its wide dtype: the function casts first
    assert tt.sum(torch.empty(3, device="meta"), dtype=torch.float16).dtype == torch.float16
    assert tt.mean(torch.empty(3, dtype=torch.int32, device="meta"),
                   dtype=torch.float32).dtype == torch.float32


# opcheck: schema, fake kernel against the real one, autograd registration, AOTAutograd
# (static and dynamic shapes, and gradients where there are some)
OPCHECK_CASES = [
    ("sum", (None, False, None)), ("sum", ([1], True, None)), ("sum", ([0, 2], False, "float64")),
    ("mean", ([2], False, None)), ("prod", ([1], False, None)), ("sumsq", ([0, 1], True, None)),
    ("norm2", (None, False, None)), ("norm2", ([2], True, "float64")),
    ("amax", ([1], False)), ("amin", ([0, 2], True)), ("logsumexp", ([2], False)),
    ("var", ([1], 1, False)), ("var", ([0, 2], 0, True)), ("std", ([2], 2, False)),
    ("argmax", ([1], False)), ("argmin", (None, True)), ("aminmax", ([0], False)),
    ("max_dim", (1, False)), ("min_dim", (2, True)),
]


@needs_cuda
@pytest.mark.parametrize("name,args", OPCHECK_CASES, ids=[
    "%s-%d" % (n, i) for i, (n, _) in enumerate(OPCHECK_CASES)])
def test_opcheck(name, args):
    grad = name not in ("argmax", "argmin", "aminmax")
    x = distinct((3, 4, 5)).requires_grad_(grad)
    if name == "prod":
        x = (1 + distinct((3, 4, 5)) / 4).requires_grad_(True)
    args = tuple(getattr(torch, a) if isinstance(a, str) else a for a in args)  # a dtype
    torch.library.opcheck(getattr(torch.ops.tilec, name).default, (x,) + args)


@needs_torch
def test_opcheck_cpu():
    """The CPU implementation (tilec's host path) against the same fake kernel."""
    x = distinct((3, 4, 5), device="cpu").requires_grad_(True)
    torch.library.opcheck(torch.ops.tilec.sum.default, (x, [1], False, None))
    torch.library.opcheck(torch.ops.tilec.amax.default, (x, [0, 2], True))


# ---- results against torch's own ops -------------------------------------------------------

VALUE_DIMS = [None, 0, 1, -1, [0, 2]]


def _sum_bound(x, dim, keepdim, scale=1.0):
    """1e-5 of the magnitudes summed (f32's bound in docs/gpu-results.md), in float64."""
    return 1e-5 * torch.sum(x.abs().to(torch.float64), dim=dims_arg(dim), keepdim=keepdim) * scale + 1e-30


@needs_cuda
@pytest.mark.parametrize("dim", VALUE_DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_values_against_torch_float64(dim, keepdim):
    x = normal((7, 33, 65))
    x64 = x.to(torch.float64)
    d = dims_arg(dim)
    rd = ref_dims(x, dim)
    n = 1
    for a in rd:
        n *= x.shape[a]
    close(tt.sum(x, dim, keepdim), torch.sum(x64, d, keepdim=keepdim),
          _sum_bound(x, dim, keepdim), "sum")
    close(tt.mean(x, dim, keepdim), torch.mean(x64, d, keepdim=keepdim),
          _sum_bound(x, dim, keepdim, 1.0 / n), "mean")
    close(tt.sumsq(x, dim, keepdim), torch.sum(x64 * x64, d, keepdim=keepdim),
          1e-5 * torch.sum(x64 * x64, d, keepdim=keepdim), "sumsq")
    want = torch.linalg.vector_norm(x64, 2, d, keepdim=keepdim)
    close(tt.norm2(x, dim, keepdim), want, 1e-6 * want, "norm2")
    want = torch.logsumexp(x64, rd, keepdim=keepdim)
    close(tt.logsumexp(x, dim, keepdim), want, 1e-5 * want.abs().clamp(min=1), "logsumexp")
    for c in (0, 1, 2):
        want = torch.var(x64, d, correction=c, keepdim=keepdim)
        close(tt.var(x, dim, correction=c, keepdim=keepdim), want, 1e-5 * want + 1e-7, "var")
        want = torch.std(x64, d, correction=c, keepdim=keepdim)
        close(tt.std(x, dim, correction=c, keepdim=keepdim), want, 1e-5 * want + 1e-7, "std")
    p = 1 + x / 64  # products that stay near 1
    want = _prod_ref(p.to(torch.float64), rd, keepdim)
    close(tt.prod(p, dim, keepdim), want, 4 * n * 1.2e-7 * want.abs(), "prod")
    # the wide dtype: f32 in, f64 accumulated and out
    got = tt.sum(x, dim, keepdim, dtype=torch.float64)
    assert got.dtype == torch.float64
    close(got, torch.sum(x64, d, keepdim=keepdim), 1e-12 * _sum_bound(x, dim, keepdim) / 1e-5,
          "sum dtype=float64")


def _prod_ref(x, axes, keepdim):
    """torch.prod takes one dim: one after another, the last first (so the others stay)."""
    for a in sorted(axes, reverse=True):
        x = torch.prod(x, a, keepdim=keepdim)
    return x


@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
@pytest.mark.parametrize("dim", VALUE_DIMS, ids=str)
def test_compare_ops_exact(dtype, dim):
    dt = getattr(torch, dtype)
    x = distinct((6, 37, 41), device="cpu")
    if dt == torch.int32:
        x = (x * 6 * 37 * 41).round()  # distinct integers
    x = x.to(dt).cuda()  # 16-bit floats: ties, where torch and tilec both give the first index
    d, rd = dims_arg(dim), ref_dims(x, dim)
    for keepdim in (False, True):
        assert torch.equal(tt.amax(x, dim, keepdim), torch.amax(x, rd, keepdim))
        assert torch.equal(tt.amin(x, dim, keepdim), torch.amin(x, rd, keepdim))
        if isinstance(dim, list):
            continue  # torch's argmax, max(x, dim) and aminmax take one dim
        assert torch.equal(tt.argmax(x, d, keepdim), torch.argmax(x, d, keepdim))
        assert torch.equal(tt.argmin(x, d, keepdim), torch.argmin(x, d, keepdim))
        lo, hi = tt.aminmax(x, dim=d, keepdim=keepdim)
        want = torch.aminmax(x, dim=d, keepdim=keepdim)
        assert torch.equal(lo, want.min) and torch.equal(hi, want.max)
        if d is not None:
            for f, g in ((tt.max, torch.max), (tt.min, torch.min)):
                v, i = f(x, d, keepdim)
                wv, wi = g(x, d, keepdim)
                assert torch.equal(v, wv) and torch.equal(i, wi)


@needs_cuda
def test_dtypes_as_torch():
    xi = torch.randint(-1000, 1000, (64, 1000), dtype=torch.int32, device="cuda")
    r = tt.sum(xi, 1)
    assert r.dtype == torch.int64 and torch.equal(r, torch.sum(xi, 1))  # exact: integers
    assert torch.equal(tt.sum(xi, 1, dtype=torch.int32), torch.sum(xi, 1, dtype=torch.int32))
    b = xi > 0
    assert torch.equal(tt.sum(b, 1), torch.sum(b, 1))  # bool counts into int64, as torch's
    h = normal((64, 1000), torch.float16)
    got = tt.sum(h, 1)
    assert got.dtype == torch.float16
    close(got, torch.sum(h.double(), 1), 1e-3 * h.double().abs().sum(1) + 1e-2, "f16 sum")
    got = tt.sum(h, 1, dtype=torch.float32)  # accumulated in f32, not rounded to f16
    assert got.dtype == torch.float32
    close(got, torch.sum(h.double(), 1), 1e-5 * h.double().abs().sum(1), "f16 sum into f32")
    got = tt.mean(xi, 1, dtype=torch.float64)  # cast first, as torch's dtype= does
    close(got, torch.mean(xi.double(), 1), 1e-12 * 1000, "int mean, dtype=float64")


@needs_cuda
def test_errors():
    x = normal((4, 5))
    with pytest.raises(TypeError):
        tt.logsumexp(x.int(), 1)  # logsumexp of integers: tilec's table has none (torch promotes them to float)
    # 64-bit arg-reductions: torch's indices, first of ties, NaN wins
    d = x.double()
    d[1, 3] = float("nan")
    d[2, :] = 7.0
    assert torch.equal(tt.argmax(d, 1), torch.argmax(d, 1))
    big = torch.tensor([[-2**63, 2**63 - 1, 2**63 - 1, 5]], dtype=torch.int64, device="cuda")
    assert tt.argmax(big, 1).tolist() == [1] and tt.argmin(big, 1).tolist() == [0]
    with pytest.raises(TypeError):
        tt.var(x.int(), 1)
    with pytest.raises(IndexError):
        tt.sum(x, 2)
    with pytest.raises(ValueError):
        tt.amax(torch.empty(3, 0, device="cuda"), 1)
    with pytest.raises(TypeError):
        tt.sum(x, 1.0)
    with pytest.raises(TypeError):
        tt.sum(x, True)


@needs_torch
def test_cpu_tensors_through_the_host_path():
    x = normal((5, 37), device="cpu")
    close(tt.sum(x, 1), torch.sum(x.double(), 1), _sum_bound(x, 1, False), "cpu sum")
    assert torch.equal(tt.amax(x, 0), torch.amax(x, 0))
    assert tt.sum(x, 1).device.type == "cpu"


@needs_cuda
def test_runs_on_the_current_stream():
    src = normal((4096, 1003))
    want = tt.amax(src, 1)
    s = torch.cuda.Stream()
    x = torch.zeros_like(src)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(100_000_000)
        x.copy_(src)
        r = tt.amax(x, 1)
    s.synchronize()
    assert torch.equal(r, want)


# ---- autograd -------------------------------------------------------------------------

GRAD_DIMS = [(None, False), ([1], False), ([0, 2], True), (-1, True)]


@needs_cuda
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "sumsq", "norm2", "amax", "amin",
                                  "var", "std"])
@pytest.mark.parametrize("dim,keepdim", GRAD_DIMS, ids=str)
def test_gradcheck_float64(name, dim, keepdim):
    x = distinct((3, 4, 5), torch.float64, seed=3)
    if name == "prod":
        x = 1 + x / 2
    x.requires_grad_(True)
    f = getattr(tt, name)
    if name in ("var", "std"):
        for c in (0, 1, 2):
            assert torch.autograd.gradcheck(
                lambda t, c=c: f(t, dim, correction=c, keepdim=keepdim), (x,))
    else:
        assert torch.autograd.gradcheck(lambda t: f(t, dim, keepdim), (x,))


@needs_cuda
def test_gradcheck_widened_output():
    """dtype= the wide dtype: float32 in, float64 out; the gradient comes back in float32."""
    x = distinct((3, 4, 5), seed=4).requires_grad_(True)
    y = tt.sum(x, 1, dtype=torch.float64)
    (g,) = torch.autograd.grad(y, x, torch.ones_like(y))
    assert g.dtype == torch.float32 and torch.equal(g, torch.ones_like(x))
    y = tt.norm2(x, [0, 2], dtype=torch.float64)
    (g,) = torch.autograd.grad(y.sum(), x)
    xd = x.detach().double().requires_grad_(True)
    (w,) = torch.autograd.grad(torch.linalg.vector_norm(xd, 2, (0, 2)).sum(), xd)
    assert torch.allclose(g.double(), w, rtol=1e-6, atol=1e-7)


def _torch_grad(f, x, g=None):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    (gx,) = torch.autograd.grad(y, x, g if g is not None else torch.ones_like(y))
    return gx


@needs_cuda
@pytest.mark.parametrize("dim,keepdim", [(1, False), (2, True), (0, False)], ids=str)
def test_gradients_of_float32_only_ops(dim, keepdim):
    """logsumexp and max / min with dim, in float32 (as before f64 argmax existed): the
    gradients against torch's own ops, and gradcheck with float32's step and tolerances."""
    x = distinct((3, 4, 5), seed=5)
    g = normal(torch.logsumexp(x, dim, keepdim).shape, seed=6)
    close(_torch_grad(lambda t: tt.logsumexp(t, dim, keepdim), x, g),
          _torch_grad(lambda t: torch.logsumexp(t, dim, keepdim), x, g).double(), 1e-6,
          "logsumexp grad")
    for f, h in ((tt.max, torch.max), (tt.min, torch.min)):
        assert torch.equal(_torch_grad(lambda t: f(t, dim, keepdim)[0], x, g),
                           _torch_grad(lambda t: h(t, dim, keepdim)[0], x, g))
    xr = x.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: tt.logsumexp(t, dim, keepdim), (xr,),
                                    eps=1e-3, atol=1e-2, rtol=1e-2)
    assert torch.autograd.gradcheck(lambda t: tt.max(t, dim, keepdim)[0], (xr,),
                                    eps=1e-3, atol=1e-2, rtol=1e-2)


@needs_cuda
def test_gradients_at_ties_zeros_and_zero_norms():
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0]], device="cuda",
                     dtype=torch.float64)
    for f, h in ((tt.amax, torch.amax), (tt.amin, torch.amin)):  # split evenly among ties
        assert torch.equal(_torch_grad(lambda t: f(t, 1), x), _torch_grad(lambda t: h(t, 1), x))
    z = torch.tensor([[0.0, 0.0, 0.0], [3.0, 0.0, 4.0]], device="cuda", dtype=torch.float64)
    assert torch.allclose(_torch_grad(lambda t: tt.norm2(t, 1), z),
                          _torch_grad(lambda t: torch.linalg.vector_norm(t, 2, 1), z))
    p = torch.tensor([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 4.0]], device="cuda",
                     dtype=torch.float64)
    for dim in (0, 1):
        assert torch.allclose(_torch_grad(lambda t: tt.prod(t, dim), p),
                              _torch_grad(lambda t: torch.prod(t, dim), p))
    c = torch.full((2, 5), 7.0, device="cuda", dtype=torch.float64)  # std 0: gradient 0
    assert torch.equal(_torch_grad(lambda t: tt.std(t, 1), c), torch.zeros_like(c))


@needs_cuda
def test_no_gradient_ops():
    x = normal((4, 5)).requires_grad_(True)
    assert not tt.argmax(x, 1).requires_grad and not tt.argmin(x).requires_grad
    lo, hi = tt.aminmax(x, dim=1)
    with pytest.raises(RuntimeError, match="autograd"):
        (hi - lo).sum().backward()
    assert set(k for k, v in tt.GRADIENTS.items() if not v) == {"argmax", "argmin", "aminmax"}


# ---- torch.compile ------------------------------------------------------------------------

def _model(x):
    a = tt.sum(x, 1) * 2 + tt.amax(x, dim=1) - tt.logsumexp(x, 1)
    b = tt.var(x, [1]) + tt.std(x, 1, correction=0) + tt.norm2(x * 3, 1) + tt.mean(x, -1)
    c = tt.prod(1 + x / 64, 1) + tt.sumsq(x, 1) + tt.amin(x, 1)
    v, i = tt.max(x, 1)
    lo, hi = tt.aminmax(x, dim=0)
    return a + b + c + v, i + tt.argmin(x, 1), hi - lo, tt.sum(x)


def _same(got, want):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.is_floating_point:
            assert torch.allclose(g, w, rtol=1e-5, atol=1e-5), float((g - w).abs().max())
        else:
            assert torch.equal(g, w)


@needs_cuda
def test_compile_fullgraph_equals_eager():
    torch._dynamo.reset()
    x = normal((32, 1000))
    compiled = torch.compile(_model, fullgraph=True)  # a graph break is an error here
    _same(compiled(x), _model(x))
    x2 = normal((32, 1000), seed=9)
    _same(compiled(x2), _model(x2))


@needs_cuda
def test_compile_dynamic_shapes_one_graph():
    from torch._dynamo.testing import CompileCounterWithBackend
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")
    compiled = torch.compile(_model, fullgraph=True, dynamic=True, backend=counter)
    for shape in ((8, 100), (16, 300), (5, 77)):
        x = normal(shape, seed=shape[1])
        _same(compiled(x), _model(x))
    assert counter.frame_count == 1, "recompiled %d times" % counter.frame_count


@needs_cuda
def test_compile_backward_equals_eager():
    def loss(x):
        return (tt.sum(x * x, 1).mean() + tt.logsumexp(x, 1).sum() + tt.amax(x, 0).sum()
                + tt.var(x, 1).sum() + tt.norm2(x, 1).sum() + tt.max(x, 1)[0].sum())
    torch._dynamo.reset()
    x = distinct((16, 50), seed=11)
    want = _torch_grad(loss, x)
    got = _torch_grad(torch.compile(loss, fullgraph=True), x)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)


# ---- CUDA graphs -----------------------------------------------------------------------

def _graph_calls(x, big):
    return (tt.sum(x, 1), tt.amax(x, 0), tt.var(x, 1), tt.argmax(x, 1), tt.logsumexp(x, 1),
            tt.norm2(big))


def _graph_refs(x, big):
    x64 = x.double()
    return (torch.sum(x64, 1), torch.amax(x, 0), torch.var(x64, 1), torch.argmax(x, 1),
            torch.logsumexp(x64, 1), torch.linalg.vector_norm(big.double()))


def _check_graph_outputs(outs, x, big):
    refs = _graph_refs(x, big)
    close(outs[0], refs[0], _sum_bound(x, 1, False), "graph sum")
    assert torch.equal(outs[1], refs[1]) and torch.equal(outs[3], refs[3])
    close(outs[2], refs[2], 1e-5 * refs[2], "graph var")
    close(outs[4], refs[4], 1e-5 * refs[4].abs().clamp(min=1), "graph logsumexp")
    close(outs[5], refs[5], 1e-6 * refs[5], "graph norm2")


@needs_cuda
def test_cuda_graph_capture_and_replay():
    """Warm up on a side stream (torch's recipe), capture on it, replay on new data."""
    x = distinct((64, 1000), seed=12)
    big = normal((1 << 22,), seed=13)  # a full reduction of 2^22: a multi-block plan
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            _graph_calls(x, big)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        outs = _graph_calls(x, big)
    for seed in (20, 21, 22):
        x.copy_(distinct((64, 1000), seed=seed))
        big.copy_(normal((1 << 22,), seed=seed))
        g.replay()
        torch.cuda.synchronize()
        _check_graph_outputs(outs, x, big)


@needs_cuda
def test_cuda_graph_of_an_unprepared_call():
    """A shape never run before, captured on torch.cuda.graph's own stream: it works (the
    library prepares it outside the capture) and replays right, or it is refused with a
    message that says to warm up — never a broken capture; afterwards calls still work."""
    x = normal((48, 777), seed=30)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            out = tt.sum(x, 1)
    except Exception as e:  # noqa: BLE001 (which error is the question)
        msg = str(e).lower()
        assert isinstance(e, tilec.Error) and ("warm" in msg or "prepar" in msg), \
            "not a clear refusal: %s: %s" % (type(e).__name__, e)
    else:
        for seed in (31, 32):
            x.copy_(normal((48, 777), seed=seed))
            g.replay()
            torch.cuda.synchronize()
            close(out, torch.sum(x.double(), 1), _sum_bound(x, 1, False), "unprepared replay")
    torch.cuda.synchronize()
    close(tt.sum(x, 1), torch.sum(x.double(), 1), _sum_bound(x, 1, False), "after the capture")


@needs_cuda
def test_cupy_graph_of_tilec_reduce():
    cupy = pytest.importorskip("cupy")
    s = cupy.cuda.Stream(non_blocking=True)
    rng = cupy.random.default_rng(5)
    x = rng.standard_normal((64, 1000), dtype=cupy.float32)
    out = cupy.empty(64, dtype=cupy.float32)
    idx = cupy.empty(1000, dtype=cupy.int64)
    with s:
        tilec.sum(x, axis=1, out=out)  # warm up: plan, compile, scratch, on this stream
        tilec.argmax(x, axis=0, out=idx)
        s.synchronize()
        s.begin_capture()
        tilec.sum(x, axis=1, out=out)
        tilec.argmax(x, axis=0, out=idx)
        graph = s.end_capture()
    for seed in (6, 7):
        with s:
            x[...] = cupy.random.default_rng(seed).standard_normal((64, 1000), dtype=cupy.float32)
            out.fill(cupy.nan)
            graph.launch(s)
        s.synchronize()
        x64 = x.astype(cupy.float64)
        err = cupy.abs(out.astype(cupy.float64) - x64.sum(axis=1))
        assert bool((err <= 1e-5 * cupy.abs(x64).sum(axis=1)).all())
        assert bool((idx == x.argmax(axis=0)).all())
