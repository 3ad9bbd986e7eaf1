/*
 * cmd_emit.c — `tilec emit` (CUDA / HIP source) and `tilec compile` (NVRTC / hiprtc
 * binaries, no GPU needed).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FILE with its extension (after the last '.' of the base name) replaced by ext. */
static char *with_extension(const char *file, const char *ext) {
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *dot = strrchr(base, '.');
    size_t keep = dot && dot != base ? (size_t)(dot - file) : strlen(file);
    char *out = malloc(keep + strlen(ext) + 1);
    if (!out) return NULL;
    memcpy(out, file, keep);
    strcpy(out + keep, ext);
    return out;
}

/* Shared by emit and compile: FILE, --target, --arch, --warp-size, -o, --costs. */
static int parse_args(const char *cmd, int argc, char **argv, const char **file, tilec_target *t, const char **out,
                      const char **costs) {
    const char *target = NULL, *warp = NULL;
    const opt_spec specs[] = {
        {"--target", NULL, OPT_VALUE, .value = &target},
        {"--arch", NULL, OPT_VALUE, .value = &t->arch},
        {"--warp-size", NULL, OPT_VALUE, .value = &warp},
        {"-o", NULL, OPT_VALUE, .value = out},
        {"--costs", NULL, OPT_VALUE, .value = costs},
    };
    int nfiles, r = parse_options(cmd, argc, argv, specs, 5, file, 1, &nfiles);
    if (r) return r;
    if (!*file) return usage_error(cmd, "%sno FILE given", "");
    if (!target) return usage_error(cmd, "%s--target cuda or --target hip is required", "");
    r = parse_backend(cmd, "--target", target, true, &t->backend);
    if (r) return r;
    if (warp) return parse_warp_size(cmd, warp, &t->warp_size);
    return EXIT_OK;
}

static int exit_for(tilec_status st) {
    if (st == TILEC_ERR_UNAVAILABLE) return EXIT_UNAVAILABLE;
    if (st == TILEC_ERR_INVALID_ARG) return EXIT_USAGE;
    return EXIT_BAD_INPUT;
}

static int run(int argc, char **argv, bool compile) {
    const char *cmd = compile ? "compile" : "emit";
    const char *file = NULL, *out = NULL, *costs = NULL;
    tilec_target t = {TILEC_BACKEND_AUTO, NULL, 0};
    int rc = parse_args(cmd, argc, argv, &file, &t, &out, &costs);
    if (rc) return rc;
    if (compile && !t.arch) return usage_error(cmd, "%s--arch is required (sm_80, sm_90, gfx90a…)", "");
    if (compile && (out ? writes_terminal(out) : strcmp(file, "-") == 0 && writes_terminal("-"))) {
        fprintf(stderr, "tilec compile: will not write a %s (binary) to a terminal; use -o FILE or redirect standard "
                        "output (> FILE)\n", t.backend == TILEC_BACKEND_HIP ? "code object" : "CUBIN");
        return EXIT_USAGE;
    }
    /* the default output is FILE with the target's extension in place of its own: never
     * the input itself (prog.cu --target cuda, k.cubin, or a FILE.cu that is a link to
     * FILE), whose source would be replaced; nor an -o that names the input */
    const char *ext = tilec_backend_file_extension(t.backend, compile);
    char *path = out || strcmp(file, "-") == 0 ? NULL : with_extension(file, ext);
    if (!out && strcmp(file, "-") != 0 && !path) { fprintf(stderr, "tilec: out of memory\n"); return EXIT_BAD_INPUT; }
    if (path && overwrites(path, file)) {
        fprintf(stderr, "tilec %s: the output would be '%s', the input itself; give -o OUT to write the %s elsewhere\n",
                cmd, path, compile ? "binary" : "source");
        free(path);
        return EXIT_USAGE;
    }
    /* -o, or standard output for FILE "-": never the input (`-o - 1<>FILE`, `- <>FILE 1>&0`),
       nor the --costs file */
    const named_file in[2] = {{"FILE", NULL, file, NULL}, {"--costs", NULL, costs, NULL}};
    const named_file o = {out ? "-o" : "standard output", NULL, out ? out : "-", NULL};
    if (!path && (rc = check_outputs(cmd, &o, 1, in, costs ? 2 : 1))) return rc;
    if (path && costs && overwrites(path, costs)) {
        fprintf(stderr, "tilec %s: the output would be '%s', the --costs file; give -o OUT to write the %s elsewhere\n", cmd,
                path, compile ? "binary" : "source");
        free(path);
        return EXIT_USAGE;
    }
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) { free(path); return EXIT_BAD_INPUT; }
    rc = load_costs(ctx, costs);
    tilec_program *prog = rc == EXIT_OK ? load(ctx, file, false, 0) : NULL;
    if (rc == EXIT_OK) rc = EXIT_BAD_INPUT;
    if (prog) {
        void *data = NULL;
        size_t n = 0;
        tilec_status st = compile ? tilec_compile(prog, &t, &data, &n) : tilec_emit(prog, &t, (char **)&data, &n);
        if (st != TILEC_OK) {
            fputs(tilec_diag_text(ctx), stderr);
            rc = exit_for(st);
        } else {
            print_warnings(ctx);
            rc = write_output(out ? out : path ? path : "-", data, n, compile);
        }
        tilec_free(data);
    }
    tilec_program_free(prog);
    tilec_close(ctx);
    free(path);
    return rc;
}

int cmd_emit(int argc, char **argv) { return run(argc, argv, false); }
int cmd_compile(int argc, char **argv) { return run(argc, argv, true); }
