/*
 * verify.c — the rules of "Meaning" in docs/format.md, checked on tile IR however it was
 * made (parsed or built through the API).
 *
 * Every violation becomes one diagnostic at the offending token; the verifier goes on
 * to the next statement so a user sees all problems at once. The barrier analysis (reads
 * of data other threads wrote since the last wide-enough barrier) is in race.c and runs
 * only on kernels that pass every other rule, since it needs valid regions.
 */
#include "loop.h" /* ir.h, and the op table */
#include "numeric.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct verifier {
    tilec_program *p;
    tilec_kernel *k;
    const ir_stmt *st; /* the statement being checked, or NULL */
    int ws;            /* warp size */
    const ir_limits *lim;
    int64_t shared, local; /* bytes allocated so far in the kernel; -1 once reported */
    bool oom;              /* the race check ran out of memory */
} verifier;

static void err(verifier *v, ir_pos at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void err(verifier *v, ir_pos at, const char *fmt, ...) {
    ir_str msg = {0};
    va_list ap;
    va_start(ap, fmt);
    ir_str_vprintf(&msg, fmt, ap);
    va_end(ap);
    if (at.line == 0 && !v->st && v->k)
        ir_diag_add(v->p->ctx, &v->p->src, TILEC_SEV_ERROR, 0, 0, "%s '%s': %s",
                    v->k->is_func ? "func" : "kernel", v->k->name, msg.data ? msg.data : "?");
    else
        ir_stmt_diag(v->p, v->k, v->st, TILEC_SEV_ERROR, at, "%s", msg.data ? msg.data : "?");
    ir_str_free(&msg);
}

static const char *scope_plural(tilec_scope s) {
    static const char *const names[] = {"CTAs", "warpgroups", "warps", "threads", "grids", "clusters"};
    return names[s];
}

/* Scope s is at least as wide as scope t (cluster > cta > warpgroup > warp > thread). */
static int narrowness(tilec_scope s) { return s == TILEC_SCOPE_CLUSTER ? -1 : (int)s; }
static bool wider_or_equal(tilec_scope s, tilec_scope t) { return narrowness(s) <= narrowness(t); }

/* ---- regions -------------------------------------------------------------------------- */

/* Checks the indices of one region of statement st against its buffer and scope. */
static bool check_region(verifier *v, const ir_stmt *st, const ir_region *r) {
    const tilec_buffer *b = r->buf;
    bool ok = true;
    tilec_scope scope = st->exec.scope;
    if (b->layout.kind != TILEC_LAYOUT_NONE) { /* a fragment: a whole region, at its own scope */
        tilec_scope own = ir_frag_scope(b);
        if (scope != own) {
            err(v, r->pos, "'%s' is a fragment of a %s (layout=%s); use it at %s scope", b->name, tilec_scope_name(own),
                tilec_layout_name(b->layout.kind), tilec_scope_name(own));
            return false;
        }
        if (own == TILEC_SCOPE_CTA && v->k->threads != ir_frag_threads(b)) {
            err(v, r->pos, "'%s' is a fragment of a CTA of %d threads (its layout has %d warp bit%s), but '%s' has "
                           "threads=%d; write threads=%d, or give the layout the warp bits of %d threads",
                b->name, ir_frag_threads(b), b->frag_warp, b->frag_warp == 1 ? "" : "s", v->k->name, v->k->threads,
                ir_frag_threads(b), v->k->threads);
            return false;
        }
        if (r->nindex) {
            err(v, r->index[0].pos, "'%s' is a fragment; a statement takes it whole, without indices", b->name);
            return false;
        }
        return true;
    }
    if (b->space == TILEC_SPACE_LOCAL && scope != TILEC_SCOPE_THREAD && scope != TILEC_SCOPE_WARP) {
        err(v, r->pos, "'%s' is local (private to each thread) and cannot be used at %s scope; "
                       "use it at thread or warp scope", b->name, tilec_scope_name(scope));
        ok = false;
    }
    for (int d = 0; d < r->nindex; d++) {
        const ir_index *ix = &r->index[d];
        int64_t e = b->shape[d];
        if (ir_index_is_id(ix)) {
            const char *id = ir_index_id_word(ix);
            bool rank = ix->kind == TILEC_INDEX_RANK, by_cluster = rank || ix->id == TILEC_SCOPE_CLUSTER;
            if (by_cluster && v->k->is_func) {
                err(v, ix->pos, "%s is a kernel's: a func has no cluster (the kernel that calls it may have one; pass "
                                "the func the parts it works on)", id);
                ok = false;
                continue;
            }
            if (by_cluster && !v->k->cluster) {
                err(v, ix->pos, "%s needs a kernel of thread-block clusters: give '%s' cluster=(N) in its header "
                                "(threads=%d grid=G cluster=(N), G a multiple of N)", id, v->k->name, v->k->threads);
                ok = false;
                continue;
            }
            if (d != 0) {
                err(v, ix->pos, "%s indexes dimension %d of '%s'; ids may only index the first "
                                "dimension", id, d, b->name);
                ok = false;
                continue;
            }
            if (b->space == TILEC_SPACE_LOCAL) {
                err(v, ix->pos, "'%s' is local (private to each thread); index it without %s",
                    b->name, id);
                ok = false;
                continue;
            }
            if ((by_cluster || ix->id == TILEC_SCOPE_CTA) && b->space != TILEC_SPACE_GLOBAL) {
                err(v, ix->pos, "%s indexes '%s', which is %s; %s only indexes global "
                                "buffers (each CTA has its own shared memory)",
                    id, b->name, tilec_space_name(b->space), id);
                ok = false;
                continue;
            }
            if (rank ? scope == TILEC_SCOPE_CLUSTER : !wider_or_equal(ix->id, scope)) {
                err(v, ix->pos, "%s differs between the threads of one %s instance; a %s-scope "
                                "statement can use ids of its own scope or wider",
                    id, tilec_scope_name(scope), tilec_scope_name(scope));
                ok = false;
                continue;
            }
            /* the largest id value this statement reaches must be inside the extent */
            int64_t top;
            if (rank) {
                top = v->k->cluster - 1;
            } else if (ix->id == TILEC_SCOPE_CLUSTER) {
                top = v->k->grid / v->k->cluster - 1;
            } else if (ix->id == TILEC_SCOPE_CTA) {
                if (v->k->is_func) continue; /* the caller's grid is not known here */
                top = v->k->grid - 1;
            } else {
                int size = ir_scope_size(scope, v->k->threads, v->ws);
                int last = st->exec.instance >= 0 ? st->exec.instance
                                                  : ir_scope_count(scope, v->k->threads, v->ws) - 1;
                top = (int64_t)last * size / ir_scope_size(ix->id, v->k->threads, v->ws);
            }
            if (top >= e) {
                err(v, ix->pos, "%s reaches %lld but dimension 0 of '%s' has extent %lld",
                    id, (long long)top, b->name, (long long)e);
                ok = false;
            }
            continue;
        }
        int64_t lo, hi;
        ir_index_range(ix, e, &lo, &hi);
        if (ix->kind == TILEC_INDEX_AT && (lo < 0 || lo >= e)) {
            err(v, ix->pos, "index %lld is out of range for dimension %d of '%s' (extent %lld)",
                (long long)ix->start, d, b->name, (long long)e);
            ok = false;
        } else if (ix->kind == TILEC_INDEX_SLICE && (lo < 0 || hi > e || lo > e || hi < 0)) {
            err(v, ix->pos, "slice %lld:%lld is out of range for dimension %d of '%s' (extent %lld)",
                (long long)lo, (long long)hi, d, b->name, (long long)e);
            ok = false;
        } else if (ix->kind == TILEC_INDEX_SLICE && lo >= hi) {
            err(v, ix->pos, "slice %lld:%lld of dimension %d of '%s' is empty", (long long)lo,
                (long long)hi, d, b->name);
            ok = false;
        }
    }
    return ok;
}

/* Can two regions of one statement touch the same element? Ids of one instance have one
 * value, so the same id on both sides selects the same position. */
static bool may_overlap(const ir_region *a, const ir_region *b) {
    if (a->buf != b->buf) return false;
    for (int d = 0; d < a->buf->rank; d++) {
        const ir_index *x = d < a->nindex ? &a->index[d] : NULL;
        const ir_index *y = d < b->nindex ? &b->index[d] : NULL;
        if (x && y && ir_index_is_id(x) && ir_index_is_id(y)) {
            if (x->kind == y->kind && x->id == y->id) continue;
            return true; /* different ids may meet */
        }
        if ((x && ir_index_is_id(x)) || (y && ir_index_is_id(y))) continue;
        int64_t e = a->buf->shape[d], xl = 0, xh = e, yl = 0, yh = e;
        if (x) ir_index_range(x, e, &xl, &xh);
        if (y) ir_index_range(y, e, &yl, &yh);
        if (xh <= yl || yh <= xl) return false;
    }
    return true;
}

/* A sub-CTA statement run by every instance writes one place from all of them unless the
 * destination is indexed by the scope's own id; the same holds across the CTAs of a grid
 * for global destinations and cta_id. */
static void check_dst_per_instance(verifier *v, const ir_stmt *st, const ir_region *r) {
    const tilec_buffer *b = r->buf;
    if (b->space == TILEC_SPACE_LOCAL) return; /* private to each thread */
    tilec_scope s = st->exec.scope;
    const ir_index *first = r->nindex > 0 ? &r->index[0] : NULL;
    tilec_scope by = first && first->kind == TILEC_INDEX_ID ? first->id : TILEC_SCOPE_COUNT;
    int count = ir_scope_count(s, v->k->threads, v->ws);
    if (s == TILEC_SCOPE_CLUSTER) { /* one instance a cluster; each CTA writes its own shared copy */
        int64_t clusters = v->k->grid / v->k->cluster;
        if (b->space == TILEC_SPACE_GLOBAL && clusters > 1 && by != TILEC_SCOPE_CLUSTER)
            err(v, r->pos, "all %lld clusters of the grid write the same part of '%s'; index it by cluster_id "
                           "(%s[cluster_id])", (long long)clusters, b->name, b->name);
        return;
    }
    if (s != TILEC_SCOPE_CTA && st->exec.instance < 0 && count > 1 && by != s) {
        err(v, r->pos, "all %d %s write the same part of '%s'; index it by %s (%s[%s]) or "
                       "select one instance (%s[0].%s)",
            count, scope_plural(s), b->name, ir_id_name(s), b->name, ir_id_name(s),
            tilec_scope_name(s), ir_stmt_word(st));
    } else if (b->space == TILEC_SPACE_GLOBAL && !v->k->is_func && v->k->grid > 1 &&
               by != TILEC_SCOPE_CTA && !(first && first->kind == TILEC_INDEX_RANK && v->k->grid == v->k->cluster)) {
        err(v, r->pos, "all %lld CTAs of the grid write the same part of '%s'; index it by "
                       "cta_id (%s[cta_id])",
            (long long)v->k->grid, b->name, b->name);
    }
}

/* ---- statements ----------------------------------------------------------------------- */

/* A grid statement: every CTA of the launch works on one whole-tensor reduction, so it
 * is the only statement of a kernel, reads and writes global memory, and lets tilec pick
 * the number of CTAs. */
static bool check_grid(verifier *v, const ir_stmt *st) {
    const tilec_kernel *k = v->k;
    if (st->kind == IR_MAP) {
        err(v, st->pos, "a map runs inside a CTA; for an elementwise pass over a whole tensor, give the kernel grid= "
                        "and index its global buffers by cta_id: cta.map(Y[cta_id], ...)");
        return false;
    }
    if (st->kind != IR_REDUCE) {
        char ops[96];
        err(v, st->pos, "grid scope is for reductions (%s); use cta scope for %s", ir_op_names(ops, sizeof ops, ", "),
            st->kind == IR_COPY ? "copy" : st->kind == IR_FILL ? "fill" : "sync");
        return false;
    }
    if (st->exec.instance >= 0) {
        err(v, st->pos, "the grid is a single instance; write grid.%s without an index", tilec_op_name(st->op));
        return false;
    }
    if (k->is_func || k->nstmts != 1 || k->grid != 1 || k->cluster) {
        err(v, st->pos, "a grid statement must be the only statement of a kernel without grid= or cluster= "
                        "(tilec chooses how many CTAs share it)");
        return false;
    }
    const ir_region *r[3] = {&st->dst, &st->src, &st->dst2};
    for (int i = 0; i < 3 && r[i]->buf; i++) {
        if (r[i]->buf->space != TILEC_SPACE_GLOBAL) {
            err(v, r[i]->pos, "'%s' is %s; a grid statement reads and writes global buffers", r[i]->buf->name,
                tilec_space_name(r[i]->buf->space));
            return false;
        }
        for (int d = 0; d < r[i]->nindex; d++)
            if (ir_index_is_id(&r[i]->index[d])) {
                err(v, r[i]->index[d].pos, "%s has no value in a grid statement (all CTAs share it)",
                    ir_index_id_word(&r[i]->index[d]));
                return false;
            }
    }
    return true;
}

/* A cluster statement: a reduction of a shared tile over every CTA's copy of it, or the
 * cluster's barrier. */
static bool check_cluster(verifier *v, const ir_stmt *st) {
    const tilec_kernel *k = v->k;
    if (k->is_func) {
        err(v, st->pos, "cluster scope is a kernel's: a func has no cluster (its caller's kernel may reduce over one)");
        return false;
    }
    if (!k->cluster) {
        err(v, st->pos, "cluster scope needs a kernel of thread-block clusters: give '%s' cluster=(N) in its header "
                        "(threads=%d grid=G cluster=(N), G a multiple of N)", k->name, k->threads);
        return false;
    }
    if (st->exec.instance >= 0) {
        err(v, st->pos, "a cluster is one instance of its scope; write cluster.%s without an index", ir_stmt_word(st));
        return false;
    }
    if (st->kind == IR_SYNC) return true;
    if (st->kind != IR_REDUCE) {
        char ops[96];
        err(v, st->pos, "cluster scope is for reductions (%s) and sync(); run the %s at cta scope, where each CTA works "
                        "on its own shared memory", ir_op_names(ops, sizeof ops, ", "), ir_stmt_word(st));
        return false;
    }
    const ir_region *src = &st->src;
    if (src->buf->space != TILEC_SPACE_SHARED || src->buf->layout.kind != TILEC_LAYOUT_NONE) {
        err(v, src->pos, "'%s' is %s; a cluster reduction reads a shared tile, every CTA's copy of it: copy the data "
                         "into shared memory at cta scope, then cluster.sync()", src->buf->name,
            src->buf->layout.kind != TILEC_LAYOUT_NONE ? "a fragment" : tilec_space_name(src->buf->space));
        return false;
    }
    const ir_region *d[2] = {&st->dst, &st->dst2};
    if (d[1]->buf && d[1]->buf->space != d[0]->buf->space && d[0]->buf->space != TILEC_SPACE_LOCAL &&
        d[1]->buf->space != TILEC_SPACE_LOCAL) {
        err(v, d[1]->pos, "'%s' is %s but '%s' is %s; a cluster reduction writes both results to shared memory (every "
                          "CTA's copy) or both to global memory (once a cluster)", d[1]->buf->name,
            tilec_space_name(d[1]->buf->space), d[0]->buf->name, tilec_space_name(d[0]->buf->space));
        return false;
    }
    for (int i = 0; i < 2 && d[i]->buf; i++)
        if (d[i]->buf->space == TILEC_SPACE_LOCAL) {
            err(v, d[i]->pos, "'%s' is local; a cluster reduction writes a shared buffer (each CTA gets the result in "
                              "its copy) or a global one (written once a cluster)", d[i]->buf->name);
            return false;
        }
    return true;
}

static bool check_exec(verifier *v, const ir_stmt *st) {
    tilec_scope s = st->exec.scope;
    if (s == TILEC_SCOPE_GRID) return check_grid(v, st);
    if (s == TILEC_SCOPE_CLUSTER) return check_cluster(v, st);
    int threads = v->k->threads;
    if (s == TILEC_SCOPE_WARPGROUP && threads % 128 != 0) {
        err(v, st->pos, "warpgroup scope needs a multiple of 128 threads, but '%s' has "
                        "threads=%d", v->k->name, threads);
        return false;
    }
    int count = ir_scope_count(s, threads, v->ws);
    if (st->exec.instance >= count) {
        err(v, st->pos, "%s[%d] does not exist: threads=%d gives %d %s (warp size %d)",
            tilec_scope_name(s), st->exec.instance, threads, count, scope_plural(s), v->ws);
        return false;
    }
    return true;
}

static void check_fill_value(verifier *v, const ir_stmt *st) {
    tilec_dtype t = st->dst.buf->dtype;
    ir_value x = st->fill;
    const char *tn = tilec_dtype_name(t);
    if (!ir_dtype_is_float(t)) {
        if (!x.is_int && (isnan(x.f) || isinf(x.f) || !x.exact)) {
            err(v, st->value_pos, "fill value of '%s' must be an integer, since it is %s", st->dst.buf->name, tn);
            return;
        }
        int64_t lo = t == TILEC_I32 ? INT32_MIN : t == TILEC_U32 ? 0 : INT64_MIN;
        int64_t hi = t == TILEC_I32 ? INT32_MAX : t == TILEC_U32 ? (int64_t)UINT32_MAX : INT64_MAX;
        if (x.too_big)
            err(v, st->value_pos, "fill value %g is out of range for %s (%lld to %lld)", x.f, tn, (long long)lo, (long long)hi);
        else if (x.i < lo || x.i > hi)
            err(v, st->value_pos, "fill value %lld is out of range for %s (%lld to %lld)",
                (long long)x.i, tn, (long long)lo, (long long)hi);
        return;
    }
    double f = x.is_int ? (double)x.i : x.f;
    if (isfinite(f) && isinf(x.typed)) /* a finite number that rounds to infinity in the dtype */
        err(v, st->value_pos, "fill value %g overflows %s; write inf or -inf for infinity", f, tn);
}

/* argmax / argmin, aminmax, logsumexp (keys of any value: lower_util.c): the second
 * destination holds the index (below 2^31 - 1), or the maximum. */
static void check_keyed(verifier *v, const ir_stmt *st, int64_t keep) {
    const ir_region *dst = &st->dst, *two = &st->dst2, *src = &st->src;
    const char *op = tilec_op_name(st->op), *what = ir_op(st->op)->second;
    bool index = ir_op(st->op)->key == IR_KEY_INDEX;
    if (!what) return;
    tilec_dtype it = two->buf->dtype;
    if (index && it != TILEC_I64 && it != TILEC_I32)
        err(v, two->pos, "%s: the index destination '%s' is %s; make it i64 (or i32)", op, two->buf->name,
            tilec_dtype_name(it));
    if (!index && it != dst->buf->dtype)
        err(v, two->pos, "%s: the maximum's destination '%s' is %s but the minimum's '%s' is %s; they must match", op,
            two->buf->name, tilec_dtype_name(it), dst->buf->name, tilec_dtype_name(dst->buf->dtype));
    int64_t have = ir_region_elems(two);
    if (have != keep)
        err(v, two->pos, "%s: the %s's destination '%s' has %lld element%s but the source keeps %lld after reducing "
                         "its axes", op, what, two->buf->name, (long long)have, have == 1 ? "" : "s", (long long)keep);
    int64_t len = ir_region_elems(src) / (keep ? keep : 1);
    if (st->exec.scope == TILEC_SCOPE_CLUSTER) len *= v->k->cluster; /* every CTA's copy */
    if (index && len >= INT32_MAX)
        err(v, st->op_pos, "%s reduces %lld elements per result; a slice holds at most 2^31 - 2 (its indices fit an i32)", op, (long long)len);
    if (index && src->buf->space == TILEC_SPACE_LOCAL && st->exec.scope != TILEC_SCOPE_THREAD &&
        src->buf->layout.kind == TILEC_LAYOUT_NONE)
        err(v, src->pos, "%s of local '%s' at %s scope: every lane holds its own, so an element has no index in "
                         "one reduced space; copy it to shared memory first, or reduce at thread scope",
            op, src->buf->name, tilec_scope_name(st->exec.scope));
    if (may_overlap(two, src) || may_overlap(two, dst))
        err(v, two->pos, "%s: the %s's destination overlaps the %s in '%s'; give it a buffer of its own", op, what,
            may_overlap(two, src) ? "source" : "first destination", two->buf->name);
}

static void check_reduce(verifier *v, ir_stmt *st) {
    const ir_region *dst = &st->dst, *src = &st->src;
    const char *op = tilec_op_name(st->op);
    bool grid = st->exec.scope == TILEC_SCOPE_GRID;
    tilec_dtype wide = tilec_dtype_wide(src->buf->dtype);
    (void)grid;
    if (dst->buf->dtype != src->buf->dtype && dst->buf->dtype != wide)
        err(v, dst->pos, wide != src->buf->dtype
                             ? "%s: destination '%s' is %s but source '%s' is %s; make it %s, or %s (the wider result)"
                             : "%s: destination '%s' is %s but source '%s' is %s; they must match",
            op, dst->buf->name, tilec_dtype_name(dst->buf->dtype), src->buf->name, tilec_dtype_name(src->buf->dtype),
            tilec_dtype_name(src->buf->dtype), tilec_dtype_name(wide));
    if (ir_op(st->op)->floats_only && !ir_dtype_is_float(src->buf->dtype))
        err(v, st->op_pos, "%s is defined for float dtypes; source '%s' is %s (sum and sumsq take integers)",
            op, src->buf->name, tilec_dtype_name(src->buf->dtype));
    if (st->accum && ir_op(st->op)->finish != IR_FINISH_NONE && !ir_op(st->op)->accum_element)
        err(v, st->op_pos, "accum=true does not apply to %s: its result does not combine with the destination's "
                           "(reduce into another buffer and add)", op);
    if (st->nan == TILEC_NAN_IGNORE && !ir_op(st->op)->compares)
        err(v, st->nan_pos, "nan=ignore applies to the ops that compare (max, min, argmax, argmin, aminmax); a %s with a NaN is NaN", tilec_op_name(st->op));
    else if (st->nan == TILEC_NAN_IGNORE && !ir_dtype_is_float(src->buf->dtype))
        err(v, st->nan_pos, "nan=ignore has no effect on %s, which has no NaN",
            tilec_dtype_name(src->buf->dtype));
    bool corrects = tilec_op_takes_correction(st->op);
    ir_pos cpos = st->correction_pos.line ? st->correction_pos : st->op_pos;
    if (st->correction_given && !corrects)
        err(v, cpos, "correction= applies to var and std only; %s takes none", op);
    else if (st->correction < 0)
        err(v, cpos, "correction=%lld is negative; give 0 (the population variance, numpy's default) or more "
                     "(1, Bessel's, is the default)", (long long)st->correction);
    if (corrects && src->buf->space == TILEC_SPACE_LOCAL && st->exec.scope != TILEC_SCOPE_THREAD &&
        src->buf->layout.kind == TILEC_LAYOUT_NONE)
        err(v, src->pos, "%s of local '%s' at %s scope: every lane holds its own elements, and the lanes' sums "
                         "must share the slice's first element; copy it to shared memory first, or reduce at "
                         "thread scope", op, src->buf->name, tilec_scope_name(st->exec.scope));
    int64_t dims[TILEC_MAX_RANK];
    int rank = ir_region_shape(src, dims);
    bool reduced[TILEC_MAX_RANK] = {0};
    ir_pos apos = st->axes_pos.line ? st->axes_pos : st->op_pos;
    for (int i = 0; i < st->naxes; i++) {
        int a = st->axes[i], n = a < 0 ? a + rank : a;
        if (n < 0 || n >= rank) {
            err(v, apos, "axis %d is out of range: the source region '%s' has %d dimension%s "
                         "(axes %d to %d)", a, src->buf->name, rank, rank == 1 ? "" : "s",
                -rank, rank - 1);
            return;
        }
        if (reduced[n]) {
            err(v, apos, "axis %d is given twice (as %d)", n, a);
            return;
        }
        reduced[n] = true;
    }
    int64_t keep = 1;
    for (int d = 0; d < rank; d++)
        if (!reduced[d]) keep *= dims[d];
    int64_t have = ir_region_elems(dst);
    if (have != keep)
        err(v, dst->pos, "%s: destination '%s' has %lld element%s but the source keeps %lld "
                         "after reducing its axes", op, dst->buf->name, (long long)have,
            have == 1 ? "" : "s", (long long)keep);
    if (may_overlap(dst, src))
        err(v, dst->pos, "%s: destination and source overlap in '%s'; reduce into another buffer",
            op, dst->buf->name);
    if (ir_op(st->op)->key != IR_KEY_NONE) check_keyed(v, st, keep);
}

/* In a kernel of several CTAs, a whole global buffer (no index) whose first extent is the
 * grid, holding the other side of a copy once per CTA, is most likely one CTA's slice
 * without its index: "; in a kernel of grid=8 each CTA copies its own slice: A[cta_id]",
 * else "". */
static void cta_slice_hint(const verifier *v, const ir_region *whole, int64_t n_whole, int64_t n_other, char *buf,
                           size_t size) {
    int64_t grid = v->k->grid;
    buf[0] = '\0';
    if (grid > 1 && whole->nindex == 0 && whole->buf->space == TILEC_SPACE_GLOBAL && whole->buf->shape[0] == grid &&
        n_other > 0 && n_whole / grid == n_other)
        snprintf(buf, size, "; in a kernel of grid=%lld each CTA copies its own slice: %s[cta_id]", (long long)grid,
                 whole->buf->name);
}

static void check_copy(verifier *v, const ir_stmt *st) {
    const ir_region *dst = &st->dst, *src = &st->src;
    if (dst->buf->dtype != src->buf->dtype)
        err(v, dst->pos, "copy: destination '%s' is %s but source '%s' is %s; they must match",
            dst->buf->name, tilec_dtype_name(dst->buf->dtype), src->buf->name,
            tilec_dtype_name(src->buf->dtype));
    int64_t nd = ir_region_elems(dst), ns = ir_region_elems(src);
    char hint[TILEC_MAX_NAME + 80];
    if (ns > nd) cta_slice_hint(v, src, ns, nd, hint, sizeof hint);
    else cta_slice_hint(v, dst, nd, ns, hint, sizeof hint);
    if (nd != ns)
        err(v, dst->pos, "copy: destination '%s' has %lld elements but source '%s' has %lld%s",
            dst->buf->name, (long long)nd, src->buf->name, (long long)ns, hint);
    if (may_overlap(dst, src))
        err(v, dst->pos, "copy: destination and source overlap in '%s'", dst->buf->name);
    bool fd = dst->buf->layout.kind != TILEC_LAYOUT_NONE, fs = src->buf->layout.kind != TILEC_LAYOUT_NONE;
    if (fd != fs && (fd ? src : dst)->buf->space == TILEC_SPACE_LOCAL)
        err(v, (fd ? src : dst)->pos, "copy: '%s' is a fragment (a tile the lanes share) and '%s' each thread's own "
                                      "array; copy a fragment to or from shared or global memory",
            (fd ? dst : src)->buf->name, (fd ? src : dst)->buf->name);
    else if (st->exec.scope == TILEC_SCOPE_WARP && src->buf->space == TILEC_SPACE_LOCAL &&
        src->buf->layout.kind == TILEC_LAYOUT_NONE && dst->buf->space != TILEC_SPACE_LOCAL)
        err(v, src->pos, "copy: every lane holds its own '%s', so a warp cannot copy it to one "
                         "place; copy it at thread scope", src->buf->name);
}

/* ---- map statements ------------------------------------------------------------------- */

#define UNTYPED TILEC_DTYPE_COUNT /* a subexpression of numbers only, typed by what it meets */

/* What a value of dtype t computes in: f16 and bf16 as f32. */
static tilec_dtype compute_type(tilec_dtype t) { return t == TILEC_F16 || t == TILEC_BF16 ? TILEC_F32 : t; }

/* An expression's text for a message (cut when long). */
static const char *expr_text(const ir_expr *e, char *buf, size_t n) {
    ir_str s = {0};
    bool parens = e->parens;
    ((ir_expr *)e)->parens = false; /* the operand alone, without its own parentheses */
    ir_print_expr(&s, e);
    ((ir_expr *)e)->parens = parens;
    if (!s.data) snprintf(buf, n, "?");
    else if (s.len < n) snprintf(buf, n, "%s", s.data);
    else snprintf(buf, n, "%.*s...", (int)(n - 4), s.data);
    ir_str_free(&s);
    return buf;
}

/* The operator as a message names it: '+' for a + b, exp for exp(x). */
static const char *op_text(const ir_expr *e, char *buf, size_t n) {
    if (e->infix) snprintf(buf, n, "'%c'", ir_ewop(e->op)->infix ? ir_ewop(e->op)->infix : '-');
    else snprintf(buf, n, "%s", tilec_ewop_name(e->op));
    return buf;
}

static void print_dims(char *buf, size_t n, const int64_t *dims, int rank) {
    size_t at = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < rank && at < n; d++) at += (size_t)snprintf(buf + at, n - at, "%s%lld", d ? ", " : "", (long long)dims[d]);
    if (at < n) snprintf(buf + at, n - at, "]");
}

static void assign_type(verifier *v, ir_expr *e, tilec_dtype t, bool *ok);

/* Refuses integer operands of a floats-only operator (div, exp … fma) with the casts to
 * write: "exp of i32 'T': cast it, exp(f32(T))". */
static void check_floats_only(verifier *v, ir_expr *e, bool *ok) {
    if (e->kind != IR_X_OP || !ir_ewop(e->op)->floats_only || ir_dtype_is_float(e->type)) return;
    int arity = ir_ewop_arity(e->op);
    ir_expr tmp = *e, casts[3], inner[3];
    tmp.parens = false;
    char names[160] = "", a[64], o[16];
    int nnames = 0;
    for (int i = 0; i < arity; i++) {
        if (e->args[i]->kind == IR_X_CONST) continue; /* a number takes the float type as it is */
        inner[i] = *e->args[i];
        inner[i].parens = false; /* the cast's own parentheses hold it */
        casts[i] = (ir_expr){.kind = IR_X_CAST, .to = TILEC_F32, .args = {&inner[i]}};
        tmp.args[i] = &casts[i];
        size_t at = strlen(names);
        snprintf(names + at, sizeof names - at, "%s'%s'", nnames ? " and " : "", expr_text(e->args[i], a, sizeof a));
        nnames++;
    }
    ir_str fix = {0};
    ir_print_expr(&fix, &tmp);
    err(v, e->pos, "%s of %s %s: cast %s, %s", op_text(e, o, sizeof o), tilec_dtype_name(e->type), names,
        nnames > 1 ? "them" : "it", fix.data ? fix.data : "?");
    ir_str_free(&fix);
    *ok = false;
}

/* The common type of an operator's operands args[first .. first + n) (f64 over f32 over
 * integers; integers of one type), or UNTYPED when all are numbers; mixing a float and an
 * integer, or two integer types, is refused with the cast to write. */
static tilec_dtype join_types(verifier *v, const ir_expr *e, int first, int n, const tilec_dtype *types, bool *ok) {
    tilec_dtype t = UNTYPED;
    int at = -1;
    for (int i = first; i < first + n; i++) {
        tilec_dtype u = types[i];
        if (u == UNTYPED) continue;
        if (t == UNTYPED) { t = u; at = i; continue; }
        bool ft = ir_dtype_is_float(t), fu = ir_dtype_is_float(u);
        if (ft && fu) { if (u == TILEC_F64) t = u; continue; }
        if (!ft && !fu && t == u) continue;
        char o[16], x[64], y[64];
        const ir_expr *ia = e->args[at], *ib = e->args[i]; /* the integer one last, for the fix */
        tilec_dtype ta = t, tb = u;
        if (!ft && fu) { ia = e->args[i]; ib = e->args[at]; ta = u; tb = t; }
        expr_text(ia, x, sizeof x);
        expr_text(ib, y, sizeof y);
        if (ir_dtype_is_float(ta) || ir_dtype_is_float(tb))
            err(v, e->pos, "%s mixes %s '%s' and %s '%s'; cast the integer to compute in %s: %s(%s)", op_text(e, o, sizeof o),
                tilec_dtype_name(ta), x, tilec_dtype_name(tb), y, tilec_dtype_name(ta), tilec_dtype_name(ta), y);
        else if (ta == TILEC_I64 || tb == TILEC_I64)
            err(v, e->pos, "%s mixes %s '%s' and %s '%s'; cast one to the other's type: i64(%s)", op_text(e, o, sizeof o),
                tilec_dtype_name(ta), x, tilec_dtype_name(tb), y, ta == TILEC_I64 ? y : x);
        else
            err(v, e->pos, "%s mixes %s '%s' and %s '%s'; cast both to i64: i64(%s), i64(%s)", op_text(e, o, sizeof o),
                tilec_dtype_name(ta), x, tilec_dtype_name(tb), y, x, y);
        *ok = false;
        return t;
    }
    return t;
}

/* Types the tree bottom-up (docs/format.md, "Types"): sets e->type on every node whose
 * type its operands decide and returns it, or UNTYPED for numbers only, which take the
 * type of what they meet (assign_type). */
static tilec_dtype infer_type(verifier *v, ir_expr *e, bool *ok) {
    switch (e->kind) {
    case IR_X_REGION: return e->type = compute_type(e->region.buf->dtype);
    case IR_X_INDEX: return e->type = TILEC_I64;
    case IR_X_CONST: return e->type = UNTYPED;
    case IR_X_CAST:
        if (infer_type(v, e->args[0], ok) == UNTYPED) assign_type(v, e->args[0], compute_type(e->to), ok);
        return e->type = compute_type(e->to);
    case IR_X_GATHER: {
        tilec_dtype it = infer_type(v, e->args[0], ok);
        if (it == UNTYPED) assign_type(v, e->args[0], TILEC_I64, ok);
        else if (*ok && ir_dtype_is_float(it)) {
            char a[64];
            err(v, e->args[0]->pos.line ? e->args[0]->pos : e->pos, "gather's index '%s' is %s; an index is an integer: "
                "cast it, i64(%s)", expr_text(e->args[0], a, sizeof a), tilec_dtype_name(it), a);
            *ok = false;
        }
        return e->type = compute_type(e->region.buf->dtype);
    }
    case IR_X_OP: break;
    }
    int arity = ir_ewop_arity(e->op);
    tilec_dtype types[3];
    for (int i = 0; i < arity; i++) types[i] = infer_type(v, e->args[i], ok);
    if (!*ok) return UNTYPED;
    bool where = e->op == TILEC_EW_WHERE;
    tilec_dtype t = where ? join_types(v, e, 1, 2, types, ok) : join_types(v, e, 0, arity, types, ok);
    e->type = UNTYPED;
    if (!*ok || t == UNTYPED) return UNTYPED;
    for (int i = 0; i < arity; i++)
        if (types[i] == UNTYPED) assign_type(v, e->args[i], t, ok); /* a where's numeric condition too */
    e->type = t;
    check_floats_only(v, e, ok);
    return t;
}

/* Gives the numbers-only subtree e (its nodes UNTYPED) type t, each number rounded once from its text (or
 * refused: a fraction or a value out of range of an integer type, a float overflowing). */
static void assign_type(verifier *v, ir_expr *e, tilec_dtype t, bool *ok) {
    if (e->type != UNTYPED) return; /* typed by its own operands (a where's typed condition) */
    e->type = t;
    if (e->kind == IR_X_OP) {
        for (int i = 0; i < ir_ewop_arity(e->op); i++) assign_type(v, e->args[i], t, ok);
        check_floats_only(v, e, ok);
        return;
    }
    if (e->kind != IR_X_CONST) return;
    ir_value *x = &e->value;
    num_fill_typed(x, t, e->text, e->text_len);
    const char *tn = tilec_dtype_name(t);
    char a[64];
    if (ir_dtype_is_float(t)) {
        if (!x->is_int && isfinite(x->f) && isinf(x->typed)) {
            err(v, e->pos, "number %s overflows %s; write inf or -inf for infinity", expr_text(e, a, sizeof a), tn);
            *ok = false;
        }
        return;
    }
    int64_t lo = t == TILEC_I32 ? INT32_MIN : t == TILEC_U32 ? 0 : INT64_MIN;
    int64_t hi = t == TILEC_I32 ? INT32_MAX : t == TILEC_U32 ? (int64_t)UINT32_MAX : INT64_MAX;
    if (!x->is_int && (!isfinite(x->f) || !x->exact)) {
        err(v, e->pos, "number %s is not an integer, but it computes in %s (the type it meets); write an integer, or "
                       "compute in a float: f32(...)", expr_text(e, a, sizeof a), tn);
        *ok = false;
    } else if (x->too_big || x->i < lo || x->i > hi) {
        err(v, e->pos, "number %s does not fit %s (%lld to %lld)", expr_text(e, a, sizeof a), tn, (long long)lo, (long long)hi);
        *ok = false;
    }
}

/* Every operand region of e, in the order written. */
static int expr_regions(ir_expr *e, ir_expr **out, int n, int cap) {
    if (e->kind == IR_X_REGION || e->kind == IR_X_GATHER) { /* a gather's region, whose index is below */
        if (n < cap) out[n] = e;
        n++;
    }
    for (int i = 0; i < ir_expr_nargs(e); i++) n = expr_regions(e->args[i], out, n, cap);
    return n;
}

/* Two regions that select the very same elements in the same order (the map's in-place
 * operand). */
static bool same_region(const ir_region *a, const ir_region *b) {
    if (a->buf != b->buf) return false;
    for (int d = 0; d < a->buf->rank; d++) {
        ir_index whole = {.kind = TILEC_INDEX_SLICE};
        const ir_index *x = d < a->nindex ? &a->index[d] : &whole, *y = d < b->nindex ? &b->index[d] : &whole;
        if (x->kind != y->kind) return false;
        if (ir_index_is_id(x)) {
            if (x->id != y->id) return false;
            continue;
        }
        int64_t xl, xh, yl, yh;
        ir_index_range(x, a->buf->shape[d], &xl, &xh);
        ir_index_range(y, b->buf->shape[d], &yl, &yh);
        if (xl != yl || xh != yh) return false;
    }
    return true;
}

/* index(d): d a dimension of the destination region, normalised to >= 0. */
static void check_index_axes(verifier *v, ir_expr *e, int rank, const ir_region *dst, bool *ok) {
    if (e->kind == IR_X_INDEX) {
        int n = e->axis < 0 ? e->axis + rank : e->axis;
        if (n < 0 || n >= rank) {
            if (rank == 0)
                err(v, e->pos, "index(%d): the destination '%s' is a single element, with no dimension to index",
                    e->axis, dst->buf->name);
            else
                err(v, e->pos, "index(%d) is out of range: the destination '%s' has %d dimension%s (index(%d) to index(%d))",
                    e->axis, dst->buf->name, rank, rank == 1 ? "" : "s", -rank, rank - 1);
            *ok = false;
            return;
        }
        e->axis = n;
    }
    for (int i = 0; i < ir_expr_nargs(e); i++) check_index_axes(v, e->args[i], rank, dst, ok);
}

/* Broadcasts operand region e to the destination's shape (numpy's rule, aligned at the
 * right) and sets e->bcast; refused with both shapes and the fix. */
static bool check_broadcast(verifier *v, ir_expr *e, const ir_region *dst, const int64_t *dd, int rd) {
    int64_t od[TILEC_MAX_RANK];
    int ro = ir_region_shape(&e->region, od);
    char ds[160], os[160], a[64];
    print_dims(ds, sizeof ds, dd, rd);
    print_dims(os, sizeof os, od, ro);
    if (ro > rd) {
        expr_text(e, a, sizeof a);
        err(v, e->pos, "operand '%s' is %s but the destination '%s' is %s; an operand broadcasts to the destination's "
                       "shape, so it has at most %d dimension%s", a, os, dst->buf->name, ds, rd, rd == 1 ? "" : "s");
        return false;
    }
    int gathered = -1; /* a gather's region: the dimension its index chooses meets any extent */
    if (e->kind == IR_X_GATHER) {
        gathered = e->axis < 0 ? e->axis + ro : e->axis;
        if (gathered < 0 || gathered >= ro) {
            err(v, e->pos, "gather(%s, %d, ...): dimension %d is out of range for its region, %s (%d to %d)",
                e->region.buf->name, e->axis, e->axis, os, -ro, ro - 1);
            return false;
        }
        e->axis = gathered;
    }
    for (int d = 0; d < rd; d++) {
        int j = d - (rd - ro);
        if (j < 0 || od[j] == 1 || j == gathered) { e->bcast[d] = -1; continue; }
        if (od[j] == dd[d]) { e->bcast[d] = j; continue; }
        bool prefix = ro < rd;
        for (int i = 0; i < ro && prefix; i++) prefix = od[i] == dd[i];
        char hint[512] = "";
        if (prefix) {
            int64_t want[TILEC_MAX_RANK];
            for (int i = 0; i < rd; i++) want[i] = i < ro ? od[i] : 1;
            char ws[160];
            print_dims(ws, sizeof ws, want, rd);
            snprintf(hint, sizeof hint, "; a row statistic needs a trailing axis of extent 1: declare %s: %s%s; a "
                     "reduction over axes=(-1) writes it", e->region.buf->name, tilec_dtype_name(e->region.buf->dtype), ws);
        }
        expr_text(e, a, sizeof a);
        err(v, e->pos, "operand '%s' is %s and does not broadcast to the destination '%s', %s: aligned at the right, "
                       "its dimension %d (%lld) meets %lld; each must equal the destination's or be 1%s",
            a, os, dst->buf->name, ds, j, (long long)od[j], (long long)dd[d], hint);
        return false;
    }
    return true;
}

/* A fragment destination reads each fragment operand in the same lane, at a register
 * fixed for every lane (ir_map_frag_source); refused naming the register and lane. */
static bool check_frag_operand(verifier *v, const ir_stmt *st, const ir_expr *op) {
    const tilec_buffer *db = st->dst.buf, *ob = op->region.buf;
    for (int reg = 0; reg < 1 << db->frag_reg; reg++) {
        int src, lane, warp;
        if (!ir_map_frag_mismatch(db, op, reg, &src, &lane, &warp)) continue;
        int64_t e = ir_frag_element(db, warp, lane, reg), c[TILEC_MAX_RANK];
        for (int d = db->rank - 1; d >= 0; d--) {
            c[d] = e % db->shape[d];
            e /= db->shape[d];
        }
        char at[160], w[32] = "";
        print_dims(at, sizeof at, c, db->rank);
        if (db->frag_warp) snprintf(w, sizeof w, " of warp %d", warp);
        if (src < 0)
            err(v, op->pos, "fragment '%s' does not hold, in lane %d%s, the element that register %d of '%s' (element %s) "
                            "reads: no register of that lane has it; give '%s' a layout that puts each element in the "
                            "lanes holding the elements of '%s' that read it, or read it from shared memory",
                ob->name, lane, w, reg, db->name, at, ob->name, db->name);
        else
            err(v, op->pos, "fragment '%s' holds the element that register %d of '%s' reads in register %d of lane 0, but "
                            "not in lane %d%s (element %s of '%s'); a map reads an operand fragment at one register "
                            "for every lane: give '%s' a layout that matches '%s', or read it from shared memory",
                ob->name, reg, db->name, src, lane, w, at, db->name, ob->name, db->name);
        return false;
    }
    return true;
}

static void check_map(verifier *v, ir_stmt *st) {
    const ir_region *dst = &st->dst;
    const tilec_buffer *db = dst->buf;
    int nops = expr_regions(st->expr, NULL, 0, 0);
    ir_expr **ops = malloc(sizeof *ops * (size_t)(nops ? nops : 1));
    if (!ops) {
        ir_diag_add(v->p->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "out of memory while checking a map statement");
        v->oom = true;
        return;
    }
    expr_regions(st->expr, ops, 0, nops);
    bool ok = check_region(v, st, dst);
    for (int i = 0; i < nops; i++) ok = check_region(v, st, &ops[i]->region) && ok;
    if (!ok) goto done;
    check_dst_per_instance(v, st, dst);
    tilec_dtype t = infer_type(v, st->expr, &ok);
    if (ok && t == UNTYPED) assign_type(v, st->expr, compute_type(db->dtype), &ok);
    int64_t dd[TILEC_MAX_RANK];
    int rd = ir_region_shape(dst, dd);
    check_index_axes(v, st->expr, rd, dst, &ok);
    bool shaped = true;
    for (int i = 0; i < nops && shaped; i++) shaped = check_broadcast(v, ops[i], dst, dd, rd);
    if (!shaped) goto done;
    bool dfrag = db->layout.kind != TILEC_LAYOUT_NONE;
    for (int i = 0; i < nops; i++) {
        const ir_expr *op = ops[i];
        const tilec_buffer *ob = op->region.buf;
        bool ofrag = ob->layout.kind != TILEC_LAYOUT_NONE;
        if (op->kind == IR_X_GATHER && ob == db && may_overlap(dst, &op->region)) {
            /* in place is safe only where each element reads itself; a gather reads others */
            err(v, op->pos, "gather reads '%s', which this map writes: the element it picks may be one another thread "
                            "(or this one, earlier) has already overwritten; gather from a copy, or write another buffer",
                ob->name);
            break;
        }
        if (ob == db && !same_region(dst, &op->region) && may_overlap(dst, &op->region)) {
            char a[64];
            expr_text(op, a, sizeof a);
            ir_str ds = {0};
            ir_print_region(&ds, dst);
            err(v, op->pos, "operand '%s' overlaps the destination '%s'; an operand may be the destination only as the "
                            "identical region (in place): read a copy, or write another buffer",
                a, ds.data ? ds.data : db->name);
            ir_str_free(&ds);
            break;
        }
        if (op->kind == IR_X_GATHER && (ofrag || ob->space == TILEC_SPACE_LOCAL)) {
            err(v, op->pos, "gather reads a shared or global tile, at a position only known when it runs; '%s' is %s: "
                            "copy it to shared memory first", ob->name, ofrag ? "a fragment" : "each thread's own array");
            break;
        }
        if (dfrag && ofrag) {
            if (!check_frag_operand(v, st, op)) break;
        } else if (dfrag && ob->space == TILEC_SPACE_LOCAL) {
            err(v, op->pos, "'%s' is each thread's own array and '%s' a fragment (a tile the lanes share); the operands "
                            "of a fragment destination are fragments of its lanes, or shared or global tiles",
                ob->name, db->name);
            break;
        } else if (ofrag) {
            err(v, op->pos, "'%s' is a fragment (a tile the lanes share); a map reads a fragment only into a fragment "
                            "destination of the same lanes, and '%s' is not one: copy it to shared memory first",
                ob->name, db->name);
            break;
        } else if (ob->space == TILEC_SPACE_LOCAL && db->space != TILEC_SPACE_LOCAL && st->exec.scope == TILEC_SCOPE_WARP) {
            err(v, op->pos, "every lane holds its own '%s', so a warp cannot compute one '%s' from it; map at thread "
                            "scope", ob->name, db->name);
            break;
        }
    }
done:
    free(ops);
}

/* Whether region r has an index by an id (whose range depends on the warp size). */
static bool has_id(const ir_region *r) {
    for (int d = 0; d < r->nindex; d++)
        if (ir_index_is_id(&r->index[d])) return true;
    return false;
}

tilec_status ir_check_map_expr(tilec_program *p, tilec_kernel *k, ir_stmt *st, const ir_source *src) {
    ir_limits lim = ir_limits_any(32);
    verifier v = {.p = p, .k = k, .st = st, .ws = 32, .lim = &lim};
    size_t before = ir_error_count(p->ctx);
    ir_source saved = p->src;
    p->src = *src;
    bool ok = true;
    tilec_dtype t = infer_type(&v, st->expr, &ok);
    if (ok && t == UNTYPED) assign_type(&v, st->expr, compute_type(st->dst.buf->dtype), &ok);
    int nops = ok ? expr_regions(st->expr, NULL, 0, 0) : 0;
    ir_expr **ops = ok ? malloc(sizeof *ops * (size_t)(nops ? nops : 1)) : NULL;
    if (ok && !ops) {
        p->src = saved;
        ir_diag_add(p->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "out of memory while checking a map statement");
        return TILEC_ERR_NOMEM;
    }
    if (ops && st->exec.scope != TILEC_SCOPE_GRID) { /* shapes, where they do not depend on the warp size */
        expr_regions(st->expr, ops, 0, nops);
        bool plain = !has_id(&st->dst);
        for (int i = 0; i < nops && plain; i++) plain = !has_id(&ops[i]->region);
        if (plain) {
            bool in_range = check_region(&v, st, &st->dst);
            for (int i = 0; i < nops; i++) in_range = check_region(&v, st, &ops[i]->region) && in_range;
            int64_t dd[TILEC_MAX_RANK];
            int rd = in_range ? ir_region_shape(&st->dst, dd) : 0;
            if (in_range) check_index_axes(&v, st->expr, rd, &st->dst, &ok);
            for (int i = 0; i < nops && in_range; i++) in_range = check_broadcast(&v, ops[i], &st->dst, dd, rd);
        }
    }
    free(ops);
    p->src = saved;
    return ir_error_count(p->ctx) == before ? TILEC_OK : TILEC_ERR_VERIFY;
}

int64_t ir_alloc_bytes(const tilec_buffer *b) {
    int64_t atom = ir_swizzle_atom(b); /* a swizzled tile is aligned to its atom: at most atom - 16 bytes before it */
    return ((b->span * (int64_t)tilec_dtype_size(b->dtype) + 15) & ~(int64_t)15) + (atom > 16 ? atom - 16 : 0); /* span <= 2^48 */
}

static void kib(char *buf, size_t n, int64_t bytes) {
    if (bytes % 1024) snprintf(buf, n, "%lld bytes", (long long)bytes);
    else snprintf(buf, n, "%lld KiB", (long long)(bytes / 1024));
}

/* Adds an allocation to the kernel's shared or local bytes; the first one that goes past
 * what the target launches is reported, at the allocation. */
static void check_alloc_size(verifier *v, const ir_stmt *st) {
    const tilec_buffer *b = st->alloc;
    bool shared = b->space == TILEC_SPACE_SHARED;
    int64_t *total = shared ? &v->shared : &v->local;
    if (*total < 0) return;
    int64_t bytes = ir_alloc_bytes(b);
    *total += bytes;
    int64_t limit = !shared ? v->lim->local_bytes : v->k->is_func ? v->lim->func_shared_bytes : v->lim->shared_bytes;
    if (*total <= limit) return;
    char have[48], lim[48];
    const char *why = v->k->is_func ? v->lim->func_why : v->lim->kernel_why;
    kib(have, sizeof have, *total);
    kib(lim, sizeof lim, limit);
    char others[128] = "";
    if (*total != bytes)
        snprintf(others, sizeof others, "; with the %s's other %s buffers that is %s", v->k->is_func ? "func" : "kernel",
                 shared ? "shared" : "local", have);
    if (shared)
        err(v, b->pos, "'%s' takes %lld bytes of shared memory%s, more than the %s a %s gets on %s%s%s; use smaller "
                       "tiles or fewer shared buffers",
            b->name, (long long)bytes, others, lim, v->k->is_func ? "func" : "CTA", v->lim->target, why ? " " : "",
            why ? why : "");
    else
        err(v, b->pos, "'%s' takes %lld bytes of local memory%s, more than the %s tilec gives a thread's local "
                       "buffers on %s; use smaller local buffers, or shared memory",
            b->name, (long long)bytes, others, lim, v->lim->target);
    *total = -1;
}

/* cluster=(N): a size the target launches, and a grid of whole clusters. */
static void check_cluster_shape(verifier *v) {
    const tilec_kernel *k = v->k;
    ir_pos at = k->cluster_pos.line ? k->cluster_pos : k->pos;
    if (k->is_func || k->cluster < 0 || k->cluster > IR_MAX_CLUSTER) {
        err(v, at, k->is_func ? "a func has no cluster; the kernel that calls it declares one"
                              : "cluster %d is out of range (1 to 16)", k->cluster);
        return;
    }
    int most = v->lim->cluster_max;
    if (most == 0 && v->lim->cluster_max32 > 0)
        err(v, at, "cluster=(%d): %s at warp size %d has no thread-block clusters (they are CUDA's, sm_90 and later, at "
                   "warp size 32); run it at warp size 32 (--warp-size 32)", k->cluster, v->lim->target, v->lim->warp_size);
    else if (most == 0)
        err(v, at, "cluster=(%d): %s has no thread-block clusters (CUDA sm_90 and later have them, at warp size 32); "
                   "target cuda with --arch sm_90 or later, or drop cluster= and combine the CTAs' results in "
                   "global memory", k->cluster, v->lim->target);
    else if (k->cluster > most)
        err(v, at, "cluster=(%d) is more CTAs than a cluster has on %s (%d%s); use cluster=(%d) or fewer", k->cluster,
            v->lim->target, most, most == IR_PORTABLE_CLUSTER ? ", the portable size; 16 on sm_90 and sm_100" : "",
            most);
    else if (k->grid % k->cluster) {
        int64_t lo = k->grid / k->cluster * k->cluster;
        char fix[64];
        if (lo) snprintf(fix, sizeof fix, "%lld or %lld", (long long)lo, (long long)(lo + k->cluster));
        else snprintf(fix, sizeof fix, "%d", k->cluster);
        err(v, k->grid_pos.line ? k->grid_pos : at,
            "grid=%lld is not a multiple of cluster=(%d): a launch runs whole clusters; make grid %s",
            (long long)k->grid, k->cluster, fix);
    }
}

/* Whether region r reaches only its own cluster's part of its buffer: indexed by cluster_id. */
static bool by_cluster_id(const ir_region *r) {
    return r->nindex > 0 && r->index[0].kind == TILEC_INDEX_ID && r->index[0].id == TILEC_SCOPE_CLUSTER;
}

/* In a kernel of several clusters, a global buffer that a cluster reduction writes once a
 * cluster is reached through cluster_id everywhere: another index (cta_id, a number, none)
 * reaches other clusters' parts, which nothing orders (there is no barrier between
 * clusters). */
static void check_cluster_parts(verifier *v) {
    const tilec_kernel *k = v->k;
    if (!k->cluster || k->grid == k->cluster) return;
    for (int i = 0; i < k->nstmts; i++) {
        const ir_stmt *w = k->stmts[i];
        if (w->kind != IR_REDUCE || w->exec.scope != TILEC_SCOPE_CLUSTER) continue;
        const ir_region *outs[2] = {&w->dst, &w->dst2};
        for (int o = 0; o < 2 && outs[o]->buf; o++) {
            const tilec_buffer *b = outs[o]->buf;
            if (b->space != TILEC_SPACE_GLOBAL) continue;
            for (int j = 0; j < k->nstmts; j++) {
                ir_stmt *st = k->stmts[j];
                if (st->kind == IR_ALLOC || st->kind == IR_SYNC) continue;
                const ir_region *rs[3] = {&st->dst, &st->src, &st->dst2};
                ir_expr *ops[64];
                int nops = st->kind == IR_MAP && st->expr ? expr_regions(st->expr, ops, 0, 64) : 0;
                for (int r = 0; r < 3 + (nops < 64 ? nops : 64); r++) {
                    const ir_region *x = r < 3 ? rs[r] : &ops[r - 3]->region;
                    if (x->buf != b || by_cluster_id(x)) continue;
                    v->st = st;
                    err(v, x->pos, "'%s' is written once a cluster at %s%d (%s[cluster_id]); reach it by cluster_id here "
                                   "too: another index reaches other clusters' parts, and nothing orders two clusters",
                        b->name, w->pos.line ? "line " : "statement ", w->pos.line ? w->pos.line : w->index + 1, b->name);
                    v->st = NULL;
                    return;
                }
            }
        }
    }
}

static void verify_kernel(verifier *v) {
    tilec_kernel *k = v->k;
    size_t before = ir_error_count(v->p->ctx);
    v->st = NULL;
    v->shared = v->local = 0;
    if (k->threads < 1 || k->threads > TILEC_MAX_THREADS)
        err(v, k->pos, "threads %d is out of range (1 to %d)", k->threads, TILEC_MAX_THREADS);
    if (k->grid < 1 || k->grid > INT32_MAX || (k->is_func && k->grid != 1))
        err(v, k->pos, "grid %lld is out of range (%s)", (long long)k->grid,
            k->is_func ? "a func has no grid" : "1 to 2147483647");
    bool grid_stmt = k->nstmts == 1 && k->stmts[0]->kind != IR_ALLOC && k->stmts[0]->exec.scope == TILEC_SCOPE_GRID;
    if (k->cluster && !grid_stmt) check_cluster_shape(v); /* (a grid statement says what is wrong) */
    if (ir_error_count(v->p->ctx) > before) return;
    for (int i = 0; i < k->nparams; i++) {
        const tilec_buffer *b = k->params[i];
        if (!k->is_func && b->space != TILEC_SPACE_GLOBAL)
            err(v, b->pos, "kernel parameter '%s' is %s; kernel parameters are global (a func "
                           "takes shared or local operands)", b->name, tilec_space_name(b->space));
    }
    for (int i = 0; i < k->nstmts; i++) {
        ir_stmt *st = k->stmts[i];
        v->st = st;
        if (st->kind == IR_ALLOC) {
            check_alloc_size(v, st);
            continue;
        }
        if (!check_exec(v, st)) continue;
        if (st->kind == IR_SYNC) continue;
        if (st->kind == IR_MAP) {
            check_map(v, st);
            continue;
        }
        bool ok = check_region(v, st, &st->dst);
        if (st->kind != IR_FILL) ok = check_region(v, st, &st->src) && ok;
        if (st->dst2.buf) ok = check_region(v, st, &st->dst2) && ok;
        if (!ok) continue;
        if (st->exec.scope != TILEC_SCOPE_GRID) check_dst_per_instance(v, st, &st->dst);
        if (st->exec.scope != TILEC_SCOPE_GRID && st->dst2.buf) check_dst_per_instance(v, st, &st->dst2);
        switch (st->kind) {
        case IR_COPY: check_copy(v, st); break;
        case IR_FILL: check_fill_value(v, st); break;
        case IR_REDUCE: check_reduce(v, st); break;
        default: break;
        }
    }
    v->st = NULL;
    if (ir_error_count(v->p->ctx) == before) check_cluster_parts(v);
    if (ir_error_count(v->p->ctx) == before && !ir_check_races(v->p, k, v->ws)) v->oom = true;
}

ir_limits ir_limits_any(int warp_size) {
    return (ir_limits){.warp_size = warp_size, .shared_bytes = TILEC_MAX_SHARED_BYTES,
                       .func_shared_bytes = TILEC_MAX_FUNC_SHARED_BYTES, .local_bytes = TILEC_MAX_LOCAL_BYTES,
                       .target = "any target", .kernel_why = "(CUDA sm_90 and the simulator allow the most)",
                       .func_why = "(HIP and the simulator allow the most; CUDA 48 KiB)",
                       .cluster_max = warp_size == 32 ? IR_MAX_CLUSTER : 0, .cluster_max32 = IR_MAX_CLUSTER};
}

tilec_status ir_verify(tilec_program *p, const ir_limits *lim) {
    verifier v = {.p = p, .ws = lim->warp_size, .lim = lim};
    if (p->nkernels == 0)
        ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, 0, 0, "empty program: it has no kernel or func");
    for (int i = 0; i < p->nkernels; i++) {
        v.k = p->kernels[i];
        verify_kernel(&v);
    }
    return v.oom ? TILEC_ERR_NOMEM : ir_error_count(p->ctx) ? TILEC_ERR_VERIFY : TILEC_OK;
}

tilec_status tilec_verify(tilec_program *prog, const tilec_verify_options *opts) {
    if (!prog) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    int ws = opts && opts->warp_size ? opts->warp_size : 32;
    if (ws != 32 && ws != 64) {
        ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "warp size %d is not 32 or 64", ws);
        return TILEC_ERR_INVALID_ARG;
    }
    ir_limits lim = ir_limits_any(ws);
    return ir_verify(prog, &lim);
}
