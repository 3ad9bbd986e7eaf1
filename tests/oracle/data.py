"""data.py — test inputs: never only zeros, never only [0, 1).

Every float generator returns float64 arrays whose values are exactly values of the dtype
(numerics.quantize), so the oracle and the kernel see the same numbers. Integers are
object arrays of Python ints within the type's range.
"""
import math

import numpy as np

import numerics as nm

FLOAT_FLAVOURS = ["normal", "integers", "specials", "zeros", "subnormal", "big", "nan_slices", "inf_slices",
                  "factors", "factor_specials", "offset", "finite_specials", "tiny"]
INT_FLAVOURS = ["small", "full", "extremes"]


def specials(dt):
    """The values at the edges of a float dtype: NaN, +-inf, +-0, subnormals, the
    smallest normal, the largest finite."""
    f = dt.fmt
    sub = float(f.min_sub)
    vals = [math.nan, math.inf, -math.inf, 0.0, -0.0, sub, -sub, 3 * sub,
            float(f.min_normal - f.min_sub), -float(f.min_normal - f.min_sub),
            float(f.min_normal), -float(f.min_normal), float(f.max), -float(f.max), 1.0, -1.0]
    return np.array(vals)


def subnormals(rng, dt, n):
    f = dt.fmt
    k = rng.integers(1, 2 ** (f.p - 1), size=n)
    return np.where(rng.random(n) < 0.5, -1.0, 1.0) * k * float(f.min_sub)


def float_values(rng, dt, shape, flavour):
    n = int(np.prod(shape, dtype=np.int64))
    f = dt.fmt
    if flavour == "normal" or flavour in ("nan_slices", "inf_slices"):
        top = 1 if dt.name == "f16" else 4
        v = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, top)
    elif flavour == "specials":
        v = rng.standard_normal(n) * 10.0 ** rng.uniform(-2, 2)
        pick = rng.random(n) < 0.15
        v[pick] = rng.choice(specials(dt), size=int(pick.sum()))
    elif flavour == "offset":
        # a small spread about a large mean: N(0, s^2) + 2^(p-6) s, so the spread keeps 5
        # bits of the dtype's below s while the mean needs all of them (f32: 2.6e5 +
        # N(0, 1); a variance from sum x^2 - (sum x)^2 / n loses every digit of f64 here)
        s = 10.0 ** rng.uniform(-3, 1 if dt.name == "f16" else 3)
        v = rng.standard_normal(n) * s + s * 2.0 ** (f.p - 6) * (1 if rng.random() < 0.5 else -1)
    elif flavour == "tiny":
        # about the root of the smallest normal: squares (and a variance) at the bottom
        # of the dtype's range, subnormal results; in f64, squares that go subnormal
        v = rng.standard_normal(n) * math.sqrt(float(f.min_normal)) * 10.0 ** rng.uniform(-1.5, 1.5)
    elif flavour == "finite_specials":
        # the edges of the dtype without NaN and the infinities (which make var NaN):
        # +-0, subnormals, the smallest normal, the largest finite, +-1, among normals
        v = rng.standard_normal(n) * 10.0 ** rng.uniform(-2, 2)
        edge = specials(dt)
        edge = edge[np.isfinite(edge)]
        pick = rng.random(n) < 0.15
        v[pick] = rng.choice(edge, size=int(pick.sum()))
    elif flavour == "integers":
        # small integers: every order sums them (and their squares) exactly, so a sum, a
        # mean or a norm has one right answer, and a wrong count or order shows
        v = rng.integers(-8, 9, size=n).astype(np.float64)
    elif flavour == "zeros":
        # +-0 with small numbers of both signs around them: what decides max/min of zeros
        choices = np.array([0.0, -0.0, 0.0, -0.0, -float(f.min_sub), float(f.min_sub), -1.5, 2.25])
        v = rng.choice(choices, size=n, p=[0.3, 0.3, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05])
    elif flavour == "subnormal":
        v = subnormals(rng, dt, n)
        pick = rng.random(n) < 0.1
        v[pick] = rng.choice([0.0, -0.0, float(f.min_normal), -float(f.min_normal)], size=int(pick.sum()))
    elif flavour == "big":
        # near the largest finite, both signs, so sums can overflow in the accumulation type
        big = float(f.max)
        v = rng.uniform(0.25, 1.0, n) * big * np.where(rng.random(n) < 0.6, 1.0, -1.0)
        pick = rng.random(n) < 0.2
        v[pick] = rng.standard_normal(int(pick.sum()))
    elif flavour in ("factors", "factor_specials"):
        # what a product can take: +-(1 + u), |u| small enough that no order of the
        # factors leaves the normal range yet every step rounds, with a few exact 2s and
        # 0.5s; factor_specials plants the edge values (NaN, infinities, zeros,
        # subnormals, the largest finite) among them
        u = rng.uniform(-1, 1, n) * 2.0 ** -6 * min(1.0, 256.0 / max(n, 1))
        v = np.where(rng.random(n) < 0.5, -1.0, 1.0) * (1 + u)
        v *= rng.choice([1.0, 2.0, 0.5], size=n, p=[0.96, 0.02, 0.02])
        if flavour == "factor_specials":
            pick = rng.random(n) < 0.1
            v[pick] = rng.choice(specials(dt), size=int(pick.sum()))
    else:
        raise ValueError(flavour)
    return nm.quantize(dt, v)[0].reshape(shape)


def shape_slices(a, axes):
    """A view of a as (outputs, elements per output) for axes, with a function writing such
    an array back; used to plant NaN / inf patterns slice by slice."""
    axes = sorted(set(x % a.ndim for x in axes))
    kept = [d for d in range(a.ndim) if d not in axes]
    perm = kept + axes
    t = np.transpose(a, perm)
    tshape = t.shape
    flat = t.reshape(int(np.prod([a.shape[d] for d in kept], dtype=np.int64)), -1).copy()

    def back(fl):
        return np.transpose(fl.reshape(tshape), np.argsort(perm))

    return flat, back


def plant_slices(rng, dt, a, axes, flavour):
    """nan_slices: some slices all NaN, some with a NaN at the start, middle or end;
    inf_slices: some slices only -inf, only +inf, or both infinities."""
    flat, back = shape_slices(a.copy(), axes)
    for r in range(flat.shape[0]):
        x = rng.random()
        m = flat.shape[1]
        if flavour == "nan_slices":
            if x < 0.35 or r == 0:  # the first slice is all NaN, always
                flat[r, :] = math.nan
            elif x < 0.7:
                flat[r, rng.choice([0, m // 2, m - 1])] = math.nan
                if rng.random() < 0.5:
                    flat[r, rng.integers(0, m)] = math.nan
        else:
            if x < 0.25:
                flat[r, :] = -math.inf
            elif x < 0.5:
                flat[r, :] = math.inf
            elif x < 0.75:
                flat[r, rng.integers(0, m)] = -math.inf
                flat[r, rng.integers(0, m)] = math.inf
    return back(flat)


def values(rng, dt, shape, flavour, axes=None):
    """Values of dt in shape; flavours nan_slices / inf_slices plant their pattern per
    slice of axes."""
    if not dt.is_float:
        return int_values(rng, dt, shape, flavour)
    v = float_values(rng, dt, shape, flavour)
    if flavour in ("nan_slices", "inf_slices"):
        v = plant_slices(rng, dt, v, axes if axes is not None else tuple(range(len(shape))), flavour)
    return v


def int_values(rng, dt, shape, flavour):
    n = int(np.prod(shape, dtype=np.int64))
    lo, hi = dt.lo, dt.hi
    if flavour == "small":  # [-100, 100], u32 [0, 200]
        v = [int(x) for x in rng.integers(-100 if dt.signed else 0, 101 if dt.signed else 201, size=n)]
    elif flavour == "full":
        v = [int(x) for x in rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64 if dt.signed else np.uint64)]
    elif flavour == "extremes":
        edge = [lo, hi, lo + 1, hi - 1, 0, 1, hi // 2 + 1] + ([-1] if dt.signed else [])
        full = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64 if dt.signed else np.uint64)
        pick = rng.random(n) < 0.5
        v = [int(rng.choice(edge)) if p else int(x) for p, x in zip(pick, full)]
    else:
        raise ValueError(flavour)
    return np.array(v, dtype=object).reshape(shape)


# var and std: data with negatives, +-0, subnormals, huge and tiny values (variances at
# the bottom of the range), a large mean with a small spread (offset); and the flavours
# with NaN and infinities, every slice holding one of which is NaN
VAR_FINITE = ["normal", "offset", "finite_specials", "subnormal", "big", "tiny", "zeros", "integers"]
VAR_NONFINITE = ["inf_slices", "nan_slices", "specials"]


def flavours_for(dt, op, nan):
    """The flavours worth running for an op: every op sees specials; max/min with
    nan=ignore see all-NaN slices; sums see big values (overflow); products see factors
    near 1 (elsewhere long products leave the range, where the oracle accepts anything)."""
    if not dt.is_float:
        return INT_FLAVOURS
    if op in ("sum", "sumsq", "norm2", "mean"):
        return ["normal", "integers", "specials", "subnormal", "big", "zeros", "inf_slices", "normal"]
    if op == "logsumexp":  # magnitudes to 10^4 (normal), near the largest finite (big): its stability
        return ["normal", "specials", "big", "subnormal", "zeros", "inf_slices", "nan_slices", "integers"]
    if op in ("var", "std"):  # the finite ones first (VAR_FINITE); a NaN or an infinity makes the slice NaN
        return VAR_FINITE + VAR_NONFINITE
    if op == "prod":
        return ["factors", "factors", "factor_specials", "zeros", "inf_slices", "nan_slices", "big", "normal"]
    if nan == "ignore":
        return ["nan_slices", "specials", "nan_slices", "zeros", "normal", "nan_slices", "inf_slices", "subnormal", "big"]
    return ["normal", "specials", "zeros", "subnormal", "big", "inf_slices", "nan_slices"]
