"""`tilec reduce` on user data (--in FILE and --out FILE):

    tilec reduce --op OP --dtype D --shape AxB.. --axes a,b --nan P --backend sim
                 --in FILE --out FILE

--in is the whole tensor and --out the kept extents, both raw little-endian, dense
row-major, in the dtype (docs/cli.md, docs/runtime.md). A binary that refuses --in or
--out fails these tests (they are the interface, not an option).

With --accumulate the destination's old values are given with --out-init FILE (the
output before the call, docs/cli.md); --out then holds op(old, reduction).
"""
import math
import os
import re

import numpy as np
import pytest

import cases
import data
import numerics as nm
from conftest import ROUNDS, fail_on
from tiles import run_tilec

INTERFACE = ("tilec reduce --op OP --dtype D --shape AxB --axes a,b --nan P --backend sim "
             "--in FILE --out FILE")


class Reduce:
    def __init__(self, tilec, workdir):
        self.tilec, self.dir, self.n = tilec, workdir, 0

    def run(self, dt, op, nan, shape, axes, x, init=None, extra=(), out_dt=None):
        """Runs one reduction; returns (rc, stdout, stderr, decoded output or None); the
        output is decoded as out_dt (the input's dtype when None)."""
        out_dt = out_dt or dt
        self.n += 1
        inp = os.path.join(self.dir, "r%d.in" % self.n)
        out = os.path.join(self.dir, "r%d.out" % self.n)
        with open(inp, "wb") as f:
            f.write(nm.encode(dt, x))
        args = ["reduce", "--op", op, "--dtype", dt.name, "--shape", "x".join(str(s) for s in shape),
                "--axes", ",".join(str(a) for a in axes), "--nan", nan, "--backend", "sim", "--repeat", "1",
                "--in", inp, "--out", out]
        if init is not None:
            ini = os.path.join(self.dir, "r%d.init" % self.n)
            with open(ini, "wb") as f:
                f.write(nm.encode(dt, init))
            args += ["--accumulate", "--out-init", ini]
        args += list(extra)
        rc, so, se = run_tilec(self.tilec, args)
        kept = tuple(s for d, s in enumerate(shape) if d not in nm_axes(axes, len(shape))) or (1,)
        got = None
        if rc == 0 and os.path.exists(out):
            raw = open(out, "rb").read()
            if len(raw) == int(np.prod(kept)) * out_dt.size:
                got = nm.decode(out_dt, raw, kept)
            else:
                se += "\n--out holds %d bytes, the kept extents %s are %d bytes" % (len(raw), kept, int(np.prod(kept)) * out_dt.size)
                rc = -1
        return rc, so, se, got, " ".join(args)


def nm_axes(axes, rank):
    return sorted(set(a % rank for a in axes))


def require_interface(rc, err, cmd):
    if rc == 2 or "unknown option" in err:
        pytest.fail("tilec reduce refused the command line of the oracle; it must accept %s.\n"
                    "command: %s\nexit %d: %s" % (INTERFACE, cmd, rc, err.strip()), pytrace=False)


def random_shape(rng):
    rank = int(rng.integers(1, 6))
    return cases.shape(rng, int(rng.choice([64, 2000, 30000])), rank=rank)


def check_one(r, problems, dt, op, nan, shape, axes, x, init=None):
    rc, so, se, got, cmd = r.run(dt, op, nan, shape, axes, x, init)
    require_interface(rc, se, cmd)
    if rc != 0 or got is None:
        problems.append("%s\n  exited %d: %s" % (cmd, rc, se.strip()[-2000:]))
        return
    kept = tuple(s for d, s in enumerate(shape) if d not in nm_axes(axes, len(shape)))
    ini = None if init is None else np.asarray(init).reshape(kept)
    want = nm.expected(dt, op, nan, x, axes, ini)
    mism = nm.compare(dt, op, got.reshape(want.shape), want, nm.slice_notes(dt, op, x, axes, ini))
    if mism:
        problems.append("%s\n  %d of %d outputs wrong:\n    %s" % (cmd, len(mism), want.size,
                                                                  "\n    ".join(str(m) for m in mism[:6])))


@pytest.mark.parametrize("combo", cases.COMBOS, ids=["%s-%s-%s" % c for c in cases.COMBOS])
def test_reduce_random(tilec, rng, tmp_path, repro, combo):
    """Random shapes (extents 1, primes, odd), random axis sets, every flavour of data."""
    d, op, nan = combo
    dt = nm.DTYPES[d]
    r = Reduce(tilec, str(tmp_path))
    problems = []
    fl = data.flavours_for(dt, op, nan)
    for i in range(2 * ROUNDS):
        shape = random_shape(rng)
        axes = cases.axes_for(rng, shape)
        x = data.values(rng, dt, shape, fl[(i + int(rng.integers(0, len(fl)))) % len(fl)], axes)
        check_one(r, problems, dt, op, nan, shape, axes, x)
    fail_on(problems, repro)


WIDE = {"f16": "f32", "bf16": "f32", "f32": "f64", "i32": "i64", "u32": "i64"}  # docs/runtime.md


@pytest.mark.parametrize("combo", [c for c in cases.COMBOS if c[0] in WIDE], ids=["%s-%s-%s" % c for c in cases.COMBOS if c[0] in WIDE])
def test_reduce_out_dtype(tilec, rng, tmp_path, repro, combo):
    """--out-dtype: the wider output, accumulated in it, is the reduction of the same values
    in the wide type (so an i32 sum past 2^31 is exact and an f16 sum is not rounded to f16)."""
    d, op, nan = combo
    dt, wide = nm.DTYPES[d], nm.DTYPES[WIDE[d]]
    r = Reduce(tilec, str(tmp_path))
    problems = []
    fl = data.flavours_for(dt, op, nan)
    for i in range(ROUNDS):
        shape = random_shape(rng)
        axes = cases.axes_for(rng, shape)
        x = data.values(rng, dt, shape, fl[(i + int(rng.integers(0, len(fl)))) % len(fl)], axes)
        rc, so, se, got, cmd = r.run(dt, op, nan, shape, axes, x, extra=("--out-dtype", wide.name), out_dt=wide)
        require_interface(rc, se, cmd)
        if rc != 0 or got is None:
            problems.append("%s\n  exited %d: %s" % (cmd, rc, se.strip()[-2000:]))
            continue
        want = nm.expected(wide, op, nan, x, axes)
        mism = nm.compare(wide, op, got.reshape(want.shape), want, nm.slice_notes(wide, op, x, axes, None))
        if mism:
            problems.append("%s\n  %d of %d outputs wrong:\n    %s" % (cmd, len(mism), want.size,
                                                                      "\n    ".join(str(m) for m in mism[:6])))
    fail_on(problems, repro)


@pytest.mark.parametrize("combo", [c for c in cases.COMBOS if (c[1] != "sum" or c[0] in ("f32", "i32", "u32"))
                                   and c[1] not in nm.NO_ACCUM],
                         ids=lambda c: "%s-%s-%s" % c)
def test_reduce_accumulate(tilec, rng, tmp_path, repro, combo):
    """--accumulate: out = op(out_old, reduction), the old values from the oracle."""
    d, op, nan = combo
    dt = nm.DTYPES[d]
    r = Reduce(tilec, str(tmp_path))
    shape = (7, 33)
    x = data.values(rng, dt, shape, "nan_slices" if nan == "ignore" else data.flavours_for(dt, op, nan)[1], (1,))
    # plain --in/--out first: if that is refused the interface is missing (a failure)
    rc, so, se, got, cmd = r.run(dt, op, nan, shape, (1,), x)
    require_interface(rc, se, cmd)
    init = data.values(rng, dt, (7,), "specials" if dt.is_float else "extremes")
    rc, so, se, got, cmd = r.run(dt, op, nan, shape, (1,), x, init)
    problems = []
    if rc != 0 or got is None:
        problems.append("%s\n  exited %d: %s" % (cmd, rc, se.strip()[-2000:]))
    else:
        want = nm.expected(dt, op, nan, x, (1,), init)
        mism = nm.compare(dt, op, got, want, nm.slice_notes(dt, op, x, (1,), init))
        if mism:
            problems.append("%s\n  %d of 7 outputs wrong:\n    %s"
                            % (cmd, len(mism), "\n    ".join(str(m) for m in mism[:7])))
    fail_on(problems, repro)


EXTENT1 = [((5, 1), (1,)), ((1, 7), (0,)), ((1,), (0,)), ((3, 1, 4), (1,)), ((3, 1, 4), (1, 2)), ((1, 1), (0, 1))]


@pytest.mark.parametrize("d", nm.FLOATS)
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("nan", ["ignore", "propagate"])
def test_reduce_nan_over_extent1_axes(tilec, rng, tmp_path, repro, d, op, nan):
    """A reduction over an extent-1 axis copies its one element — a NaN
    stays NaN under either policy (an all-NaN slice of one); the plan drops extent-1 dims,
    which must not turn the NaN into the identity. Also all-NaN rows of longer slices."""
    dt = nm.DTYPES[d]
    r = Reduce(tilec, str(tmp_path))
    problems = []
    for shape, axes in EXTENT1 + [((4, 9), (1,)), ((9, 4), (0,)), ((2, 3, 5), (0, 2))]:
        x = data.values(rng, dt, shape, "nan_slices", axes)
        check_one(r, problems, dt, op, nan, shape, axes, x)
    fail_on(problems, repro)


def test_reduce_grid_variants(tilec, rng, tmp_path, repro):
    """Shapes that reach each grid variant of tilec_reduce (docs/dispatch.md), f32 and f16
    sums and maxima with NaN / inf / subnormals in them."""
    r = Reduce(tilec, str(tmp_path))
    problems = []
    shapes = [((2, 40000), (1,)), ((64, 5000), (1,)), ((300, 37), (1,)), ((500, 64), (0,)), ((3, 40, 5), (0, 2)),
              ((100003,), (0,)), ((7, 1, 9, 11), (0, 3))]
    for d in ("f32", "f16", "bf16", "f64", "i64"):
        dt = nm.DTYPES[d]
        for op in ("sum", "max"):
            for shape, axes in shapes:
                fl = "specials" if dt.is_float else "extremes"
                x = data.values(rng, dt, shape, fl, axes)
                check_one(r, problems, dt, op, "propagate", shape, axes, x)
    fail_on(problems, repro)


# (shape, element strides, axes): transposes, slices with steps, negative strides,
# broadcasts (stride 0), channels-last, overlapping windows
STRIDED = [((30, 20), (1, 30), (1,)), ((30, 20), (1, 30), (0,)), ((6, 7, 8), (8, 48, 1), (0, 2)),
           ((25, 14), (84, 3), (1,)), ((25, 14), (-14, 1), (0,)), ((25, 14), (14, -1), (1,)), ((25, 14), (14, -1), (0,)),
           ((4, 25, 14), (0, 14, 1), (0,)), ((4, 25, 14), (0, 14, 1), (1, 2)), ((600, 7), (-7, 1), (0,)),
           ((3, 5, 4, 11), (1, 132, 33, 3), (0, 2)), ((40, 5), (1, 1), (1,)), ((2, 9000), (1, 2), (1,))]


@pytest.mark.parametrize("d", ["f32", "f16", "bf16", "f64", "i32", "u32", "i64"])
def test_reduce_strided(tilec, rng, tmp_path, repro, d):
    """--strides (docs/runtime.md, "Strided inputs"): the view's memory goes to --in, from
    its lowest element; numpy's as_strided view of that memory is the oracle's input."""
    dt = nm.DTYPES[d]
    r = Reduce(tilec, str(tmp_path))
    problems = []
    for shape, strides, axes in STRIDED:
        lo = sum((e - 1) * s for e, s in zip(shape, strides) if s < 0)
        hi = sum((e - 1) * s for e, s in zip(shape, strides) if s > 0)
        span, origin = hi - lo + 1, -lo
        for op in ("sum", "max", "min"):
            fl = ("specials" if op != "sum" else "normal") if dt.is_float else "extremes"
            mem = np.asarray(data.values(rng, dt, (span,), fl, (0,)))
            view = np.lib.stride_tricks.as_strided(mem[origin:], shape=shape,
                                                   strides=[st * mem.itemsize for st in strides])
            rc, so, se, got, cmd = r.run(dt, op, "propagate", shape, axes, mem,
                                         extra=["--strides", ",".join(str(st) for st in strides)])
            require_interface(rc, se, cmd)
            if rc != 0 or got is None:
                problems.append("%s\n  exited %d: %s" % (cmd, rc, se.strip()[-2000:]))
                continue
            x = np.array(view)  # a copy: the materialized view
            want = nm.expected(dt, op, "propagate", x, axes)
            mism = nm.compare(dt, op, got.reshape(want.shape), want, nm.slice_notes(dt, op, x, axes, None))
            if mism:
                problems.append("%s\n  %d of %d outputs wrong:\n    %s" % (cmd, len(mism), want.size,
                                                                          "\n    ".join(str(m) for m in mism[:6])))
    fail_on(problems, repro)


def test_reduce_check_accepts_f32_overflow(tilec, tmp_path, repro):
    """f32 overflow judged in the accumulation type, through tilec_reduce_check: `tilec reduce --check` on
    [3e38, 3e38, -inf] must accept whichever of NaN and -inf the kernel gives."""
    dt = nm.DTYPES["f32"]
    big = float(np.float32(3e38))
    x = np.array([[big, big, -math.inf], [big, -math.inf, big]])
    r = Reduce(tilec, str(tmp_path))
    rc, so, se, got, cmd = r.run(dt, "sum", "propagate", (2, 3), (1,), x, extra=["--check"])
    require_interface(rc, se, cmd)
    problems = []
    if got is None:
        problems.append("%s\n  exited %d (no output): %s%s" % (cmd, rc, so, se))
    else:
        for i in range(2):
            spec = nm.SumSpec(x[i], dt)
            if not spec.accepts(float(got[i])):
                problems.append("row %d: got %s, want %s" % (i, nm.fmt_value(float(got[i])), spec.describe()))
    if rc != 0:
        problems.append("%s\n  exited %d: --check rejected a result of f32 accumulation:\n%s%s" % (cmd, rc, so, se))
    fail_on(problems, repro)


def test_reduce_empty_axis(tilec, tmp_path, repro):
    """docs/runtime.md: a sum over an empty axis writes 0; max/min over one is an error."""
    r = Reduce(tilec, str(tmp_path))
    dt = nm.DTYPES["f32"]
    rc, so, se, got, cmd = r.run(dt, "sum", "propagate", (3, 0), (1,), np.zeros((3, 0)))
    require_interface(rc, se, cmd)
    problems = []
    if got is None or not (got == 0).all():
        problems.append("%s: exit %d, output %s; want three zeros: %s" % (cmd, rc, got, se))
    rc, so, se, got, cmd = r.run(dt, "max", "propagate", (3, 0), (1,), np.zeros((3, 0)))
    if rc != 1:
        problems.append("%s: exit %d, want 1 (max over an empty axis is an error): %s" % (cmd, rc, se))
    fail_on(problems, repro)
