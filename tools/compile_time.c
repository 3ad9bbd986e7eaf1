/*
 * compile_time.c — how long NVRTC takes to compile the kernels tilec_reduce generates, on
 * this machine, no GPU needed: the JIT's first call of a new shape is this compile plus
 * planning (under a millisecond) and loading (about 0.1 ms on the GPU).
 *
 *   compile_time [ARCH]      (default sm_90) prints the first compile in the process
 *                            (NVRTC loading included) and the median of 10 more, per kernel
 *
 * Exit 0, or 3 when NVRTC is not installed here.
 */
#include <tilec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    tilec_target t = {TILEC_BACKEND_CUDA, argc > 1 ? argv[1] : "sm_90", 32};
    /* the one-statement programs tilec_reduce builds: a whole array, short and long rows,
     * columns */
    static const char *const programs[] = {
        "kernel tilec_reduce(A: f32[67108864] global, B: f32[1] global) threads=256 {\n  grid.max(B, A, axes=(0))\n}\n",
        "kernel tilec_reduce(A: f32[4096, 1003] global, B: f32[4096] global) threads=256 {\n  grid.max(B, A, axes=(1))\n}\n",
        "kernel tilec_reduce(A: f32[1048576, 32] global, B: f32[1048576] global) threads=256 {\n  grid.sum(B, A, axes=(1))\n}\n",
        "kernel tilec_reduce(A: f32[16384, 4096] global, B: f32[16384] global) threads=256 {\n  grid.sum(B, A, axes=(1))\n}\n",
        "kernel tilec_reduce(A: bf16[8192, 8192] global, B: bf16[8192] global) threads=256 {\n  grid.sum(B, A, axes=(0))\n}\n",
    };
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) return 1;
    int rc = 0;
    for (size_t i = 0; i < sizeof programs / sizeof programs[0] && rc == 0; i++) {
        tilec_program *p;
        if (tilec_parse(ctx, "compile_time", programs[i], strlen(programs[i]), &p) != TILEC_OK) return 1;
        double ms[11];
        for (int r = 0; r < 11; r++) {
            void *bin = NULL;
            size_t n = 0;
            double t0 = now_ms();
            tilec_status st = tilec_compile(p, &t, &bin, &n);
            ms[r] = now_ms() - t0;
            tilec_free(bin);
            if (st != TILEC_OK) {
                fprintf(stderr, "compile_time: %s\n%s", tilec_status_name(st), tilec_diag_text(ctx));
                rc = st == TILEC_ERR_UNAVAILABLE ? 3 : 1;
                break;
            }
        }
        if (rc == 0) {
            double first = ms[0];
            qsort(ms + 1, 10, sizeof ms[0], cmp);
            const char *line = strchr(programs[i], '\n') + 3;
            printf("%s %.*s: %s %.1f ms, then %.1f ms (median of 10)\n", t.arch, (int)(strchr(line, '\n') - line), line,
                   i == 0 ? "first compile in the process (NVRTC loaded)" : "first", first, (ms[5] + ms[6]) / 2);
        }
        tilec_program_free(p);
    }
    tilec_close(ctx);
    return rc;
}
