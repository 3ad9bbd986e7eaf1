/*
 * test_random.c — programs nobody wrote by hand: a seeded generator makes valid .tile
 * kernels with random dtypes, thread counts, grids, shapes, padded layouts, slices,
 * scopes, axes, ops, accum and NaN policies. Each must verify, dispatch, run on the
 * simulator at warp sizes 32 and 64 without a finding, and match the reference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim_support.h"

static int pick(uint64_t *s, int n) { return (int)(rng_next(s) % (uint64_t)n); }

/* Appends printf output to buf at *at. */
static void put(char *buf, size_t size, size_t *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t size, size_t *at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, size - *at, fmt, ap);
    va_end(ap);
    if (n > 0) *at += (size_t)n;
}

static void dims_text(char *out, size_t n, const int *d, int rank) {
    size_t at = 0;
    for (int i = 0; i < rank; i++) at += (size_t)snprintf(out + at, n - at, "%s%d", i ? ", " : "", d[i]);
}

/* One random program. The source tile is S (rank 1..3) per instance; the reduction's
 * instance is the CTA, every warp (slices by warp_id), one chosen warp, or every thread
 * (slices by thread_id). */
static void make_program(uint64_t *s, char *buf, size_t size) {
    static const char *const dtypes[] = {"f32", "f16", "bf16", "f64", "i32", "u32", "i64"};
    static const char *const ops[] = {"sum", "max", "min"};
    static const int threads_choice[] = {1, 17, 32, 48, 64, 96, 100, 128, 160, 256};
    const char *dt = dtypes[pick(s, 7)];
    bool flt = dt[0] == 'f' || dt[0] == 'b';
    int threads = threads_choice[pick(s, 10)], grid = 1 + pick(s, 3);
    int scope = pick(s, 4); /* 0 cta, 1 warp (all, by warp_id), 2 warp[0], 3 thread (by thread_id) */
    int inst = scope == 1 ? (threads + 31) / 32 : scope == 3 ? threads : 1; /* warps counted at 32 lanes */
    int rank = 1 + pick(s, 3), d[3];
    for (int i = 0; i < rank; i++) d[i] = 1 + pick(s, scope == 3 ? 4 : i == rank - 1 ? 70 : 9);
    /* axes: a non-empty subset, sometimes written negative */
    int axes[3], naxes = 0;
    unsigned mask = 0;
    while (!mask) mask = (unsigned)pick(s, 1 << rank);
    int kept[3], nk = 0;
    for (int i = 0; i < rank; i++) {
        if (mask >> i & 1) axes[naxes++] = pick(s, 2) ? i - rank : i;
        else kept[nk++] = d[i];
    }
    if (nk == 0) kept[nk++] = 1;
    bool pad = pick(s, 2) && rank >= 2;
    bool accum = pick(s, 3) == 0, ignore = flt && pick(s, 3) == 0;
    const char *op = ops[pick(s, 3)];
    if (ignore && op[1] == 'u') op = "max";
    char sd[64], kd[64], strides[96] = "";
    dims_text(sd, sizeof sd, d, rank);
    dims_text(kd, sizeof kd, kept, nk);
    if (pad) { /* rows padded by 1 to 3 elements */
        int st[3];
        st[rank - 1] = 1;
        for (int i = rank - 2; i >= 0; i--) st[i] = st[i + 1] * d[i + 1] + (i == rank - 2 ? 1 + pick(s, 3) : 0);
        if (rank == 2) snprintf(strides, sizeof strides, " strides=(%d, %d)", st[0], st[1]);
        else snprintf(strides, sizeof strides, " strides=(%d, %d, %d)", st[0], st[1], st[2]);
    }
    size_t at = 0;
    const char *inst_dim = scope == 1 || scope == 3 ? "" : NULL;
    char lead[32] = "";
    if (inst_dim) snprintf(lead, sizeof lead, "%d, ", inst);
    put(buf, size, &at, "kernel k(A: %s[%d, %s%s] global, B: %s[%d, %s%s] global) threads=%d grid=%d {\n", dt, grid,
        lead, sd, dt, grid, lead, kd, threads, grid);
    put(buf, size, &at, "  shared S: %s[%s%s]%s\n", dt, lead, sd, inst_dim ? "" : strides);
    put(buf, size, &at, "  shared R: %s[%s%s]\n", dt, lead, kd);
    put(buf, size, &at, "  cta.copy(S, A[cta_id])\n  cta.copy(R, B[cta_id])\n  cta.sync()\n");
    const char *scope_text[] = {"cta", "warp", "warp[0]", "thread"};
    const char *id = scope == 1 ? "[warp_id]" : scope == 3 ? "[thread_id]" : "";
    put(buf, size, &at, "  %s.%s(R%s, S%s, axes=(", scope_text[scope], op, id, id);
    for (int i = 0; i < naxes; i++) put(buf, size, &at, "%s%d", i ? ", " : "", axes[i]);
    put(buf, size, &at, ")%s%s)\n", accum ? ", accum=true" : "", ignore ? ", nan=ignore" : "");
    put(buf, size, &at, "  cta.sync()\n  cta.copy(B[cta_id], R)\n}\n");
}

static void test_random_programs(void **state) {
    (void)state;
    uint64_t s = 2026;
    char src[2048];
    int ran = 0;
    for (int i = 0; i < 1500; i++) {
        make_program(&s, src, sizeof src);
        for (int ws = 32; ws <= 64; ws *= 2) {
            sim_case_result r = run_on_sim(src, ws, (uint64_t)i, true, NULL);
            if (r.status != TILEC_OK || !r.ok)
                fail_msg("program %d, warp size %d, status %s:\n%s\n--- program ---\n%s", i, ws,
                         tilec_status_name(r.status), r.why, src);
            ran++;
        }
    }
    assert_int_equal(ran, 3000);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_programs)};
    return cmocka_run_group_tests_name("random programs", tests, NULL, NULL);
}
