"""Fill constants are rounded once, from the decimal text, to the buffer's dtype.
docs/dispatch.md: "the constant is rounded once from its exact value to the
dtype"; docs/format.md: integer buffers take integers in their range (integral decimals
such as 2.0 too), a finite value that would round to infinity is an error.

The expected bits come from Fraction(text) rounded by numerics.round_exact: no double in
between, so a decimal just above a halfway point of f32 / f16 / bf16, whose nearest double
is that halfway point, must round up (text -> double -> dtype would tie to even instead).
"""
import os
from fractions import Fraction

import numpy as np
import pytest

import numerics as nm
from conftest import fail_on
from tiles import run_tilec


def exact_decimal(q):
    """The exact decimal text of q, whose denominator divides a power of ten (dyadic
    values do: 2^-k = 5^k / 10^k), in exponent form: DIGITS e-K, no rounding."""
    q = Fraction(q)
    sign = "-" if q < 0 else ""
    q = abs(q)
    k = 0
    while q.denominator > 1:
        q *= 10
        k += 1
    assert q.denominator == 1
    return "%s%d.0e-%d" % (sign, q.numerator, k) if k else "%s%d.0" % (sign, q.numerator)


def halfway_cases(rng, dt, n):
    """Decimals on, just above and just below (in magnitude, by 10^-25 of it: far below
    half an ulp of a double) the midpoint of two neighbouring values of dt, at random
    magnitudes, normal and subnormal, both signs."""
    f = dt.fmt
    out = []
    for i in range(n):
        if i % 4 == 3 and dt.name != "f64":  # in the subnormal range (f64's needs 750 digits)
            ulp = f.min_sub
            lo = int(rng.integers(1, 2 ** (f.p - 1) - 1)) * ulp
        else:
            e = int(rng.integers(max(f.emin, -30), min(f.emax, 30)))
            ulp = Fraction(2) ** (e - f.p + 1)
            lo = int(rng.integers(2 ** (f.p - 1), 2 ** f.p - 1)) * ulp
        mid = lo + ulp / 2
        hair = mid / 10 ** 25
        sign = -1 if rng.random() < 0.3 else 1
        out += [exact_decimal(sign * mid),  # exactly halfway: ties to even
                exact_decimal(sign * (mid + hair)),  # rounds away from zero
                exact_decimal(sign * (mid - hair))]  # rounds towards zero
    return out


FIXED = {
    # the case that was rounded twice: 1 + 2^-24 + 10^-28 is just above the f32 halfway 1 + 2^-24
    "f32": ["1.0000000596046447753906250001", "1.000000059604644775390625", "1.0000000596046447753906249999",
            "16777217.000000000001", "16777217", "16777219", "-16777217.000000000001", "0.1", "-0.1", "1e-3",
            "6.0E+4", ".25", "2.", "-0", "-0.0", "0", "inf", "-inf", "nan", "1e-45", "-1e-45", "1e-50", "-1e-50",
            "7.006492321624085354618647916449580656401e-46", "7.0064923216240853546186479164495806564014e-46",
            "1.1754943508222875e-38", "3.4028234663852886e38", "2147483647", "-2147483648", "4294967295",
            "9223372036854775807"],
    "f16": ["1.00048828125000000000000001", "1.00048828125", "1.00048828124999999999999",
            "65504", "-65519.999", "2049", "2051", "5.9604644775390625e-8",
            "2.98023223876953125e-8", "2.98023223876953125000001e-8", "-2.98023223876953125000001e-8",
            "6.103515625e-5", "0.1", "-0", "-0.0", "inf", "-inf", "nan", "1", "-1", "3.14159265358979323846264338"],
    "bf16": ["1.00390625000000000000000001", "1.00390625", "1.00390624999999999999999", "257", "259",
             "3.0e38", "-3.0e38", "3.3895313892515355e38", "1e-40", "9.183549615799121e-41", "0.1", "-0", "inf",
             "-inf", "65504", "16777217.000000000001"],
    "f64": ["0.1", "1.00000000000000011102230246251565404236316680908203125",
            "1.000000000000000111022302462515654042363166809082031250000000001", "9007199254740993",
            "9007199254740995", "4.9e-324", "2.4703282292062327208828439643411068618252990130716238221279e-324",
            "2.4703282292062327208828439643411068618252990130716238221280e-324", "1.7976931348623157e308",
            "-1.7976931348623157e308", "2.2250738585072011e-308", "-0", "inf", "-inf", "123456789012345678901234567890.0"],
    "i32": ["-2147483648", "2147483647", "0", "-1", "2.0", "-7.000", "100"],
    "u32": ["4294967295", "0", "1", "2147483648", "3.0"],
    # 2^53 + 1 and the extremes: through a double they would be 2^53 and out of range
    "i64": ["9223372036854775807", "-9223372036854775808", "9007199254740993", "-9007199254740993",
            "4611686018427387905", "0", "-1", "2.0"],
}


def expected_bits(dt, text):
    """The bits a fill of text must write into dtype dt."""
    t = text.strip()
    if dt.is_float:
        low = t.lower()
        if low == "nan":
            return None  # any NaN
        if low in ("inf", "-inf"):
            v = np.inf if low == "inf" else -np.inf
        else:
            q = Fraction(t)
            # "-0.0" is a negative zero; "-0" is the integer 0, which converts to +0
            # (as IEEE 754's conversion of an integer zero does)
            integer = all(ch.isdigit() for ch in t.lstrip("-"))
            v = nm.round_exact(q, dt.fmt, negative_zero=t.startswith("-") and not integer)
        return int(nm.float_to_bits(dt, np.array([v]))[0])
    q = Fraction(t)
    assert q.denominator == 1
    return int(q) % (1 << dt.bits)


def representable(dt, text):
    """Whether the format accepts text for dt (no overflow past the largest finite)."""
    if not dt.is_float:
        q = Fraction(text)
        return q.denominator == 1 and dt.lo <= q <= dt.hi
    low = text.lower()
    if low in ("inf", "-inf", "nan"):
        return True
    return abs(nm.round_exact(Fraction(text), dt.fmt)) != np.inf


def fill_program(consts):
    """One kernel per dtype; B<dt>[i] = consts[dt][i]."""
    lines = []
    for d, texts in consts.items():
        lines.append("kernel fill_%s(B_%s: %s[%d] global) threads=32 {" % (d, d, d, len(texts)))
        for i, t in enumerate(texts):
            lines.append("  cta.fill(B_%s[%d:%d], %s)" % (d, i, i + 1, t))
        lines.append("}")
    return "\n".join(lines) + "\n"


def check_fills(tilec, tmp_path, consts, program_text, label):
    path = os.path.join(str(tmp_path), label + ".tile")
    with open(path, "w") as f:
        f.write(program_text)
    args = ["run", path, "--backend", "sim"]
    outs = {}
    for d in consts:
        outs[d] = os.path.join(str(tmp_path), "%s.%s.out" % (label, d))
        args += ["--out", "B_%s=%s" % (d, outs[d])]
    rc, out, err = run_tilec(tilec, args)
    problems = []
    if rc != 0:
        return ["tilec run %s exited %d:\n%s" % (path, rc, err[-3000:])]
    for d, texts in consts.items():
        dt = nm.DTYPES[d]
        raw = np.frombuffer(open(outs[d], "rb").read(), dtype=dt.storage)
        for i, t in enumerate(texts):
            want = expected_bits(dt, t)
            got = int(raw[i]) % (1 << (8 * dt.size))
            if dt.is_float:
                gv = float(nm.decode(dt, raw[i:i + 1].tobytes(), (1,))[0])
                if want is None:
                    ok = np.isnan(gv)
                else:
                    ok = got == want
                if not ok:
                    wv = nm.decode(dt, np.array([want or 0], dtype=dt.storage).tobytes(), (1,))[0]
                    problems.append("%s: fill(%s) in %s wrote %s (0x%x), the value rounded once is %s"
                                    % (label, t, d, nm.fmt_value(gv), got,
                                       "a NaN" if want is None else "%s (0x%x)" % (nm.fmt_value(float(wv)), want)))
            elif got != want:
                problems.append("%s: fill(%s) in %s wrote %d, want %d" % (label, t, d, int(raw[i]), int(Fraction(t))))
    return problems


def all_consts(rng):
    consts = {}
    for d, texts in FIXED.items():
        dt = nm.DTYPES[d]
        ts = [t for t in texts if representable(dt, t)]
        if dt.is_float:
            ts += halfway_cases(rng, dt, 24)
        consts[d] = ts
    return consts


def test_fill_rounds_once(tilec, rng, tmp_path, repro):
    consts = all_consts(rng)
    problems = check_fills(tilec, tmp_path, consts, fill_program(consts), "fill")
    fail_on(problems, repro)


def test_fill_survives_fmt(tilec, rng, tmp_path, repro):
    """`tilec fmt` prints numbers "in their shortest exact form" and parsing its output gives
    the same IR (format.md): the formatted program must fill the same bits."""
    consts = all_consts(rng)
    src = os.path.join(str(tmp_path), "src.tile")
    with open(src, "w") as f:
        f.write(fill_program(consts))
    rc, out, err = run_tilec(tilec, ["fmt", src])
    assert rc == 0, "tilec fmt %s exited %d: %s" % (src, rc, err)
    problems = check_fills(tilec, tmp_path, consts, out, "fmt")
    fail_on(problems, repro)


@pytest.mark.parametrize("d,text", [("f16", "65520"), ("f16", "-65520"), ("f16", "1e5"),
                                    ("bf16", "3.3962e38"), ("f32", "340282356779733661637539395458142568448"),
                                    ("f32", "1e39"), ("f64", "1.8e308"), ("i32", "2147483648"),
                                    ("i32", "1.5"), ("u32", "-1"), ("i64", "9223372036854775808")])
def test_fill_out_of_range_is_an_error(tilec, tmp_path, d, text):
    """A finite constant that rounds to infinity in the dtype (the exact threshold ties
    away from the largest finite, whose significand is odd), or an integer out of range or
    not integral, is refused by `tilec check` (exit 1), with a position."""
    dt = nm.DTYPES[d]
    assert not representable(dt, text)  # the oracle agrees that it is out of range
    path = os.path.join(str(tmp_path), "bad.tile")
    with open(path, "w") as f:
        f.write("kernel k(B: %s[1] global) threads=32 {\n  cta.fill(B, %s)\n}\n" % (d, text))
    rc, out, err = run_tilec(tilec, ["check", path])
    assert rc == 1 and "bad.tile:2:" in err, "tilec check accepted fill(%s) into %s (exit %d): %s" % (text, d, rc, err)


# Just below the overflow threshold (2^128 - 2^103 for f32, 65520 for f16): the nearest
# double is the threshold itself, so text -> double -> dtype overflows, while the value
# rounded once is the largest finite. Separate from the batch above: tilec refuses the
# whole file when it thinks a constant overflows.
BELOW_THRESHOLD = [("f32", "340282356779733661637539395458142568447.9"), ("f16", "65519.99999999999999"),
                   ("f16", "-65519.9999999999999999"), ("bf16", "339617752923046005526922703901628039167.9")]


@pytest.mark.parametrize("d,text", BELOW_THRESHOLD)
def test_fill_just_below_overflow(tilec, tmp_path, repro, d, text):
    dt = nm.DTYPES[d]
    assert representable(dt, text) and abs(nm.round_exact(Fraction(text), dt.fmt)) == float(dt.fmt.max)
    problems = check_fills(tilec, tmp_path, {d: [text]}, fill_program({d: [text]}), "below")
    fail_on(problems, repro)
