/*
 * cmd_calibrate.c — `tilec calibrate`: the cost model's constants measured on this GPU
 * (tilec_calibrate), printed beside the defaults, kept for the device and optionally
 * written to a file for `--costs`.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The constants, as the table prints them: name, offset, what. */
static const struct {
    const char *name;
    size_t off;
    const char *what;
} rows[] = {
#define TILEC_X_(n, what) {#n, offsetof(tilec_costs, n), what},
    TILEC_COSTS_LIST(TILEC_X_)
#undef TILEC_X_
};

static double at(const tilec_costs *c, size_t off) { return *(const double *)((const char *)c + off); }

int cmd_calibrate(int argc, char **argv) {
    const char *backend_text = NULL, *device_text = NULL, *out = NULL;
    bool no_save = false;
    const opt_spec specs[] = {
        {"--backend", NULL, OPT_VALUE, .value = &backend_text},
        {"--device", NULL, OPT_VALUE, .value = &device_text},
        {"-o", NULL, OPT_VALUE, .value = &out},
        {"--no-save", NULL, OPT_FLAG, .flag = &no_save},
    };
    const char *none = NULL;
    int nfiles, rc = parse_options("calibrate", argc, argv, specs, sizeof specs / sizeof specs[0], &none, 0, &nfiles);
    if (rc) return rc;
    tilec_backend backend = TILEC_BACKEND_AUTO;
    int64_t device = 0;
    if (backend_text && (rc = parse_backend("calibrate", "--backend", backend_text, false, &backend))) return rc;
    if (backend == TILEC_BACKEND_SIM)
        return usage_error("calibrate", "%s", "--backend sim has nothing to measure: the simulator's plans use the default "
                                              "constants; calibrate on a GPU (--backend auto, cuda or hip)");
    if (device_text && (rc = parse_int("calibrate", "--device", device_text, 0, 1023, &device))) return rc;
    if (out) {
        const named_file o = {"-o", NULL, out, NULL};
        if ((rc = check_outputs("calibrate", &o, 1, NULL, 0))) return rc;
    }
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) { fprintf(stderr, "tilec calibrate: out of memory\n"); return EXIT_BAD_INPUT; }
    tilec_status st = tilec_runtime_open(ctx, backend, (int)device);
    tilec_target t = {TILEC_BACKEND_AUTO, NULL, 0};
    if (st == TILEC_OK) st = tilec_runtime_target(ctx, &t);
    if (st == TILEC_OK && t.backend == TILEC_BACKEND_SIM) {
        fprintf(stderr, "tilec calibrate: no GPU is usable here (--backend auto found none; --backend cuda or hip says "
                        "why): the cost model's constants are measured on the GPU they are for\n");
        tilec_close(ctx);
        return EXIT_UNAVAILABLE;
    }
    tilec_costs c;
    char *text = NULL, *path = NULL;
    if (st == TILEC_OK) {
        fprintf(stderr, "tilec calibrate: measuring on %s %s (about a second)...\n", tilec_backend_name(t.backend), t.arch);
        st = tilec_calibrate(ctx, no_save ? TILEC_CALIBRATE_NO_SAVE : 0, &c, &text, &path);
    }
    if (st != TILEC_OK && !text) { /* nothing measured: no GPU, no compiler, a failed run */
        fputs(tilec_diag_text(ctx), stderr);
        tilec_close(ctx);
        return st == TILEC_ERR_UNAVAILABLE || st == TILEC_ERR_COMPILE ? EXIT_UNAVAILABLE : EXIT_BAD_INPUT;
    }
    /* measured: the table and -o whatever became of the saving */
    tilec_costs d = tilec_costs_default();
    out_printf(stdout, "The cost model's constants on %s %s, in cycles (docs/dispatch.md#calibrated-constants):\n",
               tilec_backend_name(t.backend), t.arch);
    out_printf(stdout, "  %-13s %9s %9s  %s\n", "constant", "measured", "default", "what");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        out_printf(stdout, "  %-13s %9.3f %9.3f  %s\n", rows[i].name, at(&c, rows[i].off), at(&d, rows[i].off), rows[i].what);
    if (path)
        out_printf(stdout, "Saved to %s: tilec_fused, tilec_run_kernel and tile programs run on this device plan with it "
                           "from now on.\n", path);
    else if (no_save)
        out_printf(stdout, "Not saved (--no-save).\n");
    else
        out_printf(stdout, "Not saved: the next runtime on this device plans with the default constants (below).\n");
    flush_output(stdout);
    if (!path && !no_save) fputs(tilec_diag_text(ctx), stderr); /* why not: the cache's note, or the error */
    else print_warnings(ctx);
    if (out) rc = write_output(out, text, strlen(text), false);
    if (st != TILEC_OK && rc == EXIT_OK) rc = EXIT_BAD_INPUT; /* measured, but the file could not be written */
    tilec_free(text);
    tilec_free(path);
    tilec_close(ctx);
    return rc;
}
