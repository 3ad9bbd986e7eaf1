/*
 * test_sharded.c — tilec_reduce_sharded on the simulator, the ranks of a group run as
 * threads of this process through a fake NCCL (tests/fake_nccl.c, loaded by
 * TILEC_NCCL_PATH, which meson sets for this test with NCCL_NVLS_ENABLE=0).
 *
 * For 1 to 4 ranks, shards equal, unequal and with an empty rank, along a reduced or a
 * kept dim, every supported op: every rank gets the same bits; where docs/runtime.md says
 * so ("Sharded reductions": a kept shard_dim, the exact ops, one rank) the bits of one
 * context reducing the whole tensor; the float folds within the reference's tolerance;
 * i32 sums and maxima against an oracle written here in exact integer arithmetic. And
 * failures: NCCL missing, a rank's bad descriptor, a planted failure in init or in an
 * all-gather, a rank that never arrives: every rank returns an error, none waits past the
 * fake's timeout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tilec.h"

enum { MAXR = 4 };

/* One sharded reduction: the whole tensor, how it is cut, and what each rank got. */
typedef struct job {
    int nranks;
    tilec_comm_id id;
    tilec_reduce_desc whole;      /* the unsharded reduction (out2 unused) */
    int sd;                       /* shard_dim */
    int64_t ext[MAXR];            /* each rank's extent of sd */
    const unsigned char *data;    /* the whole tensor, dense */
    int bad_rank;                 /* this rank's descriptor has another dtype (-1: none) */
    int small_rank;               /* this rank's output holds one shard's part only (-1: none) */
    bool out_is_in;               /* every rank passes its input as the output */
    size_t b1, b2;                /* bytes of the whole output and its second output */
    unsigned char *res[MAXR];     /* what each rank got: the output, then the second */
    tilec_status st[MAXR];
    char msg[MAXR][512];
} job;

typedef struct arg {
    job *j;
    int rank;
} arg;

/* Set by test_boundaries: its shards fall on the fold order's boundaries. */
static bool on_boundaries;
static int runs;
static int64_t job_ext_override = -1; /* every rank but the last gets this extent */
static const int64_t *job_correction;  /* var and std's */
static bool job_index_i32;
static bool job_transposed; /* each rank's shard of a rank-2 tensor held column-major (a strided view) */
static void *job_stream;    /* the calls' stream (on the simulator, any handle) */
static bool job_correction_null_on_even; /* even ranks pass correction NULL, odd ones job_correction */

static size_t second_size(const tilec_reduce_desc *d) {
    if (tilec_op_outputs(d->op) < 2) return 0;
    tilec_dtype s = tilec_op_second_dtype(d->op, d->widen ? tilec_dtype_wide(d->dtype) : d->dtype);
    return s == TILEC_I64 && d->index_i32 ? 4 : tilec_dtype_size(s);
}

static int64_t kept_elems(const tilec_reduce_desc *d, int sd, int64_t sd_extent) {
    bool red[TILEC_MAX_RANK] = {0};
    for (int i = 0; i < d->naxes; i++) red[d->axes[i] < 0 ? d->axes[i] + d->rank : d->axes[i]] = true;
    int64_t n = 1;
    for (int i = 0; i < d->rank; i++)
        if (!red[i]) n *= i == sd ? sd_extent : d->shape[i];
    return n;
}

static void note(job *j, int r, tilec_ctx *ctx) {
    tilec_diag dg;
    if (ctx && tilec_diag_get(ctx, 0, &dg) == TILEC_OK) snprintf(j->msg[r], sizeof j->msg[r], "%s", dg.message);
}

/* One rank: its context on the simulator, its shard (a dense copy of its slice), the call. */
static void *rank_main(void *p) {
    arg *a = p;
    job *j = a->j;
    int r = a->rank;
    tilec_reduce_desc d = j->whole;
    size_t es = tilec_dtype_size(d.dtype);
    int64_t outer = 1, inner = 1, off = 0, total = d.shape[j->sd];
    for (int i = 0; i < j->sd; i++) outer *= d.shape[i];
    for (int i = j->sd + 1; i < d.rank; i++) inner *= d.shape[i];
    for (int q = 0; q < r; q++) off += j->ext[q];
    d.shape[j->sd] = j->ext[r];
    if (r == j->bad_rank) d.dtype = d.dtype == TILEC_F32 ? TILEC_I32 : TILEC_F32;
    if (job_correction_null_on_even && r % 2 == 0) d.correction = NULL;
    size_t lbytes = (size_t)(outer * j->ext[r] * inner) * es;
    unsigned char *local = malloc(lbytes ? lbytes : 1);
    for (int64_t o = 0; o < outer; o++)
        memcpy(local + (size_t)(o * j->ext[r] * inner) * es, j->data + (size_t)((o * total + off) * inner) * es,
               (size_t)(j->ext[r] * inner) * es);
    int64_t strides[2];
    if (job_transposed && d.rank == 2) { /* element [a, b] at b * rows + a */
        unsigned char *t = malloc(lbytes ? lbytes : 1);
        int64_t rows = d.shape[0], cols = d.shape[1];
        for (int64_t a0 = 0; a0 < rows; a0++)
            for (int64_t b = 0; b < cols; b++) memcpy(t + (size_t)(b * rows + a0) * es, local + (size_t)(a0 * cols + b) * es, es);
        free(local);
        local = t;
        strides[0] = 1, strides[1] = rows;
        d.strides = strides;
    }
    d.stream = job_stream;
    tilec_ctx *ctx;
    tilec_comm *comm = NULL;
    void *in = NULL, *out = NULL, *out2 = NULL;
    tilec_status st = tilec_open(&ctx);
    if (st == TILEC_OK) st = tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0);
    if (st == TILEC_OK) st = tilec_comm_init(ctx, j->nranks, r, &j->id, &comm);
    if (st == TILEC_OK) st = tilec_mem_alloc(ctx, lbytes ? lbytes : 1, &in);
    if (st == TILEC_OK) st = tilec_mem_upload(ctx, in, local, lbytes);
    size_t b1 = r == j->small_rank ? (size_t)kept_elems(&d, j->sd, j->ext[r]) * j->b1 / (size_t)kept_elems(&j->whole, j->sd, total)
                                   : j->b1;
    if (st == TILEC_OK) st = tilec_mem_alloc(ctx, b1 ? b1 : 1, &out);
    if (st == TILEC_OK && j->b2) st = tilec_mem_alloc(ctx, j->b2, &out2);
    if (st == TILEC_OK) {
        d.out2 = out2;
        st = tilec_reduce_sharded(ctx, comm, &d, j->sd, in, j->out_is_in ? in : out);
        if (st != TILEC_OK) note(j, r, ctx);
    } else {
        note(j, r, ctx);
    }
    free(local);
    local = NULL;
    j->res[r] = calloc(1, j->b1 + j->b2 + 1);
    if (st == TILEC_OK) st = tilec_mem_download(ctx, j->res[r], j->out_is_in ? in : out, j->b1);
    if (st == TILEC_OK && j->b2) st = tilec_mem_download(ctx, j->res[r] + j->b1, out2, j->b2);
    j->st[r] = st;
    tilec_comm_free(comm);
    if (ctx) tilec_mem_free(ctx, out2), tilec_mem_free(ctx, out), tilec_mem_free(ctx, in);
    tilec_close(ctx);
    return NULL;
}

/* Runs the job's ranks as threads and waits for them all. */
static void run_job(job *j) {
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(tilec_comm_unique_id(ctx, &j->id), TILEC_OK);
    tilec_close(ctx);
    int64_t total = 0;
    for (int r = 0; r < j->nranks; r++) total += j->ext[r];
    assert_int_equal(total, j->whole.shape[j->sd]);
    j->b1 = (size_t)kept_elems(&j->whole, j->sd, total) *
            tilec_dtype_size(j->whole.widen ? tilec_dtype_wide(j->whole.dtype) : j->whole.dtype);
    j->b2 = (size_t)kept_elems(&j->whole, j->sd, total) * second_size(&j->whole);
    pthread_t t[MAXR];
    arg a[MAXR];
    for (int r = 0; r < j->nranks; r++) {
        a[r] = (arg){j, r};
        assert_int_equal(pthread_create(&t[r], NULL, rank_main, &a[r]), 0);
    }
    for (int r = 0; r < j->nranks; r++) pthread_join(t[r], NULL);
}

static void free_job(job *j) {
    for (int r = 0; r < j->nranks; r++) free(j->res[r]);
}

/* The whole tensor reduced by one context: the single-GPU bits. */
static void reduce_whole(const job *j, unsigned char *want, bool *check_ok) {
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    size_t bytes = tilec_dtype_size(j->whole.dtype);
    for (int i = 0; i < j->whole.rank; i++) bytes *= (size_t)j->whole.shape[i];
    void *in, *out, *out2 = NULL;
    assert_int_equal(tilec_mem_alloc(ctx, bytes ? bytes : 1, &in), TILEC_OK);
    assert_int_equal(tilec_mem_upload(ctx, in, j->data, bytes), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, j->b1 ? j->b1 : 1, &out), TILEC_OK);
    if (j->b2) assert_int_equal(tilec_mem_alloc(ctx, j->b2, &out2), TILEC_OK);
    tilec_reduce_desc d = j->whole;
    d.out2 = out2;
    tilec_status st = tilec_reduce(ctx, &d, in, out);
    if (st != TILEC_OK) fprintf(stderr, "%s\n", tilec_diag_text(ctx));
    assert_int_equal(st, TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, want, out, j->b1), TILEC_OK);
    if (j->b2) assert_int_equal(tilec_mem_download(ctx, want + j->b1, out2, j->b2), TILEC_OK);
    /* the sharded result against the double-precision reference */
    tilec_check_result cr;
    d.out2 = j->b2 ? j->res[0] + j->b1 : NULL;
    assert_int_equal(tilec_reduce_check(ctx, &d, j->data, NULL, j->res[0], &cr), TILEC_OK);
    *check_ok = cr.ok;
    tilec_mem_free(ctx, out2);
    tilec_mem_free(ctx, out);
    tilec_mem_free(ctx, in);
    tilec_close(ctx);
}

static uint64_t seed = 88172645463325252ull;
static uint64_t next(void) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
}

/* Random elements: floats in [-2, 2] (prod: near 1), a few ties; ints small (prod: +-1, 2). */
static unsigned char *make_data(tilec_dtype dt, tilec_op op, int64_t n) {
    size_t es = tilec_dtype_size(dt);
    unsigned char *p = malloc((size_t)n * es + 1);
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = next();
        double x = op == TILEC_OP_PROD ? 0.75 + (double)(u % 1000) / 2000.0 : (double)(int64_t)(u % 4001) / 1000.0 - 2.0;
        if (u % 7 == 0 && op != TILEC_OP_PROD) x = 1.5; /* ties */
        int64_t k = op == TILEC_OP_PROD ? (int64_t)(u % 3) - 1 + (u % 5 == 0 ? 3 : 0) : (int64_t)(u % 2001) - 1000;
        if (op == TILEC_OP_PROD && k == 0) k = 1;
        if (op == TILEC_OP_SUM && dt == TILEC_I32 && u % 3 == 0) k = (int64_t)(u % 2147483647u); /* wraps */
        if (dt == TILEC_I64 && tilec_op_compares(op)) /* near 2^62, one apart: a double would tie them */
            k = ((int64_t)1 << 62) + (int64_t)(u % 8) + (int64_t)(u % 3) * ((int64_t)1 << 40);
        float f = (float)x;
        int32_t i32 = (int32_t)k;
        uint16_t h;
        switch (dt) {
        case TILEC_F32: memcpy(p + i * 4, &f, 4); break;
        case TILEC_F64: memcpy(p + i * 8, &x, 8); break;
        case TILEC_F16: h = tilec_f16_from_double(x); memcpy(p + i * 2, &h, 2); break;
        case TILEC_BF16: h = tilec_bf16_from_double(x); memcpy(p + i * 2, &h, 2); break;
        case TILEC_I32: case TILEC_U32: memcpy(p + i * 4, &i32, 4); break;
        case TILEC_I64: memcpy(p + i * 8, &k, 8); break;
        default: break;
        }
    }
    return p;
}


/* Whether docs/runtime.md promises the single-GPU bits for this job. */
static bool same_as_whole(const job *j) {
    const tilec_reduce_desc *d = &j->whole;
    if (on_boundaries) return true;
    bool reduced = false;
    for (int i = 0; i < d->naxes; i++) reduced = reduced || (d->axes[i] < 0 ? d->axes[i] + d->rank : d->axes[i]) == j->sd;
    /* a transposed shard folds in its memory's order, not the dense tensor's */
    if (!reduced && !job_transposed) return true;
    if (j->nranks == 1 && !job_transposed && d->op != TILEC_OP_VAR && d->op != TILEC_OP_STD) return true;
    switch (d->op) {
    case TILEC_OP_MAX: case TILEC_OP_MIN: case TILEC_OP_ARGMAX: case TILEC_OP_ARGMIN: case TILEC_OP_AMINMAX: return true;
    case TILEC_OP_SUM: case TILEC_OP_PROD: case TILEC_OP_SUMSQ:
        return d->dtype == TILEC_I32 || d->dtype == TILEC_U32 || d->dtype == TILEC_I64;
    default: return false;
    }
}

/* The shards of `total` over n ranks: 0 equal (the remainder to the last), 1 unequal, 2 with
 * rank 1 empty (n >= 2). */
static void cut(int64_t total, int n, int how, int64_t *ext) {
    int64_t left = total;
    for (int r = 0; r < n; r++) {
        int64_t e = how == 0 ? total / n : how == 1 ? (total * (r + 1)) / (n * (n + 1) / 2) : (r == 1 ? 0 : total / (n - 1));
        if (r == n - 1) e = left;
        if (e > left) e = left;
        ext[r] = e;
        left -= e;
    }
}

typedef struct shape_case {
    int rank;
    int64_t shape[3];
    int naxes, axes[2];
    int sd;
} shape_case;

static const shape_case SHAPES[] = {
    {1, {37}, 1, {0}, 0},          /* a vector, sharded and reduced */
    {2, {9, 70}, 1, {1}, 1},       /* rows, sharded along the reduced dim */
    {2, {50, 6}, 1, {0}, 0},       /* columns, sharded along the reduced dim */
    {3, {4, 5, 6}, 2, {0, 2}, 2},  /* the sharded dim is the inner of two reduced ones */
    {2, {9, 70}, 1, {1}, 0},       /* sharded along a kept dim */
    {3, {4, 10, 6}, 1, {2}, 1},    /* kept, in the middle */
};

static const tilec_op OPS[] = {TILEC_OP_SUM,    TILEC_OP_PROD,   TILEC_OP_MAX,     TILEC_OP_MIN,       TILEC_OP_SUMSQ,
                               TILEC_OP_NORM2,  TILEC_OP_MEAN,   TILEC_OP_ARGMAX,  TILEC_OP_ARGMIN,    TILEC_OP_AMINMAX,
                               TILEC_OP_LOGSUMEXP, TILEC_OP_VAR, TILEC_OP_STD};


static void one(tilec_op op, tilec_dtype dt, const shape_case *s, int n, int how, bool widen) {
    job j;
    memset(&j, 0, sizeof j);
    j.nranks = n;
    j.bad_rank = -1;
    j.small_rank = -1;
    j.whole = (tilec_reduce_desc){.op = op, .dtype = dt, .rank = s->rank, .naxes = s->naxes, .widen = widen,
                                  .correction = job_correction, .index_i32 = job_index_i32};
    int64_t elems = 1;
    for (int i = 0; i < s->rank; i++) j.whole.shape[i] = s->shape[i], elems *= s->shape[i];
    for (int i = 0; i < s->naxes; i++) j.whole.axes[i] = s->axes[i];
    j.sd = s->sd;
    cut(s->shape[s->sd], n, how, j.ext);
    if (job_ext_override >= 0) {
        int64_t left = s->shape[s->sd];
        for (int r = 0; r < n; r++) j.ext[r] = r == n - 1 ? left : job_ext_override, left -= j.ext[r];
    }
    unsigned char *data = make_data(dt, op, elems);
    j.data = data;
    run_job(&j);
    runs++;
    for (int r = 0; r < n; r++) {
        if (j.st[r] != TILEC_OK)
            fail_msg("%s %s rank %d of %d (cut %d, shape case %d): %s: %s", tilec_op_name(op), tilec_dtype_name(dt), r, n,
                     how, (int)(s - SHAPES), tilec_status_name(j.st[r]), j.msg[r]);
        if (memcmp(j.res[r], j.res[0], j.b1 + j.b2) != 0)
            fail_msg("%s %s: rank %d's bits differ from rank 0's", tilec_op_name(op), tilec_dtype_name(dt), r);
    }
    unsigned char *want = calloc(1, j.b1 + j.b2 + 1);
    bool check_ok = false;
    reduce_whole(&j, want, &check_ok);
    if (!check_ok)
        fail_msg("%s %s %d ranks (cut %d, shape case %d): outside the reference's tolerance", tilec_op_name(op),
                 tilec_dtype_name(dt), n, how, (int)(s - SHAPES));
    if (op == TILEC_OP_LOGSUMEXP && dt == TILEC_F64) /* f64's state: near the single context's, not f32's rounding */
        for (size_t i = 0; i < j.b1 / 8; i++) {
            double g, w;
            memcpy(&g, j.res[0] + i * 8, 8);
            memcpy(&w, want + i * 8, 8);
            if (!(fabs(g - w) <= 1e-13 * (1 + fabs(w))) && !(g == w) && !(isnan(g) && isnan(w)))
                fail_msg("logsumexp f64 %d ranks: output %zu is %.17g, the single context's %.17g", n, i, g, w);
        }
    if (same_as_whole(&j) && memcmp(want, j.res[0], j.b1 + j.b2) != 0)
        fail_msg("%s %s %d ranks (cut %d, shape case %d): not the single-context bits", tilec_op_name(op),
                 tilec_dtype_name(dt), n, how, (int)(s - SHAPES));
    free(want);
    free(data);
    free_job(&j);
}

static void test_every_op(void **state) {
    (void)state;
    static const tilec_dtype DTS[] = {TILEC_F32, TILEC_I32, TILEC_F16};
    for (size_t o = 0; o < sizeof OPS / sizeof OPS[0]; o++)
        for (size_t t = 0; t < sizeof DTS / sizeof DTS[0]; t++) {
            if (!tilec_op_supports(OPS[o], DTS[t], false)) continue;
            for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++)
                for (int n = 1; n <= MAXR; n++)
                    for (int how = 0; how < (n >= 2 ? 3 : 1); how++) {
                        if ((n + how + (int)s + (int)o) % 2 && n != 1 && n != MAXR) continue; /* half of 2 and 3 */
                        one(OPS[o], DTS[t], &SHAPES[s], n, how, false);
                    }
        }
    /* the wider output, f64 and bf16, a few shapes */
    one(TILEC_OP_SUM, TILEC_I32, &SHAPES[1], 3, 1, true);
    one(TILEC_OP_SUM, TILEC_F16, &SHAPES[2], 4, 2, true);
    one(TILEC_OP_SUM, TILEC_F64, &SHAPES[3], 2, 0, false);
    one(TILEC_OP_NORM2, TILEC_BF16, &SHAPES[1], 3, 0, false);
    one(TILEC_OP_MAX, TILEC_BF16, &SHAPES[3], 4, 1, false);
    one(TILEC_OP_ARGMIN, TILEC_U32, &SHAPES[2], 3, 2, false);
    one(TILEC_OP_PROD, TILEC_I64, &SHAPES[0], 4, 1, false);
    /* 64-bit values of the ops that compare (128-bit keys on each rank, the fold across them) */
    for (int s = 0; s < 4; s++) {
        one(TILEC_OP_ARGMAX, TILEC_I64, &SHAPES[s], 3, s % 3, false);
        one(TILEC_OP_ARGMIN, TILEC_I64, &SHAPES[s], 4, (s + 1) % 3, false);
        one(TILEC_OP_AMINMAX, TILEC_I64, &SHAPES[s], 2, 0, false);
        one(TILEC_OP_ARGMAX, TILEC_F64, &SHAPES[s], 3, 1, false);
        one(TILEC_OP_AMINMAX, TILEC_F64, &SHAPES[s], 4, 2, false);
        one(TILEC_OP_LOGSUMEXP, TILEC_F64, &SHAPES[s], 3, s % 3, false);
    }
    /* shards held column-major (strided views), on a stream */
    job_transposed = true;
    job_stream = (void *)0x5eed;
    for (size_t o = 0; o < sizeof OPS / sizeof OPS[0]; o++)
        for (int s = 1; s <= 2; s++)
            for (int n = 1; n <= MAXR; n += 3) one(OPS[o], TILEC_F32, &SHAPES[s == 1 ? 1 : 4], n, n % 3, false);
    job_transposed = false;
    job_stream = NULL;
    /* i32 indices, re-based; var with the population's divisor, and with n - c below 0 */
    job_index_i32 = true;
    one(TILEC_OP_ARGMAX, TILEC_F32, &SHAPES[3], 3, 1, false);
    one(TILEC_OP_ARGMIN, TILEC_I32, &SHAPES[1], 4, 2, false);
    job_index_i32 = false;
    static const int64_t zero = 0, many = 1000;
    job_correction = &zero;
    one(TILEC_OP_VAR, TILEC_F32, &SHAPES[1], 3, 1, false);
    one(TILEC_OP_STD, TILEC_BF16, &SHAPES[3], 4, 2, false);
    job_correction = &many;
    one(TILEC_OP_VAR, TILEC_F64, &SHAPES[2], 2, 0, false);
    job_correction = NULL;
}

/* Shards of runs that hold 2^k pieces of the fold order each (W = 1024 elements of 2- and
 * 4-byte types, 512 of 8-byte ones; docs/runtime.md "Fold order"), the last one shorter,
 * the runs of at most 4096 pieces: the float folds give the single-context bits too. */
static void test_boundaries(void **state) {
    (void)state;
    static const shape_case B[] = {
        {1, {4 * 2048}, 1, {0}, 0},           /* a vector, 2 pieces a rank */
        {2, {3, 3 * 4096 + 700}, 1, {1}, 1},  /* rows; the last shard shorter */
        {3, {2, 4, 2048}, 2, {1, 2}, 1},      /* two reduced dims, sharded on the outer */
    };
    static const tilec_op O[] = {TILEC_OP_SUM, TILEC_OP_PROD, TILEC_OP_SUMSQ, TILEC_OP_MEAN, TILEC_OP_NORM2};
    static const tilec_dtype T[] = {TILEC_F32, TILEC_F16, TILEC_F64};
    on_boundaries = true;
    for (size_t s = 0; s < sizeof B / sizeof B[0]; s++)
        for (size_t o = 0; o < sizeof O / sizeof O[0]; o++)
            for (size_t t = 0; t < sizeof T / sizeof T[0]; t++) {
                if (!tilec_op_supports(O[o], T[t], false)) continue;
                job_ext_override = s == 1 ? 4096 : -1;
                one(O[o], T[t], &B[s], 4, 0, false);
                job_ext_override = -1;
            }
    on_boundaries = false;
}

/* A kept shard_dim takes the ops a reduced one does not, with the single-context bits. */
static void test_kept_every_op(void **state) {
    (void)state;
    static const tilec_op MORE[] = {TILEC_OP_AMINMAX, TILEC_OP_LOGSUMEXP, TILEC_OP_VAR, TILEC_OP_STD};
    for (size_t o = 0; o < sizeof MORE / sizeof MORE[0]; o++)
        for (int n = 1; n <= MAXR; n++) {
            one(MORE[o], TILEC_F32, &SHAPES[4], n, n % 3, false);
            one(MORE[o], TILEC_F32, &SHAPES[5], n, 0, false);
        }
}

/* i32 sums (wrapping) and maxima of rows sharded along the reduced dim, against exact
 * integer arithmetic done here. */
static void test_int_oracle(void **state) {
    (void)state;
    enum { ROWS = 7, COLS = 53 };
    for (int op = 0; op < 2; op++)
        for (int n = 1; n <= MAXR; n++) {
            job j;
            memset(&j, 0, sizeof j);
            j.nranks = n;
            j.bad_rank = -1;
            j.small_rank = -1;
            j.whole = (tilec_reduce_desc){.op = op ? TILEC_OP_MAX : TILEC_OP_SUM, .dtype = TILEC_I32, .rank = 2,
                                          .shape = {ROWS, COLS}, .naxes = 1, .axes = {1}};
            j.sd = 1;
            cut(COLS, n, n % 3, j.ext);
            int32_t *x = malloc(sizeof(int32_t) * ROWS * COLS);
            for (int i = 0; i < ROWS * COLS; i++) x[i] = (int32_t)(uint32_t)next();
            j.data = (unsigned char *)x;
            run_job(&j);
            for (int r = 0; r < n; r++) {
                assert_int_equal(j.st[r], TILEC_OK);
                for (int row = 0; row < ROWS; row++) {
                    uint32_t s = 0;
                    int32_t m = INT32_MIN;
                    for (int c = 0; c < COLS; c++) {
                        s += (uint32_t)x[row * COLS + c];
                        if (x[row * COLS + c] > m) m = x[row * COLS + c];
                    }
                    int32_t got;
                    memcpy(&got, j.res[r] + 4 * row, 4);
                    assert_int_equal(got, op ? m : (int32_t)s);
                }
            }
            free(x);
            free_job(&j);
        }
}

/* Values the format decides, written by hand (no reference of tilec's): rows of 12 f32
 * cut 4 + 4 + 4 over 3 ranks along the reduced dim, the special value in a middle rank's
 * shard. Row 0: a NaN at column 7 and another at 9; row 1: +inf at 2 and -inf at 10;
 * row 2: +inf at 5, the rest finite; row 3: halves 0.5 .. 6 (exact in f32), its largest
 * twice, at 10 and 11. */
static void test_special_values(void **state) {
    (void)state;
    enum { R = 4, C = 12 };
    float x[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)((i * 37) % 11) - 5.0f; /* -5 .. 5 */
    x[0 * C + 7] = NAN, x[0 * C + 9] = NAN;
    x[1 * C + 2] = INFINITY, x[1 * C + 10] = -INFINITY;
    x[2 * C + 5] = INFINITY;
    for (int c = 0; c < C; c++) x[3 * C + c] = 0.5f * (float)(c + 1);
    x[3 * C + 11] = 5.5f; /* 5.5 at 10 and 11: the first is the argmax */
    struct {
        tilec_op op;
        float want[R];
        int64_t index[R]; /* argmax / argmin; -1: no second output */
    } cases[] = {
        {TILEC_OP_MAX, {NAN, INFINITY, INFINITY, 5.5f}, {-1}},
        {TILEC_OP_MIN, {NAN, -INFINITY, -5.0f, 0.5f}, {-1}},
        {TILEC_OP_SUM, {NAN, NAN, INFINITY, 38.5f}, {-1}}, /* 0.5 + ... + 5.5 + 5.5 */
        {TILEC_OP_ARGMAX, {NAN, INFINITY, INFINITY, 5.5f}, {7, 2, 5, 10}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        job j;
        memset(&j, 0, sizeof j);
        j.nranks = 3;
        j.bad_rank = -1;
        j.small_rank = -1;
        j.whole = (tilec_reduce_desc){.op = cases[k].op, .dtype = TILEC_F32, .rank = 2, .shape = {R, C}, .naxes = 1, .axes = {1}};
        j.sd = 1;
        cut(C, 3, 0, j.ext);
        j.data = (const unsigned char *)x;
        run_job(&j);
        for (int r = 0; r < 3; r++) {
            assert_int_equal(j.st[r], TILEC_OK);
            for (int row = 0; row < R; row++) {
                float got;
                memcpy(&got, j.res[r] + 4 * row, 4);
                float want = cases[k].want[row];
                if (isnan(want) ? !isnan(got) : got != want)
                    fail_msg("%s row %d on rank %d: %g, want %g", tilec_op_name(cases[k].op), row, r, (double)got, (double)want);
                if (cases[k].index[0] >= 0) {
                    int64_t idx;
                    memcpy(&idx, j.res[r] + j.b1 + 8 * (size_t)row, 8);
                    if (idx != cases[k].index[row])
                        fail_msg("argmax row %d on rank %d: index %lld, want %lld", row, r, (long long)idx,
                                 (long long)cases[k].index[row]);
                }
            }
        }
        free_job(&j);
    }
}

/* Runs a job expected to fail on every rank, within `limit_s` seconds. */
static void expect_all_fail(job *j, double limit_s, const char *want_msg_rank0) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    run_job(j);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(s < limit_s);
    for (int r = 0; r < j->nranks; r++) {
        if (j->st[r] == TILEC_OK) fail_msg("rank %d of %d succeeded", r, j->nranks);
        assert_true(j->msg[r][0] != 0);
    }
    if (want_msg_rank0 && !strstr(j->msg[0], want_msg_rank0))
        fail_msg("rank 0's message '%s' lacks '%s'", j->msg[0], want_msg_rank0);
}

static unsigned char ZEROS[4096];

static job sum_job(int n) {
    job j;
    memset(&j, 0, sizeof j);
    j.nranks = n;
    j.bad_rank = -1;
    j.small_rank = -1;
    j.whole = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {4, 12}, .naxes = 1, .axes = {1}};
    j.sd = 1;
    cut(12, n, 0, j.ext);
    j.data = ZEROS;
    return j;
}

static void test_failures(void **state) {
    (void)state;
    /* a rank whose descriptor differs: every rank fails with INVALID_ARG */
    job j = sum_job(3);
    j.bad_rank = 2;
    expect_all_fail(&j, 5, "rank 2's shard does not fit rank 0's: its dtype differs");
    for (int r = 0; r < 3; r++) assert_int_equal(j.st[r], TILEC_ERR_INVALID_ARG);
    free_job(&j);
    /* max over an empty axis, every shard empty */
    j = sum_job(2);
    j.whole.op = TILEC_OP_MAX;
    j.whole.shape[1] = 0;
    j.ext[0] = j.ext[1] = 0;
    expect_all_fail(&j, 5, "max over an empty axis: every rank's shard of dim 1 is empty");
    free_job(&j);
    /* planted: rank 1's init fails; the others hear of it */
    setenv("FAKE_NCCL_FAIL", "init:1", 1);
    j = sum_job(3);
    expect_all_fail(&j, 5, "ncclCommInitRank (rank 0 of 3) failed: remote process exited");
    free_job(&j);
    /* planted: rank 2's second all-gather (the partials) fails */
    setenv("FAKE_NCCL_FAIL", "gather:2:2", 1);
    j = sum_job(4);
    expect_all_fail(&j, 5, "ncclAllGather on rank 0 of 4 failed");
    for (int r = 0; r < 4; r++) assert_int_equal(j.st[r], TILEC_ERR_IO);
    free_job(&j);
    /* planted: rank 1 never makes its first all-gather; the others time out (300 ms) */
    setenv("FAKE_NCCL_FAIL", "absent:1:1", 1);
    setenv("FAKE_NCCL_TIMEOUT_MS", "300", 1);
    j = sum_job(3);
    expect_all_fail(&j, 5, "ncclAllGather on rank 0 of 3 failed"); /* the first to time out: internal, the rest remote */
    free_job(&j);
    unsetenv("FAKE_NCCL_FAIL");
    unsetenv("FAKE_NCCL_TIMEOUT_MS");
    /* a rank's local reduction failing (an op on a dtype it is not defined for) */
    j = sum_job(2);
    j.whole.op = TILEC_OP_NORM2;
    j.whole.dtype = TILEC_I32;
    expect_all_fail(&j, 5, "rank 0 of 2: norm2 is not defined for i32");
    free_job(&j);
    /* a negative correction */
    static const int64_t minus = -1;
    j = sum_job(2);
    j.whole.op = TILEC_OP_VAR;
    j.whole.correction = &minus;
    expect_all_fail(&j, 5, "rank 0 of 2: correction -1 is negative");
    free_job(&j);
    /* a kept shard_dim: rank 0's output holds its own slice only (8 bytes), where the whole
     * output (16 bytes) goes: every rank fails, and none writes (it used to write past the
     * block) */
    j = sum_job(2);
    j.sd = 0;
    cut(4, 2, 0, j.ext);
    j.small_rank = 0;
    expect_all_fail(&j, 5, NULL);
    assert_string_equal(j.msg[0], "rank 0 of 2: the output (the whole tensor's reduction: 16 bytes) reaches 8 bytes past "
                                  "the end of an allocation of 8 bytes; check its shape, strides and pointer");
    assert_string_equal(j.msg[1], "rank 0 of 2 failed (TILEC_ERR_INVALID_ARG): no rank has a result");
    for (int r = 0; r < 2; r++) assert_int_equal(j.st[r], TILEC_ERR_INVALID_ARG);
    free_job(&j);
    /* the input given as the output: refused as tilec_reduce refuses it (it used to
     * overwrite the input), along a reduced and a kept shard_dim */
    for (int kept = 0; kept < 2; kept++) {
        j = sum_job(2);
        if (kept) j.sd = 0, cut(4, 2, 0, j.ext);
        j.out_is_in = true;
        expect_all_fail(&j, 5, NULL);
        for (int r = 0; r < 2; r++) {
            char want[100];
            snprintf(want, sizeof want, "rank %d of 2: the input and the output overlap; reduce into another buffer", r);
            assert_string_equal(j.msg[r], want);
            assert_int_equal(j.st[r], TILEC_ERR_INVALID_ARG);
        }
        free_job(&j);
    }
    /* and the group works again afterwards */
    j = sum_job(2);
    run_job(&j);
    assert_int_equal(j.st[0], TILEC_OK);
    assert_int_equal(j.st[1], TILEC_OK);
    free_job(&j);
}

static void test_nccl_missing(void **state) {
    (void)state;
    const char *was = getenv("TILEC_NCCL_PATH");
    char keep[1024];
    snprintf(keep, sizeof keep, "%s", was ? was : "");
    setenv("TILEC_NCCL_PATH", "/nonexistent/libnccl.so.2", 1);
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    tilec_comm_id id;
    assert_int_equal(tilec_comm_unique_id(ctx, &id), TILEC_ERR_UNAVAILABLE);
    tilec_diag dg;
    assert_int_equal(tilec_diag_get(ctx, 0, &dg), TILEC_OK);
    assert_non_null(strstr(dg.message, "NCCL is not available: tried /nonexistent/libnccl.so.2"));
    assert_non_null(strstr(dg.message, "TILEC_NCCL_PATH"));
    tilec_comm *c = (tilec_comm *)1;
    memset(&id, 0, sizeof id);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    assert_int_equal(tilec_comm_init(ctx, 1, 0, &id, &c), TILEC_ERR_UNAVAILABLE);
    assert_null(c);
    tilec_close(ctx);
    if (keep[0]) setenv("TILEC_NCCL_PATH", keep, 1);
    else unsetenv("TILEC_NCCL_PATH");
}

/* A group on the simulator through real NCCL (here the fake built to behave like NCCL on a
 * machine without a GPU: no host-memory marker, "unhandled cuda error" from
 * ncclCommInitRank) is refused before NCCL is asked, with what to do instead. */
static void test_sim_needs_host_nccl(void **state) {
    (void)state;
    const char *real = getenv("FAKE_NCCL_REAL");
    if (!real) skip();
    setenv("TILEC_NCCL_PATH", real, 1); /* clean() puts the suite's fake back */
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    tilec_comm_id id;
    assert_int_equal(tilec_comm_unique_id(ctx, &id), TILEC_OK);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    tilec_comm *c = (tilec_comm *)1;
    assert_int_equal(tilec_comm_init(ctx, 1, 0, &id, &c), TILEC_ERR_UNAVAILABLE);
    assert_null(c);
    const char *text = tilec_diag_text(ctx);
    if (!strstr(text, "a sharded reduction on the simulator cannot go through") || !strstr(text, "own GPU") ||
        strstr(text, "cuda error"))
        fail_msg("unexpected message: %s", text);
    tilec_close(ctx);
}

/* NCCL_NVLS_ENABLE=0 is required on these machines; the fake refuses to start without it. */
static void test_nvls_required(void **state) {
    (void)state;
    unsetenv("NCCL_NVLS_ENABLE");
    job j = sum_job(2);
    expect_all_fail(&j, 5, "invalid usage (fake NCCL: NCCL_NVLS_ENABLE=0 must be set");
    free_job(&j);
    setenv("NCCL_NVLS_ENABLE", "0", 1);
}

static void test_bad_arguments(void **state) {
    (void)state;
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    tilec_comm_id id;
    assert_int_equal(tilec_comm_unique_id(ctx, &id), TILEC_OK);
    tilec_comm *c = NULL;
    assert_int_equal(tilec_comm_init(ctx, 2, 2, &id, &c), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_comm_init(ctx, 0, 0, &id, &c), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_comm_init(ctx, 1, 0, NULL, &c), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_comm_init(ctx, 1, 0, &id, &c), TILEC_OK);
    assert_int_equal(tilec_comm_rank(c), 0);
    assert_int_equal(tilec_comm_size(c), 1);
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {4}, .naxes = 1, .axes = {0}};
    void *in, *out;
    assert_int_equal(tilec_mem_alloc(ctx, 16, &in), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 16, &out), TILEC_OK);
    assert_int_equal(tilec_mem_upload(ctx, in, ZEROS, 16), TILEC_OK);
    assert_int_equal(tilec_reduce_sharded(ctx, NULL, &d, 0, in, out), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_reduce_sharded(ctx, c, NULL, 0, in, out), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_reduce_sharded(ctx, c, &d, 1, in, out), TILEC_ERR_INVALID_ARG);
    d.accumulate = true;
    assert_int_equal(tilec_reduce_sharded(ctx, c, &d, 0, in, out), TILEC_ERR_INVALID_ARG);
    d.accumulate = false;
    d.out2 = out;
    assert_int_equal(tilec_reduce_sharded(ctx, c, &d, 0, in, out), TILEC_ERR_INVALID_ARG);
    d.out2 = NULL;
    d.op = TILEC_OP_ARGMAX;
    assert_int_equal(tilec_reduce_sharded(ctx, c, &d, 0, in, out), TILEC_ERR_INVALID_ARG);
    tilec_diag dg;
    assert_int_equal(tilec_diag_get(ctx, 0, &dg), TILEC_OK);
    assert_string_equal(dg.message, "rank 0 of 1: argmax has two outputs: give local->out2 for the second");
    /* the outputs against the input, as tilec_reduce checks them */
    void *out2;
    assert_int_equal(tilec_mem_alloc(ctx, 8, &out2), TILEC_OK);
    d.out2 = in;
    assert_int_equal(tilec_reduce_sharded(ctx, c, &d, 0, in, out), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_diag_get(ctx, 0, &dg), TILEC_OK);
    assert_string_equal(dg.message, "rank 0 of 1: out2 overlaps the input; give the second output a buffer of its own");
    d.out2 = out2;
    assert_int_equal(tilec_reduce_sharded(ctx, c, &d, 0, in, (char *)in + 12), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_diag_get(ctx, 0, &dg), TILEC_OK);
    assert_string_equal(dg.message, "rank 0 of 1: the input and the output overlap; reduce into another buffer");
    assert_int_equal(tilec_reduce_sharded(ctx, c, &d, 0, in, (char *)out + 14), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_diag_get(ctx, 0, &dg), TILEC_OK);
    assert_string_equal(dg.message, "rank 0 of 1: the output (the whole tensor's reduction: 4 bytes) reaches 2 bytes past the "
                                    "end of an allocation of 16 bytes; check its shape, strides and pointer");
    assert_int_equal(tilec_reduce_sharded(ctx, c, &d, 0, in, out), TILEC_OK);
    d.out2 = NULL;
    tilec_mem_free(ctx, out2);
    d.op = TILEC_OP_SUM;
    assert_int_equal(tilec_reduce_sharded(ctx, c, &d, -1, in, out), TILEC_OK);
    tilec_comm_free(c);
    tilec_comm_free(NULL);
    tilec_mem_free(ctx, out);
    tilec_mem_free(ctx, in);
    tilec_close(ctx);
}

/* var and std's correction given as NULL on some ranks and as a pointer to 1 on others:
 * the same divisor (NULL means 1), so the ranks agree (they used to be refused as
 * different) and the result is the whole tensor's with correction 1. */
static void test_correction_null_is_one(void **state) {
    (void)state;
    static const int64_t one_ = 1;
    job_correction = &one_;
    job_correction_null_on_even = true;
    one(TILEC_OP_VAR, TILEC_F32, &SHAPES[1], 3, 1, false);
    one(TILEC_OP_STD, TILEC_F64, &SHAPES[4], 2, 0, false);
}

/* Each test starts with no planted failure and NVLS off, whatever the last one left. */
/* TILEC_NCCL_PATH as the suite set it (the fake NCCL), put back before each test */
static char suite_nccl[1024];

static int clean(void **state) {
    (void)state;
    if (suite_nccl[0]) setenv("TILEC_NCCL_PATH", suite_nccl, 1); /* a test that failed may have changed it */
    unsetenv("FAKE_NCCL_FAIL");
    unsetenv("FAKE_NCCL_TIMEOUT_MS");
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    on_boundaries = false;
    job_ext_override = -1;
    job_correction = NULL;
    job_index_i32 = false;
    job_transposed = false;
    job_stream = NULL;
    job_correction_null_on_even = false;
    return 0;
}

int main(void) {
    setenv("TILEC_CACHE", "off", 1);
    const char *nccl = getenv("TILEC_NCCL_PATH");
    snprintf(suite_nccl, sizeof suite_nccl, "%s", nccl ? nccl : "");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_bad_arguments, clean), cmocka_unit_test_setup(test_nccl_missing, clean),
        cmocka_unit_test_setup(test_sim_needs_host_nccl, clean),
        cmocka_unit_test_setup(test_nvls_required, clean), cmocka_unit_test_setup(test_failures, clean),
        cmocka_unit_test_setup(test_int_oracle, clean),    cmocka_unit_test_setup(test_special_values, clean),    cmocka_unit_test_setup(test_kept_every_op, clean),
        cmocka_unit_test_setup(test_boundaries, clean),    cmocka_unit_test_setup(test_correction_null_is_one, clean),
        cmocka_unit_test_setup(test_every_op, clean),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    printf("%d sharded reductions run\n", runs);
    return rc;
}
