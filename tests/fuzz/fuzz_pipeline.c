/*
 * fuzz_pipeline.c — libFuzzer over the whole compile path of untrusted `.tile` text:
 * parse → verify (warp 32 and 64) → format → dispatch / lower (explain with the loop IR, and short)
 * → emit CUDA and HIP (wave32 and wave64). Every call must return a status, never crash,
 * leak or hang; and what it can check it does: the canonical text parses again to the
 * same text (fmt(fmt(x)) == fmt(x)). Built and run by scripts/fuzz.
 */
#include <tilec.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(int ok, const char *what, const tilec_ctx *ctx) {
    if (ok) return;
    fprintf(stderr, "fuzz_pipeline: %s\n%s", what, tilec_diag_text(ctx));
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) return 0;
    tilec_program *p = NULL;
    if (tilec_parse(ctx, "fuzz.tile", (const char *)data, size, &p) == TILEC_OK) {
        char *text = NULL, *again = NULL;
        size_t n = 0, m = 0;
        if (tilec_format(p, &text, &n) == TILEC_OK) { /* the canonical text is a fixed point */
            tilec_program *q = NULL;
            must(tilec_parse(ctx, "fmt.tile", text, n, &q) == TILEC_OK, "the canonical text does not parse", ctx);
            must(tilec_format(q, &again, &m) == TILEC_OK && m == n && memcmp(text, again, n) == 0,
                 "fmt(fmt(x)) differs from fmt(x)", ctx);
            tilec_program_free(q);
        }
        tilec_free(text);
        tilec_free(again);
        static const tilec_target targets[] = {
            {TILEC_BACKEND_CUDA, "sm_90", 32}, {TILEC_BACKEND_HIP, "gfx90a", 64}, {TILEC_BACKEND_HIP, "gfx1030", 32}};
        for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
            tilec_verify_options vo = {targets[i].warp_size};
            if (tilec_verify(p, &vo) != TILEC_OK) continue;
            char *out = NULL;
            tilec_explain(p, &targets[i], TILEC_EXPLAIN_LOOP, &out); /* the full table */
            tilec_free(out);
            out = NULL;
            tilec_explain(p, &targets[i], TILEC_EXPLAIN_SHORT, &out); /* the short form, as `tilec explain` */
            tilec_free(out);
            out = NULL;
            tilec_emit(p, &targets[i], &out, NULL);
            tilec_free(out);
        }
        tilec_program_free(p);
    }
    tilec_close(ctx);
    return 0;
}
