/*
 * consumer.c — the program of examples/meson-subproject: one call of the public API,
 * tilec_reduce on the CPU simulator, summing a small array with negatives to a known
 * value. Exits 0 when the sum is right, 1 (with the reason) otherwise.
 */
#include <stdio.h>
#include <tilec.h>

enum { N = 100 };

int main(void) {
    int32_t host[N], sum = 0;
    for (int i = 0; i < N; i++) host[i] = i % 2 ? -i : i; /* 0, -1, 2, -3, ...: 2450 - 2500 */
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) { fprintf(stderr, "consumer: tilec_open failed\n"); return 1; }
    void *in = NULL, *out = NULL;
    tilec_reduce_desc desc = {.op = TILEC_OP_SUM, .dtype = TILEC_I32, .rank = 1, .shape = {N}, .naxes = 1, .axes = {0}};
    tilec_status st = tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0);
    if (st == TILEC_OK) st = tilec_mem_alloc(ctx, sizeof host, &in);
    if (st == TILEC_OK) st = tilec_mem_alloc(ctx, sizeof sum, &out);
    if (st == TILEC_OK) st = tilec_mem_upload(ctx, in, host, sizeof host);
    if (st == TILEC_OK) st = tilec_reduce(ctx, &desc, in, out);
    if (st == TILEC_OK) st = tilec_synchronize(ctx);
    if (st == TILEC_OK) st = tilec_mem_download(ctx, &sum, out, sizeof sum);
    if (st != TILEC_OK) fprintf(stderr, "consumer: %s\n%s", tilec_status_name(st), tilec_diag_text(ctx));
    tilec_mem_free(ctx, in);
    tilec_mem_free(ctx, out);
    tilec_close(ctx);
    if (st != TILEC_OK) return 1;
    printf("consumer: tilec %s summed %d int32 on the simulator: %d (want -50): %s\n", tilec_version(), N, (int)sum,
           sum == -50 ? "ok" : "WRONG");
    return sum == -50 ? 0 : 1;
}
