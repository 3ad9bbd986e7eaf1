/*
 * race.c — the verifier's barrier analysis: a statement must not read (or overwrite) data
 * that other threads of the CTA wrote (or still read) since the last barrier that spans
 * both of them.
 *
 * Model. A statement at scope S runs as instances of S (one CTA, each warpgroup, warp or
 * thread, or the one selected with S[k]); which thread of an instance touches which
 * element is up to the lowering, so any thread of the instance may. Two accesses of one
 * element, at least one a write, by instances whose threads are not a single thread, need
 * a barrier between them whose instance holds all those threads. A `sync` is a barrier of
 * its scope; every reduction ends with one. Shared and global buffers are checked (global
 * ordering within one CTA); local buffers are private to each thread.
 *
 * Only the first dimension of a region may depend on the instance (through an id), so the
 * other dimensions are compared once per pair of accesses and the first per instance pair.
 *
 * Clusters. A cluster reduction's global destination is written once a cluster, by one of
 * its CTAs: that access is ordered with another of the same elements, by any thread of the
 * cluster, only by a cluster barrier (cluster.sync(), or the end of a cluster reduction into
 * global memory) — a CTA barrier orders one CTA. Its source is each CTA's own copy, read by
 * that CTA's threads (the copies' states meet through the reduction's own slots, behind its
 * own cluster barrier), and its shared destination each CTA's own copy, written by that
 * CTA's threads: ordered as a CTA statement's accesses are. A global region indexed by
 * cta_in_cluster is the CTA's own part of a buffer its cluster's CTAs share: an access of
 * another part of it (a number, another id, none) by another CTA is ordered with it only by
 * a cluster barrier too.
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct access {
    const ir_stmt *st;
    const ir_region *r;
    bool write;
    int since;    /* barriers[since..] happened after this access */
    bool cluster; /* by threads of every CTA of the cluster (see Clusters above) */
} access;

typedef struct barrier {
    tilec_scope scope;
    int instance; /* -1: every instance */
} barrier;

typedef struct racer {
    tilec_program *p;
    tilec_kernel *k;
    int ws;
    access *acc;
    int nacc, cap_acc;
    barrier *bar;
    int nbar, cap_bar;
    access *cacc; /* a kernel with clusters: every access since the last cluster barrier */
    int ncacc, cap_cacc;
    bool oom;
} racer;

/* Threads [lo, hi) of instance i of scope s. */
static void instance_threads(const racer *rc, tilec_scope s, int i, int *lo, int *hi) {
    int size = ir_scope_size(s, rc->k->threads, rc->ws);
    *lo = i * size;
    *hi = *lo + size < rc->k->threads ? *lo + size : rc->k->threads;
}

/* [lo, hi) of dimension d selected by region r when run by instance i of scope s. */
static void dim_range(const racer *rc, const ir_region *r, int d, tilec_scope s, int i,
                      int64_t *lo, int64_t *hi) {
    int64_t e = r->buf->shape[d];
    if (d >= r->nindex) { *lo = 0; *hi = e; return; }
    const ir_index *ix = &r->index[d];
    if (!ir_index_is_id(ix)) { ir_index_range(ix, e, lo, hi); return; }
    if (ix->kind == TILEC_INDEX_RANK || ix->id == TILEC_SCOPE_CTA || ix->id == TILEC_SCOPE_CLUSTER) {
        *lo = 0; /* one CTA at a time */
        *hi = 1;
        return;
    }
    int tlo, thi;
    instance_threads(rc, s, i, &tlo, &thi);
    *lo = tlo / ir_scope_size(ix->id, rc->k->threads, rc->ws);
    *hi = *lo + 1;
}

static bool depends_on_instance(const ir_region *r) {
    return r->nindex > 0 && r->index[0].kind == TILEC_INDEX_ID && r->index[0].id != TILEC_SCOPE_CTA &&
           r->index[0].id != TILEC_SCOPE_CLUSTER;
}

/* Whether a global region is indexed by cta_in_cluster: a CTA's part of a buffer the CTAs of
 * its cluster share (see Clusters above). */
static bool rank_part(const ir_region *r) {
    return r->buf->space == TILEC_SPACE_GLOBAL && r->nindex > 0 && r->index[0].kind == TILEC_INDEX_RANK;
}

/* Whether two regions of one buffer may share an element in some pair of distinct CTAs of a
 * cluster (an id of the first dimension may take any value there; but the same CTA id on
 * both sides, cta_id or cta_in_cluster, is another element in another CTA). */
static bool cluster_overlap(const racer *rc, const ir_region *a, const ir_region *b) {
    for (int d = 0; d < a->buf->rank; d++) {
        bool aid = d < a->nindex && ir_index_is_id(&a->index[d]), bid = d < b->nindex && ir_index_is_id(&b->index[d]);
        if (aid && bid && a->index[d].kind == b->index[d].kind &&
            (a->index[d].kind == TILEC_INDEX_RANK || a->index[d].id == TILEC_SCOPE_CTA))
            return false;
        if (aid || bid) continue;
        int64_t al, ah, bl, bh;
        dim_range(rc, a, d, TILEC_SCOPE_CTA, 0, &al, &ah);
        dim_range(rc, b, d, TILEC_SCOPE_CTA, 0, &bl, &bh);
        if (ah <= bl || bh <= al) return false;
    }
    return true;
}

/* The narrowest scope whose one instance holds threads [lo, hi); a scope whose instance is
 * the whole CTA (one warp of a 32-thread CTA) counts as the CTA. */
static tilec_scope spanning_scope(const racer *rc, int lo, int hi) {
    for (int s = TILEC_SCOPE_THREAD; s > TILEC_SCOPE_CTA; s--) {
        int size = ir_scope_size((tilec_scope)s, rc->k->threads, rc->ws);
        if (size >= rc->k->threads) break;
        if (lo / size == (hi - 1) / size) return (tilec_scope)s;
    }
    return TILEC_SCOPE_CTA;
}

static bool covered(const racer *rc, int since, tilec_scope need, int first_thread) {
    for (int b = since; b < rc->nbar; b++) {
        const barrier *x = &rc->bar[b];
        int size = ir_scope_size(x->scope, rc->k->threads, rc->ws);
        if (x->scope == TILEC_SCOPE_THREAD || (x->scope > need && size < rc->k->threads))
            continue; /* too narrow */
        if (x->instance < 0 || x->instance == first_thread / size) return true;
    }
    return false;
}

static void instances(const racer *rc, const ir_stmt *st, int *first, int *count) {
    if (st->exec.instance >= 0) { *first = st->exec.instance; *count = 1; return; }
    *first = 0;
    *count = ir_scope_count(st->exec.scope, rc->k->threads, rc->ws);
}

/* Whether accesses a (earlier) and b conflict; *need is the barrier scope that is missing. */
static bool conflict(const racer *rc, const access *a, const access *b, tilec_scope *need) {
    const tilec_buffer *buf = a->r->buf;
    for (int d = 1; d < buf->rank; d++) { /* the dimensions no instance changes */
        int64_t al, ah, bl, bh;
        dim_range(rc, a->r, d, a->st->exec.scope, 0, &al, &ah);
        dim_range(rc, b->r, d, b->st->exec.scope, 0, &bl, &bh);
        if (ah <= bl || bh <= al) return false;
    }
    int a0, an, b0, bn;
    instances(rc, a->st, &a0, &an);
    instances(rc, b->st, &b0, &bn);
    bool adep = depends_on_instance(a->r), bdep = depends_on_instance(b->r);
    for (int i = a0; i < a0 + an; i++) {
        int64_t al, ah;
        dim_range(rc, a->r, 0, a->st->exec.scope, i, &al, &ah);
        int atl, ath;
        instance_threads(rc, a->st->exec.scope, i, &atl, &ath);
        for (int j = b0; j < b0 + bn; j++) {
            int64_t bl, bh;
            dim_range(rc, b->r, 0, b->st->exec.scope, j, &bl, &bh);
            if (ah <= bl || bh <= al) {
                if (!adep && !bdep) return false; /* same ranges for every pair */
                continue;
            }
            int btl, bth;
            instance_threads(rc, b->st->exec.scope, j, &btl, &bth);
            int lo = atl < btl ? atl : btl, hi = ath > bth ? ath : bth;
            if (hi - lo <= 1) continue; /* one thread is ordered with itself */
            tilec_scope s = spanning_scope(rc, lo, hi);
            if (!covered(rc, a->since, s, lo)) { *need = s; return true; }
        }
    }
    return false;
}

static void report(racer *rc, const access *old, const access *now, tilec_scope need) {
    const char *name = now->r->buf->name, *fix = tilec_scope_name(need);
    char line[32]; /* where the earlier access is: a line, or a statement for built IR */
    if (old->st->pos.line > 0) snprintf(line, sizeof line, "line %d", old->st->pos.line);
    else snprintf(line, sizeof line, "statement %d", old->st->index + 1);
    if (need == TILEC_SCOPE_CLUSTER)
        ir_stmt_diag(rc->p, rc->k, now->st, TILEC_SEV_ERROR, now->r->pos,
                    "missing barrier: '%s' is %s here and %s at %s, by threads of other CTAs of the cluster, with no "
                    "cluster barrier between; add cluster.sync() before this statement (cta.sync() orders one CTA)",
                    name, now->write ? "written" : "read", old->write ? "written" : "read", line);
    else if (!old->write)
        ir_stmt_diag(rc->p, rc->k, now->st, TILEC_SEV_ERROR, now->r->pos,
                    "missing barrier: '%s' is overwritten here while other threads may still "
                    "read it at %s; add %s.sync() before this statement", name, line, fix);
    else if (!now->write)
        ir_stmt_diag(rc->p, rc->k, now->st, TILEC_SEV_ERROR, now->r->pos,
                    "missing barrier: '%s' is read here but other threads wrote it at %s "
                    "with no barrier between; add %s.sync() before this statement", name, line, fix);
    else
        ir_stmt_diag(rc->p, rc->k, now->st, TILEC_SEV_ERROR, now->r->pos,
                    "missing barrier: '%s' is written here and by other threads at %s with "
                    "no barrier between; add %s.sync() before this statement", name, line, fix);
    ir_stmt_diag(rc->p, rc->k, old->st, TILEC_SEV_NOTE, old->r->pos,
                "the earlier %s of '%s' (%s.%s)", old->write ? "write" : "read", name,
                tilec_scope_name(old->st->exec.scope), ir_stmt_word(old->st));
}

static void add_barrier(racer *rc, tilec_scope s, int instance) {
    if (s == TILEC_SCOPE_CTA || s == TILEC_SCOPE_CLUSTER) { /* everything before is ordered with everything after, */
        rc->nacc = 0;
        rc->nbar = 0;
        if (s == TILEC_SCOPE_CLUSTER) rc->ncacc = 0; /* across the cluster too */
        return;
    }
    if (s == TILEC_SCOPE_THREAD) return;
    if (!ir_arena_grow(&rc->p->arena, (void **)&rc->bar, &rc->cap_bar, rc->nbar + 1, sizeof *rc->bar)) {
        rc->oom = true;
        return;
    }
    rc->bar[rc->nbar++] = (barrier){s, instance};
}

/* Checks one access of the current statement against the pending ones; returns it for
 * adding once the whole statement has been checked. */
static bool check_access(racer *rc, const access *now) {
    if (now->r->buf->space == TILEC_SPACE_LOCAL) return true;
    for (int i = 0; i < rc->ncacc; i++) { /* across the CTAs of a cluster */
        const access *old = &rc->cacc[i];
        if (old->r->buf != now->r->buf || (!old->write && !now->write) || old->st == now->st)
            continue;
        if ((old->cluster || now->cluster) && cluster_overlap(rc, old->r, now->r)) {
            report(rc, old, now, TILEC_SCOPE_CLUSTER);
            return false;
        }
    }
    if (now->cluster) return true;
    for (int i = 0; i < rc->nacc; i++) {
        const access *old = &rc->acc[i];
        if (old->r->buf != now->r->buf || (!old->write && !now->write) || old->st == now->st)
            continue;
        tilec_scope need;
        if (conflict(rc, old, now, &need)) {
            report(rc, old, now, need);
            return false;
        }
    }
    return true;
}

/* The reads of a map statement: one per operand region of its expression, appended to
 * out (when not NULL) from n on; returns the new count. */
static int map_reads(const ir_expr *e, const ir_stmt *st, access *out, int n, int since) {
    if (e->kind == IR_X_REGION || e->kind == IR_X_GATHER) { /* a gather may read any element of its region */
        if (out) out[n] = (access){st, &e->region, false, since, rank_part(&e->region)};
        n++;
    }
    for (int i = 0; i < ir_expr_nargs(e); i++) n = map_reads(e->args[i], st, out, n, since);
    return n;
}

bool ir_check_races(tilec_program *p, tilec_kernel *k, int warp_size) {
    racer rc = {.p = p, .k = k, .ws = warp_size};
    for (int i = 0; i < k->nstmts; i++)
        if (k->stmts[i]->exec.scope == TILEC_SCOPE_GRID && k->stmts[i]->kind != IR_ALLOC)
            return true; /* a grid statement stands alone in its kernel */
    for (int i = 0; i < k->nstmts && !rc.oom; i++) {
        const ir_stmt *st = k->stmts[i];
        if (st->kind == IR_ALLOC) continue;
        if (st->kind == IR_SYNC) {
            add_barrier(&rc, st->exec.scope, st->exec.instance);
            continue;
        }
        access fixed[4], *now = fixed;
        int n = 0;
        if (st->kind == IR_MAP) { /* a copy that reads every operand region: one access each */
            int nops = map_reads(st->expr, st, NULL, 0, 0);
            if (nops + 1 > 4 && !(now = ir_arena_alloc(&p->arena, sizeof *now * (size_t)(nops + 1)))) {
                rc.oom = true;
                break;
            }
            n = map_reads(st->expr, st, now, 0, rc.nbar);
        }
        bool cl = st->exec.scope == TILEC_SCOPE_CLUSTER; /* a global destination */
        if (st->kind == IR_COPY || st->kind == IR_REDUCE)
            now[n++] = (access){st, &st->src, false, rc.nbar, rank_part(&st->src)};
        bool dcl = (cl && st->dst.buf->space == TILEC_SPACE_GLOBAL) || rank_part(&st->dst);
        if (st->kind == IR_REDUCE && st->accum) now[n++] = (access){st, &st->dst, false, rc.nbar, dcl};
        now[n++] = (access){st, &st->dst, true, rc.nbar, dcl};
        if (st->dst2.buf)
            now[n++] = (access){st, &st->dst2, true, rc.nbar,
                                (cl && st->dst2.buf->space == TILEC_SPACE_GLOBAL) || rank_part(&st->dst2)};
        bool clean = true;
        for (int j = 0; j < n && clean; j++) clean = check_access(&rc, &now[j]);
        if (!clean) break; /* one report per kernel: later ones would repeat it */
        for (int j = 0; j < n; j++) {
            if (now[j].r->buf->space == TILEC_SPACE_LOCAL) continue;
            if (!ir_arena_grow(&p->arena, (void **)&rc.acc, &rc.cap_acc, rc.nacc + 1, sizeof *rc.acc)) {
                rc.oom = true;
                break;
            }
            rc.acc[rc.nacc++] = now[j];
            if (!k->cluster) continue;
            if (!ir_arena_grow(&p->arena, (void **)&rc.cacc, &rc.cap_cacc, rc.ncacc + 1, sizeof *rc.cacc)) {
                rc.oom = true;
                break;
            }
            rc.cacc[rc.ncacc++] = now[j];
        }
        if (st->kind == IR_REDUCE && ir_reduce_has_barrier(st)) add_barrier(&rc, ir_reduce_end_scope(st), st->exec.instance);
    }
    if (rc.oom) ir_diag_add(p->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "out of memory while checking barriers");
    return !rc.oom;
}
