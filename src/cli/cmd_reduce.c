/*
 * cmd_reduce.c — `tilec reduce`: a JIT reduction of random data through the same public
 * API a host program uses (tilec_runtime_open, tilec_mem_*, tilec_reduce), with its plan,
 * its time and its effective bandwidth (input + output bytes over the time of one call).
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int parse_list(const char *what, const char *v, char sep, int64_t *out, int max, int *n) {
    *n = 0;
    const char *p = v;
    while (*p) {
        if (*n == max) return usage_error("reduce", "%s has too many values", what);
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (end == p || errno || (*end && *end != sep)) return usage_error("reduce", "bad %s", what);
        out[(*n)++] = x;
        p = *end ? end + 1 : end;
    }
    return *n ? EXIT_OK : usage_error("reduce", "empty %s", what);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int cmd_reduce(int argc, char **argv) {
    tilec_reduce_desc d = {.op = TILEC_OP_COUNT, .dtype = TILEC_DTYPE_COUNT, .naxes = 1, .axes = {-1}};
    tilec_backend backend = TILEC_BACKEND_AUTO;
    bool check = false, explain = false, shape_given = false;
    long repeat = 10;
    uint64_t seed = 1, budget = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t vals[TILEC_MAX_RANK];
        int n, rc;
        if (!strcmp(a, "--check")) { check = true; continue; }
        if (!strcmp(a, "--explain")) { explain = true; continue; }
        if (!strcmp(a, "--accumulate")) { d.accumulate = true; continue; }
        if (!v) return usage_error("reduce", "unknown option or missing value: '%s'", a);
        i++;
        if (!strcmp(a, "--op")) {
            d.op = !strcmp(v, "sum") ? TILEC_OP_SUM : !strcmp(v, "max") ? TILEC_OP_MAX : !strcmp(v, "min") ? TILEC_OP_MIN : TILEC_OP_COUNT;
            if (d.op == TILEC_OP_COUNT) return usage_error("reduce", "--op must be sum, max or min, not '%s'", v);
        } else if (!strcmp(a, "--dtype")) {
            for (int t = 0; t < TILEC_DTYPE_COUNT; t++)
                if (!strcmp(v, tilec_dtype_name((tilec_dtype)t))) d.dtype = (tilec_dtype)t;
            if (d.dtype == TILEC_DTYPE_COUNT) return usage_error("reduce", "unknown dtype '%s'", v);
        } else if (!strcmp(a, "--shape")) {
            if ((rc = parse_list("--shape", v, 'x', vals, TILEC_MAX_RANK, &n))) return rc;
            d.rank = n;
            for (int k = 0; k < n; k++) d.shape[k] = vals[k];
            shape_given = true;
        } else if (!strcmp(a, "--axes")) {
            if ((rc = parse_list("--axes", v, ',', vals, TILEC_MAX_RANK, &n))) return rc;
            d.naxes = n;
            for (int k = 0; k < n; k++) d.axes[k] = (int)vals[k];
        } else if (!strcmp(a, "--nan")) {
            if (!strcmp(v, "ignore")) d.nan = TILEC_NAN_IGNORE;
            else if (strcmp(v, "propagate")) return usage_error("reduce", "--nan must be propagate or ignore, not '%s'", v);
        } else if (!strcmp(a, "--backend")) {
            if (!strcmp(v, "auto")) backend = TILEC_BACKEND_AUTO;
            else if (!strcmp(v, "cuda")) backend = TILEC_BACKEND_CUDA;
            else if (!strcmp(v, "hip")) backend = TILEC_BACKEND_HIP;
            else if (!strcmp(v, "sim")) backend = TILEC_BACKEND_SIM;
            else return usage_error("reduce", "unknown backend '%s'", v);
        } else if (!strcmp(a, "--repeat")) {
            repeat = strtol(v, NULL, 10);
            if (repeat < 1) return usage_error("reduce", "--repeat takes a positive count, not '%s'", v);
        } else if (!strcmp(a, "--seed")) {
            seed = strtoull(v, NULL, 10);
        } else if (!strcmp(a, "--sim-budget")) {
            if ((rc = parse_sim_budget("reduce", v, &budget))) return rc;
        } else {
            return usage_error("reduce", "unknown option '%s'", a);
        }
    }
    if (d.op == TILEC_OP_COUNT || d.dtype == TILEC_DTYPE_COUNT || !shape_given)
        return usage_error("reduce", "%s--op, --dtype and --shape are required", "");
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) return EXIT_BAD_INPUT;
    tilec_set_sim_budget(ctx, budget);
    int rc = EXIT_OK;
    tilec_status st = tilec_runtime_open(ctx, backend, 0);
    if (st != TILEC_OK) {
        fputs(tilec_diag_text(ctx), stderr);
        tilec_close(ctx);
        return st == TILEC_ERR_UNAVAILABLE ? EXIT_UNAVAILABLE : EXIT_BAD_INPUT;
    }
    int64_t in_n = 1, out_n = 1;
    bool red[TILEC_MAX_RANK] = {0};
    for (int k = 0; k < d.naxes; k++) {
        int ax = d.axes[k] < 0 ? d.axes[k] + d.rank : d.axes[k];
        if (ax >= 0 && ax < d.rank) red[ax] = true;
    }
    for (int k = 0; k < d.rank; k++) {
        in_n *= d.shape[k] > 0 ? d.shape[k] : 0;
        if (!red[k]) out_n *= d.shape[k] > 0 ? d.shape[k] : 0;
    }
    size_t es = tilec_dtype_size(d.dtype), in_bytes = (size_t)in_n * es, out_bytes = (size_t)out_n * es;
    unsigned char *h_in = malloc(in_bytes + 1), *h_out = calloc(1, out_bytes + 1), *h_before = calloc(1, out_bytes + 1);
    void *d_in = NULL, *d_out = NULL;
    if (!h_in || !h_out || !h_before) { fprintf(stderr, "tilec reduce: out of memory\n"); rc = EXIT_BAD_INPUT; goto done; }
    fill_random(d.dtype, h_in, in_n, &seed);
    if (d.accumulate) fill_random(d.dtype, h_before, out_n, &seed);
    if ((st = tilec_mem_alloc(ctx, in_bytes, &d_in)) || (st = tilec_mem_alloc(ctx, out_bytes, &d_out)) ||
        (st = tilec_mem_upload(ctx, d_in, h_in, in_bytes)) || (st = tilec_mem_upload(ctx, d_out, h_before, out_bytes)))
        goto failed;
    char *plan = NULL;
    if ((st = tilec_reduce_explain(ctx, &d, &plan))) goto failed;
    if (explain) fputs(plan, stdout);
    else { /* the short form: backend, view and variant lines */
        for (char *line = strtok(plan, "\n"); line; line = strtok(NULL, "\n"))
            if (!strncmp(line, "backend", 7) || !strncmp(line, "view", 4) || !strncmp(line, "variant", 7) ||
                !strncmp(line, "the output", 10) || !strncmp(line, "a reduced", 9))
                printf("%s\n", line);
    }
    tilec_free(plan);
    /* the first call checks; the timed ones (accumulating calls would keep adding) follow */
    double t0 = now_s();
    if ((st = tilec_reduce(ctx, &d, d_in, d_out)) || (st = tilec_synchronize(ctx))) goto failed;
    double first = now_s() - t0;
    if ((st = tilec_mem_download(ctx, h_out, d_out, out_bytes))) goto failed;
    if (check) {
        tilec_check_result r;
        if ((st = tilec_reduce_check(ctx, &d, h_in, h_before, h_out, &r))) goto failed;
        if (r.exact) printf("check: exact, largest error %g: %s\n", r.max_error, r.ok ? "ok" : "MISMATCH");
        else printf("check: largest error %.3g of the magnitude (tolerance %g): %s\n", r.max_error, r.tolerance, r.ok ? "ok" : "MISMATCH");
        if (!r.ok) {
            printf("  %" PRId64 " elements differ; the first is [%" PRId64 "]: got %.9g, want %.9g\n", r.mismatches, r.first_bad, r.got, r.want);
            rc = EXIT_BAD_INPUT;
        }
    }
    t0 = now_s();
    for (long k = 0; k < repeat && !st; k++) st = tilec_reduce(ctx, &d, d_in, d_out);
    if (!st) st = tilec_synchronize(ctx);
    if (st) goto failed;
    double each = (now_s() - t0) / (double)repeat;
    printf("first call %.3f ms (planning and compiling included); then %.3f ms per call over %ld calls, %.3f GB/s\n",
           first * 1e3, each * 1e3, repeat, (double)(in_bytes + out_bytes) / each / 1e9);
    goto done;
failed:
    fputs(tilec_diag_text(ctx), stderr);
    rc = st == TILEC_ERR_UNAVAILABLE ? EXIT_UNAVAILABLE : EXIT_BAD_INPUT;
done:
    tilec_mem_free(ctx, d_in);
    tilec_mem_free(ctx, d_out);
    free(h_in);
    free(h_out);
    free(h_before);
    tilec_close(ctx);
    return rc;
}
