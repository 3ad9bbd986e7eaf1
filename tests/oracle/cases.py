"""cases.py — random reduction cases for every kind of scope, shaped so that the variant
each one asks for can apply (odd lengths, primes and 1 among the extents)."""
from math import prod

import numpy as np

import data
import numerics as nm
from tiles import VARIANTS, Case

EXTENTS = [1, 2, 3, 5, 7, 8, 11, 13, 16, 17, 31, 32, 33, 47, 61, 64, 65, 97, 127, 128, 129, 251, 257, 509, 1021]

# (dtype, op, nan): every op of every dtype it is defined on, nan=ignore where the format
# allows it (max and min of floats)
OPS = ("sum", "max", "min", "prod", "sumsq", "norm2", "mean")
COMBOS = [(d, op, "propagate") for d in nm.DTYPES for op in OPS if nm.DTYPES[d].is_float or op not in nm.FLOAT_ONLY] + \
         [(d, op, "ignore") for d in nm.FLOATS for op in ("max", "min")]


def extent(rng, cap, lo=1):
    pool = [e for e in EXTENTS if lo <= e <= cap]
    return int(rng.choice(pool)) if pool else max(1, min(cap, lo))


def shape(rng, max_elems, rank=None, max_rank=3):
    rank = rank or int(rng.integers(1, max_rank + 1))
    out = []
    left = max_elems
    for _ in range(rank):
        e = extent(rng, max(1, left))
        out.append(e)
        left = max(1, left // e)
    rng.shuffle(out)
    return tuple(out)


def axes_for(rng, shp):
    rank = len(shp)
    k = int(rng.integers(1, rank + 1))
    ax = sorted(rng.choice(rank, size=k, replace=False).tolist())
    if rng.random() < 0.3:
        ax = [a - rank for a in ax]  # negative axes count from the end
    if rng.random() < 0.3:
        rng.shuffle(ax)
    return tuple(int(a) for a in ax)


def threads_for(rng, kind, ws, variant):
    if kind == "warpgroup":
        return int(rng.choice([128, 256, 384]))
    if variant in ("cta_tree",) and kind in ("cta", "cta_grid"):
        return int(rng.choice([128, 192, 256]))  # at least two whole warps at either size
    if variant == "local" and kind in ("warp_localsrc", "warp_localdst"):
        return int(ws * rng.choice([1, 2, 3]))  # the butterfly needs whole warps
    if variant == "local_smem":
        return int(rng.choice([ws // 2 + 1, ws + 17, 2 * ws - 3, 48]))  # partial warps
    if kind in ("thread", "thread_local", "warp_localsrc", "warp_localdst"):
        return int(rng.choice([1, 7, 32, 33, 48, 64, 96, 100, 128]))
    return int(rng.choice([1, 7, 32, 33, 48, 64, 96, 128, 160, 256, 1024]))


def grid_shape(rng, variant, dt, threads):
    """Shapes (and axes) that the grid executors apply to (docs/dispatch.md): the innermost
    dim reduced for grid_rows, kept for grid_cols; long rows whose blocks span CTAs too."""
    if variant == "grid_rows" and rng.random() < 0.3:  # few long rows: blocks over CTAs
        return (int(rng.choice([1, 2, 3])), int(rng.integers(8200, 20000))), (-1,)
    if variant == "grid_cols" and rng.random() < 0.3:  # [R, I], many rows: partials over CTAs
        return (int(rng.integers(600, 4000)), extent(rng, 40, lo=2)), (0,)
    if variant in ("grid_rows", "grid_cols"):
        s = list(shape(rng, 6000, max_rank=4))
        s[-1] = max(s[-1], 2)
        ax = [a for a in axes_for(rng, tuple(s)) if a % len(s) != len(s) - 1]
        if variant == "grid_rows":
            ax.append(-1 if rng.random() < 0.5 else len(s) - 1)
        elif not ax:
            if len(s) == 1:
                s = [extent(rng, 300, lo=2)] + s
            ax = [0]
        return tuple(s), tuple(ax)
    s = shape(rng, 6000)
    return s, axes_for(rng, s)


def make_case(rng, cid, kind, ws, dt, op, nan, accum, variant, flavour=None):
    threads = threads_for(rng, kind, ws, variant)
    warps = -(-threads // ws)
    kw = {}
    if kind == "grid":
        if threads % ws or variant is None:
            threads = int(rng.choice([64, 128, 256]))
        shp, axes = grid_shape(rng, variant, dt, threads)
    else:
        budget = {"cta": 2048, "cta_view": 1024, "cta_grid": 1024, "warp": 1024 // warps or 1,
                  "warp_sel": 1024, "warpgroup": 1024 // max(1, threads // 128),
                  "thread": max(1, 256 // threads), "thread_local": 24, "warp_localsrc": 24,
                  "warp_localdst": 512 // warps or 1}[kind]
        budget = max(1, budget // (2 if dt.size == 8 else 1))
        if kind in ("thread_local", "warp_localsrc"):
            budget = min(budget, max(1, 1536 // threads))
        if variant == "cta_tree":  # few outputs of long rows: fewer than the warps, so it applies
            outs = int(rng.integers(1, min(3, max(1, threads // ws - 1)) + 1))
            shp = (outs, int(rng.integers(100, budget // 3 + 101)))
            axes = (-1,)
        else:
            shp = shape(rng, budget)
            axes = axes_for(rng, shp)
        if kind == "cta_grid":
            kw["grid"] = int(rng.choice([1, 2, 3, 5]))
        if kind == "warp_sel":
            kw["sel"] = int(rng.integers(0, warps))
        if kind == "cta_view":
            kw["view"] = view_for(rng, shp)
        if kind == "thread_local":
            kw["src_local"] = bool(rng.random() < 0.7)
            kw["dst_local"] = (not kw["src_local"]) or bool(rng.random() < 0.6)
    style = "int" if rng.random() < 0.3 else "tuple"
    c = Case(cid, kind, dt, op, nan, accum, variant, threads, ws, shp, axes, style, **kw)
    flavour = flavour or str(rng.choice(data.flavours_for(dt, op, nan)))
    c.flavour = flavour
    fill_data(rng, c, flavour)
    return c


VIEW_MAX_ELEMS = 8192  # a view's whole shared buffer, at most (f64: 64 KiB)


def view_for(rng, shp):
    """A region of a bigger, possibly padded, shared buffer: offset slices on every
    dimension (a:b, a:, :b, negative bounds) and now and then an integer index in front."""
    full, index, text = [], [], []
    lead = rng.random() < 0.3
    if lead:
        n = int(rng.integers(2, 4))
        i = int(rng.integers(0, n))
        full.append(n)
        index.append(i)
        text.append(str(i - n if rng.random() < 0.5 else i))
    pads = [(int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in shp]
    # padding a long row's size-1 neighbours multiplies it (a [1019, 1] region in a
    # [1023, 5] buffer): past VIEW_MAX_ELEMS the buffer is the region itself
    if prod(full) * prod(b + e + a for e, (b, a) in zip(shp, pads)) > VIEW_MAX_ELEMS:
        pads = [(0, 0) for _ in shp]
    for e, (before, after) in zip(shp, pads):
        n = before + e + after
        full.append(n)
        index.append(slice(before, before + e))
        a = str(before) if before or rng.random() < 0.5 else ""
        end = before + e
        b = str(end) if end < n or rng.random() < 0.5 else ""
        if b and rng.random() < 0.3 and end < n:
            b = str(end - n)
        text.append(a + ":" + b)
    strides = None
    if len(full) >= 2 and rng.random() < 0.5:  # pad rows against bank conflicts
        st = [1]
        for e in reversed(full[1:]):
            st.insert(0, st[0] * (e + (1 if len(st) == 1 else 0)))
        strides = st
    return {"full": tuple(full), "index": tuple(index), "text": "[" + ", ".join(text) + "]", "strides": strides}


def fill_data(rng, c, flavour):
    dt = c.dt
    src_shape = c.src_shape
    # the reduced axes of the full source, so nan/inf patterns land per output slice
    if c.kind == "cta_view":  # the region's axes on the full buffer (a leading index drops one)
        lead = len(c.view["full"]) - len(c.shape)
        ax = tuple(a % len(c.shape) + lead for a in c.axes)
    elif c.kind in ("cta", "warp_sel", "grid"):
        ax = c.axes
    elif c.kind == "warp_localsrc":
        ax = (0,) + tuple(a % len(c.shape) + 1 for a in c.axes)
    else:
        ax = tuple(a % len(c.shape) + 1 for a in c.axes)
    c.src = data.values(rng, dt, src_shape, flavour, ax)
    init_flavour = flavour if flavour not in ("nan_slices", "inf_slices") else "specials"
    c.init = data.values(rng, dt, c.out_shape, init_flavour, None)
    if flavour == "nan_slices":  # old NaNs too: skipped under nan=ignore, unless the slice is all NaN
        c.init = np.where(rng.random(c.init.shape) < 0.3, np.nan, c.init)
        c.init.reshape(-1)[0] = np.nan  # and the first output's: all NaN with its slice


def cases_for_kind(rng, kind, ws, rounds, combos=COMBOS, accums=(False, True), start=0, flavour=None):
    """Every (dtype, op, nan) x accum, rounds times, the kind's variants taken in turn;
    when a round has fewer combinations than the kind has variants (logsumexp and var
    take three dtypes and no accum), the combinations repeat until every variant had one,
    so each variant is forced at least once a round. The data flavours in turn too,
    unless one is given."""
    out = []
    vs = VARIANTS[kind]
    i = 0
    for r in range(rounds):
        pending = [(j, a, acc) for j, (dtn, op, nan) in enumerate(combos) for a, acc in enumerate(accums)
                if not (acc and op in nm.NO_ACCUM)]
        n = max(len(pending), len(vs)) if pending else 0
        for t in range(n):
            j, a, acc = pending[t % len(pending)]
            dtn, op, nan = combos[j]
            dt = nm.DTYPES[dtn]
            fl = data.flavours_for(dt, op, nan)
            v = vs[i % len(vs)]
            f = flavour or fl[(r * len(accums) + a + j * 3 + t // len(pending)) % len(fl)]
            out.append(make_case(rng, start + len(out), kind, ws, dt, op, nan, acc, v, f))
            i += 1
    return out
