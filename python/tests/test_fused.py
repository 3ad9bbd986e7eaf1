"""tilec.softmax, log_softmax, rms_norm, layer_norm, add_rms_norm and cross_entropy on numpy
arrays (the simulator), against their formulas in float64 numpy: leading shapes of any rank,
strided rows (a slice of a wider array), rows of length 1, float32 and float16, the
statistics they return, torch's argument names, and every bad argument refused before
anything runs (nothing written)."""
import numpy as np
import pytest

import tilec

RTOL = {np.float32: 2.0 ** -19, np.float16: 2.0 ** -9}


def close(got, want, scale, dt):
    tol = RTOL[dt] * scale + 2.0 ** -24 * (dt == np.float16)
    got = np.asarray(got, dtype=np.float64)
    ok = (np.isnan(got) & np.isnan(want)) | (got == want) | (np.abs(got - want) <= tol)
    assert ok.all(), "got %r want %r" % (got[~ok][:4], want[~ok][:4])


def lse(x):
    m = np.max(x, axis=-1, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("shape", [(5,), (3, 7), (2, 3, 33), (4, 1), (1, 1000)])
def test_softmax_family(dt, shape):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3).astype(dt)
    x64 = x.astype(np.float64)
    l = lse(x64)
    y = tilec.softmax(x)
    assert y.dtype == dt and y.shape == x.shape
    close(y, np.exp(x64 - l), np.exp(x64 - l) * (1 + np.abs(x64) + np.abs(l)), dt)
    y = tilec.log_softmax(x, dim=-1)
    close(y, x64 - l, np.abs(x64) + np.abs(l), dt)
    y32 = tilec.softmax(x, dtype=np.float32)
    assert y32.dtype == np.float32


def test_strided_rows_and_out():
    rng = np.random.default_rng(7)
    wide = rng.standard_normal((6, 50)).astype(np.float32)
    x = wide[:, 3:40]  # rows 50 apart
    x64 = x.astype(np.float64)
    out = np.full(x.shape, 7.0, dtype=np.float32)
    r = tilec.softmax(x, out=out)
    assert r is out
    close(out, np.exp(x64 - lse(x64)), np.exp(x64 - lse(x64)) * 10, np.float32)
    t = wide.T[:, :4]  # a transposed slice: not rows, copied dense first
    close(tilec.log_softmax(t), t.astype(np.float64) - lse(t.astype(np.float64)), 100, np.float32)


def test_rows_in_registers_same_bits_whatever_the_rows():
    """A row held in registers gets the same bits whatever the number of rows: in a CTA of 4
    rows (a warp each), as a row left over after the last full CTA (a warp a CTA), alone, and
    as a warpgroup's row (4096 columns); every op, f16 and f32. The expected bits are the
    one-row calls', which share no plan with the 4-row CTAs."""
    rng = np.random.default_rng(11)
    for dt in (np.float16, np.float32):
        for cols in (256, 512, 1024, 2048, 4096):
            x = (rng.standard_normal((9, cols)) * 3).astype(dt)
            x[1, 5], x[6, 0] = np.inf, -np.inf  # specials in a full CTA's row and a left-over one
            w = (rng.standard_normal(cols) * 0.5 + 1).astype(dt)
            b = rng.standard_normal(cols).astype(dt)
            r = rng.standard_normal((9, cols)).astype(dt)
            t = rng.integers(0, cols, size=9).astype(np.int64)
            ops = {
                "softmax": lambda v, i: tilec.softmax(v),
                "log_softmax": lambda v, i: tilec.log_softmax(v),
                "rms_norm": lambda v, i: tilec.rms_norm(v, (cols,), w),
                "layer_norm": lambda v, i: tilec.layer_norm(v, (cols,), w, b),
                "add_rms_norm": lambda v, i: np.concatenate(tilec.add_rms_norm(v, r[i].copy(), w), axis=-1),
                "cross_entropy": lambda v, i: tilec.cross_entropy(v, t[i], reduction="none"),
            }
            for name, f in ops.items():
                whole = f(x, slice(0, 9))
                for i in range(9):
                    one = f(x[i:i + 1], slice(i, i + 1))
                    assert whole[i].tobytes() == one[0].tobytes(), (name, dt, cols, i)


def test_rows_in_registers_strided_and_out_dtype():
    """Rows of 256, 2048 and 4096 columns are held in registers (a warp's, a warp's, a
    warpgroup's fragment); strided rows, rows left over by the last full CTA, and results in
    another dtype, against numpy."""
    rng = np.random.default_rng(5)
    for cols in (256, 2048, 4096):
        wide = (rng.standard_normal((7, cols + 40)) * 4).astype(np.float16)
        x = wide[:, 8:8 + cols]  # rows cols + 40 apart
        x64 = x.astype(np.float64)
        l = lse(x64)
        assert "rows held in registers" in tilec.fused_explain("softmax", "f16", 7, cols, row_stride=cols + 40, backend="sim")
        close(tilec.softmax(x), np.exp(x64 - l), np.exp(x64 - l) * (1 + np.abs(x64) + np.abs(l)), np.float16)
        y = tilec.log_softmax(x, dtype=np.float32)
        assert y.dtype == np.float32
        close(y, x64 - l, np.abs(x64) + np.abs(l), np.float32)
        t = rng.integers(0, cols, size=7).astype(np.int64)
        t[3] = -100
        loss = tilec.cross_entropy(x, t, reduction="none")
        want = np.where(t == -100, 0, l[:, 0] - x64[np.arange(7), np.where(t < 0, 0, t)])
        close(loss, want, np.abs(l[:, 0]) + 10, np.float16)


@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_norms(dt):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 65)).astype(dt)
    w = rng.standard_normal(65).astype(dt)
    b = rng.standard_normal(65).astype(dt)
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    eps = 1e-5
    rs = 1 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + np.float32(eps))
    y, rstd = tilec.rms_norm(x, (65,), w, eps=eps, return_rstd=True)
    v = x64 * rs
    if dt == np.float16:  # torch's rounding of the normalised row before the weight
        q = v.astype(np.float16).astype(np.float64)
        close(y, q * w64, (np.abs(q) + np.abs(v - q)) * np.abs(w64) * 4, dt)
    else:
        close(y, v * w64, np.abs(v * w64), dt)
    close(rstd, rs[..., 0], rs[..., 0], np.float32)
    mu = np.mean(x64, axis=-1, keepdims=True)
    r2 = 1 / np.sqrt(np.mean((x64 - mu) ** 2, axis=-1, keepdims=True) + np.float32(eps))
    y, mean, rstd = tilec.layer_norm(x, 65, w, b, eps, return_stats=True)
    close(y, (x64 - mu) * r2 * w64 + b64, (np.abs(x64) + np.abs(mu)) * r2 * np.abs(w64) + np.abs(b64), dt)
    close(mean, mu[..., 0], np.abs(mu[..., 0]) + 1e-3, np.float32)
    close(rstd, r2[..., 0], r2[..., 0], np.float32)
    assert tilec.layer_norm(x, [65]).dtype == dt  # no weight, no bias


def test_add_rms_norm():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((7, 40)).astype(np.float32)
    r = rng.standard_normal((7, 40)).astype(np.float32)
    r_before = r.copy()
    y, h = tilec.add_rms_norm(x, r, eps=1e-6)
    want_h = (x + r_before).astype(np.float32)
    assert np.array_equal(h, want_h)  # x + residual rounded once, exactly
    h64 = want_h.astype(np.float64)
    rs = 1 / np.sqrt(np.mean(h64 * h64, axis=-1, keepdims=True) + np.float32(1e-6))
    close(y, h64 * rs, np.abs(h64 * rs), np.float32)


def test_cross_entropy():
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((9, 31)) * 4).astype(np.float32)
    t = rng.integers(0, 31, size=9).astype(np.int64)
    t[[2, 5]] = -100
    x64 = x.astype(np.float64)
    l = lse(x64)[:, 0]
    picked = x64[np.arange(9), np.where(t >= 0, t, 0)]
    want = np.where(t == -100, 0.0, l - picked)
    loss, lse_out = tilec.cross_entropy(x, t, reduction="none", return_lse=True)
    close(loss, want, np.abs(l) + np.abs(picked), np.float32)
    close(lse_out, l, np.abs(l), np.float32)
    keep = t != -100
    close(tilec.cross_entropy(x, t), want[keep].mean(), np.abs(want).sum(), np.float32)
    close(tilec.cross_entropy(x, t, reduction="sum"), want.sum(), np.abs(want).sum(), np.float32)
    bad = t.copy()
    bad[0] = 31  # out of range, not ignored: NaN (torch asserts on the device)
    assert np.isnan(tilec.cross_entropy(x, bad, reduction="none")[0])


def test_specials():
    x = np.array([[0.0, -0.0, 1.0], [np.nan, 1.0, 2.0], [np.inf, 1.0, 2.0], [-np.inf, -np.inf, -np.inf],
                  [-np.inf, 0.0, 1.0], [1e-45, -1e-45, 0.0]], dtype=np.float32)
    y = tilec.softmax(x)
    assert np.isnan(y[1]).all()                       # a NaN in the row
    assert np.isnan(y[2]).all()                       # +inf in the row: inf - inf, as torch
    assert np.isnan(y[3]).all()                       # only -inf: 0 / 0
    assert y[4, 0] == 0 and np.isfinite(y[4, 1:]).all()
    close(y[5], np.full(3, 1 / 3), np.full(3, 1.0), np.float32)
    assert tilec.softmax(np.ones((4, 1), dtype=np.float32)).tolist() == [[1.0]] * 4


@pytest.mark.parametrize("call, err", [
    (lambda x: tilec.softmax(x, dim=0), ValueError),
    (lambda x: tilec.softmax(x.astype(np.float64)), TypeError),
    (lambda x: tilec.softmax(x.astype(np.int32)), TypeError),
    (lambda x: tilec.softmax(x, dtype=np.int32), ValueError),
    (lambda x: tilec.rms_norm(x, (4,)), ValueError),
    (lambda x: tilec.rms_norm(x, (8,), eps=0.0), ValueError),
    (lambda x: tilec.rms_norm(x, (8,), np.ones(7, np.float32)), ValueError),
    (lambda x: tilec.rms_norm(x, (8,), np.ones(8, np.float16)), TypeError),
    (lambda x: tilec.layer_norm(x, (8,), eps=float("nan")), ValueError),
    (lambda x: tilec.add_rms_norm(x, np.ones((3, 7), np.float32)), ValueError),
    (lambda x: tilec.cross_entropy(x, np.zeros(3, np.int32)), TypeError),
    (lambda x: tilec.cross_entropy(x, np.zeros(4, np.int64)), ValueError),
    (lambda x: tilec.cross_entropy(x, np.zeros(3, np.int64), reduction="avg"), ValueError),
    (lambda x: tilec.softmax(x, out=np.zeros((3, 7), np.float32)), ValueError),
    (lambda x: tilec.fused_explain("sofmax", "f32", 3, 8), ValueError),
    (lambda x: tilec.softmax(x, approx=1), TypeError),
    (lambda x: tilec.cross_entropy(x, np.zeros(3, np.int64), approx="yes"), TypeError),
])
def test_bad_arguments(call, err):
    x = np.ones((3, 8), dtype=np.float32)
    before = x.copy()
    with pytest.raises(err):
        call(x)
    assert np.array_equal(x, before)


def test_explain_shows_the_program():
    text = tilec.fused_explain("softmax", "bf16", 8, 250, backend="sim")
    assert "cta.max(M, Xs, axes=(-1))" in text and "cta.map(E, exp(min(Xs - M, 0)))" in text
    text = tilec.fused_explain("softmax", "bf16", 7, 256, backend="sim")  # 4 rows a warpgroup, then a warp a row
    assert "rows held in registers" in text and "warpgroup.map(Ef, exp(min(Xf - M, 0)))" in text
    assert "rows 4 to 6, 1 a CTA" in text and "warp.map(Ef, exp(min(Xf - M, 0)))" in text
    assert tilec.FUSED == ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy")


def test_approx():
    """approx=True reaches the kernel (its program says math=approx, and the simulator's
    flushed exponential shows in a subnormal result); the results stay within the formulas'
    tolerance."""
    text = tilec.fused_explain("softmax", "bf16", 8, 4100, backend="sim", approx=True)
    assert "math=approx" in text and "cta.logsumexp(L, X[cta_id], axes=(-1))" in text
    assert "math=approx" not in tilec.fused_explain("softmax", "bf16", 8, 4100, backend="sim")
    text = tilec.fused_explain("softmax", "bf16", 8, 4096, backend="sim", approx=True)
    assert "math=approx" in text and "warpgroup.map(Ef, exp(Xf - M))" in text
    # plans are kept per context: an exact plan of the same shape must not serve approx (nor
    # the other way), for the ops whose approx plan is otherwise the same
    for op in ("log_softmax", "cross_entropy"):
        assert "math=approx" not in tilec.fused_explain(op, "bf16", 8, 1024, backend="sim")
        assert "math=approx" in tilec.fused_explain(op, "bf16", 8, 1024, backend="sim", approx=True)
        assert "math=approx" not in tilec.fused_explain(op, "bf16", 8, 1024, backend="sim")
    # few long rows: both kernels of the split plan say it
    split = tilec.fused_explain("softmax", "f32", 2, 24576, backend="sim", approx=True)
    heads = [l for l in split.splitlines() if l.startswith("kernel tilec_") and l.endswith("{")]
    assert len(heads) == 2 and all(h.endswith("math=approx {") for h in heads), heads
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((5, 300)) * 3).astype(np.float32)
    x64 = x.astype(np.float64)
    l = lse(x64)
    close(tilec.softmax(x, approx=True), np.exp(x64 - l), np.exp(x64 - l) * (1 + np.abs(x64) + np.abs(l)), np.float32)
    close(tilec.log_softmax(x, approx=True), x64 - l, np.abs(x64) + np.abs(l), np.float32)
    t = np.array([0, 3, 299, 7, -100], dtype=np.int64)
    loss = tilec.cross_entropy(x, t, reduction="none", approx=True)
    want = np.where(t == -100, 0, l[:, 0] - x64[np.arange(5), np.where(t < 0, 0, t)])
    close(loss, want, np.abs(l[:, 0]) + 10, np.float32)
    # long f32 rows are staged (the row alone, exp(x - logsumexp(x)) from shared memory), a
    # 16-bit one's held in a CTA's registers: a strided row is never split among CTAs
    assert "rows staged in shared memory" in tilec.fused_explain("softmax", "f32", 300, 32768, backend="sim", approx=True)
    assert "rows held in registers: grid 300 x 512 threads" in tilec.fused_explain("softmax", "bf16", 300, 32768,
                                                                                 backend="sim", approx=True)
    wide = (rng.standard_normal((3, 32800)) * 4).astype(np.float32)
    x = wide[:, :32768]
    x64 = x.astype(np.float64)
    l = lse(x64)
    close(tilec.softmax(x, approx=True), np.exp(x64 - l), np.exp(x64 - l) * (1 + np.abs(x64) + np.abs(l)), np.float32)
    tiny = np.array([[0.0, -100.0]], dtype=np.float32)  # exp(-100) is subnormal in f32
    assert tilec.softmax(tiny)[0, 1] > 0 and tilec.softmax(tiny, approx=True)[0, 1] == 0


def test_empty_inputs():
    z = np.zeros((0, 4), dtype=np.float32)
    y, h = tilec.add_rms_norm(z, z.copy())  # no rows: both results empty, nothing runs
    assert y.shape == (0, 4) and h.shape == (0, 4)
    assert tilec.softmax(np.zeros((3, 0), np.float32)).shape == (3, 0)
    assert tilec.rms_norm(np.zeros((3, 0), np.float32), (0,)).shape == (3, 0)
    # rows of no values have no statistic and no loss: refused, never left unwritten
    with pytest.raises(ValueError, match="last axis is empty"):
        tilec.rms_norm(np.zeros((3, 0), np.float32), (0,), return_rstd=True)
    with pytest.raises(ValueError, match="last axis is empty"):
        tilec.cross_entropy(np.zeros((3, 0), np.float32), np.zeros(3, np.int64), reduction="none")


def test_eps_and_ignore_index_ranges():
    x = np.arange(1, 25, dtype=np.float32).reshape(3, 8)
    want = tilec.rms_norm(x, (8,), eps=1e-5)
    assert np.array_equal(tilec.rms_norm(x, (8,), eps=np.float32(1e-5)), want)  # a numpy scalar is a number
    for big in (1e39, 1e300):  # positive and finite, but past float32, in which it is added
        with pytest.raises(ValueError, match="fits float32"):
            tilec.layer_norm(x, (8,), eps=big)
        with pytest.raises(tilec.ArgumentError, match="eps 1e\\+[0-9]+ does not fit f32") as e:
            tilec.fused_explain("rms_norm", "f32", 3, 8, eps=big)  # the library's own check
        assert e.value.status == "TILEC_ERR_INVALID_ARG"  # not the generated program's error
    t = np.array([0, 1, 2], dtype=np.int64)
    with pytest.raises(ValueError, match="outside int64"):
        tilec.cross_entropy(x, t, ignore_index=2 ** 64, reduction="none")  # would wrap to 0


def test_more_rows_than_a_launch_takes():
    # 2^37 rows of one value: 2^31 CTAs of 64 rows, one past a grid's bound; refused as an
    # argument, not as an internal error in the generated program (explain allocates nothing)
    with pytest.raises(tilec.ArgumentError, match="more than a launch's 2\\^31 - 1; split the rows") as e:
        tilec.fused_explain("softmax", "f32", 2 ** 37, 1, backend="sim")
    assert e.value.status == "TILEC_ERR_INVALID_ARG"
    assert "grid 2147483647 x" in tilec.fused_explain("softmax", "f32", 2 ** 37 - 1, 1, backend="sim")


def test_explain_matches_the_docs():
    # docs/runtime.md shows the programs of softmax over 8 rows of 256 bf16 values (held in
    # registers) and of 250 (staged in shared memory)
    import os
    import re
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "runtime.md")
    if not os.path.exists(docs):  # scripts/wheel-check runs the suite in a tree without docs/
        pytest.skip("docs/runtime.md is not beside these tests (the source tree's suite checks it)")
    with open(docs, encoding="utf-8") as f:
        text = f.read()
    for cols, head in ((256, r"bf16\[2, 4, 256\]"), (250, r"bf16\[1, 8, 250\]")):
        block = re.search(r"```\n\s*(kernel tilec_softmax\(X: %s.*?)```" % head, text, re.S).group(1)
        shown = [line.strip() for line in block.strip().splitlines()]
        lines = [line.strip() for line in tilec.fused_explain("softmax", "bf16", 8, cols, backend="sim").splitlines()]
        at = lines.index(shown[0])
        assert lines[at:at + len(shown)] == shown


def test_strided_rows_at_warp_64():
    """The same strided rows on a simulator of 64-lane warps (TILEC_SIM_WARP_SIZE=64), in a
    fresh interpreter: numpy is the oracle."""
    from conftest import run_py
    out = run_py(
        "import numpy as np, tilec\n"
        "w = np.random.default_rng(3).standard_normal((5, 70)).astype(np.float32)\n"
        "x = w[:, 2:61]\n"
        "x64 = x.astype(np.float64); m = x64.max(-1, keepdims=True); e = np.exp(x64 - m)\n"
        "want = e / e.sum(-1, keepdims=True)\n"
        "got = tilec.softmax(x, backend='sim')\n"
        "v = x64 - x64.mean(-1, keepdims=True)\n"
        "ln = v / np.sqrt((v * v).mean(-1, keepdims=True) + np.float32(1e-5))\n"
        "print(np.abs(got - want).max() <= 1e-6 * want.max(), np.abs(tilec.layer_norm(x, 59, backend='sim') - ln).max() < 1e-5,\n"
        "      tilec.fused_explain('softmax', 'f32', 5, 59, row_stride=68, backend='sim').count('warp size 64') >= 1)\n",
        TILEC_SIM_WARP_SIZE="64")
    assert out.split() == ["True", "True", "True"], out


def test_values_the_format_decides_exactly():
    """Written by hand, not from a reference: a row of one value (softmax exactly 1,
    log_softmax exactly +0), zeros' signs through the norms, ignored rows' +0 loss."""
    one = np.array([[3.5], [-2.0], [0.0]], dtype=np.float32)
    assert tilec.softmax(one).tolist() == [[1.0]] * 3
    ls = tilec.log_softmax(one)
    assert (ls == 0).all() and not np.signbit(ls).any()
    z = np.array([[0.0, -0.0, 0.0, -0.0]], dtype=np.float32)
    y = tilec.rms_norm(z, (4,), eps=1e-6)  # 0 * rsqrt(eps): each zero keeps its sign
    assert (y == 0).all() and np.signbit(y).tolist() == [[False, True, False, True]]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    loss = tilec.cross_entropy(x, np.array([-100, 2, -100], dtype=np.int64), reduction="none")
    assert loss[0] == 0 and loss[2] == 0 and not np.signbit(loss[[0, 2]]).any()
    # the second row: logsumexp(4, 5, 6, 7) - 6, against exact float64
    want = np.log(np.exp(np.float64([4, 5, 6, 7]) - 7).sum()) + 7 - 6
    assert abs(float(loss[1]) - want) <= 4 * np.finfo(np.float32).eps * want
