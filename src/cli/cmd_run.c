/*
 * cmd_run.c — `tilec explain` and `tilec run`.
 */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Target options shared by explain and run, as given (NULL: not given). */
typedef struct target_opts {
    const char *backend; /* --target for explain, --backend for run */
    const char *arch, *warp_size;
} target_opts;

/* The target the options name; t holds the defaults. */
static int target_of(const char *cmd, const char *flag, const target_opts *o, tilec_target *t) {
    int r;
    if (o->backend && (r = parse_backend(cmd, flag, o->backend, false, &t->backend))) return r;
    if (o->warp_size && (r = parse_warp_size(cmd, o->warp_size, &t->warp_size))) return r;
    if (o->arch) t->arch = o->arch;
    return EXIT_OK;
}

int cmd_explain(int argc, char **argv) {
    const char *file = NULL, *dump_what = NULL;
    bool dump = false;
    target_opts o = {0};
    const opt_spec specs[] = {
        {"--target", NULL, OPT_VALUE, .value = &o.backend},
        {"--arch", NULL, OPT_VALUE, .value = &o.arch},
        {"--warp-size", NULL, OPT_VALUE, .value = &o.warp_size},
        {"--dump", NULL, OPT_VALUE, .value = &dump_what},
    };
    int nfiles, r = parse_options("explain", argc, argv, specs, 4, &file, 1, &nfiles);
    if (r) return r;
    if (dump_what && strcmp(dump_what, "loop") != 0) return usage_error("explain", "--dump takes 'loop', not '%s'", dump_what);
    dump = dump_what != NULL;
    if (!file) return usage_error("explain", "%sno FILE given", "");
    tilec_target t = {TILEC_BACKEND_CUDA, NULL, 0};
    r = target_of("explain", "--target", &o, &t);
    if (r) return r;
    if (t.backend == TILEC_BACKEND_AUTO) t.backend = TILEC_BACKEND_CUDA;
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) return EXIT_BAD_INPUT;
    tilec_program *prog = load(ctx, file, false, 0);
    int rc = EXIT_BAD_INPUT;
    if (prog) {
        char *text = NULL;
        tilec_status st = tilec_explain(prog, &t, dump, &text);
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
    int64_t shape[TILEC_MAX_RANK];
    int rank = tilec_buffer_rank(b);
    for (int d = 0; d < rank; d++) shape[d] = tilec_buffer_extent(b, d);
    return tensor_elements(shape, rank); /* parsing bounded it to 2^48 already */
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
    if (rc) fprintf(stderr, "tilec: out of memory\n");
    /* verify and lower first: a program that cannot run costs no memory for its buffers */
    tilec_launch_info info = {.grid = tilec_kernel_grid(k), .threads = tilec_kernel_threads(k)};
    if (rc == EXIT_OK && tilec_launch_info_get(prog, t, tilec_kernel_name(k), &info) != TILEC_OK) {
        fputs(tilec_diag_text(ctx), stderr); /* the program does not verify or lower */
        rc = EXIT_BAD_INPUT;
    }
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
        const char *path = NULL;
        for (int j = 0; j < nin; j++)
            if (strcmp(ins[j].name, tilec_buffer_name(b)) == 0) { path = ins[j].path; ins[j].used = true; }
        if (path) { /* exactly the parameter's bytes: reading stops one byte past them */
            size_t len;
            int64_t size;
            if (!(args[i] = read_input(path, bytes[i], &len, &size))) { rc = EXIT_BAD_INPUT; break; }
            if (size < 0 || (uint64_t)size != bytes[i]) {
                char dims[128], have[48];
                fprintf(stderr, "tilec: '%s' has %s bytes, but %s is %s: %zu bytes\n", path,
                        size_text(size, bytes[i], have, sizeof have), tilec_buffer_name(b), dims_text(b, dims, sizeof dims),
                        bytes[i]);
                rc = EXIT_BAD_INPUT;
                break;
            }
        } else if ((args[i] = malloc(bytes[i] ? bytes[i] : 1))) {
            fill_random(tilec_buffer_dtype(b), args[i], elems_of(b), seed);
        }
        before[i] = malloc(bytes[i] ? bytes[i] : 1);
        if (!args[i] || !before[i]) {
            fprintf(stderr, "tilec: out of memory for '%s' (%zu bytes)\n", tilec_buffer_name(b), bytes[i]);
            rc = EXIT_BAD_INPUT;
            break;
        }
        memcpy(before[i], args[i], bytes[i]);
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
                if (write_output(outs[j].path, args[i], bytes[i]) != EXIT_OK) rc = EXIT_BAD_INPUT;
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
        if (n == 0 && rc == EXIT_OK) printf("  check: the kernel writes no parameter\n");
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

/* The --in or --out list of run, for parse_options. */
typedef struct named_list {
    named_path *list;
    int *n;
} named_list;

static int named(const char *opt, const char *v, named_path *list, int *n);
static int named_option(void *arg, const char *opt, const char *v) {
    named_list *l = arg;
    return named(opt, v, l->list, l->n);
}

static int named(const char *opt, const char *v, named_path *list, int *n) {
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) return usage_error("run", "%s takes NAME=PATH", opt);
    if (*n == MAX_FILES) return usage_error("run", "more than 64 %s options", opt);
    for (int j = 0; j < *n; j++)
        if (strncmp(list[j].name, v, (size_t)(eq - v)) == 0 && !list[j].name[eq - v]) {
            fprintf(stderr, "tilec run: %s names '%s' twice; give each parameter once\n", opt, list[j].name);
            fprintf(stderr, "Try 'tilec run --help'.\n");
            return EXIT_USAGE;
        }
    if (!(list[*n].name = strndup(v, (size_t)(eq - v)))) { fprintf(stderr, "tilec: out of memory\n"); return EXIT_BAD_INPUT; }
    list[*n].path = eq + 1;
    list[*n].used = false;
    (*n)++;
    return EXIT_OK;
}

int cmd_run(int argc, char **argv) {
    const char *file = NULL, *only = NULL, *seed_text = NULL, *budget_text = NULL;
    target_opts o = {0};
    named_path ins[MAX_FILES], outs[MAX_FILES];
    int nin = 0, nout = 0, rc = EXIT_OK;
    uint64_t seed = 1;
    bool check = false;
    named_list in_list = {ins, &nin}, out_list = {outs, &nout};
    const opt_spec specs[] = {
        {"--backend", NULL, OPT_VALUE, .value = &o.backend},
        {"--arch", NULL, OPT_VALUE, .value = &o.arch},
        {"--warp-size", NULL, OPT_VALUE, .value = &o.warp_size},
        {"--check", NULL, OPT_FLAG, .flag = &check},
        {"--in", NULL, OPT_REPEAT, .each = named_option, .arg = &in_list},
        {"--out", NULL, OPT_REPEAT, .each = named_option, .arg = &out_list},
        {"--kernel", NULL, OPT_VALUE, .value = &only},
        {"--seed", NULL, OPT_VALUE, .value = &seed_text},
        {"--sim-budget", NULL, OPT_VALUE, .value = &budget_text},
    };
    int nfiles;
    rc = parse_options("run", argc, argv, specs, sizeof specs / sizeof specs[0], &file, 1, &nfiles);
    if (rc == EXIT_OK && !file) rc = usage_error("run", "%sno FILE given", "");
    for (int j = 0; rc == EXIT_OK && j < nout; j++)
        if (writes_terminal(outs[j].path)) {
            fprintf(stderr, "tilec run: will not write --out %s's raw bytes to a terminal; use --out %s=FILE or redirect "
                            "standard output (> FILE)\n", outs[j].name, outs[j].name);
            rc = EXIT_USAGE;
        }
    tilec_target t = {TILEC_BACKEND_AUTO, NULL, 0};
    if (rc == EXIT_OK) rc = target_of("run", "--backend", &o, &t);
    if (rc == EXIT_OK && seed_text) rc = parse_uint("run", "--seed", seed_text, UINT64_MAX, &seed);
    uint64_t budget = 0;
    if (rc == EXIT_OK && budget_text) rc = parse_sim_budget("run", budget_text, &budget);
    if (rc == EXIT_OK && (t.backend == TILEC_BACKEND_CUDA || t.backend == TILEC_BACKEND_HIP)) {
        fprintf(stderr, "tilec run: the %s backend is not available: this build of tilec runs kernels on the "
                        "simulator only (use --backend sim or auto)\n", tilec_backend_name(t.backend));
        rc = EXIT_UNAVAILABLE;
    }
    if (t.backend == TILEC_BACKEND_AUTO) t.backend = TILEC_BACKEND_SIM; /* no GPU runtime in this build */
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
        rc = run_kernel(ctx, prog, k, &t, ins, nin, outs, nout, &seed, check);
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
