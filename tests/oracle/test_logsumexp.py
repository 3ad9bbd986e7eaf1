"""logsumexp against numerics.LseSpec, the definition in float64 with math.exp
and math.log: through `tilec reduce` (random shapes and axes, strided views, an empty
axis, literal vectors written from the format's rules) and in tile programs of every
scope kind, each variant forced in turn, at both warp sizes.

    tilec reduce --op logsumexp --dtype f16|bf16|f32|f64 --shape AxB.. --axes a,b --backend sim
"""
import math

import numpy as np
import pytest

import cases
import data
import numerics as nm
from conftest import ROUNDS, fail_on
from test_argmax import view_data
from test_reduce import Reduce, check_one
from tiles import VARIANTS, run_cases, run_tilec

DTYPES = ("f32", "bf16", "f16", "f64")
COMBOS = [(d, "logsumexp", "propagate") for d in DTYPES]
KINDS = [(k, ws) for k in VARIANTS for ws in (32, 64) if not (k == "warpgroup" and ws == 64)]


@pytest.mark.parametrize("dname", DTYPES)
def test_reduce_random(tilec, rng, tmp_path, repro, dname):
    """Random shapes (extents 1, primes, odd), random axis sets, every flavour of data."""
    dt = nm.DTYPES[dname]
    r = Reduce(tilec, str(tmp_path))
    problems = []
    fl = data.flavours_for(dt, "logsumexp", "propagate")
    for i in range(4 * ROUNDS):
        rank = int(rng.integers(1, 5))
        shape = cases.shape(rng, int(rng.choice([64, 3000, 70000])), rank=rank)
        axes = cases.axes_for(rng, shape)
        x = data.values(rng, dt, shape, fl[(i + int(rng.integers(0, len(fl)))) % len(fl)], axes)
        check_one(r, problems, dt, "logsumexp", "propagate", shape, axes, x)
    fail_on(problems, repro)


@pytest.mark.parametrize("dname", DTYPES)
def test_reduce_accumulate(tilec, rng, tmp_path, repro, dname):
    """--accumulate: the old value is one more element of its slice, ln(exp(old) + sum of
    exp(x)) (online softmax's running sum): old values of every special kind (-inf starts a
    sum, NaN stays, +inf wins), over rows, columns and an empty axis (the old value stays)."""
    dt = nm.DTYPES[dname]
    r = Reduce(tilec, str(tmp_path))
    problems = []
    fl = data.flavours_for(dt, "logsumexp", "propagate")
    for i, (shape, axes) in enumerate([((7, 33), (1,)), ((40, 9), (0,)), ((3, 5, 64), (0, 2)), ((6, 0), (1,))]):
        x = data.values(rng, dt, shape, fl[i % len(fl)], axes)
        kept = tuple(s for d, s in enumerate(shape) if d not in [a % len(shape) for a in axes])
        init = data.values(rng, dt, kept, "specials")
        rc, so, se, got, cmd = r.run(dt, "logsumexp", "propagate", shape, axes, x, init)
        if rc != 0 or got is None:
            problems.append("%s\n  exited %d: %s" % (cmd, rc, se.strip()))
            continue
        want = nm.expected(dt, "logsumexp", "propagate", x, axes, init)
        problems += ["%s\n  %s" % (cmd, m) for m in nm.compare(dt, "logsumexp", got.reshape(want.shape), want)[:4]]
    fail_on(problems, repro)


def test_strided_views(tilec, rng, tmp_path, repro):
    """A transpose, reversed rows, a broadcast dim (a value repeated n times adds ln n)."""
    problems = []
    r = Reduce(tilec, str(tmp_path))
    for dname in DTYPES:
        dt = nm.DTYPES[dname]
        for shape, strides, axes in [((300, 200), (1, 300), [1]), ((3000, 7), (-7, 1), [0]), ((64, 500), (0, 1), [0])]:
            mem, x = view_data(rng, dt, shape, strides)
            mem = np.where(np.isnan(mem) | np.isinf(mem), 1.5, mem)  # (view_data's ties and NaNs are argmax's)
            x = np.where(np.isnan(x) | np.isinf(x), 1.5, x)
            rc, so, se, got, cmd = r.run(dt, "logsumexp", "propagate", shape, axes, mem,
                                         extra=["--strides", ",".join(map(str, strides))])
            if rc != 0 or got is None:
                problems.append("%s\n  exited %d: %s" % (cmd, rc, se.strip()))
                continue
            want = nm.expected(dt, "logsumexp", "propagate", x, axes)
            mism = nm.compare(dt, "logsumexp", got.reshape(want.shape), want)
            problems += ["%s\n  %s" % (cmd, m) for m in mism[:4]]
    fail_on(problems, repro)


@pytest.mark.parametrize("kind,ws", KINDS, ids=["%s-ws%d" % kw for kw in KINDS])
def test_tile_programs(tilec, rng, tmp_path, repro, kind, ws):
    """Random programs of the kind (cases.py), every variant it lists forced at least once."""
    rounds = -(-len(VARIANTS[kind]) // len(COMBOS)) * ROUNDS
    cs = cases.cases_for_kind(rng, kind, ws, rounds, combos=COMBOS, accums=(False, True))
    problems, _ = run_cases(tilec, cs, ws, str(tmp_path), kind)
    for v in VARIANTS[kind]:
        if v and not any(c.chosen == v and c.variant == v for c in cs):
            problems.append("coverage: variant=%s was never forced successfully for %s at warp size %d" % (v, kind, ws))
    fail_on(problems, repro)


NAN = math.nan
# (dtype, vector, result), the results written from the definition: ln(e^a + e^b) =
# max + ln(1 + e^-|a - b|), rounded to the dtype
LITERAL = [
    ("f32", [1e4, 1e4], 10000.693359375),      # 1e4 + ln 2 to f32's 2^-10 steps there: no overflow
    ("f32", [-1e4, -1e4], -9999.306640625),    # -1e4 + ln 2: no underflow to -inf
    ("f32", [1e4, -1e4], 1e4),                 # e^-2e4 is nothing next to 1
    ("f32", [0.0], 0.0),                       # ln(e^0) = 0
    ("f32", [-0.0, -0.0], 0.693147182464599609375),  # ln 2 in f32
    ("f32", [-np.inf, -np.inf], -np.inf),      # ln 0
    ("f32", [-np.inf, 2.5], 2.5),              # e^-inf = 0
    ("f32", [np.inf, 1.0], np.inf),
    ("f32", [np.inf, np.inf], np.inf),
    ("f32", [np.inf, -np.inf], np.inf),
    ("f32", [NAN, np.inf], NAN),
    ("f32", [1.0, NAN, -1.0], NAN),
    ("f32", [3.4028234663852886e38, 3.4028234663852886e38], 3.4028234663852886e38),  # + ln 2 rounds away
    ("f32", [2.0 ** -149, -(2.0 ** -149)], 0.693147182464599609375),  # subnormals: e^x = 1 to f32
    ("bf16", [1.0, 2.0, 3.0], 3.40625),         # 3.4076059644... to bf16's 2^-6 steps
    ("f16", [65504.0, 65504.0], 65504.0),       # 65504.69 is below f16's overflow threshold 65520
    ("f16", [-65504.0, 0.0], 0.0),
    # f64: its state is two f64s (m, s)
    ("f64", [1e300, 1e300], 1e300),            # + ln 2 is far below 1e300's ulp
    ("f64", [1e4, 1e4], 10000.693147180560),   # 1e4 + ln 2 to f64's 2^-39 steps there
    ("f64", [-1e4, -1e4], -9999.306852819440),
    ("f64", [0.0], 0.0),
    ("f64", [-0.0, -0.0], 0.6931471805599453),  # ln 2 in f64
    ("f64", [-np.inf, -np.inf], -np.inf),
    ("f64", [-np.inf, 2.5], 2.5),
    ("f64", [np.inf, -np.inf], np.inf),
    ("f64", [NAN, np.inf], NAN),
    ("f64", [1.0, NAN, -1.0], NAN),
    ("f64", [1.7976931348623157e308, 1.7976931348623157e308], 1.7976931348623157e308),  # no overflow
    ("f64", [5e-324, -5e-324], 0.6931471805599453),  # subnormals: e^x = 1 to f64
    ("f64", [0.0, -800.0], 0.0),                # e^-800 is below f64's range and 2^-53 of 1
]


def test_literal_vectors(tilec, tmp_path):
    problems = []
    r = Reduce(tilec, str(tmp_path))
    for dname, vec, want in LITERAL:
        dt = nm.DTYPES[dname]
        rc, so, se, got, cmd = r.run(dt, "logsumexp", "propagate", (len(vec),), [0], np.array(vec, dtype=np.float64))
        if rc != 0 or got is None:
            problems.append("%s\n  exited %d: %s" % (cmd, rc, se.strip()))
            continue
        g = float(got.reshape(-1)[0])
        same = (math.isnan(g) and math.isnan(want)) or (g == want and math.copysign(1, g) == math.copysign(1, want))
        if not same:
            problems.append("logsumexp %s of %s: got %r, want %r" % (dname, vec, g, want))
    fail_on(problems, "")


def test_empty_axis_and_refusals(tilec, tmp_path):
    """An empty reduced axis gives -inf (the log of an empty sum); what logsumexp does
    not take, said by the CLI."""
    out = tmp_path / "e.out"
    rc, _, se = run_tilec(tilec, ["reduce", "--op", "logsumexp", "--dtype", "f32", "--shape", "3x0", "--axes", "1",
                                  "--backend", "sim", "--repeat", "0", "--out", str(out)])
    assert rc == 0, se
    assert np.array_equal(np.frombuffer(out.read_bytes(), dtype="<f4"), np.full(3, -np.inf, dtype=np.float32))
    rc, _, se = run_tilec(tilec, ["reduce", "--op", "logsumexp", "--dtype", "f64", "--shape", "3x0", "--axes", "1",
                                  "--backend", "sim", "--repeat", "0", "--out", str(out)])
    assert rc == 0, se
    assert np.array_equal(np.frombuffer(out.read_bytes(), dtype="<f8"), np.full(3, -np.inf))
    for args, says in [(["--dtype", "i32"], "logsumexp is defined for float dtypes, not i32: convert the input to f32 or f64 first"),
                       (["--dtype", "f32", "--nan", "ignore"], "nan policy ignore applies to the ops that compare")]:
        rc, _, se = run_tilec(tilec, ["reduce", "--op", "logsumexp", "--shape", "10", "--backend", "sim"] + args)
        assert rc == 1 and says in se, (args, se)


# Shapes for each grid executor's paths (the simulator plans for a GPU of 4 multiprocessors):
# long rows (a lane's leaves, then its group's butterfly), short rows, columns in whole
# turns of rows (a turn and the column's state folded at once) and in ragged ones.
GRID_SHAPES = [((1, 70001), [1]), ((3, 8200), [1]), ((1000, 32), [1]), ((777, 7), [1]),
               ((8192, 64), [0]), ((4096, 33), [0]), ((4099, 8), [0]), ((37, 9001), [0]), ((6, 500, 40), [0, 2])]


def test_grid_shapes(tilec, rng, tmp_path, repro):
    problems = []
    r = Reduce(tilec, str(tmp_path))
    for dname in ("f32", "bf16", "f64"):
        dt = nm.DTYPES[dname]
        for n, (shape, axes) in enumerate(GRID_SHAPES):
            x = data.values(rng, dt, shape, ("normal", "specials", "big")[n % 3], axes)
            check_one(r, problems, dt, "logsumexp", "propagate", shape, axes, x)
    fail_on(problems, repro)
