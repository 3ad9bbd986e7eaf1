"""Fragments (docs/format.md, "Fragment layouts") on the simulator against numpy:
a .tile kernel copies a global tile into a fragment of each layout, reduces it over its
rows and over its columns into global memory with every op, into a replicated fragment
(and out again), and copies the fragment back out; every result against numerics.py's
definitions (argmax / argmin against test_argmax.py's), the copy back bit for bit.
The layouts' places are the PTX ISA's (test_layout.c checks each one); here a lowering
that folded the wrong registers or shuffled over the wrong lanes gives wrong results.
"""
import os

import numpy as np
import pytest

import data
import numerics as nm
from conftest import ROUNDS, fail_on
from test_argmax import want_index
from tiles import run_tilec

# (name, layout, dtype, shape, scope, threads): a warp's m16n8k16 C, A and B fragments, a
# warpgroup's wgmma D, a general linear layout of a warp (rows split across lanes and
# registers, columns across lanes), and CTAs' of 2 to 32 warps
LAYOUTS = [
    ("mma_c", "mma_m16n8k16_c", "f32", (16, 32), "warp", 32),
    ("mma_a", "mma_m16n8k16_a", "f16", (16, 32), "warp", 32),
    ("mma_b", "mma_m16n8k16_b", "bf16", (16, 16), "warp", 32),
    ("wgmma", "wgmma_m64nNk16_d", "f32", (64, 16), "warpgroup", 128),
    ("linear", "linear(reg=((0, 1), (4, 0)), lane=((1, 0), (0, 2), (2, 0), (0, 4), (8, 0)))", "f32", (16, 8),
     "warp", 32),
    # a CTA's fragments: 1, 3, 4 and 5 warp bits, along the rows, the columns or both
    ("cta64", "linear(reg=((0, 1), (1, 0)), lane=((0, 2), (0, 4), (0, 8), (0, 16), (2, 0)), warp=((4, 0)))", "f16",
     (8, 32), "cta", 64),
    ("cta256", "linear(reg=((0, 1), (0, 2)), lane=((0, 4), (0, 8), (0, 16), (1, 0), (2, 0)), warp=((4, 0), (0, 32), "
     "(8, 0)))", "f32", (16, 64), "cta", 256),
    ("cta512", "linear(reg=((0, 1), (0, 2)), lane=((0, 4), (0, 8), (0, 16), (0, 32), (0, 64)), warp=((0, 128), (1, 0), "
     "(2, 0), (4, 0)))", "bf16", (8, 256), "cta", 512),
    ("cta1024", "linear(reg=(), lane=((0, 1), (0, 2), (0, 4), (0, 8), (0, 16)), warp=((1, 0), (2, 0), (4, 0), (8, 0), "
     "(16, 0)))", "f32", (32, 32), "cta", 1024),
]
OPS = ["sum", "max", "min", "prod", "sumsq", "norm2", "mean", "logsumexp", "var", "std", "argmax", "argmin"]


def flavour_for(dt, op, r):
    fl = data.flavours_for(dt, op, "propagate")
    return fl[r % len(fl)]


def run_case(tilec, workdir, n, layout, dname, shape, scope, threads, op, axis, x):
    """One kernel: A -> fragment S -> op over `axis` into B (and I for the index ops); S back to D."""
    dt = nm.DTYPES[dname]
    kept = shape[1 - axis]
    two = op in ("argmax", "argmin")
    params = ["A: %s[%d, %d] global" % (dname, shape[0], shape[1]), "B: %s[%d] global" % (dname, kept)]
    if two:
        params.append("I: i64[%d] global" % kept)
    params.append("D: %s[%d, %d] global" % (dname, shape[0], shape[1]))
    red = "%s.%s(B, %sS, axes=(%d))" % (scope, op, "I, " if two else "", axis)
    text = ("kernel k(%s) threads=%d {\n  local S: %s[%d, %d] layout=%s\n  %s.copy(S, A)\n  %s\n  %s.copy(D, S)\n}\n"
            % (", ".join(params), threads, dname, shape[0], shape[1], layout, scope, red, scope))
    tf = os.path.join(workdir, "f%d.tile" % n)
    with open(tf, "w") as f:
        f.write(text)
    files = {p: os.path.join(workdir, "f%d.%s" % (n, p)) for p in ("A", "B", "I", "D")}
    with open(files["A"], "wb") as f:
        f.write(nm.encode(dt, x))
    args = ["run", "--backend=sim", "--in=A=" + files["A"], "--out=B=" + files["B"], "--out=D=" + files["D"], tf]
    if two:
        args.insert(-1, "--out=I=" + files["I"])
    rc, so, se = run_tilec(tilec, args)
    return rc, se, files, text


@pytest.mark.parametrize("name,layout,dname,shape,scope,threads", LAYOUTS, ids=[c[0] for c in LAYOUTS])
def test_fragment_reductions(tilec, rng, tmp_path, repro, name, layout, dname, shape, scope, threads):
    dt = nm.DTYPES[dname]
    problems = []
    n = 0
    for r in range(ROUNDS):
        for op in OPS:
            for axis in (0, 1):
                x = data.values(rng, dt, shape, flavour_for(dt, op, r + axis), (axis,))
                rc, se, files, text = run_case(tilec, str(tmp_path), n, layout, dname, shape, scope, threads, op,
                                               axis, x)
                n += 1
                what = "%s %s over axis %d:\n%s" % (name, op, axis, text)
                if rc != 0:
                    problems.append("%s tilec failed (%d): %s" % (what, rc, se.strip()[:400]))
                    continue
                back = nm.decode(dt, open(files["D"], "rb").read(), shape)
                same = (back.astype(np.float64).view(np.uint64) == np.asarray(x, np.float64).view(np.uint64)) | (
                    np.isnan(back) & np.isnan(np.asarray(x, np.float64)))
                if not same.all():
                    problems.append("%s the copy back differs at %s" % (what, list(zip(*np.nonzero(~same)))[:4]))
                kept = (shape[1 - axis],)
                got = nm.decode(dt, open(files["B"], "rb").read(), kept)
                if op in ("argmax", "argmin"):
                    idx = np.frombuffer(open(files["I"], "rb").read(), dtype="<i8")
                    t = np.moveaxis(np.asarray(x, np.float64), axis, -1)
                    for o in range(kept[0]):
                        wi = want_index(op, "propagate", t[o], True)
                        wv, gv = t[o][wi], got[o]
                        ok = (np.isnan(gv) and np.isnan(wv)) or (gv == wv and np.signbit(gv) == np.signbit(wv))
                        if int(idx[o]) != wi or not ok:
                            problems.append("%s output %d is (%s, %d), the definition gives (%s, %d)"
                                            % (what, o, gv, int(idx[o]), wv, wi))
                    continue
                want = nm.expected(dt, op, "propagate", np.asarray(x), (axis,))
                problems += ["%s %s" % (what, m) for m in nm.compare(dt, op, got, want)]
    fail_on(problems, repro)


@pytest.mark.parametrize("op", ["max", "logsumexp"])
def test_replicated_destination(tilec, rng, tmp_path, repro, op):
    """Online softmax's running statistics: row maxima, and row logsumexps (the old value
    one more element), into a fragment whose quads hold their row's value (lane bits 0 and
    1 all zero), folded with accum=true over two blocks of scores, then written out once."""
    dt = nm.DTYPES["f32"]
    text = ("kernel k(A: f32[16, 64] global, A2: f32[16, 64] global, M: f32[16, 1] global) threads=32 {\n"
            "  local S: f32[16, 64] layout=mma_m16n8k16_c\n"
            "  local m: f32[16, 1] layout=linear(reg=((8, 0)), lane=((0, 0), (0, 0), (1, 0), (2, 0), (4, 0)))\n"
            "  warp.fill(m, -inf)\n"
            "  warp.copy(S, A)\n  warp.%s(m, S, axes=(1), accum=true)\n"
            "  warp.copy(S, A2)\n  warp.%s(m, S, axes=(1), accum=true)\n"
            "  warp.copy(M, m)\n}\n" % (op, op))
    d = str(tmp_path)
    tf = os.path.join(d, "r.tile")
    with open(tf, "w") as f:
        f.write(text)
    a, a2 = (data.values(rng, dt, (16, 64), fl, (1,)) for fl in ("specials", "normal"))
    for nm_, v in (("A", a), ("A2", a2)):
        with open(os.path.join(d, nm_), "wb") as f:
            f.write(nm.encode(dt, v))
    rc, so, se = run_tilec(tilec, ["run", "--backend=sim", "--in=A=" + os.path.join(d, "A"),
                                   "--in=A2=" + os.path.join(d, "A2"), "--out=M=" + os.path.join(d, "M"), tf])
    assert rc == 0, se
    got = nm.decode(dt, open(os.path.join(d, "M"), "rb").read(), (16, 1))
    # the two blocks and the starting -inf: one slice of 129 elements a row (-inf adds nothing)
    start = np.full((16, 1), -np.inf)
    want = nm.expected(dt, op, "propagate", np.concatenate([a, a2, start], axis=1), (1,)).reshape(16, 1)
    fail_on(["%s\n%s" % (m, text) for m in nm.compare(dt, op, got, want)], repro)


# A CTA's fragments reduced into fragments (the slots every lane folds, var's first
# elements passed between warps) and mapped with a broadcast row statistic: (name, dtype,
# shape, threads, the rows' layout, a row statistic's layout)
CTA_ROWS = [
    ("cta256", "f32", (16, 64), 256,
     "linear(reg=((0, 1), (0, 2)), lane=((0, 4), (0, 8), (0, 16), (1, 0), (2, 0)), warp=((4, 0), (0, 32), (8, 0)))",
     "linear(reg=(), lane=((0, 0), (0, 0), (0, 0), (1, 0), (2, 0)), warp=((4, 0), (0, 0), (8, 0)))"),
    ("cta512", "bf16", (8, 256), 512,
     "linear(reg=((0, 1), (0, 2)), lane=((0, 4), (0, 8), (0, 16), (0, 32), (0, 64)), warp=((0, 128), (1, 0), (2, 0), "
     "(4, 0)))",
     "linear(reg=(), lane=((0, 0), (0, 0), (0, 0), (0, 0), (0, 0)), warp=((0, 0), (1, 0), (2, 0), (4, 0)))"),
    ("cta1024", "f32", (4, 1024), 1024,
     "linear(reg=((0, 1), (0, 2)), lane=((0, 4), (0, 8), (0, 16), (0, 32), (0, 64)), warp=((0, 128), (0, 256), "
     "(1, 0), (0, 512), (2, 0)))",
     "linear(reg=(), lane=((0, 0), (0, 0), (0, 0), (0, 0), (0, 0)), warp=((0, 0), (0, 0), (1, 0), (0, 0), (2, 0)))"),
]


@pytest.mark.parametrize("name,dname,shape,threads,lay,rows_lay", CTA_ROWS, ids=[c[0] for c in CTA_ROWS])
def test_cta_fragment_softmax(tilec, rng, tmp_path, repro, name, dname, shape, threads, lay, rows_lay):
    """A softmax in a CTA's registers: the rows' maximum, sum of exp(min(x - max, 0)) and
    variance into row fragments, the exponentials divided by the sum; every warp folds the
    warps of its rows (in 2 to 8 warps a row) through shared slots. Against numpy: the
    maximum exactly, the rest within a few f32 roundings."""
    dt = nm.DTYPES[dname]
    R, C = shape
    text = ("kernel k(A: %s[%d, %d] global, Y: f32[%d, %d] global, M: f32[%d, 1] global, S: f32[%d, 1] global, "
            "V: f32[%d, 1] global) threads=%d {\n" % (dname, R, C, R, C, R, R, R, threads) +
            "  local X: %s[%d, %d] layout=%s\n  local E: f32[%d, %d] layout=%s\n" % (dname, R, C, lay, R, C, lay) +
            "".join("  local %s: f32[%d, 1] layout=%s\n" % (b, R, rows_lay) for b in ("m", "s", "v")) +
            "  cta.copy(X, A)\n  cta.max(m, X, axes=(1))\n  cta.map(E, exp(min(X - m, 0)))\n  cta.sum(s, E, axes=(1))\n"
            "  cta.var(v, X, axes=(1), correction=0)\n  cta.map(E, E / s)\n"
            "  cta.copy(Y, E)\n  cta.copy(M, m)\n  cta.copy(S, s)\n  cta.copy(V, v)\n}\n")
    d = str(tmp_path)
    tf = os.path.join(d, "k.tile")
    with open(tf, "w") as f:
        f.write(text)
    problems = []
    for r in range(ROUNDS):
        x = data.values(rng, dt, shape, ("normal", "integers", "subnormal")[r % 3], (1,))
        x = np.asarray(x, np.float64)
        x[r % R, (7 * r) % C] = -np.inf  # a term that is 0
        with open(os.path.join(d, "A"), "wb") as f:
            f.write(nm.encode(dt, x))
        outs = {b: os.path.join(d, b) for b in ("Y", "M", "S", "V")}
        rc, so, se = run_tilec(tilec, ["run", "--backend=sim", "--in=A=" + os.path.join(d, "A")] +
                               ["--out=%s=%s" % (b, p) for b, p in outs.items()] + [tf])
        if rc != 0:
            problems.append("round %d: tilec failed (%d): %s\n%s" % (r, rc, se.strip()[:400], text))
            continue
        f32 = nm.DTYPES["f32"]
        got = {b: nm.decode(f32, open(p, "rb").read(), shape if b == "Y" else (R, 1)) for b, p in outs.items()}
        m = x.max(axis=1, keepdims=True)
        e = np.exp(x - m)
        s = e.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore"):
            v = x.var(axis=1, keepdims=True)  # NaN in the row of -inf, as tilec's
        if not np.array_equal(got["M"], m):
            problems.append("round %d: the maxima %s, numpy's %s" % (r, got["M"].ravel(), m.ravel()))
        for b, want, rel in (("S", s, 4e-6), ("Y", e / s, 1e-5), ("V", v, 1e-5)):
            bad = ~((np.abs(got[b] - want) <= rel * np.abs(want) + 1e-30) | (np.isnan(got[b]) & np.isnan(want)))
            if bad.any():
                i = tuple(np.argwhere(bad)[0])
                problems.append("round %d: %s at %s is %r, numpy's %r (%d of %d off)" % (r, b, i, got[b][i], want[i],
                                                                                        bad.sum(), bad.size))
    fail_on(["%s\n%s" % (p, text) for p in problems[:6]], repro)
