/*
 * main.c — the `tilec` command line, written on the public API (tilec.h) only.
 *
 * Exit codes: 0 success, 1 bad input or a failed check, 2 bad usage, 3 the requested
 * backend or compiler is not available here. Diagnostics go to stderr; results to stdout.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct command {
    const char *name;
    const char *summary;
    const char *usage; /* shown by `tilec COMMAND --help` */
    int (*run)(int argc, char **argv);
} command;

char *read_source(const char *path, size_t *len) {
    int64_t size;
    char *text = read_input(path, TILEC_MAX_SOURCE, len, &size);
    if (text && (size < 0 || size > TILEC_MAX_SOURCE)) {
        fprintf(stderr, "tilec: '%s' has more than %u MiB of .tile text; tilec reads at most %u MiB\n", path,
                TILEC_MAX_SOURCE >> 20, TILEC_MAX_SOURCE >> 20);
        free(text);
        return NULL;
    }
    return text;
}

int load_costs(tilec_ctx *ctx, const char *path) {
    if (!path) return EXIT_OK;
    if (strcmp(path, "-") == 0) {
        fprintf(stderr, "tilec: --costs takes a file (what `tilec calibrate -o FILE` wrote), not standard input\n");
        return EXIT_USAGE;
    }
    size_t len;
    int64_t size;
    char *text = read_input(path, TILEC_COSTS_MAX_BYTES, &len, &size);
    if (!text) return EXIT_BAD_INPUT;
    if (size < 0 || (uint64_t)size > len) {
        fprintf(stderr, "tilec: '%s' is not a cost model constants file: it is longer than one (%d bytes at most); give the "
                        "file `tilec calibrate` wrote\n", path, TILEC_COSTS_MAX_BYTES);
        free(text);
        return EXIT_BAD_INPUT;
    }
    tilec_status st = tilec_costs_load(ctx, path, text, len);
    free(text);
    if (st != TILEC_OK) {
        fputs(tilec_diag_text(ctx), stderr);
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

/* Parses (and, when verify is set, verifies) FILE; prints diagnostics. */
tilec_program *load(tilec_ctx *ctx, const char *path, bool verify, int warp_size) {
    size_t len;
    char *text = read_source(path, &len);
    if (!text) return NULL;
    tilec_program *prog = NULL;
    tilec_status st = tilec_parse(ctx, strcmp(path, "-") == 0 ? "<stdin>" : path, text, len, &prog);
    free(text);
    if (st == TILEC_OK && verify) {
        tilec_verify_options opts = {.warp_size = warp_size};
        st = tilec_verify(prog, &opts);
    }
    if (st != TILEC_OK) {
        const char *diags = tilec_diag_text(ctx);
        if (*diags) fputs(diags, stderr);
        else fprintf(stderr, "tilec: %s: %s\n", path, tilec_status_message(st));
        tilec_program_free(prog);
        return NULL;
    }
    return prog;
}

void print_warnings(const tilec_ctx *ctx) {
    for (size_t i = 0; i < tilec_diag_count(ctx); i++) {
        tilec_diag d;
        if (tilec_diag_get(ctx, i, &d) == TILEC_OK && d.severity == TILEC_SEV_WARNING)
            fprintf(stderr, "%s: warning: %s\n", d.file, d.message);
    }
}

int64_t tensor_elements(const int64_t *shape, int rank) {
    int64_t span = 1; /* the product of the extents other than 0, which bounds every product */
    bool empty = false;
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 0) return -1;
        if (shape[d] == 0) { empty = true; continue; }
        if (shape[d] > TILEC_MAX_ELEMENTS / span) return -1;
        span *= shape[d];
    }
    return empty ? 0 : span;
}

/* ---- random inputs (run, reduce) ---------------------------------------------------- */

/* splitmix64: a small, seedable generator whose stream is the same everywhere */
static uint64_t next_random(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The special values --specials mixes in, as bit patterns of each dtype: NaN, +inf, -inf,
 * +0, -0, the smallest subnormal and minus the largest one for floats; the extremes, 0
 * and -1 for integers. */
static const uint64_t f16_specials[] = {0x7e00, 0x7c00, 0xfc00, 0x0000, 0x8000, 0x0001, 0x83ff};
static const uint64_t bf16_specials[] = {0x7fc0, 0x7f80, 0xff80, 0x0000, 0x8000, 0x0001, 0x807f};
static const uint64_t f32_specials[] = {0x7fc00000, 0x7f800000, 0xff800000, 0x00000000, 0x80000000, 0x00000001, 0x807fffff};
static const uint64_t f64_specials[] = {0x7ff8000000000000, 0x7ff0000000000000, 0xfff0000000000000, 0,
                                        0x8000000000000000, 1, 0x800fffffffffffff};
static const uint64_t i32_specials[] = {0x80000000, 0x7fffffff, 0, 0xffffffff};
static const uint64_t u32_specials[] = {0, 0xffffffff};
static const uint64_t i64_specials[] = {0x8000000000000000, 0x7fffffffffffffff, 0, 0xffffffffffffffff};

void fill_random(tilec_dtype dt, unsigned char *p, int64_t n, uint64_t *seed, bool specials) {
    const uint64_t *table = NULL;
    size_t nspecial = 0;
#define TABLE(t) (table = t, nspecial = sizeof t / sizeof t[0])
    switch (dt) {
    case TILEC_F16: TABLE(f16_specials); break;
    case TILEC_BF16: TABLE(bf16_specials); break;
    case TILEC_F32: TABLE(f32_specials); break;
    case TILEC_F64: TABLE(f64_specials); break;
    case TILEC_I32: TABLE(i32_specials); break;
    case TILEC_U32: TABLE(u32_specials); break;
    default: TABLE(i64_specials); break;
    }
#undef TABLE
    size_t es = tilec_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next_random(seed);
        if (specials && (r & 31) == 0) { /* one element in 32: a special value, the rest as without */
            uint64_t bits = table[(r >> 5) % nspecial];
            unsigned char le[8];
            for (size_t b = 0; b < 8; b++) le[b] = (unsigned char)(bits >> (8 * b)); /* little-endian */
            memcpy(p + es * (size_t)i, le, es);
            continue;
        }
        double f = (double)(r >> 11) * 0x1p-53 * 2.0 - 1.0; /* [-1, 1) */
        int64_t v = (int64_t)(r % 201) - 100;               /* [-100, 100] */
        uint16_t h;
        float f32;
        int32_t i32;
        uint32_t u32;
        switch (dt) {
        case TILEC_F16: h = tilec_f16_from_double(f); memcpy(p + 2 * i, &h, 2); break;
        case TILEC_BF16: h = tilec_bf16_from_double(f); memcpy(p + 2 * i, &h, 2); break;
        case TILEC_F32: f32 = (float)f; memcpy(p + 4 * i, &f32, 4); break;
        case TILEC_F64: memcpy(p + 8 * i, &f, 8); break;
        case TILEC_I32: i32 = (int32_t)v; memcpy(p + 4 * i, &i32, 4); break;
        case TILEC_U32: u32 = (uint32_t)(r % 101); memcpy(p + 4 * i, &u32, 4); break;
        default: memcpy(p + 8 * i, &v, 8); break;
        }
    }
}

/* ---- check ---------------------------------------------------------------------------- */

/* The exit status of many files: the worst of them (the highest code). */
static int worst(int a, int b) { return a > b ? a : b; }

/* Whether prog lowers for one of the targets (nt of them): tilec_lower's verdict, the one
 * tilec emit gives, each target verifying the rules at its own warp size. A failure prints
 * its diagnostics when every target failed (with one target: when it failed); a program
 * some target lowers is valid. Targets that failed alike (the same diagnostics: a rule no
 * target changes) print them once; otherwise each target's come under a line naming the
 * --target that gives them. The exit status is emit's: 2 for a --target that cannot be
 * had (a warp size it does not run), else 1. */
static int check_targets(tilec_ctx *ctx, tilec_program *prog, const char *file, const tilec_target *targets,
                         int nt) {
    char *why[TILEC_BACKEND_COUNT] = {0}; /* each failed target's diagnostics */
    bool ok = false, alike = true;
    tilec_status st = TILEC_OK;
    for (int i = 0; i < nt && !ok; i++) {
        ok = (st = tilec_lower(prog, &targets[i])) == TILEC_OK;
        const char *d = tilec_diag_text(ctx);
        if (!ok && (why[i] = malloc(strlen(d) + 1))) strcpy(why[i], d);
        else if (!ok) fprintf(stderr, "tilec: out of memory\n");
        alike = alike && (!i || (why[i] && why[0] && strcmp(why[i], why[0]) == 0));
    }
    for (int i = 0; i < nt; i++) {
        if (!ok && why[i] && (!alike || i == 0)) {
            if (!alike)
                fprintf(stderr, "%s: not lowered for --target=%s:\n", strcmp(file, "-") == 0 ? "<stdin>" : file,
                        tilec_backend_name(targets[i].backend));
            fputs(why[i], stderr);
        }
        free(why[i]);
    }
    if (ok) return EXIT_OK;
    return nt == 1 && st == TILEC_ERR_INVALID_ARG ? EXIT_USAGE : EXIT_BAD_INPUT; /* a target it cannot take, as emit */
}

int cmd_check(int argc, char **argv) {
    const char *warp = NULL, *target = NULL, *arch = NULL;
    int ws = 0, r, nfiles;
    const opt_spec specs[] = {{"--warp-size", NULL, OPT_VALUE, .value = &warp},
                              {"--target", NULL, OPT_VALUE, .value = &target},
                              {"--arch", NULL, OPT_VALUE, .value = &arch}};
    const char **files = calloc((size_t)argc, sizeof *files);
    if (!files) { fprintf(stderr, "tilec: out of memory\n"); return EXIT_BAD_INPUT; }
    r = parse_options("check", argc, argv, specs, 3, files, argc, &nfiles);
    if (!r && warp) r = parse_warp_size("check", warp, &ws);
    /* the targets: the one asked for, or each GPU target at its default arch */
    tilec_target targets[TILEC_BACKEND_COUNT];
    int nt = 0;
    if (!r && target) {
        targets[nt] = (tilec_target){TILEC_BACKEND_AUTO, arch, ws};
        r = parse_backend("check", "--target", target, true, &targets[nt++].backend);
    } else if (!r && arch) {
        r = usage_error("check", "%s--arch needs --target (cuda or hip): an arch belongs to one target", "");
    } else {
        for (int b = 0; b < TILEC_BACKEND_COUNT; b++)
            if (tilec_backend_file_extension((tilec_backend)b, false))
                targets[nt++] = (tilec_target){(tilec_backend)b, NULL, ws};
    }
    if (!r && !nfiles) r = usage_error("check", "%sno FILE given", "");
    tilec_ctx *ctx = NULL;
    if (!r && tilec_open(&ctx) != TILEC_OK) { fprintf(stderr, "tilec: out of memory\n"); r = EXIT_BAD_INPUT; }
    int rc = r;
    for (int f = 0; !r && f < nfiles; f++) { /* every file, each with its own diagnostics */
        /* tilec_lower verifies the rules for each target at its warp size, as emit does
         * (HIP's gfx90a runs 64, CUDA 32); with --warp-size and no --target, every target
         * takes that one, so the rules are checked once first and their errors said once */
        tilec_program *prog = load(ctx, files[f], !target && ws, ws);
        rc = worst(rc, prog ? check_targets(ctx, prog, files[f], targets, nt) : EXIT_BAD_INPUT);
        tilec_program_free(prog);
    }
    tilec_close(ctx);
    free(files);
    return rc;
}

/* ---- fmt ------------------------------------------------------------------------------ */

/* Formats one file: to out (NULL: standard output), in place, or only checked. */
static int fmt_one(tilec_ctx *ctx, const char *file, const char *out, bool in_place, bool check) {
    size_t len;
    char *orig = read_source(file, &len);
    if (!orig) return EXIT_BAD_INPUT;
    tilec_program *prog = NULL;
    int rc = EXIT_BAD_INPUT;
    char *text = NULL;
    size_t n = 0;
    if (tilec_parse(ctx, strcmp(file, "-") == 0 ? "<stdin>" : file, orig, len, &prog) != TILEC_OK) {
        fputs(tilec_diag_text(ctx), stderr);
    } else if (tilec_format(prog, &text, &n) != TILEC_OK) {
        fprintf(stderr, "tilec: out of memory while formatting '%s'\n", file);
    } else if (check) {
        rc = n == len && memcmp(text, orig, n) == 0 ? EXIT_OK : EXIT_BAD_INPUT;
        if (rc) fprintf(stderr, "%s: not in canonical form (run 'tilec fmt -i %s')\n", file, file);
    } else if (in_place && n == len && memcmp(text, orig, n) == 0) {
        rc = EXIT_OK; /* already canonical: the file is left as it is */
    } else {
        rc = write_output(in_place ? file : out ? out : "-", text, n, false);
    }
    tilec_free(text);
    tilec_program_free(prog);
    free(orig);
    return rc;
}

int cmd_fmt(int argc, char **argv) {
    const char *out = NULL;
    bool in_place = false, check = false;
    int nfiles;
    const opt_spec specs[] = {
        {"-o", NULL, OPT_VALUE, .value = &out},
        {"--in-place", "-i", OPT_FLAG, .flag = &in_place},
        {"--check", NULL, OPT_FLAG, .flag = &check},
    };
    const char **files = calloc((size_t)argc, sizeof *files);
    if (!files) { fprintf(stderr, "tilec: out of memory\n"); return EXIT_BAD_INPUT; }
    int rc = parse_options("fmt", argc, argv, specs, 3, files, argc, &nfiles);
    if (!rc && !nfiles) rc = usage_error("fmt", "%sno FILE given", "");
    if (!rc && ((in_place && out) || (check && (in_place || out))))
        rc = usage_error("fmt", "%s-o, --in-place and --check exclude each other", "");
    if (!rc && out && nfiles > 1)
        rc = usage_error("fmt", "%s-o OUT takes one FILE; give -i to rewrite each file, or none to print them all", "");
    for (int f = 0; !rc && in_place && f < nfiles; f++)
        if (strcmp(files[f], "-") == 0) rc = usage_error("fmt", "%s--in-place needs a file, not standard input", "");
    for (int f = 0; !rc && f < nfiles; f++) /* standard input can be read once */
        if (strcmp(files[f], "-") == 0 && nfiles > 1) rc = usage_error("fmt", "%s'-' (standard input) must be the only FILE", "");
    tilec_ctx *ctx = NULL;
    if (!rc && tilec_open(&ctx) != TILEC_OK) { fprintf(stderr, "tilec: out of memory\n"); rc = EXIT_BAD_INPUT; }
    if (!rc) {
        for (int f = 0; f < nfiles; f++) rc = worst(rc, fmt_one(ctx, files[f], out, in_place, check));
    }
    tilec_close(ctx);
    free(files);
    return rc;
}

/* ---- the command table ---------------------------------------------------------------- */

static const command commands[] = {
    {"check", "parse, verify and lower .tile files; silent on success",
     "Usage: tilec check [OPTIONS] FILE...\n"
     "\n"
     "Parses and verifies each FILE (\"-\" reads standard input) against every rule of the\n"
     ".tile format (shapes, axes, dtypes, ids, scopes and barriers), then lowers it as\n"
     "'tilec emit' does: for the --target given, or else for each GPU target at its default\n"
     "arch and that arch's warp size (cuda sm_90, 32; hip gfx90a, 64), where it is valid\n"
     "when one of them lowers it. Prints nothing and exits 0 when every program is valid;\n"
     "otherwise prints each error as FILE:LINE:COL with the source line and a caret (a\n"
     "program no target lowers: each target's reasons, under a line naming it, or once when\n"
     "they are the same), goes on with the next FILE, and exits 1. With many FILEs the exit\n"
     "status is the worst of them.\n"
     "\n"
     "Options:\n"
     "  --target=cuda|hip  the verdict of 'tilec emit --target' for that target alone\n"
     "  --arch=ARCH        with --target: the arch (sm_80, sm_90, gfx90a, gfx1100...)\n"
     "  --warp-size=32|64  count warps as that many threads, for every target (default: each\n"
     "                     target's arch's)\n",
     cmd_check},
    {"fmt", "print .tile files in canonical form",
     "Usage: tilec fmt [OPTIONS] FILE...\n"
     "  or:  tilec fmt -o OUT FILE\n"
     "\n"
     "Prints each FILE (\"-\" reads standard input) in canonical form: two-space\n"
     "indentation, one space after commas, defaults left out (axes always shown), comments\n"
     "kept. fmt only parses; run 'tilec check' for the rules between statements. With many\n"
     "FILEs the exit status is the worst of them.\n"
     "\n"
     "Options:\n"
     "  -o OUT          write to OUT instead of standard output (one FILE only)\n"
     "  -i, --in-place  rewrite each FILE that is not canonical (through a temporary beside\n"
     "                  it, keeping its mode; a symlink stays one and its target is rewritten)\n"
     "  --check         write nothing; name each FILE not in canonical form and exit 1\n",
     cmd_fmt},
    {"explain", "show how each tile statement is lowered, and why",
     "Usage: tilec explain [OPTIONS] FILE\n"
     "\n"
     "For every tile statement of every kernel and func: the variant that lowers it and,\n"
     "for a reduction, the one reason it won (why:) and what it does in plain words (how:;\n"
     "for a grid statement, its launch). --verbose prints the whole table instead: the\n"
     "variants tried in priority order, each predicate's verdict (ok, or why not) and the\n"
     "one chosen (*). Exits 1 when a statement has no variant (the error has its table).\n"
     "The target is cuda sm_90 unless --target or --arch says otherwise.\n"
     "\n"
     "Options:\n"
     "  --target=cuda|hip|sim  the target (default cuda)\n"
     "  --arch=A        sm_XX for cuda (default sm_90), gfxNNN for hip (default gfx90a)\n"
     "  --warp-size=32|64  by default cuda 32, hip gfx9 64 and gfx10 or later 32, sim 32\n"
     "  -v, --verbose   every variant and every predicate's verdict, not only the winner\n"
     "  --dump=loop     also print the lowered loop IR of each kernel\n"
     "  --costs=FILE    plan with the cost model's constants of FILE ('tilec calibrate -o')\n"
     "                  instead of the defaults; the target must be the file's arch\n",
     cmd_explain},
    {"run", "run kernels on a GPU or the simulator, optionally checked against a CPU reference",
     "Usage: tilec run [OPTIONS] FILE\n"
     "\n"
     "Runs every kernel and func of FILE (or only --kernel NAME). A parameter not given\n"
     "with --in is filled from a generator seeded with --seed: floats uniform in [-1, 1),\n"
     "signed integers in [-100, 100], u32 in [0, 100]. Files are raw little-endian, dense\n"
     "row-major, in the parameter's dtype (16-bit patterns for f16 and bf16); a file of the\n"
     "wrong size is an error. A file whose name ends in .npy is numpy's format instead (its\n"
     "dtype and shape must be the parameter's; bf16 as uint16 patterns), and --out writes\n"
     "one. A func runs as a one-CTA kernel: shared parameters start with their --in\n"
     "content, local parameters give every thread that content, and --out writes thread 0's.\n"
     "\n"
     "Options:\n"
     "  --backend=auto|sim|cuda|hip  auto (default): a usable GPU, else sim; on a GPU each\n"
     "                     kernel runs on device memory (tilec_run_kernel), --check also\n"
     "                     requires the simulator's bits, and a func is not run; exit 3\n"
     "                     when the backend is not usable here\n"
     "  --arch=A           the target's arch, as for 'tilec explain'\n"
     "  --warp-size=32|64  the simulator's warp size (default 32; on a GPU: the device's)\n"
     "  --kernel=NAME      run only the kernel or func NAME\n"
     "  --in=NAME=PATH     fill parameter NAME from PATH (once per NAME)\n"
     "  --out=NAME=PATH    write parameter NAME's final content to PATH (once per NAME)\n"
     "  --seed=N           the random data's seed, 0 to 2^64-1 (default 1)\n"
     "  --check            compare every written parameter with a CPU reference computed in\n"
     "                     double precision, print the largest error, exit 1 on a mismatch\n"
     "  --specials         make one random element in 32 a special value: NaN, +-inf, +-0 or a\n"
     "                     subnormal (integers: the dtype's extremes, 0 or -1), so that --check\n"
     "                     tries them (nan=ignore, say); off by default, as a NaN or an inf in a\n"
     "                     row makes its sum NaN or inf, which would hide a wrong sum\n"
     "  --sim-budget=N     stop each kernel after N thread-steps; 0 or absent: $TILEC_SIM_BUDGET,\n"
     "                     else 3x10^10 (a few minutes); 'unlimited': no budget\n",
     cmd_run},
    {"emit", "write CUDA or HIP source",
     "Usage: tilec emit [OPTIONS] --target=cuda|hip FILE\n"
     "\n"
     "Verifies FILE, lowers every kernel and func for the target and writes self-contained\n"
     "source (no #include): FILE with the extension .cu or .hip, or OUT. When that default\n"
     "is FILE itself (prog.cu --target cuda), or OUT names FILE, nothing is written (exit\n"
     "2): give -o another file. Kernels are extern \"C\" __global__ functions; funcs are\n"
     "extern \"C\" __device__ functions to call from your own kernels (docs/codegen.md).\n"
     "\n"
     "Options:\n"
     "  --target=cuda|hip  the target (required)\n"
     "  --arch=A        sm_XX or gfxNNN; only sets HIP's warp size (gfx9: 64, gfx10 and later: 32)\n"
     "  --warp-size=32|64  64 asks for wave64 on HIP\n"
     "  -o OUT          write to OUT (\"-\": standard output) instead of FILE.cu or FILE.hip\n"
     "  --costs=FILE    plan with the cost model's constants of FILE, as for 'tilec explain'\n",
     cmd_emit},
    {"compile", "compile with NVRTC or hiprtc (no GPU needed)",
     "Usage: tilec compile [OPTIONS] --target=cuda|hip --arch=A FILE\n"
     "\n"
     "Emits FILE's source and compiles it with NVRTC to a CUBIN for sm_XX (FILE.cubin), or\n"
     "with hiprtc to a code object for gfxNNN (FILE.co; never FILE itself, as for emit).\n"
     "Exits 3 when the compiler is not installed or does not know the arch, saying what\n"
     "was looked for; 1 with the compiler's log when it fails. A binary is never written\n"
     "to a terminal: give -o FILE or redirect standard output.\n"
     "\n"
     "Options:\n"
     "  --target=cuda|hip  the target (required)\n"
     "  --arch=A        sm_XX for cuda, gfxNNN for hip (required)\n"
     "  --warp-size=32|64  64 asks for wave64 on HIP\n"
     "  -o OUT          write to OUT (\"-\": standard output) instead of FILE.cubin or\n"
     "                  FILE.co; never a terminal (-, /dev/tty)\n"
     "  --costs=FILE    plan with the cost model's constants of FILE, as for 'tilec explain'\n",
     cmd_compile},
    {"reduce", "a JIT reduction of random data or a file: plan, time, GPU bandwidth",
     "Usage: tilec reduce --op=OP --dtype=D --shape=AxB... [OPTIONS]\n"
     "\n"
     "Reduces a tensor over --axes with tilec_reduce, on a GPU when one is usable\n"
     "(--backend auto) or the simulator. Prints the backend, the merged view and the\n"
     "variant chosen (--explain: the whole plan), then the first call's time and the time\n"
     "of --repeat more calls, with, on a GPU, their bandwidth (input + output bytes); the\n"
     "simulator's time is the CPU's, so it has none. A simulation of millions of elements\n"
     "takes seconds: a line on standard error says so first. Extents are 0 to 2^48 and\n"
     "multiply (those other than 0) to 2^48 at most.\n"
     "\n"
     "Options:\n"
     "  --op={ops}\n"
     "                    the reduction (required)\n"
     "  --dtype=f16|bf16|f32|f64|i32|u32|i64\n"
     "                    the input's dtype (required); numpy's names too: float16, bfloat16,\n"
     "                    float32, float64, int32, uint32, int64 (here and in --out-dtype and\n"
     "                    --index-dtype)\n"
     "  --shape=AxB...    the extents, e.g. 4096x1024 (required)\n"
     "  --axes=A,B...     the axes to reduce, -8 to 7, negative from the end (default -1)\n"
     "  --strides=S,...   the input is a strided view: an element stride per dim (any sign, 0\n"
     "                    for a broadcast dim), as DLPack and numpy (in elements) give them\n"
     "  --out-dtype=D     the output's dtype: the input's, or its wider one (f16, bf16 -> f32;\n"
     "                    f32 -> f64; i32, u32 -> i64), which the reduction accumulates in\n"
     "  --nan=propagate|ignore  the NaN policy (default propagate) of the ops that compare\n"
     "                    (max, min, argmax, argmin, aminmax) of float dtypes\n"
     "  --in=FILE         the input: raw little-endian, dense row-major, in the dtype (16-bit\n"
     "                    patterns for f16 and bf16), exactly the tensor's size (with --strides:\n"
     "                    the memory the view reaches, from its lowest element); without it,\n"
     "                    random data from --seed (floats in [-1, 1), integers in [-100, 100]).\n"
     "                    FILE.npy: numpy's format, which gives --dtype and --shape when they\n"
     "                    are left out (C order, little-endian; bf16 from uint16 patterns)\n"
     "  --out=FILE        write the first call's result (the kept extents, row-major, in the\n"
     "                    output's dtype); for argmax and argmin, the values; never to a terminal.\n"
     "                    FILE.npy (and --out2, --out-init): numpy's format, of the output's shape\n"
     "  --out2=FILE       argmax, argmin: write the indices (the flat offset in the reduced\n"
     "                    dims, row-major), in --index-dtype; aminmax: the maxima (--out holds\n"
     "                    the minima)\n"
     "  --index-dtype=i64|i32  argmax, argmin: the indices' dtype (default i64)\n"
     "  --correction=N    var, std: the divisor is max(n - N, 0), N >= 0 (default 1, Bessel's;\n"
     "                    0 gives the population variance, numpy's default)\n"
     "  --offsets=FILE    reduce segments of the one axis of --axes, the innermost: FILE holds\n"
     "                    nsegs + 1 offsets along it (.npy of int64 or int32, or decimal\n"
     "                    integers in text); the output has the axis's extent replaced by nsegs\n"
     "  --accumulate      out = op(out, reduction); out starts from --out-init FILE (exactly the\n"
     "                    output's size) or random data; with --out, --out-init is required\n"
     "  --out-init=FILE   the output before the call (needs --accumulate)\n"
     "  --backend=auto|cuda|hip|sim  auto (default): a usable GPU, else the simulator\n"
     "  --check           compare the first call's result with the reference; exit 1 on a mismatch\n"
     "  --specials        random data with special values, one element in 32, as for 'tilec run'\n"
     "  --repeat=N        timed calls after the first, 0 to 1000000 (default: 10 on a GPU, 0 on\n"
     "                    the simulator, whose time is the CPU's)\n"
     "  --seed=N          the random data's seed, 0 to 2^64-1 (default 1)\n"
     "  --explain         print the whole plan: the program, the variant, every predicate\n"
     "  --sim-budget=N    bounds each call on the simulator as for 'tilec run'\n",
     cmd_reduce},
    {"fused", "a fused kernel (softmax, norms, cross-entropy) of random data or files",
     "Usage: tilec fused --op=OP --dtype=D --shape=AxB...xC [OPTIONS]\n"
     "\n"
     "Runs a fused kernel over the last axis (C; the leading extents are rows) with\n"
     "tilec_fused, on a GPU when one is usable (--backend auto) or the simulator: the\n"
     "kernel is a generated .tile program of copies, reductions and map statements\n"
     "(--explain prints it). Prints the backend and plan lines, the first call's time and,\n"
     "with --repeat, the time and (on a GPU) bandwidth of more calls. --check compares\n"
     "every output with a double-precision reference computed by this command.\n"
     "\n"
     "Options:\n"
     "  --op=OP           softmax, log_softmax, rms_norm, layer_norm, add_rms_norm or\n"
     "                    cross_entropy\n"
     "  --dtype=D         f16, bf16 or f32: x's (and the weight's, bias's, residual's)\n"
     "  --out-dtype=D     y's (default --dtype)\n"
     "  --shape=AxB...xC  x's shape\n"
     "  --in=FILE         x (.npy or raw bytes); default random values in [-1, 1)\n"
     "  --weight=FILE     the norms' weight, C values (random: random ones)\n"
     "  --bias=FILE       layer_norm's bias, C values (random: random ones)\n"
     "  --residual=FILE   add_rms_norm's residual, x's shape (default random)\n"
     "  --target=FILE     cross_entropy's int64 classes, one a row (default random, one row\n"
     "                    in 8 ignored)\n"
     "  --eps=1e-K        the norms' epsilon (default 1e-5 for layer_norm, 1e-6 otherwise)\n"
     "  --ignore-index=N  cross_entropy's ignored class (default -100)\n"
     "  --math=M          exact (default: the same bits on every GPU and the simulator) or\n"
     "                    approx (softmax, log_softmax, cross_entropy: the GPU's hardware\n"
     "                    exponential, faster, within about 2^-21 + |x| 2^-24 relative;\n"
     "                    not the simulator's bits)\n"
     "  --stats           also compute mean / rstd (norms) or lse (cross_entropy), checked\n"
     "                    by --check\n"
     "  --out=FILE        write y (.npy or raw; cross_entropy: the losses, one a row)\n"
     "  --backend=auto|cuda|hip|sim  auto (default): a usable GPU, else the simulator\n"
     "  --check           compare with the reference; exit 1 on a mismatch\n"
     "  --specials        random data with special values, one element in 32\n"
     "  --repeat=N        timed calls after the first (default: 10 on a GPU, 0 on the simulator)\n"
     "  --seed=N          the random data's seed (default 1)\n"
     "  --explain         print the whole plan: the generated programs and the variants\n"
     "  --sim-budget=N    bounds each call on the simulator as for 'tilec run'\n",
     cmd_fused},
    {"calibrate", "measure the cost model's constants on this GPU and keep them for it",
     "Usage: tilec calibrate [OPTIONS]\n"
     "\n"
     "Measures the constants of the cost model that chooses how a reduction inside a CTA is\n"
     "lowered (shared-memory and shuffle latencies and throughputs, barriers, the issue\n"
     "rate) on a GPU, with micro-kernels timed by its clock (about a second), and prints\n"
     "them beside the compiled defaults (an H200's). They are saved in the kernel cache's\n"
     "directory (TILEC_CACHE_DIR, else $XDG_CACHE_HOME/tilec, else ~/.cache/tilec) for\n"
     "this device (its name, arch and multiprocessor count), and every later runtime on\n"
     "it plans with them: tilec_fused, tilec_run_kernel and 'tilec run' (tilec_reduce's\n"
     "whole-tensor plans do not use the model). 'tilec explain --costs FILE' and 'tilec\n"
     "emit --costs FILE' plan with a saved file on any machine. Exits 3 when no GPU is\n"
     "usable, 1 when the constants were measured but could not be saved.\n"
     "\n"
     "Options:\n"
     "  --backend=auto|cuda|hip  the GPU's backend (default auto: the first usable one)\n"
     "  --device=N        the device (default 0)\n"
     "  -o FILE           also write the constants file to FILE (for --costs elsewhere)\n"
     "  --no-save         measure and print only; the device's saved file is left as it is\n",
     cmd_calibrate},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* What every command's options have in common, after its own list. */
/* (After each command's own options, the -h line, lined up with them.) The paragraph
 * is the same for every command: scripts/man-page prints it once. An installed tilec
 * has its man page, not the source tree's docs/. */
static const char common_help[] =
    "\n"
    "An option that takes a value takes it as --opt=VALUE or --opt VALUE (-o OUT or -oOUT),\n"
    "once; \"--\" ends the options, so a FILE may start with '-'. Numbers are whole decimal\n"
    "integers in the option's range. Exit status: 0 success, 1 bad input or a failed check,\n"
    "2 bad usage, 3 backend or compiler not available. Documentation: man tilec, and\n"
    "docs/cli.md in tilec's source tree.\n";

/* The column at which the descriptions of usage u's options start: the one most of its
 * option lines ("  --opt=V   what") use (the lowest of a tie), so that the -h line lines
 * up with them. */
static int option_column(const char *u) {
    int count[64] = {0}, best = 18;
    const char *line = strstr(u, "\nOptions:\n");
    while (line && (line = strchr(line, '\n')) && *++line) {
        const char *end = strchr(line, '\n'), *gap = strstr(line + 2, "  ");
        if (strncmp(line, "  -", 3) != 0 || !end || !gap || gap > end) continue;
        while (*gap == ' ') gap++;
        if (gap < end && gap - line < 64) count[gap - line]++;
    }
    for (int c = 0; c < 64; c++)
        if (count[c] > count[best]) best = c;
    return best;
}

/* A command's usage, with {ops} spelled out from the op table (sum|max|...), then what
 * they share. */
static void print_usage(const char *u) {
    const char *at = strstr(u, "{ops}");
    if (!at) out_printf(stdout, "%s", u);
    else {
        out_printf(stdout, "%.*s", (int)(at - u), u);
        for (int o = 0; o < TILEC_OP_COUNT; o++) out_printf(stdout, "%s%s", o ? "|" : "", tilec_op_name((tilec_op)o));
        out_printf(stdout, "%s", at + strlen("{ops}"));
    }
    int col = option_column(u);
    out_printf(stdout, "  %-*s%s", col > 14 ? col - 2 : 12, "-h, --help", "show this help and exit\n");
    out_printf(stdout, "%s", common_help);
}

static void print_help(FILE *f) {
    out_printf(f, "Usage: tilec COMMAND [OPTIONS] [FILE...]\n"
               "  or:  tilec COMMAND --help\n"
               "  or:  tilec --version | --help\n"
               "\n"
               "tilec compiles tile reductions (sum, max, min, prod, ... over tiles in shared\n"
               "memory or registers) to CUDA and HIP. Commands:\n\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        out_printf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    out_printf(f, "\nExit codes: 0 success, 1 bad input or failed check, 2 bad usage,\n"
               "3 backend or compiler not available. Options that take a value take it once, as\n"
               "--opt=VALUE or --opt VALUE; \"--\" ends the options; numbers are whole decimal\n"
               "integers in the option's range. Output files are replaced through a temporary\n"
               "file (FIFOs and devices are written directly). Documentation: man tilec, and\n"
               "docs/cli.md in tilec's source tree.\n");
}

/* The one place every command's standard output is finished: the final flush and close
 * are checked, so output that was lost (a full disk, /dev/full, a closed pipe's EIO) is a
 * failure with a message, never exit 0; a closed standard output that was given nothing
 * is not. A failure write_output already reported
 * (stdout_reported) is not reported twice. */
bool stdout_reported;
static int stdout_errno; /* why the first failed flush_output of standard output failed */

void flush_output(FILE *f) {
    if (fflush(f) != 0 && f == stdout && !stdout_errno) stdout_errno = errno;
}

int out_printf(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    errno = 0;
    int n = vfprintf(f, fmt, ap);
    va_end(ap);
    /* stdio drops the buffer of a failed write, and errno is soon another call's: keep it */
    if (n < 0 && f == stdout && !stdout_errno) stdout_errno = errno ? errno : EIO;
    return n;
}

static int finish(int rc) {
    errno = 0;
    int err = fflush(stdout) != 0 ? errno : stdout_errno;
    bool lost = err != 0 || ferror(stdout);
    /* a standard output closed before tilec started (>&-) that was given nothing loses
     * nothing: closing it again fails with EBADF, which is no error then (as coreutils'
     * close_stdout); anything written to it failed above */
    if (fclose(stdout) != 0 && (lost || errno != EBADF)) {
        if (!err) err = errno;
        lost = true;
    }
    if (lost && !stdout_reported)
        fprintf(stderr, "tilec: cannot write standard output: %s\n", err ? strerror(err) : "a write failed; the output is incomplete");
    return lost && rc == EXIT_OK ? EXIT_BAD_INPUT : rc;
}

static int run_command(int argc, char **argv) {
    if (argc < 2) {
        print_help(stderr);
        return EXIT_USAGE;
    }
    if (is_help(argv[1])) { print_help(stdout); return EXIT_OK; }
    if (strcmp(argv[1], "--version") == 0) {
        out_printf(stdout, "tilec %s\n", tilec_version());
        return EXIT_OK;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name) != 0) continue;
        for (int j = 2; j < argc && strcmp(argv[j], "--") != 0; j++) /* after "--", "--help" is a file */
            if (is_help(argv[j])) { print_usage(commands[i].usage); return EXIT_OK; }
        return commands[i].run(argc - 1, argv + 1);
    }
    return usage_error(NULL, "unknown command '%s'", argv[1]);
}

int main(int argc, char **argv) { return finish(run_command(argc, argv)); }
