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
    const char *file = NULL, *dump_what = NULL, *costs = NULL;
    bool dump = false, verbose = false;
    target_opts o = {0};
    const opt_spec specs[] = {
        {"--target", NULL, OPT_VALUE, .value = &o.backend},
        {"--arch", NULL, OPT_VALUE, .value = &o.arch},
        {"--warp-size", NULL, OPT_VALUE, .value = &o.warp_size},
        {"--dump", NULL, OPT_VALUE, .value = &dump_what},
        {"--verbose", "-v", OPT_FLAG, .flag = &verbose},
        {"--costs", NULL, OPT_VALUE, .value = &costs},
    };
    int nfiles, r = parse_options("explain", argc, argv, specs, sizeof specs / sizeof specs[0], &file, 1, &nfiles);
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
    int rc = load_costs(ctx, costs);
    tilec_program *prog = rc == EXIT_OK ? load(ctx, file, false, 0) : NULL;
    if (rc == EXIT_OK) rc = EXIT_BAD_INPUT;
    if (prog) {
        char *text = NULL;
        unsigned flags = (verbose ? 0 : TILEC_EXPLAIN_SHORT) | (dump ? TILEC_EXPLAIN_LOOP : 0);
        tilec_status st = tilec_explain(prog, &t, flags, &text);
        if (text) out_printf(stdout, "%s", text);
        flush_output(stdout); /* the text before the diagnostics, on a terminal */
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

/* Where a kernel runs: the simulator on host memory (tilec_simulate: any warp size, funcs
 * too), or the context's runtime on its device memory (tilec_run_kernel: cuda, hip, or the
 * simulator behind the same calls when --backend auto found no GPU). */
typedef struct engine {
    bool device;       /* tilec_run_kernel on the runtime, else tilec_simulate */
    tilec_target t;    /* what the program is verified, lowered and checked for */
    const char *where; /* "sim", "cuda sm_90"... for the report's first line */
} engine;

/* Equal bits, or both NaN of a float dtype (which NaN an operation gives differs between
 * a GPU and a CPU); the first element that is neither in *first. */
static bool same_bits(tilec_dtype dt, const unsigned char *a, const unsigned char *b, int64_t n, int64_t *first) {
    size_t es = tilec_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *x = a + (size_t)i * es, *y = b + (size_t)i * es;
        if (memcmp(x, y, es) == 0) continue;
        double u = 0, v = 0;
        if (dt == TILEC_F32) { float f, g; memcpy(&f, x, 4); memcpy(&g, y, 4); u = f; v = g; }
        else if (dt == TILEC_F64) { memcpy(&u, x, 8); memcpy(&v, y, 8); }
        else if (dt == TILEC_F16 || dt == TILEC_BF16) {
            uint16_t h, k;
            memcpy(&h, x, 2);
            memcpy(&k, y, 2);
            u = dt == TILEC_F16 ? tilec_f16_to_double(h) : tilec_bf16_to_double(h);
            v = dt == TILEC_F16 ? tilec_f16_to_double(k) : tilec_bf16_to_double(k);
        }
        if (!(isnan(u) && isnan(v))) { *first = i; return false; } /* integers: u = v = 0, never NaN */
    }
    return true;
}

/* The kernel on the runtime's device: device buffers of args' bytes, uploaded, launched,
 * downloaded back into args. */
static tilec_status run_on_device(tilec_ctx *ctx, tilec_program *prog, tilec_kernel *k, void **args, const size_t *bytes,
                                  size_t np) {
    void **dev = calloc(np + 1, sizeof *dev);
    if (!dev) return TILEC_ERR_NOMEM;
    tilec_status st = TILEC_OK;
    for (size_t i = 0; i < np && st == TILEC_OK; i++)
        if ((st = tilec_mem_alloc(ctx, bytes[i], &dev[i])) == TILEC_OK) st = tilec_mem_upload(ctx, dev[i], args[i], bytes[i]);
    if (st == TILEC_OK) st = tilec_run_kernel(ctx, prog, tilec_kernel_name(k), dev, np, NULL);
    if (st == TILEC_OK) st = tilec_synchronize(ctx);
    for (size_t i = 0; i < np && st == TILEC_OK; i++) st = tilec_mem_download(ctx, args[i], dev[i], bytes[i]);
    if (st != TILEC_OK) fputs(tilec_diag_text(ctx), stderr); /* before the frees, each of which starts a call */
    for (size_t i = 0; i < np; i++) tilec_mem_free(ctx, dev[i]);
    free(dev);
    return st;
}

/* Runs one kernel: buffers, inputs, the run, outputs, check. */
static int run_kernel(tilec_ctx *ctx, tilec_program *prog, tilec_kernel *k, const engine *e,
                      named_path *ins, int nin, named_path *outs, int nout, uint64_t *seed, bool specials, bool check,
                      FILE *report) {
    const tilec_target *t = &e->t;
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
    if (rc == EXIT_OK && total > TILEC_SIM_MAX_MEMORY && (t->backend == TILEC_BACKEND_SIM || check)) {
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
            if (strcmp(ins[j].name, tilec_buffer_name(b)) == 0) path = ins[j].path;
        int64_t shape[TILEC_MAX_RANK];
        int rank = tilec_buffer_rank(b);
        for (int d = 0; d < rank; d++) shape[d] = tilec_buffer_extent(b, d);
        if (path && is_npy_path(path)) { /* numpy's file: its dtype and shape must be the parameter's */
            char dims[128], what[160];
            snprintf(what, sizeof what, "parameter %s", tilec_buffer_name(b));
            if (!(args[i] = read_npy_tensor("--in", path, tilec_buffer_dtype(b), shape, rank, bytes[i], what,
                                            dims_text(b, dims, sizeof dims)))) { rc = EXIT_BAD_INPUT; break; }
        } else if (path) { /* exactly the parameter's bytes: reading stops one byte past them */
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
            fill_random(tilec_buffer_dtype(b), args[i], elems_of(b), seed, specials);
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
        char clusters[48] = "";
        if (info.cluster) snprintf(clusters, sizeof clusters, " (clusters of %d)", info.cluster);
        out_printf(report, "%s %s on %s (warp size %d): grid %" PRId64 " x %d threads%s\n", tilec_kernel_is_func(k) ? "func" : "kernel",
               tilec_kernel_name(k), e->where, t->warp_size ? t->warp_size : 32, info.grid, info.threads, clusters);
        flush_output(report);
        tilec_status st = e->device ? run_on_device(ctx, prog, k, args, bytes, np) : tilec_simulate(prog, tilec_kernel_name(k), t, args);
        if (st != TILEC_OK) {
            if (!e->device) fputs(tilec_diag_text(ctx), stderr); /* run_on_device printed its own */
            rc = st == TILEC_ERR_UNAVAILABLE ? EXIT_UNAVAILABLE : EXIT_BAD_INPUT;
        }
    }
    for (size_t i = 0; i < np && rc == EXIT_OK; i++) {
        tilec_buffer *b = tilec_kernel_param_at(k, i);
        for (int j = 0; j < nout; j++)
            if (strcmp(outs[j].name, tilec_buffer_name(b)) == 0) {
                int64_t shape[TILEC_MAX_RANK];
                for (int d = 0; d < tilec_buffer_rank(b); d++) shape[d] = tilec_buffer_extent(b, d);
                int w = write_tensor(outs[j].path, tilec_buffer_dtype(b), shape, tilec_buffer_rank(b), args[i], bytes[i]);
                if (w != EXIT_OK) rc = w;
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
            if (r->exact) out_printf(report, "  check %s: exact, largest error %g: %s\n", r->param, r->max_error, r->ok ? "ok" : "MISMATCH");
            else out_printf(report, "  check %s: largest error %.3g of the magnitude (tolerance %g): %s\n", r->param, r->max_error,
                        r->tolerance, r->ok ? "ok" : "MISMATCH");
            if (!r->ok) {
                out_printf(report, "    %" PRId64 " element%s differ; the first is [%" PRId64 "]: got %.9g, want %.9g\n", r->mismatches,
                       r->mismatches == 1 ? "" : "s", r->first_bad, r->got, r->want);
                rc = EXIT_BAD_INPUT;
            }
        }
        if (n == 0 && rc == EXIT_OK) out_printf(report, "  check: the kernel writes no parameter\n");
        /* on a GPU, the format promises the simulator's bits for the same variant
         * (docs/codegen.md): the same input simulated, every written parameter compared;
         * but a math=approx kernel's exponentials are the hardware's (docs/format.md, "Math") */
        if (rc == EXIT_OK && n > 0 && t->backend != TILEC_BACKEND_SIM && tilec_kernel_math(k) == TILEC_MATH_APPROX) {
            out_printf(report, "  check: math=approx: the hardware's exponentials, not compared with the simulator's bits\n");
        } else if (rc == EXIT_OK && n > 0 && t->backend != TILEC_BACKEND_SIM) {
            void **sim = calloc(np + 1, sizeof *sim);
            tilec_target st = {TILEC_BACKEND_SIM, NULL, t->warp_size};
            for (size_t i = 0; sim && i < np; i++)
                if ((sim[i] = malloc(bytes[i] ? bytes[i] : 1))) memcpy(sim[i], before[i], bytes[i]);
            bool ready = sim != NULL;
            for (size_t i = 0; ready && i < np; i++) ready = sim[i] != NULL;
            if (!ready || tilec_simulate(prog, tilec_kernel_name(k), &st, sim) != TILEC_OK) {
                fprintf(stderr, "tilec: the simulator could not run the same input\n%s", tilec_diag_text(ctx));
                rc = EXIT_BAD_INPUT;
            }
            for (size_t i = 0; i < np && rc == EXIT_OK; i++) {
                tilec_buffer *b = tilec_kernel_param_at(k, i);
                bool written = false;
                for (size_t j = 0; j < n; j++) written = written || strcmp(res[j].param, tilec_buffer_name(b)) == 0;
                if (!written) continue;
                int64_t first = -1;
                bool same = same_bits(tilec_buffer_dtype(b), args[i], sim[i], elems_of(b), &first);
                out_printf(report, "  check %s: the simulator's bits: %s\n", tilec_buffer_name(b), same ? "same" : "DIFFERENT");
                if (!same) {
                    out_printf(report, "    the first differing element is [%" PRId64 "]\n", first);
                    rc = EXIT_BAD_INPUT;
                }
            }
            for (size_t i = 0; sim && i < np; i++) free(sim[i]);
            free(sim);
        }
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
    (*n)++;
    return EXIT_OK;
}

/* Opens the runtime for --backend auto, cuda or hip (sim: nothing to open) and makes *dev
 * the engine that runs kernels on it, named in where: a GPU, or (auto on a machine without
 * one) the simulator behind the runtime, unless --warp-size asks for another warp size
 * than the runtime's, which the simulator alone (tilec_simulate) then runs. On a GPU the
 * warp size and arch are the device's: --warp-size and --arch must name them. */
static int open_device(tilec_ctx *ctx, const tilec_target *asked, engine *dev, char *where, size_t n) {
    if (asked->backend == TILEC_BACKEND_SIM) return EXIT_OK;
    tilec_status st = tilec_runtime_open(ctx, asked->backend, 0);
    tilec_target t;
    if (st == TILEC_OK) st = tilec_runtime_target(ctx, &t);
    if (st != TILEC_OK) {
        fputs(tilec_diag_text(ctx), stderr); /* what the runtime tried: the driver, the device, NVRTC */
        return st == TILEC_ERR_UNAVAILABLE ? EXIT_UNAVAILABLE : EXIT_BAD_INPUT;
    }
    if (t.backend == TILEC_BACKEND_SIM) { /* auto found no GPU: the simulator, as before */
        if (!asked->warp_size || asked->warp_size == t.warp_size) *dev = (engine){true, t, "sim"};
        return EXIT_OK;
    }
    snprintf(where, n, "%s %s", tilec_backend_name(t.backend), t.arch);
    if (asked->warp_size && asked->warp_size != t.warp_size) {
        fprintf(stderr, "tilec run: the %s device runs warps of %d threads, not %d: --warp-size sets the simulator's "
                        "(use --backend sim)\n", where, t.warp_size, asked->warp_size);
        return EXIT_UNAVAILABLE;
    }
    if (asked->arch && strcmp(asked->arch, t.arch) != 0) {
        fprintf(stderr, "tilec run: the %s device is %s, not %s: kernels run on it are compiled for its arch "
                        "(leave out --arch, or use tilec compile --arch %s)\n", tilec_backend_name(t.backend), t.arch,
                asked->arch, asked->arch);
        return EXIT_UNAVAILABLE;
    }
    *dev = (engine){true, t, where};
    return EXIT_OK;
}

/* Whether k is run: it is --kernel's (a func named so on a GPU is refused when its turn
 * comes), or there is no --kernel and it is not a func on a GPU (a func runs there only
 * inside a kernel that calls it). */
static bool runs(const tilec_kernel *k, const char *only, bool gpu) {
    return only ? strcmp(only, tilec_kernel_name(k)) == 0 : !(gpu && tilec_kernel_is_func(k));
}

/* Before anything runs: --kernel names a kernel or func of the program, and every --in
 * and --out names a parameter of what will run (else the run would be wasted: the error
 * would come after it). EXIT_OK, or EXIT_BAD_INPUT with a message that lists the names. */
static int check_names(const tilec_program *prog, const char *file, const char *only, bool gpu, const named_path *ins,
                       int nin, const named_path *outs, int nout) {
    size_t nk = tilec_program_kernel_count(prog);
    bool any = false;
    for (size_t i = 0; i < nk; i++) any = any || !only || strcmp(only, tilec_kernel_name(tilec_program_kernel(prog, i))) == 0;
    if (!any) {
        fprintf(stderr, "tilec run: %s has no kernel or func named '%s'\n", file, only);
        return EXIT_BAD_INPUT;
    }
    for (int j = 0; j < nin + nout; j++) {
        const named_path *x = j < nin ? &ins[j] : &outs[j - nin];
        bool found = false;
        for (size_t i = 0; i < nk && !found; i++) {
            const tilec_kernel *k = tilec_program_kernel(prog, i);
            for (size_t p = 0; runs(k, only, gpu) && p < tilec_kernel_param_count(k) && !found; p++)
                found = strcmp(x->name, tilec_buffer_name(tilec_kernel_param_at(k, p))) == 0;
        }
        if (found) continue;
        char names[512] = "";
        size_t at = 0;
        for (size_t i = 0; i < nk; i++) {
            const tilec_kernel *k = tilec_program_kernel(prog, i);
            for (size_t p = 0; runs(k, only, gpu) && p < tilec_kernel_param_count(k) && at < sizeof names; p++)
                at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", at ? ", " : "",
                                       tilec_buffer_name(tilec_kernel_param_at(k, p)));
        }
        fprintf(stderr, "tilec run: %s names '%s', which is no parameter of what runs (%s); nothing was run: give one "
                        "of those names\n", j < nin ? "--in" : "--out", x->name, at ? names : "no parameters");
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

int cmd_run(int argc, char **argv) {
    const char *file = NULL, *only = NULL, *seed_text = NULL, *budget_text = NULL;
    target_opts o = {0};
    named_path ins[MAX_FILES], outs[MAX_FILES];
    int nin = 0, nout = 0, rc = EXIT_OK;
    uint64_t seed = 1;
    bool check = false, specials = false;
    named_list in_list = {ins, &nin}, out_list = {outs, &nout};
    const opt_spec specs[] = {
        {"--backend", NULL, OPT_VALUE, .value = &o.backend},
        {"--arch", NULL, OPT_VALUE, .value = &o.arch},
        {"--warp-size", NULL, OPT_VALUE, .value = &o.warp_size},
        {"--check", NULL, OPT_FLAG, .flag = &check},
        {"--specials", NULL, OPT_FLAG, .flag = &specials},
        {"--in", NULL, OPT_REPEAT, .each = named_option, .arg = &in_list},
        {"--out", NULL, OPT_REPEAT, .each = named_option, .arg = &out_list},
        {"--kernel", NULL, OPT_VALUE, .value = &only},
        {"--seed", NULL, OPT_VALUE, .value = &seed_text},
        {"--sim-budget", NULL, OPT_VALUE, .value = &budget_text},
    };
    int nfiles;
    rc = parse_options("run", argc, argv, specs, sizeof specs / sizeof specs[0], &file, 1, &nfiles);
    if (rc == EXIT_OK && !file) rc = usage_error("run", "%sno FILE given", "");
    if (rc == EXIT_OK) { /* no --out overwrites FILE, another parameter's --in file or another --out */
        named_file read[MAX_FILES + 1] = {{"FILE", NULL, file, NULL}}, written[MAX_FILES];
        for (int j = 0; j < nin; j++) read[j + 1] = (named_file){"--in", ins[j].name, ins[j].path, ins[j].name};
        for (int j = 0; j < nout; j++) written[j] = (named_file){"--out", outs[j].name, outs[j].path, outs[j].name};
        rc = check_outputs("run", written, nout, read, nin + 1);
    }
    for (int j = 0; rc == EXIT_OK && j < nout; j++)
        if (writes_terminal(outs[j].path)) {
            fprintf(stderr, "tilec run: will not write --out %s's raw bytes to a terminal; use --out %s=FILE or redirect "
                            "standard output (> FILE)\n", outs[j].name, outs[j].name);
            rc = EXIT_USAGE;
        }
    /* raw bytes on standard output are all that goes there: the report goes to stderr */
    FILE *report = stdout;
    for (int j = 0; j < nout; j++)
        if (writes_stdout(outs[j].path)) report = stderr;
    tilec_target t = {TILEC_BACKEND_AUTO, NULL, 0};
    if (rc == EXIT_OK) rc = target_of("run", "--backend", &o, &t);
    if (rc == EXIT_OK && seed_text) rc = parse_uint("run", "--seed", seed_text, UINT64_MAX, &seed);
    uint64_t budget = 0;
    if (rc == EXIT_OK && budget_text) rc = parse_sim_budget("run", budget_text, &budget);
    tilec_ctx *ctx = NULL;
    tilec_program *prog = NULL;
    if (rc == EXIT_OK && tilec_open(&ctx) != TILEC_OK) rc = EXIT_BAD_INPUT;
    if (rc == EXIT_OK) tilec_set_sim_budget(ctx, budget);
    engine host = {false, t, "sim"}, dev = host; /* host: the simulator, as --backend sim */
    host.t.backend = TILEC_BACKEND_SIM;
    char where[64] = "sim";
    if (rc == EXIT_OK) rc = open_device(ctx, &t, &dev, where, sizeof where);
    if (rc == EXIT_OK && !(prog = load(ctx, file, false, 0))) rc = EXIT_BAD_INPUT;
    if (rc == EXIT_OK) rc = check_names(prog, file, only, dev.device && dev.t.backend != TILEC_BACKEND_SIM, ins, nin, outs, nout);
    for (size_t i = 0; rc == EXIT_OK && i < tilec_program_kernel_count(prog); i++) {
        tilec_kernel *k = tilec_program_kernel(prog, i);
        if (only && strcmp(only, tilec_kernel_name(k)) != 0) continue;
        /* a func is not launched by itself: the simulator runs it as a one-CTA kernel, a
         * GPU only inside a kernel that calls it */
        bool is_func = tilec_kernel_is_func(k), gpu = dev.device && dev.t.backend != TILEC_BACKEND_SIM;
        if (is_func && gpu) { /* named with --kernel: an error; else a note, and the kernels run */
            out_printf(only ? stderr : report, "%sfunc %s: not run on %s: a func runs inside a kernel that calls it "
                    "(--backend sim simulates it as a one-CTA kernel)\n", only ? "tilec run: " : "", tilec_kernel_name(k), where);
            if (only) rc = EXIT_BAD_INPUT;
            continue;
        }
        rc = run_kernel(ctx, prog, k, dev.device && !is_func ? &dev : &host, ins, nin, outs, nout, &seed, specials, check, report);
    }
    for (int j = 0; j < nin; j++) free((char *)ins[j].name);
    for (int j = 0; j < nout; j++) free((char *)outs[j].name);
    tilec_program_free(prog);
    tilec_close(ctx);
    return rc;
}
