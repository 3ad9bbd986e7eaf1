"""Random .tile programs of every scope, dtype, op, NaN policy and accum, at both warp
sizes, with the forced variants that apply; results against numerics.py."""
import pytest

import cases
import data
import numerics as nm
from conftest import ROUNDS, fail_on
from tiles import VARIANTS, Case, not_applied, run_cases

KINDS = [(k, ws) for k in VARIANTS for ws in (32, 64) if not (k == "warpgroup" and ws == 64)]


@pytest.mark.parametrize("kind,ws", KINDS, ids=["%s-ws%d" % kw for kw in KINDS])
def test_random(tilec, rng, tmp_path, repro, kind, ws):
    cs = cases.cases_for_kind(rng, kind, ws, ROUNDS)
    problems, stats = run_cases(tilec, cs, ws, str(tmp_path), kind)
    # every variant the kind lists ran at least once (else the shapes here no longer suit it)
    for v in VARIANTS[kind]:
        if v and not any(c.chosen == v and c.variant == v for c in cs):
            problems.append("coverage: variant=%s was never forced successfully for %s at warp size %d; "
                            "the generated shapes no longer suit it (cases.py)" % (v, kind, ws))
    fail_on(problems, repro)


# grid_cols gives a column lane 16 bytes of neighbouring columns (4 f32, 8 f16, 2 f64),
# so a block spans 32 lanes x that many columns: with fewer threads than that, the final
# per-column fold must still cover every column of the block (found by test_random).
GRID_COLS = [("f32", 32, 128), ("f32", 64, 128), ("f32", 96, 128), ("f32", 64, 256), ("f16", 128, 256),
             ("bf16", 64, 512), ("f64", 32, 64), ("i32", 32, 128), ("u32", 64, 132), ("i64", 32, 66)]


@pytest.mark.parametrize("ws", [32, 64])
def test_grid_cols_narrow_ctas(tilec, rng, tmp_path, repro, ws):
    cs = []
    for d, threads, cols in GRID_COLS:
        for op in ("sum", "max"):
            dt = nm.DTYPES[d]
            c = Case(len(cs), "grid", dt, op, "propagate", False, "grid_cols", threads, ws, (40, cols), (0,))
            c.src = data.values(rng, dt, c.src_shape, "normal" if dt.is_float else "full", (0,))
            c.init = data.values(rng, dt, c.out_shape, "normal" if dt.is_float else "full")
            cs.append(c)
    problems, _ = run_cases(tilec, cs, ws, str(tmp_path), "cols")
    problems += ["%s: variant=grid_cols did not apply" % c.describe() for c in cs if c.chosen != "grid_cols"]
    fail_on(problems, repro)


# (kind, variant, threads, shape, axes): rows longer than any group, block or CTA, and
# warp-local sources whose lanes all count, for a mean whose every order is exact
MEAN_ROWS = [("cta", v, 256, (3, 1501), (1,)) for v in VARIANTS["cta"]] + \
            [("warp_sel", v, 96, (2, 1203), (-1,)) for v in VARIANTS["warp_sel"]] + \
            [("warpgroup", v, 256, (2, 1100), (1,)) for v in VARIANTS["warpgroup"]] + \
            [("warp_localsrc", v, 48, (5,), (0,)) for v in VARIANTS["warp_localsrc"]] + \
            [("grid", "grid_rows", 256, (3, 50001), (1,)), ("grid", "grid_cols", 256, (20001, 3), (0,)),
             ("grid", None, 128, (7, 3001, 5), (0, 2))]


@pytest.mark.parametrize("ws", [32, 64])
def test_mean_of_integers(tilec, rng, tmp_path, repro, ws):
    """Small integers sum exactly in any order, so a mean has one right answer: a count
    off by one element, a lane or a block shows (the bounds of random data would hide it)."""
    cs = []
    for kind, variant, threads, shape, axes in MEAN_ROWS:
        if kind == "warpgroup" and ws == 64:
            continue
        for d in ("f32", "f16", "f64"):
            dt = nm.DTYPES[d]
            c = Case(len(cs), kind, dt, "mean", "propagate", False, variant, threads, ws, shape, axes)
            c.src = data.values(rng, dt, c.src_shape, "integers", None)
            c.init = data.values(rng, dt, c.out_shape, "integers")
            cs.append(c)
    problems, _ = run_cases(tilec, cs, ws, str(tmp_path), "mean")
    problems += not_applied(cs)
    fail_on(problems, repro)


# rows and cols (the cost model's variants) forced on layouts that make their wide paths
# happen: columns of [R, C] with C a multiple of 4 or 8 (vector loads of neighbouring
# outputs, slices when threads outnumber the outputs), rows of a multiple of 4 or 8
# elements (16-byte loads, groups under a warp), a row too long for one warp (the
# whole-CTA tree), and lengths that leave tails
ROWS_COLS = [("f32", 256, (64, 128), (0,)), ("f32", 128, (32, 32), (0,)), ("f16", 64, (24, 256), (0,)),
             ("bf16", 128, (40, 64), (0,)), ("f64", 64, (16, 64), (0,)), ("f32", 96, (50, 36), (0,)),
             ("f32", 128, (32, 32), (1,)), ("f16", 128, (64, 64), (1,)), ("bf16", 32, (4, 8), (1,)),
             ("f64", 128, (32, 16), (1,)), ("f32", 512, (1, 4096), (1,)), ("f32", 256, (3, 1000), (1,)),
             ("f16", 48, (5, 72), (1,)), ("i32", 128, (30, 64), (0,)), ("f32", 128, (4, 6, 32), (1,))]


@pytest.mark.parametrize("ws", [32, 64])
def test_rows_cols_layouts(tilec, rng, tmp_path, repro, ws):
    cs = []
    for d, threads, shp, axes in ROWS_COLS:
        for variant in ("rows", "cols"):
            for op in ("sum", "max"):
                dt = nm.DTYPES[d]
                c = Case(len(cs), "cta", dt, op, "propagate", False, variant, threads, ws, shp, axes)
                c.src = data.values(rng, dt, c.src_shape, "normal" if dt.is_float else "full", axes)
                c.init = data.values(rng, dt, c.out_shape, "normal" if dt.is_float else "full")
                cs.append(c)
    problems, _ = run_cases(tilec, cs, ws, str(tmp_path), "rowscols")
    problems += not_applied(cs)
    fail_on(problems, repro)
