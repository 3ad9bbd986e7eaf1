/*
 * embed.c — tilec embedded as a library: build a tile program through the C API (no
 * text), verify it, print it as .tile text, then show how a mistake is reported.
 *
 *   cc embed.c $(pkg-config --cflags --libs tilec) -o embed && ./embed
 */
#include <stdio.h>
#include <string.h>
#include <tilec.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        tilec_status st_ = (call);                                                         \
        if (st_ != TILEC_OK) {                                                             \
            fprintf(stderr, "%s failed: %s\n%s", #call, tilec_status_name(st_),            \
                    tilec_diag_text(ctx));                                                 \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main(void) {
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) return 1;

    /* kernel row_sum(A: f32[4, 8] global, B: f32[4] global) threads=32 { ... } */
    tilec_program *prog;
    tilec_kernel *k;
    tilec_buffer *A, *B, *As, *Bs;
    const int64_t tile[] = {4, 8}, rows[] = {4};
    CHECK(tilec_program_new(ctx, &prog));
    CHECK(tilec_kernel_new(prog, "row_sum", false, 32, 1, &k));
    CHECK(tilec_kernel_param(k, "A", TILEC_F32, 2, tile, TILEC_SPACE_GLOBAL, &A));
    CHECK(tilec_kernel_param(k, "B", TILEC_F32, 1, rows, TILEC_SPACE_GLOBAL, &B));
    CHECK(tilec_kernel_alloc(k, "As", TILEC_SPACE_SHARED, TILEC_F32, 2, tile, NULL, &As));
    CHECK(tilec_kernel_alloc(k, "Bs", TILEC_SPACE_SHARED, TILEC_F32, 1, rows, NULL, &Bs));

    const tilec_exec cta = {TILEC_SCOPE_CTA, -1};
    tilec_region a = tilec_region_whole(A), b = tilec_region_whole(B);
    tilec_region as = tilec_region_whole(As), bs = tilec_region_whole(Bs);
    CHECK(tilec_kernel_copy(k, cta, &as, &a));
    CHECK(tilec_kernel_sync(k, cta));
    tilec_reduce_attrs sum = tilec_reduce_attrs_default(); /* axes=(-1) */
    CHECK(tilec_kernel_reduce(k, cta, TILEC_OP_SUM, &bs, &as, &sum));
    CHECK(tilec_kernel_sync(k, cta));
    CHECK(tilec_kernel_copy(k, cta, &b, &bs));
    CHECK(tilec_verify(prog, NULL));

    char *text;
    CHECK(tilec_format(prog, &text, NULL));
    printf("%s", text);
    tilec_free(text);
    tilec_program_free(prog);

    /* A program with a mistake: the diagnostics say where and why. */
    const char *bad = "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
                      "  cta.sum(B, A, axes=(0))\n"
                      "}\n";
    tilec_status st = tilec_parse(ctx, "bad.tile", bad, strlen(bad), &prog);
    if (st == TILEC_OK) st = tilec_verify(prog, NULL);
    printf("\nverifying bad.tile gives %s:\n%s", tilec_status_name(st), tilec_diag_text(ctx));
    tilec_program_free(prog);
    tilec_close(ctx);
    return st == TILEC_ERR_VERIFY ? 0 : 1;
}
