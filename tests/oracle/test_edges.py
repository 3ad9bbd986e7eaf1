"""Hand-written vectors whose answers are stated here, literally, from docs/format.md — not
computed by numerics.py (test_oracle_self.py checks that numerics.py agrees with them).
Each runs in every scope kind below and every variant that applies, at both warp sizes.

Where numpy and the format differ, the format decides:
- max/min of -0 and +0: "+0 above -0", so max is +0 and min is -0 in either order
  (np.maximum(-0.0, 0.0) may return either zero);
- integer sums wrap modulo 2^bits (numpy would too for its own type, but a u32 sum in
  numpy's default accumulator is a u64: no wrap);
- f16 sums and products accumulate in f32 and round once (np.sum of a float16 array may
  accumulate in f16 and overflow or lose bits);
- a product's zero has the sign of the product of the signs (np.prod agrees), and integer
  products wrap.
"""
import math

import numpy as np
import pytest

import numerics as nm
from conftest import fail_on
from tiles import VARIANTS, Case, run_cases

NAN = "nan"
INF = math.inf
F32_SUB = 2.0 ** -149
F16_SUB = 2.0 ** -24
BIG = float(np.float32(3e38))  # the f32 nearest 3e38

# (name, dtype, op, nan policy, vector, acceptable results)
VECTORS = [
    ("max of -0, +0", "f32", "max", "propagate", [-0.0, 0.0], [0.0]),
    ("max of +0, -0", "f32", "max", "propagate", [0.0, -0.0], [0.0]),
    ("min of +0, -0", "f32", "min", "propagate", [0.0, -0.0], [-0.0]),
    ("min of -0, +0", "f16", "min", "propagate", [-0.0, 0.0], [-0.0]),
    ("max of -0, -0", "bf16", "max", "propagate", [-0.0, -0.0], [-0.0]),
    ("max of -1, -0, +0, -0", "f64", "max", "propagate", [-1.0, -0.0, 0.0, -0.0], [0.0]),
    ("min of 1, +0, +0", "f64", "min", "propagate", [1.0, 0.0, 0.0], [0.0]),
    ("max of NaN, -0, +0 ignoring NaN", "f32", "max", "ignore", [NAN, -0.0, 0.0], [0.0]),
    ("min of +0, NaN, -0 ignoring NaN", "f64", "min", "ignore", [0.0, NAN, -0.0], [-0.0]),
    ("max with a NaN propagates", "f32", "max", "propagate", [1.0, NAN, 2.0], [NAN]),
    ("min with a NaN ignored", "bf16", "min", "ignore", [1.0, NAN, -2.0], [-2.0]),
    ("max of -inf", "f32", "max", "propagate", [-INF, -INF, -INF], [-INF]),
    ("min of +inf", "f16", "min", "ignore", [INF, INF], [INF]),
    ("max of subnormals", "f32", "max", "propagate", [-F32_SUB, F32_SUB, 0.0], [F32_SUB]),
    ("i32 sum wraps up", "i32", "sum", "propagate", [2147483647, 1], [-2147483648]),
    ("i32 sum wraps down", "i32", "sum", "propagate", [-2147483648, -1], [2147483647]),
    ("i32 sum of extremes", "i32", "sum", "propagate", [2147483647, 2147483647, 2147483647], [2147483645]),
    ("u32 sum wraps", "u32", "sum", "propagate", [4294967295, 1], [0]),
    ("u32 sum of maxima", "u32", "sum", "propagate", [4294967295, 4294967295, 4294967295], [4294967293]),
    ("i64 sum wraps", "i64", "sum", "propagate", [2 ** 63 - 1, 1], [-2 ** 63]),
    ("i64 sum of minima", "i64", "sum", "propagate", [-2 ** 63, -2 ** 63, 5], [5]),
    ("i32 max of extremes", "i32", "max", "propagate", [-2147483648, 2147483647, 0], [2147483647]),
    ("u32 min", "u32", "min", "propagate", [4294967295, 7, 4294967294], [7]),
    ("i64 min", "i64", "min", "propagate", [2 ** 63 - 1, -2 ** 63, 0], [-2 ** 63]),
    # f16 accumulates in f32: 65504 + 65504 - 65504 is 65504 in every order (131008 is an
    # f32); accumulating in f16 would overflow to inf
    ("f16 sum beyond f16 range inside", "f16", "sum", "propagate", [65504.0, 65504.0, -65504.0], [65504.0]),
    # 1 + 2^-11 + 2^-11 is exact in f32 (1 + 2^-10) and an f16; rounding each step to f16
    # would tie back to 1.0 twice
    ("f16 sum rounds once", "f16", "sum", "propagate", [1.0, 2.0 ** -11, 2.0 ** -11], [1.0 + 2.0 ** -10]),
    ("bf16 sum rounds once", "bf16", "sum", "propagate", [1.0, 2.0 ** -8, 2.0 ** -8], [1.0 + 2.0 ** -7]),
    # f16 sums above 65504 (+ half an ulp) round to inf when stored
    ("f16 sum overflows when stored", "f16", "sum", "propagate", [65504.0, 65504.0], [INF]),
    ("f16 subnormal sum", "f16", "sum", "propagate", [F16_SUB] * 5, [5 * F16_SUB]),
    ("f32 subnormal sum", "f32", "sum", "propagate", [F32_SUB, F32_SUB, -F32_SUB, 3 * F32_SUB], [4 * F32_SUB]),
    # f32 overflow: 3e38 + 3e38 (the f32 nearest) overflows in f32, whatever the order
    ("f32 sum overflows", "f32", "sum", "propagate", [BIG, BIG], [INF]),
    # ... then + -inf: NaN; -inf first keeps -inf. Both orders exist.
    ("f32 overflow then -inf", "f32", "sum", "propagate", [BIG, BIG, -INF], [NAN, -INF]),
    ("+inf and -inf", "f64", "sum", "propagate", [INF, 1.0, -INF], [NAN]),
    ("sum with a NaN", "bf16", "sum", "propagate", [1.0, NAN], [NAN]),
    # f64 accumulates in f64: 1e308 + 1e308 overflows
    ("f64 sum overflows", "f64", "sum", "propagate", [1e308, 1e308], [INF]),
    # products: the identity is 1, the sign is the product of the signs in any order
    ("prod of one", "f32", "prod", "propagate", [-3.0], [-3.0]),
    ("prod of -0 and a negative", "f32", "prod", "propagate", [-0.0, -2.0, 5.0], [0.0]),
    ("prod of +0 and a negative", "bf16", "prod", "propagate", [0.0, -2.0, 5.0], [-0.0]),
    ("prod of inf and 0", "f32", "prod", "propagate", [INF, 2.0, 0.0], [NAN]),
    ("prod of -inf", "f64", "prod", "propagate", [-INF, 2.0, 3.0], [-INF]),
    ("prod with a NaN", "f16", "prod", "propagate", [2.0, NAN, 0.0], [NAN]),
    ("prod of powers of two", "f32", "prod", "propagate", [0.5, -4.0, 0.25, 8.0], [-4.0]),
    ("f32 prod overflows", "f32", "prod", "propagate", [BIG, 2.0], [INF]),
    # f16 products accumulate in f32: 320 * 320 passes 65504 inside, and the product is 25
    ("f16 prod beyond f16 range inside", "f16", "prod", "propagate", [320.0, 320.0, 1.0 / 1024, 1.0 / 4], [25.0]),
    ("f16 prod overflows when stored", "f16", "prod", "propagate", [256.0, 256.0], [INF]),
    ("i32 prod wraps", "i32", "prod", "propagate", [65536, 65536, 3], [0]),
    ("i32 prod of extremes", "i32", "prod", "propagate", [-2147483648, -1], [-2147483648]),
    ("u32 prod wraps", "u32", "prod", "propagate", [4294967295, 4294967295], [1]),
    ("i64 prod wraps", "i64", "prod", "propagate", [2 ** 62, 3, -1], [2 ** 62]),
    # sums of squares: each square rounded once, then added; never -0
    ("sumsq of small integers", "f32", "sumsq", "propagate", [3.0, -4.0, 0.0], [25.0]),
    ("sumsq of zeros is +0", "f32", "sumsq", "propagate", [-0.0, -0.0], [0.0]),
    ("sumsq of -inf", "f64", "sumsq", "propagate", [1.0, -INF], [INF]),
    ("sumsq with a NaN", "bf16", "sumsq", "propagate", [NAN, 2.0], [NAN]),
    # 2^64 squared passes f32's range: the square itself overflows
    ("f32 sumsq overflows", "f32", "sumsq", "propagate", [2.0 ** 64, 1.0], [INF]),
    # f16 squares accumulate in f32: 256^2 + 256^2 = 131072 passes 65504 only when stored
    ("f16 sumsq overflows when stored", "f16", "sumsq", "propagate", [256.0, 256.0], [INF]),
    # ... and round once: 1 + 4 * 2^-12 is the f16 1 + 2^-10; rounding each step to f16
    # would tie back to 1 four times
    ("f16 sumsq rounds once", "f16", "sumsq", "propagate", [1.0] + [2.0 ** -6] * 4, [1.0 + 2.0 ** -10]),
    # a square is rounded, not fused into the addition: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24
    # rounds to 1 + 2^-11 in f32 (2^-24 is half an ulp: a tie, to even), and adding
    # (2^-12)^2 = 2^-24 ties back to it in either order; a fused multiply-add onto 2^-24
    # would give the exact 1 + 2^-11 + 2^-23
    ("f32 sumsq rounds each square", "f32", "sumsq", "propagate", [2.0 ** -12, 1.0 + 2.0 ** -12], [1.0 + 2.0 ** -11]),
    ("i32 sumsq wraps", "i32", "sumsq", "propagate", [65536, 1], [1]),
    ("u32 sumsq wraps", "u32", "sumsq", "propagate", [4294967295, 2], [5]),
    ("i64 sumsq of a negative", "i64", "sumsq", "propagate", [-3, 2 ** 31], [2 ** 62 + 9]),
    # norm2: the root of the sum of squares; f32 and bf16 accumulate in f64, so large values
    # do not overflow where an f32 sum of squares would
    ("norm2 of 3, 4", "f32", "norm2", "propagate", [3.0, -4.0], [5.0]),
    ("f32 norm2 of large values", "f32", "norm2", "propagate", [2.0 ** 100, 2.0 ** 100, -2.0 ** 100, 2.0 ** 100],
     [2.0 ** 101]),
    ("bf16 norm2 of large values", "bf16", "norm2", "propagate", [2.0 ** 120, 2.0 ** 120, 2.0 ** 120, 2.0 ** 120], [2.0 ** 121]),
    ("f32 norm2 of tiny values", "f32", "norm2", "propagate", [2.0 ** -140, 2.0 ** -140, 2.0 ** -140, 2.0 ** -140],
     [2.0 ** -139]),
    ("norm2 of zeros is +0", "f64", "norm2", "propagate", [-0.0, 0.0], [0.0]),
    # squares below the accumulation type's normal range round to its subnormals: each
    # square of the f32 4.4292413059159337e-23 (1.4000000032 * 2^-149) is 2^-149, the sum
    # 2^-148; an f64 norm of 1e-160s sums squares of 2024 * 2^-1074 each, and of 1e-170s
    # squares that are 0
    ("f32 sumsq of subnormal squares", "f32", "sumsq", "propagate", [4.4292413059159337e-23] * 2, [2.0 ** -148]),
    ("f64 norm2 of squares that go subnormal", "f64", "norm2", "propagate", [1e-160, 1e-160],
     [1.4142056902605667e-160]),
    ("f64 norm2 of squares that underflow", "f64", "norm2", "propagate", [1e-170, -1e-170], [0.0]),
    ("norm2 of -inf", "f16", "norm2", "propagate", [-INF, 1.0], [INF]),
    ("norm2 with a NaN", "f32", "norm2", "propagate", [INF, NAN], [NAN]),
    ("f64 norm2 overflows", "f64", "norm2", "propagate", [1e200, 1e200], [INF]),
    # mean: the sum in the accumulation type over the count
    ("mean of four", "f32", "mean", "propagate", [1.0, 2.0, 3.0, 4.0], [2.5]),
    ("mean rounds once", "f64", "mean", "propagate", [1.0, 0.0, 0.0], [1.0 / 3.0]),
    ("f16 mean accumulates in f32", "f16", "mean", "propagate", [65504.0, 65504.0], [65504.0]),
    ("mean with +inf and -inf", "bf16", "mean", "propagate", [INF, -INF, 1.0], [NAN]),
    ("mean of -inf", "f32", "mean", "propagate", [-INF, 5.0], [-INF]),
    # f32 accumulates in f32: 3e38 + 3e38 overflows before the division
    ("f32 mean overflows in the sum", "f32", "mean", "propagate", [BIG, BIG], [INF]),
]

KINDS = ["cta", "cta_grid", "warp", "thread", "thread_local", "warp_localdst", "grid"]


def make_cases(ws):
    cs = []
    for name, d, op, nan, vec, want in VECTORS:
        dt = nm.DTYPES[d]
        for kind in KINDS:
            for v in VARIANTS[kind]:
                threads = 64
                c = Case(len(cs), kind, dt, op, nan, False, v, threads, ws, (len(vec),), (0,),
                         grid=2 if kind == "cta_grid" else 1, src_local=True, dst_local=True)
                row = [math.nan if x == NAN else x for x in vec] if dt.is_float else list(vec)
                src = np.array([row] * prod(c.src_shape[:-1]), dtype=np.float64 if dt.is_float else object)
                c.src = src.reshape(c.src_shape)
                c.init = np.zeros(c.out_shape) if dt.is_float else np.zeros(c.out_shape, dtype=object)
                c.want, c.name = want, name
                cs.append(c)
    return cs


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def matches(dt, got, want):
    if want == NAN:
        return math.isnan(got)
    if dt.is_float:
        return not math.isnan(got) and got == want and math.copysign(1, got) == math.copysign(1, want)
    return int(got) == int(want)


@pytest.mark.parametrize("ws", [32, 64])
def test_stated_vectors(tilec, tmp_path, repro, ws):
    cs = make_cases(ws)
    problems, _ = run_cases(tilec, cs, ws, str(tmp_path), "edges", check=literal_check)
    fail_on(problems, repro)


def literal_check(case, got_flat):
    bad = []
    for i, g in enumerate(got_flat):
        g = float(g) if case.dt.is_float else int(g)
        if not any(matches(case.dt, g, w) for w in case.want):
            bad.append(nm.Mismatch((i,), g, " or ".join(str(w) for w in case.want), case.name))
    return bad
