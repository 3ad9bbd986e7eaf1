"""The fused kernels (softmax, log_softmax, rms_norm, layer_norm, add_rms_norm,
cross_entropy) against their formulas in float64 numpy, through `tilec fused` on the
simulator at warp 32 and 64 (TILEC_SIM_WARP_SIZE): random shapes with rows of length 1,
odd lengths, a long row that is read in place rather than staged, and data with +-0,
+-inf, NaN and subnormals.

    tilec fused --op OP --dtype f16|bf16|f32 --shape RxC --in X --out Y [--weight W ...] --backend sim

Tolerance: a result of dtype T whose terms' magnitudes sum to s may differ from the
float64 value by 2 roundings of T plus f32's accumulation and the kernel's exp / log
(2^-16 s for 16-bit results, 2^-19 s for f32), plus two steps of T's subnormals; NaN where the formula gives NaN, an
infinity where it gives that infinity. add_rms_norm runs with --check, which also holds the
residual it writes back to x + residual rounded to the dtype, exactly.
"""
import os

import numpy as np
import pytest

import numerics as nm
from conftest import ROUNDS, fail_on
from tiles import run_tilec

OPS = ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy")
DTYPES = ("f32", "bf16", "f16")
ULP = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -24}
ACC = {"bf16": 2.0 ** -16, "f16": 2.0 ** -16, "f32": 2.0 ** -19}


def rnd(dt, v):
    return nm.quantize(nm.DTYPES[dt], v)[0]


def data(rng, dt, shape, specials):
    """Normal values of a random scale; with specials, every other row (the last axis's
    rows) gets NaN, +-inf, +-0 and subnormals in one element in 8, so the rows without
    keep finite results to compare."""
    v = (rng.standard_normal(int(np.prod(shape))) * 10.0 ** rng.uniform(-1, 1)).reshape(-1, shape[-1])
    if specials:
        sub = float(nm.DTYPES[dt].fmt.min_sub)
        for r in range(0, v.shape[0], 2):
            pick = rng.random(v.shape[1]) < 0.125
            v[r, pick] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, sub, -3 * sub], size=int(pick.sum()))
    return rnd(dt, v.ravel()).reshape(shape)


def oracle(op, x, w, b, res, tg, eps, ignore, dt):
    """(want, scale, extra): the formulas of include/tilec.h in float64."""
    with np.errstate(all="ignore"):
        if op == "add_rms_norm":
            x = rnd(dt, x + res)
        extra = {"residual": x} if op == "add_rms_norm" else {}
        if op in ("softmax", "log_softmax", "cross_entropy"):
            m = np.max(x, axis=-1, keepdims=True)
            fin = np.isfinite(m)
            s = np.sum(np.exp(x - np.where(fin, m, 0)), axis=-1, keepdims=True)
            lse = np.where(np.isnan(x).any(axis=-1, keepdims=True), np.nan, np.where(fin, m + np.log(s), m))
            lse = np.where(lse == np.inf, np.nan, lse)  # a row with +inf is NaN: inf - inf, as exp(x - max(x))
            if op == "softmax":
                want = np.exp(x - lse)
                return want, np.where(want == 0, 0.0, np.abs(want) * (1 + np.abs(x) + np.abs(lse))), extra
            # ln(s) of a sum s >= 1 kept in f32: s's relative rounding (within ACC) is an
            # absolute error of lse however small lse is (a row [0, -4.9]: lse 0.0078, its
            # error that of s ~ 1): ACC absolute, as a share of the scale compare multiplies
            ln_s = ACC[dt] / (2 * ULP[dt] + ACC[dt])
            if op == "log_softmax":
                return x - lse, np.abs(x) + np.abs(lse) + ln_s, extra
            rows = np.arange(x.shape[0])
            ok = (tg >= 0) & (tg < x.shape[1])
            picked = x[rows, np.where(ok, tg, 0)]
            want = np.where(tg == ignore, 0.0, np.where(ok, lse[:, 0] - picked, np.nan))
            scale = np.where(tg == ignore, 0.0, np.abs(lse[:, 0]) + np.abs(picked) + ln_s)
            return want, scale, extra
        eps32 = float(np.float32(eps))
        if op == "layer_norm":
            mu = np.mean(x, axis=-1, keepdims=True)
            rs = 1 / np.sqrt(np.mean((x - mu) ** 2, axis=-1, keepdims=True) + eps32)
            # the mean is a float sum: its rounding is relative to the magnitudes summed
            # (mean |x|), not to the mean, which cancellation may leave far smaller
            mag = np.mean(np.abs(x), axis=-1, keepdims=True)
            v, sc = (x - mu) * rs, (np.abs(x) + np.abs(mu) + mag) * rs
        else:
            rs = 1 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps32)
            v = x * rs
            sc = np.abs(v)
            if dt != "f32" and w is not None:  # torch's rounding before the weight
                # the kernel's f32 x * rs may round to the other side of a tie: one ulp of q
                # more (up to two roundings' worth of |q|), counted against |q| twice
                q = rnd(dt, v)
                sc, v = 2 * np.abs(q), q
        if w is not None:
            v, sc = v * w, sc * np.abs(w)
        if b is not None:
            v, sc = v + b, sc + np.abs(b)
        return v, sc, extra


def compare(problems, what, got, want, scale, dt, approx=False):
    # approx (math=approx): the exponentials within a few f32 ulp (inside ACC) and flushed below 2^-126
    tol = (2 * ULP[dt] + ACC[dt]) * scale + 2 * max(float(nm.DTYPES[dt].fmt.min_sub), 2.0 ** -127 if approx else 0)
    with np.errstate(invalid="ignore"):
        nan_ok = np.isnan(got) == np.isnan(want)
        inf_ok = np.where(np.isinf(want) | np.isinf(got), got == want, True)
        near = np.where(np.isnan(want) | np.isinf(want) | np.isinf(got), True, np.abs(got - want) <= tol)
    bad = ~(nan_ok & inf_ok & near)
    if bad.any():
        i = np.flatnonzero(bad.ravel())[0]
        problems.append("%s: %d of %d differ; first at %d: got %r, want %r (tolerance %.3g)" % (
            what, int(bad.sum()), bad.size, i, got.ravel()[i], want.ravel()[i], tol.ravel()[i]))


def run_case(tilec, tmp, problems, op, dt, rows, cols, warp, rng, specials, weight=True, bias=True, approx=False,
             env_extra=None):
    T = nm.DTYPES[dt]
    x = data(rng, dt, (rows, cols), specials)
    files = {"in": x}
    w = b = res = tg = None
    norm = op in ("rms_norm", "layer_norm", "add_rms_norm")
    if norm and weight:
        w = files["weight"] = data(rng, dt, (cols,), False)
    if op == "layer_norm" and bias:
        b = files["bias"] = data(rng, dt, (cols,), False)
    if op == "add_rms_norm":
        res = files["residual"] = data(rng, dt, (rows, cols), specials)
    args = ["fused", "--op", op, "--dtype", dt, "--shape", "%dx%d" % (rows, cols), "--backend", "sim"]
    for k, v in files.items():
        p = os.path.join(tmp, k + ".bin")
        with open(p, "wb") as f:
            f.write(nm.encode(T, v))
        args += ["--" + k, p]
    if op == "cross_entropy":
        tg = rng.integers(0, cols, size=rows).astype(np.int64)
        tg[rng.random(rows) < 0.2] = -100
        p = os.path.join(tmp, "target.bin")
        tg.tofile(p)
        args += ["--target", p]
    eps = 1e-5 if op == "layer_norm" else 1e-6
    out = os.path.join(tmp, "y.bin")
    args += ["--out", out]
    if op == "add_rms_norm":  # the residual written back is checked by the command, exactly
        args += ["--check"]
    if approx:
        args += ["--math", "approx"]
    env = dict(os.environ, TILEC_SIM_WARP_SIZE=str(warp), **(env_extra or {}))
    import subprocess
    p = subprocess.run([tilec] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=600)
    what = "%s %s %dx%d warp %d%s%s" % (op, dt, rows, cols, warp, " math=approx" if approx else "",
                                        "".join(" %s=%s" % kv for kv in (env_extra or {}).items()))
    if p.returncode != 0:
        problems.append("%s: tilec fused exited %d: %s%s" % (what, p.returncode, p.stdout.decode(errors="replace")[-1000:],
                                                             p.stderr.decode(errors="replace")[-2000:]))
        return
    with open(out, "rb") as f:
        got = nm.decode(T, f.read(), (rows,) if op == "cross_entropy" else (rows, cols))
    want, scale, extra = oracle(op, x, w, b, res, tg, eps, -100, dt)
    compare(problems, what, got, want, scale, dt, approx)


@pytest.mark.parametrize("warp", (32, 64))
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_fused_random(tilec, rng, tmp_path, repro, op, dt, warp):
    problems = []
    for i in range(2 * ROUNDS):  # finite data, then every other row with special values
        rows = int(rng.choice([1, 2, 3, 5, 9]))
        cols = int(rng.choice([1, 2, 7, 33, 255, 1000, 1025]))
        run_case(tilec, str(tmp_path), problems, op, dt, rows, cols, warp, rng, specials=i % 2 == 1)
    fail_on(problems, repro)


@pytest.mark.parametrize("op", OPS)
def test_fused_edges(tilec, rng, tmp_path, repro, op):
    """Rows of length 1, a row count no group divides (a second plan for the rows left),
    no weight or bias, one long row read in place (past the staging bound, of a prime
    length no chunk divides), and few long rows split among CTAs."""
    problems = []
    run_case(tilec, str(tmp_path), problems, op, "bf16", 7, 1, 32, rng, True)
    run_case(tilec, str(tmp_path), problems, op, "f32", 67, 40, 64, rng, True, weight=False, bias=False)
    run_case(tilec, str(tmp_path), problems, op, "f32", 1, 45007, 32, rng, False)  # prime: read in place
    run_case(tilec, str(tmp_path), problems, op, "bf16", 3, 24576, 64, rng, True)  # split among CTAs (3 chunks a row)
    fail_on(problems, repro)


@pytest.mark.parametrize("warp", (32, 64))
@pytest.mark.parametrize("op", ("softmax", "log_softmax", "cross_entropy"))
def test_fused_approx(tilec, rng, tmp_path, repro, op, warp):
    """math=approx (the hardware's exponential; the simulator's 2^x rounded to f32, flushed
    below 2^-126) against the same formulas: random shapes and dtypes with special values,
    a row of 4099 (softmax reads it twice in place, 16 elements a thread), and few long rows
    split among CTAs."""
    problems = []
    for i in range(2 * ROUNDS):
        dt = str(rng.choice(DTYPES))
        rows = int(rng.choice([1, 3, 9]))
        cols = int(rng.choice([1, 7, 255, 1025]))
        run_case(tilec, str(tmp_path), problems, op, dt, rows, cols, warp, rng, specials=i % 2 == 1, approx=True)
    run_case(tilec, str(tmp_path), problems, op, "bf16", 3, 4099, warp, rng, True, approx=True)
    run_case(tilec, str(tmp_path), problems, op, "f32", 2, 24576, warp, rng, False, approx=True)
    fail_on(problems, repro)


@pytest.mark.parametrize("warp", (32, 64))
@pytest.mark.parametrize("op", OPS)
def test_fused_rows_in_registers(tilec, rng, tmp_path, repro, op, warp):
    """Rows of a power of two from 256 to 4096 columns (a 16-bit softmax's to 8192, and a
    16-bit softmax's or log_softmax's of 16384 and 32768: a CTA's), which a warp of 32 holds
    in registers (a fragment of the CTA's rows; a warp's row to 2048 columns, a warpgroup's
    at 4096 and 8192, a CTA's of 256 or 512 threads beyond), with row counts that leave rows over for a CTA each, in every dtype, with special
    values, with and without a weight and bias, exact and math=approx. At warp 64 the same
    cases take the shared-memory plans; so do a 16-bit cross_entropy's, and an f32 one's at
    4096 (rows read in place measured faster there)."""
    import subprocess
    problems = []
    env = dict(os.environ, TILEC_SIM_WARP_SIZE=str(warp))
    for cols in (256, 4096):  # the plan these cases are for (at warp 64: not it)
        dt = "f32" if op == "cross_entropy" else "bf16"
        text = subprocess.run([tilec, "fused", "--op", op, "--dtype", dt, "--shape", "9x%d" % cols, "--backend", "sim",
                               "--explain"], stdout=subprocess.PIPE, env=env, timeout=600).stdout.decode()
        if ("rows held in registers" in text) != (warp == 32 and not (op == "cross_entropy" and cols == 4096)):
            problems.append("%s 9x%d warp %d: the plan is not the one expected:\n%s" % (op, cols, warp, text[:600]))
    if op == "softmax":  # a 16-bit softmax's rows of 8192 too: a warpgroup's, 64 elements a thread
        for dt in ("bf16", "f16", "f32"):
            text = subprocess.run([tilec, "fused", "--op", op, "--dtype", dt, "--shape", "3x8192", "--backend", "sim",
                                   "--explain"], stdout=subprocess.PIPE, env=env, timeout=600).stdout.decode()
            if ("rows held in registers" in text) != (warp == 32 and dt != "f32"):
                problems.append("%s %s 3x8192 warp %d: the plan is not the one expected:\n%s" % (op, dt, warp, text[:600]))
            run_case(tilec, str(tmp_path), problems, op, dt, int(rng.choice([1, 3])), 8192, warp, rng, specials=True,
                     approx=bool(rng.integers(0, 2)))
    if op in ("softmax", "log_softmax"):  # a 16-bit row of 16384 or 32768: a CTA's fragment, 64 elements a thread
        for cols, threads in ((16384, 256), (32768, 512)):
            for dt in ("bf16", "f32"):
                text = subprocess.run([tilec, "fused", "--op", op, "--dtype", dt, "--shape", "300x%d" % cols, "--backend",
                                       "sim", "--explain"], stdout=subprocess.PIPE, env=env, timeout=600).stdout.decode()
                want = "rows held in registers: grid 300 x %d threads" % threads
                if (want in text) != (warp == 32 and dt == "bf16"):
                    problems.append("%s %s 300x%d warp %d: the plan is not the one expected:\n%s" % (op, dt, cols, warp,
                                                                                                     text[:600]))
        if warp == 32:  # 4.3 M elements on the simulator: the plan once (the forced sizes of the cli suite, more)
            run_case(tilec, str(tmp_path), problems, op, str(rng.choice(("bf16", "f16"))), 264, 16384, warp, rng,
                     specials=True)
    for i in range(2 * ROUNDS):
        for cols in (256, 512, 1024, 2048, 4096):
            dt = str(rng.choice(DTYPES))
            rows = int(rng.choice([1, 5, 9, 19]))
            run_case(tilec, str(tmp_path), problems, op, dt, rows, cols, warp, rng, specials=i % 2 == 1,
                     weight=bool(rng.integers(0, 2)), bias=bool(rng.integers(0, 2)),
                     approx=op in ("softmax", "log_softmax", "cross_entropy") and bool(rng.integers(0, 2)))
    fail_on(problems, repro)



@pytest.mark.parametrize("op", ("softmax", "log_softmax"))
def test_fused_rows_over_a_cluster(tilec, rng, tmp_path, repro, op):
    """Rows held in registers over a thread-block cluster (TILEC_FUSED_CLUSTER=N): each CTA of
    a cluster of 2, 4 or 16 holds a part of the row, the parts' statistics meet through
    distributed shared memory; every dtype, special values, exact and math=approx, against
    numpy. Refused where it does not fit: the simulator at warp size 64 (no clusters), a
    norm, a part too short for a thread's 16 bytes."""
    import subprocess
    problems = []
    for n, cols, threads in ((2, 2048, None), (4, 65536, None), (16, 262144, None), (2, 8192, "1,128")):
        env = {"TILEC_FUSED_CLUSTER": str(n)}
        if threads:
            env["TILEC_FUSED_REGS"] = threads
        text = subprocess.run([tilec, "fused", "--op", op, "--dtype", "bf16", "--shape", "3x%d" % cols, "--backend", "sim",
                               "--explain"], stdout=subprocess.PIPE, env=dict(os.environ, **env), timeout=600).stdout.decode()
        want = "a row a thread-block cluster of %d CTAs, each holding %d of its columns in registers" % (n, cols // n)
        if want not in text or "cluster=(%d)" % n not in text:
            problems.append("%s 3x%d %s: the plan is not the one expected:\n%s" % (op, cols, env, text[:600]))
        for dt in ("bf16", "f16", "f32"):
            run_case(tilec, str(tmp_path), problems, op, dt, int(rng.choice([1, 2, 3])), cols, 32, rng,
                     specials=bool(rng.integers(0, 2)) or dt == "bf16", approx=bool(rng.integers(0, 2)), env_extra=env)
    for env, shape, warp, msg in (
            ({"TILEC_FUSED_CLUSTER": "4"}, "3x65536", 64, "at warp size 64 has no thread-block clusters"),
            ({"TILEC_FUSED_CLUSTER": "8", "TILEC_FUSED_REGS": "1,128"}, "3x2048", 32,
             "256 columns over 128 threads are 2 elements a thread"),
            ({"TILEC_FUSED_CLUSTER": "3"}, "3x2048", 32, "TILEC_FUSED_CLUSTER='3' is not 2, 4, 8 or 16"),
            ({"TILEC_FUSED_CLUSTER": "2", "TILEC_FUSED_REGS": "2,128"}, "4x2048", 32, "must give one row a CTA")):
        p = subprocess.run([tilec, "fused", "--op", op, "--dtype", "f32", "--shape", shape, "--backend", "sim"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600,
                           env=dict(os.environ, TILEC_SIM_WARP_SIZE=str(warp), **env))
        if p.returncode == 0 or msg not in p.stderr.decode():
            problems.append("%s %s %s warp %d: wanted a refusal saying '%s', got exit %d: %s" % (
                op, shape, env, warp, msg, p.returncode, p.stderr.decode()[-400:]))
    p = subprocess.run([tilec, "fused", "--op", "rms_norm", "--dtype", "f32", "--shape", "3x65536", "--backend", "sim"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600,
                       env=dict(os.environ, TILEC_FUSED_CLUSTER="4"))
    if p.returncode == 0 or "it holds softmax's and log_softmax's rows only" not in p.stderr.decode():
        problems.append("rms_norm with TILEC_FUSED_CLUSTER=4 was not refused: %s" % p.stderr.decode()[-400:])
    fail_on(problems, repro)


@pytest.mark.parametrize("dt", ("f32", "bf16"))
def test_layer_norm_wide_values(tilec, tmp_path, repro, dt):
    """Rows whose sum of squares passes f32's range (values of +-1e18, and +-1e18 around
    3e18) normalise to +-1 in every plan: held in registers (4 x 1024), staged (5 x 1000),
    read in place (1 x 45007), as the variance's sum cannot overflow in f64."""
    import subprocess
    T = nm.DTYPES[dt]
    problems = []
    for rows, cols in ((4, 1024), (5, 1000), (1, 45007)):
        x = np.tile(np.array([1e18, -1e18]), rows * cols // 2 + 1)[: rows * cols].reshape(rows, cols)
        x[1 % rows] += 3e18
        x = rnd(dt, x)
        p = os.path.join(str(tmp_path), "x.bin")
        with open(p, "wb") as f:
            f.write(nm.encode(T, x))
        out = os.path.join(str(tmp_path), "y.bin")
        r = subprocess.run([tilec, "fused", "--op", "layer_norm", "--dtype", dt, "--shape", "%dx%d" % (rows, cols),
                            "--backend", "sim", "--in", p, "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=600)
        if r.returncode:
            problems.append("%s %dx%d: tilec fused exited %d: %s" % (dt, rows, cols, r.returncode, r.stderr.decode()[-800:]))
            continue
        with open(out, "rb") as f:
            got = nm.decode(T, f.read(), (rows, cols))
        want, scale, extra = oracle("layer_norm", x, None, None, None, None, 1e-5, -100, dt)
        compare(problems, "layer_norm %s %dx%d of +-1e18" % (dt, rows, cols), got, want, scale, dt)
    fail_on(problems, repro)
