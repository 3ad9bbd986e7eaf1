"""Swizzled shared tiles (docs/format.md, "Swizzled shared tiles") on the
simulator against numpy.

A func's shared parameter arrives as the caller's bytes: here the test lays the tile out
itself, each element at the place TMA's swizzle gives it (the formula below, written from
the CUDA programming guide's description of CU_TENSOR_MAP_SWIZZLE_128B and CuTe's
Swizzle<B, M, S>, not from tilec), so a lowering that read a swizzled tile as a plain one,
or swizzled the wrong bits, sums the wrong elements. Every op over rows and columns, the
three presets and a general xor(...), 4- 2- and 8-byte elements, a row-major tile and the
panels [4][64][32] that four 128-byte TMA boxes fill; and a kernel whose own swizzled
tile is filled from global memory, reduced, and copied back out bit for bit.
"""
import os

import numpy as np
import pytest

import data
import numerics as nm
from conftest import ROUNDS, fail_on
from test_argmax import want_index
from tiles import run_tilec

# name: (bits, base, shift) in bytes
SWIZZLES = {"sw128": (3, 4, 3), "sw64": (2, 4, 3), "sw32": (1, 4, 3), "xor(2, 3, 4)": (2, 3, 4)}


def place(offset_bytes, bits, base, shift):
    """Where byte offset o of the tile is stored: the 2^base-byte chunk's index within its
    group of 2^bits chunks is XORed with the index of the 2^(base + shift)-byte line's
    bits above, the line's position in its group of lines."""
    line = offset_bytes >> (base + shift)
    chunk = (offset_bytes >> base) & ((1 << bits) - 1)
    moved = chunk ^ (line & ((1 << bits) - 1))
    return (offset_bytes & ~(((1 << bits) - 1) << base)) | (moved << base)


def lay_out(x, dt, swz):
    """The raw bytes of a swizzled row-major tile holding x."""
    bits, base, shift = SWIZZLES[swz]
    flat = np.asarray(x).reshape(-1)
    es = nm.encode(dt, flat[:1]).__len__()
    raw = bytearray(len(flat) * es)
    enc = nm.encode(dt, flat)
    for i in range(len(flat)):
        p = place(i * es, bits, base, shift)
        assert p % es == 0 and p < len(raw)
        raw[p:p + es] = enc[i * es:(i + 1) * es]
    return bytes(raw)


def test_place_is_tmas_128b():
    # spot values of the 128-byte swizzle: byte 0x80 (line 1, chunk 0) -> chunk 1 (0x90);
    # 0x3f0 (line 7, chunk 7) -> chunk 0 (0x380); 0x400 starts a new 1024-byte atom unmoved
    assert place(0x80, 3, 4, 3) == 0x90
    assert place(0x3F0, 3, 4, 3) == 0x380
    assert place(0x400, 3, 4, 3) == 0x400
    assert place(0x84, 3, 4, 3) == 0x94  # a word inside a chunk keeps its place in it
    assert sorted(place(o, 3, 4, 3) for o in range(0, 2048, 4)) == list(range(0, 2048, 4))


OPS = ["sum", "max", "min", "prod", "sumsq", "mean", "logsumexp", "var", "argmax"]
# (name, dtype, shape, reduced axes, threads)
CASES = [
    ("rows", "f32", (64, 32), (1,), 64),
    ("cols", "f32", (64, 32), (0,), 128),
    ("wide rows", "f32", (16, 128), (1,), 128),
    ("panels rows", "f32", (4, 16, 32), (0, 2), 128),
    ("panels cols", "f32", (4, 16, 32), (1,), 64),
    ("f16 rows", "f16", (32, 64), (1,), 32),
    ("f64 cols", "f64", (16, 16), (0,), 32),
]


def kept_shape(shape, axes):
    return tuple(n for d, n in enumerate(shape) if d not in axes)


@pytest.mark.parametrize("swz", list(SWIZZLES), ids=list(SWIZZLES))
@pytest.mark.parametrize("name,dname,shape,axes,threads", CASES, ids=[c[0] for c in CASES])
def test_swizzled_func_param(tilec, rng, tmp_path, repro, swz, name, dname, shape, axes, threads):
    dt = nm.DTYPES[dname]
    kept = kept_shape(shape, axes)
    nout = int(np.prod(kept))
    problems = []
    d = str(tmp_path)
    for r in range(ROUNDS):
        for op in OPS:
            if op == "var" and dname == "f16":
                continue
            two = op == "argmax"
            dims = ", ".join(str(n) for n in shape)
            text = ("func f(dst: %s[%d] shared,%s src: %s[%s] shared swizzle=%s) threads=%d {\n"
                    "  cta.%s(dst, %ssrc, axes=(%s))\n}\n"
                    % (dname, nout, " idx: i64[%d] shared," % nout if two else "", dname, dims, swz, threads, op,
                       "idx, " if two else "", ", ".join(str(a) for a in axes)))
            fl = data.flavours_for(dt, op, "propagate")
            x = data.values(rng, dt, shape, fl[r % len(fl)], axes)
            tf, fs, fd, fi = (os.path.join(d, n) for n in ("f.tile", "src", "dst", "idx"))
            with open(tf, "w") as f:
                f.write(text)
            with open(fs, "wb") as f:
                f.write(lay_out(x, dt, swz))
            args = ["run", "--backend=sim", "--in=src=" + fs, "--out=dst=" + fd, tf]
            if two:
                args.insert(-1, "--out=idx=" + fi)
            rc, so, se = run_tilec(tilec, args)
            what = "%s %s %s:\n%s" % (swz, name, op, text)
            if rc != 0:
                problems.append("%s tilec failed (%d): %s" % (what, rc, se.strip()[:400]))
                continue
            got = nm.decode(dt, open(fd, "rb").read(), (nout,))
            t = np.moveaxis(np.asarray(x, np.float64), axes, tuple(range(-len(axes), 0))).reshape(nout, -1)
            if two:
                idx = np.frombuffer(open(fi, "rb").read(), dtype="<i8")
                for o in range(nout):
                    wi = want_index(op, "propagate", t[o], True)
                    wv, gv = t[o][wi], got[o]
                    ok = (np.isnan(gv) and np.isnan(wv)) or (gv == wv and np.signbit(gv) == np.signbit(wv))
                    if int(idx[o]) != wi or not ok:
                        problems.append("%s output %d is (%s, %d), the definition gives (%s, %d)"
                                        % (what, o, gv, int(idx[o]), wv, wi))
                continue
            want = nm.expected(dt, op, "propagate", np.asarray(x), axes).reshape(nout)
            problems += ["%s %s" % (what, m) for m in nm.compare(dt, op, got, want)]
    fail_on(problems, repro)


@pytest.mark.parametrize("swz", ["sw128", "sw32"])
def test_swizzled_allocation(tilec, rng, tmp_path, repro, swz):
    """A kernel's own swizzled tile: filled from global memory (16-byte copies that must
    land where the swizzle says), reduced over rows and columns, copied back out."""
    dt = nm.DTYPES["f32"]
    text = ("kernel k(A: f32[64, 128] global, R: f32[64] global, C: f32[128] global, D: f32[64, 128] global) "
            "threads=128 {\n  shared S: f32[64, 128] swizzle=%s\n  cta.copy(S, A)\n  cta.sync()\n"
            "  cta.sum(R, S, axes=(1))\n  cta.max(C, S, axes=(0))\n  cta.copy(D, S)\n}\n" % swz)
    d = str(tmp_path)
    tf = os.path.join(d, "k.tile")
    with open(tf, "w") as f:
        f.write(text)
    x = data.values(rng, dt, (64, 128), "specials", (1,))
    with open(os.path.join(d, "A"), "wb") as f:
        f.write(nm.encode(dt, x))
    rc, so, se = run_tilec(tilec, ["run", "--backend=sim", "--in=A=" + os.path.join(d, "A")]
                           + ["--out=%s=%s" % (n, os.path.join(d, n)) for n in "RCD"] + [tf])
    assert rc == 0, se
    problems = []
    back = nm.decode(dt, open(os.path.join(d, "D"), "rb").read(), (64, 128))
    xs = np.asarray(x, np.float64)
    same = (back.astype(np.float64).view(np.uint64) == xs.view(np.uint64)) | (np.isnan(back) & np.isnan(xs))
    if not same.all():
        problems.append("the copy back differs at %s" % list(zip(*np.nonzero(~same)))[:4])
    for n, op, ax in (("R", "sum", 1), ("C", "max", 0)):
        got = nm.decode(dt, open(os.path.join(d, n), "rb").read(), (x.shape[1 - ax],))
        want = nm.expected(dt, op, "propagate", np.asarray(x), (ax,))
        problems += ["%s %s: %s" % (swz, n, m) for m in nm.compare(dt, op, got, want)]
    fail_on(problems, repro)
