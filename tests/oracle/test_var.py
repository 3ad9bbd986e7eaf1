"""var and std against numerics.VarSpec, the exact variance of the inputs' values with
the contract's rigorous bound (var = M2 / max(n - correction, 0), std = sqrt(var); the
state two f64 sums about the slice's first element): through `tilec reduce` (random
shapes and axes, every float dtype, corrections 0, 1, 2, the default and one at or past
the slice's count, strided views, an empty axis, a wider output, literal vectors written
from the contract's rules) and in tile programs of every scope kind, each variant forced
in turn, at both warp sizes; and what var and std refuse.

    tilec reduce --op var|std --dtype f16|bf16|f32|f64 --correction N --shape AxB..
                 --axes a,b --backend sim --in FILE --out FILE
    cta.var(D, S, axes=(1), correction=1)        (std the same)

A NaN result must be the dtype's default quiet NaN (docs/runtime.md's bits): the
`tilec reduce` tests compare its bits.
"""
import math
import os
import statistics

import numpy as np
import pytest

import cases
import data
import numerics as nm
from conftest import ROUNDS, fail_on
from test_reduce import Reduce
from tiles import VARIANTS, Case, norm_axes, not_applied, prod, run_cases, run_tilec

OPS = ("var", "std")
DTYPES = ("f32", "f64", "bf16", "f16")
QNAN = {"f32": 0x7FC00000, "f64": 0x7FF8000000000000, "f16": 0x7E00, "bf16": 0x7FC0}
WIDE = {"f16": "f32", "bf16": "f32", "f32": "f64"}
NAN, INF = math.nan, math.inf
F1E30, F3E38 = 1.0000000150474662e+30, 3.0000000054977558e+38  # f32's nearest to 1e30 and 3e38


def count(shape, axes):
    """The elements of one reduced slice."""
    return prod(shape[a] for a in norm_axes(axes, len(shape)))


def correction_for(rng, i, n):
    """In turn: the default (None: no --correction, so 1), 0, 1, 2, and one at or past the
    slice's count n (n - c <= 0: +inf, or NaN for a constant slice)."""
    k = i % 5
    return (None, 0, 1, 2, None)[k] if k < 4 else n + int(rng.integers(0, 3))


def run_var(r, dt, op, shape, axes, x, correction, strides=None, out_dt=None):
    """One `tilec reduce` of x (the tensor, or with strides the memory the view reaches);
    returns (rc, stderr, decoded output or None, raw output bytes or None, command)."""
    extra = []
    if correction is not None:
        extra += ["--correction", str(correction)]
    if strides is not None:
        extra += ["--strides", ",".join(str(s) for s in strides)]
    if out_dt is not None:
        extra += ["--out-dtype", out_dt.name]
    rc, so, se, got, cmd = r.run(dt, op, "propagate", shape, axes, x, extra=extra, out_dt=out_dt)
    out = os.path.join(r.dir, "r%d.out" % r.n)
    raw = open(out, "rb").read() if got is not None else None
    return rc, se, got, raw, cmd


def nan_bits(dt, raw):
    """The flat positions of raw (an output in dt) holding a NaN other than dt's default
    quiet one."""
    bits = np.frombuffer(raw, dtype=dt.storage).astype(np.uint64)
    with np.errstate(invalid="ignore"):
        vals = nm.decode(dt, raw, (bits.size,))
    return [int(i) for i in np.flatnonzero(np.isnan(vals) & (bits != QNAN[dt.name]))]


def check_var(r, problems, dt, op, shape, axes, x, correction, mem=None, strides=None, out_dt=None):
    """Runs var/std of x over axes and compares every output with its VarSpec (and the
    bits of every NaN); mem: the memory of a strided view x (then written as --in)."""
    odt = out_dt or dt
    rc, se, got, raw, cmd = run_var(r, dt, op, shape, axes, x if mem is None else mem, correction, strides, out_dt)
    if rc != 0 or got is None:
        problems.append("%s\n  exited %d: %s" % (cmd, rc, se.strip()[-2000:]))
        return
    want = nm.expected(odt, op, "propagate", x, axes, correction=correction)
    mism = nm.compare(odt, op, got.reshape(want.shape), want, nm.slice_notes(odt, op, x, axes, correction=correction))
    if mism:
        problems.append("%s\n  %d of %d outputs wrong:\n    %s" % (cmd, len(mism), want.size,
                                                                  "\n    ".join(str(m) for m in mism[:6])))
    bad = nan_bits(odt, raw)
    if bad:
        problems.append("%s\n  %d NaN(s) not stored as %s's default quiet NaN 0x%x, the first at flat output %d"
                        % (cmd, len(bad), odt.name, QNAN[odt.name], bad[0]))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dname", DTYPES)
def test_reduce_random(tilec, rng, tmp_path, repro, dname, op):
    """Random shapes (extents 1, primes, odd), random axis sets, every finite flavour of
    data (negatives, +-0, subnormals, huge and tiny values, a large mean with a small
    spread), the corrections in turn."""
    dt = nm.DTYPES[dname]
    r = Reduce(tilec, str(tmp_path))
    problems = []
    fl = data.VAR_FINITE
    start = int(rng.integers(0, len(fl)))
    for i in range(4 * ROUNDS):
        rank = int(rng.integers(1, 5))
        shape = cases.shape(rng, int(rng.choice([64, 3000, 40000])), rank=rank)
        axes = cases.axes_for(rng, shape)
        x = data.values(rng, dt, shape, fl[(start + i) % len(fl)], axes)
        check_var(r, problems, dt, op, shape, axes, x, correction_for(rng, i + start, count(shape, axes)))
    fail_on(problems, repro)


@pytest.mark.parametrize("dname", DTYPES)
def test_reduce_nonfinite(tilec, rng, tmp_path, repro, dname):
    """NaN and infinities (whole slices of them, one here and there, +inf beside -inf):
    every slice holding one gives NaN, whatever the correction; the others their value."""
    dt = nm.DTYPES[dname]
    r = Reduce(tilec, str(tmp_path))
    problems = []
    i = 0
    for op in OPS:
        for fl in data.VAR_NONFINITE:
            shape = cases.shape(rng, int(rng.choice([64, 3000])), rank=int(rng.integers(1, 4)))
            axes = cases.axes_for(rng, shape)
            x = data.values(rng, dt, shape, fl, axes)
            check_var(r, problems, dt, op, shape, axes, x, correction_for(rng, i, count(shape, axes)))
            i += 1
    fail_on(problems, repro)


# (shape, element strides, axes): a transpose, reversed rows, steps, channels last, and
# broadcasts (stride 0): a reduced broadcast dim makes every slice constant (+0 exactly)
STRIDED = [((300, 200), (1, 300), (1,)), ((3000, 7), (-7, 1), (0,)), ((64, 500), (0, 1), (0,)),
           ((64, 500), (0, 1), (1,)), ((25, 14), (84, 3), (1,)), ((25, 14), (14, -1), (1,)),
           ((4, 25, 14), (0, 14, 1), (0,)), ((3, 5, 4, 11), (1, 132, 33, 3), (0, 2)), ((2, 9000), (1, 2), (1,))]


def test_strided_views(tilec, rng, tmp_path, repro):
    """--strides: the view's memory goes to --in, from its lowest element; numpy's view of
    that memory is the oracle's input (so a slice's first element is the view's)."""
    problems = []
    r = Reduce(tilec, str(tmp_path))
    i = 0
    for dname in DTYPES:
        dt = nm.DTYPES[dname]
        for shape, strides, axes in STRIDED:
            lo = sum((e - 1) * s for e, s in zip(shape, strides) if s < 0)
            hi = sum((e - 1) * s for e, s in zip(shape, strides) if s > 0)
            fl = data.VAR_FINITE[i % len(data.VAR_FINITE)]
            mem = np.asarray(data.values(rng, dt, (hi - lo + 1,), fl, (0,)))
            view = np.lib.stride_tricks.as_strided(mem[-lo:], shape=shape, strides=[s * mem.itemsize for s in strides])
            x = np.array(view)
            check_var(r, problems, dt, OPS[i % 2], shape, axes, x, (None, 0, 1, 2)[i % 4], mem=mem, strides=strides)
            i += 1
    fail_on(problems, repro)


def test_empty_axis(tilec, tmp_path):
    """An empty reduced axis gives NaN (the contract; numpy's var of nothing is NaN too),
    whatever the correction, as the default quiet NaN."""
    problems = []
    r = Reduce(tilec, str(tmp_path))
    for dname in DTYPES:
        dt = nm.DTYPES[dname]
        for op in OPS:
            for shape, axes in (((3, 0), (1,)), ((0, 5), (0,)), ((4, 0, 2), (1,))):
                for corr in (None, 0):
                    rc, se, got, raw, cmd = run_var(r, dt, op, shape, axes, np.zeros(shape), corr)
                    kept = 1
                    for d, e in enumerate(shape):
                        kept *= 1 if d in axes else e
                    if rc != 0 or got is None:
                        problems.append("%s\n  exited %d: %s" % (cmd, rc, se.strip()))
                    elif len(raw) != kept * dt.size or not np.isnan(got).all() or nan_bits(dt, raw):
                        problems.append("%s\n  want %d of %s's default quiet NaN, got bits %s"
                                        % (cmd, kept, dname, raw.hex()))
    fail_on(problems, "")


# (dtype, op, correction, vector, result): the results written from the contract's rules
# (None: the default correction, 1), rounded to the dtype (16-bit dtypes through f32)
LITERAL = [
    ("f32", "var", 1, [1.0, 2.0, 3.0, 4.0], 1.6666666269302368),   # 5/3
    ("f32", "var", 0, [1.0, 2.0, 3.0, 4.0], 1.25),
    ("f32", "std", 1, [1.0, 2.0, 3.0, 4.0], 1.29099440574646),     # sqrt(5/3)
    ("f32", "std", 0, [1.0, 2.0, 3.0, 4.0], 1.1180340051651),      # sqrt(1.25)
    ("f32", "var", 0, [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], 4.0),
    ("f32", "std", 0, [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], 2.0),
    ("f32", "var", None, [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], 4.5714287757873535),  # 32/7: Bessel by default
    # a constant slice: +0, never -0 (the same for -0 and +0 mixed: they are equal)
    ("f32", "var", 1, [3.5] * 7, 0.0),
    ("f32", "std", 1, [-2.0] * 5, 0.0),
    ("f32", "var", 0, [-0.0, 0.0, -0.0], 0.0),
    ("f32", "std", 0, [-0.0], 0.0),
    ("f32", "var", 0, [7.0], 0.0),                                 # n = 1, correction 0: 0 / 1
    # n - correction <= 0: 0 / 0 is NaN, M2 / 0 with M2 > 0 is +inf
    ("f32", "var", 1, [7.0], NAN),                                 # n = 1, correction 1
    ("f32", "std", None, [7.0], NAN),                              # the default is 1
    ("f32", "var", 2, [1.0, 2.0], INF),                            # n - c = 0, M2 = 0.5
    ("f32", "var", 3, [1.0, 2.0], INF),                            # n - c < 0
    ("f32", "std", 5, [1.0, 2.0, 3.0], INF),
    ("f32", "var", 2, [5.0, 5.0], NAN),
    ("f32", "std", 3, [5.0, 5.0], NAN),
    # a NaN or an infinity anywhere: NaN, before the correction's rule
    ("f32", "var", 1, [1.0, INF, 2.0], NAN),
    ("f32", "var", 0, [INF, INF], NAN),
    ("f32", "std", 0, [-INF], NAN),
    ("f32", "var", 1, [NAN, 1.0, 2.0], NAN),
    ("f32", "var", 5, [1.0, INF], NAN),
    ("f32", "std", 1, [-INF, INF, 0.0], NAN),
    # the first element far from the rest (K = x0 is the outlier): x0^2 / 8 exactly
    ("f32", "var", 1, [9.999999843067494e+17] + [0.0] * 7, 1.2499999521128953e+35),  # f32(1e18)^2 / 8
    ("f32", "var", 1, [F1E30] + [0.0] * 7, INF),                     # 1.25e59: past f32's range
    ("f32", "std", 1, [F1E30] + [0.0] * 7, 3.5355337826084734e+29),  # ... its root is not
    ("f32", "std", 0, [-F3E38, F3E38], F3E38),                       # d = 6e38 and d^2 are f64's
    ("f32", "var", 0, [-F3E38, F3E38], INF),
    ("f32", "var", 1, [0.0] * 5 + [F1E30], INF),                     # the outlier last: 1.67e59
    ("bf16", "var", 1, [1.0, 2.0, 3.0, 4.0, 5.0], 2.5),
    ("bf16", "std", 1, [1.0, 2.0, 3.0, 4.0, 5.0], 1.578125),          # sqrt(2.5), f32, then bf16
    ("bf16", "var", 0, [256.0, 0.0, 0.0, 0.0], 12288.0),
    ("bf16", "std", 0, [256.0, 0.0, 0.0, 0.0], 111.0),                # 110.85
    ("f16", "var", 0, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 6.66796875),   # 60/9
    ("f16", "std", 0, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 2.58203125),
    ("f16", "var", 1, [60000.0, 0.0, 0.0, 0.0], INF),                 # 9e8 is past f16's range
    ("f16", "std", 1, [60000.0, 0.0, 0.0, 0.0], 30000.0),             # its root is not
    ("f16", "var", 1, [65504.0, -65504.0], INF),
    ("f16", "std", 0, [65504.0, -65504.0], 65504.0),
    ("f16", "var", 1, [2.0 ** -24, 0.0], 0.0),                        # 2^-49 (an f32) rounds to +0 in f16
    ("f64", "var", 1, [1e16, 1e16 + 2, 1e16 + 4], 4.0),               # a mean of 1e16: K takes it out
    ("f64", "std", 1, [1e16, 1e16 + 2, 1e16 + 4], 2.0),
    ("f64", "var", 1, [1.0, 1.0 + 2.0 ** -52], 2.0 ** -105),
    ("f64", "var", 0, [-1.5, 2.5], 4.0),
    ("f64", "std", 0, [-1.5, 2.5], 2.0),
    ("f64", "var", 1, [2.0 ** -1074, 0.0, 0.0], 0.0),                 # the fma's -2^-2147 to +0, not -0
    ("f64", "var", 0, [1e300] + [0.0] * 3, INF),                      # 1.875e599: past f64's range (S2 = inf; the fma keeps it)
]


def same(got, want):
    return (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want))


def test_literal_vectors(tilec, tmp_path):
    problems = []
    r = Reduce(tilec, str(tmp_path))
    for dname, op, corr, vec, want in LITERAL:
        dt = nm.DTYPES[dname]
        rc, se, got, raw, cmd = run_var(r, dt, op, (len(vec),), [0], np.array(vec, dtype=np.float64), corr)
        if rc != 0 or got is None:
            problems.append("%s\n  exited %d: %s" % (cmd, rc, se.strip()))
            continue
        g = float(got.reshape(-1)[0])
        if not same(g, want) or nan_bits(dt, raw):
            problems.append("%s %s correction %s of %s: got %s (bits %s), want %s"
                            % (op, dname, corr, vec, nm.fmt_value(g), raw.hex(), nm.fmt_value(want)))
    fail_on(problems, "")


def test_large_mean_small_noise(tilec, rng, tmp_path, repro):
    """1e6 + N(0, 1) in f32, 100000 elements: the variance of the f32 data to 1e-6
    relative or better (the exact one from statistics' rational arithmetic), for var and
    std, Bessel's and numpy's correction; every slice's first element is somewhere in the
    noise, and a sum of squares about 0 would lose every digit."""
    dt = nm.DTYPES["f32"]
    x = nm.quantize(dt, 1e6 + rng.standard_normal(100000))[0]
    exact = {1: statistics.variance(x.tolist()), 0: statistics.pvariance(x.tolist())}
    r = Reduce(tilec, str(tmp_path))
    problems = []
    for op in OPS:
        for corr in (None, 0, 1):
            c = 1 if corr is None else corr
            want = exact[c] if op == "var" else math.sqrt(exact[c])
            rc, se, got, raw, cmd = run_var(r, dt, op, (100000,), [0], x, corr)
            if rc != 0 or got is None:
                problems.append("%s\n  exited %d: %s" % (cmd, rc, se.strip()))
                continue
            g = float(got[0])
            if not abs(g - want) <= 1e-6 * want:
                problems.append("%s correction %s of 1e6 + N(0, 1): got %r, the data's is %r (%.3g relative)"
                                % (op, corr, g, want, abs(g - want) / want))
    # and the same data as rows of a matrix, every grid path (rows and columns)
    for shape, axes in (((4, 25000), (1,)), ((25000, 4), (0,))):
        check_var(r, problems, dt, "var", shape, axes, x.reshape(shape), 1)
    fail_on(problems, repro)


@pytest.mark.parametrize("dname", sorted(WIDE))
def test_out_dtype(tilec, rng, tmp_path, repro, dname):
    """--out-dtype (the grid destination of the wider dtype): the same f64 state, rounded
    once to the wider dtype (f16 and bf16 into f32: not through their own format)."""
    dt, wide = nm.DTYPES[dname], nm.DTYPES[WIDE[dname]]
    r = Reduce(tilec, str(tmp_path))
    problems = []
    for i in range(3 * ROUNDS):
        shape = cases.shape(rng, int(rng.choice([64, 3000, 20000])), rank=int(rng.integers(1, 4)))
        axes = cases.axes_for(rng, shape)
        x = data.values(rng, dt, shape, ("offset", "big", "finite_specials", "normal")[i % 4], axes)
        check_var(r, problems, dt, OPS[i % 2], shape, axes, x, (None, 0, 2)[i % 3], out_dt=wide)
    fail_on(problems, repro)


# Shapes for each grid executor's paths (as test_logsumexp.py's): long rows, short rows,
# columns in whole turns of rows and in ragged ones
GRID_SHAPES = [((1, 70001), [1]), ((3, 8200), [1]), ((1000, 32), [1]), ((777, 7), [1]),
               ((8192, 64), [0]), ((4096, 33), [0]), ((4099, 8), [0]), ((37, 9001), [0]), ((6, 500, 40), [0, 2])]


def test_grid_shapes(tilec, rng, tmp_path, repro):
    problems = []
    r = Reduce(tilec, str(tmp_path))
    for dname in ("f32", "f64", "bf16"):
        dt = nm.DTYPES[dname]
        for n, (shape, axes) in enumerate(GRID_SHAPES):
            x = data.values(rng, dt, shape, ("offset", "normal", "finite_specials")[n % 3], axes)
            check_var(r, problems, dt, OPS[n % 2], shape, axes, x, (1, 0, None, 2)[n % 4])
    fail_on(problems, repro)


# ---- tile programs -------------------------------------------------------------------------

COMBOS = [(d, op, "propagate") for d in DTYPES for op in OPS]
# a local source reduces at thread scope only: warp_localsrc is an error (below), not a kind here
KINDS = [(k, ws) for k in VARIANTS for ws in (32, 64) if not (k == "warpgroup" and ws == 64) and k != "warp_localsrc"]


@pytest.mark.parametrize("kind,ws", KINDS, ids=["%s-ws%d" % kw for kw in KINDS])
def test_tile_programs(tilec, rng, tmp_path, repro, kind, ws):
    """Random programs of the kind (cases.py), every variant it lists forced at least once,
    with correction= in turn (the default, 0, 1, 2, one at or past the slice's count);
    thread_local reduces a local source in half of its cases at least."""
    rounds = -(-len(VARIANTS[kind]) // len(COMBOS)) * ROUNDS
    cs = cases.cases_for_kind(rng, kind, ws, rounds, combos=COMBOS, accums=(False,))
    for i, c in enumerate(cs):
        c.correction = correction_for(rng, i, count(c.shape, c.axes))
        if kind == "thread_local" and i % 2 == 0:
            c.src_local = True
    problems, _ = run_cases(tilec, cs, ws, str(tmp_path), kind)
    for v in VARIANTS[kind]:
        if v and not any(c.chosen == v and c.variant == v for c in cs):
            problems.append("coverage: variant=%s was never forced successfully for %s at warp size %d" % (v, kind, ws))
    fail_on(problems, repro)


# (kind, variant, threads, shape, axes): rows longer than a group, a block or a CTA, of data
# with a large mean, each variant forced; f64 and f32
LONG_ROWS = [("cta", v, 256, (3, 1501), (1,)) for v in VARIANTS["cta"]] + \
            [("warp_sel", v, 96, (2, 1203), (-1,)) for v in VARIANTS["warp_sel"]] + \
            [("warpgroup", v, 256, (2, 1100), (1,)) for v in VARIANTS["warpgroup"]] + \
            [("thread_local", v, 32, (2, 12), (1,)) for v in VARIANTS["thread_local"]] + \
            [("grid", "grid_rows", 256, (3, 50001), (1,)), ("grid", "grid_cols", 256, (20001, 3), (0,)),
             ("grid", None, 128, (7, 3001, 5), (0, 2))]


@pytest.mark.parametrize("ws", [32, 64])
def test_tile_long_rows(tilec, rng, tmp_path, repro, ws):
    cs = []
    for kind, variant, threads, shape, axes in LONG_ROWS:
        if kind == "warpgroup" and ws == 64:
            continue
        for d in ("f32", "f64"):
            dt = nm.DTYPES[d]
            op = OPS[len(cs) % 2]
            c = Case(len(cs), kind, dt, op, "propagate", False, variant, threads, ws, shape, axes,
                     src_local=True, dst_local=bool(len(cs) % 2), correction=(1, 0, None)[len(cs) % 3])
            c.src = data.values(rng, dt, c.src_shape, "offset", None)
            c.init = data.values(rng, dt, c.out_shape, "normal")
            cs.append(c)
    problems, _ = run_cases(tilec, cs, ws, str(tmp_path), "long")
    problems += not_applied(cs)
    fail_on(problems, repro)


# ---- what var and std refuse ---------------------------------------------------------------

PROGRAM = ("kernel k(A: {dt}[4, 64] global, Y: {dt}[4] global) threads=64 {{\n"
           "  shared S: {dt}[4, 64]\n  shared D: {dt}[4]\n  cta.copy(S, A)\n  cta.sync()\n"
           "  cta.{op}(D, S, axes=(1){kw})\n  cta.sync()\n  cta.copy(Y, D)\n}}\n")
WARP_LOCAL = ("kernel k(A: f32[64, 4] global, Y: f32[2] global) threads=64 {{\n"
              "  local L: f32[4]\n  shared D: f32[2]\n  thread.copy(L, A[thread_id])\n"
              "  warp.{op}(D[warp_id], L{kw})\n  cta.sync()\n  cta.copy(Y, D)\n}}\n")
THREAD_LOCAL = ("kernel k(A: f32[64, 4] global, Y: f32[64] global) threads=64 {{\n"
                "  local L: f32[4]\n  local R: f32[1]\n  thread.copy(L, A[thread_id])\n"
                "  thread.{op}(R, L{kw})\n  thread.copy(Y[thread_id], R)\n}}\n")


def says(text, *words):
    t = text.lower()
    return any(w in t for w in words)


def test_tile_refusals(tilec, tmp_path):
    """`tilec check`: var and std with what they do not take exit non-zero, the message
    naming the problem; the same programs without it are valid (so var and std exist)."""
    problems = []
    n = 0

    def check(src):
        nonlocal n
        n += 1
        p = tmp_path / ("v%d.tile" % n)
        p.write_text(src)
        rc, so, se = run_tilec(tilec, ["check", str(p)])
        return rc, so + se, src

    good = [PROGRAM.format(dt=d, op=op, kw=kw) for d in DTYPES for op in OPS
            for kw in ("", ", correction=0", ", correction=2", ", correction=1000")]
    good += [THREAD_LOCAL.format(op=op, kw=", correction=0") for op in OPS]  # a local source at thread scope
    for src in good:
        rc, out, _ = check(src)
        if rc != 0:
            problems.append("a valid program was refused (exit %d):\n%s%s" % (rc, src, out))
    bad = []
    for op in OPS:
        bad += [(PROGRAM.format(dt="f32", op=op, kw=", nan=ignore"), ("nan",)),
                (PROGRAM.format(dt="f32", op=op, kw=", accum=true"), ("accum",)),
                (PROGRAM.format(dt="f32", op=op, kw=", correction=-1"), ("correction", "negative")),
                (PROGRAM.format(dt="i32", op=op, kw=""), ("i32", "integer", "float")),
                (PROGRAM.format(dt="u32", op=op, kw=", correction=0"), ("u32", "integer", "float")),
                (PROGRAM.format(dt="i64", op=op, kw=""), ("i64", "integer", "float")),
                (WARP_LOCAL.format(op=op, kw=""), ("local",)),
                (WARP_LOCAL.format(op=op, kw=", correction=0"), ("local",))]
    for other in ("sum", "mean", "max", "sumsq"):
        bad.append((PROGRAM.format(dt="f32", op=other, kw=", correction=1"), ("correction",)))
    for src, words in bad:
        rc, out, _ = check(src)
        if rc == 0 or not says(out, *words):
            problems.append("want a non-zero exit and a message naming %s; exit %d:\n%s%s"
                            % (" or ".join(words), rc, src, out))
    fail_on(problems, "")


def test_cli_refusals(tilec, tmp_path):
    """`tilec reduce`: integers are errors (exit 1 or 2), a negative or malformed
    --correction and --correction on another op are usage errors (exit 2); the message
    names the problem. The same command lines without the fault run."""
    problems = []
    base = ["reduce", "--shape", "10x7", "--axes", "1", "--backend", "sim", "--repeat", "0"]
    for op in OPS:
        for args in (["--dtype", "f32"], ["--dtype", "f64", "--correction", "0"], ["--dtype", "bf16", "--correction", "3"],
                     ["--dtype", "f16", "--correction", "7"], ["--dtype", "f32", "--correction", "100"]):
            rc, so, se = run_tilec(tilec, base + ["--op", op] + args)
            if rc != 0:
                problems.append("%s %s: exit %d: %s" % (op, " ".join(args), rc, se.strip()))
        for d in ("i32", "u32", "i64"):
            for args in (["--dtype", d], ["--dtype", d, "--correction", "0"]):
                rc, so, se = run_tilec(tilec, base + ["--op", op] + args)
                if rc not in (1, 2) or not says(se, d, "integer", "float"):
                    problems.append("%s %s: want exit 1 or 2 and a message naming the dtype; exit %d: %s"
                                    % (op, " ".join(args), rc, se.strip()))
        for bad in ("-1", "-5", "x", "1.5", ""):
            rc, so, se = run_tilec(tilec, base + ["--op", op, "--dtype", "f32", "--correction", bad])
            if rc != 2 or not says(se, "correction"):
                problems.append("%s --correction '%s': want exit 2 (usage) naming --correction; exit %d: %s"
                                % (op, bad, rc, se.strip()))
        for args, words in ((["--nan", "ignore"], ("nan", "ignore")), (["--accumulate"], ("accum",))):
            rc, so, se = run_tilec(tilec, base + ["--op", op, "--dtype", "f32"] + args)
            if rc == 0 or not says(se, *words):
                problems.append("%s %s: want an error naming %s; exit %d: %s" % (op, " ".join(args), words[0], rc, se.strip()))
    for other in ("sum", "max", "mean", "logsumexp", "argmax"):
        rc, so, se = run_tilec(tilec, base + ["--op", other, "--dtype", "f32", "--correction", "1"])
        if rc != 2 or not says(se, "correction"):
            problems.append("--op %s --correction 1: want exit 2 (usage) naming --correction; exit %d: %s"
                            % (other, rc, se.strip()))
    fail_on(problems, "")
