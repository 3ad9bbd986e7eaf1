/*
 * reduce.c — tilec_reduce: plan, generate, compile, cache, launch.
 *
 * The planner turns (shape, axes) into the smallest equivalent view: extent-1 dims are
 * dropped and neighbouring dims that are both reduced or both kept are merged, so
 * [8, 1, 16, 32] over axes (2, 3) becomes [8, 512] over (1); a strided view keeps its dims
 * and strides (the input buffer is a view: ir_buffer_view), and the grid planner sorts and
 * merges them by stride. The view becomes a one-line
 * tile program, `grid.OP(B, A, axes=...)`, which goes down the same pipeline as any
 * .tile file: verify, dispatch to a grid variant (docs/dispatch.md), lower, emit, compile,
 * load. Plans are kept per context, keyed by everything that changes the code; their
 * scratch is kept per (plan, stream) by the launch (runtime.c).
 */
#include "runtime.h"
#include "sim.h"
#include "../ir/numeric.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { THREADS = 256 };

/* The view of a reduction: dense dims merged, or a strided view's dims with their strides. */
typedef struct view {
    int rank;
    int64_t shape[TILEC_MAX_RANK];
    bool reduced[TILEC_MAX_RANK];
    int64_t in_elems, out_elems;
    bool empty_axis; /* a reduced extent is 0 while the output is not empty */
    bool strided;    /* strides[] hold the view's element strides */
    int64_t strides[TILEC_MAX_RANK];
    int64_t origin, span; /* element [0, ..., 0] past the lowest one; elements reached */
} view;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}


/* A strided view: its dims as given but for extent-1 ones and, for max and min, reduced
 * broadcast (stride 0) ones, which change nothing; the grid planner sorts and merges them
 * by stride (docs/dispatch.md). The span is what the strides reach, from the lowest
 * element to the highest. */
static tilec_status strided_view(tilec_ctx *ctx, const tilec_reduce_desc *d, const bool *red, view *v) {
    int64_t lo = 0, hi = 0;
    v->rank = 0;
    v->strided = true;
    for (int i = 0; i < d->rank; i++) {
        int64_t e = d->shape[i], st = d->strides[i], reach;
        if (__builtin_mul_overflow(e - 1, st, &reach) || __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi) ||
            hi - lo >= TILEC_MAX_ELEMENTS)
            return ir_bad(ctx, "the strides reach more than 2^48 elements (dimension %d: extent %lld, stride %lld)", i,
                       (long long)e, (long long)st);
        if (e == 1 || (red[i] && st == 0 && ir_op(d->op)->idempotent)) continue;
        v->shape[v->rank] = e;
        v->strides[v->rank] = st;
        v->reduced[v->rank++] = red[i];
    }
    bool any = false;
    for (int i = 0; i < v->rank; i++) any = any || v->reduced[i];
    if (!any) { /* every reduced dim is gone: the reduction of one element */
        v->shape[v->rank] = 1;
        v->strides[v->rank] = 1;
        v->reduced[v->rank++] = true;
    }
    v->origin = -lo;
    v->span = hi - lo + 1;
    return TILEC_OK;
}

/* Checks the descriptor and builds the merged view. */
static tilec_status plan_view(tilec_ctx *ctx, const tilec_reduce_desc *d, view *v) {
    if ((unsigned)d->op >= TILEC_OP_COUNT) return ir_bad(ctx, "op %d is not a tilec_op", (int)d->op);
    if ((unsigned)d->dtype >= TILEC_DTYPE_COUNT) return ir_bad(ctx, "dtype %d is not a tilec_dtype", (int)d->dtype);
    if ((unsigned)d->nan >= TILEC_NAN_COUNT) return ir_bad(ctx, "nan policy %d is not a tilec_nan", (int)d->nan);
    bool flt = ir_dtype_is_float(d->dtype);
    const ir_op_info *op = ir_op(d->op);
    if (op->floats_only && !flt)
        return ir_bad(ctx, "%s is defined for float dtypes, not %s: convert the input to %s first (sum and "
                        "sumsq take integers)",
                   tilec_op_name(d->op), tilec_dtype_name(d->dtype), tilec_op_supports(d->op, TILEC_F64, false) ? "f32 or f64" : "f32");
    if (op->finish != IR_FINISH_NONE && !op->accum_element && d->accumulate)
        return ir_bad(ctx, "accumulate does not apply to %s: its result does not combine with the output's; "
                        "reduce into another buffer and add", tilec_op_name(d->op));
    if (d->nan == TILEC_NAN_IGNORE && (!ir_op(d->op)->compares || !flt))
        return ir_bad(ctx, "nan policy ignore applies to the ops that compare (max, min, argmax, argmin, aminmax) of "
                        "float dtypes only (a sum with a NaN is NaN; integers have none), not to %s %s",
                   tilec_op_name(d->op), tilec_dtype_name(d->dtype));
    if (!op->second && (d->out2 || d->index_i32))
        return ir_bad(ctx, "%s has one output: leave out2 NULL and index_i32 false", tilec_op_name(d->op));
    if (d->correction && !tilec_op_takes_correction(d->op))
        return ir_bad(ctx, "correction is for var and std; leave it NULL for %s", tilec_op_name(d->op));
    if (d->correction && *d->correction < 0)
        return ir_bad(ctx, "correction %lld is negative: give 0 (the population variance, numpy's default) or more "
                        "(NULL: 1, Bessel's)", (long long)*d->correction);
    if (op->key != IR_KEY_INDEX && d->index_i32)
        return ir_bad(ctx, "index_i32 is for argmax and argmin; %s's second output is its %s, in the output's dtype",
                   tilec_op_name(d->op), op->second);
    if (d->rank < 1 || d->rank > TILEC_MAX_RANK)
        return ir_bad(ctx, "rank %d is out of range: a tensor has 1 to %d dimensions", d->rank, TILEC_MAX_RANK);
    if (d->naxes < 1 || d->naxes > d->rank)
        return ir_bad(ctx, "%d axes for a tensor of rank %d: give 1 to %d", d->naxes, d->rank, d->rank);
    bool red[TILEC_MAX_RANK] = {0};
    for (int i = 0; i < d->naxes; i++) {
        int a = d->axes[i] < 0 ? d->axes[i] + d->rank : d->axes[i];
        if (a < 0 || a >= d->rank)
            return ir_bad(ctx, "axis %d is out of range for rank %d (axes %d to %d)", d->axes[i], d->rank, -d->rank, d->rank - 1);
        if (red[a]) return ir_bad(ctx, "axis %d is given twice", a);
        red[a] = true;
    }
    *v = (view){.in_elems = 1, .out_elems = 1};
    bool reduced_empty = false;
    int64_t span = 1; /* the product of the extents other than 0: bounds every product below */
    for (int i = 0; i < d->rank; i++) {
        int64_t e = d->shape[i];
        if (e < 0) return ir_bad(ctx, "extent %lld of dimension %d is negative", (long long)e, i);
        if (__builtin_mul_overflow(v->in_elems, e, &v->in_elems))
            return ir_bad(ctx, "the tensor has more than 2^63-1 elements");
        if (__builtin_mul_overflow(span, e ? e : 1, &span))
            return ir_bad(ctx, "the extents other than 0 multiply to more than 2^63-1");
        if (span > TILEC_MAX_ELEMENTS)
            return ir_bad(ctx, "the extents other than 0 multiply to %lld; tilec reduces tensors of up to 2^48 elements",
                       (long long)span);
        if (!red[i]) v->out_elems *= e;
        else if (e == 0) reduced_empty = true;
        if (e == 1) continue; /* changes nothing */
        if (v->rank > 0 && v->reduced[v->rank - 1] == red[i]) v->shape[v->rank - 1] *= e; /* neighbours merge */
        else {
            v->shape[v->rank] = e;
            v->reduced[v->rank++] = red[i];
        }
    }
    bool any = false;
    for (int i = 0; i < v->rank; i++) any = any || v->reduced[i];
    if (!any) { /* every reduced extent is 1: the reduction of one element */
        v->shape[v->rank] = 1;
        v->reduced[v->rank++] = true;
    }
    v->empty_axis = v->out_elems > 0 && reduced_empty;
    if (op->key == IR_KEY_INDEX && v->out_elems > 0 && v->in_elems / v->out_elems >= INT32_MAX)
        return ir_bad(ctx, "%s reduces %lld elements per output; a slice holds at most 2^31 - 2 (its indices fit an i32)", tilec_op_name(d->op),
                   (long long)(v->in_elems / v->out_elems));
    if (v->empty_axis && ir_op(d->op)->empty == IR_EMPTY_ERROR)
        return ir_bad(ctx, "%s over an empty axis has no value: a reduced extent is 0", tilec_op_name(d->op));
    v->span = v->in_elems;
    return d->strides && v->in_elems > 0 ? strided_view(ctx, d, red, v) : TILEC_OK;
}

/* The output's dtype: the input's, or its wide one; the second output's (the indices). */
tilec_dtype rt_out_dtype(const tilec_reduce_desc *d) { return d->widen ? tilec_dtype_wide(d->dtype) : d->dtype; }
tilec_dtype rt_out2_dtype(const tilec_reduce_desc *d) {
    return d->index_i32 ? TILEC_I32 : tilec_op_second_dtype(d->op, rt_out_dtype(d));
}

/* n elements of what a reduction over an empty axis gives in the output's dtype: the op's
 * identity (+0 for a sum: its -0 identity is for folds, an empty sum is 0), NaN (a mean)
 * or -inf (a logsumexp); malloc'd, NULL when out of memory. Ops whose empty reduction is an error do not
 * get here. */
static double empty_of(tilec_op o) {
    const ir_op_info *op = ir_op(o);
    if (op->empty == IR_EMPTY_NAN) return NAN;
    if (op->empty == IR_EMPTY_NEG_INF) return -INFINITY;
    return op->identity == IR_IDENTITY_ONE ? 1 : 0; /* a zero identity is +0 here: its -0 is for folds */
}

static unsigned char *empty_value(const tilec_reduce_desc *d, int64_t n) {
    tilec_dtype t = rt_out_dtype(d);
    lp_type lt = lp_type_of(t);
    unsigned char *b = calloc((size_t)n ? (size_t)n : 1, tilec_dtype_size(t));
    double v = empty_of(d->op);
    for (int64_t i = 0; b && v != 0 && i < n; i++) {
        if (ir_dtype_is_float(t)) num_store_float(lt, b, i, v);
        else num_store_int(lt, b, i, (int64_t)v);
    }
    return b;
}

static void plan_key(const rt *r, const tilec_reduce_desc *d, const view *v, bool unaligned, char *key, size_t n) {
    size_t at = (size_t)snprintf(key, n, "%s %s->%s%s%s %s%s%s %s %s ws%d |", tilec_op_name(d->op), tilec_dtype_name(d->dtype),
                                 tilec_dtype_name(rt_out_dtype(d)), ir_op(d->op)->second ? "," : "",
                                 ir_op(d->op)->second ? tilec_dtype_name(rt_out2_dtype(d)) : "",
                                 tilec_nan_name(d->nan), d->accumulate ? " accum" : "",
                                 unaligned ? " unaligned" : "",
                                 r->be->name, r->target.arch, r->target.warp_size);
    for (int i = 0; i < v->rank && at < n; i++)
        at += (size_t)snprintf(key + at, n - at, " %lld%s", (long long)v->shape[i], v->reduced[i] ? "r" : "");
    for (int i = 0; v->strided && i < v->rank && at < n; i++)
        at += (size_t)snprintf(key + at, n - at, "%s%lld", i ? "," : " strides ", (long long)v->strides[i]);
    if (tilec_op_takes_correction(d->op) && at < n) /* the one a NULL stands for is 1 */
        at += (size_t)snprintf(key + at, n - at, " correction %lld", (long long)(d->correction ? *d->correction : 1));
}

/* The one-statement tile program of a view. */
static tilec_status build(tilec_ctx *ctx, const tilec_reduce_desc *d, const view *v, tilec_program **out) {
    tilec_program *p;
    tilec_kernel *k;
    tilec_buffer *A, *B, *C = NULL;
    tilec_status st = tilec_program_new(ctx, &p);
    if (st != TILEC_OK) return st;
    int64_t kept[TILEC_MAX_RANK];
    int nk = 0;
    tilec_reduce_attrs at = tilec_reduce_attrs_default();
    at.naxes = 0;
    for (int i = 0; i < v->rank; i++) {
        if (v->reduced[i]) at.axes[at.naxes++] = i;
        else kept[nk++] = v->shape[i];
    }
    if (nk == 0) kept[nk++] = 1;
    at.nan = d->nan;
    at.accum = d->accumulate;
    at.correction = d->correction;
    if ((st = tilec_kernel_new(p, "tilec_reduce", false, THREADS, 1, &k)) == TILEC_OK &&
        (st = tilec_kernel_param(k, "A", d->dtype, v->rank, v->shape, TILEC_SPACE_GLOBAL, &A)) == TILEC_OK &&
        (st = tilec_kernel_param(k, "B", rt_out_dtype(d), nk, kept, TILEC_SPACE_GLOBAL, &B)) == TILEC_OK &&
        (!ir_op(d->op)->second || (st = tilec_kernel_param(k, "C", rt_out2_dtype(d), nk, kept, TILEC_SPACE_GLOBAL, &C)) == TILEC_OK) &&
        (!v->strided || ir_buffer_view(p, A, v->strides) || (st = TILEC_ERR_INVALID_ARG, false))) {
        tilec_region a = tilec_region_whole(A), b = tilec_region_whole(B), c = C ? tilec_region_whole(C) : b;
        at.dst2 = C ? &c : NULL;
        st = tilec_kernel_reduce(k, (tilec_exec){TILEC_SCOPE_GRID, -1}, d->op, &b, &a, &at);
    }
    if (st != TILEC_OK) {
        tilec_program_free(p);
        return st;
    }
    *out = p;
    return TILEC_OK;
}

/* What picks a plan, in words: op, dtypes, NaN policy, accum, alignment and the view's
 * rank in the first; the reduced dims' mask; the correction; the extents; the strides of a
 * strided view. The words past them are 0, so equal ids are equal plans (the target is
 * the runtime's own). plan_key spells the same for the log; a call compares words only. */
static uint64_t plan_id(const tilec_reduce_desc *d, const view *v, bool unaligned, int64_t id[RT_ID_WORDS]) {
    memset(id, 0, RT_ID_WORDS * sizeof *id);
    bool two = ir_op(d->op)->second != NULL;
    id[0] = (int64_t)((uint64_t)d->op | (uint64_t)d->dtype << 8 | (uint64_t)rt_out_dtype(d) << 16 |
                      (uint64_t)(two ? rt_out2_dtype(d) + 1 : 0) << 24 | (uint64_t)d->nan << 32 |
                      (uint64_t)d->accumulate << 40 | (uint64_t)unaligned << 41 | (uint64_t)v->strided << 42 |
                      (uint64_t)v->rank << 48);
    for (int i = 0; i < v->rank; i++) id[1] |= (int64_t)v->reduced[i] << i;
    id[2] = tilec_op_takes_correction(d->op) ? (d->correction ? *d->correction : 1) : -1;
    for (int i = 0; i < v->rank; i++) {
        id[3 + i] = v->shape[i];
        if (v->strided) id[3 + TILEC_MAX_RANK + i] = v->strides[i];
    }
    return rt_plan_hash(id);
}

/* The cached plan for the descriptor, made (and loaded) on a miss. */
static tilec_status get_plan(rt *r, const tilec_reduce_desc *d, const view *v, bool unaligned, rt_plan **out) {
    int64_t id[RT_ID_WORDS];
    uint64_t hash = plan_id(d, v, unaligned, id);
    if ((*out = rt_plan_find(r, id, hash))) return TILEC_OK;
    char key[512];
    plan_key(r, d, v, unaligned, key, sizeof key);
    double t0 = now_ms();
    rt_plan *p = calloc(1, sizeof *p);
    if (!p) return TILEC_ERR_NOMEM;
    snprintf(p->key, sizeof p->key, "%s", key);
    memcpy(p->id, id, sizeof id);
    p->hash = hash;
    tilec_status st = build(r->ctx, d, v, &p->prog);
    dsp_target target; /* vector loads only from 16-byte aligned inputs */
    if (st == TILEC_OK) st = rt_lowering_target(r, unaligned, &target);
    lp_kernel **ks;
    if (st == TILEC_OK && (st = dsp_lower_program(p->prog, &target, NULL, &ks)) == TILEC_OK) {
        p->kernel = ks[0];
        p->variant = p->kernel->variants[0]; /* the program's one statement, the grid reduction */
        st = rt_launch_info(r->ctx, p->kernel, &p->info);
    }
    double t1 = now_ms();
    /* a GPU's binary, emitted and compiled here (or found in the disk cache), then loaded */
    if ((st = rt_plan_load(r, p, st)) != TILEC_OK) return st; /* a capture in progress allows it (rt_load) */
    rt_log(r, "miss %s: variant %s, grid %lld x %d, lowered in %.2f ms, compiled and loaded in %.2f ms%s%s", key,
           p->variant, (long long)p->info.grid, p->info.threads, t1 - t0, now_ms() - t1, p->kernel->plan[0] ? "; plan: " : "",
           p->kernel->plan);
    p->next = r->plans;
    r->plans = p;
    r->nplans++;
    *out = p;
    return TILEC_OK;
}

bool rt_meet(uintptr_t a, size_t n, uintptr_t b, size_t m) { return n && m && a < b + m && b < a + n; }

tilec_status rt_outputs_apart(tilec_ctx *ctx, uintptr_t in, size_t in_bytes, uintptr_t out, size_t out_bytes,
                              uintptr_t out2, size_t out2_bytes) {
    if (rt_meet(in, in_bytes, out, out_bytes)) return ir_bad(ctx, "the input and the output overlap; reduce into another buffer");
    if (rt_meet(out2, out2_bytes, in, in_bytes) || rt_meet(out2, out2_bytes, out, out_bytes))
        return ir_bad(ctx, "out2 overlaps the %s; give the second output a buffer of its own",
                      rt_meet(out2, out2_bytes, in, in_bytes) ? "input" : "output");
    return TILEC_OK;
}

bool rt_input_range(const tilec_reduce_desc *d, const void *in, uintptr_t *lo, size_t *bytes) {
    int64_t n = 1, low = 0, high = 0, span;
    *lo = (uintptr_t)in;
    *bytes = 0;
    if (d->rank < 1 || d->rank > TILEC_MAX_RANK || (unsigned)d->dtype >= TILEC_DTYPE_COUNT) return false;
    for (int i = 0; i < d->rank; i++)
        if (d->shape[i] < 0 || __builtin_mul_overflow(n, d->shape[i], &n)) return false;
    if (n == 0 || !in) return true;
    if (!d->strides) span = n;
    else {
        for (int i = 0; i < d->rank; i++) {
            int64_t reach;
            if (__builtin_mul_overflow(d->shape[i] - 1, d->strides[i], &reach) ||
                __builtin_add_overflow(reach < 0 ? low : high, reach, reach < 0 ? &low : &high))
                return false;
        }
        if (__builtin_sub_overflow(high, low, &span) || span >= TILEC_MAX_ELEMENTS) return false;
        span++;
    }
    size_t es = tilec_dtype_size(d->dtype);
    if ((uint64_t)span > SIZE_MAX / es || (uintptr_t)(-low) * es > (uintptr_t)in) return false;
    *lo = (uintptr_t)in - (uintptr_t)(-low) * es;
    *bytes = (size_t)span * es;
    return true;
}

/* On the simulator: a reduction reads every element of its view (extent-1 dims and, for
 * max and min, reduced broadcast dims are gone from it), and its loop IR spends some
 * thread-steps on each at least (sim_work_floor: the loads, the bounds checks and folds
 * around them, the loops' tests and steps). A run that must take more steps than the
 * budget cannot finish; it is refused before it runs: a broadcast of 2^34 elements, some
 * 30 steps an element, would run for minutes before it stopped at the budget. Only a run
 * known to pass the budget is refused: the floor never counts a step the run may skip. */
static tilec_status within_budget(tilec_ctx *ctx, const view *v, const rt_plan *p) {
    uint64_t budget, reads = 1, floor, rate;
    if (!sim_budget(ctx, &budget)) return TILEC_ERR_INVALID_ARG;
    for (int i = 0; i < v->rank; i++) reads *= (uint64_t)v->shape[i]; /* at most 2^48 (plan_view) */
    if (!sim_work_floor(p->kernel, 0, reads, &floor, &rate) || floor <= budget) return TILEC_OK;
    ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                "simulating kernel 'tilec_reduce' takes more than %llu thread-step%s, its budget: it reads %llu element%s, "
                "and its loop IR (variant %s) spends %llu thread-steps a read at least, %llu in all; " SIM_RAISE_BUDGET,
                (unsigned long long)budget, budget == 1 ? "" : "s", (unsigned long long)reads, reads == 1 ? "" : "s",
                p->variant, (unsigned long long)rate, (unsigned long long)floor);
    return TILEC_ERR_BUDGET;
}

/* tilec_reduce, or (out NULL, prepare) all of it but the launch. */
static tilec_status reduce_or_prepare(tilec_ctx *ctx, const tilec_reduce_desc *d, const void *in, void *out, bool prepare) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!d) return ir_bad(ctx, "no reduction descriptor");
    view v;
    tilec_status st = plan_view(ctx, d, &v);
    if (st != TILEC_OK) return st;
    size_t es = tilec_dtype_size(d->dtype);
    bool two = ir_op(d->op)->second != NULL;
    if (v.out_elems > 0 && ((!out && !prepare) || (!in && v.in_elems > 0)))
        return ir_bad(ctx, "%s is NULL", !in ? "the input" : "the output");
    if (v.out_elems > 0 && two && !d->out2 && !prepare)
        return ir_bad(ctx, "%s has two outputs: out2 is NULL; give it an %s buffer of the output's shape for its %s",
                   tilec_op_name(d->op), tilec_dtype_name(rt_out2_dtype(d)), ir_op(d->op)->second);
    /* the input's memory: what its strides reach, from the lowest element */
    const char *low = in ? (const char *)in - (size_t)v.origin * es : NULL;
    uintptr_t a = (uintptr_t)low, b = (uintptr_t)out;
    size_t in_bytes = v.in_elems ? (size_t)v.span * es : 0, out_bytes = (size_t)v.out_elems * tilec_dtype_size(rt_out_dtype(d));
    if (in && v.origin && a > (uintptr_t)in)
        return ir_bad(ctx, "the strides reach below address 0 from the input pointer");
    uintptr_t c = (uintptr_t)d->out2;
    size_t out2_bytes = two && d->out2 ? (size_t)v.out_elems * tilec_dtype_size(rt_out2_dtype(d)) : 0;
    if ((st = rt_outputs_apart(ctx, a, in_bytes, b, out_bytes, c, out2_bytes)) != TILEC_OK) return st;
    rt *r;
    if ((st = rt_get(ctx, &r)) != TILEC_OK) return st;
    if (in && (st = rt_within(r, "the input view", a, in_bytes)) != TILEC_OK) return st;
    if (out && (st = rt_within(r, "the output", b, out_bytes)) != TILEC_OK) return st;
    if (out2_bytes && (st = rt_within(r, "out2", c, out2_bytes)) != TILEC_OK) return st;
    if (v.out_elems == 0) return TILEC_OK;             /* nothing to write */
    if (v.empty_axis) { /* the identity; accumulating it changes nothing */
        if (d->accumulate || prepare) return TILEC_OK;
        if (ir_op(d->op)->empty == IR_EMPTY_IDENTITY && ir_op(d->op)->identity == IR_IDENTITY_ZERO)
            return r->be->zero(r, out, out_bytes, d->stream);
        /* other bits than zeros: copied from the host once the stream's earlier work is
         * done, a wait and a copy that a stream being captured cannot have */
        bool captured;
        if ((st = rt_capturing(r, d->stream, &captured)) != TILEC_OK) return st;
        if (captured) {
            double e = empty_of(d->op);
            char value[16] = "NaN";
            if (!isnan(e)) snprintf(value, sizeof value, "%g", e); /* 1, -inf */
            return ir_bad(ctx, "%s over an empty axis writes %s from the host, which a stream being captured into a graph "
                          "cannot order; nothing was captured: fill the output with %s outside the capture (it does not "
                          "change between replays), and leave this call out of it", tilec_op_name(d->op), value, value);
        }
        unsigned char *host = empty_value(d, v.out_elems);
        if (!host) return TILEC_ERR_NOMEM;
        void *ev = NULL;
        if ((st = r->be->record(r, &ev, d->stream)) == TILEC_OK && (st = r->be->wait(r, ev)) == TILEC_OK)
            st = r->be->upload(r, out, host, out_bytes);
        if (ev) r->be->event_free(r, ev);
        free(host);
        return st;
    }
    rt_plan *p;
    if ((st = get_plan(r, d, &v, a % 16 != 0, &p)) != TILEC_OK) return st;
    if (!prepare && r->be->kind == TILEC_BACKEND_SIM && (st = within_budget(ctx, &v, p)) != TILEC_OK) return st;
    if (prepare) return rt_prepare(r, p, d->stream);
    void *args[RT_MAX_ARGS] = {(void *)low, out, d->out2};
    return rt_launch(r, p, args, two ? 3 : 2, d->stream);
}

tilec_status tilec_reduce(tilec_ctx *ctx, const tilec_reduce_desc *d, const void *in, void *out) {
    return reduce_or_prepare(ctx, d, in, out, false);
}

tilec_status tilec_reduce_prepare(tilec_ctx *ctx, const tilec_reduce_desc *d, const void *in) {
    return reduce_or_prepare(ctx, d, in, NULL, true);
}

tilec_status tilec_reduce_check(tilec_ctx *ctx, const tilec_reduce_desc *d, const void *in, const void *out_before,
                                const void *out_after, tilec_check_result *result) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!result) return ir_bad(ctx, "tilec_reduce_check: result is NULL; pass where the result goes");
    if (!d) return ir_bad(ctx, "no reduction descriptor");
    view v;
    tilec_status st = plan_view(ctx, d, &v);
    if (st != TILEC_OK) return st;
    *result = (tilec_check_result){.param = "out", .ok = true, .exact = true, .first_bad = -1};
    size_t es = tilec_dtype_size(d->dtype), eo = tilec_dtype_size(rt_out_dtype(d)), out_bytes = (size_t)v.out_elems * eo;
    if (v.out_elems == 0) return TILEC_OK;
    if (!d->accumulate && !out_before) out_before = out_after; /* read only when accumulating */
    if (!in || !out_before || !out_after)
        return ir_bad(ctx, "tilec_reduce_check needs the input, the output after the call and, when accumulating, before it");
    if (v.empty_axis) { /* the op's identity, or unchanged when accumulating */
        unsigned char *value = d->accumulate ? NULL : empty_value(d, v.out_elems);
        if (!d->accumulate && !value) return TILEC_ERR_NOMEM;
        const unsigned char *want = d->accumulate ? out_before : value, *got = out_after;
        for (size_t i = 0; i < out_bytes; i++)
            if (got[i] != want[i]) {
                result->ok = false;
                result->mismatches++;
                if (result->first_bad < 0) result->first_bad = (int64_t)(i / eo);
            }
        free(value);
        return TILEC_OK;
    }
    bool two = ir_op(d->op)->second != NULL;
    if (two && !d->out2) return ir_bad(ctx, "tilec_reduce_check of %s needs out2, the indices after the call", tilec_op_name(d->op));
    tilec_program *p;
    if ((st = build(ctx, d, &v, &p)) != TILEC_OK) return st;
    const void *low = (const char *)in - (size_t)v.origin * es; /* the view's lowest element */
    const void *before[3] = {low, out_before, d->out2}, *after[3] = {low, out_after, d->out2};
    tilec_check_result res[3];
    size_t n = 0;
    st = tilec_check(p, NULL, NULL, before, after, res, &n);
    if (st == TILEC_OK && n == (two ? 2u : 1u)) { /* the first that fails, else the first */
        int which = two && res[0].ok && !res[1].ok ? 1 : 0;
        *result = res[which];
        result->param = which ? "out2" : "out";
    }
    tilec_program_free(p);
    return st;
}

tilec_status tilec_reduce_explain(tilec_ctx *ctx, const tilec_reduce_desc *d, char **text) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!text) return ir_bad(ctx, "tilec_reduce_explain: text is NULL; pass where the text goes");
    *text = NULL;
    if (!d) return ir_bad(ctx, "no reduction descriptor");
    view v;
    tilec_status st = plan_view(ctx, d, &v);
    rt *r = NULL;
    if (st == TILEC_OK) st = rt_get(ctx, &r);
    if (st != TILEC_OK) return st;
    ir_str s = {0};
    ir_str_printf(&s, "backend %s (target %s %s, warp size %d)\nview:", r->be->name, tilec_backend_name(r->target.backend),
                  r->target.arch, r->target.warp_size);
    for (int i = 0; i < v.rank; i++) ir_str_printf(&s, " %lld%s", (long long)v.shape[i], v.reduced[i] ? " (reduced)" : "");
    for (int i = 0; v.strided && i < v.rank; i++)
        ir_str_printf(&s, "%s%lld", i ? ", " : "; strides ", (long long)v.strides[i]);
    ir_str_printf(&s, "\n");
    if (v.out_elems == 0) {
        ir_str_printf(&s, "the output is empty: nothing runs\n");
    } else if (v.empty_axis) {
        double e = empty_of(d->op);
        ir_str_printf(&s, "a reduced extent is 0: the output is set to %s%s\n",
                      isnan(e) ? "NaN" : isinf(e) ? "-inf" : e == 1 ? "1" : "0",
                      tilec_op_supports(d->op, d->dtype, true) ? " (left as is when accumulating)" : "");
    } else {
        rt_plan *p;
        if ((st = get_plan(r, d, &v, false, &p)) == TILEC_OK) {
            char *tile = NULL, *table = NULL;
            ir_str t = {0}; /* not tilec_format, which would clear the call's notes and warnings */
            ir_print_program(&t, p->prog);
            ir_str_put(&t, "", 0);
            tile = t.data;
            if (t.oom) { ir_str_free(&t); tile = NULL; st = TILEC_ERR_NOMEM; }
            dsp_target et;
            if (st == TILEC_OK) st = rt_lowering_target(r, false, &et);
            if (st == TILEC_OK) st = dsp_explain(p->prog, &et, false, &table);
            if (st == TILEC_OK && v.strided)
                ir_str_printf(&s, "A is the strided view above: element [0, ...] is %lld past the lowest of the %lld "
                                  "elements its strides reach\n", (long long)v.origin, (long long)v.span);
            if (st == TILEC_OK)
                ir_str_printf(&s, "program:\n%s\nvariant %s, grid %lld x %d threads, %d scratch buffer%s\n%s%s%s%s", tile,
                              p->variant, (long long)p->info.grid, p->info.threads, p->info.nscratch,
                              p->info.nscratch == 1 ? "" : "s", p->kernel->plan[0] ? "plan: " : "", p->kernel->plan,
                              p->kernel->plan[0] ? "\n" : "", table);
            tilec_free(tile);
            tilec_free(table);
        }
    }
    if (st != TILEC_OK || s.oom) {
        ir_str_free(&s);
        return st != TILEC_OK ? st : TILEC_ERR_NOMEM;
    }
    *text = s.data;
    return TILEC_OK;
}

tilec_status rt_check_desc(tilec_ctx *ctx, const tilec_reduce_desc *d) {
    view v;
    return plan_view(ctx, d, &v);
}
