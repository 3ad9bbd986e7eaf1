"""max / min with nan=ignore over slices that are all NaN.

docs/format.md: "with nan=ignore NaNs are skipped, and an all-NaN slice gives NaN" — as
numpy's nanmax / nanmin (which warn about it; numerics.py does not call them). With
accum=true the old destination value is one more element: an all-NaN source with an old
number gives that number, with an old NaN gives NaN.

Every scope, every variant that applies, every float dtype, both ops, accum or not, both
warp sizes; the first slice of every case is all NaN (data.plant_slices), and so is the
first output's old value.
"""
import numpy as np
import pytest

import cases
import numerics as nm
from conftest import ROUNDS, fail_on
from tiles import VARIANTS, Case, run_cases

KINDS = [(k, ws) for k in VARIANTS for ws in (32, 64) if not (k == "warpgroup" and ws == 64)]
IGNORE = [(d, op, "ignore") for d in nm.FLOATS for op in ("max", "min")]


@pytest.mark.parametrize("kind,ws", KINDS, ids=["%s-ws%d" % kw for kw in KINDS])
def test_all_nan_slices(tilec, rng, tmp_path, repro, kind, ws):
    cs = cases.cases_for_kind(rng, kind, ws, max(1, ROUNDS), combos=IGNORE, flavour="nan_slices")
    problems, _ = run_cases(tilec, cs, ws, str(tmp_path), kind)
    for v in VARIANTS[kind]:
        if v and not any(c.chosen == v and c.variant == v for c in cs):
            problems.append("coverage: variant=%s never applied to the all-NaN cases of %s" % (v, kind))
    fail_on(problems, repro)


@pytest.mark.parametrize("ws", [32, 64])
@pytest.mark.parametrize("dt", nm.FLOATS)
def test_all_nan_row_smallest(tilec, tmp_path, repro, dt, ws):
    """The smallest reproducer: cta.max / cta.min of [nan, nan, nan] with nan=ignore, in
    every cta variant, must be NaN; with a number beside the NaNs it is that number."""
    d = nm.DTYPES[dt]
    cs = []
    for op in ("max", "min"):
        for v in VARIANTS["cta"]:
            c = Case(len(cs), "cta", d, op, "ignore", False, v, 64, ws, (2, 3), (-1,))
            c.src = np.array([[np.nan] * 3, [np.nan, -2.5, np.nan]])
            c.init = np.zeros(2)
            cs.append(c)
    problems, _ = run_cases(tilec, cs, ws, str(tmp_path), "smallest")
    fail_on(problems, repro)
