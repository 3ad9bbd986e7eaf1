"""Thread-block clusters (docs/format.md, "Thread-block clusters") on the simulator against
numpy: a kernel of two clusters copies each CTA's slice of a global tensor into its shared
tile, then reduces every CTA's copy with every op of the table, once into global memory
(indexed by cluster_id) and once into each CTA's shared copy (written out by every CTA), in
every dtype the op takes, over cluster shapes 1 to 8 and 16, odd tiles, thread counts that
leave part of a warp, and data with NaN, ±0, ±inf and subnormals. The expected values are
numerics.py's (argmax / argmin test_argmax.py's, aminmax's min and max), over the tensor
of the cluster's copies with the CTA's rank as its leading reduced dimension. Then the
misuses, each refused with its message.
"""
import os

import numpy as np
import pytest

import data
import numerics as nm
from conftest import ROUNDS, fail_on
from test_argmax import want_index
from tiles import run_tilec

OPS = ["sum", "max", "min", "prod", "sumsq", "norm2", "mean", "logsumexp", "var", "std", "argmax", "argmin",
       "aminmax"]
# (cluster, threads, tile): each CTA's copy is the tile; every shape of a cluster the
# simulator runs, threads from part of a warp to several warps, odd extents
SHAPES = [(1, 64, (3, 7)), (2, 40, (5, 17)), (3, 96, (1, 50)), (4, 128, (4, 33)), (5, 32, (7, 1)), (8, 64, (2, 9)),
          (16, 32, (3, 5)), (6, 160, (1, 129)), (2, 20, (3, 9)), (3, 44, (5, 3))]


def same_value(dt, got, want):
    if dt.is_float:
        return (np.isnan(got) and np.isnan(want)) or (got == want and np.signbit(got) == np.signbit(want))
    return int(got) == int(want)


def run_case(tilec, workdir, n, dname, op, cluster, threads, tile, axis, x):
    """A: [grid, R, C], each CTA's tile; the op over `axis` of the tile (and the ranks) into B
    (the second result into I) once a cluster, and into every CTA's shared D (E) copied to Y
    (Z) by each CTA."""
    grid = 2 * cluster
    R, C = tile
    kept = tile[1 - axis]
    second = "i64" if op in ("argmax", "argmin") else dname if op == "aminmax" else None
    params = ["A: %s[%d, %d, %d] global" % (dname, grid, R, C), "B: %s[2, %d] global" % (dname, kept)]
    if second:
        params.append("I: %s[2, %d] global" % (second, kept))
    params.append("Y: %s[%d, %d] global" % (dname, grid, kept))
    if second:
        params.append("Z: %s[%d, %d] global" % (second, grid, kept))
    body = ["shared S: %s[%d, %d]" % (dname, R, C), "shared D: %s[%d]" % (dname, kept)]
    if second:
        body.append("shared E: %s[%d]" % (second, kept))
    # each CTA reads its own copy: its own barrier orders the copy before the reduction (a
    # cluster's does too)
    body += ["cta.copy(S, A[cta_id])", "cluster.sync()" if n % 2 else "cta.sync()",
             "cluster.%s(B[cluster_id], %sS, axes=(%d))" % (op, "I[cluster_id], " if second else "", axis),
             "cluster.%s(D, %sS, axes=(%d))" % (op, "E, " if second else "", axis),
             "cta.copy(Y[cta_id], D)"]
    if second:
        body.append("cta.copy(Z[cta_id], E)")
    text = "kernel k(%s) threads=%d grid=%d cluster=(%d) {\n%s}\n" % (
        ", ".join(params), threads, grid, cluster, "".join("  %s\n" % b for b in body))
    tf = os.path.join(workdir, "c%d.tile" % n)
    with open(tf, "w") as f:
        f.write(text)
    files = {p: os.path.join(workdir, "c%d.%s" % (n, p)) for p in ("A", "B", "I", "Y", "Z")}
    with open(files["A"], "wb") as f:
        f.write(nm.encode(nm.DTYPES[dname], x))
    args = ["run", "--backend=sim", "--in=A=" + files["A"], "--out=B=" + files["B"], "--out=Y=" + files["Y"]]
    if second:
        args += ["--out=I=" + files["I"], "--out=Z=" + files["Z"]]
    rc, so, se = run_tilec(tilec, args + [tf])
    return rc, se, files, text, second


def check(dt, op, x, got, got2, second, where):
    """got (and got2) of one cluster: x is its copies, [cluster, R, C] with the reduced axis
    of the tile moved last: [cluster, kept, n]."""
    problems = []
    kept = x.shape[1]
    if second:
        for o in range(kept):
            row = x[:, o, :].reshape(-1)  # rank-major: element i of rank r is r n + i
            if op == "aminmax":
                if dt.is_float:
                    v = np.asarray(row, np.float64)
                    wl = np.nan if np.isnan(v).any() else v[np.lexsort((~np.signbit(v), v))[0]]
                    wh = np.nan if np.isnan(v).any() else v[np.lexsort((np.signbit(v), -v))[0]]
                else:
                    wl, wh = min(int(t) for t in row), max(int(t) for t in row)
                if not same_value(dt, got[o], wl) or not same_value(dt, got2[o], wh):
                    problems.append("%s output %d is (%s, %s), the definition gives (%s, %s)"
                                    % (where, o, got[o], got2[o], wl, wh))
                continue
            wi = want_index(op, "propagate", row, dt.is_float)
            if int(got2[o]) != wi or not same_value(dt, got[o], row[wi]):
                problems.append("%s output %d is (%s, %d), the definition gives (%s, %d)"
                                % (where, o, got[o], int(got2[o]), row[wi], wi))
        return problems
    want = nm.expected(dt, op, "propagate", x, (0, 2))
    return ["%s %s" % (where, m) for m in nm.compare(dt, op, got, want)]


def test_cluster_reductions(tilec, rng, tmp_path, repro):
    problems = []
    n = 0
    ran = []
    for r in range(ROUNDS):
        for op in OPS:
            for dname in ("f16", "bf16", "f32", "f64", "i32", "u32", "i64"):
                dt = nm.DTYPES[dname]
                if not dt.is_float and op in nm.FLOAT_ONLY:
                    continue
                cluster, threads, tile = SHAPES[(n + r) % len(SHAPES)]
                axis = (n + r) % 2
                grid = 2 * cluster
                fl = data.flavours_for(dt, op if op != "aminmax" else "max", "propagate")
                flavour = fl[(n + r) % len(fl)]
                # the reduced elements of an output span every CTA's copy: shape the data by
                # [clusters, kept, ranks x n] slices, then lay each rank's part into its CTA
                R, C = tile
                kept, red = tile[1 - axis], tile[axis]
                s = np.asarray(data.values(rng, dt, (2, kept, cluster * red), flavour, (2,)), dtype=object if not
                               dt.is_float else np.float64)
                t = s.reshape(2, kept, cluster, red).transpose(0, 2, 3, 1) if axis == 0 else \
                    s.reshape(2, kept, cluster, red).transpose(0, 2, 1, 3)  # [2, cluster, R, C]
                x = t.reshape(grid, R, C)
                rc, se, files, text, second = run_case(tilec, str(tmp_path), n, dname, op, cluster, threads, tile,
                                                       axis, x)
                n += 1
                ran.append(op)
                what = "%s %s cluster=(%d) threads=%d tile %s axis %d (%s)" % (op, dname, cluster, threads, tile, axis,
                                                                            flavour)
                if rc != 0:
                    problems.append("%s: tilec failed (%d): %s\n%s" % (what, rc, se.strip()[:400], text))
                    continue
                dt2 = nm.DTYPES[second] if second else None
                B = nm.decode(dt, open(files["B"], "rb").read(), (2, kept))
                Y = nm.decode(dt, open(files["Y"], "rb").read(), (grid, kept))
                I = nm.decode(dt2, open(files["I"], "rb").read(), (2, kept)) if second else [None, None]
                Z = nm.decode(dt2, open(files["Z"], "rb").read(), (grid, kept)) if second else [None] * grid
                for c in range(2):
                    copies = s[c].reshape(kept, cluster, red).transpose(1, 0, 2)  # [cluster, kept, n]
                    problems += check(dt, op, copies, B[c], I[c], second, "%s, cluster %d (B):" % (what, c))
                    for rk in range(cluster):
                        problems += check(dt, op, copies, Y[c * cluster + rk], Z[c * cluster + rk], second,
                                          "%s, cluster %d, CTA of rank %d (its shared copy):" % (what, c, rk))
    assert set(ran) == set(OPS) and len(ran) >= 70 * ROUNDS, ran
    fail_on(problems, repro)


# (the kernel's text, the message's part): each misuse refused by `tilec check` with its fix
MISUSES = [
    ("kernel k(A: f32[8, 64] global, B: f32[4] global) threads=64 grid=8 cluster=(2) {\n"
     "  shared S: f32[64]\n  warp[1].copy(S, A[cta_id])\n  cluster.sum(B[cluster_id], S, axes=(0))\n}\n",
     "add cta.sync() before this statement"),
    ("kernel k(A: f32[8, 64] global, B: f32[4] global, C: f32[8] global) threads=64 grid=8 cluster=(2) {\n"
     "  shared S: f32[64]\n  cta.copy(S, A[cta_id])\n  cta.sync()\n  cta.copy(C[cta_id], B[cluster_id])\n"
     "  cluster.sum(B[cluster_id], S, axes=(0))\n}\n",
     "add cluster.sync() before this statement (cta.sync() orders one CTA)"),
    ("kernel k(A: f32[6, 64] global, B: f32[3] global) threads=64 grid=6 cluster=(4) {\n"
     "  shared S: f32[64]\n  cta.copy(S, A[cta_id])\n  cluster.sync()\n  cluster.sum(B[cluster_id], S, axes=(0))\n}\n",
     "grid=6 is not a multiple of cluster=(4): a launch runs whole clusters; make grid 4 or 8"),
    ("kernel k(A: f32[8, 64] global, B: f32[4] global) threads=64 grid=8 {\n"
     "  shared S: f32[64]\n  cluster.sum(B[cluster_id], S, axes=(0))\n}\n",
     "cluster scope needs a kernel of thread-block clusters"),
    ("kernel k(A: f32[8, 64] global, B: f32[4] global) threads=64 grid=8 cluster=(2) {\n"
     "  cluster.sum(B[cluster_id], A[cta_id], axes=(0))\n}\n",
     "a cluster reduction reads a shared tile, every CTA's copy of it"),
    ("kernel k(A: f32[8, 64] global, B: f32[4] global) threads=64 grid=8 cluster=(2) {\n"
     "  shared S: f32[64]\n  cta.copy(S, A[cta_id])\n  cluster.sync()\n  cluster.copy(S, S)\n}\n",
     "cluster scope is for reductions"),
    ("kernel k(A: f32[8, 64] global, B: f32[8] global) threads=64 grid=8 cluster=(2) {\n"
     "  shared S: f32[64]\n  cta.copy(S, A[cta_id])\n  cluster.sync()\n  cluster.sum(B, S, axes=(0))\n}\n",
     "all 4 clusters of the grid write the same part of 'B'; index it by cluster_id"),
    ("kernel k(A: f32[8, 64] global, B: f32[8] global) threads=64 grid=8 cluster=(2) {\n"
     "  shared S: f32[64]\n  cta.copy(S, A[cta_id])\n  cluster.sync()\n  cluster.sum(B[cta_id], S, axes=(0))\n}\n",
     "cta_id differs between the threads of one cluster instance"),
    ("kernel k(A: f32[8, 64] global, B: f32[4] global) threads=64 grid=8 cluster=(2) {\n"
     "  cta.sum(B[cta_in_cluster], A[cta_id], axes=(0))\n}\n",
     "index it by cta_id"),
    ("kernel k(A: f32[8, 64] global, B: f32[4] global) threads=64 grid=8 {\n"
     "  cta.copy(B[cta_in_cluster], A[cta_id, 0:1])\n}\n",
     "cta_in_cluster needs a kernel of thread-block clusters"),
    ("kernel k(A: f32[34, 64] global, B: f32[2] global) threads=64 grid=34 cluster=(17) {\n"
     "  shared S: f32[64]\n  cta.copy(S, A[cta_id])\n  cluster.sync()\n  cluster.sum(B[cluster_id], S, axes=(0))\n}\n",
     "cluster 17 is out of range (1 to 16)"),
    ("func f(S: f32[64] shared) threads=64 cluster=(2) {\n  cta.fill(S, 0)\n}\n",
     "a func has no cluster"),
    ("func f(S: f32[64] shared, B: f32[1] shared) threads=64 {\n  cluster.sum(B, S, axes=(0))\n}\n",
     "cluster scope is a kernel's: a func has no cluster"),
    ("kernel k(A: f32[8, 64] global, V: f32[2] global) threads=64 grid=8 cluster=(4) {\n  shared S: f32[64]\n"
     "  shared X: i64[1]\n  cta.copy(S, A[cta_id])\n  cta.sync()\n  cluster.argmax(V[cluster_id], X, S, axes=(0))\n}\n",
     "'X' is shared but 'V' is global; a cluster reduction writes both results to shared memory"),
    ("kernel k(A: f32[8, 64] global, B: f32[8] global) threads=64 grid=8 cluster=(4) {\n  shared S: f32[64]\n"
     "  cta.copy(S, A[cta_id])\n  cta.sync()\n  cluster.sum(B[cluster_id], S, axes=(0))\n  cta.copy(S[0:1], B[cta_id])\n}\n",
     "'B' is written once a cluster at line 5 (B[cluster_id]); reach it by cluster_id here too"),
    ("kernel k(A: f32[100] global, B: f32[1] global) threads=256 cluster=(3) {\n  grid.sum(B, A, axes=(0))\n}\n",
     "a grid statement must be the only statement of a kernel without grid= or cluster="),
    ("kernel k(A: f32[4] global) threads=32 grid=4 cluster=(4, 1, 1) {\n}\n",
     "a cluster is one-dimensional here: write cluster=(4), 4 CTAs"),
    # a CTA's part of a global buffer the cluster shares, read by another CTA: a cluster's barrier
    ("kernel k(X: f32[2, 64] global, W: f32[2, 64] global, Y: f32[2, 64] global) threads=64 grid=2 cluster=(2) {\n"
     "  shared S: f32[64]\n  cta.copy(W[cta_in_cluster], X[cta_id])\n  cta.sync()\n  cta.copy(S, W[1])\n  cta.sync()\n"
     "  cta.copy(Y[cta_id], S)\n}\n",
     "'W' is read here and written at line 3, by threads of other CTAs of the cluster, with no cluster barrier between"),
]


def test_cluster_parts_ordered(tilec, tmp_path):
    """A CTA's own part of a shared global buffer needs only its own barrier; another CTA's
    part, a cluster's (and then gives that CTA's data)."""
    tf = tmp_path / "k.tile"
    tf.write_text("kernel k(X: f32[2, 64] global, W: f32[2, 64] global, Y: f32[2, 64] global, Z: f32[2, 64] global) "
                  "threads=64 grid=2 cluster=(2) {\n  shared S: f32[64]\n  cta.copy(W[cta_in_cluster], X[cta_id])\n"
                  "  cta.sync()\n  cta.copy(S, W[cta_in_cluster])\n  cta.sync()\n  cta.copy(Y[cta_id], S)\n"
                  "  cluster.sync()\n  cta.copy(S, W[1])\n  cta.sync()\n  cta.copy(Z[cta_id], S)\n}\n")
    x = np.arange(128, dtype="<f4")
    (tmp_path / "x").write_bytes(x.tobytes())
    rc, so, se = run_tilec(tilec, ["run", "--backend=sim", "--in=X=%s" % (tmp_path / "x"), "--out=Y=%s" % (tmp_path / "y"),
                                   "--out=Z=%s" % (tmp_path / "z"), str(tf)])
    assert rc == 0, se
    y = np.frombuffer((tmp_path / "y").read_bytes(), "<f4").reshape(2, 64)
    z = np.frombuffer((tmp_path / "z").read_bytes(), "<f4").reshape(2, 64)
    assert (y == x.reshape(2, 64)).all() and (z == x.reshape(2, 64)[1]).all()


@pytest.mark.parametrize("text,message", MISUSES, ids=["misuse%d" % i for i in range(len(MISUSES))])
def test_cluster_misuse(tilec, tmp_path, text, message):
    tf = tmp_path / "k.tile"
    tf.write_text(text)
    rc, so, se = run_tilec(tilec, ["check", str(tf)])
    assert rc != 0 and message in se, se


@pytest.mark.parametrize("target,message", [
    (["--target=hip"], "HIP gfx90a has no thread-block clusters"),
    (["--target=cuda", "--arch=sm_80"], "CUDA sm_80 has no thread-block clusters"),
    (["--target=cuda", "--arch=sm_120"], "more CTAs than a cluster has on CUDA sm_120 (8, the portable size"),
    (["--backend=sim", "--warp-size=64"], "the simulator at warp size 64 has no thread-block clusters"),
])
def test_cluster_targets(tilec, tmp_path, target, message):
    """Clusters are CUDA's, sm_90 and later, 16 CTAs only where the non-portable size is."""
    tf = tmp_path / "k.tile"
    tf.write_text("kernel k(A: f32[32, 64] global, B: f32[2] global) threads=64 grid=32 cluster=(16) {\n"
                  "  shared S: f32[64]\n  cta.copy(S, A[cta_id])\n  cluster.sync()\n"
                  "  cluster.sum(B[cluster_id], S, axes=(0))\n}\n")
    if target[0].startswith("--backend"):  # the simulator at wave64
        rc, so, se = run_tilec(tilec, ["run"] + target + [str(tf)])
    else:
        rc, so, se = run_tilec(tilec, ["emit"] + target + [str(tf), "-o", str(tmp_path / "out")])
    assert rc != 0 and message in se, se
    assert not (tmp_path / "out").exists()
