/*
 * sharded.c — tilec_reduce_sharded: a tensor cut along one dim across the ranks of a
 * group, reduced locally on each rank and combined through NCCL in a fixed order, so that
 * every rank gets the same bits (docs/runtime.md, "Sharded reductions").
 *
 * A call is three steps, the same on every rank:
 * 1. the local reduction of the rank's shard (tilec_reduce), downloaded to the host: a
 *    partial state when the sharded dim is reduced (the sum of the shard, its maximum…;
 *    sh_ops says which), the rank's slice of the output when it is kept;
 * 2. an all-gather of each rank's header (its status, op, shape, options): a rank whose
 *    step 1 failed still takes part, so every rank learns of it and fails too, and
 *    shards that do not fit together fail everywhere with the same message;
 * 3. an all-gather of the partials (padded to the largest), then every rank folds them
 *    on the host in rank order 0, 1, 2, … with the same code (or places the slices), and
 *    uploads the result. The same inputs in the same order give the same bits on every
 *    rank by construction; NCCL's own reduction order is never used.
 */
#include "nccl.h"
#include "runtime.h"
#include "../ir/numeric.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tilec_comm {
    tilec_ctx *ctx;
    int nranks, rank;
    rt_nccl lib;
    void *nccl; /* ncclComm_t */
    bool broken; /* a collective failed: the group is unusable */
};

enum { MAX_RANKS = 1024 };

/* How the partials of each op fold when the sharded dim is reduced. SH_NONE: not taken
 * (the sharded dim must then be kept). */
typedef enum { SH_NONE, SH_ADD, SH_MUL, SH_MAX, SH_MIN, SH_ARGMAX, SH_ARGMIN, SH_AMINMAX, SH_LSE, SH_VAR } sh_fold;
typedef enum { SH_FINISH_NONE, SH_FINISH_SQRT, SH_FINISH_MEAN } sh_finish;

typedef struct sh_op {
    sh_fold fold;
    tilec_op local;   /* what each rank reduces its shard with */
    bool wide;        /* the partial in the accumulation type (16-bit floats: f32; norm2: f64) */
    bool wide_floats_only; /* `wide` applies to 16-bit floats only (ints keep wrapping in their type) */
    sh_finish finish;
} sh_op;

static const sh_op sh_ops[] = {
    [TILEC_OP_SUM] = {SH_ADD, TILEC_OP_SUM, true, true, SH_FINISH_NONE},
    [TILEC_OP_MAX] = {SH_MAX, TILEC_OP_MAX, false, false, SH_FINISH_NONE},
    [TILEC_OP_MIN] = {SH_MIN, TILEC_OP_MIN, false, false, SH_FINISH_NONE},
    [TILEC_OP_PROD] = {SH_MUL, TILEC_OP_PROD, true, true, SH_FINISH_NONE},
    [TILEC_OP_SUMSQ] = {SH_ADD, TILEC_OP_SUMSQ, true, true, SH_FINISH_NONE},
    [TILEC_OP_NORM2] = {SH_ADD, TILEC_OP_SUMSQ, true, false, SH_FINISH_SQRT},
    [TILEC_OP_MEAN] = {SH_ADD, TILEC_OP_SUM, true, true, SH_FINISH_MEAN},
    [TILEC_OP_ARGMAX] = {SH_ARGMAX, TILEC_OP_ARGMAX, false, false, SH_FINISH_NONE},
    [TILEC_OP_ARGMIN] = {SH_ARGMIN, TILEC_OP_ARGMIN, false, false, SH_FINISH_NONE},
    [TILEC_OP_AMINMAX] = {SH_AMINMAX, TILEC_OP_AMINMAX, false, false, SH_FINISH_NONE},
    /* each rank's logsumexp (the f32 state, f64's for f64); var and std: each rank's mean and population
     * variance, in f64 (f32 for 16-bit floats), merged as (n, mean, M2) */
    [TILEC_OP_LOGSUMEXP] = {SH_LSE, TILEC_OP_LOGSUMEXP, true, true, SH_FINISH_NONE},
    [TILEC_OP_VAR] = {SH_VAR, TILEC_OP_VAR, true, false, SH_FINISH_NONE},
    [TILEC_OP_STD] = {SH_VAR, TILEC_OP_VAR, true, false, SH_FINISH_SQRT},
};
_Static_assert(sizeof sh_ops / sizeof sh_ops[0] == TILEC_OP_COUNT, "a row for every tilec_op");

static const char SUPPORTED[] = "sum, prod, max, min, sumsq, norm2, mean, argmax, argmin, aminmax, logsumexp, var and std";

/* The folds that pick one rank's value, or merge states that an empty shard has none of:
 * an empty shard gives no partial for them. */
static bool skips_empty(sh_fold f) { return f == SH_MAX || f == SH_MIN || f == SH_ARGMAX || f == SH_ARGMIN || f == SH_AMINMAX || f == SH_VAR; }
static bool is_arg(sh_fold f) { return f == SH_ARGMAX || f == SH_ARGMIN; }

/* What each rank tells the others before the partials (fixed layout: every rank runs the
 * same library). */
typedef struct sh_head {
    int64_t status;  /* the local step's tilec_status */
    int64_t op, dtype, rank, axes, nan, widen, index_i32, correction, shard_dim;
    int64_t shape[TILEC_MAX_RANK];
    int64_t empty;   /* no partial: a max-like op over an empty shard */
    int64_t payload; /* bytes of the partial */
} sh_head;

static tilec_status fail(tilec_ctx *ctx, tilec_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static tilec_status fail(tilec_ctx *ctx, tilec_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ir_diag_vadd(ctx, NULL, TILEC_SEV_ERROR, 0, 0, fmt, ap);
    va_end(ap);
    return st;
}

tilec_status tilec_comm_unique_id(tilec_ctx *ctx, tilec_comm_id *out) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!out) return fail(ctx, TILEC_ERR_INVALID_ARG, "tilec_comm_unique_id: out is NULL; pass where the id goes");
    rt_nccl lib;
    tilec_status st = rt_nccl_open(ctx, &lib);
    if (st != TILEC_OK) return st;
    rt_nccl_uid id;
    memset(&id, 0, sizeof id);
    int res = lib.get_unique_id(&id);
    if (res != 0) st = fail(ctx, TILEC_ERR_IO, "ncclGetUniqueId failed: %s", rt_nccl_error(&lib, res));
    else memcpy(out->bytes, id.internal, sizeof out->bytes);
    rt_nccl_close(&lib);
    return st;
}

tilec_status tilec_comm_init(tilec_ctx *ctx, int nranks, int rank, const tilec_comm_id *id, tilec_comm **out) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!out) return fail(ctx, TILEC_ERR_INVALID_ARG, "tilec_comm_init: out is NULL; pass where the group goes");
    *out = NULL;
    if (!id) return fail(ctx, TILEC_ERR_INVALID_ARG, "no group id: make one with tilec_comm_unique_id on one rank");
    if (nranks < 1 || nranks > MAX_RANKS)
        return fail(ctx, TILEC_ERR_INVALID_ARG, "%d ranks: a group has 1 to %d", nranks, MAX_RANKS);
    if (rank < 0 || rank >= nranks)
        return fail(ctx, TILEC_ERR_INVALID_ARG, "rank %d is out of range: a group of %d has ranks 0 to %d", rank, nranks,
                    nranks - 1);
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    if (st != TILEC_OK) return st;
    tilec_comm *c = calloc(1, sizeof *c);
    if (!c) return TILEC_ERR_NOMEM;
    if ((st = rt_nccl_open(ctx, &c->lib)) != TILEC_OK) {
        free(c);
        return st;
    }
    if (r->be->kind == TILEC_BACKEND_SIM && !c->lib.host_memory) { /* NCCL would fail on CUDA, or crash */
        st = fail(ctx, TILEC_ERR_UNAVAILABLE,
                  "a sharded reduction on the simulator cannot go through %s: NCCL exchanges GPU memory and needs a "
                  "GPU for every rank, and the simulator's memory is host memory; open each rank's runtime on its "
                  "own GPU (tilec_runtime_open with TILEC_BACKEND_AUTO or CUDA and the rank's device), or reduce the "
                  "whole tensor in one context with tilec_reduce", c->lib.path);
        rt_nccl_close(&c->lib);
        free(c);
        return st;
    }
    rt_nccl_uid uid;
    memcpy(uid.internal, id->bytes, sizeof uid.internal);
    int saved = 0;
    if (r->be->device_enter && (st = r->be->device_enter(r, &saved)) != TILEC_OK) {
        rt_nccl_close(&c->lib);
        free(c);
        return st;
    }
    int res = c->lib.comm_init_rank(&c->nccl, nranks, uid, rank); /* on the current device */
    if (r->be->device_leave) r->be->device_leave(r, saved);
    if (res != 0) {
        st = fail(ctx, TILEC_ERR_IO, "ncclCommInitRank (rank %d of %d) failed: %s", rank, nranks, rt_nccl_error(&c->lib, res));
        rt_nccl_close(&c->lib);
        free(c);
        return st;
    }
    c->ctx = ctx;
    c->nranks = nranks;
    c->rank = rank;
    *out = c;
    return TILEC_OK;
}

void tilec_comm_free(tilec_comm *comm) {
    if (!comm) return;
    /* after a failed collective, abort: destroying may wait for ranks that are gone */
    if (comm->nccl) (comm->broken && comm->lib.comm_abort ? comm->lib.comm_abort : comm->lib.comm_destroy)(comm->nccl);
    rt_nccl_close(&comm->lib);
    free(comm);
}

int tilec_comm_rank(const tilec_comm *comm) { return comm ? comm->rank : -1; }
int tilec_comm_size(const tilec_comm *comm) { return comm ? comm->nranks : 0; }

/* Gathers n bytes of every rank (mine: this rank's) into all (nranks * n, host memory),
 * through device memory: upload, ncclAllGather in place, wait for the device, download. */
static tilec_status gather(tilec_comm *c, const void *mine, size_t n, void *all, void *stream) {
    tilec_ctx *ctx = c->ctx;
    size_t total = n * (size_t)c->nranks;
    void *dev = NULL;
    tilec_status st = tilec_mem_alloc(ctx, total ? total : 16, &dev);
    if (st != TILEC_OK) return st;
    char *slot = (char *)dev + n * (size_t)c->rank;
    if (n) st = tilec_mem_upload(ctx, slot, mine, n);
    if (st == TILEC_OK) {
        rt *r = NULL;
        int saved = 0, res = 0;
        st = rt_get(ctx, &r);
        if (st == TILEC_OK && r->be->device_enter) st = r->be->device_enter(r, &saved);
        if (st != TILEC_OK) {
            tilec_mem_free(ctx, dev);
            return st;
        }
        res = c->lib.all_gather(slot, dev, n, RT_NCCL_UINT8, c->nccl, stream);
        if (r->be->device_leave) r->be->device_leave(r, saved);
        if (res != 0) {
            c->broken = true;
            st = TILEC_ERR_IO;
            tilec_mem_free(ctx, dev);
            return fail(ctx, st, "ncclAllGather on rank %d of %d failed: %s; this group is unusable now (free it)",
                        c->rank, c->nranks, rt_nccl_error(&c->lib, res));
        }
        st = tilec_synchronize(ctx);
    }
    if (st == TILEC_OK && total) st = tilec_mem_download(ctx, all, dev, total);
    tilec_status fst = tilec_mem_free(ctx, dev);
    return st != TILEC_OK ? st : fst;
}

/* The local step's outcome. */
typedef struct sh_local {
    sh_head head;
    unsigned char *part; /* head.payload bytes, malloc'd */
    char msg[480];       /* the local failure's first diagnostic */
    bool reduced;        /* the sharded dim is reduced */
    int sd;              /* the sharded dim, normalised */
    tilec_dtype pdt, odt;/* partial and output dtypes */
    size_t ies;          /* bytes of a second output's element (0: none) */
    size_t pies;         /* bytes of the partial's second part, an element (0: none) */
} sh_local;

static int64_t prod_range(const int64_t *s, int lo, int hi, const bool *pick, bool want) {
    int64_t p = 1;
    for (int i = lo; i < hi; i++)
        if (pick[i] == want) p *= s[i];
    return p;
}

/* Checks what can be checked on this rank, runs the local reduction and downloads it. */
static tilec_status local_step(tilec_ctx *ctx, const tilec_reduce_desc *d, int shard_dim, const void *in, sh_local *L,
                               bool *red) {
    if (d->rank < 1 || d->rank > TILEC_MAX_RANK)
        return fail(ctx, TILEC_ERR_INVALID_ARG, "rank %d is out of range: a tensor has 1 to %d dimensions", d->rank,
                    TILEC_MAX_RANK);
    if (shard_dim < -d->rank || shard_dim >= d->rank)
        return fail(ctx, TILEC_ERR_INVALID_ARG, "shard_dim %d is out of range for a tensor of rank %d", shard_dim, d->rank);
    if ((unsigned)d->op >= TILEC_OP_COUNT) return fail(ctx, TILEC_ERR_INVALID_ARG, "op %d is not a tilec_op", (int)d->op);
    if ((unsigned)d->dtype >= TILEC_DTYPE_COUNT)
        return fail(ctx, TILEC_ERR_INVALID_ARG, "dtype %d is not a tilec_dtype", (int)d->dtype);
    if (d->accumulate)
        return fail(ctx, TILEC_ERR_INVALID_ARG, "tilec_reduce_sharded does not take accumulate: reduce into another buffer and add");
    if (d->naxes < 1 || d->naxes > d->rank)
        return fail(ctx, TILEC_ERR_INVALID_ARG, "%d axes for a tensor of rank %d: give 1 to %d", d->naxes, d->rank, d->rank);
    L->sd = shard_dim < 0 ? shard_dim + d->rank : shard_dim;
    for (int i = 0; i < d->naxes; i++) {
        int a = d->axes[i] < 0 ? d->axes[i] + d->rank : d->axes[i];
        if (a < 0 || a >= d->rank)
            return fail(ctx, TILEC_ERR_INVALID_ARG, "axis %d is out of range for a tensor of rank %d", d->axes[i], d->rank);
        red[a] = true;
        L->head.axes |= (int64_t)1 << a;
    }
    L->reduced = red[L->sd];
    if (!tilec_op_supports(d->op, d->dtype, false))
        return fail(ctx, TILEC_ERR_INVALID_ARG, "%s is not defined for %s (tilec_op_supports says which dtypes it takes)",
                    tilec_op_name(d->op), tilec_dtype_name(d->dtype));
    const sh_op *so = &sh_ops[d->op];
    if (L->reduced && so->fold == SH_NONE)
        return fail(ctx, TILEC_ERR_INVALID_ARG,
                    "%s over a sharded dim is not supported: a reduced shard_dim takes %s; a kept one takes every op",
                    tilec_op_name(d->op), SUPPORTED);
    tilec_reduce_desc ld = *d;
    bool half = d->dtype == TILEC_F16 || d->dtype == TILEC_BF16;
    if (L->reduced) {
        ld.op = so->local;
        ld.widen = d->widen || (so->wide && (!so->wide_floats_only || half));
    }
    L->odt = rt_out_dtype(d);
    L->pdt = ld.widen ? tilec_dtype_wide(d->dtype) : d->dtype;
    bool two = tilec_op_outputs(d->op) == 2;
    if (two != (d->out2 != NULL))
        return fail(ctx, TILEC_ERR_INVALID_ARG, two ? "%s has two outputs: give local->out2 for the second"
                                                    : "%s has one output: leave out2 NULL", tilec_op_name(d->op));
    if (two) {
        tilec_dtype sdt = tilec_op_second_dtype(d->op, L->odt);
        L->ies = sdt == TILEC_I64 && d->index_i32 ? 4 : tilec_dtype_size(sdt);
    }
    L->pies = !L->reduced ? L->ies : so->fold == SH_VAR ? tilec_dtype_size(L->pdt) : so->fold == SH_LSE ? 0 : L->ies;
    if (d->correction && *d->correction < 0)
        return fail(ctx, TILEC_ERR_INVALID_ARG, "correction %lld is negative: give 0 or more (NULL: 1, Bessel's)",
                    (long long)*d->correction);
    int64_t kept = 1;
    for (int i = 0; i < d->rank; i++) {
        if (d->shape[i] < 0)
            return fail(ctx, TILEC_ERR_INVALID_ARG, "extent %lld of dimension %d is negative", (long long)d->shape[i], i);
        if (!red[i] && (__builtin_mul_overflow(kept, d->shape[i], &kept) || kept > TILEC_MAX_ELEMENTS))
            return fail(ctx, TILEC_ERR_INVALID_ARG, "the output has more than 2^48 elements");
    }
    size_t pes = tilec_dtype_size(L->pdt), b1 = (size_t)kept * pes, b2 = (size_t)kept * L->pies;
    L->head.payload = (int64_t)(b1 + b2);
    L->part = malloc(b1 + b2 ? b1 + b2 : 1);
    if (!L->part) return TILEC_ERR_NOMEM;
    if (L->reduced && d->shape[L->sd] == 0 && skips_empty(so->fold)) {
        L->head.empty = 1; /* nothing to say: the other ranks' partials decide */
        return TILEC_OK;
    }
    if (kept == 0) return TILEC_OK;
    void *dout = NULL, *dout2 = NULL;
    tilec_status st = tilec_mem_alloc(ctx, b1, &dout);
    if (st == TILEC_OK && b2) st = tilec_mem_alloc(ctx, b2, &dout2);
    if (st == TILEC_OK && L->reduced && so->fold == SH_VAR) { /* the shard's mean, then its variance */
        static const int64_t population = 0;
        tilec_reduce_desc md = ld;
        md.op = TILEC_OP_MEAN;
        md.correction = NULL;
        ld.correction = &population;
        st = tilec_reduce(ctx, &md, in, dout);
        if (st == TILEC_OK) st = tilec_reduce(ctx, &ld, in, dout2);
    } else if (st == TILEC_OK) {
        ld.out2 = dout2;
        st = tilec_reduce(ctx, &ld, in, dout);
    }
    if (st == TILEC_OK) st = tilec_synchronize(ctx);
    if (st == TILEC_OK) st = tilec_mem_download(ctx, L->part, dout, b1);
    if (st == TILEC_OK && b2) st = tilec_mem_download(ctx, L->part + b1, dout2, b2);
    if (st != TILEC_OK && L->msg[0] == 0) {
        tilec_diag dg;
        if (tilec_diag_get(ctx, 0, &dg) == TILEC_OK) snprintf(L->msg, sizeof L->msg, "%s", dg.message);
    }
    if (dout2) tilec_mem_free(ctx, dout2);
    if (dout) tilec_mem_free(ctx, dout);
    return st;
}

/* Max order of the format: -0 < +0; NaN handled by the caller. */
static int order(double a, double b) {
    if (a < b) return -1;
    if (a > b) return 1;
    if (a == b && signbit(a) != signbit(b)) return signbit(a) ? -1 : 1;
    return 0;
}

/* Whether candidate (v, i) beats the best so far (bv, bi) for argmax (dir 1) or argmin
 * (dir -1): the format's rules (the first NaN under propagate; a NaN never wins under
 * ignore; ties to the lower index). */
static bool beats(double v, int64_t i, double bv, int64_t bi, int dir, tilec_nan nan) {
    bool vn = isnan(v), bn = isnan(bv);
    if (vn || bn) {
        if (vn && bn) return i < bi;
        return nan == TILEC_NAN_PROPAGATE ? vn : bn;
    }
    int c = dir * order(v, bv);
    return c > 0 || (c == 0 && i < bi);
}

/* Elements each output of rank r's shard folds. */
static int64_t shard_count(const tilec_reduce_desc *d, const sh_head *heads, int r) {
    int64_t n = 1;
    for (int i = 0; i < d->rank; i++)
        if ((heads[0].axes >> i) & 1) n *= heads[r].shape[i];
    return n;
}

/* Output j of the folds that merge states (aminmax, logsumexp, var, std), over the
 * ranks in order, in double precision: the same operations on every rank. */
static void fold_state(const tilec_reduce_desc *d, const sh_local *L, const sh_head *heads, int nranks,
                       const unsigned char *all, size_t slot, int64_t kept, int64_t j, int64_t count, unsigned char *res) {
    const sh_op *so = &sh_ops[d->op];
    lp_type pt = lp_type_of(L->pdt), ot = lp_type_of(L->odt);
    size_t pes = tilec_dtype_size(L->pdt), oes = tilec_dtype_size(L->odt);
    bool flt = ir_dtype_is_float(L->pdt);
    if (so->fold == SH_AMINMAX) { /* the minima, then the maxima */
        double lo = 0, hi = 0;
        int64_t ilo = 0, ihi = 0;
        bool have = false;
        for (int r = 0; r < nranks; r++) {
            if (heads[r].empty) continue;
            const unsigned char *p = all + slot * (size_t)r, *q = p + (size_t)kept * pes;
            if (flt) {
                double a = num_load_float(pt, p, j), b = num_load_float(pt, q, j);
                lo = have ? num_fmin(lo, a, d->nan) : a;
                hi = have ? num_fmax(hi, b, d->nan) : b;
            } else {
                int64_t a = num_load_int(pt, p, j), b = num_load_int(pt, q, j);
                ilo = have && ilo < a ? ilo : a;
                ihi = have && ihi > b ? ihi : b;
            }
            have = true;
        }
        if (flt) {
            num_store_float(ot, res, j, isnan(lo) ? NAN : lo);
            num_store_float(ot, res + (size_t)kept * oes, j, isnan(hi) ? NAN : hi);
        } else {
            num_store_int(ot, res, j, ilo);
            num_store_int(ot, res + (size_t)kept * oes, j, ihi);
        }
        return;
    }
    double v;
    if (so->fold == SH_LSE) { /* m + ln(sum of e^(l_r - m)) over the ranks' logsumexps l_r */
        double m = -INFINITY;
        for (int r = 0; r < nranks; r++) m = num_fmax(m, num_load_float(pt, all + slot * (size_t)r, j), TILEC_NAN_PROPAGATE);
        if (isfinite(m)) {
            double sum = 0;
            for (int r = 0; r < nranks; r++) sum += exp(num_load_float(pt, all + slot * (size_t)r, j) - m);
            m += log(sum);
        }
        v = d->dtype == TILEC_F64 ? m : num_round(LP_F32, m); /* an f64 source's state is f64 */
    } else { /* var, std: Chan's merge of (n, mean, M2) in rank order */
        double n = 0, mean = 0, m2 = 0;
        for (int r = 0; r < nranks; r++) {
            if (heads[r].empty) continue;
            const unsigned char *p = all + slot * (size_t)r;
            double nb = (double)shard_count(d, heads, r);
            double mb = num_load_float(pt, p, j), vb = num_load_float(pt, p + (size_t)kept * pes, j), m2b = vb * nb;
            if (n == 0) {
                n = nb, mean = mb, m2 = m2b;
                continue;
            }
            double t = n + nb, delta = mb - mean;
            mean += delta * (nb / t);
            m2 += m2b + delta * delta * (n * nb / t);
            n = t;
        }
        int64_t c = d->correction ? *d->correction : 1, div = count - c > 0 ? count - c : 0;
        v = count == 0 ? NAN : m2 / (double)div;
        if (so->finish == SH_FINISH_SQRT) v = sqrt(v);
        if (L->odt == TILEC_F16 || L->odt == TILEC_BF16) v = num_round(LP_F32, v);
    }
    num_store_float(ot, res, j, isnan(v) ? NAN : v);
}

/* Folds the partials of a reduced shard_dim, in rank order, into res (the output, then
 * the second output). */
static void fold_reduced(const tilec_reduce_desc *d, const sh_local *L, const sh_head *heads, int nranks,
                         const unsigned char *all, size_t slot, unsigned char *res, double *fl_buf, int64_t *il_buf) {
    const sh_op *so = &sh_ops[d->op];
    lp_type pt = lp_type_of(L->pdt), ot = lp_type_of(L->odt);
    bool flt = ir_dtype_is_float(L->pdt);
    int sd = L->sd;
    bool red[TILEC_MAX_RANK] = {0};
    for (int i = 0; i < d->rank; i++) red[i] = (heads[0].axes >> i) & 1;
    int64_t total = 0, gshape[TILEC_MAX_RANK], off[MAX_RANKS];
    for (int r = 0; r < nranks; r++) off[r] = total, total += heads[r].shape[sd];
    for (int i = 0; i < d->rank; i++) gshape[i] = i == sd ? total : d->shape[i];
    int64_t kept = prod_range(d->shape, 0, d->rank, red, false);
    int64_t n = prod_range(gshape, 0, d->rank, red, true); /* elements each output folds */
    size_t pes = tilec_dtype_size(L->pdt), oes = tilec_dtype_size(L->odt);
    double *fl = fl_buf;
    int64_t *il = il_buf;
    for (int64_t j = 0; j < kept; j++) {
        if (so->fold >= SH_AMINMAX) {
            fold_state(d, L, heads, nranks, all, slot, kept, j, n, res);
            continue;
        }
        bool have = false;
        double fv = 0, bv = 0;
        int64_t iv = 0, bi = 0, bvi = 0; /* bvi: an integer winner's value (i64's are not all doubles) */
        int br = -1, nleaf = 0;
        for (int r = 0; r < nranks; r++) {
            if (heads[r].empty) continue;
            const unsigned char *p = all + slot * (size_t)r;
            if (is_arg(so->fold)) {
                double v = flt ? num_load_float(pt, p, j) : 0;
                int64_t vi = flt ? 0 : num_load_int(pt, p, j);
                int64_t li = L->ies == 4 ? num_load_int(LP_I32, p + (size_t)kept * pes, j)
                                         : num_load_int(LP_I64, p + (size_t)kept * pes, j);
                /* the local flat index over the reduced dims, re-based on the global extents */
                int64_t g = 0, rest = li;
                int64_t coord[TILEC_MAX_RANK];
                for (int i = d->rank - 1; i >= 0; i--)
                    if (red[i]) {
                        int64_t e = heads[r].shape[i];
                        coord[i] = e ? rest % e : 0;
                        rest = e ? rest / e : 0;
                    }
                for (int i = 0; i < d->rank; i++)
                    if (red[i]) g = g * gshape[i] + coord[i] + (i == sd ? off[r] : 0);
                int dir = so->fold == SH_ARGMAX ? 1 : -1, c = dir * ((vi > bvi) - (vi < bvi));
                if (!have || (flt ? beats(v, g, bv, bi, dir, d->nan) : c > 0 || (c == 0 && g < bi)))
                    bv = v, bvi = vi, bi = g, br = r;
                have = true;
                continue;
            }
            if (so->fold == SH_ADD || so->fold == SH_MUL) { /* leaves of the tree below */
                if (flt) fl[nleaf++] = num_load_float(pt, p, j);
                else il[nleaf++] = num_load_int(pt, p, j);
            } else if (flt) {
                double v = num_load_float(pt, p, j);
                fv = !have ? v : so->fold == SH_MAX ? num_fmax(fv, v, d->nan) : num_fmin(fv, v, d->nan);
            } else {
                int64_t v = num_load_int(pt, p, j);
                iv = !have ? v : so->fold == SH_MAX ? (v > iv ? v : iv) : (v < iv ? v : iv);
            }
            have = true;
        }
        /* sums and products: the perfect binary tree of the ranks' partials, neighbours
         * paired level by level, left operand first (the engine's block tree, so shards
         * on its boundaries give its bits) */
        for (int h = 1; h < nleaf; h <<= 1)
            for (int i = 0; i + h < nleaf; i += 2 * h) {
                if (!flt && so->fold == SH_ADD) il[i] = (int64_t)((uint64_t)il[i] + (uint64_t)il[i + h]);
                else if (!flt) il[i] = (int64_t)((uint64_t)il[i] * (uint64_t)il[i + h]);
                else fl[i] = num_round(pt, so->fold == SH_ADD ? fl[i] + fl[i + h] : fl[i] * fl[i + h]);
            }
        if (nleaf) fv = fl[0], iv = il[0];
        if (is_arg(so->fold)) { /* the winner's value, bit for bit, and its index */
            if (isnan(bv) && d->nan == TILEC_NAN_IGNORE) bi = 0;
            memcpy(res + (size_t)j * oes, all + slot * (size_t)br + (size_t)j * pes, oes);
            if (L->ies == 4) num_store_int(LP_I32, res + (size_t)kept * oes, j, bi);
            else num_store_int(LP_I64, res + (size_t)kept * oes, j, bi);
            continue;
        }
        if (!flt) {
            num_store_int(ot, res, j, iv);
            continue;
        }
        if (so->finish == SH_FINISH_SQRT) fv = num_round(pt, sqrt(fv));
        if (so->finish == SH_FINISH_MEAN) fv = num_round(pt, fv / num_round(pt, (double)n));
        num_store_float(ot, res, j, isnan(fv) ? NAN : fv);
    }
}

/* Places the ranks' slices of a kept shard_dim into the whole output (then the second). */
static void place_kept(const tilec_reduce_desc *d, const sh_local *L, const sh_head *heads, int nranks,
                       const unsigned char *all, size_t slot, unsigned char *res) {
    bool red[TILEC_MAX_RANK] = {0};
    for (int i = 0; i < d->rank; i++) red[i] = (heads[0].axes >> i) & 1;
    int sd = L->sd;
    int64_t outer = prod_range(d->shape, 0, sd, red, false), inner = prod_range(d->shape, sd + 1, d->rank, red, false);
    int64_t total = 0;
    for (int r = 0; r < nranks; r++) total += heads[r].shape[sd];
    size_t es[2] = {tilec_dtype_size(L->odt), L->ies};
    size_t whole0 = (size_t)(outer * total * inner) * es[0];
    int64_t off = 0;
    for (int r = 0; r < nranks; r++) {
        int64_t e = heads[r].shape[sd];
        const unsigned char *p = all + slot * (size_t)r;
        for (int k = 0; k < 2 && es[k]; k++) {
            const unsigned char *src = p + (k ? (size_t)(outer * e * inner) * es[0] : 0);
            unsigned char *dst = res + (k ? whole0 : 0);
            for (int64_t o = 0; o < outer; o++)
                memcpy(dst + (size_t)((o * total + off) * inner) * es[k], src + (size_t)(o * e * inner) * es[k],
                       (size_t)(e * inner) * es[k]);
        }
        off += e;
    }
}

/* Whether rank r's header fits rank 0's; else the field that differs. */
static const char *mismatch(const sh_head *a, const sh_head *b, int sd) {
    if (a->op != b->op) return "op";
    if (a->dtype != b->dtype) return "dtype";
    if (a->rank != b->rank) return "rank";
    if (a->shard_dim != b->shard_dim) return "shard_dim";
    if (a->axes != b->axes) return "axes";
    if (a->nan != b->nan) return "nan policy";
    if (a->widen != b->widen) return "widen";
    if (a->index_i32 != b->index_i32) return "index_i32";
    if (a->correction != b->correction) return "correction";
    for (int i = 0; i < a->rank && i < TILEC_MAX_RANK; i++)
        if (i != sd && a->shape[i] != b->shape[i]) return "shape (a dim other than shard_dim)";
    return NULL;
}

/* The whole reduction's outputs (b1 and b2 bytes) against this rank's input and the blocks
 * they meet, as tilec_reduce checks its own: apart from the input and from each other,
 * and within the allocation each meets (on the simulator, which knows them). *r gets the
 * runtime. */
static tilec_status check_outputs(tilec_ctx *ctx, const tilec_reduce_desc *d, const void *in, const void *out, size_t b1,
                                  size_t b2, rt **r) {
    uintptr_t lo;
    size_t in_bytes;
    if (!rt_input_range(d, in, &lo, &in_bytes)) in_bytes = 0; /* the local reduction said why */
    tilec_status st = rt_outputs_apart(ctx, lo, in_bytes, (uintptr_t)out, b1, (uintptr_t)d->out2, b2);
    if (st == TILEC_OK) st = rt_get(ctx, r);
    char what[128];
    snprintf(what, sizeof what, "the output (the whole tensor's reduction: %zu bytes)", b1);
    if (st == TILEC_OK) st = rt_within(*r, what, (uintptr_t)out, b1);
    snprintf(what, sizeof what, "out2 (the whole tensor's: %zu bytes)", b2);
    if (st == TILEC_OK && b2) st = rt_within(*r, what, (uintptr_t)d->out2, b2);
    return st;
}

tilec_status tilec_reduce_sharded(tilec_ctx *ctx, tilec_comm *comm, const tilec_reduce_desc *d, int shard_dim,
                                  const void *in, void *out) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!comm) return fail(ctx, TILEC_ERR_INVALID_ARG, "no group: make one with tilec_comm_init");
    if (comm->ctx != ctx) return fail(ctx, TILEC_ERR_INVALID_ARG, "the group was made with another context");
    if (comm->broken)
        return fail(ctx, TILEC_ERR_IO, "an earlier collective of this group failed: free it and make a new one");
    sh_local L;
    memset(&L, 0, sizeof L);
    bool red[TILEC_MAX_RANK] = {0};
    tilec_status st = d ? local_step(ctx, d, shard_dim, in, &L, red)
                        : fail(ctx, TILEC_ERR_INVALID_ARG, "no reduction descriptor");
    if (st != TILEC_OK && L.msg[0] == 0) {
        tilec_diag dg;
        if (tilec_diag_get(ctx, 0, &dg) == TILEC_OK) snprintf(L.msg, sizeof L.msg, "%s", dg.message);
    }
    if (st == TILEC_OK && !out)
        st = fail(ctx, TILEC_ERR_INVALID_ARG, "no output"), snprintf(L.msg, sizeof L.msg, "no output");
    sh_head *h = &L.head;
    h->status = st;
    if (d) {
        h->op = d->op, h->dtype = d->dtype, h->rank = d->rank, h->nan = d->nan, h->widen = d->widen;
        /* a NULL correction means 1 (Bessel's): ranks giving NULL and a pointer to 1 agree */
        h->index_i32 = d->index_i32, h->correction = d->correction ? *d->correction : 1, h->shard_dim = L.sd;
        for (int i = 0; i < d->rank && i < TILEC_MAX_RANK; i++) h->shape[i] = d->shape[i];
    }
    int n = comm->nranks;
    sh_head *heads = calloc((size_t)n, sizeof *heads);
    unsigned char *all = NULL, *res = NULL, *mine = NULL;
    double *leaves = NULL;
    int64_t *ileaves = NULL;
    if (!heads) { /* the others time out in their gather: out of memory is not recovered */
        free(L.part);
        return TILEC_ERR_NOMEM;
    }
    tilec_status gst = gather(comm, h, sizeof *h, heads, d ? d->stream : NULL);
    if (gst != TILEC_OK) {
        st = gst;
        goto done;
    }
    int bad = -1;
    for (int r = 0; r < n && bad < 0; r++)
        if (heads[r].status != TILEC_OK) bad = r;
    if (bad >= 0) {
        st = (tilec_status)heads[bad].status;
        ir_begin(ctx);
        if (bad == comm->rank || h->status != TILEC_OK)
            fail(ctx, (tilec_status)h->status, "rank %d of %d: %s", comm->rank, n, L.msg[0] ? L.msg : tilec_status_message(st));
        else
            fail(ctx, st, "rank %d of %d failed (%s): no rank has a result", bad, n, tilec_status_name(st));
        if (h->status != TILEC_OK) st = (tilec_status)h->status;
        goto done;
    }
    for (int r = 1; r < n; r++) {
        const char *what = mismatch(&heads[0], &heads[r], L.sd);
        if (what) {
            ir_begin(ctx);
            st = fail(ctx, TILEC_ERR_INVALID_ARG, "rank %d's shard does not fit rank 0's: its %s differs (every rank gives "
                      "the same op, dtype, axes and options, and the same extents but for shard_dim)", r, what);
            goto done;
        }
    }
    /* the whole tensor's extent of shard_dim and its output: bounded as tilec_reduce bounds them */
    int64_t total = 0, whole = 1, nred = 1;
    bool big = false;
    for (int r = 0; r < n; r++) big = big || __builtin_add_overflow(total, heads[r].shape[L.sd], &total);
    for (int i = 0; i < d->rank; i++) {
        int64_t e = i == L.sd ? total : d->shape[i];
        big = big || (!red[i] ? __builtin_mul_overflow(whole, e, &whole) : __builtin_mul_overflow(nred, e, &nred));
    }
    if (big || total > TILEC_MAX_ELEMENTS || whole > TILEC_MAX_ELEMENTS || nred > TILEC_MAX_ELEMENTS) {
        ir_begin(ctx);
        st = fail(ctx, TILEC_ERR_INVALID_ARG, "the whole tensor (dim %d of %lld in all) is beyond 2^48 elements", L.sd,
                  (long long)total);
        goto done;
    }
    if (L.reduced && d->index_i32 && nred >= INT32_MAX) {
        ir_begin(ctx);
        st = fail(ctx, TILEC_ERR_INVALID_ARG, "a slice of the whole tensor holds %lld elements: its index does not fit "
                  "index_i32's i32 (below 2^31 - 1); leave index_i32 false", (long long)nred);
        goto done;
    }
    bool all_empty = true;
    size_t slot = 0;
    for (int r = 0; r < n; r++) {
        all_empty = all_empty && heads[r].empty;
        if ((size_t)heads[r].payload > slot) slot = (size_t)heads[r].payload;
    }
    if (all_empty && L.reduced && L.head.empty && sh_ops[d->op].fold != SH_VAR) { /* var: NaN */
        ir_begin(ctx);
        st = fail(ctx, TILEC_ERR_INVALID_ARG, "%s over an empty axis: every rank's shard of dim %d is empty",
                  tilec_op_name(d->op), L.sd);
        goto done;
    }
    /* the outputs, now that the whole output's size is known, checked as tilec_reduce checks
     * its own; every rank's verdict travels after its partial (the slot's last 8 bytes), so
     * a rank's bad output fails every rank, and none writes */
    size_t b1 = (size_t)whole * tilec_dtype_size(L.odt), b2 = (size_t)whole * L.ies;
    ir_begin(ctx);
    rt *r = NULL;
    tilec_status ost = check_outputs(ctx, d, in, out, b1, b2, &r);
    char omsg[sizeof L.msg] = "";
    tilec_diag odg;
    if (ost != TILEC_OK && tilec_diag_get(ctx, 0, &odg) == TILEC_OK) snprintf(omsg, sizeof omsg, "%s", odg.message);
    size_t pay = (slot + 7) & ~(size_t)7;
    slot = pay + sizeof(int64_t);
    mine = calloc(1, slot);
    all = calloc((size_t)n, slot);
    res = calloc(1, b1 + b2 ? b1 + b2 : 1);
    leaves = calloc((size_t)n, sizeof *leaves);
    ileaves = calloc((size_t)n, sizeof *ileaves);
    if (!mine || !all || !res || !leaves || !ileaves) {
        st = TILEC_ERR_NOMEM; /* as above: the others time out */
        goto done;
    }
    memcpy(mine, L.part, (size_t)h->payload);
    int64_t verdict = ost;
    memcpy(mine + pay, &verdict, sizeof verdict);
    if ((st = gather(comm, mine, slot, all, d->stream)) != TILEC_OK) goto done;
    for (int q = 0; q < n && bad < 0; q++) {
        memcpy(&verdict, all + slot * (size_t)q + pay, sizeof verdict);
        if (verdict != TILEC_OK) bad = q;
    }
    if (bad >= 0) {
        ir_begin(ctx);
        if (ost != TILEC_OK) st = fail(ctx, ost, "rank %d of %d: %s", comm->rank, n, omsg[0] ? omsg : tilec_status_message(ost));
        else
            st = fail(ctx, (tilec_status)verdict, "rank %d of %d failed (%s): no rank has a result", bad, n,
                      tilec_status_name((tilec_status)verdict));
        goto done;
    }
    if (L.reduced) fold_reduced(d, &L, heads, n, all, slot, res, leaves, ileaves);
    else place_kept(d, &L, heads, n, all, slot, res);
    ir_begin(ctx);
    /* the backend's copy: the outputs were checked above as tilec_reduce checks them */
    if (b1) st = r->be->upload(r, out, res, b1);
    if (st == TILEC_OK && b2) st = r->be->upload(r, d->out2, res + b1, b2);
done:
    free(leaves);
    free(ileaves);
    free(heads);
    free(all);
    free(res);
    free(mine);
    free(L.part);
    return st;
}
