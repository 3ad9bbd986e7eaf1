/*
 * segmented.c — tilec_reduce_segmented: reductions of segments of one axis given by
 * offsets in device memory (jagged data: CSR rows, sequences of different lengths).
 *
 * The input is viewed as [rows, extent] (the dims before the axis merged; the axis is the
 * innermost of extent above 1) and the output as [rows, nsegs]. The plan is a tile program
 * of parameters only — A, B, (C), O, Z — lowered by dsp_lower_segmented
 * (v_grid_segments.c), which folds each segment in the order of a dense row of its length;
 * it is compiled, cached and launched as tilec_reduce's plans are, in the same list (its
 * id's first word has a bit no dense plan sets). Which workers fold a segment is chosen
 * from the mean length (extent / nsegs), the only length known on the host: a group of 32
 * lanes a segment for short ones, a CTA a segment, or several CTAs a segment when the
 * segments are few and long. The bits do not depend on this choice.
 *
 * Offsets are checked on the device (v_grid_segments.c); what it finds is counted in the
 * context's status words, which tilec_synchronize reads, reports and clears
 * (rt_segmented_status).
 */
#include "runtime.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 256, GROUPS = THREADS / 32 };

/* What a segmented reduction is, for its plan. */
typedef struct seg_view {
    int64_t rows, extent, nsegs;
    bool i32;       /* int32 offsets */
    bool unaligned; /* the input's first element is not 16-byte aligned */
    int workers, ctas;
} seg_view;

/* The workers of a segment (v_grid_segments.c): a group of 32 lanes when a segment is
 * about two pieces or less on average; else a CTA's groups, and more CTAs (up to 64, and
 * 2^24 CTAs a launch) while a group would fold more than two pieces of a mean segment one
 * after another: a group has one piece's loads in flight at a time, so short chains over
 * many CTAs keep more of them in flight (H200, scripts/bench segmented: 4096 segments of
 * 1k-100k elements: 1.60 TB/s with one CTA a segment, 1.80 with chains of 3, 1.90 of 2). */
static void choose_workers(const tilec_reduce_desc *d, seg_view *v) {
    int64_t W = dsp_segment_piece(d->dtype);
    int64_t mean = v->nsegs ? v->extent / v->nsegs : 0, outs = v->rows * v->nsegs;
    v->workers = 1;
    v->ctas = 1;
    if (mean <= 2 * W) return;
    v->workers = GROUPS;
    while (v->ctas < 64 && outs * v->ctas * 2 <= ((int64_t)1 << 24) && mean / (W * GROUPS * v->ctas) > 2) v->ctas *= 2;
}

static uint64_t seg_id(const tilec_reduce_desc *d, const seg_view *v, int64_t id[RT_ID_WORDS]) {
    memset(id, 0, RT_ID_WORDS * sizeof *id);
    bool two = ir_op(d->op)->second != NULL;
    id[0] = (int64_t)((uint64_t)d->op | (uint64_t)d->dtype << 8 | (uint64_t)rt_out_dtype(d) << 16 |
                      (uint64_t)(two ? rt_out2_dtype(d) + 1 : 0) << 24 | (uint64_t)d->nan << 32 |
                      (uint64_t)d->accumulate << 40 | (uint64_t)v->unaligned << 41 | (uint64_t)v->i32 << 42 |
                      (uint64_t)1 << 60); /* segmented: no dense plan's id has this bit */
    id[1] = v->rows;
    id[2] = v->extent;
    id[3] = v->nsegs;
    id[4] = v->workers;
    id[5] = v->ctas;
    id[6] = tilec_op_takes_correction(d->op) ? (d->correction ? *d->correction : 1) : -1;
    return rt_plan_hash(id);
}

/* The tile program of the plan: its parameters only (the lowering writes the loop IR). */
static tilec_status build(tilec_ctx *ctx, const tilec_reduce_desc *d, const seg_view *v, tilec_program **out) {
    tilec_program *p;
    tilec_kernel *k;
    tilec_buffer *b;
    tilec_status st = tilec_program_new(ctx, &p);
    if (st != TILEC_OK) return st;
    int64_t a[2] = {v->rows, v->extent ? v->extent : 1}, o[2] = {v->rows, v->nsegs}, n1 = v->nsegs + 1, z = DSP_SEG_WORDS;
    bool two = ir_op(d->op)->second != NULL;
    if ((st = tilec_kernel_new(p, "tilec_segmented", false, THREADS, 1, &k)) == TILEC_OK &&
        (st = tilec_kernel_param(k, "A", d->dtype, 2, a, TILEC_SPACE_GLOBAL, &b)) == TILEC_OK &&
        (st = tilec_kernel_param(k, "B", rt_out_dtype(d), 2, o, TILEC_SPACE_GLOBAL, &b)) == TILEC_OK &&
        (!two || (st = tilec_kernel_param(k, "C", rt_out2_dtype(d), 2, o, TILEC_SPACE_GLOBAL, &b)) == TILEC_OK) &&
        (st = tilec_kernel_param(k, "O", v->i32 ? TILEC_I32 : TILEC_I64, 1, &n1, TILEC_SPACE_GLOBAL, &b)) == TILEC_OK)
        st = tilec_kernel_param(k, "Z", TILEC_U32, 1, &z, TILEC_SPACE_GLOBAL, &b);
    if (st != TILEC_OK) {
        tilec_program_free(p);
        return st;
    }
    *out = p;
    return TILEC_OK;
}

static tilec_status get_plan(rt *r, const tilec_reduce_desc *d, const seg_view *v, rt_plan **out) {
    int64_t id[RT_ID_WORDS];
    uint64_t hash = seg_id(d, v, id);
    if ((*out = rt_plan_find(r, id, hash))) return TILEC_OK;
    rt_plan *p = calloc(1, sizeof *p);
    if (!p) return TILEC_ERR_NOMEM;
    snprintf(p->key, sizeof p->key, "segmented %s %s->%s%s%s %s%s%s %s %s ws%d | %" PRId64 " x %" PRId64 ", %" PRId64
             " segments, %s offsets, %d worker%s x %d CTA%s",
             tilec_op_name(d->op), tilec_dtype_name(d->dtype), tilec_dtype_name(rt_out_dtype(d)), ir_op(d->op)->second ? "," : "",
             ir_op(d->op)->second ? tilec_dtype_name(rt_out2_dtype(d)) : "", tilec_nan_name(d->nan),
             d->accumulate ? " accum" : "", v->unaligned ? " unaligned" : "", r->be->name, r->target.arch,
             r->target.warp_size, v->rows, v->extent, v->nsegs, v->i32 ? "i32" : "i64", v->workers,
             v->workers == 1 ? "" : "s", v->ctas, v->ctas == 1 ? "" : "s");
    memcpy(p->id, id, sizeof id);
    p->hash = hash;
    tilec_status st = build(r->ctx, d, v, &p->prog);
    dsp_target target;
    if (st == TILEC_OK) st = rt_lowering_target(r, v->unaligned, &target);
    if (st == TILEC_OK) st = dsp_verify(p->prog, &target);
    if (st == TILEC_OK) {
        dsp_segmented sg = {.op = d->op, .nan = d->nan, .accum = d->accumulate,
                            .correction = d->correction ? *d->correction : 1, .rows = v->rows, .extent = v->extent,
                            .nsegs = v->nsegs, .workers = v->workers, .ctas = v->ctas};
        p->kernel = dsp_lower_segmented(p->prog, p->prog->kernels[0], &target, &sg, &st);
        if (st == TILEC_OK) {
            p->variant = "grid_segments";
            st = rt_launch_info(r->ctx, p->kernel, &p->info);
        }
    }
    if ((st = rt_plan_load(r, p, st)) != TILEC_OK) return st;
    rt_log(r, "miss %s: grid %lld x %d; plan: %s", p->key, (long long)p->info.grid, p->info.threads, p->kernel->plan);
    p->next = r->plans;
    r->plans = p;
    r->nplans++;
    *out = p;
    return TILEC_OK;
}

/* The offsets of a call with no rows, checked here as the kernel checks them (it does not
 * run: there is nothing to write), so that bad offsets are refused whatever the number of
 * rows: the first bad segment, with its offsets, as TILEC_ERR_INVALID_ARG now. Empty
 * segments are not refused: with no rows they have no outputs. The offsets are downloaded
 * (synchronously, after the work queued before on the default stream). */
static tilec_status check_offsets_here(rt *r, const void *offsets, bool i32, int64_t nsegs, int64_t extent) {
    size_t n = (size_t)(nsegs + 1), es = i32 ? 4 : 8;
    void *h = malloc(n * es);
    if (!h) return TILEC_ERR_NOMEM;
    tilec_status st = r->be->download(r, h, offsets, n * es);
    int64_t prev = 0;
    for (size_t s = 0; st == TILEC_OK && s < n; s++) {
        int64_t at = i32 ? ((const int32_t *)h)[s] : ((const int64_t *)h)[s];
        if (s > 0 && (prev < 0 || at < prev || at > extent)) {
            st = ir_bad(r->ctx, "a segmented reduction had bad offsets: segment %lld runs from %lld to %lld, which %s; "
                                "offsets must rise (or stay) from 0 or more to at most the axis's extent (%lld), "
                                "whether or not the input has rows",
                        (long long)(s - 1), (long long)prev, (long long)at,
                        prev < 0 ? "starts below 0" : at < prev ? "falls" : "ends past the extent", (long long)extent);
        }
        prev = at;
    }
    free(h);
    return st;
}

tilec_status tilec_reduce_segmented(tilec_ctx *ctx, const tilec_reduce_desc *d, const void *offsets, bool offsets_i32,
                                    int64_t nsegs, const void *in, void *out) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!d) return ir_bad(ctx, "no reduction descriptor");
    if (d->naxes != 1)
        return ir_bad(ctx, "a segmented reduction has one axis, the segmented one: naxes is %d; give 1", d->naxes);
    if (d->strides)
        return ir_bad(ctx, "a segmented reduction takes a dense input: strides must be NULL (copy a strided view "
                           "to a dense tensor first)");
    /* checked as tilec_reduce's descriptor but for the segmented axis, which is not what is
     * reduced (segments are): an empty one refuses nothing by itself (no segments are no
     * outputs; empty segments of max are found with the others, on the device) */
    tilec_reduce_desc whole = *d;
    int axis = d->axes[0] < 0 ? d->axes[0] + d->rank : d->axes[0];
    if (d->rank >= 1 && d->rank <= TILEC_MAX_RANK && axis >= 0 && axis < d->rank && whole.shape[axis] == 0)
        whole.shape[axis] = 1;
    tilec_status st = rt_check_desc(ctx, &whole);
    if (st != TILEC_OK) return st;
    for (int i = axis + 1; i < d->rank; i++)
        if (d->shape[i] != 1)
            return ir_bad(ctx, "the segmented axis %d is not the innermost: dimension %d has extent %lld; segments run "
                               "along contiguous elements, so move the axis last (a transposed copy) or reduce rows "
                               "of the transpose", axis, i, (long long)d->shape[i]);
    if (nsegs < 0 || nsegs >= TILEC_MAX_ELEMENTS)
        return ir_bad(ctx, "nsegs %lld is out of range: give 0 to 2^48 - 1 segments", (long long)nsegs);
    seg_view v = {.rows = 1, .extent = d->shape[axis], .nsegs = nsegs, .i32 = offsets_i32};
    for (int i = 0; i < axis; i++) v.rows *= d->shape[i]; /* below 2^48: rt_check_desc */
    int64_t outs;
    if (__builtin_mul_overflow(v.rows, nsegs, &outs) || outs >= TILEC_MAX_ELEMENTS)
        return ir_bad(ctx, "the output has %lld rows of %lld segments: more than 2^48 elements", (long long)v.rows,
                      (long long)nsegs);
    bool two = ir_op(d->op)->second != NULL;
    if ((nsegs > 0 && !offsets) || (outs > 0 && (!out || (!in && v.extent > 0) || (two && !d->out2))))
        return ir_bad(ctx, "%s is NULL", !offsets ? "offsets" : !out ? "the output" : !in && v.extent > 0 ? "the input"
                                                                                                  : "out2 (the second output)");
    size_t es = tilec_dtype_size(d->dtype), in_bytes = (size_t)(v.rows * v.extent) * es;
    size_t out_bytes = (size_t)outs * tilec_dtype_size(rt_out_dtype(d)), out2_bytes = two ? (size_t)outs * tilec_dtype_size(rt_out2_dtype(d)) : 0;
    size_t off_bytes = nsegs ? (size_t)(nsegs + 1) * (offsets_i32 ? 4 : 8) : 0;
    uintptr_t a = (uintptr_t)in, b = (uintptr_t)out, c = (uintptr_t)d->out2, o = (uintptr_t)offsets;
    if ((st = rt_outputs_apart(ctx, a, in_bytes, b, out_bytes, c, out2_bytes)) != TILEC_OK) return st;
    if (rt_meet(o, off_bytes, b, out_bytes) || rt_meet(o, off_bytes, c, out2_bytes))
        return ir_bad(ctx, "the offsets overlap an output; give the outputs buffers of their own");
    rt *r;
    if ((st = rt_get(ctx, &r)) != TILEC_OK) return st;
    if (nsegs == 0) return TILEC_OK; /* no segments: nothing to read, nothing to write */
    if ((st = rt_within(r, "the offsets", o, off_bytes)) != TILEC_OK) return st;
    if (outs == 0) return check_offsets_here(r, offsets, offsets_i32, nsegs, v.extent);
    if (in_bytes && (st = rt_within(r, "the input", a, in_bytes)) != TILEC_OK) return st;
    if ((st = rt_within(r, "the output", b, out_bytes)) != TILEC_OK) return st;
    if (out2_bytes && (st = rt_within(r, "out2", c, out2_bytes)) != TILEC_OK) return st;
    v.unaligned = a % 16 != 0;
    choose_workers(d, &v);
    if ((v.workers == 1 ? (outs + GROUPS - 1) / GROUPS : outs * v.ctas) > INT32_MAX)
        return ir_bad(ctx, "%lld segments in all need more CTAs than a launch has (2^31 - 1)", (long long)outs);
    if (!r->seg_status) { /* the status words, zeroed once; the kernels count into them */
        static const uint32_t zero[DSP_SEG_WORDS];
        void *z = NULL;
        if ((st = r->be->alloc(r, sizeof zero, &z)) != TILEC_OK) return st;
        if ((st = r->be->upload(r, z, zero, sizeof zero)) != TILEC_OK) {
            r->be->release(r, z);
            return st;
        }
        r->seg_status = z;
    }
    rt_plan *p = NULL;
    if ((st = get_plan(r, d, &v, &p)) != TILEC_OK) return st;
    void *args[5] = {(void *)in, out, d->out2, (void *)offsets, r->seg_status};
    if (!two) {
        args[2] = (void *)offsets;
        args[3] = r->seg_status;
    }
    return rt_launch(r, p, args, two ? 5 : 4, d->stream);
}

static int64_t wide_word(const uint32_t *z, int at) { return (int64_t)((uint64_t)z[at] | (uint64_t)z[at + 1] << 32); }

tilec_status rt_segmented_status(rt *r) {
    if (!r->seg_status) return TILEC_OK;
    uint32_t z[DSP_SEG_WORDS];
    tilec_status st = r->be->download(r, z, r->seg_status, sizeof z);
    /* 64-bit counts: a low word and the carry the kernels add when it wraps */
    uint64_t nbad = (uint64_t)z[DSP_SEG_BAD] | (uint64_t)z[DSP_SEG_BAD_CARRY] << 32;
    uint64_t nempty = (uint64_t)z[DSP_SEG_EMPTY] | (uint64_t)z[DSP_SEG_EMPTY_CARRY] << 32;
    if (st != TILEC_OK || (nbad == 0 && nempty == 0)) return st;
    static const uint32_t zero[DSP_SEG_WORDS];
    if ((st = r->be->upload(r, r->seg_status, zero, sizeof zero)) != TILEC_OK) return st;
    /* what is counted is outputs, a segment of a row each: a bad segment of offsets shared
     * by R rows is R bad outputs */
    if (nbad) {
        int64_t s = wide_word(z, DSP_SEG_BAD_AT), lo = wide_word(z, DSP_SEG_BAD_LO), hi = wide_word(z, DSP_SEG_BAD_HI);
        int64_t n = wide_word(z, DSP_SEG_EXTENT);
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "a segmented reduction had bad offsets: segment %lld runs from %lld to %lld, which %s; offsets "
                    "must rise (or stay) from 0 or more to at most the axis's extent; %llu output%s (a segment of a "
                    "row each) had bad offsets, and %s not written",
                    (long long)s, (long long)lo, (long long)hi,
                    lo < 0 ? "starts below 0" : hi < lo ? "falls" : "ends past the extent", (unsigned long long)nbad,
                    nbad == 1 ? "" : "s", nbad == 1 ? "it was" : "they were");
        if (hi > n && lo >= 0 && hi >= lo)
            ir_diag_add(r->ctx, NULL, TILEC_SEV_NOTE, 0, 0, "the axis's extent is %lld", (long long)n);
    }
    if (nempty) {
        const char *op = tilec_op_name((tilec_op)z[DSP_SEG_OP]);
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "a segmented %s had %llu output%s of an empty segment (a segment of a row each; the first "
                    "counted: segment %lld): %s of no elements has no value, as over an empty axis; %s not written",
                    op ? op : "reduction", (unsigned long long)nempty, nempty == 1 ? "" : "s",
                    (long long)wide_word(z, DSP_SEG_EMPTY_AT), op ? op : "it", nempty == 1 ? "it was" : "they were");
    }
    return TILEC_ERR_INVALID_ARG;
}
