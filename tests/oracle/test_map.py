"""The map statement (docs/format.md, "Elementwise statements") on the simulator against
numpy: `tilec run --backend sim` on .tile programs, the expected values from numpy and
exact rationals (numerics.py) alone.

Every operator and every cast at each dtype it is defined on, on data with +-0, +-inf,
NaN, subnormals, the largest values and the integer extremes, at warp sizes 32 and 64; the
scopes (cta, warp, thread), destinations in global, shared, local memory and a fragment,
operands broadcast as [R, 1] and [C], shapes with odd extents and extents of 1. Results
must be bit for bit (a NaN matches any NaN), except exp, exp2, log and log2, which must be
within the 1 ulp the format states (of the compute type, plus the destination's rounding
where that is narrower), against numpy in long double.

Many statements run in one program: a row of an output each (O[k]), so a file is one run.
"""
import math
import os
import re
from fractions import Fraction

import numpy as np
import pytest

import numerics as nm
from conftest import fail_on
from tiles import run_tilec

N = 72  # elements a row: 16-byte vectors of every dtype (8 bf16, 4 f32, 2 f64) fill it
FLOAT_OPS = ["A + B", "A - B", "A * B", "A / B", "max(A, B)", "min(A, B)", "-A", "abs(A)", "exp(A)", "exp2(A)",
             "log(A)", "log2(A)", "sqrt(A)", "rsqrt(A)", "fma(A, B, C)", "where(C, A, B)", "eq(A, B)", "ne(A, B)",
             "lt(A, B)", "le(A, B)", "gt(A, B)", "ge(A, B)", "A * 3 - 0.5", "add(sub(A, B), mul(B, C)) / 7"]
INT_OPS = ["A + B", "A - B", "A * B", "max(A, B)", "min(A, B)", "-A", "abs(A)", "where(C, A, B)", "eq(A, B)",
           "ne(A, B)", "lt(A, B)", "le(A, B)", "gt(A, B)", "ge(A, B)", "A * 3 - 1"]
ULP_OPS = {"exp(A)", "exp2(A)", "log(A)", "log2(A)"}
DTYPES = ["f32", "f16", "bf16", "f64", "i32", "u32", "i64"]


def compute_type(d):
    return {"f16": np.float32, "bf16": np.float32, "f32": np.float32, "f64": np.float64}.get(d)


def values(rng, d, n):
    """n values of dtype d: specials first (each at least once), then random ones."""
    dt = nm.DTYPES[d]
    if dt.is_float:
        f = dt.fmt
        sp = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, 2.0, float(f.min_sub), -float(f.min_sub),
              float(f.min_normal), float(f.max), -float(f.max), 3.0, -7.25, 1e-3, 100.0, 88.5, -103.0, 1000.0,
              9.21e18, -9.22e18]  # i64 holds these (below 2^63 in magnitude): converted, not saturated
        v = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)
        k = min(n, len(sp))
        v[:k] = rng.permutation(sp)[:k] if n < len(sp) else sp
        return nm.quantize(dt, v)[0]
    lo, hi = dt.lo, dt.hi
    sp = [lo, hi, 0, -1 if dt.signed else 1, 1, lo + 1, hi - 1, 7, 3]
    r = [int(x) for x in rng.integers(-1000 if dt.signed else 0, 1000, n)]
    k = min(n, len(sp))
    r[:k] = sp[:k]
    return np.array(r, dtype=object)


def write(path, d, v):
    with open(path, "wb") as f:
        f.write(nm.encode(nm.DTYPES[d], v))


def read(path, d, shape):
    with open(path, "rb") as f:
        return nm.decode(nm.DTYPES[d], f.read(), shape)


def to_dtype(d, x):
    """A float64 value rounded once to float dtype d (ties to even), as the format stores."""
    if math.isnan(x) or math.isinf(x):
        return x
    return nm.round_exact(Fraction(x), nm.DTYPES[d].fmt, negative_zero=math.copysign(1, x) < 0)


def convert(x, src, d):
    """A cast (docs/format.md): x a value of compute type of src (a float, or a Python int)."""
    dt = nm.DTYPES[d]
    if dt.is_float:
        if isinstance(x, int):
            return nm.round_exact(Fraction(x), dt.fmt)
        return to_dtype(d, x)
    if not isinstance(x, int):  # float to integer: toward zero, saturating, NaN to 0
        if math.isnan(x):
            return 0
        if math.isinf(x):
            return dt.hi if x > 0 else dt.lo
        return max(dt.lo, min(dt.hi, math.trunc(x)))
    m = x % (1 << dt.bits)  # modulo 2^bits
    return m - (1 << dt.bits) if dt.signed and m > dt.hi else m


def fmax(a, b, is_max):
    """The format's max and min: NaN if either is; -0 below +0."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b:
        neg = (math.copysign(1, a) < 0, math.copysign(1, b) < 0)
        return a if (neg[0] and neg[1]) or (not neg[0] and not neg[1]) else (abs(a) if is_max else -abs(a))
    return max(a, b) if is_max else min(a, b)


def fma_exact(a, b, c, ct):
    if not all(math.isfinite(x) for x in (a, b, c)):
        with np.errstate(all="ignore"):
            return float(ct(np.float64(a) * np.float64(b) + np.float64(c)))
    q = Fraction(a) * Fraction(b) + Fraction(c)
    if q == 0:  # an exact zero: -0 only when the product and the addend are both -0 or negative zeros
        neg = (math.copysign(1, a) * math.copysign(1, b) < 0) and math.copysign(1, c) < 0
        return -0.0 if neg and a * b == 0 and c == 0 else 0.0
    return nm.round_exact(q, nm.F32 if ct is np.float32 else nm.F64)


def expected_float(op, a, b, c, ct):
    """Element results in the compute type ct (np.float32 / np.float64), as float64."""
    A, B, C = (x.astype(ct) for x in (a, b, c))
    with np.errstate(all="ignore"):
        if op in ("exp(A)", "exp2(A)", "log(A)", "log2(A)"):
            fn = {"exp(A)": np.exp, "exp2(A)": np.exp2, "log(A)": np.log, "log2(A)": np.log2}[op]
            return fn(a.astype(np.longdouble))  # compared within 1 ulp
        r = {
            "A + B": lambda: A + B, "A - B": lambda: A - B, "A * B": lambda: A * B, "A / B": lambda: A / B,
            "-A": lambda: -A, "abs(A)": lambda: np.abs(A), "sqrt(A)": lambda: np.sqrt(A),
            "rsqrt(A)": lambda: ct(1) / np.sqrt(A),
            "A * 3 - 0.5": lambda: A * ct(3) - ct(0.5),
            "add(sub(A, B), mul(B, C)) / 7": lambda: ((A - B) + (B * C)) / ct(7),
        }.get(op)
        if r:
            return r().astype(np.float64)
    out = []
    for x, y, z in zip(A.tolist(), B.tolist(), C.tolist()):
        if op in ("max(A, B)", "min(A, B)"):
            out.append(fmax(x, y, op.startswith("max")))
        elif op == "fma(A, B, C)":
            out.append(fma_exact(x, y, z, ct))
        elif op == "where(C, A, B)":
            out.append(x if z != 0 or math.isnan(z) else y)
        else:
            cmp = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[op[:2]]
            out.append(1.0 if cmp else 0.0)
    return np.array(out)


def expected_int(op, a, b, c, d):
    dt = nm.DTYPES[d]
    w = lambda x: convert(x, d, d)  # noqa: E731  (wraps modulo 2^bits)
    out = []
    for x, y, z in zip(a, b, c):
        x, y, z = int(x), int(y), int(z)
        r = {"A + B": lambda: w(x + y), "A - B": lambda: w(x - y), "A * B": lambda: w(x * y),
             "max(A, B)": lambda: max(x, y), "min(A, B)": lambda: min(x, y), "-A": lambda: w(-x),
             "abs(A)": lambda: w(abs(x)), "where(C, A, B)": lambda: x if z != 0 else y,
             "A * 3 - 1": lambda: w(w(x * 3) - 1)}.get(op)
        if r:
            out.append(r())
        else:
            out.append(int({"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[op[:2]]))
    assert all(dt.lo <= v <= dt.hi for v in out)
    return out


def ulp(fmt, x):
    """One ulp of |x| in format fmt (the smallest subnormal's at least)."""
    x = abs(float(x))
    if x == 0 or not math.isfinite(x):
        return float(fmt.min_sub)
    e = max(math.frexp(x)[1] - 1, fmt.emin)
    return math.ldexp(1.0, e - fmt.p + 1)


def same(g, w):
    if isinstance(w, int) or isinstance(g, int):
        return int(g) == int(w)
    if math.isnan(w) or math.isnan(g):
        return math.isnan(w) and math.isnan(g)
    return g == w and math.copysign(1, g) == math.copysign(1, w)


def within_ulp(g, w_ld, d, ct):
    """exp/exp2/log/log2: 1 ulp of the compute type, plus the destination's own rounding."""
    fmt = nm.DTYPES[d].fmt
    cfmt = nm.F32 if ct is np.float32 else nm.F64
    w = float(w_ld)
    if math.isnan(w) or math.isnan(g):
        return math.isnan(w) and math.isnan(g)
    top = float(fmt.max)
    if math.isinf(g) or math.isinf(w) or abs(w) > top:
        return (g == w) or (abs(g) >= top and math.copysign(1, g) == math.copysign(1, w)) or \
            (math.isinf(g) and abs(w) + ulp(cfmt, w) + ulp(fmt, w) >= top)
    bound = ulp(cfmt, w) + (ulp(fmt, w) if fmt is not cfmt else 0)
    return abs(np.longdouble(g) - np.longdouble(w_ld)) <= np.longdouble(bound)


def ops_program(ws):
    """One kernel per dtype: O<d>[k] = op k of A, B, C; and one of every cast."""
    text = []
    for d in DTYPES:
        ops = FLOAT_OPS if nm.DTYPES[d].is_float else INT_OPS
        text.append("kernel ops_%s(A%s: %s[%d] global, B%s: %s[%d] global, C%s: %s[%d] global, O%s: %s[%d, %d] global) "
                    "threads=64 {" % (d, d, d, N, d, d, N, d, d, N, d, d, len(ops), N))
        for k, op in enumerate(ops):
            e = re.sub(r"\b([ABC])\b", r"\g<1>" + d, op)
            text.append("  cta.map(O%s[%d], %s)" % (d, k, e))
        text.append("}")
    params = ", ".join("F%s: %s[%d] global" % (d, d, N) for d in DTYPES)
    outs = ", ".join("T%s: %s[%d, %d] global" % (d, d, 2 * len(DTYPES), N) for d in DTYPES)
    text.append("kernel casts(%s, %s) threads=%d {" % (params, outs, ws))
    for i, s in enumerate(DTYPES):
        for d in DTYPES:
            text.append("  cta.map(T%s[%d], %s(F%s))" % (d, i, d, s))  # an explicit cast
            text.append("  cta.map(T%s[%d], F%s)" % (d, len(DTYPES) + i, s))  # the store's conversion
    text.append("}")
    return "\n".join(text) + "\n"


@pytest.mark.parametrize("ws", [32, 64])
def test_every_op_and_cast(tilec, rng, tmp_path, repro, ws):
    d_ = str(tmp_path)
    tf = os.path.join(d_, "ops.tile")
    with open(tf, "w") as f:
        f.write(ops_program(ws))
    args = ["run", "--backend=sim", "--warp-size=%d" % ws, tf]
    data = {}
    for d in DTYPES:
        for x in "ABCF":
            v = values(rng, d, N)
            if x == "C" and nm.DTYPES[d].is_float:
                v[rng.random(N) < 0.3] = 0.0  # where's condition is often false
            data[x + d] = v
            write(os.path.join(d_, x + d), d, v)
            args.append("--in=%s%s=%s" % (x, d, os.path.join(d_, x + d)))
        args += ["--out=O%s=%s" % (d, os.path.join(d_, "O" + d)), "--out=T%s=%s" % (d, os.path.join(d_, "T" + d))]
    rc, so, se = run_tilec(tilec, args)
    assert rc == 0, se + so
    problems = []
    for d in DTYPES:
        dt = nm.DTYPES[d]
        ops = FLOAT_OPS if dt.is_float else INT_OPS
        got = read(os.path.join(d_, "O" + d), d, (len(ops), N))
        a, b, c = data["A" + d], data["B" + d], data["C" + d]
        for k, op in enumerate(ops):
            if dt.is_float:
                ct = compute_type(d)
                want = expected_float(op, a, b, c, ct)
                for j in range(N):
                    g = float(got[k, j])
                    if op in ULP_OPS:
                        ok = within_ulp(g, want[j], d, ct)
                    else:
                        ok = same(g, to_dtype(d, float(want[j])))
                    if not ok:
                        problems.append("%s %s: A=%r B=%r C=%r: got %r, want %r" % (d, op, a[j], b[j], c[j], g, want[j]))
            else:
                want = expected_int(op, a, b, c, d)
                for j in range(N):
                    if int(got[k, j]) != want[j]:
                        problems.append("%s %s: A=%r B=%r C=%r: got %r, want %r" % (d, op, a[j], b[j], c[j], got[k, j], want[j]))
    for d in DTYPES:
        got = read(os.path.join(d_, "T" + d), d, (2 * len(DTYPES), N))
        for i, s in enumerate(DTYPES):
            src_ct = compute_type(s)
            for j in range(N):
                x = data["F" + s][j]
                x = float(src_ct(x)) if nm.DTYPES[s].is_float else int(x)
                want = convert(x, s, d)
                for row, how in ((i, "%s(F%s)" % (d, s)), (len(DTYPES) + i, "store of F%s" % s)):
                    if not same(got[row, j] if nm.DTYPES[d].is_float else int(got[row, j]), want):
                        problems.append("cast %s -> %s (%s): %r: got %r, want %r" % (s, d, how, x, got[row, j], want))
    fail_on(problems, repro)



def rounded(d, arr):
    """float64 values rounded once to float dtype d, elementwise."""
    return np.array([to_dtype(d, float(x)) for x in np.ravel(arr)]).reshape(np.shape(arr))


def f32(x):
    with np.errstate(all="ignore"):
        return np.asarray(x, dtype=np.float64).astype(np.float32)


class Prog:
    """A .tile file of several kernels, their inputs and the outputs to read back."""

    def __init__(self, d):
        self.dir, self.text, self.args, self.inputs, self.outs, self.checks = d, [], [], {}, [], []

    def input(self, rng, name, dt, shape):
        n = int(np.prod(shape))
        v = values(rng, dt, n)
        v = v[rng.permutation(n)].reshape(shape)
        path = os.path.join(self.dir, name)
        write(path, dt, v)
        self.args.append("--in=%s=%s" % (name, path))
        self.inputs[name] = v
        return v

    def output(self, name, dt, shape, want, note):
        self.args.append("--out=%s=%s" % (name, os.path.join(self.dir, name)))
        self.outs.append((name, dt, shape, want, note))

    def run(self, tilec, ws):
        tf = os.path.join(self.dir, "shapes.tile")
        with open(tf, "w") as f:
            f.write("\n".join(self.text) + "\n")
        rc, so, se = run_tilec(tilec, ["run", "--backend=sim", "--warp-size=%d" % ws, tf] + self.args)
        assert rc == 0, se + so + "\n".join(self.text)
        problems = []
        for name, dt, shape, want, note in self.outs:
            got = read(os.path.join(self.dir, name), dt, shape)
            for idx in np.ndindex(*shape):
                g, w = got[idx], want[idx]
                ok = within_ulp(float(g), w, dt, np.float32) if isinstance(w, np.longdouble) else \
                    same(g if nm.DTYPES[dt].is_float else int(g), w if nm.DTYPES[dt].is_float else int(w))
                if not ok:
                    problems.append("%s (%s) at %s: got %r, want %r" % (name, note, idx, g, w))
        return problems


def dims(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


@pytest.mark.parametrize("ws", [32, 64])
def test_scopes_memories_broadcasts(tilec, rng, tmp_path, repro, ws):
    P = Prog(str(tmp_path))
    R, C = int(rng.choice([1, 2, 3, 5, 8])), int(rng.choice([1, 3, 17, 64, 65]))
    threads = 2 * ws
    W = threads // ws
    # global to global, cta: a bf16 result of a row statistic [R, 1], a column vector [C]
    # and the element's column (vectors of 8 where the row is a multiple of 8)
    x = P.input(rng, "X1", "f32", (R, C))
    m = P.input(rng, "M1", "f32", (R, 1))
    w = P.input(rng, "W1", "bf16", (C,))
    P.text.append("kernel glob(X1: f32%s global, M1: f32[%d, 1] global, W1: bf16[%d] global, Y1: bf16%s global) "
                  "threads=%d {\n  cta.map(Y1, bf16(X1 * M1) * W1 + f32(index(1)))\n}" % (dims((R, C)), R, C, dims((R, C)), threads))
    with np.errstate(all="ignore"):
        t = f32(rounded("bf16", f32(f32(x) * f32(m)).astype(np.float64))) * f32(w) + f32(np.arange(C))
    P.output("Y1", "bf16", (R, C), rounded("bf16", t.astype(np.float64)), "cta, global, bf16(X * m) * w + index(1)")
    # shared destination, an f16 shared operand read as f32
    x = P.input(rng, "X2", "f16", (R, C))
    m = P.input(rng, "M2", "f32", (R, 1))
    P.text.append("kernel shared(X2: f16%s global, M2: f32[%d, 1] global, Y2: f32%s global) threads=%d {\n"
                  "  shared S: f16%s\n  shared T: f32%s\n  cta.copy(S, X2)\n  cta.sync()\n"
                  "  cta.map(T, (S - M2) * 2)\n  cta.sync()\n  cta.copy(Y2, T)\n}"
                  % (dims((R, C)), R, dims((R, C)), threads, dims((R, C)), dims((R, C))))
    with np.errstate(all="ignore"):
        P.output("Y2", "f32", (R, C), ((f32(x) - f32(m)) * np.float32(2)).astype(np.float64), "cta, shared, (S - m) * 2")
    # warp scope, each warp its slice, a [C] operand
    x = P.input(rng, "X3", "f32", (W, R, C))
    w = P.input(rng, "W3", "f32", (C,))
    P.text.append("kernel warps(X3: f32%s global, W3: f32[%d] global, Y3: f32%s global) threads=%d {\n"
                  "  warp.map(Y3[warp_id], max(X3[warp_id], W3))\n}" % (dims((W, R, C)), C, dims((W, R, C)), threads))
    P.output("Y3", "f32", (W, R, C), np.vectorize(lambda a, b: fmax(a, b, True))(x, np.broadcast_to(w, x.shape)),
             "warp, max(X, w)")
    # thread scope, f64, an extent-1 operand broadcast along the row
    x = P.input(rng, "X4", "f64", (threads, C))
    m = P.input(rng, "M4", "f64", (threads, 1))
    P.text.append("kernel threads(X4: f64[%d, %d] global, M4: f64[%d, 1] global, Y4: f64[%d, %d] global) threads=%d {\n"
                  "  thread.map(Y4[thread_id], X4[thread_id] / M4[thread_id])\n}" % (threads, C, threads, threads, C, threads))
    with np.errstate(all="ignore"):
        P.output("Y4", "f64", (threads, C), x / m, "thread, X / m")
    # local destinations: a thread's own array, and a warp's (every lane its copy)
    x = P.input(rng, "X5", "i32", (threads, C))
    P.text.append("kernel locals(X5: i32[%d, %d] global, Y5: i32[%d, %d] global, Z5: f32[%d, %d] global) threads=%d {\n"
                  "  local L: i32[%d]\n  local F: f32[%d]\n  thread.map(L, X5[thread_id] * 3 + i32(index(0)))\n"
                  "  thread.copy(Y5[thread_id], L)\n  warp.map(F, f32(X5[warp_id]) + 1)\n  thread.copy(Z5[thread_id], F)\n}"
                  % (threads, C, threads, C, threads, C, threads, C, C))
    P.output("Y5", "i32", (threads, C),
             np.array([[convert(int(x[i, j]) * 3 + j, "i64", "i32") for j in range(C)] for i in range(threads)], dtype=object),
             "thread, local, X * 3 + index(0)")
    P.output("Z5", "f32", (threads, C),
             np.array([[float(np.float32(convert(int(x[i // ws, j]), "i32", "f32")) + np.float32(1)) for j in range(C)]
                       for i in range(threads)]), "warp, local, f32(X[warp_id]) + 1")
    # in place, in shared memory
    x = P.input(rng, "X6", "f32", (R, C))
    P.text.append("kernel inplace(X6: f32%s global, Y6: f32%s global) threads=%d {\n  shared S6: f32%s\n"
                  "  cta.copy(S6, X6)\n  cta.sync()\n  cta.map(S6, S6 * S6 - 1)\n  cta.sync()\n  cta.copy(Y6, S6)\n}"
                  % (dims((R, C)), dims((R, C)), threads, dims((R, C))))
    with np.errstate(all="ignore"):
        P.output("Y6", "f32", (R, C), (f32(x) * f32(x) - np.float32(1)).astype(np.float64), "in place, S * S - 1")
    # gathers beside operands read in vectors (f32 rows of 64: vectors of 4): a table's row
    # picked by the row's index (a split row's weight chunk), a statistic picked by it (one
    # value along the row) and the row read backwards (an index that varies along it); an
    # index out of range reads NaN
    K, C8 = 3, int(rng.choice([C, 64]))
    x = P.input(rng, "X8", "bf16", (R, C8))
    wt = P.input(rng, "W8", "f32", (K, C8))
    lt = P.input(rng, "L8", "f32", (K, 1))
    t = rng.integers(0, K, size=(R, 1)).astype(np.int64)
    t[rng.integers(0, R), 0] = int(rng.choice([-1, K]))  # one row's index out of range
    write(os.path.join(P.dir, "T8"), "i64", t)
    P.args.append("--in=T8=%s" % os.path.join(P.dir, "T8"))
    P.text.append("kernel gathers(X8: bf16%s global, W8: f32[%d, %d] global, L8: f32[%d, 1] global, T8: i64[%d, 1] global, "
                  "Y8: f32%s global) threads=%d {\n  cta.map(Y8, f32(X8) * gather(W8, 0, T8) + gather(L8, 0, T8) - "
                  "gather(X8, 1, %d - index(1)))\n}" % (dims((R, C8)), K, C8, K, R, dims((R, C8)), threads, C8 - 1))
    want = np.full((R, C8), np.nan)
    with np.errstate(all="ignore"):
        for r in range(R):
            k = int(t[r, 0])
            if 0 <= k < K:
                a = f32(f32(x[r]) * f32(wt[k]))
                want[r] = f32(f32(a + f32(lt[k, 0])) - f32(x[r, ::-1])).astype(np.float64)
    P.output("Y8", "f32", (R, C8), want, "gathers beside vectors: X * gather(W, 0, T) + gather(L, 0, T) - X reversed")
    if ws == 32:  # a fragment destination (fragment layouts are of warps of 32 lanes)
        s = P.input(rng, "S7", "f32", (16, 64))
        m = P.input(rng, "M7", "f32", (16, 1))
        w = P.input(rng, "W7", "f32", (64,))
        P.text.append("kernel frag(S7: f32[16, 64] global, M7: f32[16, 1] global, W7: f32[64] global, Y7: f32[16, 64] global) "
                      "threads=32 {\n  local S: f32[16, 64] layout=mma_m16n8k16_c\n"
                      "  local m: f32[16, 1] layout=linear(reg=((8, 0)), lane=((0, 0), (0, 0), (1, 0), (2, 0), (4, 0)))\n"
                      "  warp.copy(S, S7)\n  warp.copy(m, M7)\n  warp.map(S, S - m)\n  warp.map(S, max(S, W7) * 2)\n"
                      "  warp.copy(Y7, S)\n}")
        with np.errstate(all="ignore"):
            d = f32(s) - f32(m)
            want = np.vectorize(lambda a, b: fmax(a, b, True))(d.astype(np.float64), np.broadcast_to(w, d.shape))
            P.output("Y7", "f32", (16, 64), (f32(want) * np.float32(2)).astype(np.float64),
                     "fragment, S - m (a row statistic's fragment), then max(S, w) * 2")
    fail_on(P.run(tilec, ws), repro)


ACCURACY_POINTS = 4096


def spread(rng, d, op, n):
    """Arguments over the whole range where the result is finite and beyond: exp's from
    below its underflow to 0 (subnormal results on the way) to past its overflow; log's
    of every binade (subnormals included); and the specials."""
    dt = nm.DTYPES[d]
    if op.startswith("exp"):
        lo, hi = (-1080.0, 1030.0) if d == "f64" else (-160.0, 130.0)
        if op == "exp":
            lo, hi = lo * 0.6931471805599453, hi * 0.6931471805599453
        v = np.concatenate([rng.uniform(lo, hi, n // 2), rng.uniform(-1, 1, n // 4), rng.uniform(-20, 20, n - n // 2 - n // 4)])
    else:
        e = rng.uniform(float(dt.fmt.emin - dt.fmt.p), dt.fmt.emax + 1, n)
        v = np.exp2(e) * np.where(rng.random(n) < 0.03, -1, 1)
        v[: n // 4] = rng.uniform(0.5, 2.0, n // 4)  # about 1, where log is smallest
    v[:8] = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, float(dt.fmt.min_sub), float(dt.fmt.max)]
    return nm.quantize(dt, v)[0]


# (name, the map's expression of X, the function of the argument, the upper bound it takes
# before it) -- an exponential of min(x, c) with c <= 64 scales once (format.md, "exp of an
# argument bounded above")
ACCURACY_OPS = [
    ("exp", "exp(X)", "exp", None), ("exp2", "exp2(X)", "exp2", None), ("log", "log(X)", "log", None),
    ("log2", "log2(X)", "log2", None), ("exp_le0", "exp(min(X, 0))", "exp", 0.0),
    ("exp_le64", "exp(min(64, X))", "exp", 64.0), ("exp2_le0", "exp2(min(X, 0))", "exp2", 0.0),
    ("exp2_le64", "exp2(min(X, 64))", "exp2", 64.0), ("exp_le100", "exp(min(X, 100))", "exp", 100.0),
]
# the bounded ones again with the bound hidden from the map (min(x, c) * 1 is min(x, c), but
# its form shows no bound): they scale twice, and must give the same bits
TWINS = {"exp_le0": "exp(min(X, 0) * 1)", "exp_le64": "exp(min(64, X) * 1)", "exp2_le0": "exp2(min(X, 0) * 1)",
         "exp2_le64": "exp2(min(X, 64) * 1)"}


def test_exp_log_accuracy(tilec, rng, tmp_path, repro):
    """exp, exp2, log and log2 of f32 and f64 within 1 ulp of numpy's long double values,
    over their whole ranges: subnormal and zero results, overflow to inf, the specials; an
    exponential of an argument bounded above by min(x, c) too, with the same bits whether
    the map sees the bound (and scales once) or not."""
    d_ = str(tmp_path)
    n = ACCURACY_POINTS
    ops = ACCURACY_OPS
    rows = len(ops) + len(TWINS)
    text, args, inputs = [], [], {}
    for d in ("f32", "f64"):
        params = ", ".join("X%s%s: %s[%d] global" % (op[0], d, d, n) for op in ops)
        text.append("kernel acc_%s(%s, Y%s: %s[%d, %d] global) threads=256 {" % (d, params, d, d, rows, n))
        for k, (name, expr, fn, bound) in enumerate(ops):
            text.append("  cta.map(Y%s[%d], %s)" % (d, k, expr.replace("X", "X%s%s" % (name, d))))
            v = spread(rng, d, fn, n)
            if bound is not None:  # about the bound too
                v[8:24] = nm.quantize(nm.DTYPES[d], bound + np.linspace(-1, 1, 16))[0]
            inputs[name + d] = v
            write(os.path.join(d_, name + d), d, v)
            args.append("--in=X%s%s=%s" % (name, d, os.path.join(d_, name + d)))
        for k, (name, expr) in enumerate(TWINS.items()):
            text.append("  cta.map(Y%s[%d], %s)" % (d, len(ops) + k, expr.replace("X", "X%s%s" % (name, d))))
        text.append("}")
        args.append("--out=Y%s=%s" % (d, os.path.join(d_, "Y" + d)))
    tf = os.path.join(d_, "acc.tile")
    with open(tf, "w") as f:
        f.write("\n".join(text) + "\n")
    rc, so, se = run_tilec(tilec, ["run", "--backend=sim", tf] + args)
    assert rc == 0, se + so
    problems = []
    for d in ("f32", "f64"):
        got = read(os.path.join(d_, "Y" + d), d, (rows, n))
        ct = compute_type(d)
        for k, (name, expr, fn, bound) in enumerate(ops):
            x = inputs[name + d]
            a = x if bound is None else np.minimum(x, bound)  # NaN stays NaN
            want = expected_float(fn + "(A)", a, a, a, ct)
            for j in range(n):
                if not within_ulp(float(got[k, j]), want[j], d, ct):
                    problems.append("%s %s at %r: got %r, want %r (1 ulp: %r)" % (d, expr, x[j], got[k, j], want[j],
                                                                                ulp(nm.DTYPES[d].fmt, want[j])))
        bits = got.view(np.uint32 if d == "f32" else np.uint64)
        for k, (name, expr) in enumerate(TWINS.items()):
            once = [i for i, op in enumerate(ops) if op[0] == name][0]
            for j in range(n):
                same = bits[once, j] == bits[len(ops) + k, j] or (math.isnan(got[once, j]) and math.isnan(got[len(ops) + k, j]))
                if not same:
                    problems.append("%s %s at %r: %r, but %r with the bound unseen" % (d, ops[once][1], inputs[name + d][j],
                                                                                   got[once, j], got[len(ops) + k, j]))
    fail_on(problems, repro)


def test_approx_math(tilec, rng, tmp_path, repro):
    """A kernel with math=approx: f32 exp and exp2 (and a bf16 map's, computed in f32) by the
    hardware exponential, which the simulator gives as 2^x rounded to f32 with results below
    2^-126 flushed to +0 (exact math's are subnormal there: the flush shows which ran): within 2^-20 relative of numpy's exp of the f32 argument (exp's
    argument is multiplied by log2(e) in f32 first: |x| 2^-24 more), +0 below 2^-126, +inf
    above the overflow, NaN for NaN; logsumexp's fold uses it too; f64 stays exact (1 ulp)."""
    d_ = str(tmp_path)
    n = ACCURACY_POINTS
    vals = {op: spread(rng, "f32", op, n) for op in ("exp", "exp2")}
    vals["exp"][8:10], vals["exp2"][8:10] = (-100.0, -88.0), (-140.0, -127.5)  # subnormal results, flushed
    v64 = spread(rng, "f64", "exp", n)
    rows = nm.quantize(nm.DTYPES["f32"], rng.standard_normal((16, 1000)) * 30)[0]
    text = ["kernel acc(Xe: f32[%d] global, X2: f32[%d] global, Xd: f64[%d] global, R: f32[16, 1000] global, "
            "Y: f32[2, %d] global, Yd: f64[%d] global, L: f32[16, 1] global) threads=256 math=approx {" % (n, n, n, n, n),
            "  cta.map(Y[0], exp(Xe))", "  cta.map(Y[1], exp2(X2))", "  cta.map(Yd, exp(Xd))",
            "  cta.logsumexp(L, R, axes=(-1))", "}"]
    tf = os.path.join(d_, "acc.tile")
    with open(tf, "w") as f:
        f.write("\n".join(text) + "\n")
    for name, d, v in (("Xe", "f32", vals["exp"]), ("X2", "f32", vals["exp2"]), ("Xd", "f64", v64), ("R", "f32", rows)):
        write(os.path.join(d_, name), d, v)
    args = ["--in=%s=%s" % (k, os.path.join(d_, k)) for k in ("Xe", "X2", "Xd", "R")]
    args += ["--out=%s=%s" % (k, os.path.join(d_, k)) for k in ("Y", "Yd", "L")]
    rc, so, se = run_tilec(tilec, ["run", "--backend=sim", tf] + args)
    assert rc == 0, se + so
    got = read(os.path.join(d_, "Y"), "f32", (2, n))
    problems = []
    with np.errstate(all="ignore"):
        for k, op in enumerate(("exp", "exp2")):
            x = vals[op].astype(np.float64)
            want = np.exp(x) if op == "exp" else np.exp2(x)
            tol = want * (2.0 ** -20 + (np.abs(x) * 2.0 ** -24 if op == "exp" else 0))
            g = got[k].astype(np.float64)
            ok = np.where(np.isnan(want), np.isnan(g),
                 np.where(want > float(np.finfo(np.float32).max) * (1 + 2.0 ** -20), g == np.inf,
                 np.where(want < 2.0 ** -126 * (1 - 2.0 ** -20), g == 0,  # flushed, where exact math keeps subnormals
                          np.abs(g - want) <= tol)))
            ok |= (want > 2.0 ** 127) & ((g == np.inf) | (np.abs(g - want) <= tol))  # at the overflow's edge
            for j in np.flatnonzero(~ok)[:10]:
                problems.append("approx %s(%r): got %r, want %r" % (op, x[j], g[j], want[j]))
    gd = read(os.path.join(d_, "Yd"), "f64", (n,))
    want = expected_float("exp(A)", v64, v64, v64, compute_type("f64"))
    for j in range(n):
        if not within_ulp(float(gd[j]), want[j], "f64", compute_type("f64")):
            problems.append("f64 exp(%r) under math=approx: got %r, want %r (exact, 1 ulp)" % (v64[j], gd[j], want[j]))
    gl = read(os.path.join(d_, "L"), "f32", (16, 1))[:, 0].astype(np.float64)
    r = rows.astype(np.float64)
    m = r.max(axis=1)
    wl = m + np.log(np.exp(r - m[:, None]).sum(axis=1))
    bad = np.abs(gl - wl) > 2.0 ** -18 * (np.abs(wl) + 1)
    for j in np.flatnonzero(bad):
        problems.append("approx logsumexp of row %d: got %r, want %r" % (j, gl[j], wl[j]))
    fail_on(problems, repro)
