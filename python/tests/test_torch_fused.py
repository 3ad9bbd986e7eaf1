"""The fused kernels on torch tensors: tilec.softmax & co. on CUDA tensors against torch's
own ops in float64, and the tilec.torch custom operators (schemas and fake kernels through
torch.library.opcheck, torch.compile(fullgraph=True) against eager, the residual that
add_rms_norm updates in place), plus CuPy arrays. Where torch or a CUDA device is missing the
tests skip, saying so; scripts/gpu-torch runs this file on the GPU machine."""
import pytest

try:
    import torch
except ImportError:
    torch = None

HAVE_TORCH = torch is not None and hasattr(getattr(torch, "library", None), "custom_op")
CUDA = HAVE_TORCH and torch.cuda.is_available()
pytestmark = pytest.mark.skipif(
    not CUDA, reason="%s (scripts/gpu-torch runs this file on the GPU machine)" % (
        "no CUDA device through torch here" if HAVE_TORCH else "torch 2.4 or newer is not importable here"))

if HAVE_TORCH:
    import torch.nn.functional as F
    import tilec.torch as tt
import tilec  # noqa: E402

TOL = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10, "float32": 2.0 ** -18}


def close(got, want, scale):
    """got (a tensor of some dtype) within two roundings of its dtype (and f32 accumulation)
    of want (float64), relative to the magnitudes in scale; NaN where want is NaN."""
    name = str(got.dtype).replace("torch.", "")
    sub = {"bfloat16": 2.0 ** -133, "float16": 2.0 ** -24, "float32": 2.0 ** -149}[name]
    tol = TOL[name] * scale + 2 * sub  # a subnormal result is rounded to the subnormals' spacing
    g = got.double()
    ok = (torch.isnan(g) & torch.isnan(want)) | (g == want) | ((g - want).abs() <= tol)
    assert bool(ok.all()), "got %s want %s" % (g[~ok][:4].tolist(), want[~ok][:4].tolist())


DTYPES = ["bfloat16", "float32", "float16"]
SHAPES = [(4, 256), (3, 5, 1000), (7, 4096), (2, 40000), (9, 1)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_log_softmax(dtype, shape):
    x = (torch.randn(shape, device="cuda") * 3).to(getattr(torch, dtype))
    x64 = x.double()
    want = torch.softmax(x64, -1)
    close(tilec.softmax(x), want, want * (1 + x64.abs() + torch.logsumexp(x64, -1, keepdim=True).abs()))
    lw = torch.log_softmax(x64, -1)
    close(tilec.log_softmax(x), lw, x64.abs() + torch.logsumexp(x64, -1, keepdim=True).abs())
    close(tt.softmax(x), want, want * (1 + x64.abs() + torch.logsumexp(x64, -1, keepdim=True).abs()))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_norms(dtype, shape):
    dt = getattr(torch, dtype)
    x = torch.randn(shape, device="cuda").to(dt)
    w = torch.randn(shape[-1], device="cuda").to(dt)
    b = torch.randn(shape[-1], device="cuda").to(dt)
    x64, w64, b64 = x.double(), w.double(), b.double()
    rs = torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6)
    v = x64 * rs
    q = v.to(dt).double() if dt != torch.float32 else v  # torch's rounding before the weight
    close(tilec.rms_norm(x, (shape[-1],), w, eps=1e-6), q * w64, ((q.abs() + (v - q).abs()) * w64.abs()) * 2)
    mu = x64.mean(-1, keepdim=True)
    r2 = torch.rsqrt(((x64 - mu) ** 2).mean(-1, keepdim=True) + 1e-5)
    want = (x64 - mu) * r2 * w64 + b64
    close(tt.layer_norm(x, (shape[-1],), w, b, 1e-5), want, (x64.abs() + mu.abs()) * r2 * w64.abs() + b64.abs())
    ref = F.layer_norm(x.float(), (shape[-1],), w.float(), b.float(), 1e-5)  # torch's own, as a sanity check
    close(tilec.layer_norm(x, shape[-1], w, b), ref.double(), ref.double().abs() + 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_rms_norm_updates_the_residual(dtype):
    dt = getattr(torch, dtype)
    x = torch.randn(5, 3000, device="cuda").to(dt)
    r = torch.randn(5, 3000, device="cuda").to(dt)
    h_want = x + r  # torch rounds the sum to dt, as tilec does
    y, h = tt.add_rms_norm(x, r, None, 1e-6)
    assert h is r and torch.equal(r, h_want)
    h64 = h_want.double()
    v = h64 * torch.rsqrt(h64.pow(2).mean(-1, keepdim=True) + 1e-6)
    close(y, v, v.abs())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", [7, 32000, 128256])
def test_cross_entropy(dtype, vocab):
    dt = getattr(torch, dtype)
    x = (torch.randn(33, vocab, device="cuda") * 2).to(dt)
    t = torch.randint(0, vocab, (33,), device="cuda")
    t[::5] = -100
    x64 = x.double()
    want = F.cross_entropy(x64, t, reduction="none")
    lse = torch.logsumexp(x64, -1)
    close(tilec.cross_entropy(x, t, reduction="none"), want, lse.abs() + x64.abs().amax(-1))
    m = tt.cross_entropy(x, t)  # mean over the rows not ignored
    close(m, F.cross_entropy(x64, t), (lse.abs() + x64.abs().amax(-1)).mean() * 2)


def test_strided_rows():
    wide = torch.randn(16, 3000, device="cuda", dtype=torch.bfloat16)
    x = wide[:, 100:2148]  # rows 3000 apart
    want = torch.softmax(x.double(), -1)
    close(tilec.softmax(x), want, want * 20)


def test_unaligned_rows():
    """Dense rows that start 6 bytes past a 16-byte boundary (a view with a storage offset):
    the plans for such pointers load element by element, where a vector load would fault."""
    for cols in (1024, 1000):
        flat = torch.randn(9 * cols + 3, device="cuda", dtype=torch.bfloat16)
        x = flat[3:].view(9, cols)
        want = torch.softmax(x.double(), -1)
        close(tilec.softmax(x), want, want * 20)
        close(tilec.log_softmax(x), torch.log_softmax(x.double(), -1), x.double().abs() + 10)
        w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
        want = F.rms_norm(x.double(), (cols,), w.double(), 1e-6)
        close(tilec.rms_norm(x, (cols,), w, 1e-6), want, want.abs() + 1)


def test_opcheck_and_compile():
    x = torch.randn(8, 1024, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1024, device="cuda", dtype=torch.bfloat16)
    t = torch.randint(0, 1024, (8,), device="cuda")
    tests = ("test_schema", "test_faketensor")
    torch.library.opcheck(torch.ops.tilec.softmax.default, (x, None), test_utils=tests)
    torch.library.opcheck(torch.ops.tilec.rms_norm.default, (x, [1024], w, 1e-6), test_utils=tests)
    torch.library.opcheck(torch.ops.tilec.layer_norm.default, (x, [1024], w, None, 1e-5), test_utils=tests)
    torch.library.opcheck(torch.ops.tilec.cross_entropy.default, (x, t, -100, "none"), test_utils=tests)
    torch.library.opcheck(torch.ops.tilec.softmax.default, (x, None, True), test_utils=tests)
    torch.library.opcheck(torch.ops.tilec.cross_entropy.default, (x, t, -100, "none", True), test_utils=tests)

    def block(x, w, t):
        y = tt.rms_norm(x, (1024,), w, 1e-6)
        return (tt.softmax(y.float() * 2), tt.cross_entropy(y, t, -100, "none"), tt.log_softmax(y, approx=True),
                tt.cross_entropy(y, t, -100, "none", approx=True))

    eager = block(x, w, t)
    compiled = torch.compile(block, fullgraph=True)(x, w, t)
    for a, b in zip(eager, compiled):
        assert torch.equal(a, b)  # the same kernels: the same bits
    # approx=True reaches the kernel: the hardware exponential, within its accuracy
    y = tt.rms_norm(x, (1024,), w, 1e-6)
    want = torch.log_softmax(y.double(), -1)
    close(eager[2], want, want.abs() + 10)
    assert not torch.equal(tt.softmax(x * 8, approx=True), tt.softmax(x * 8))
    with pytest.raises(TypeError, match="approx must be True or False"):
        tt.softmax(x, approx=1)


def test_cupy():
    cupy = pytest.importorskip("cupy")
    x = cupy.random.standard_normal((6, 777)).astype(cupy.float32)
    y = tilec.softmax(x)
    assert isinstance(y, cupy.ndarray)
    want = torch.softmax(torch.as_tensor(x, device="cuda").double(), -1)
    close(torch.as_tensor(y, device="cuda"), want, want * 20)


def test_add_rms_norm_strided_residual():
    x = torch.randn(4, 3000, device="cuda")
    big = torch.randn(4, 6000, device="cuda")
    r = big[:, ::2]  # not dense: runs on a copy, and is updated in place all the same
    want = x + r
    y, h = tilec.add_rms_norm(x, r)
    assert h is r and torch.equal(r, want)
