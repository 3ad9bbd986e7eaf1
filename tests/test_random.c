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

#include "programs.h"

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

/* Whole-tensor reductions (grid scope), as tilec_reduce plans them: every variant. */
static void test_random_grid_programs(void **state) {
    (void)state;
    uint64_t s = 77;
    char src[1024];
    int split = 0;
    for (int i = 0; i < 400; i++) {
        make_grid_program(&s, src, sizeof src, i % 10 == 0);
        for (int ws = 32; ws <= 64; ws *= 2) {
            sim_case_result r = run_on_sim(src, ws, (uint64_t)i, true, NULL);
            if (r.status != TILEC_OK || !r.ok)
                fail_msg("grid program %d, warp size %d, status %s:\n%s\n--- program ---\n%s", i, ws,
                         tilec_status_name(r.status), r.why, src);
        }
        split += strstr(src, "16") != NULL || strstr(src, "1048579") != NULL;
    }
    assert_true(split > 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_programs), cmocka_unit_test(test_random_grid_programs)};
    return cmocka_run_group_tests_name("random programs", tests, NULL, NULL);
}
