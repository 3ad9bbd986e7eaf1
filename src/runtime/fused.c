/*
 * fused.c — tilec_fused: softmax, log-softmax, RMSNorm, LayerNorm, the residual add before
 * RMSNorm, and cross-entropy over the last axis, each a `.tile` program of copies,
 * reductions and map statements generated for the shape and sent down the same pipeline
 * as any program (verify, dispatch, lower, emit, compile, load). Nothing here is CUDA or
 * HIP: the kernels are what the emitters make of those statements.
 *
 * The plan (docs/runtime.md, "Fused kernels"): a CTA takes W rows (W a power of two, as
 * many as fit 16 KiB, so short rows still give a CTA enough work); rows whose W rows fit
 * the target's shared memory are staged there once (one read of global memory; the
 * reductions and the maps read shared memory), longer ones are read from global memory
 * by each pass (the second read mostly from L2). Rows that do not fill a last CTA go to
 * a second plan of W = the rows left. Plans are kept per context as tilec_reduce's are.
 */
#include "runtime.h"
#include "env.h"
#include "../ir/numeric.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    GROUP_BYTES = 16 << 10,  /* a CTA's rows: at most this many bytes of x, when more than one row */
    MAX_GROUP = 64,          /* rows a CTA */
    STAGE_BYTES = 160 << 10, /* at most this much of a CTA's shared memory holds its rows */
    ELEMS_PER_THREAD = 32,   /* a thread's share of a CTA's elements, when threads allow: measured on an
                                H100 (bf16 rows of 1024 to 65536), 32 beat 16 and 64 */
    CE_ELEMS_PER_THREAD = 64, /* a 16-bit cross_entropy's, above CE_WARP_COLS columns: it reads each row once, and
                                 more elements a thread measured 2-8% faster there (bf16, H100) */
    CE_WARP_COLS = 4096,      /* a 16-bit cross_entropy's rows of 1024 (CE_MIN_WARP_COLS) to this many columns:
                                 CTAs of CE_WARP_THREADS (a warp on one or two rows, no barrier), up to
                                 CE_WARP_BYTES and CE_WARP_ROWS rows a CTA. Its logsumexp folds each
                                 lane's loads many at once, so its per-row butterfly and shared slots
                                 weigh more than its elements: bf16 on an H100 (scripts/bench
                                 fused-plans), 1024 columns 1064 GB/s against 1010 with 8 rows on 256
                                 threads, 2048 1498 against 1324 with 4 rows on 256 (every thread on
                                 each row), 4096 1997 against 1799 with 2 rows on 128 */
    CE_MIN_WARP_COLS = 1024,
    CE_WARP_THREADS = 128,
    CE_WARP_BYTES = 32 << 10,
    CE_WARP_ROWS = 8,
    APPROX_ELEMS_PER_THREAD = 16, /* a softmax with math=approx, from APPROX_WIDE_COLS columns: read twice
                                     where it is, 16 elements a thread measured 89-97% of the copy ceiling
                                     on bf16 rows of 4096 to 16384 (H100) against 80-89% at 32 */
    APPROX_WIDE_COLS = 2048,
    APPROX_STAGE_COLS = 32768, /* from here a softmax with math=approx stages its rows (without their
                                  exponentials) where they fit: bf16 on an H100, 96% of the copy
                                  ceiling against 88% in place at 32768, 81% against 68% at 65536 (the
                                  second pass's rows no longer in L2); shorter rows measured faster
                                  read twice in place (97% against 87-90% staged at 4096 to 16384) */
    TWICE_COLS = 8192,       /* a 16-bit log_softmax row shorter than this is read twice where it is,
                                not staged (bf16, H100: 69-88% of the copy ceiling against 59-83%);
                                from 16384 columns up staging measured faster (87% against 85%) */
    FUSED_TAG = 0x46,        /* id[0]'s top byte: a fused plan, never a reduction's */
    REGS_MIN_COLS = 256,     /* rows of a power of two from REGS_MIN_COLS to REGS_MAX_COLS columns */
    REGS_MAX_COLS = 4096,    /* are held in registers (every op): see regs_of */
    REGS_SOFTMAX16_COLS = 8192, /* and a 16-bit softmax's rows of this many: a warpgroup's, 64 elements a
                                   thread (bf16 on an H100, scripts/bench fused-plans: 2681 GB/s, 95% of
                                   the copy, against 2305 staged with their exponentials) */
    REGS_ELEMS = 64,         /* a row of up to 32 * REGS_ELEMS columns held in registers is a warp's */
    REGS_FORCED_COLS = 32768, /* TILEC_FUSED_REGS holds rows of up to this many (a CTA's fragment) */
    REGS_CTA_ELEMS = 64,     /* a 16-bit softmax's or log_softmax's rows of 16384 and 32768 are a CTA's
                                fragment, 64 elements a thread (256 and 512 threads): bf16 on an H200,
                                scripts/bench fused-regs, softmax 3461 / 2800 GB/s against 2447 / 2338
                                staged or read in place, log_softmax 3274 / 2704 against 2951 / 2426;
                                layer_norm, rms_norm and cross_entropy measured slower so */
};

tilec_fused_desc tilec_fused_desc_default(tilec_fused_op op, tilec_dtype dtype, int64_t rows, int64_t cols) {
    return (tilec_fused_desc){.op = op, .dtype = dtype, .out_dtype = dtype, .rows = rows, .cols = cols,
                              .eps = op == TILEC_FUSED_LAYER_NORM ? 1e-5 : 1e-6, .ignore_index = -100};
}

static bool is_float16_32(tilec_dtype d) { return d == TILEC_F16 || d == TILEC_BF16 || d == TILEC_F32; }
/* softmax, log_softmax and cross_entropy take exponentials (math=approx applies); the norms do not */
static bool has_exp(tilec_fused_op op) {
    return op == TILEC_FUSED_SOFTMAX || op == TILEC_FUSED_LOG_SOFTMAX || op == TILEC_FUSED_CROSS_ENTROPY;
}
static bool approx(const tilec_fused_desc *d) { return d->math == TILEC_MATH_APPROX && has_exp(d->op); }
/* "min(" and ", 0)" around an exponential's argument that is at most 0 (x - max(x), or
 * x - logsumexp(x)): the map's exponential then scales once (docs/format.md, "exp of an
 * argument bounded above"), the same bits; math=approx's needs no bound */
static const char *le0_open(const tilec_fused_desc *d) { return approx(d) ? "" : "min("; }
static const char *le0_close(const tilec_fused_desc *d) { return approx(d) ? "" : ", 0)"; }
/* what a kernel header of d's says after grid= */
static const char *math_attr(const tilec_fused_desc *d) { return approx(d) ? " math=approx" : ""; }
static bool is_norm(tilec_fused_op op) {
    return op == TILEC_FUSED_RMS_NORM || op == TILEC_FUSED_LAYER_NORM || op == TILEC_FUSED_ADD_RMS_NORM;
}
static int64_t row_stride(const tilec_fused_desc *d) { return d->row_stride ? d->row_stride : d->cols; }

static tilec_status check_desc(tilec_ctx *ctx, const tilec_fused_desc *d) {
    if (!d) return ir_bad(ctx, "no fused-kernel descriptor");
    const char *name = tilec_fused_name(d->op);
    if (!name) return ir_bad(ctx, "fused op %d is not a tilec_fused_op", (int)d->op);
    if (!is_float16_32(d->dtype) || !is_float16_32(d->out_dtype))
        return ir_bad(ctx, "%s takes f16, bf16 or f32 data and results, not %s -> %s", name,
                      tilec_dtype_name(d->dtype) ? tilec_dtype_name(d->dtype) : "?",
                      tilec_dtype_name(d->out_dtype) ? tilec_dtype_name(d->out_dtype) : "?");
    if (d->rows < 0 || d->cols < 1)
        return ir_bad(ctx, "%s needs rows >= 0 and cols >= 1, not %lld x %lld", name, (long long)d->rows, (long long)d->cols);
    if (d->row_stride && d->row_stride < d->cols)
        return ir_bad(ctx, "%s: a row stride of %lld elements is shorter than a row (%lld): rows would overlap", name,
                      (long long)d->row_stride, (long long)d->cols);
    int64_t span;
    if (__builtin_mul_overflow(d->rows, row_stride(d), &span) || span >= TILEC_MAX_ELEMENTS)
        return ir_bad(ctx, "%s of %lld rows of stride %lld reaches more than 2^48 elements", name, (long long)d->rows,
                      (long long)row_stride(d));
    if ((unsigned)d->math >= TILEC_MATH_COUNT)
        return ir_bad(ctx, "%s: math %d is not a tilec_math (TILEC_MATH_EXACT or TILEC_MATH_APPROX)", name, (int)d->math);
    if (is_norm(d->op) && !(d->eps > 0 && isfinite(d->eps)))
        return ir_bad(ctx, "%s needs eps > 0 and finite, not %g", name, d->eps);
    if (is_norm(d->op) && d->eps > FLT_MAX) /* the kernel adds it to an f32 statistic */
        return ir_bad(ctx, "%s: eps %g does not fit f32 (at most %g), in which it is added to the row's statistic", name,
                      d->eps, (double)FLT_MAX);
    if ((d->weight || d->bias) && !is_norm(d->op))
        return ir_bad(ctx, "%s takes no weight or bias (the norms do)", name);
    if (d->bias && d->op != TILEC_FUSED_LAYER_NORM) return ir_bad(ctx, "%s takes no bias (layer_norm does)", name);
    if (d->stats && (d->op == TILEC_FUSED_SOFTMAX || d->op == TILEC_FUSED_LOG_SOFTMAX))
        return ir_bad(ctx, "%s has no stats (the norms have mean / rstd, cross_entropy lse)", name);
    return TILEC_OK;
}

/* ---- plans ----------------------------------------------------------------------------- */

typedef struct fplan {
    int64_t groups; /* CTAs */
    int w;          /* rows a CTA */
    int threads;
    bool staged;    /* the rows are copied to shared memory once */
    bool regs;      /* the rows are held in registers: a fragment of the CTA's rows (regs_of) */
    int split;      /* split rows: P chunks a row, each a CTA's (0: a row is one CTA's) */
    int phase;      /* split rows: 1 the chunks' statistics, 2 the rows' results */
    int cluster;    /* rows in registers over a thread-block cluster of this many CTAs, each
                       holding cols of a row (0: a row is one CTA's) */
    int64_t cols;   /* a register plan's columns a CTA: the row's, or its part in a cluster */
} fplan;

static int64_t pow2_floor(int64_t v) {
    int64_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}

/* Whether d is a 16-bit cross_entropy, and one planned a warp a row or two (CE_WARP_COLS). */
static bool ce16(const tilec_fused_desc *d) { return d->op == TILEC_FUSED_CROSS_ENTROPY && d->dtype != TILEC_F32; }
static bool ce_warp_rows(const tilec_fused_desc *d) {
    return ce16(d) && d->cols >= CE_MIN_WARP_COLS && d->cols <= CE_WARP_COLS;
}

/* Threads for a CTA of `elems` elements of rows of d's: ELEMS_PER_THREAD each (a 16-bit
 * cross_entropy's long rows: CE_ELEMS_PER_THREAD; its rows from CE_MIN_WARP_COLS to
 * CE_WARP_COLS: CE_WARP_THREADS), a power of two from two warps to 1024. */
static int threads_for(const tilec_fused_desc *d, int64_t elems, int warp) {
    if (ce_warp_rows(d)) return CE_WARP_THREADS > 2 * warp ? CE_WARP_THREADS : 2 * warp;
    int per = ce16(d) && d->cols > CE_WARP_COLS ? CE_ELEMS_PER_THREAD : ELEMS_PER_THREAD;
    if (d->op == TILEC_FUSED_SOFTMAX && approx(d) && d->cols >= APPROX_WIDE_COLS) per = APPROX_ELEMS_PER_THREAD;
    int64_t t = pow2_floor(elems / per);
    return (int)(t < 2 * warp ? 2 * warp : t > 1024 ? 1024 : t);
}

/* W rows a CTA for `rows` rows (the last group's plan is made with rows = what is left). */
static fplan plan_of(const tilec_fused_desc *d, int64_t rows, int w, int64_t stage_bytes, int warp) {
    fplan p = {.w = w, .groups = rows / w};
    int64_t row_bytes = d->cols * (int64_t)tilec_dtype_size(d->dtype);
    /* a 16-bit softmax also keeps its exponentials, in f32, beside the row (with math=approx it
       computes them twice instead: exp(x - logsumexp(x))) */
    bool approx_softmax = d->op == TILEC_FUSED_SOFTMAX && approx(d);
    int64_t per_row = row_bytes + (d->op == TILEC_FUSED_SOFTMAX && d->dtype != TILEC_F32 && !approx_softmax ? d->cols * 4 : 0);
    /* cross_entropy reads each row once (its logsumexp; the target's logit is one load):
       staging it measured slower on an H100 (46-51% of the copy ceiling against 55-66%) */
    /* a softmax with math=approx reads rows shorter than APPROX_STAGE_COLS twice where they
       are: with the hardware's exponential two passes cost less than staging (bf16, H100:
       89-97% of the copy ceiling from 4096 columns against 87-93% staged) */
    p.staged = d->op != TILEC_FUSED_CROSS_ENTROPY && !(approx_softmax && d->cols < APPROX_STAGE_COLS) &&
               per_row * w <= stage_bytes &&
               !(d->op == TILEC_FUSED_LOG_SOFTMAX && d->dtype != TILEC_F32 && d->cols < TWICE_COLS);
    p.threads = threads_for(d, d->cols * w, warp);
    return p;
}

/* TILEC_FUSED_REGS's ROWS and THREADS (0, 0: unset; -1, -1: `off`, no rows in registers),
 * refused unless `off` or two whole numbers, THREADS a power of two from 32 to 1024 and ROWS
 * a power of two to 128. Read once as the runtime opens; every fused call returns the refusal, whatever its
 * plan (regs_env). */
void rt_fused_regs_env(rt *r) {
    r->fused_regs[0] = r->fused_regs[1] = 0;
    r->fused_regs_bad[0] = 0;
    r->fused_cluster = 0;
    const char *cl = getenv("TILEC_FUSED_CLUSTER");
    if (cl && *cl) {
        uint64_t n;
        if (!rt_parse_u64(cl, NULL, 1 << 20, &n) || n < 2 || n > IR_MAX_CLUSTER || (n & (n - 1))) {
            char shown[48];
            size_t k = 0;
            for (; cl[k] && k < 40; k++) shown[k] = cl[k] >= 0x20 && cl[k] < 0x7f ? cl[k] : '?';
            snprintf(shown + k, sizeof shown - k, "%s", cl[k] ? "..." : "");
            snprintf(r->fused_regs_bad, sizeof r->fused_regs_bad, "TILEC_FUSED_CLUSTER='%s' is not 2, 4, 8 or 16 (the CTAs "
                     "of a thread-block cluster that hold a row together); unset it for the planned plans", shown);
            return;
        }
        r->fused_cluster = (int)n;
    }
    const char *env = getenv("TILEC_FUSED_REGS");
    if (!env || !*env) return;
    if (strcmp(env, "off") == 0) {
        r->fused_regs[0] = r->fused_regs[1] = -1;
        return;
    }
    char shown[48], buf[32];
    size_t k = 0;
    for (; env[k] && k < 40; k++) shown[k] = env[k] >= 0x20 && env[k] < 0x7f ? env[k] : '?';
    snprintf(shown + k, sizeof shown - k, "%s", env[k] ? "..." : "");
    const char *comma = strchr(env, ',');
    size_t n = comma ? (size_t)(comma - env) : 0;
    uint64_t v[2];
    if (!comma || n >= sizeof buf || !rt_parse_u64((memcpy(buf, env, n), buf[n] = 0, buf), NULL, 1 << 20, &v[0]) ||
        !rt_parse_u64(comma + 1, NULL, 1 << 20, &v[1]))
        snprintf(r->fused_regs_bad, sizeof r->fused_regs_bad, "TILEC_FUSED_REGS='%s' is not ROWS,THREADS, two whole numbers "
                 "(say 4,128: 4 rows a CTA of 128 threads held in registers), or off; unset it for the planned sizes", shown);
    else if (v[1] < 32 || v[1] > 1024 || (v[1] & (v[1] - 1)) || v[0] < 1 || v[0] > 128 || (v[0] & (v[0] - 1)))
        snprintf(r->fused_regs_bad, sizeof r->fused_regs_bad, "TILEC_FUSED_REGS=%s: ROWS is a power of two from 1 to 128 "
                 "and THREADS one from 32 to 1024; unset it for the planned sizes", shown);
    else
        r->fused_regs[0] = (int)v[0], r->fused_regs[1] = (int)v[1];
}

/* The runtime's TILEC_FUSED_REGS, or its refusal. */
static tilec_status regs_env(const rt *r, long long *W, long long *T) {
    *W = r->fused_regs[0], *T = r->fused_regs[1];
    return r->fused_regs_bad[0] ? ir_bad(r->ctx, "%s", r->fused_regs_bad) : TILEC_OK;
}

/* Rows held in registers: rows of a power of two from REGS_MIN_COLS to REGS_MAX_COLS
 * columns, every op (and a 16-bit softmax's of REGS_SOFTMAX16_COLS, and a 16-bit softmax's
 * or log_softmax's of 16384 and 32768 as a CTA's fragment: REGS_CTA_ELEMS), on a target of
 * warps of 32 whose fragments may span a warpgroup or a CTA (CUDA, and the simulator standing
 * for it). The CTA's W rows are one fragment (format.md,
 * "Fragment layouts"), loaded once in 16-byte vectors, reduced and mapped in registers,
 * stored once — no shared memory, no barrier between the passes, where the other plans meet
 * in memory between statements. A row of up to 32 * REGS_ELEMS columns is one warp's, in a
 * CTA of 128 threads holding 4 rows (a warp a row: 8 to 64 elements a thread); a longer row
 * is a warpgroup's, a CTA a row. cross_entropy holds rows in registers only in f32 up to
 * 32 * REGS_ELEMS columns: elsewhere its plan that reads rows in place measured faster.
 * Sizes timed on an H100 (`scripts/bench fused-regs`, 4096 rows, GB/s of the exact math;
 * docs/performance.md has the table): against one warp a CTA, whose CTAs of 32 threads cap
 * a multiprocessor at half its warps, 4 rows over 128 threads gave bf16 softmax 941 / 1696
 * at 256 / 1024 columns against 793 / 1635; at 2048 a warp a row against a warpgroup's
 * gave softmax 2042 against 1714, log_softmax 2239 / 1680, rms_norm 2481 / 2239,
 * layer_norm 2077 / 1731 (bf16), f32 softmax 2563 / 2402; at 4096 a warpgroup's row stays
 * (a warp's, 128 elements a thread, spills). bf16 cross_entropy read in place against held
 * in registers: 418 / 361 at 256, 713 / 598 at 512, 1568 / 1315 at 4096.
 *
 * A row's fold depends on how its columns lie on registers, lanes and warps only: a warp's
 * row folds alike whatever the CTA's rows, so the rows left over by the last full CTA run as
 * a warp a CTA (*left_threads 32) and get the same bits; a warpgroup's row is W = 1.
 *
 * TILEC_FUSED_REGS=W,T (for measuring sizes: scripts/bench fused-regs) takes W rows over T
 * threads (32, a warp's fragment; 128, a warpgroup's; 64 or 256 to 1024, a CTA's) instead,
 * for rows of up to REGS_FORCED_COLS, and `off` the other plans (staged or in place), where
 * this plan applies: W a power of two, 4 to 128 elements a thread, at least a 16-byte vector
 * each. A row over several of the warps (W < T / 32) has no CTA of its fold for the rows
 * left over: such a W must divide the rows.
 * W, T: the runtime's TILEC_FUSED_REGS (0, 0: unset; -1: off). Returns 0 (*w = 0: not this
 * plan) or an error for a TILEC_FUSED_REGS that does not fit the call. */
static tilec_status regs_of(const rt *r, const tilec_fused_desc *d, long long W, long long T, int *w, int *threads,
                            int *left_threads) {
    int64_t C = d->cols;
    bool warp_row = C <= 32 * REGS_ELEMS;
    *w = 0;
    bool softmax16 = d->op == TILEC_FUSED_SOFTMAX && d->dtype != TILEC_F32 && C == REGS_SOFTMAX16_COLS;
    bool cta_row = (d->op == TILEC_FUSED_SOFTMAX || d->op == TILEC_FUSED_LOG_SOFTMAX) && d->dtype != TILEC_F32 &&
                   (C == 16384 || C == 32768); /* a CTA's fragment, C / REGS_CTA_ELEMS threads */
    if (W < 0 || r->target.warp_size != 32 || r->target.backend == TILEC_BACKEND_HIP || C < REGS_MIN_COLS ||
        (C > REGS_MAX_COLS && !softmax16 && !cta_row && !(W > 0 && C <= REGS_FORCED_COLS)) || (C & (C - 1)))
        return TILEC_OK;
    if (!W) {
        if (d->op == TILEC_FUSED_CROSS_ENTROPY && (d->dtype != TILEC_F32 || !warp_row)) return TILEC_OK;
        if (cta_row) {
            *w = 1, *threads = *left_threads = (int)(C / REGS_CTA_ELEMS);
            return TILEC_OK;
        }
        *w = warp_row ? 4 : 1, *threads = 128, *left_threads = warp_row ? 32 : 128;
        return TILEC_OK;
    }
    long long es = (long long)tilec_dtype_size(d->dtype), E = W * C / T;
    if (W * C > (1LL << TILEC_LAYOUT_MAX_BITS))
        return ir_bad(r->ctx, "TILEC_FUSED_REGS=%lld,%lld cannot hold %s rows of %lld columns in registers: %lld rows are %lld "
                      "elements, and a fragment holds at most %lld (a layout's %d bits); give fewer rows, or unset it",
                      W, T, tilec_dtype_name(d->dtype), (long long)C, W, W * C, 1LL << TILEC_LAYOUT_MAX_BITS,
                      TILEC_LAYOUT_MAX_BITS);
    if (E < 4 || E > 128 || E * es < 16)
        return ir_bad(r->ctx, "TILEC_FUSED_REGS=%lld,%lld cannot hold %s rows of %lld columns in registers: %lld rows over %lld "
                      "threads are %lld elements (%lld bytes) a thread, where 4 to 128 elements and at least 16 bytes fit; "
                      "unset it for the planned sizes", W, T, tilec_dtype_name(d->dtype), (long long)C, W, T, E, E * es);
    bool warp_rows = W >= T / 32; /* every warp holds whole rows */
    if (!warp_rows && W > 1 && d->rows % W)
        return ir_bad(r->ctx, "TILEC_FUSED_REGS=%lld,%lld spreads a row over %lld warps, which leaves the last %lld of %lld "
                      "rows no plan of the same fold; give rows a multiple of %lld, or unset it", W, T, T / 32 / W,
                      (long long)(d->rows % W), (long long)d->rows, W);
    *w = (int)W, *threads = (int)T, *left_threads = warp_rows ? 32 : (int)T;
    return TILEC_OK;
}

/* Rows in registers over a thread-block cluster (TILEC_FUSED_CLUSTER=N, for measuring it:
 * scripts/bench fused with it set): each row of a softmax or log_softmax is N parts of C / N
 * columns, part k the register fragment of CTA k of a cluster (TILEC_FUSED_REGS=1,T's T
 * threads, else C / N / REGS_CTA_ELEMS), which folds its part's statistic into shared memory;
 * a cluster reduction of the N parts' (docs/format.md, "Thread-block clusters") gives each
 * CTA the row's, through distributed shared memory. One read and one write of the row, as a
 * CTA's register plan, for rows no CTA's registers hold. Dense rows of a target with
 * clusters (CUDA sm_90 and later, the simulator at warp size 32); a call it does not fit is
 * refused with the reason. */
static tilec_status cluster_of(const rt *r, const tilec_fused_desc *d, long long W, long long T, fplan *out) {
    int N = r->fused_cluster;
    const ir_target_info *t = ir_target(r->target.backend);
    int most = t && t->cluster_max && r->target.warp_size == 32 ? t->cluster_max(r->target.arch) : 0;
    const char *why = NULL;
    char buf[160];
    int64_t Cp = d->cols / N;
    if (d->op != TILEC_FUSED_SOFTMAX && d->op != TILEC_FUSED_LOG_SOFTMAX)
        why = "it holds softmax's and log_softmax's rows only";
    else if (most < N)
        why = (snprintf(buf, sizeof buf, "%s %s at warp size %d has %s", tilec_backend_name(r->target.backend),
                        r->target.arch, r->target.warp_size, most ? "smaller clusters" : "no thread-block clusters"), buf);
    else if (row_stride(d) != d->cols)
        why = "its rows must be dense (a row stride of the columns)";
    else if (d->cols % N || Cp < REGS_MIN_COLS || Cp > REGS_FORCED_COLS || (Cp & (Cp - 1)))
        why = (snprintf(buf, sizeof buf, "a CTA's part of a row, %lld / %d columns, must be a power of two from %d to %d",
                        (long long)d->cols, N, REGS_MIN_COLS, REGS_FORCED_COLS), buf);
    else if (W > 1)
        why = "TILEC_FUSED_REGS must give one row a CTA (1,THREADS) beside it";
    long long threads = T > 0 ? T : Cp / REGS_CTA_ELEMS < 64 ? 64 : Cp / REGS_CTA_ELEMS > 1024 ? 1024 : Cp / REGS_CTA_ELEMS;
    long long E = Cp / threads, es = (long long)tilec_dtype_size(d->dtype);
    if (!why && (E < 4 || E > 128 || E * es < 16))
        why = (snprintf(buf, sizeof buf, "%lld columns over %lld threads are %lld elements a thread, where 4 to 128 and at "
                        "least 16 bytes fit", (long long)Cp, threads, E), buf);
    if (why)
        return ir_bad(r->ctx, "TILEC_FUSED_CLUSTER=%d cannot hold %s's rows of %lld columns over a cluster of %d CTAs: %s; "
                      "unset it for the planned plans", N, tilec_fused_name(d->op), (long long)d->cols, N, why);
    *out = (fplan){.groups = d->rows, .w = 1, .threads = (int)threads, .regs = true, .cluster = N, .cols = Cp};
    return TILEC_OK;
}

static int group_rows(const tilec_fused_desc *d) {
    int64_t row_bytes = d->cols * (int64_t)tilec_dtype_size(d->dtype);
    bool ce = ce_warp_rows(d);
    int64_t bytes = ce ? CE_WARP_BYTES : GROUP_BYTES, most = ce ? CE_WARP_ROWS : MAX_GROUP;
    int64_t w = pow2_floor(bytes / row_bytes > 0 ? bytes / row_bytes : 1);
    if (w > most) w = most;
    while (w > 1 && w > d->rows) w /= 2;
    return (int)w;
}

/* Split rows: few long rows (fewer than SPLIT_ROWS, of SPLIT_COLS or more) leave most of a
 * GPU idle as a CTA a row, so each row is cut into P chunks of about SPLIT_CHUNK elements
 * (P dividing the row, a chunk a multiple of 8 elements), a CTA a chunk, in two kernels:
 * the chunks' partial statistics, then each CTA folds its row's partials (every CTA folds
 * all rows', R * P values, and takes its row's with a gather) and writes its chunk. Dense
 * rows only, no statistics outputs. add_rms_norm's first kernel writes h = x + residual
 * back and sums its squares; its second reads h. */
enum { SPLIT_ROWS = 264, SPLIT_COLS = 16384, SPLIT_CHUNK = 8192, SPLIT_MAX_PARTS = 8192 };

static int split_of(const tilec_fused_desc *d) {
    if (d->rows >= SPLIT_ROWS || d->cols < SPLIT_COLS || row_stride(d) != d->cols || d->stats) return 0;
    for (int64_t p = d->cols / SPLIT_CHUNK; p >= 2; p--)
        if (d->cols % p == 0 && (d->cols / p) % 8 == 0 && d->rows * p <= SPLIT_MAX_PARTS) return (int)p;
    return 0;
}

/* ---- the program ----------------------------------------------------------------------- */

/* A float constant as `.tile` text that reads back as the same double. */
static void put_double(ir_str *s, double v) {
    ir_print_value(s, (ir_value){.f = v, .dtype = TILEC_F64, .typed = v, .exact = true});
}

/* cross_entropy's loss from its rows' logsumexp in L (shared, [W, 1]): L minus the target's
 * logit, gathered from `rows`; 0 where the target is ignore_index, NaN where the logsumexp
 * is +inf; then L itself as the lse statistic. */
static void ce_loss_text(const tilec_fused_desc *d, const char *rows, ir_str *s) {
    ir_str_printf(s, "  cta.map(Y[cta_id], where(eq(Tg[cta_id], %lld), 0, where(eq(L, inf), nan, L - gather(%s, 1, "
                     "Tg[cta_id]))))\n",
                  (long long)d->ignore_index, rows);
    if (d->stats) ir_str_printf(s, "  cta.copy(Lse[cta_id], L)\n");
}

/* The layout of a register plan's fragment of W rows of C columns (powers of two) over T
 * threads (a warp, a warpgroup, or a CTA of 64 or 256 to 1024), as `linear(...)` text: the first register bits are the
 * 16 bytes of consecutive elements a vector load reads, then the lanes run along the row,
 * then the warps along the rows (or the row), the rest in registers. Its projection on the
 * rows (FRAG_ROWS: a row statistic's layout, [W, 1]) or on the columns (FRAG_COLS: a weight's,
 * [1, C]) drops the other dimension's register bits and replicates its lane and warp bits. */
enum { FRAG_ALL, FRAG_ROWS, FRAG_COLS };
static void regs_layout(ir_str *s, int64_t W, int64_t C, int T, int elem_bytes, int mode) {
    int64_t cols[24], rows[24], bits[48][2]; /* a bit's (row, column): registers, then lanes and warps */
    int nc = 0, nr = 0, ci = 0, ri = 0, nreg = 0, nlw = 5;
    for (int t = 32; t < T; t *= 2) nlw++; /* the lane bits, then the warp bits */
    for (int64_t c = 1; c < C; c *= 2) cols[nc++] = c;
    for (int64_t w = 1; w < W; w *= 2) rows[nr++] = w;
    int64_t lw[10][2];
    for (; ci < nc && ((int64_t)1 << ci) < 16 / elem_bytes; ci++, nreg++) bits[nreg][0] = 0, bits[nreg][1] = cols[ci];
    for (int j = 0; j < nlw; j++) { /* lanes along the row first, warps along the rows first */
        bool col = j < 5 ? ci < nc : ri >= nr && ci < nc, row = !col && ri < nr;
        lw[j][0] = row ? rows[ri++] : 0;
        lw[j][1] = col ? cols[ci++] : 0;
    }
    for (; ci < nc; ci++, nreg++) bits[nreg][0] = 0, bits[nreg][1] = cols[ci];
    for (; ri < nr; ri++, nreg++) bits[nreg][0] = rows[ri], bits[nreg][1] = 0;
    bool keep_rows = mode != FRAG_COLS, keep_cols = mode != FRAG_ROWS;
    ir_str_printf(s, "linear(reg=(");
    const char *sep = "";
    for (int j = 0; j < nreg; j++)
        if ((keep_rows && bits[j][0]) || (keep_cols && bits[j][1])) {
            ir_str_printf(s, "%s(%lld, %lld)", sep, keep_rows ? (long long)bits[j][0] : 0LL, keep_cols ? (long long)bits[j][1] : 0LL);
            sep = ", ";
        }
    for (int j = 0; j < nlw; j++)
        ir_str_printf(s, "%s(%lld, %lld)", j == 0 ? "), lane=(" : j == 5 ? "), warp=(" : ", ",
                      keep_rows ? (long long)lw[j][0] : 0LL, keep_cols ? (long long)lw[j][1] : 0LL);
    ir_str_printf(s, "))");
}

/* `local NAME: DTYPE[...] layout=...` of a register plan: the rows (FRAG_ALL), a row
 * statistic (FRAG_ROWS) or a weight (FRAG_COLS). */
static void regs_local(ir_str *s, const tilec_fused_desc *d, const fplan *p, const char *name, tilec_dtype dt, int mode) {
    long long W = p->w, C = (long long)p->cols;
    ir_str_printf(s, "  local %s: %s[%lld, %lld] layout=", name, tilec_dtype_name(dt), mode == FRAG_COLS ? 1LL : W,
                  mode == FRAG_ROWS ? 1LL : C);
    regs_layout(s, W, C, p->threads, (int)tilec_dtype_size(d->dtype), mode);
    ir_str_printf(s, "\n");
}

/* A norm's weight and bias fragments loaded, just before the map that reads them: not held
 * through the row's reductions (a bf16 layer_norm's warp row of 2048 took 238 registers
 * with them loaded first, two CTAs a multiprocessor) */
static void weights_text(const tilec_fused_desc *d, const char *sc, ir_str *s) {
    if (d->weight) ir_str_printf(s, "  %s.copy(Wf, Wt)\n", sc);
    if (d->bias) ir_str_printf(s, "  %s.copy(Bf, Bs)\n", sc);
}

/* The body of a register plan (regs_of): the CTA's rows as one fragment Xf, loaded once,
 * reduced and mapped in registers, the results stored once from a fragment (Xf itself where
 * they have its dtype). softmax keeps exp(x - max) in an f32 fragment and scales it by the
 * reciprocal of its sum; log_softmax subtracts the logsumexp; the norms load the weight and
 * bias as fragments of the columns (each lane the columns its registers hold), and
 * add_rms_norm writes h = x + residual back from Xf before it normalises it; cross_entropy
 * takes the logsumexp into shared memory and its loss as the other plans do (the target's
 * logit with a gather). Statistics are copied out of their fragments. */
static void regs_text(const tilec_fused_desc *d, const fplan *p, ir_str *s) {
    const char *T = tilec_dtype_name(d->dtype);
    const char *sc = p->threads == 32 ? "warp" : p->threads == 128 ? "warpgroup" : "cta"; /* the fragments' scope */
    long long W = p->w, C = (long long)d->cols;
    tilec_fused_op op = d->op;
    bool f32 = d->dtype == TILEC_F32;
    regs_local(s, d, p, "Xf", d->dtype, FRAG_ALL);
    if (op == TILEC_FUSED_CROSS_ENTROPY) {
        ir_str_printf(s, "  shared L: f32[%lld, 1]\n  %s.copy(Xf, X[cta_id])\n  %s.logsumexp(L, Xf, axes=(-1))\n  cta.sync()\n",
                      W, sc, sc);
        ce_loss_text(d, "X[cta_id]", s); /* a fragment is not gathered from: the logit is one load */
        ir_str_printf(s, "}\n");
        return;
    }
    const char *Y = d->out_dtype == d->dtype ? "Xf" : "Yf";
    if (d->out_dtype != d->dtype) regs_local(s, d, p, "Yf", d->out_dtype, FRAG_ALL);
    if (op == TILEC_FUSED_ADD_RMS_NORM) regs_local(s, d, p, "Rf", d->dtype, FRAG_ALL);
    if (op == TILEC_FUSED_SOFTMAX && !f32) regs_local(s, d, p, "Ef", TILEC_F32, FRAG_ALL);
    if (op == TILEC_FUSED_LAYER_NORM && !f32) regs_local(s, d, p, "Cf", TILEC_F32, FRAG_ALL);
    if (d->weight) regs_local(s, d, p, "Wf", d->dtype, FRAG_COLS);
    if (d->bias) regs_local(s, d, p, "Bf", d->dtype, FRAG_COLS);
    static const char *const names[][3] = {
        [TILEC_FUSED_SOFTMAX] = {"M", "Sm", "Rc"}, [TILEC_FUSED_LOG_SOFTMAX] = {"M"},   [TILEC_FUSED_RMS_NORM] = {"V", "Rs"},
        [TILEC_FUSED_ADD_RMS_NORM] = {"V", "Rs"}, [TILEC_FUSED_LAYER_NORM] = {"Mu", "Var", "Rs"},
    };
    for (int i = 0; i < 3 && names[op][i]; i++) /* layer_norm's sum of squares in f64: it cannot overflow */
        regs_local(s, d, p, names[op][i], op == TILEC_FUSED_LAYER_NORM && i == 1 ? TILEC_F64 : TILEC_F32, FRAG_ROWS);
    ir_str_printf(s, "  %s.copy(Xf, X[cta_id])\n", sc);
    if (p->cluster) { /* each CTA's part's statistic, then the row's over the cluster (cluster_of) */
        ir_str_printf(s, "  shared Pm: f32[1, 1]\n  shared Gm: f32[1, 1]\n");
        const char *stat = op == TILEC_FUSED_SOFTMAX ? "max" : "logsumexp";
        ir_str_printf(s, "  %s.%s(Pm, Xf, axes=(-1))\n  cluster.%s(Gm, Pm, axes=(-1))\n  %s.copy(M, Gm)\n",
                      sc, stat, stat, sc);
        if (op == TILEC_FUSED_SOFTMAX) {
            const char *E = f32 ? "Xf" : "Ef";
            ir_str_printf(s, "  shared Ps: f32[1, 1]\n  shared Gs: f32[1, 1]\n");
            ir_str_printf(s, "  %s.map(%s, exp(%sXf - M%s))\n  %s.sum(Ps, %s, axes=(-1))\n"
                             "  cluster.sum(Gs, Ps, axes=(-1))\n  %s.copy(Sm, Gs)\n", sc, E, le0_open(d), le0_close(d), sc, E,
                          sc);
            ir_str_printf(s, "  %s.map(Rc, 1 / Sm)\n  %s.map(%s, %s * Rc)\n", sc, sc, Y, E);
        } else {
            ir_str_printf(s, "  %s.map(M, where(eq(M, inf), nan, M))\n  %s.map(%s, Xf - M)\n", sc, sc, Y);
        }
        ir_str_printf(s, "  %s.copy(Y[cta_id], %s)\n}\n", sc, Y);
        return;
    }
    switch (op) {
    case TILEC_FUSED_SOFTMAX: { /* exp(x - max) kept in f32 (an f32 row's in place), their sum, its reciprocal */
        const char *E = f32 ? "Xf" : "Ef";
        ir_str_printf(s, "  %s.max(M, Xf, axes=(-1))\n  %s.map(%s, exp(%sXf - M%s))\n  %s.sum(Sm, %s, axes=(-1))\n", sc, sc, E,
                      le0_open(d), le0_close(d), sc, E);
        ir_str_printf(s, "  %s.map(Rc, 1 / Sm)\n  %s.map(%s, %s * Rc)\n", sc, sc, Y, E);
        break;
    }
    case TILEC_FUSED_LOG_SOFTMAX: /* a row with +inf (its logsumexp's only way to +inf) is NaN throughout: its
                                     statistic made NaN once, in the row's registers, not a select an element */
        ir_str_printf(s, "  %s.logsumexp(M, Xf, axes=(-1))\n  %s.map(M, where(eq(M, inf), nan, M))\n  %s.map(%s, Xf - M)\n", sc,
                      sc, sc, Y);
        break;
    case TILEC_FUSED_ADD_RMS_NORM: /* h = x + residual, rounded to the dtype, written back (each lane writes
                                      what it read, but the barrier analysis sees a warp's statements) */
        ir_str_printf(s, "  %s.copy(Rf, Res[cta_id])\n  %s.map(Xf, Xf + Rf)\n  %s.sync()\n  %s.copy(Res[cta_id], Xf)\n", sc, sc,
                      sc, sc);
        __attribute__((fallthrough));
    case TILEC_FUSED_RMS_NORM:
        ir_str_printf(s, "  %s.sumsq(V, Xf, axes=(-1))\n  %s.map(Rs, rsqrt(V / %lld + ", sc, sc, C);
        put_double(s, d->eps);
        ir_str_printf(s, "))\n");
        weights_text(d, sc, s);
        if (!d->weight) ir_str_printf(s, "  %s.map(%s, Xf * Rs)\n", sc, Y);
        else if (f32) ir_str_printf(s, "  %s.map(%s, Xf * Rs * Wf)\n", sc, Y);
        else ir_str_printf(s, "  %s.map(%s, %s(Xf * Rs) * Wf)\n", sc, Y, T);
        break;
    case TILEC_FUSED_LAYER_NORM: { /* in two passes over the registers: x - mean kept in f32 (an f32 row's in
                                      place), the variance the mean of its squares, summed in f64 (as var's
                                      fold is: a row's sum of squares past f32's range, say of +-1e18 values,
                                      stays finite) */
        const char *Cx = f32 ? "Xf" : "Cf";
        ir_str_printf(s, "  %s.mean(Mu, Xf, axes=(-1))\n  %s.map(%s, Xf - Mu)\n  %s.sumsq(Var, %s, axes=(-1))\n", sc, sc, Cx, sc,
                      Cx);
        ir_str_printf(s, "  %s.map(Rs, rsqrt(Var / %lld + ", sc, C);
        put_double(s, d->eps);
        ir_str_printf(s, "))\n");
        weights_text(d, sc, s);
        ir_str_printf(s, "  %s.map(%s, %s * Rs%s%s)\n", sc, Y, Cx, d->weight ? " * Wf" : "", d->bias ? " + Bf" : "");
        break;
    }
    default: break;
    }
    ir_str_printf(s, "  %s.copy(Y[cta_id], %s)\n", sc, Y);
    if (d->stats && op == TILEC_FUSED_LAYER_NORM) ir_str_printf(s, "  %s.copy(Mean[cta_id], Mu)\n", sc);
    if (d->stats) ir_str_printf(s, "  %s.copy(Rstd[cta_id], Rs)\n", sc);
    ir_str_printf(s, "}\n");
}

/* The program of plan p: kernel tilec_OP with parameters in tilec_fused's order (x,
 * residual, weight, bias, target, y, mean, rstd, lse, those present). */
static void program_text(const tilec_fused_desc *d, const fplan *p, ir_str *s) {
    const char *T = tilec_dtype_name(d->dtype), *O = tilec_dtype_name(d->out_dtype);
    long long G = (long long)p->groups, W = p->w, C = (long long)d->cols;
    bool f32 = d->dtype == TILEC_F32;
    tilec_fused_op op = d->op;
    if (p->cluster) /* a CTA a row's part: X as [G N, 1, C / N], the same memory */
        G *= p->cluster, C = (long long)p->cols;
    ir_str_printf(s, "kernel tilec_%s(X: %s[%lld, %lld, %lld] global", tilec_fused_name(op), T, G, W, C);
    if (op == TILEC_FUSED_ADD_RMS_NORM) ir_str_printf(s, ", Res: %s[%lld, %lld, %lld] global", T, G, W, C);
    if (d->weight) ir_str_printf(s, ", Wt: %s[%lld] global", T, C);
    if (d->bias) ir_str_printf(s, ", Bs: %s[%lld] global", T, C);
    if (op == TILEC_FUSED_CROSS_ENTROPY) ir_str_printf(s, ", Tg: i64[%lld, %lld, 1] global", G, W);
    if (op == TILEC_FUSED_CROSS_ENTROPY) ir_str_printf(s, ", Y: %s[%lld, %lld, 1] global", O, G, W);
    else ir_str_printf(s, ", Y: %s[%lld, %lld, %lld] global", O, G, W, C);
    if (d->stats && op == TILEC_FUSED_LAYER_NORM) ir_str_printf(s, ", Mean: f32[%lld, %lld, 1] global", G, W);
    if (d->stats && op != TILEC_FUSED_CROSS_ENTROPY) ir_str_printf(s, ", Rstd: f32[%lld, %lld, 1] global", G, W);
    if (d->stats && op == TILEC_FUSED_CROSS_ENTROPY) ir_str_printf(s, ", Lse: f32[%lld, %lld, 1] global", G, W);
    char cluster[32] = "";
    if (p->cluster) snprintf(cluster, sizeof cluster, " cluster=(%d)", p->cluster);
    ir_str_printf(s, ") threads=%d grid=%lld%s%s {\n", p->threads, G, cluster, math_attr(d));
    if (p->regs) {
        regs_text(d, p, s);
        return;
    }

    /* the rows: staged in shared memory, or read where they are */
    const char *rows = "X[cta_id]";
    if (op == TILEC_FUSED_ADD_RMS_NORM) {
        if (p->staged) {
            ir_str_printf(s, "  shared Hs: %s[%lld, %lld]\n  cta.map(Hs, X[cta_id] + Res[cta_id])\n  cta.sync()\n"
                             "  cta.copy(Res[cta_id], Hs)\n", T, W, C);
            rows = "Hs";
        } else {
            ir_str_printf(s, "  cta.map(Res[cta_id], X[cta_id] + Res[cta_id])\n  cta.sync()\n");
            rows = "Res[cta_id]";
        }
    } else if (p->staged) {
        ir_str_printf(s, "  shared Xs: %s[%lld, %lld]\n  cta.copy(Xs, X[cta_id])\n  cta.sync()\n", T, W, C);
        rows = "Xs";
    }
    switch (op) {
    case TILEC_FUSED_SOFTMAX:
        if (p->staged && !approx(d)) { /* one exponential an element: the maximum, exp(x - m) kept, its sum */
            const char *E = f32 ? "Xs" : "E"; /* an f32 row becomes its exponentials in place */
            if (!f32) ir_str_printf(s, "  shared E: f32[%lld, %lld]\n", W, C);
            ir_str_printf(s, "  shared M: f32[%lld, 1]\n  shared S: f32[%lld, 1]\n  shared R: f32[%lld, 1]\n", W, W, W);
            ir_str_printf(s, "  cta.max(M, Xs, axes=(-1))\n  cta.map(%s, exp(min(Xs - M, 0)))\n  cta.sync()\n", E);
            ir_str_printf(s, "  cta.sum(S, %s, axes=(-1))\n  cta.map(R, 1 / S)\n  cta.sync()\n", E);
            ir_str_printf(s, "  cta.map(Y[cta_id], %s * R)\n", E);
            break;
        }
        /* rows read in place, or staged under math=approx: exp(x - logsumexp(x)), below */
        __attribute__((fallthrough));
    case TILEC_FUSED_LOG_SOFTMAX:
        /* a row with +inf (its logsumexp's only way to +inf) is NaN throughout, as
           exp(x - max(x)) makes it: inf - inf */
        ir_str_printf(s, "  shared L: f32[%lld, 1]\n  cta.logsumexp(L, %s, axes=(-1))\n", W, rows);
        if (op == TILEC_FUSED_SOFTMAX)
            ir_str_printf(s, "  cta.map(Y[cta_id], where(eq(L, inf), nan, exp(%s%s - L%s)))\n", le0_open(d), rows, le0_close(d));
        else ir_str_printf(s, "  cta.map(Y[cta_id], where(eq(L, inf), nan, %s - L))\n", rows);
        break;
    case TILEC_FUSED_RMS_NORM:
    case TILEC_FUSED_ADD_RMS_NORM:
        ir_str_printf(s, "  shared V: f32[%lld, 1]\n  shared Rs: f32[%lld, 1]\n  cta.sumsq(V, %s, axes=(-1))\n", W, W, rows);
        ir_str_printf(s, "  cta.map(Rs, rsqrt(V / %lld + ", C);
        put_double(s, d->eps);
        ir_str_printf(s, "))\n  cta.sync()\n");
        if (!d->weight) ir_str_printf(s, "  cta.map(Y[cta_id], %s * Rs)\n", rows);
        else if (f32) ir_str_printf(s, "  cta.map(Y[cta_id], %s * Rs * Wt)\n", rows);
        else ir_str_printf(s, "  cta.map(Y[cta_id], %s(%s * Rs) * Wt)\n", T, rows);
        if (d->stats) ir_str_printf(s, "  cta.copy(Rstd[cta_id], Rs)\n");
        break;
    case TILEC_FUSED_LAYER_NORM:
        ir_str_printf(s, "  shared Mu: f32[%lld, 1]\n  shared Var: f32[%lld, 1]\n  shared Rs: f32[%lld, 1]\n", W, W, W);
        ir_str_printf(s, "  cta.mean(Mu, %s, axes=(-1))\n  cta.var(Var, %s, axes=(-1), correction=0)\n", rows, rows);
        ir_str_printf(s, "  cta.map(Rs, rsqrt(Var + ");
        put_double(s, d->eps);
        ir_str_printf(s, "))\n  cta.sync()\n  cta.map(Y[cta_id], (%s - Mu) * Rs%s%s)\n", rows, d->weight ? " * Wt" : "",
                      d->bias ? " + Bs" : "");
        if (d->stats) ir_str_printf(s, "  cta.copy(Mean[cta_id], Mu)\n  cta.copy(Rstd[cta_id], Rs)\n");
        break;
    case TILEC_FUSED_CROSS_ENTROPY:
        ir_str_printf(s, "  shared L: f32[%lld, 1]\n  cta.logsumexp(L, %s, axes=(-1))\n", W, rows);
        ce_loss_text(d, rows, s);
        break;
    default: break;
    }
    ir_str_printf(s, "}\n");
}

/* The two kernels of split rows (split_of). Phase 1: X as [G, 1, Cp] chunks (G = R * P),
 * each CTA's statistics of its chunk into Part (f32, a value a chunk; layer_norm: its mean
 * and its variance, Part and Pv). Phase 2: Part as [R, P]; Ri[g] = g / P, Pi[g] = g % P,
 * the row and the chunk of CTA g; the weight and bias as [P, Cp]. cross_entropy's phase 2
 * is a CTA a row (its loss is one value). */
static void split_text(const tilec_fused_desc *d, const fplan *p, ir_str *s) {
    const char *T = tilec_dtype_name(d->dtype), *O = tilec_dtype_name(d->out_dtype), *name = tilec_fused_name(d->op);
    long long R = (long long)d->rows, P = p->split, G = R * P, C = (long long)d->cols, Cp = C / P;
    tilec_fused_op op = d->op;
    bool lse = op == TILEC_FUSED_SOFTMAX || op == TILEC_FUSED_LOG_SOFTMAX || op == TILEC_FUSED_CROSS_ENTROPY;
    if (p->phase == 1) {
        ir_str_printf(s, "kernel tilec_%s_parts(X: %s[%lld, 1, %lld] global", name, T, G, Cp);
        if (op == TILEC_FUSED_ADD_RMS_NORM) ir_str_printf(s, ", Res: %s[%lld, 1, %lld] global", T, G, Cp);
        ir_str_printf(s, ", Part: f32[%lld, 1, 1] global", G);
        if (op == TILEC_FUSED_LAYER_NORM) ir_str_printf(s, ", Pv: f32[%lld, 1, 1] global", G);
        ir_str_printf(s, ") threads=%d grid=%lld%s {\n", p->threads, G, math_attr(d));
        if (lse) ir_str_printf(s, "  cta.logsumexp(Part[cta_id], X[cta_id], axes=(-1))\n");
        else if (op == TILEC_FUSED_ADD_RMS_NORM)
            ir_str_printf(s, "  cta.map(Res[cta_id], X[cta_id] + Res[cta_id])\n  cta.sync()\n"
                             "  cta.sumsq(Part[cta_id], Res[cta_id], axes=(-1))\n");
        else if (op == TILEC_FUSED_RMS_NORM) ir_str_printf(s, "  cta.sumsq(Part[cta_id], X[cta_id], axes=(-1))\n");
        else ir_str_printf(s, "  cta.mean(Part[cta_id], X[cta_id], axes=(-1))\n  cta.var(Pv[cta_id], X[cta_id], axes=(-1), "
                              "correction=0)\n");
        ir_str_printf(s, "}\n");
        return;
    }
    if (op == TILEC_FUSED_CROSS_ENTROPY) {
        ir_str_printf(s, "kernel tilec_%s_rows(X: %s[%lld, 1, %lld] global, Part: f32[%lld, 1, %lld] global, Tg: i64[%lld, "
                         "1, 1] global, Y: %s[%lld, 1, 1] global) threads=%d grid=%lld%s {\n", name, T, R, C, R, P, R, O, R,
                      p->threads, R, math_attr(d));
        ir_str_printf(s, "  shared L: f32[1, 1]\n  cta.logsumexp(L, Part[cta_id], axes=(-1))\n");
        ir_str_printf(s, "  cta.map(Y[cta_id], where(eq(Tg[cta_id], %lld), 0, where(eq(L, inf), nan, L - gather(X[cta_id], 1, "
                         "Tg[cta_id]))))\n}\n", (long long)d->ignore_index);
        return;
    }
    ir_str_printf(s, "kernel tilec_%s_chunks(X: %s[%lld, 1, %lld] global, Part: f32[%lld, %lld] global", name, T, G, Cp, R, P);
    if (op == TILEC_FUSED_LAYER_NORM) ir_str_printf(s, ", Pv: f32[%lld, %lld] global", R, P);
    ir_str_printf(s, ", Ri: i64[%lld, 1, 1] global, Pi: i64[%lld, 1, 1] global", G, G);
    if (d->weight) ir_str_printf(s, ", Wt: %s[%lld, %lld] global", T, P, Cp);
    if (d->bias) ir_str_printf(s, ", Bs: %s[%lld, %lld] global", T, P, Cp);
    ir_str_printf(s, ", Y: %s[%lld, 1, %lld] global) threads=%d grid=%lld%s {\n", O, G, Cp, p->threads, G,
                  math_attr(d));
    switch (op) {
    case TILEC_FUSED_SOFTMAX:
    case TILEC_FUSED_LOG_SOFTMAX: {
        const char *g = "gather(L, 0, Ri[cta_id])";
        ir_str_printf(s, "  shared L: f32[%lld, 1]\n  cta.logsumexp(L, Part, axes=(-1))\n", R);
        if (op == TILEC_FUSED_SOFTMAX)
            ir_str_printf(s, "  cta.map(Y[cta_id], where(eq(%s, inf), nan, exp(%sX[cta_id] - %s%s)))\n", g, le0_open(d), g,
                          le0_close(d));
        else ir_str_printf(s, "  cta.map(Y[cta_id], where(eq(%s, inf), nan, X[cta_id] - %s))\n", g, g);
        break;
    }
    case TILEC_FUSED_RMS_NORM:
    case TILEC_FUSED_ADD_RMS_NORM: { /* add_rms_norm's X here is h, the residual written back */
        const char *g = "gather(Rs, 0, Ri[cta_id])";
        ir_str_printf(s, "  shared V: f32[%lld, 1]\n  shared Rs: f32[%lld, 1]\n  cta.sum(V, Part, axes=(-1))\n", R, R);
        ir_str_printf(s, "  cta.map(Rs, rsqrt(V / %lld + ", C);
        put_double(s, d->eps);
        ir_str_printf(s, "))\n  cta.sync()\n");
        if (!d->weight) ir_str_printf(s, "  cta.map(Y[cta_id], X[cta_id] * %s)\n", g);
        else if (d->dtype == TILEC_F32) ir_str_printf(s, "  cta.map(Y[cta_id], X[cta_id] * %s * gather(Wt, 0, Pi[cta_id]))\n", g);
        else ir_str_printf(s, "  cta.map(Y[cta_id], %s(X[cta_id] * %s) * gather(Wt, 0, Pi[cta_id]))\n", T, g);
        break;
    }
    default: /* layer_norm: the row's mean is the chunks' mean, its variance their variances'
                mean plus their means' variance (chunks of one size) */
        ir_str_printf(s, "  shared Mu: f32[%lld, 1]\n  shared Vm: f32[%lld, 1]\n  shared Vv: f32[%lld, 1]\n  shared Rs: f32[%lld, 1]\n",
                      R, R, R, R);
        ir_str_printf(s, "  cta.mean(Mu, Part, axes=(-1))\n  cta.var(Vm, Part, axes=(-1), correction=0)\n"
                         "  cta.mean(Vv, Pv, axes=(-1))\n  cta.map(Rs, rsqrt(Vv + Vm + ");
        put_double(s, d->eps);
        ir_str_printf(s, "))\n  cta.sync()\n  cta.map(Y[cta_id], (X[cta_id] - gather(Mu, 0, Ri[cta_id])) * gather(Rs, 0, "
                         "Ri[cta_id])%s%s)\n", d->weight ? " * gather(Wt, 0, Pi[cta_id])" : "",
                      d->bias ? " + gather(Bs, 0, Pi[cta_id])" : "");
        break;
    }
    ir_str_printf(s, "}\n");
}

/* The plan's words (rt_plan.id): tag, op, dtypes, flags; rows a CTA, CTAs, cols, stride,
 * eps's bits, ignore_index. */
static uint64_t plan_id(const tilec_fused_desc *d, const fplan *p, bool unaligned, int64_t id[RT_ID_WORDS]) {
    memset(id, 0, RT_ID_WORDS * sizeof *id);
    id[0] = (int64_t)((uint64_t)FUSED_TAG << 56 | (uint64_t)d->op | (uint64_t)d->dtype << 8 | (uint64_t)d->out_dtype << 16 |
                      (uint64_t)d->weight << 24 | (uint64_t)d->bias << 25 | (uint64_t)d->stats << 26 |
                      (uint64_t)unaligned << 27 | (uint64_t)p->staged << 28 | (uint64_t)approx(d) << 29 |
                      (uint64_t)p->regs << 30);
    id[1] = p->w, id[2] = p->groups, id[3] = d->cols, id[4] = row_stride(d), id[5] = p->threads;
    id[8] = p->split, id[9] = p->phase, id[10] = d->rows, id[11] = p->cluster;
    memcpy(&id[6], &d->eps, sizeof d->eps);
    id[7] = d->ignore_index;
    return rt_plan_hash(id);
}

static tilec_status build(tilec_ctx *ctx, const tilec_fused_desc *d, const fplan *p, tilec_program **out) {
    ir_str s = {0};
    if (p->split) split_text(d, p, &s);
    else program_text(d, p, &s);
    if (s.oom) {
        ir_str_free(&s);
        return TILEC_ERR_NOMEM;
    }
    tilec_program *prog = NULL;
    tilec_status st = ir_parse(ctx, "<tilec_fused>", s.data, s.len, &prog);
    ir_str_free(&s);
    if (st != TILEC_OK) return st == TILEC_ERR_NOMEM ? st : TILEC_ERR_INTERNAL;
    if (!p->split && row_stride(d) != d->cols) { /* x's rows at their stride: a view of [G, W, C] */
        int64_t strides[3] = {p->w * row_stride(d), row_stride(d), 1};
        if (!ir_buffer_view(prog, prog->kernels[0]->params[0], strides)) {
            tilec_program_free(prog);
            return TILEC_ERR_INVALID_ARG;
        }
    }
    *out = prog;
    return TILEC_OK;
}

static tilec_status get_plan(rt *r, const tilec_fused_desc *d, const fplan *fp, bool unaligned, rt_plan **out) {
    int64_t id[RT_ID_WORDS];
    uint64_t hash = plan_id(d, fp, unaligned, id);
    if ((*out = rt_plan_find(r, id, hash))) return TILEC_OK;
    rt_plan *p = calloc(1, sizeof *p);
    if (!p) return TILEC_ERR_NOMEM;
    char how[64];
    if (fp->split) snprintf(how, sizeof how, "%d chunks a row, phase %d", fp->split, fp->phase);
    else if (fp->cluster) snprintf(how, sizeof how, "a row a cluster of %d CTAs, in registers", fp->cluster);
    else snprintf(how, sizeof how, "%d rows a CTA, %s", fp->w, fp->regs ? "in registers" : fp->staged ? "staged" : "in place");
    snprintf(p->key, sizeof p->key, "fused %s %s->%s %lld x %lld (stride %lld), %s%s%s%s%s %s %s ws%d%s",
             tilec_fused_name(d->op), tilec_dtype_name(d->dtype), tilec_dtype_name(d->out_dtype),
             (long long)(fp->split ? d->rows : fp->groups * fp->w), (long long)d->cols, (long long)row_stride(d), how,
             d->weight ? ", weight" : "", d->bias ? ", bias" : "", d->stats ? ", stats" : "",
             approx(d) ? ", math=approx" : "", r->be->name, r->target.arch,
             r->target.warp_size, unaligned ? " unaligned" : "");
    memcpy(p->id, id, sizeof id);
    p->hash = hash;
    tilec_status st = build(r->ctx, d, fp, &p->prog);
    dsp_target target;
    if (st == TILEC_OK) st = rt_lowering_target(r, unaligned, &target);
    lp_kernel **ks;
    if (st == TILEC_OK && (st = dsp_lower_program(p->prog, &target, NULL, &ks)) == TILEC_OK) {
        p->kernel = ks[0];
        p->variant = "fused";
        st = rt_launch_info(r->ctx, p->kernel, &p->info);
    }
    if ((st = rt_plan_load(r, p, st)) != TILEC_OK) return st;
    rt_log(r, "miss %s: grid %lld x %d", p->key, (long long)p->info.grid, p->info.threads);
    p->next = r->plans;
    r->plans = p;
    r->nplans++;
    *out = p;
    return TILEC_OK;
}

/* The shared memory a staged plan may take on the runtime's target. */
static int64_t stage_limit(const rt *r) {
    const ir_target_info *t = ir_target(r->target.backend);
    int64_t lim = t && t->shared_bytes ? t->shared_bytes(r->target.arch) : TILEC_MAX_SHARED_BYTES;
    lim -= 1024; /* the reductions' slots */
    return lim < STAGE_BYTES ? lim : STAGE_BYTES;
}

/* ---- the calls ------------------------------------------------------------------------- */

typedef struct span {
    const char *what;
    uintptr_t at;
    size_t bytes;
    bool written;
} span;

/* The buffers of the call: each given where it must be, none written meeting another. */
static tilec_status check_args(tilec_ctx *ctx, rt *r, const tilec_fused_desc *d, const tilec_fused_args *a, span *sp,
                               int *nsp) {
    const char *name = tilec_fused_name(d->op);
    size_t es = tilec_dtype_size(d->dtype), os = tilec_dtype_size(d->out_dtype);
    int64_t R = d->rows, C = d->cols;
    bool ce = d->op == TILEC_FUSED_CROSS_ENTROPY;
    size_t x_bytes = R ? ((size_t)(R - 1) * (size_t)row_stride(d) + (size_t)C) * es : 0;
    int n = 0;
    sp[n++] = (span){"x", (uintptr_t)a->x, x_bytes, false};
    sp[n++] = (span){ce ? "y (the losses)" : "y", (uintptr_t)a->y, (size_t)R * (ce ? 1 : (size_t)C) * os, true};
    if (d->op == TILEC_FUSED_ADD_RMS_NORM) sp[n++] = (span){"residual", (uintptr_t)a->residual, (size_t)(R * C) * es, true};
    if (d->weight) sp[n++] = (span){"weight", (uintptr_t)a->weight, (size_t)C * es, false};
    if (d->bias) sp[n++] = (span){"bias", (uintptr_t)a->bias, (size_t)C * es, false};
    if (ce) sp[n++] = (span){"target", (uintptr_t)a->target, (size_t)R * 8, false};
    if (d->stats && d->op == TILEC_FUSED_LAYER_NORM) sp[n++] = (span){"mean", (uintptr_t)a->mean, (size_t)R * 4, true};
    if (d->stats && !ce) sp[n++] = (span){"rstd", (uintptr_t)a->rstd, (size_t)R * 4, true};
    if (d->stats && ce) sp[n++] = (span){"lse", (uintptr_t)a->lse, (size_t)R * 4, true};
    *nsp = n;
    if (R == 0) return TILEC_OK;
    for (int i = 0; i < n; i++) {
        if (!sp[i].at)
            return ir_bad(ctx, "%s: %s is NULL; give it device memory of %zu bytes%s", name, sp[i].what, sp[i].bytes,
                          strcmp(sp[i].what, "weight") == 0 || strcmp(sp[i].what, "bias") == 0 ? " (or leave desc.weight / "
                          "desc.bias false)" : "");
        tilec_status st = rt_within(r, sp[i].what, sp[i].at, sp[i].bytes);
        if (st != TILEC_OK) return st;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if ((sp[i].written || sp[j].written) && rt_meet(sp[i].at, sp[i].bytes, sp[j].at, sp[j].bytes))
                return ir_bad(ctx, "%s: %s and %s overlap; a buffer %s writes must meet no other: give it memory of its own",
                              name, sp[i].what, sp[j].what, name);
    return TILEC_OK;
}

/* The kernel's arguments for rows [first, first + rows of plan p), in the program's order. */
static int kernel_args(const tilec_fused_desc *d, const tilec_fused_args *a, int64_t first, void **args) {
    size_t es = tilec_dtype_size(d->dtype), os = tilec_dtype_size(d->out_dtype);
    int64_t C = d->cols;
    bool ce = d->op == TILEC_FUSED_CROSS_ENTROPY;
    int n = 0;
    args[n++] = (char *)a->x + (size_t)first * (size_t)row_stride(d) * es;
    if (d->op == TILEC_FUSED_ADD_RMS_NORM) args[n++] = (char *)a->residual + (size_t)(first * C) * es;
    if (d->weight) args[n++] = (void *)a->weight;
    if (d->bias) args[n++] = (void *)a->bias;
    if (ce) args[n++] = (char *)a->target + (size_t)first * 8;
    args[n++] = (char *)a->y + (size_t)first * (ce ? 1 : (size_t)C) * os;
    if (d->stats && d->op == TILEC_FUSED_LAYER_NORM) args[n++] = (char *)a->mean + (size_t)first * 4;
    if (d->stats && !ce) args[n++] = (char *)a->rstd + (size_t)first * 4;
    if (d->stats && ce) args[n++] = (char *)a->lse + (size_t)first * 4;
    return n;
}

/* The plans of a call: the full groups, then the rows left (at most two); or split rows'
 * two phases. */
static tilec_status plans_of(const rt *r, const tilec_fused_desc *d, fplan *out, int *np) {
    int P = split_of(d), ws = r->target.warp_size;
    long long W, T;
    tilec_status st = regs_env(r, &W, &T); /* a bad value is refused whatever the plan */
    *np = 0;
    if (st != TILEC_OK) return st;
    if (r->fused_cluster) {
        if ((st = cluster_of(r, d, W, T, &out[0])) == TILEC_OK) *np = 1;
        return st;
    }
    if (P) {
        int64_t cp = d->cols / P;
        bool ce = d->op == TILEC_FUSED_CROSS_ENTROPY;
        out[0] = (fplan){.groups = d->rows * P, .w = 1, .threads = threads_for(d, cp, ws), .split = P, .phase = 1};
        out[1] = (fplan){.groups = ce ? d->rows : d->rows * P, .w = 1, .threads = ce ? 2 * ws : threads_for(d, cp, ws),
                         .split = P, .phase = 2};
        *np = 2;
        return TILEC_OK;
    }
    int rt_threads = 0, left_threads = 0, rw = 0, n = 0;
    st = regs_of(r, d, W, T, &rw, &rt_threads, &left_threads);
    if (st != TILEC_OK) return st;
    if (rw) { /* W rows a CTA, then the rows left a CTA each (the same fold a row) */
        if (d->rows / rw)
            out[n++] = (fplan){.groups = d->rows / rw, .w = rw, .threads = rt_threads, .regs = true, .cols = d->cols};
        if (d->rows % rw)
            out[n++] = (fplan){.groups = d->rows % rw, .w = 1, .threads = left_threads, .regs = true, .cols = d->cols};
        *np = n;
        return TILEC_OK;
    }
    int w = group_rows(d);
    int64_t lim = stage_limit(r);
    if (d->rows / w) out[n++] = plan_of(d, d->rows - d->rows % w, w, lim, r->target.warp_size);
    if (d->rows % w) out[n++] = plan_of(d, d->rows % w, (int)(d->rows % w), lim, r->target.warp_size);
    *np = n;
    return TILEC_OK;
}

/* Split rows' device memory for phase 2's plan on the stream: the partials (f32, two a
 * chunk at most), then Ri and Pi (i64 a CTA: its row and its chunk), made and filled on
 * the stream's first call. */
static tilec_status split_aux(rt *r, const tilec_fused_desc *d, rt_plan *p2, int P, void **out) {
    for (rt_aux *x = p2->aux; x; x = x->next)
        if (x->stream == d->stream) {
            *out = x->dev;
            return TILEC_OK;
        }
    bool captured;
    tilec_status st = rt_capturing(r, d->stream, &captured);
    if (st != TILEC_OK) return st;
    if (captured)
        return ir_bad(r->ctx, "%s of %lld rows of %lld splits each row among CTAs, whose partial results need memory this "
                      "stream has not had yet: make one call on the stream before capturing it", tilec_fused_name(d->op),
                      (long long)d->rows, (long long)d->cols);
    int64_t G = d->rows * P;
    size_t part = ((size_t)G * 8 + 15) / 16 * 16, bytes = part + (size_t)G * 16;
    int64_t *ix = malloc((size_t)G * 16);
    rt_aux *x = calloc(1, sizeof *x);
    if (!ix || !x) {
        free(ix);
        free(x);
        return TILEC_ERR_NOMEM;
    }
    for (int64_t g = 0; g < G; g++) ix[g] = g / P, ix[G + g] = g % P;
    void *dev = NULL;
    if ((st = r->be->alloc(r, bytes, &dev)) == TILEC_OK &&
        (st = r->be->upload(r, (char *)dev + part, ix, (size_t)G * 16)) != TILEC_OK)
        r->be->release(r, dev);
    free(ix);
    if (st != TILEC_OK) {
        free(x);
        return st;
    }
    *x = (rt_aux){.stream = d->stream, .dev = dev, .next = p2->aux};
    p2->aux = x;
    *out = dev;
    return TILEC_OK;
}

/* Split rows: phase 1's kernel, then phase 2's, on the stream. */
static tilec_status run_split(rt *r, const tilec_fused_desc *d, const tilec_fused_args *a, const fplan *plans,
                              bool unaligned) {
    rt_plan *p1, *p2;
    tilec_status st;
    if ((st = get_plan(r, d, &plans[0], unaligned, &p1)) != TILEC_OK || (st = get_plan(r, d, &plans[1], unaligned, &p2)) != TILEC_OK)
        return st;
    int P = plans[0].split;
    int64_t G = d->rows * P;
    void *aux = NULL;
    if ((st = split_aux(r, d, p2, P, &aux)) != TILEC_OK) return st;
    char *part = aux, *pv = part + (size_t)G * 4;
    char *ri = part + ((size_t)G * 8 + 15) / 16 * 16, *pi = ri + (size_t)G * 8;
    bool ln = d->op == TILEC_FUSED_LAYER_NORM, add = d->op == TILEC_FUSED_ADD_RMS_NORM;
    void *args1[3] = {(void *)a->x, part, pv};
    if (add) args1[1] = a->residual, args1[2] = part;
    if ((st = rt_launch(r, p1, args1, ln || add ? 3 : 2, d->stream)) != TILEC_OK) return st;
    void *args2[12];
    int n = 0;
    args2[n++] = add ? a->residual : (void *)a->x; /* add_rms_norm: h, written back by phase 1 */
    args2[n++] = part;
    if (d->op == TILEC_FUSED_CROSS_ENTROPY) {
        args2[n++] = (void *)a->target;
    } else {
        if (ln) args2[n++] = pv;
        args2[n++] = ri;
        args2[n++] = pi;
        if (d->weight) args2[n++] = (void *)a->weight;
        if (d->bias) args2[n++] = (void *)a->bias;
    }
    args2[n++] = a->y;
    return rt_launch(r, p2, args2, n, d->stream);
}

/* A launch's grid is at most 2^31 - 1 CTAs (the `.tile` grid's bound, CUDA's and HIP's). */
static tilec_status check_grid(tilec_ctx *ctx, const tilec_fused_desc *d, const fplan *plans, int np) {
    for (int i = 0; i < np; i++)
        if (plans[i].groups > INT32_MAX)
            return ir_bad(ctx, "%s of %lld rows takes %lld CTAs of %d rows, more than a launch's 2^31 - 1; split the rows "
                          "into calls of at most %lld", tilec_fused_name(d->op), (long long)d->rows, (long long)plans[i].groups,
                          plans[i].w, (long long)INT32_MAX * plans[i].w);
    return TILEC_OK;
}

tilec_status tilec_fused(tilec_ctx *ctx, const tilec_fused_desc *d, const tilec_fused_args *a) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    tilec_status st = check_desc(ctx, d);
    if (st != TILEC_OK) return st;
    if (!a) return ir_bad(ctx, "%s: no arguments (tilec_fused_args)", tilec_fused_name(d->op));
    rt *r;
    if ((st = rt_get(ctx, &r)) != TILEC_OK) return st;
    span sp[10];
    int nsp;
    if ((st = check_args(ctx, r, d, a, sp, &nsp)) != TILEC_OK || d->rows == 0) return st;
    bool unaligned = false;
    for (int i = 0; i < nsp; i++) unaligned = unaligned || sp[i].at % 16 != 0;
    /* a later group's rows start where the earlier ones end: aligned only if a row is */
    if ((row_stride(d) * (int64_t)tilec_dtype_size(d->dtype)) % 16 || (d->cols * (int64_t)tilec_dtype_size(d->out_dtype)) % 16)
        unaligned = true;
    fplan plans[2];
    int np = 0;
    if ((st = plans_of(r, d, plans, &np)) != TILEC_OK || (st = check_grid(ctx, d, plans, np)) != TILEC_OK) return st;
    if (plans[0].split) return run_split(r, d, a, plans, unaligned);
    int64_t first = 0;
    for (int i = 0; i < np; i++) {
        rt_plan *p;
        if ((st = get_plan(r, d, &plans[i], unaligned, &p)) != TILEC_OK) return st;
        void *args[12];
        int n = kernel_args(d, a, first, args);
        if ((st = rt_launch(r, p, args, n, d->stream)) != TILEC_OK) return st;
        first += plans[i].groups * plans[i].w;
    }
    return TILEC_OK;
}

tilec_status tilec_fused_explain(tilec_ctx *ctx, const tilec_fused_desc *d, char **text) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!text) return ir_bad(ctx, "tilec_fused_explain: text is NULL; pass where the text goes");
    *text = NULL;
    tilec_status st = check_desc(ctx, d);
    rt *r = NULL;
    if (st == TILEC_OK) st = rt_get(ctx, &r);
    if (st != TILEC_OK) return st;
    ir_str s = {0};
    ir_str_printf(&s, "backend %s (target %s %s, warp size %d)\n%s of %lld rows x %lld (row stride %lld), %s -> %s\n",
                  r->be->name, tilec_backend_name(r->target.backend), r->target.arch, r->target.warp_size,
                  tilec_fused_name(d->op), (long long)d->rows, (long long)d->cols, (long long)row_stride(d),
                  tilec_dtype_name(d->dtype), tilec_dtype_name(d->out_dtype));
    fplan plans[2] = {{0}};
    int np = 0;
    if ((d->rows && (st = plans_of(r, d, plans, &np)) != TILEC_OK) || (st = check_grid(ctx, d, plans, np)) != TILEC_OK) {
        ir_str_free(&s);
        return st;
    }
    if (!np) ir_str_printf(&s, "no rows: nothing runs\n");
    for (int i = 0; i < np && st == TILEC_OK; i++) {
        rt_plan *p;
        if ((st = get_plan(r, d, &plans[i], false, &p)) != TILEC_OK) break;
        ir_str t = {0};
        ir_print_program(&t, p->prog);
        ir_str_put(&t, "", 0);
        char *table = NULL;
        if (t.oom) st = TILEC_ERR_NOMEM;
        dsp_target et;
        if (st == TILEC_OK) st = rt_lowering_target(r, false, &et);
        if (st == TILEC_OK) st = dsp_explain(p->prog, &et, false, &table);
        if (st == TILEC_OK && plans[i].split)
            ir_str_printf(&s, "\nplan %d: %s, each row cut into %d chunks of %lld, a CTA a %s: grid %lld x %d threads\n%s\n%s",
                          i + 1, plans[i].phase == 1 ? "the chunks' partial statistics" : "the rows' results", plans[i].split,
                          (long long)(d->cols / plans[i].split),
                          plans[i].phase == 2 && d->op == TILEC_FUSED_CROSS_ENTROPY ? "row" : "chunk",
                          (long long)p->info.grid, p->info.threads, t.data, table);
        else if (st == TILEC_OK && plans[i].cluster)
            ir_str_printf(&s, "\nplan %d: rows 0 to %lld, a row a thread-block cluster of %d CTAs, each holding %lld of its "
                              "columns in registers: grid %lld x %d threads\n%s\n%s", i + 1, (long long)d->rows - 1,
                          plans[i].cluster, (long long)plans[i].cols, (long long)p->info.grid, p->info.threads, t.data, table);
        else if (st == TILEC_OK)
            ir_str_printf(&s, "\nplan %d: rows %lld to %lld, %d a CTA, %s: grid %lld x %d threads\n%s\n%s", i + 1,
                          (long long)(i ? plans[0].groups * plans[0].w : 0),
                          (long long)((i ? plans[0].groups * plans[0].w : 0) + plans[i].groups * plans[i].w - 1),
                          plans[i].w, plans[i].regs     ? "rows held in registers"
                                      : plans[i].staged ? "rows staged in shared memory"
                                                        : "rows read where they are",
                          (long long)p->info.grid, p->info.threads, t.data, table);
        ir_str_free(&t);
        tilec_free(table);
    }
    if (st != TILEC_OK || s.oom) {
        ir_str_free(&s);
        return st != TILEC_OK ? st : TILEC_ERR_NOMEM;
    }
    *text = s.data;
    return TILEC_OK;
}
