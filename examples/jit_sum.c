/*
 * jit_sum.c — tilec as a JIT from a host program: sum the rows of a matrix in device
 * memory. Runs on a GPU when one is usable, else on tilec's CPU simulator, with the same
 * code.
 *
 *   cc jit_sum.c $(pkg-config --cflags --libs tilec) -o jit_sum && ./jit_sum
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <tilec.h>

enum { ROWS = 1000, COLS = 4099 };

#define CHECK(call)                                                                        \
    do {                                                                                   \
        tilec_status st_ = (call);                                                         \
        if (st_ != TILEC_OK) {                                                             \
            fprintf(stderr, "%s: %s\n%s", #call, tilec_status_name(st_), tilec_diag_text(ctx)); \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main(void) {
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) return 1;
    CHECK(tilec_runtime_open(ctx, TILEC_BACKEND_AUTO, 0)); /* a GPU if usable, else the simulator */

    float *host = malloc(sizeof(float) * ROWS * COLS), sums[ROWS];
    for (long long i = 0; i < (long long)ROWS * COLS; i++) host[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;

    void *in, *out;
    CHECK(tilec_mem_alloc(ctx, sizeof(float) * ROWS * COLS, &in));
    CHECK(tilec_mem_alloc(ctx, sizeof sums, &out));
    CHECK(tilec_mem_upload(ctx, in, host, sizeof(float) * ROWS * COLS));

    tilec_reduce_desc sum = {
        .op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {ROWS, COLS}, .naxes = 1, .axes = {-1},
    };
    CHECK(tilec_reduce(ctx, &sum, in, out)); /* plans, compiles and caches on the first call */
    CHECK(tilec_synchronize(ctx));
    CHECK(tilec_mem_download(ctx, sums, out, sizeof sums));

    double worst = 0; /* against a double-precision sum, relative to the magnitudes added */
    for (int r = 0; r < ROWS; r++) {
        double want = 0, mag = 0;
        for (int c = 0; c < COLS; c++) want += host[r * COLS + c], mag += fabs(host[r * COLS + c]);
        double err = fabs(sums[r] - want) / mag;
        if (err > worst) worst = err;
    }
    const char *backend = tilec_runtime_backend(ctx) == TILEC_BACKEND_SIM ? "the simulator" : "the GPU";
    printf("summed %d rows of %d floats on %s; largest error %.2g of the magnitudes: %s\n", ROWS, COLS, backend,
           worst, worst < 1e-5 ? "ok" : "WRONG");
    tilec_mem_free(ctx, in);
    tilec_mem_free(ctx, out);
    free(host);
    tilec_close(ctx);
    return worst < 1e-5 ? 0 : 1;
}
