/*
 * cmd_run.c — `tilec explain` and `tilec run`.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Target options shared by explain and run. */
typedef struct target_opts {
    tilec_target t;
    bool warp_given;
} target_opts;

static int parse_backend(const char *cmd, const char *v, tilec_backend *out) {
    if (strcmp(v, "auto") == 0) *out = TILEC_BACKEND_AUTO;
    else if (strcmp(v, "cuda") == 0) *out = TILEC_BACKEND_CUDA;
    else if (strcmp(v, "hip") == 0) *out = TILEC_BACKEND_HIP;
    else if (strcmp(v, "sim") == 0) *out = TILEC_BACKEND_SIM;
    else return usage_error(cmd, "unknown backend '%s' (auto, cuda, hip or sim)", v);
    return EXIT_OK;
}

/* Consumes a target option at argv[*i]; returns -1 when argv[*i] is not one. */
static int target_option(const char *cmd, int argc, char **argv, int *i, target_opts *o, const char *flag) {
    const char *a = argv[*i];
    if (strcmp(a, flag) != 0 && strcmp(a, "--arch") != 0 && strcmp(a, "--warp-size") != 0) return -1;
    if (*i + 1 >= argc) return usage_error(cmd, "%s needs a value", a);
    const char *v = argv[++*i];
    if (strcmp(a, "--arch") == 0) { o->t.arch = v; return EXIT_OK; }
    if (strcmp(a, "--warp-size") == 0) { o->warp_given = true; return parse_warp_size(cmd, v, &o->t.warp_size); }
    return parse_backend(cmd, v, &o->t.backend);
}

int cmd_explain(int argc, char **argv) {
    const char *file = NULL;
    bool dump = false;
    target_opts o = {{TILEC_BACKEND_CUDA, NULL, 0}, false};
    for (int i = 1; i < argc; i++) {
        int r = target_option("explain", argc, argv, &i, &o, "--target");
        if (r > 0) return r;
        if (r == 0) continue;
        if (strcmp(argv[i], "--dump=loop") == 0) dump = true;
        else if (strcmp(argv[i], "--dump") == 0 && i + 1 < argc && strcmp(argv[i + 1], "loop") == 0) { dump = true; i++; }
        else if (argv[i][0] == '-' && argv[i][1]) return usage_error("explain", "unknown option '%s'", argv[i]);
        else if (file) return usage_error("explain", "one FILE only; '%s' is extra", argv[i]);
        else file = argv[i];
    }
    if (!file) return usage_error("explain", "%sno FILE given", "");
    if (o.t.backend == TILEC_BACKEND_AUTO) o.t.backend = TILEC_BACKEND_CUDA;
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) return EXIT_BAD_INPUT;
    tilec_program *prog = load(ctx, file, false, 0);
    int rc = EXIT_BAD_INPUT;
    if (prog) {
        char *text = NULL;
        tilec_status st = tilec_explain(prog, &o.t, dump, &text);
        if (text) fputs(text, stdout);
        fflush(stdout);
        if (st != TILEC_OK) fputs(tilec_diag_text(ctx), stderr);
        rc = st == TILEC_OK ? EXIT_OK : st == TILEC_ERR_INVALID_ARG ? EXIT_USAGE : EXIT_BAD_INPUT;
        tilec_free(text);
    }
    tilec_program_free(prog);
    tilec_close(ctx);
    return rc;
}

/* ---- run ----------------------------------------------------------------------------------- */

typedef struct named_path {
    const char *name, *path;
    bool used;
} named_path;

enum { MAX_FILES = 64 };

static int64_t elems_of(const tilec_buffer *b) {
    int64_t n = 1;
    for (int d = 0; d < tilec_buffer_rank(b); d++) n *= tilec_buffer_extent(b, d);
    return n;
}

static const char *dims_text(const tilec_buffer *b, char *buf, size_t n) {
    size_t at = (size_t)snprintf(buf, n, "%s[", tilec_dtype_name(tilec_buffer_dtype(b)));
    for (int d = 0; d < tilec_buffer_rank(b) && at < n; d++)
        at += (size_t)snprintf(buf + at, n - at, "%s%" PRId64, d ? ", " : "", tilec_buffer_extent(b, d));
    if (at < n) snprintf(buf + at, n - at, "]");
    return buf;
}

/* Runs one kernel: buffers, inputs, simulation, outputs, check. */
static int run_kernel(tilec_ctx *ctx, tilec_program *prog, tilec_kernel *k, const tilec_target *t,
                      named_path *ins, int nin, named_path *outs, int nout, uint64_t *seed, bool check) {
    size_t np = tilec_kernel_param_count(k);
    void **args = calloc(np + 1, sizeof *args), **before = calloc(np + 1, sizeof *before);
    size_t *bytes = calloc(np + 1, sizeof *bytes);
    int rc = args && before && bytes ? EXIT_OK : EXIT_BAD_INPUT;
    uint64_t total = 0; /* the parameters, twice (before and after), within the simulator's bound */
    for (size_t i = 0; i < np && rc == EXIT_OK && total <= TILEC_SIM_MAX_MEMORY; i++)
        total += 2 * (uint64_t)elems_of(tilec_kernel_param_at(k, i)) * tilec_dtype_size(tilec_buffer_dtype(tilec_kernel_param_at(k, i)));
    if (rc == EXIT_OK && total > TILEC_SIM_MAX_MEMORY) {
        fprintf(stderr, "tilec run: the parameters of '%s' take more than %zu MiB (twice: before and after the run); "
                        "the simulator runs at most %zu MiB (TILEC_SIM_MAX_MEMORY): use smaller buffers\n",
                tilec_kernel_name(k), (size_t)TILEC_SIM_MAX_MEMORY >> 20, (size_t)TILEC_SIM_MAX_MEMORY >> 20);
        rc = EXIT_BAD_INPUT;
    }
    for (size_t i = 0; i < np && rc == EXIT_OK; i++) {
        tilec_buffer *b = tilec_kernel_param_at(k, i);
        bytes[i] = (size_t)elems_of(b) * tilec_dtype_size(tilec_buffer_dtype(b));
        args[i] = malloc(bytes[i]);
        before[i] = malloc(bytes[i]);
        if (!args[i] || !before[i]) { fprintf(stderr, "tilec: out of memory for '%s'\n", tilec_buffer_name(b)); rc = EXIT_BAD_INPUT; break; }
        const char *path = NULL;
        for (int j = 0; j < nin; j++)
            if (strcmp(ins[j].name, tilec_buffer_name(b)) == 0) { path = ins[j].path; ins[j].used = true; }
        if (!path) {
            fill_random(tilec_buffer_dtype(b), args[i], elems_of(b), seed);
        } else {
            size_t len;
            char *data = read_file(path, &len);
            if (!data) { rc = EXIT_BAD_INPUT; break; }
            if (len != bytes[i]) {
                char dims[128];
                fprintf(stderr, "tilec: '%s' has %zu bytes, but %s is %s: %zu bytes\n", path, len,
                        tilec_buffer_name(b), dims_text(b, dims, sizeof dims), bytes[i]);
                free(data);
                rc = EXIT_BAD_INPUT;
                break;
            }
            memcpy(args[i], data, len);
            free(data);
        }
        memcpy(before[i], args[i], bytes[i]);
    }
    tilec_launch_info info = {.grid = tilec_kernel_grid(k), .threads = tilec_kernel_threads(k)};
    if (rc == EXIT_OK && tilec_launch_info_get(prog, t, tilec_kernel_name(k), &info) != TILEC_OK) {
        fputs(tilec_diag_text(ctx), stderr); /* the program does not verify or lower */
        rc = EXIT_BAD_INPUT;
    }
    if (rc == EXIT_OK) {
        printf("%s %s on sim (warp size %d): grid %" PRId64 " x %d threads\n", tilec_kernel_is_func(k) ? "func" : "kernel",
               tilec_kernel_name(k), t->warp_size ? t->warp_size : 32, info.grid, info.threads);
        fflush(stdout);
        tilec_status st = tilec_simulate(prog, tilec_kernel_name(k), t, args);
        if (st != TILEC_OK) {
            fputs(tilec_diag_text(ctx), stderr);
            rc = EXIT_BAD_INPUT;
        }
    }
    for (size_t i = 0; i < np && rc == EXIT_OK; i++) {
        tilec_buffer *b = tilec_kernel_param_at(k, i);
        for (int j = 0; j < nout; j++)
            if (strcmp(outs[j].name, tilec_buffer_name(b)) == 0) {
                outs[j].used = true;
                if (write_file(outs[j].path, args[i], bytes[i]) != EXIT_OK) rc = EXIT_BAD_INPUT;
            }
    }
    if (rc == EXIT_OK && check) {
        tilec_check_result *res = calloc(np + 1, sizeof *res);
        size_t n = 0;
        if (!res || tilec_check(prog, tilec_kernel_name(k), t, (const void *const *)before,
                                (const void *const *)args, res, &n) != TILEC_OK) {
            fprintf(stderr, "tilec: the reference could not run\n%s", tilec_diag_text(ctx));
            rc = EXIT_BAD_INPUT;
        }
        for (size_t i = 0; i < n; i++) {
            const tilec_check_result *r = &res[i];
            if (r->exact) printf("  check %s: exact, largest error %g: %s\n", r->param, r->max_error, r->ok ? "ok" : "MISMATCH");
            else printf("  check %s: largest error %.3g of the magnitude (tolerance %g): %s\n", r->param, r->max_error,
                        r->tolerance, r->ok ? "ok" : "MISMATCH");
            if (!r->ok) {
                printf("    %" PRId64 " element%s differ; the first is [%" PRId64 "]: got %.9g, want %.9g\n", r->mismatches,
                       r->mismatches == 1 ? "" : "s", r->first_bad, r->got, r->want);
                rc = EXIT_BAD_INPUT;
            }
        }
        if (n == 0) printf("  check: the kernel writes no parameter\n");
        free(res);
    }
    for (size_t i = 0; i < np; i++) {
        if (args) free(args[i]);
        if (before) free(before[i]);
    }
    free(args);
    free(before);
    free(bytes);
    return rc;
}

static int named(const char *opt, const char *v, named_path *list, int *n) {
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) return usage_error("run", "%s takes NAME=PATH", opt);
    if (*n == MAX_FILES) return usage_error("run", "more than 64 %s options", opt);
    list[*n].name = strndup(v, (size_t)(eq - v));
    list[*n].path = eq + 1;
    list[*n].used = false;
    (*n)++;
    return EXIT_OK;
}

int cmd_run(int argc, char **argv) {
    const char *file = NULL, *only = NULL;
    target_opts o = {{TILEC_BACKEND_AUTO, NULL, 0}, false};
    named_path ins[MAX_FILES], outs[MAX_FILES];
    int nin = 0, nout = 0, rc = EXIT_OK;
    uint64_t seed = 1, budget = 0;
    bool check = false;
    for (int i = 1; i < argc && rc == EXIT_OK; i++) {
        int r = target_option("run", argc, argv, &i, &o, "--backend");
        if (r >= 0) { rc = r; continue; }
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "--check") == 0) check = true;
        else if (strcmp(a, "--in") == 0 && has_value) rc = named("--in", argv[++i], ins, &nin);
        else if (strcmp(a, "--out") == 0 && has_value) rc = named("--out", argv[++i], outs, &nout);
        else if (strcmp(a, "--kernel") == 0 && has_value) only = argv[++i];
        else if (strcmp(a, "--sim-budget") == 0 && has_value) rc = parse_sim_budget("run", argv[++i], &budget);
        else if (strcmp(a, "--seed") == 0 && has_value) {
            char *end;
            errno = 0;
            seed = strtoull(argv[++i], &end, 10);
            if (errno || *end || argv[i][0] == '-') rc = usage_error("run", "--seed takes a non-negative integer, not '%s'", argv[i]);
        } else if (a[0] == '-' && a[1]) rc = usage_error("run", "unknown option or missing value: '%s'", a);
        else if (file) rc = usage_error("run", "one FILE only; '%s' is extra", a);
        else file = a;
    }
    if (rc == EXIT_OK && !file) rc = usage_error("run", "%sno FILE given", "");
    if (rc == EXIT_OK && (o.t.backend == TILEC_BACKEND_CUDA || o.t.backend == TILEC_BACKEND_HIP)) {
        fprintf(stderr, "tilec run: the %s backend is not available: this build of tilec runs kernels on the "
                        "simulator only (use --backend sim or auto)\n", o.t.backend == TILEC_BACKEND_CUDA ? "cuda" : "hip");
        rc = EXIT_UNAVAILABLE;
    }
    if (o.t.backend == TILEC_BACKEND_AUTO) o.t.backend = TILEC_BACKEND_SIM; /* no GPU runtime in this build */
    tilec_ctx *ctx = NULL;
    tilec_program *prog = NULL;
    if (rc == EXIT_OK && tilec_open(&ctx) != TILEC_OK) rc = EXIT_BAD_INPUT;
    if (rc == EXIT_OK) tilec_set_sim_budget(ctx, budget);
    if (rc == EXIT_OK && !(prog = load(ctx, file, false, 0))) rc = EXIT_BAD_INPUT;
    bool ran = false;
    for (size_t i = 0; rc == EXIT_OK && i < tilec_program_kernel_count(prog); i++) {
        tilec_kernel *k = tilec_program_kernel(prog, i);
        if (only && strcmp(only, tilec_kernel_name(k)) != 0) continue;
        ran = true;
        rc = run_kernel(ctx, prog, k, &o.t, ins, nin, outs, nout, &seed, check);
    }
    if (rc == EXIT_OK && !ran) {
        fprintf(stderr, "tilec run: %s has no kernel or func named '%s'\n", file, only);
        rc = EXIT_BAD_INPUT;
    }
    for (int j = 0; rc == EXIT_OK && j < nin + nout; j++) {
        const named_path *x = j < nin ? &ins[j] : &outs[j - nin];
        if (!x->used) {
            fprintf(stderr, "tilec run: %s names '%s', which is no parameter of what ran\n", j < nin ? "--in" : "--out", x->name);
            rc = EXIT_BAD_INPUT;
        }
    }
    for (int j = 0; j < nin; j++) free((char *)ins[j].name);
    for (int j = 0; j < nout; j++) free((char *)outs[j].name);
    tilec_program_free(prog);
    tilec_close(ctx);
    return rc;
}
