"""Segmented reductions through `tilec reduce --offsets`, against numpy:

    tilec reduce --op OP --dtype D --shape RxN --offsets OFF.npy --in X.npy --out Y.npy
                 [--out2 Z.npy] --backend sim

Segment s of a row is its elements offsets[s] to offsets[s + 1] - 1; numpy reduces each on
its own, with no tilec code: exact for max, min, argmax, argmin, aminmax (the first index
of the best; the first NaN under nan=propagate) and integer sums (wrapping), within a
bound of the magnitudes for float sums. Random offsets with empty segments (of the ops
that have a value for one: sum 0, mean NaN), int64 and int32 offsets, f32, f64, i32 and
bf16, NaN and ±inf.
"""
import os

import numpy as np
import pytest

import numerics as nm
from conftest import ROUNDS, fail_on
from tiles import run_tilec

BF16 = type("dt", (), {"name": "bf16"})


def offsets(rng, n, nsegs, allow_empty):
    lens = rng.integers(0 if allow_empty else 1, 90, nsegs)
    off = np.concatenate([[0], np.cumsum(lens)])
    return off[off <= n] if off[-1] > n else off


def data(rng, dt, shape, specials):
    if dt == "i32":
        return rng.integers(-2 ** 31, 2 ** 31, shape).astype(np.int32)
    v = rng.standard_normal(shape) * 10
    if specials:
        flat = v.reshape(-1)
        for x in (np.nan, np.inf, -np.inf, -0.0):
            flat[rng.integers(0, flat.size, 3)] = x
    if dt == "bf16":
        return nm.quantize(BF16, v)[1]  # the bit patterns, <u2
    return v.astype(np.float32 if dt == "f32" else np.float64)


def values(dt, a):
    return nm.bf16_bits_to_f64(a) if dt == "bf16" else a.astype(np.float64) if dt != "i32" else a.astype(np.int64)


def want(op, seg, nan):
    """numpy's answer for one segment: a sum (int32's wrapped) or mean; for max and argmin
    (value, first index), -0 below +0, NaN by the policy."""
    if op == "sum":
        if seg.dtype.kind == "i":
            return (int(np.sum(seg, dtype=np.int64)) + 2 ** 31) % 2 ** 32 - 2 ** 31
        return np.sum(seg)
    if op == "mean":
        return np.mean(seg) if len(seg) else np.nan
    best, at = None, 0
    for i, v in enumerate(seg.tolist()):
        if v != v:  # NaN
            if nan == "propagate":
                return np.nan, i
            continue
        if best is None:
            best, at = v, i
            continue
        if op == "max":
            better = v > best or (v == 0 and best == 0 and not np.signbit(v) and np.signbit(best))
        else:
            better = v < best or (v == 0 and best == 0 and np.signbit(v) and not np.signbit(best))
        if better:
            best, at = v, i
    return (np.nan, 0) if best is None else (best, at)


@pytest.mark.parametrize("dt", ["f32", "f64", "i32", "bf16"])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "argmin"])
def test_segments(tilec, rng, repro, tmp_path, dt, op):
    if op == "mean" and dt == "i32":
        pytest.skip("mean takes floats")
    problems = []
    for rnd in range(ROUNDS):
        rows, n = 3, int(rng.integers(200, 700))
        off = offsets(rng, n, 12, op in ("sum", "mean"))
        i32 = bool(rng.integers(0, 2))
        specials = dt != "i32" and op != "sum" and bool(rng.integers(0, 2))
        nan = "ignore" if op in ("max", "argmin") and dt != "i32" and rng.integers(0, 2) else "propagate"
        x = data(rng, dt, (rows, n), specials)
        xp, op_, yp, zp = (os.path.join(tmp_path, f) for f in ("x.npy", "off.npy", "y.npy", "z.npy"))
        np.save(xp, x)
        np.save(op_, off.astype(np.int32 if i32 else np.int64))
        args = ["reduce", "--op", op, "--dtype", dt, "--shape", "%dx%d" % (rows, n), "--offsets", op_, "--in", xp,
                "--out", yp, "--backend", "sim", "--nan", nan] if dt != "i32" else \
            ["reduce", "--op", op, "--dtype", dt, "--shape", "%dx%d" % (rows, n), "--offsets", op_, "--in", xp,
             "--out", yp, "--backend", "sim"]
        if op == "argmin":
            args += ["--out2", zp]
        rc, out, err = run_tilec(tilec, args)
        if rc and "takes values of at most 32 bits" in err:  # 64-bit arg-reductions: where tilec_op_supports has them
            pytest.skip(err.strip())
        if rc:
            problems.append("round %d: exit %d: %s" % (rnd, rc, err.strip()))
            continue
        y = values(dt, np.load(yp))
        z = np.load(zp) if op == "argmin" else None
        xv = values(dt, x)
        for r in range(rows):
            for s in range(len(off) - 1):
                seg = xv[r, off[s]:off[s + 1]]
                w = want(op, seg, nan)
                g = y[r, s]
                if op in ("sum", "mean"):
                    if dt == "i32":
                        ok = int(g) == w
                    else:
                        mag = np.sum(np.abs(seg)) + 1
                        tol = (1e-2 if dt == "bf16" else 1e-5) * mag / (len(seg) if op == "mean" and len(seg) else 1)
                        ok = (np.isnan(w) and np.isnan(g)) or (np.isinf(w) and g == w) or abs(g - w) <= tol
                        if len(seg) == 0 and op == "sum":
                            ok = g == 0 and not np.signbit(g)
                else:
                    wv, wi = w
                    ok = (np.isnan(wv) and np.isnan(g)) or (g == wv and np.signbit(g) == np.signbit(wv))
                    if op == "argmin":
                        ok = ok and int(z[r, s]) == wi
                if not ok:
                    problems.append("round %d row %d segment %d %s: got %r, want %r (offsets %s)" % (
                        rnd, r, s, seg.tolist()[:8], g if z is None else (g, z[r, s]), w, off.tolist()))
    fail_on(problems, repro)
