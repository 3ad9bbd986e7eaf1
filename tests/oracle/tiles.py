"""tiles.py — .tile programs for the oracle: one reduction statement per case, many cases
per kernel and many kernels per file, run with `tilec run --backend sim`.

A case is one reduction (dtype, op, NaN policy, accum, scope, forced variant, threads,
shape, axes) with its input. Packed kinds (every scope but cta_grid and grid) share a
kernel: their sources are slices of one global X<k>, their results slices of one global
Y<k> (which also carries the old destination values for accum=true), copied through
shared (and local) buffers as docs/format.md prescribes. cta_grid and grid cases are a
kernel each. Each kernel's X and Y are its own parameters, so a file of up to
MAX_KERNELS kernels needs at most 2 * MAX_KERNELS --in options (tilec run takes 64).

The expected result of a case is computed from its input by numerics.py only.
"""
import os
import re
import subprocess

import numpy as np

import numerics as nm

MAX_KERNELS = 30
SHARED_BUDGET = 24 << 10  # bytes of shared memory a packed kernel allocates, at most
MAX_CASES_PER_KERNEL = 40

# the variants each kind is run with (None: the dispatcher's choice); docs/dispatch.md.
# A forced variant that does not apply to a case's statement (tilec explain says so) is
# dropped for that case, and the case runs with the dispatcher's choice.
VARIANTS = {
    "cta": [None, "rows", "cols", "shared", "cta_tree", "sequential", "smem_tree"],
    "cta_view": [None, "rows", "cols", "shared", "sequential", "smem_tree"],
    "cta_grid": [None, "rows", "cols", "shared", "cta_tree", "sequential", "smem_tree"],
    "warp": [None, "rows", "cols", "shared", "sequential", "smem_tree"],
    "warp_sel": [None, "rows", "cols", "shared", "sequential", "smem_tree"],
    "warpgroup": [None, "rows", "cols", "shared", "cta_tree", "sequential", "smem_tree"],
    "thread": [None, "sequential"],
    "thread_local": [None, "local", "sequential"],
    "warp_localsrc": [None, "local", "local_smem"],
    "warp_localdst": [None, "local", "local_smem"],
    "grid": [None, "grid_rows", "grid_cols"],
}
PACKED = {"cta", "cta_view", "warp", "warp_sel", "warpgroup", "thread", "thread_local", "warp_localsrc", "warp_localdst"}


def norm_axes(axes, rank):
    return sorted(set(a % rank for a in axes))


def kept_shape(shape, axes):
    ax = norm_axes(axes, len(shape))
    return tuple(s for d, s in enumerate(shape) if d not in ax)


def prod(xs):
    p = 1
    for x in xs:
        p *= int(x)
    return p


def dims(shape):
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def axes_text(axes, style):
    if style == "int" and len(axes) == 1:
        return str(axes[0])
    return "(" + ", ".join(str(a) for a in axes) + ")"


class Case:
    """One reduction statement and its data.

    shape: the reduced region's shape as indexed (per instance); axes: as written.
    src: the full source data, laid out as the kind needs (see src_shape);
    init: the full destination's old values (out_shape), read when accum is true."""

    def __init__(self, cid, kind, dt, op, nan, accum, variant, threads, ws, shape, axes,
                 axes_style="tuple", grid=1, sel=0, view=None, src_local=True, dst_local=True, correction=None):
        self.cid, self.kind, self.dt, self.op, self.nan, self.accum = cid, kind, dt, op, nan, accum
        self.variant, self.threads, self.ws = variant, threads, ws
        self.shape, self.axes, self.axes_style = tuple(shape), tuple(axes), axes_style
        self.grid, self.sel, self.view = grid, sel, view
        self.src_local, self.dst_local = src_local, dst_local
        self.correction = correction  # var and std: correction=N, written when not None (the default is 1)
        self.forced_rejected = None  # a forced variant that did not apply (then None runs)
        self.chosen = None  # the variant tilec explain reported for the statement
        self.src = None
        self.init = None
        self.line = None

    # ---- geometry
    @property
    def warps(self):
        return -(-self.threads // self.ws)

    @property
    def kept(self):
        k = kept_shape(self.shape, self.axes)
        return k if k else (1,)

    @property
    def instances(self):
        return {"cta": 1, "cta_view": 1, "warp_sel": 1, "grid": 1, "cta_grid": self.grid,
                "warp": self.warps, "warpgroup": self.threads // 128, "thread": self.threads,
                "thread_local": self.threads, "warp_localsrc": self.warps,
                "warp_localdst": self.warps}[self.kind]

    @property
    def src_shape(self):
        if self.kind in ("cta", "warp_sel", "grid"):
            return self.shape
        if self.kind == "cta_view":
            return self.view["full"]
        if self.kind == "warp_localsrc":
            return (self.threads,) + self.shape
        return (self.instances,) + self.shape

    @property
    def out_shape(self):
        if self.kind == "warp_localdst":
            return (self.threads,) + self.kept
        if self.kind in ("cta", "cta_view", "warp_sel", "grid"):
            return self.kept
        return (self.instances,) + self.kept

    def src_elems(self):
        return prod(self.src_shape)

    def out_elems(self):
        return prod(self.out_shape)

    def shared_bytes(self):
        return (self.src_elems() + self.out_elems()) * self.dt.size

    # ---- the expected result
    def blocks(self):
        """(source block, axes on it, instance label) per group of outputs, in the
        destination's order; a block's outputs are its kept elements."""
        src = self.src
        ax = norm_axes(self.axes, len(self.shape))
        k = self.kind
        if k in ("cta", "warp_sel", "grid"):
            return [(src, ax, "")]
        if k == "cta_view":
            return [(src[self.view["index"]], ax, "")]
        if k == "warp_localsrc":  # every lane's copy, and the reduced axes of each
            out = []
            for w in range(self.warps):
                lanes = src[w * self.ws:min(self.threads, (w + 1) * self.ws)]
                out.append((lanes, [0] + [a + 1 for a in ax], "warp %d" % w))
            return out
        if k == "warp_localdst":  # every lane gets its warp's result
            return [(src[t // self.ws], ax, "thread %d (warp %d)" % (t, t // self.ws)) for t in range(self.threads)]
        label = {"cta_grid": "cta", "warp": "warp", "warpgroup": "warpgroup", "thread": "thread",
                 "thread_local": "thread"}[k]
        return [(src[i], ax, "%s %d" % (label, i)) for i in range(self.instances)]

    def check(self, got_flat):
        """Mismatches of the decoded destination (flat) against the oracle."""
        n_out = prod(self.kept)
        init = self.init.reshape(-1, n_out) if self.accum else None
        mism = []
        for b, (block, ax, label) in enumerate(self.blocks()):
            ini = init[b].reshape(kept_shape(block.shape, ax)) if init is not None else None
            want = nm.expected(self.dt, self.op, self.nan, block, ax, ini, correction=self.correction)
            got = got_flat[b * n_out:(b + 1) * n_out].reshape(want.shape)
            notes = nm.slice_notes(self.dt, self.op, block, ax, ini, correction=self.correction)

            def note(idx, notes=notes, label=label):
                return "; ".join(x for x in (label, notes(idx)) if x)

            mism += nm.compare(self.dt, self.op, got, want, note)
        return mism

    # ---- text
    def red_call(self, scope, dst, src):
        kw = ["axes=" + axes_text(self.axes, self.axes_style)]
        if self.accum:
            kw.append("accum=true")
        if self.nan == "ignore":
            kw.append("nan=ignore")
        if self.correction is not None:
            kw.append("correction=%d" % self.correction)
        if self.variant:
            kw.append("variant=" + self.variant)
        return "%s.%s(%s, %s, %s)" % (scope, self.op, dst, src, ", ".join(kw))

    def describe(self):
        v = self.variant or ("default" + (" (forced %s did not apply)" % self.forced_rejected if self.forced_rejected else ""))
        return ("case %d: %s %s.%s nan=%s accum=%s variant=%s threads=%d warp size %d shape %s axes %s%s%s"
                % (self.cid, self.kind, self.dt.name, self.op, self.nan, self.accum, v, self.threads, self.ws,
                   list(self.shape), list(self.axes), (" grid=%d" % self.grid) if self.kind == "cta_grid" else "",
                   (" correction=%d" % self.correction) if self.correction is not None else ""))


class Kernel:
    def __init__(self, name, threads, packed=True):
        self.name, self.threads, self.packed = name, threads, packed
        self.cases = []

    def fits(self, case):
        if not self.packed or case.threads != self.threads or len(self.cases) >= MAX_CASES_PER_KERNEL:
            return False
        dts = {c.dt.name for c in self.cases}
        if dts and case.dt.name not in dts:
            return False
        return sum(c.shared_bytes() for c in self.cases) + case.shared_bytes() <= SHARED_BUDGET

    @property
    def dt(self):
        return self.cases[0].dt

    def x_elems(self):
        return sum(c.src_elems() for c in self.cases)

    def y_elems(self):
        return sum(c.out_elems() for c in self.cases)

    def lines(self):
        """The kernel's text; sets each case's .line (relative to the kernel's first line)."""
        X, Y = "X" + self.name[1:], "Y" + self.name[1:]
        dt = self.dt.name
        out = []
        if not self.packed:
            c = self.cases[0]
            if c.kind == "grid":
                out.append("kernel %s(%s: %s%s global, %s: %s%s global) threads=%d {"
                           % (self.name, X, dt, dims(c.src_shape), Y, dt, dims(c.out_shape), c.threads))
                c.line = len(out)
                out.append("  " + c.red_call("grid", Y, X))
            else:  # cta_grid: global operands indexed by cta_id, no shared memory
                out.append("kernel %s(%s: %s%s global, %s: %s%s global) threads=%d grid=%d {"
                           % (self.name, X, dt, dims(c.src_shape), Y, dt, dims(c.out_shape), c.threads, c.grid))
                c.line = len(out)
                out.append("  " + c.red_call("cta", Y + "[cta_id]", X + "[cta_id]"))
            out.append("}")
            return out
        out.append("kernel %s(%s: %s[%d] global, %s: %s[%d] global) threads=%d {"
                   % (self.name, X, dt, self.x_elems(), Y, dt, self.y_elems(), self.threads))
        xa = ya = 0
        for c in self.cases:
            i = c.cid
            xs = "%s[%d:%d]" % (X, xa, xa + c.src_elems())
            ys = "%s[%d:%d]" % (Y, ya, ya + c.out_elems())
            xa += c.src_elems()
            ya += c.out_elems()
            S, D = "S%d" % i, "D%d" % i
            strides = ""
            if c.kind == "cta_view" and c.view.get("strides"):
                strides = " strides=(%s)" % ", ".join(map(str, c.view["strides"]))
            out.append("  shared %s: %s%s%s" % (S, dt, dims(c.src_shape), strides))
            out.append("  shared %s: %s%s" % (D, dt, dims(c.out_shape)))
            out.append("  cta.copy(%s, %s)" % (S, xs))
            if c.accum:
                out.append("  cta.copy(%s, %s)" % (D, ys))
            out.append("  cta.sync()")
            k = c.kind

            def red(scope, dst, src):
                c.line = len(out)
                out.append("  " + c.red_call(scope, dst, src))

            if k == "cta":
                red("cta", D, S)
            elif k == "cta_view":
                red("cta", D, S + c.view["text"])
            elif k == "warp":
                red("warp", D + "[warp_id]", S + "[warp_id]")
                out.append("  cta.sync()")
            elif k == "warp_sel":
                red("warp[%d]" % c.sel, D, S)
                out.append("  cta.sync()")
            elif k == "warpgroup":
                red("warpgroup", D + "[warpgroup_id]", S + "[warpgroup_id]")
                out.append("  cta.sync()")
            elif k == "thread":
                red("thread", D + "[thread_id]", S + "[thread_id]")
                out.append("  cta.sync()")
            elif k == "thread_local":
                src, dst = S + "[thread_id]", D + "[thread_id]"
                if c.src_local:
                    out.append("  local L%d: %s%s" % (i, dt, dims(c.shape)))
                    out.append("  thread.copy(L%d, %s)" % (i, src))
                    src = "L%d" % i
                if c.dst_local:
                    out.append("  local LD%d: %s%s" % (i, dt, dims(c.kept)))
                    if c.accum:
                        out.append("  thread.copy(LD%d, %s)" % (i, dst))
                    red("thread", "LD%d" % i, src)
                    out.append("  thread.copy(%s, LD%d)" % (dst, i))
                else:
                    red("thread", dst, src)
                out.append("  cta.sync()")
            elif k == "warp_localsrc":
                out.append("  local L%d: %s%s" % (i, dt, dims(c.shape)))
                out.append("  thread.copy(L%d, %s[thread_id])" % (i, S))
                red("warp", D + "[warp_id]", "L%d" % i)
                out.append("  cta.sync()")
            elif k == "warp_localdst":
                out.append("  local LD%d: %s%s" % (i, dt, dims(c.kept)))
                if c.accum:
                    out.append("  thread.copy(LD%d, %s[thread_id])" % (i, D))
                red("warp", "LD%d" % i, S + "[warp_id]")
                out.append("  thread.copy(%s[thread_id], LD%d)" % (D, i))
                out.append("  cta.sync()")
            else:
                raise ValueError(k)
            out.append("  cta.copy(%s, %s)" % (ys, D))
        out.append("}")
        return out

    def x_data(self):
        return np.concatenate([np.asarray(c.src).ravel() for c in self.cases])

    def y_data(self):
        return np.concatenate([np.asarray(c.init).ravel() for c in self.cases])


def pack(cases):
    """Cases -> kernels: packed kinds grouped by threads and dtype within the shared
    budget; cta_grid and grid cases one kernel each. Returns lists of at most
    MAX_KERNELS kernels (one file each)."""
    kernels = []
    for c in cases:
        if c.kind in PACKED:
            for k in kernels:
                if k.fits(c):
                    k.cases.append(c)
                    break
            else:
                k = Kernel("k%d" % len(kernels), c.threads)
                k.cases.append(c)
                kernels.append(k)
        else:
            k = Kernel("k%d" % len(kernels), c.threads, packed=False)
            k.cases.append(c)
            kernels.append(k)
    return [kernels[i:i + MAX_KERNELS] for i in range(0, len(kernels), MAX_KERNELS)]


class TileFile:
    def __init__(self, kernels, ws, workdir, tag):
        self.kernels, self.ws, self.dir, self.tag = kernels, ws, workdir, tag
        self.path = os.path.join(workdir, tag + ".tile")

    def text(self):
        lines = ["# generated by tests/oracle (%s, warp size %d)" % (self.tag, self.ws)]
        for k in self.kernels:
            first = len(lines) + 1  # 1-based line of the kernel header
            kl = k.lines()
            for c in k.cases:
                c.line += first
            lines += kl
        return "\n".join(lines) + "\n"

    def write(self):
        with open(self.path, "w") as f:
            f.write(self.text())


def run_tilec(tilec, args, timeout=300):
    p = subprocess.run([tilec] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def parse_explain(text):
    """`tilec explain` text -> {line: chosen variant or None}, for every statement."""
    chosen = {}
    line = None
    for ln in text.splitlines():
        m = re.match(r"^\s+(?:line|statement) (\d+): ", ln)
        if m:
            line = int(m.group(1))
            chosen[line] = None
            continue
        m = re.match(r"^\s+\* (\S+)\s+priority", ln)
        if m and line is not None:
            chosen[line] = m.group(1)
    return chosen


def settle_variants(tilec, tf):
    """Runs `tilec explain` on the file; forced variants that do not apply to their
    statement are dropped (recorded in case.forced_rejected) and the file is explained
    again. Sets case.chosen. Returns None, or an error text when explain fails for
    another reason (a generated program that does not verify is a bug here or in tilec)."""
    for attempt in range(2):
        tf.write()
        rc, out, err = run_tilec(tilec, ["explain", "--verbose", tf.path, "--target", "sim", "--warp-size", str(tf.ws)])
        chosen = parse_explain(out)
        rejected = []
        for k in tf.kernels:
            for c in k.cases:
                c.chosen = chosen.get(c.line)
                if c.chosen is None and c.variant:
                    rejected.append(c)
        if rc == 0 and not rejected:
            return None
        if not rejected or attempt == 1:
            return "tilec explain %s exited %d:\n%s\n%s" % (tf.path, rc, err[-4000:], out[-2000:])
        for c in rejected:
            c.forced_rejected, c.variant = c.variant, None
    return None


def run_file(tilec, tf, extra=()):
    """Writes the inputs, runs the file on the simulator; returns (rc, stdout, stderr,
    {kernel name: raw output bytes or None when it did not run})."""
    args = ["run", tf.path, "--backend", "sim", "--warp-size", str(tf.ws)]
    outs = {}
    for k in tf.kernels:
        n = k.name[1:]
        xp = os.path.join(tf.dir, "%s.X%s.bin" % (tf.tag, n))
        yp = os.path.join(tf.dir, "%s.Y%s.bin" % (tf.tag, n))
        op = os.path.join(tf.dir, "%s.Y%s.out" % (tf.tag, n))
        with open(xp, "wb") as f:
            f.write(nm.encode(k.dt, k.x_data()))
        with open(yp, "wb") as f:
            f.write(nm.encode(k.dt, k.y_data()))
        if os.path.exists(op):
            os.unlink(op)
        args += ["--in", "X%s=%s" % (n, xp), "--in", "Y%s=%s" % (n, yp), "--out", "Y%s=%s" % (n, op)]
        outs[k.name] = op
    rc, out, err = run_tilec(tilec, args + list(extra))
    got = {}
    for name, op in outs.items():
        got[name] = open(op, "rb").read() if os.path.exists(op) else None
    return rc, out, err, got


def not_applied(cases):
    """A line for each case whose forced variant was not the one that ran."""
    return ["%s: variant=%s did not apply" % (c.describe(), c.variant) for c in cases
            if c.variant and c.chosen != c.variant]


def run_cases(tilec, cases, ws, workdir, tag, check=None):
    """Packs, settles variants, runs and checks cases. Returns (problems, stats): a list of
    text lines describing every failure (empty when all agree with the oracle) and
    {(kind, variant chosen): count}. check(case, flat output) -> mismatches replaces the
    oracle's Case.check (test_edges.py states its answers literally)."""
    problems = []
    stats = {}
    for fi, kernels in enumerate(pack(cases)):
        tf = TileFile(kernels, ws, workdir, "%s_%d" % (tag, fi))
        err = settle_variants(tilec, tf)
        if err:
            problems.append(err)
            continue
        rc, out, serr, got = run_file(tilec, tf)
        if rc != 0:
            problems.append("tilec run %s (warp size %d) exited %d:\n%s" % (tf.path, ws, rc, serr[-4000:]))
        for k in kernels:
            raw = got[k.name]
            if raw is None:
                if rc == 0:
                    problems.append("%s: kernel %s wrote no output" % (tf.path, k.name))
                continue
            flat = nm.decode(k.dt, raw, (k.y_elems(),))
            at = 0
            for c in k.cases:
                n = c.out_elems()
                mism = (check or Case.check)(c, flat[at:at + n])
                at += n
                key = (c.kind, c.chosen)
                stats[key] = stats.get(key, 0) + 1
                if mism:
                    more = "" if len(mism) <= 6 else "\n    ... and %d more" % (len(mism) - 6)
                    problems.append("%s:%d (kernel %s): %s: %d of %d outputs wrong:\n    %s%s"
                                    % (tf.path, c.line, k.name, c.describe(), len(mism), n,
                                       "\n    ".join(str(m) for m in mism[:6]), more))
    return problems, stats


def reference_verdicts(tilec, tf):
    """`tilec run --check` over the file: {kernel name: (ok, its check lines)}. tilec stops
    at the first kernel whose check fails, so the file is run again without the kernels
    already judged. Returns (verdicts, outputs {kernel: raw bytes}, problems)."""
    verdicts, outputs, problems = {}, {}, []
    kernels = list(tf.kernels)
    part = 0
    while kernels:
        f = TileFile(kernels, tf.ws, tf.dir, "%s_ref%d" % (tf.tag, part))
        f.write()
        rc, out, err, got = run_file(tilec, f, ["--check"])
        current, lines = None, {}
        for ln in out.splitlines():
            m = re.match(r"^kernel (\S+) on sim", ln)
            if m:
                current = m.group(1)
                lines[current] = []
            elif current:
                lines[current].append(ln.strip())
        for name, ls in lines.items():
            verdicts[name] = (not any("MISMATCH" in x for x in ls), ls)
            outputs[name] = got.get(name)
        judged = set(lines)
        if rc == 0:
            break
        last = [k for k in kernels if k.name in judged]
        if not last or verdicts[last[-1].name][0]:
            problems.append("tilec run --check %s exited %d:\n%s" % (f.path, rc, err[-3000:]))
            break
        kernels = [k for k in kernels if k.name not in judged]
        part += 1
    return verdicts, outputs, problems
