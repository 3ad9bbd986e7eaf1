"""argmax and argmin through `tilec reduce`, against numpy:

    tilec reduce --op argmax|argmin --dtype D --shape AxB.. --axes a,b --nan P --backend sim
                 --in FILE --out VALUES --out2 INDICES [--index-dtype i64|i32] [--strides S,..]

The format's definition (docs/format.md, "argmax and argmin"), written here without
tilec's order keys: the index is the flat offset of the element in the reduced sub-space,
row-major over the reduced axes in their order in the tensor; ties go to the first index;
-0 is below +0 (as for max and min); under nan=propagate the first NaN wins; under
nan=ignore NaN never beats a number, and an all-NaN slice gives NaN at index 0. The value
is the element at the index, bit for bit (a NaN matches any NaN).

numpy's argmax already gives first indices and the first NaN; the signed zeros and
nan=ignore are handled explicitly below, per slice.
"""
import math
import os

import numpy as np
import pytest

import cases
import numerics as nm
from conftest import ROUNDS, fail_on
from tiles import run_tilec

DTYPES = ("f32", "bf16", "f16", "i32", "u32", "f64", "i64")
FLOATS = (-2.0, -0.0, 0.0, 1.0, 3.0, np.inf, -np.inf, 0.5, -0.5)
# f64 (a 128-bit key of a 64-bit rank): subnormals, the least normal, values one ulp apart
# (their bits differ in the low 32 only), integers above 2^53, the largest finite ones
FLOATS64 = FLOATS + (5e-324, -5e-324, 1e-310, -1e-310, 2.2250738585072014e-308, 1.0 + 2.0 ** -52,
                     -(1.0 + 2.0 ** -52), 3.0 - 2.0 ** -51, 2.0 ** 53 + 2, 2.0 ** 60, -(2.0 ** 60),
                     1.7976931348623157e308, -1.7976931348623157e308)
# i64: the extremes, values that differ only in the low 32 bits (and only in the high 32),
# values above 2^53 that an f64 cannot hold (2^53 + 1 and 2^53 are one apart)
INTS64 = (-2 ** 63, -2 ** 63 + 1, -1, 0, 5, 2 ** 63 - 2, 2 ** 63 - 1, (5 << 32) + 1, (5 << 32) + 2, (5 << 32) | 0xffffffff,
          (6 << 32) + 1, -(5 << 32) - 1, -(5 << 32) - 2, 2 ** 53, 2 ** 53 + 1, 2 ** 62 + 3, -(2 ** 53) - 1, 0xffffffff)


def want_index(op, nan, row, is_float):
    """The answer's index in one slice (a 1-D array of float64 values or Python ints)."""
    if not is_float:
        v = np.array([int(x) for x in row], dtype=object)
        best = max(v) if op == "argmax" else min(v)
        return int(np.flatnonzero(v == best)[0])
    v = np.asarray(row, dtype=np.float64)
    nans = np.isnan(v)
    if nans.all():
        return 0
    if nans.any() and nan == "propagate":
        return int(np.flatnonzero(nans)[0])
    live = np.flatnonzero(~nans)
    w = v[live]
    best = w.max() if op == "argmax" else w.min()
    at = live[w == best]
    if best == 0:  # -0 is below +0: argmax prefers +0, argmin -0
        want_neg = op == "argmin"
        signed = at[np.signbit(v[at]) == want_neg]
        if signed.size:
            at = signed
    return int(at[0])


def data(rng, dt, n):
    """n values with ties everywhere, the signed zeros, ±inf and (floats) NaN now and then."""
    if dt.is_float:
        x = rng.choice(FLOATS64 if dt.name == "f64" else FLOATS, size=n)
        x[rng.random(n) < 0.02] = np.nan
        return nm.quantize(dt, x)[0]
    lo, hi = dt.lo, dt.hi
    pool = list(INTS64) if dt.name == "i64" else [lo, lo + 1, -1 if dt.signed else 1, 0, 5, hi - 1, hi]
    return np.array([pool[i] for i in rng.integers(0, len(pool), size=n)], dtype=object)


def view_data(rng, dt, shape, strides):
    """The memory a strided view reaches (from its lowest element), filled by data(), and
    the view's logical tensor read from it by numpy's own indexing."""
    lo = sum((e - 1) * s for e, s in zip(shape, strides) if s < 0)
    hi = sum((e - 1) * s for e, s in zip(shape, strides) if s > 0)
    mem = data(rng, dt, hi - lo + 1)
    offs = np.zeros(shape, dtype=np.int64) - lo
    for d, (e, s) in enumerate(zip(shape, strides)):
        offs = offs + (np.arange(e) * s).reshape([e if i == d else 1 for i in range(len(shape))])
    return mem, mem[offs]


def run(tilec, workdir, n, dt, op, nan, shape, axes, x, index_dtype, strides=None, span_values=None):
    inp, out, out2 = (os.path.join(workdir, "a%d.%s" % (n, s)) for s in ("in", "out", "idx"))
    with open(inp, "wb") as f:
        f.write(nm.encode(dt, x if span_values is None else span_values))
    args = ["reduce", "--op", op, "--dtype", dt.name, "--shape", "x".join(str(s) for s in shape), "--axes",
            ",".join(str(a) for a in axes), "--nan", nan, "--backend", "sim", "--repeat", "0", "--in", inp, "--out",
            out, "--out2", out2, "--index-dtype", index_dtype]
    if strides is not None:
        args += ["--strides", ",".join(str(s) for s in strides)]
    rc, so, se = run_tilec(tilec, args)
    return rc, se, out, out2, " ".join(args)


def slices(x, axes):
    """(the kept shape, x with its reduced axes moved last, in their order, and flattened):
    t[o] is output o's slice in index order."""
    rank = x.ndim
    red = sorted(set(a % rank for a in axes))
    kept_axes = [d for d in range(rank) if d not in red]
    kept = tuple(x.shape[d] for d in kept_axes) or (1,)
    return kept, np.transpose(x, kept_axes + red).reshape(kept + (-1,)) if kept_axes else x.reshape((1, -1))


def check(problems, dt, op, nan, x, axes, out, out2, index_dtype, cmd):
    """x: the logical tensor (values of dt); compares the two outputs with the definition."""
    kept, t = slices(x, axes)
    vals = nm.decode(dt, open(out, "rb").read(), kept)
    raw = open(out2, "rb").read()
    idx = np.frombuffer(raw, dtype="<i8" if index_dtype == "i64" else "<i4").reshape(kept)
    for o in np.ndindex(*kept):
        row = t[o]
        wi = want_index(op, nan, row, dt.is_float)
        wv = row[wi]
        gi, gv = int(idx[o]), vals[o]
        if dt.is_float:
            same = (np.isnan(gv) and np.isnan(wv)) or (gv == wv and np.signbit(gv) == np.signbit(wv))
        else:
            same = int(gv) == int(wv)
        if gi != wi or not same:
            problems.append("%s %s nan=%s: output %s is (%s, %d), the definition gives (%s, %d)\n  %s"
                            % (op, dt.name, nan, o, gv, gi, wv, wi, cmd))


@pytest.mark.parametrize("dname", DTYPES)
def test_argmax_argmin(tilec, tmp_path, rng, repro, dname):
    dt = nm.DTYPES[dname]
    problems = []
    n = 0
    for _ in range(ROUNDS):
        for op in ("argmax", "argmin"):
            for nan in ("propagate", "ignore") if dt.is_float else ("propagate",):
                for k in range(6):
                    rank = int(rng.integers(1, 5))
                    shape = cases.shape(rng, int(rng.choice([40, 3000, 70000])), rank=rank)
                    naxes = int(rng.integers(1, rank + 1))
                    axes = sorted(rng.choice(rank, size=naxes, replace=False).tolist())
                    axes = [a - rank if rng.random() < 0.3 else a for a in axes]
                    if k == 0:
                        axes = [-1]  # so that the first row is a slice: of nothing but NaN, below
                    x = data(rng, dt, int(np.prod(shape))).reshape(shape)
                    if dt.is_float and k == 0 and x.size:  # a slice of nothing but NaN
                        x.reshape(-1)[: x.shape[-1]] = np.nan
                    index_dtype = "i32" if k % 3 == 2 else "i64"
                    n += 1
                    rc, se, out, out2, cmd = run(tilec, str(tmp_path), n, dt, op, nan, shape, axes, x, index_dtype)
                    if rc != 0:
                        problems.append("exit %d: %s\n  %s" % (rc, se.strip(), cmd))
                        continue
                    check(problems, dt, op, nan, x, axes, out, out2, index_dtype, cmd)
    fail_on(problems, repro)


def test_strided_views(tilec, tmp_path, rng, repro):
    """A view's index is its logical one, whatever order memory holds it in: a transpose,
    reversed rows, a broadcast dim (every index ties: 0), channels last."""
    dt = nm.DTYPES["f32"]
    views = [((300, 200), (1, 300), [1]), ((3000, 7), (-7, 1), [0]), ((64, 500), (0, 1), [0]),
             ((5, 3001), (3001, -1), [1]), ((6, 50, 40), (40, 240, 1), [0, 1]), ((4, 6, 5, 33), (1, 660, 132, 4), [0, 2])]
    problems = []
    for n, (shape, strides, axes) in enumerate(views):
        mem, x = view_data(rng, dt, shape, strides)
        for op in ("argmax", "argmin"):
            for nan in ("propagate", "ignore"):
                rc, se, out, out2, cmd = run(tilec, str(tmp_path), 100 + n, dt, op, nan, shape, axes, x, "i64",
                                             strides=strides, span_values=mem)
                if rc != 0:
                    problems.append("exit %d: %s\n  %s" % (rc, se.strip(), cmd))
                    continue
                check(problems, dt, op, nan, x, axes, out, out2, "i64", cmd)
    fail_on(problems, repro)


def test_refusals(tilec, tmp_path):
    """What argmax does not take, said by the CLI: --out2 for another op, an empty axis
    (of 64-bit values too, which it takes: test_long_rows_wide and the rest)."""
    for op, dt in (("argmax", "f64"), ("argmin", "i64"), ("aminmax", "f64"), ("aminmax", "i64")):
        rc, _, se = run_tilec(tilec, ["reduce", "--op", op, "--dtype", dt, "--shape", "3x0", "--axes", "1",
                                      "--backend", "sim", "--repeat", "0"])
        assert rc == 1 and "%s over an empty axis has no value" % op in se, (op, dt, se)
    rc, _, se = run_tilec(tilec, ["reduce", "--op", "sum", "--dtype", "f32", "--shape", "10", "--out2",
                                  str(tmp_path / "x"), "--backend", "sim"])
    assert rc == 2 and "--out2 is for argmax, argmin and aminmax" in se, se


# Tile programs: each scope kind, every variant forced in turn, both warp sizes. {dt} is the
# value dtype, {it} the index dtype, {op}, {extra} the kwargs; A holds R x N values (the
# slices are rows, so the expected index is the position in the row).
PROGRAMS = {
    "cta": ("kernel k(A: {dt}[5, 300] global, V: {dt}[5] global, I: {it}[5] global) threads=128 {{\n"
            "  shared S: {dt}[5, 300] strides=(301, 1)\n  shared W: {dt}[5]\n  shared J: {it}[5]\n"
            "  cta.copy(S, A)\n  cta.sync()\n  cta.{op}(W, J, S, axes=(-1){extra})\n  cta.sync()\n"
            "  cta.copy(V, W)\n  cta.copy(I, J)\n}}\n", (5, 300), ("shared", "cta_tree", "sequential", "smem_tree")),
    "cta few rows": ("kernel k(A: {dt}[2, 3000] global, V: {dt}[2] global, I: {it}[2] global) threads=256 {{\n"
                     "  shared S: {dt}[2, 3000]\n  shared W: {dt}[2]\n  shared J: {it}[2]\n"
                     "  cta.copy(S, A)\n  cta.sync()\n  cta.{op}(W, J, S, axes=(1){extra})\n  cta.sync()\n"
                     "  cta.copy(V, W)\n  cta.copy(I, J)\n}}\n", (2, 3000), ("cta_tree", "shared")),
    "warp slices": ("kernel k(A: {dt}[4, 70] global, V: {dt}[4] global, I: {it}[4] global) threads=128 {{\n"
                    "  shared S: {dt}[4, 70]\n  shared W: {dt}[4]\n  shared J: {it}[4]\n"
                    "  cta.copy(S, A)\n  cta.copy(W, V)\n  cta.copy(J, I)\n  cta.sync()\n"
                    "  warp.{op}(W[warp_id], J[warp_id], S[warp_id], axes=(0){extra})\n  cta.sync()\n"
                    "  cta.copy(V, W)\n  cta.copy(I, J)\n}}\n", (4, 70), ("shared", "sequential", "smem_tree")),
    "thread local": ("kernel k(A: {dt}[64, 37] global, V: {dt}[64] global, I: {it}[64] global) threads=64 {{\n"
                     "  local L: {dt}[37]\n  local R: {dt}[1]\n  local J: {it}[1]\n  thread.copy(L, A[thread_id])\n"
                     "  thread.{op}(R, J, L, axes=(0){extra})\n  thread.copy(V[thread_id], R)\n"
                     "  thread.copy(I[thread_id], J)\n}}\n", (64, 37), ("local",)),
    "warp into registers": ("kernel k(A: {dt}[1, 300] global, V: {dt}[64] global, I: {it}[64] global) threads=64 {{\n"
                            "  shared S: {dt}[1, 300]\n  local R: {dt}[1]\n  local J: {it}[1]\n  cta.copy(S, A)\n"
                            "  cta.sync()\n  warp[0].{op}(R, J, S{extra})\n  thread[0].copy(V[0:1], R)\n"
                            "  thread[0].copy(I[0:1], J)\n}}\n", (1, 300), ("local_smem",)),
    "grid rows": ("kernel k(A: {dt}[37, 8200] global, V: {dt}[37] global, I: {it}[37] global) threads=256 {{\n"
                  "  grid.{op}(V, I, A, axes=(1){extra})\n}}\n", (37, 8200), ("grid_rows",)),
}


def test_tile_programs(tilec, tmp_path, rng, repro):
    problems, ran = [], set()
    n = 0
    for name, (text, shape, variants) in PROGRAMS.items():
        for dname in ("f32", "bf16", "i32", "f64", "i64"):
            dt = nm.DTYPES[dname]
            for op in ("argmax", "argmin", "aminmax"):
                for nan in ("propagate", "ignore") if dt.is_float else ("propagate",):
                    for variant in variants:
                        for ws in (32, 64):
                            n += 1
                            it = dname if op == "aminmax" else "i32" if n % 2 else "i64"
                            extra = (", nan=ignore" if nan == "ignore" else "") + ", variant=" + variant
                            src = text.format(dt=dname, it=it, op=op, extra=extra)
                            tf = tmp_path / ("p%d.tile" % n)
                            tf.write_text(src)
                            x = data(rng, dt, int(np.prod(shape))).reshape(shape)
                            if dt.is_float:
                                x[0, :] = np.nan  # a slice of nothing but NaN
                            a, v, i = (str(tmp_path / ("p%d.%s" % (n, s))) for s in ("a", "v", "i"))
                            open(a, "wb").write(nm.encode(dt, x))
                            rows = shape[0] if name != "thread local" else 64
                            nout = 64 if name in ("warp into registers",) else rows
                            open(v, "wb").write(nm.encode(dt, np.zeros(nout) if dt.is_float else [0] * nout))
                            if op == "aminmax":
                                open(i, "wb").write(nm.encode(dt, np.zeros(nout) if dt.is_float else [0] * nout))
                            else:
                                open(i, "wb").write(np.zeros(nout, dtype="<i4" if it == "i32" else "<i8").tobytes())
                            rc, so, se = run_tilec(tilec, ["run", str(tf), "--backend", "sim", "--warp-size", str(ws),
                                                           "--in", "A=" + a, "--in", "V=" + v, "--in", "I=" + i,
                                                           "--out", "V=" + v, "--out", "I=" + i])
                            if rc != 0 and "cannot lower" in se:
                                continue  # the forced variant does not take this shape at this warp size
                            if rc != 0:
                                problems.append("%s %s %s %s ws %d: exit %d: %s" % (name, op, dname, variant, ws, rc, se.strip()))
                                continue
                            ran.add(variant)
                            vals = nm.decode(dt, open(v, "rb").read(), (nout,))
                            if op == "aminmax":
                                tops = nm.decode(dt, open(i, "rb").read(), (nout,))
                                for r in range(min(rows, 128 // ws) if name == "warp slices" else 1 if name == "warp into registers" else rows):
                                    wl, wh = want_minmax(nan, x[r], dt.is_float)
                                    if not same_value(dt, vals[r], wl) or not same_value(dt, tops[r], wh):
                                        problems.append("%s aminmax %s nan=%s variant=%s ws %d: row %d is (%s, %s), the "
                                                        "definition gives (%s, %s)" % (name, dname, nan, variant, ws, r,
                                                                                       vals[r], tops[r], wl, wh))
                                continue
                            idx = np.frombuffer(open(i, "rb").read(), dtype="<i4" if it == "i32" else "<i8")
                            checked = 1 if name == "warp into registers" else min(rows, 128 // ws) if name == "warp slices" else rows
                            for r in range(checked):  # (warp slices: as many rows as the CTA has warps)
                                wi = want_index(op, nan, x[r], dt.is_float)
                                wv, gv, gi = x[r][wi], vals[r], int(idx[r])
                                same = (np.isnan(gv) and np.isnan(wv)) or (gv == wv and np.signbit(gv) == np.signbit(wv)) \
                                    if dt.is_float else int(gv) == int(wv)
                                if gi != wi or not same:
                                    problems.append("%s %s %s nan=%s variant=%s ws %d: row %d is (%s, %d), the definition "
                                                    "gives (%s, %d)" % (name, op, dname, nan, variant, ws, r, gv, gi, wv, wi))
    every = {v for _, _, vs in PROGRAMS.values() for v in vs}
    if ran != every:
        problems.append("variants never run: %s" % sorted(every - ran))
    fail_on(problems, repro)


# Hand-written vectors with their answers written literally from docs/format.md (not from
# want_index): (dtype, op, nan, vector, value, index).
NAN = float("nan")
LITERAL = [
    ("f32", "argmax", "propagate", [-0.0, 0.0], 0.0, 1),      # -0 is below +0: not a tie
    ("f32", "argmin", "propagate", [0.0, -0.0, -0.0], -0.0, 1),
    ("f32", "argmax", "propagate", [0.0, -0.0, 0.0], 0.0, 0),  # a tie: the first index
    ("f32", "argmax", "propagate", [1.0, NAN, 3.0, NAN], NAN, 1),  # the first NaN
    ("f32", "argmax", "ignore", [1.0, NAN, 3.0, NAN], 3.0, 2),
    ("f32", "argmin", "ignore", [NAN, NAN, NAN], NAN, 0),     # all NaN: index 0
    ("bf16", "argmin", "propagate", [np.inf, -np.inf, -np.inf, NAN], NAN, 3),
    ("f16", "argmax", "propagate", [-np.inf, -np.inf], -np.inf, 0),
    ("f16", "argmin", "ignore", [NAN, 65504.0, -65504.0, -65504.0], -65504.0, 2),
    ("i32", "argmin", "propagate", [5, -2147483648, 7, -2147483648], -2147483648, 1),
    ("i32", "argmax", "propagate", [2147483647, 2147483647], 2147483647, 0),
    ("u32", "argmax", "propagate", [0, 4294967295, 4294967295, 2147483648], 4294967295, 1),
    ("u32", "argmin", "propagate", [2147483648, 2147483647, 0, 0], 0, 2),
    ("f64", "argmax", "propagate", [-0.0, 0.0, 0.0], 0.0, 1),
    ("f64", "argmin", "propagate", [0.0, -0.0, -0.0], -0.0, 1),
    ("f64", "argmax", "propagate", [1.0, NAN, 3.0, NAN], NAN, 1),
    ("f64", "argmax", "ignore", [1.0, NAN, 3.0, NAN, 3.0], 3.0, 2),
    ("f64", "argmin", "ignore", [NAN, NAN, NAN], NAN, 0),
    ("f64", "argmax", "propagate", [5e-324, 1e-310, -0.0, 1e-310], 1e-310, 1),   # subnormals
    ("f64", "argmin", "propagate", [-5e-324, 0.0, -0.0, -5e-324], -5e-324, 0),
    ("f64", "argmax", "propagate", [1.0, 1.0 + 2.0 ** -52, 1.0], 1.0 + 2.0 ** -52, 1),  # one ulp: the low bits
    ("f64", "argmin", "propagate", [-np.inf, np.inf, -np.inf, -1.7976931348623157e308], -np.inf, 0),
    ("f64", "argmin", "ignore", [NAN, np.inf, np.inf], np.inf, 1),
    ("i64", "argmax", "propagate", [(5 << 32) + 1, (5 << 32) + 2, (4 << 32) + 3, (5 << 32) + 2], (5 << 32) + 2, 1),
    ("i64", "argmin", "propagate", [(1 << 32) + 7, 7, (2 << 32) + 7, 7], 7, 1),  # the high bits alone
    ("i64", "argmax", "propagate", [2 ** 53, 2 ** 53 + 1, 2 ** 53], 2 ** 53 + 1, 1),  # f64 cannot hold 2^53 + 1
    ("i64", "argmin", "propagate", [5, -2 ** 63, 7, -2 ** 63], -2 ** 63, 1),
    ("i64", "argmax", "propagate", [2 ** 63 - 2, 2 ** 63 - 1, -1, 2 ** 63 - 1], 2 ** 63 - 1, 1),
    ("i64", "argmin", "propagate", [-1, -(2 ** 32), -(2 ** 32) - 1, 0xffffffff], -(2 ** 32) - 1, 2),
]


def test_literal_vectors(tilec, tmp_path):
    problems = []
    for n, (dname, op, nan, vec, value, index) in enumerate(LITERAL):
        dt = nm.DTYPES[dname]
        x = np.array(vec, dtype=np.float64) if dt.is_float else np.array(vec, dtype=object)
        rc, se, out, out2, cmd = run(tilec, str(tmp_path), 200 + n, dt, op, nan, (len(vec),), [0], x, "i64")
        if rc != 0:
            problems.append("exit %d: %s\n  %s" % (rc, se.strip(), cmd))
            continue
        gv = nm.decode(dt, open(out, "rb").read(), (1,))[0]
        gi = int(np.frombuffer(open(out2, "rb").read(), dtype="<i8")[0])
        same = (math.isnan(gv) and math.isnan(value)) or (gv == value and math.copysign(1, gv) == math.copysign(1, value)) \
            if dt.is_float else int(gv) == value
        if gi != index or not same:
            problems.append("%s %s nan=%s of %s: (%s, %d), want (%s, %d)" % (op, dname, nan, vec, gv, gi, value, index))
    fail_on(problems, "")


# ---- aminmax: the minimum (--out) and the maximum (--out2) of each slice, as min and max
# give them (-0 below +0; nan=propagate: NaN where the slice has one; nan=ignore: the
# numbers', NaN where there are none).


def want_minmax(nan, row, is_float):
    if not is_float:
        v = [int(x) for x in row]
        return min(v), max(v)
    v = np.asarray(row, dtype=np.float64)
    nans = np.isnan(v)
    if nans.all() or (nans.any() and nan == "propagate"):
        return math.nan, math.nan
    w = v[~nans]
    lo, hi = w.min(), w.max()
    if lo == 0:
        lo = -0.0 if np.signbit(w[w == 0]).any() else 0.0
    if hi == 0:
        hi = 0.0 if (~np.signbit(w[w == 0])).any() else -0.0
    return lo, hi


def same_value(dt, got, want):
    if not dt.is_float:
        return int(got) == int(want)
    return (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want))


def check_minmax(problems, dt, nan, x, axes, out, out2, cmd):
    kept, t = slices(x, axes)
    lo = nm.decode(dt, open(out, "rb").read(), kept)
    hi = nm.decode(dt, open(out2, "rb").read(), kept)
    for o in np.ndindex(*kept):
        wl, wh = want_minmax(nan, t[o], dt.is_float)
        if not same_value(dt, lo[o], wl) or not same_value(dt, hi[o], wh):
            problems.append("aminmax %s nan=%s: output %s is (%s, %s), the definition gives (%s, %s)\n  %s"
                            % (dt.name, nan, o, lo[o], hi[o], wl, wh, cmd))


def run_minmax(tilec, workdir, n, dt, nan, shape, axes, x, strides=None, span_values=None):
    inp, out, out2 = (os.path.join(workdir, "m%d.%s" % (n, s)) for s in ("in", "lo", "hi"))
    with open(inp, "wb") as f:
        f.write(nm.encode(dt, x if span_values is None else span_values))
    args = ["reduce", "--op", "aminmax", "--dtype", dt.name, "--shape", "x".join(str(s) for s in shape), "--axes",
            ",".join(str(a) for a in axes), "--nan", nan, "--backend", "sim", "--repeat", "0", "--in", inp, "--out",
            out, "--out2", out2]
    if strides is not None:
        args += ["--strides", ",".join(str(s) for s in strides)]
    rc, so, se = run_tilec(tilec, args)
    return rc, se, out, out2, " ".join(args)


@pytest.mark.parametrize("dname", DTYPES)
def test_aminmax(tilec, tmp_path, rng, repro, dname):
    dt = nm.DTYPES[dname]
    problems = []
    n = 0
    for _ in range(ROUNDS):
        for nan in ("propagate", "ignore") if dt.is_float else ("propagate",):
            for k in range(8):
                rank = int(rng.integers(1, 5))
                shape = cases.shape(rng, int(rng.choice([40, 3000, 70000])), rank=rank)
                naxes = int(rng.integers(1, rank + 1))
                axes = sorted(rng.choice(rank, size=naxes, replace=False).tolist()) if k else [rank - 1]
                x = data(rng, dt, int(np.prod(shape))).reshape(shape)
                if dt.is_float and k == 0 and x.size:  # the first row, a slice of nothing but NaN
                    x.reshape(-1)[: x.shape[-1]] = np.nan
                n += 1
                rc, se, out, out2, cmd = run_minmax(tilec, str(tmp_path), n, dt, nan, shape, axes, x)
                if rc != 0:
                    problems.append("exit %d: %s\n  %s" % (rc, se.strip(), cmd))
                    continue
                check_minmax(problems, dt, nan, x, axes, out, out2, cmd)
    # strided views: a transpose, reversed rows, a broadcast dim
    for m, (shape, strides, axes) in enumerate([((300, 200), (1, 300), [1]), ((3000, 7), (-7, 1), [0]),
                                                ((64, 500), (0, 1), [0])]):
        mem, x = view_data(rng, dt, shape, strides)
        rc, se, out, out2, cmd = run_minmax(tilec, str(tmp_path), 500 + m, dt, "propagate", shape, axes, x, strides, mem)
        if rc != 0:
            problems.append("exit %d: %s\n  %s" % (rc, se.strip(), cmd))
            continue
        check_minmax(problems, dt, "propagate", x, axes, out, out2, cmd)
    fail_on(problems, repro)


MINMAX_LITERAL = [  # (dtype, nan, vector, minimum, maximum), written from the format's rules
    ("f32", "propagate", [0.0, -0.0], -0.0, 0.0),
    ("f32", "propagate", [-0.0, -0.0], -0.0, -0.0),
    ("f32", "propagate", [1.0, NAN, -1.0], NAN, NAN),
    ("f32", "ignore", [1.0, NAN, -1.0], -1.0, 1.0),
    ("bf16", "ignore", [NAN, NAN], NAN, NAN),
    ("f16", "propagate", [-np.inf, 65504.0], -np.inf, 65504.0),
    ("i32", "propagate", [-2147483648, 2147483647, 0], -2147483648, 2147483647),
    ("u32", "propagate", [4294967295, 2147483648, 2147483647], 2147483647, 4294967295),
    ("f64", "propagate", [0.0, -0.0], -0.0, 0.0),
    ("f64", "propagate", [-0.0, -0.0], -0.0, -0.0),
    ("f64", "propagate", [1.0, NAN, -1.0], NAN, NAN),
    ("f64", "ignore", [1.0, NAN, -1.0], -1.0, 1.0),
    ("f64", "ignore", [NAN, NAN], NAN, NAN),
    ("f64", "propagate", [5e-324, -5e-324, 1e-310], -5e-324, 1e-310),
    ("f64", "propagate", [-np.inf, 1.7976931348623157e308, 1.0 + 2.0 ** -52], -np.inf, 1.7976931348623157e308),
    ("i64", "propagate", [-2 ** 63, 2 ** 63 - 1, 0], -2 ** 63, 2 ** 63 - 1),
    ("i64", "propagate", [(5 << 32) + 1, (5 << 32) + 2, (5 << 32) | 0xffffffff], (5 << 32) + 1, (5 << 32) | 0xffffffff),
    ("i64", "propagate", [2 ** 53 + 1, 2 ** 53, -(2 ** 53) - 1, -(2 ** 53)], -(2 ** 53) - 1, 2 ** 53 + 1),
]


def test_aminmax_literal(tilec, tmp_path):
    problems = []
    for n, (dname, nan, vec, lo, hi) in enumerate(MINMAX_LITERAL):
        dt = nm.DTYPES[dname]
        x = np.array(vec, dtype=np.float64) if dt.is_float else np.array(vec, dtype=object)
        rc, se, out, out2, cmd = run_minmax(tilec, str(tmp_path), 900 + n, dt, nan, (len(vec),), [0], x)
        if rc != 0:
            problems.append("exit %d: %s\n  %s" % (rc, se.strip(), cmd))
            continue
        gl = nm.decode(dt, open(out, "rb").read(), (1,))[0]
        gh = nm.decode(dt, open(out2, "rb").read(), (1,))[0]
        if not same_value(dt, gl, lo) or not same_value(dt, gh, hi):
            problems.append("aminmax %s nan=%s of %s: (%s, %s), want (%s, %s)" % (dname, nan, vec, gl, gh, lo, hi))
    fail_on(problems, "")


def test_aminmax_of_registers(tilec, tmp_path, rng, repro):
    """warp.aminmax over each lane's registers: every lane gets its warp's minimum and
    maximum, at both warp sizes, every variant that takes it; T threads (96: a partial
    warp at 64, which only local_smem takes; 64: whole warps)."""
    problems, ran = [], set()
    for n, (T, dname, nan, variant, ws) in enumerate((t, d, p, v, w) for t in (64, 96) for d in ("f32", "i32", "bf16", "f64", "i64")
                                                    for p in ("propagate", "ignore") for v in ("local", "local_smem")
                                                    for w in (32, 64)):
        dt = nm.DTYPES[dname]
        if nan == "ignore" and not dt.is_float:
            continue
        src = ("kernel k(A: {d}[{T}, 4] global, B: {d}[{T}] global, C: {d}[{T}] global) threads={T} {{\n  local L: {d}[4]\n"
               "  local M: {d}[1]\n  local X: {d}[1]\n  thread.copy(L, A[thread_id])\n"
               "  warp.aminmax(M, X, L{nan}, variant={v})\n  thread.copy(B[thread_id], M)\n  thread.copy(C[thread_id], X)\n}}\n"
               ).format(T=T, d=dname, nan=", nan=ignore" if nan == "ignore" else "", v=variant)
        tf = tmp_path / ("r%d.tile" % n)
        tf.write_text(src)
        x = data(rng, dt, T * 4).reshape(T, 4)
        a, b, c = (str(tmp_path / ("r%d.%s" % (n, s))) for s in ("a", "b", "c"))
        open(a, "wb").write(nm.encode(dt, x))
        rc, so, se = run_tilec(tilec, ["run", str(tf), "--backend", "sim", "--warp-size", str(ws), "--in", "A=" + a,
                                       "--out", "B=" + b, "--out", "C=" + c])
        if rc != 0 and "cannot lower" in se:
            continue
        if rc != 0:
            problems.append("%s %s %s ws %d: exit %d: %s" % (dname, nan, variant, ws, rc, se.strip()))
            continue
        ran.add(variant)
        lo = nm.decode(dt, open(b, "rb").read(), (T,))
        hi = nm.decode(dt, open(c, "rb").read(), (T,))
        for t in range(T):
            w = t // ws
            wl, wh = want_minmax(nan, x[w * ws:(w + 1) * ws].reshape(-1), dt.is_float)
            if not same_value(dt, lo[t], wl) or not same_value(dt, hi[t], wh):
                problems.append("%s nan=%s variant=%s ws %d: lane %d has (%s, %s), the definition gives (%s, %s)"
                                % (dname, nan, variant, ws, t, lo[t], hi[t], wl, wh))
    if ran != {"local", "local_smem"}:
        problems.append("variants never run: %s" % sorted({"local", "local_smem"} - ran))
    fail_on(problems, repro)


def test_long_rows_wide(tilec, tmp_path, rng, repro):
    """f64 and i64 (128-bit keys) over long rows and columns: the grid variants that split
    an output over several CTAs and fold their partials (grid_rows, grid_cols; --explain
    names them), with the best value, its ties and NaNs placed in the first, a middle and
    the last CTA's share, and odd lengths."""
    problems, seen = [], set()
    cases_ = [((3, 300001), [1]), ((300001, 3), [0]), ((1, 1 << 20), [0, 1]), ((7, 40003), [1])]
    n = 0
    for dname in ("f64", "i64"):
        dt = nm.DTYPES[dname]
        for shape, axes in cases_:
            x = data(rng, dt, int(np.prod(shape))).reshape(shape)
            red = sorted(a % x.ndim for a in axes)
            perm = [d for d in range(x.ndim) if d not in red] + red  # as slices() orders them
            xt = np.transpose(x, perm).copy()
            flat = xt.reshape(-1, int(np.prod([x.shape[d] for d in red])))  # a view of xt: rows are slices
            length = flat.shape[1]
            top = 2.0 ** 70 if dt.is_float else 2 ** 63 - 1
            if not dt.is_float:  # the pool's top is placed below: the rest strictly below it
                flat[flat == top] = 2 ** 63 - 2
            else:
                flat[flat == np.inf] = 1.0
            for r in range(flat.shape[0]):  # a top tied at three places of each row, one the last
                for at in sorted({length - 1, length // 2 + r, 3 + r}):
                    flat[r, at] = top
            if dt.is_float:
                flat[0, length // 3] = np.nan  # the middle's NaN: the answer under propagate
            x = np.transpose(xt, np.argsort(perm))
            for op in ("argmax", "argmin", "aminmax"):
                for nan in ("propagate", "ignore") if dt.is_float else ("propagate",):
                    n += 1
                    if op == "aminmax":
                        rc, se, out, out2, cmd = run_minmax(tilec, str(tmp_path), 700 + n, dt, nan, shape, axes, x)
                    else:
                        rc, se, out, out2, cmd = run(tilec, str(tmp_path), 700 + n, dt, op, nan, shape, axes, x, "i64")
                    if rc != 0:
                        problems.append("exit %d: %s\n  %s" % (rc, se.strip(), cmd))
                        continue
                    if op == "aminmax":
                        check_minmax(problems, dt, nan, x, axes, out, out2, cmd)
                    else:
                        check(problems, dt, op, nan, x, axes, out, out2, "i64", cmd)
            rc, so, se = run_tilec(tilec, ["reduce", "--op", "argmax", "--dtype", dname, "--shape",
                                           "x".join(str(v) for v in shape), "--axes", ",".join(str(a) for a in axes),
                                           "--backend", "sim", "--explain"])
            for line in (so + se).splitlines():
                if "CTAs an output" in line or "CTAs a column block" in line:
                    seen.add(shape)
    if len(seen) < 3:
        problems.append("the long cases took a multi-CTA plan only for %s" % sorted(seen))
    fail_on(problems, repro)


def test_lane_ties(tilec, tmp_path, rng, repro):
    """Ties and NaNs inside one lane's share of a piece (grid_rows folds a lane's elements
    on their ranks and keeps the first of the best: v_grid_rows.c, "Ranked pieces"): in each
    row the best value at two or three elements of one lane (V elements a 16-byte load, the
    lane's next load 32 * V further), +0 after -0 in a lane of negative rows, two NaNs
    in a lane after the best, and a row of nothing but the least value (i32) or NaN, on
    rows whose lanes load whole vectors (512), whole then ragged ones (500), several
    pieces (4096), and ragged long rows over several CTAs."""
    problems, n = [], 0
    for dname in ("f32", "bf16", "i32"):
        dt = nm.DTYPES[dname]
        V = 16 // (2 if dname == "bf16" else 4)
        S = 32 * V  # a lane's next load
        for shape in ((6, 512), (6, 500), (4, 4096), (3, 70001), (2, 128256)):
            rows, length = shape
            if dt.is_float:
                x = rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0], size=shape)
            else:
                x = rng.choice([dt.lo + 1, -1, 0, 5], size=shape).astype(object)
            for r in range(rows):
                lane = int(rng.integers(0, 32))
                at = sorted({b * S + lane * V + e for b in range(min(4, (length - lane * V - 1) // S + 1))
                             for e in rng.integers(0, V, size=2).tolist()})
                at = [a for a in at if a < length]
                if r % 3 == 1 and dt.is_float:  # negative rows: +0 wins over the -0 before it
                    x[r] = -np.abs(x[r]) - 1.0
                    x[r, at[0]] = -0.0
                    for a in at[1:]:
                        x[r, a] = 0.0
                else:
                    for a in at:
                        x[r, a] = 3.0 if dt.is_float else dt.hi
                if r % 3 == 2 and dt.is_float and len(at) > 1:  # NaNs after the best, in its lane
                    x[r, at[-1]] = np.nan
                    x[r, min(at[-1] + S, length - 1)] = np.nan
            x[rows - 1] = np.nan if dt.is_float else dt.lo
            x = nm.quantize(dt, x.reshape(-1))[0].reshape(shape) if dt.is_float else x
            for op in ("argmax", "argmin"):
                y = x if op == "argmax" else (-x if dt.is_float else np.array([[~int(v) for v in row] for row in x], dtype=object))
                for nan in ("propagate", "ignore") if dt.is_float else ("propagate",):
                    n += 1
                    rc, se, out, out2, cmd = run(tilec, str(tmp_path), 900 + n, dt, op, nan, shape, [1], y, "i64")
                    if rc != 0:
                        problems.append("exit %d: %s\n  %s" % (rc, se.strip(), cmd))
                        continue
                    check(problems, dt, op, nan, y, [1], out, out2, "i64", cmd)
    fail_on(problems, repro)
