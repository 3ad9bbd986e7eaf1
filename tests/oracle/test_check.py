"""tilec's own reference (`tilec run --check`) must accept a correct result that overflows
in the accumulation type: f32 sums accumulate in f32 (docs/format.md),
so [3e38, 3e38, -inf] is NaN when the two finite terms are added first (3e38 + 3e38
overflows to +inf, then +inf + -inf) and -inf when -inf comes first; a reference that
sums in double gets -inf only and rejects the NaN.

Each case: the kernel's result must be one the oracle allows (numerics.SumSpec), and
`--check` must exit 0 on it.
"""
import math
import os

import numpy as np
import pytest

import cases
import numerics as nm
import tiles
from conftest import ROUNDS, fail_on
from tiles import run_tilec

BIG32 = float(np.float32(3e38))
BF16_MAX = float(nm.BF16.max)

CASES = [
    ("f32", [BIG32, BIG32, -math.inf], {"nan", "-inf"}),
    ("f32", [BIG32, -math.inf, BIG32], {"nan", "-inf"}),
    ("f32", [BIG32, BIG32, -BIG32], None),  # +inf, or 3e38 when -3e38 comes before the second
    ("f32", [BIG32, BIG32, -BIG32, -BIG32], None),  # +inf, -inf, NaN or 0
    ("bf16", [BF16_MAX, BF16_MAX, -math.inf], {"nan", "-inf"}),  # bf16 accumulates in f32
    ("f16", [65504.0, 65504.0, -65504.0], None),  # 65504 in every order (f32 accumulation)
]
VARIANTS = ["sequential", "shared", "smem_tree", None]


@pytest.mark.parametrize("variant", VARIANTS, ids=[v or "default" for v in VARIANTS])
@pytest.mark.parametrize("ci", range(len(CASES)))
def test_check_accepts_overflow(tilec, tmp_path, repro, ci, variant):
    d, vec, must = CASES[ci]
    dt = nm.DTYPES[d]
    spec = nm.SumSpec(np.array(vec), dt)
    if must is not None:  # the oracle's set is the one reasoned out above
        assert spec.allowed() == (None, must)
    n = len(vec)
    prog = os.path.join(str(tmp_path), "ovf.tile")
    with open(prog, "w") as f:
        f.write("kernel ovf(A: %s[%d] global, B: %s[1] global) threads=32 {\n"
                "  cta.sum(B, A, axes=(0)%s)\n}\n" % (d, n, d, ", variant=" + variant if variant else ""))
    a = os.path.join(str(tmp_path), "a.bin")
    b = os.path.join(str(tmp_path), "b.bin")
    with open(a, "wb") as f:
        f.write(nm.encode(dt, np.array(vec)))
    rc, out, err = run_tilec(tilec, ["run", prog, "--backend", "sim", "--check", "--in", "A=" + a, "--out", "B=" + b])
    problems = []
    if not os.path.exists(b):
        problems.append("tilec run --check exited %d and wrote no output:\n%s" % (rc, err))
    else:
        got = float(nm.decode(dt, open(b, "rb").read(), (1,))[0])
        if not spec.accepts(got):
            problems.append("%s sum of %s gave %s; want %s" % (d, vec, nm.fmt_value(got), spec.describe()))
        elif rc != 0:
            problems.append("%s sum of %s gave %s, a result some order of f32 accumulation gives, but "
                            "tilec run --check rejected it (exit %d):\n%s%s" % (d, vec, nm.fmt_value(got), rc, out, err))
    fail_on(problems, repro)


AGREE_KINDS = [(k, ws) for k in ("cta", "warp", "thread_local", "warp_localsrc", "grid") for ws in (32, 64)]


@pytest.mark.parametrize("kind,ws", AGREE_KINDS, ids=["%s-ws%d" % kw for kw in AGREE_KINDS])
def test_reference_agrees_with_oracle(tilec, rng, tmp_path, repro, kind, ws):
    """`tilec run --check` and the oracle must agree on every kernel, both ways: the
    reference rejecting a result the oracle allows is the bug of item 3; accepting one the
    oracle rejects is how items 1 and 2 went unseen (the reference shared the mistake)."""
    cs = cases.cases_for_kind(rng, kind, ws, ROUNDS)
    problems = []
    for fi, kernels in enumerate(tiles.pack(cs)):
        tf = tiles.TileFile(kernels, ws, str(tmp_path), "%s_%d" % (kind, fi))
        err = tiles.settle_variants(tilec, tf)
        if err:
            problems.append(err)
            continue
        verdicts, outputs, probs = tiles.reference_verdicts(tilec, tf)
        problems += probs
        for k in kernels:
            if k.name not in verdicts or outputs.get(k.name) is None:
                continue
            ref_ok, lines = verdicts[k.name]
            flat = nm.decode(k.dt, outputs[k.name], (k.y_elems(),))
            at, wrong = 0, []
            for c in k.cases:
                n = c.out_elems()
                if c.check(flat[at:at + n]):
                    wrong.append(c.describe())
                at += n
            if ref_ok and wrong:
                problems.append("%s kernel %s: --check says ok, the oracle finds wrong results in: %s"
                                % (tf.path, k.name, "; ".join(wrong)))
            elif not ref_ok and not wrong:
                problems.append("%s kernel %s: --check rejects results the oracle accepts (%s):\n    %s"
                                % (tf.path, k.name, "; ".join(c.describe() for c in k.cases), "\n    ".join(lines)))
    fail_on(problems, repro)
