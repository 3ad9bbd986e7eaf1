/*
 * static_loader.c — libtilec in a program linked with -static: there is no dynamic loader,
 * so NVRTC, hiprtc, NCCL and the GPU drivers cannot be loaded, and glibc's dlopen would
 * crash there. Every loader must fail with TILEC_ERR_UNAVAILABLE and say so instead, and
 * the simulator must still run (AUTO falls back to it). No cmocka: the test itself is the
 * static program.
 */
#include <tilec.h>

#include <stdio.h>
#include <string.h>

static int failures;

/* A call that must fail as unavailable, its diagnostic containing want. */
static void expect(const char *what, tilec_ctx *ctx, tilec_status st, const char *want) {
    const char *text = tilec_diag_text(ctx);
    if (st == TILEC_ERR_UNAVAILABLE && strstr(text, want) && strstr(text, "link libtilec dynamically")) {
        printf("ok   %s\n", what);
        return;
    }
    printf("FAIL %s: %s, wanted TILEC_ERR_UNAVAILABLE saying '%s'; got:\n%s\n", what, tilec_status_name(st), want, text);
    failures++;
}

int main(void) {
    static const char src[] = "kernel k(A: f32[32] global, B: f32[1] global) threads=32 {\n"
                              "  cta.sum(B, A, axes=(0))\n}\n";
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) return 1;
    tilec_comm_id id;
    expect("NCCL", ctx, tilec_comm_unique_id(ctx, &id), "NCCL is not available: this binary is linked statically");
    tilec_close(ctx);
    tilec_open(&ctx);
    expect("the CUDA driver", ctx, tilec_runtime_open(ctx, TILEC_BACKEND_CUDA, 0),
           "no CUDA driver: this binary is linked statically");
    tilec_close(ctx);
    tilec_open(&ctx);
    expect("the HIP runtime", ctx, tilec_runtime_open(ctx, TILEC_BACKEND_HIP, 0),
           "no HIP runtime: this binary is linked statically");
    tilec_close(ctx);
    tilec_open(&ctx);
    tilec_program *p = NULL;
    void *bin = NULL;
    size_t n = 0;
    if (tilec_parse(ctx, "k.tile", src, strlen(src), &p) != TILEC_OK) return 1;
    expect("NVRTC", ctx, tilec_compile(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &bin, &n),
           "NVRTC is not available: this binary is linked statically");
    expect("hiprtc", ctx, tilec_compile(p, &(tilec_target){TILEC_BACKEND_HIP, "gfx90a", 0}, &bin, &n),
           "hiprtc is not available: this binary is linked statically");
    tilec_program_free(p);
    tilec_close(ctx);
    /* the simulator needs no library: AUTO finds no GPU and runs on it */
    tilec_open(&ctx);
    tilec_status st = tilec_runtime_open(ctx, TILEC_BACKEND_AUTO, 0);
    if (st == TILEC_OK) printf("ok   AUTO opens the simulator\n");
    else printf("FAIL AUTO: %s\n%s\n", tilec_status_name(st), tilec_diag_text(ctx)), failures++;
    tilec_close(ctx);
    return failures ? 1 : 0;
}
