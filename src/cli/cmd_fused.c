/*
 * cmd_fused.c — `tilec fused`: a fused kernel (softmax, log_softmax, rms_norm, layer_norm,
 * add_rms_norm, cross_entropy) of random data or files through the public API
 * (tilec_fused), with its plan, its time and, on a GPU, its bandwidth. --check compares
 * every output with a double-precision reference computed here, from the formulas in
 * include/tilec.h, sharing no code with the library.
 */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_REPEAT = 1000000 };

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct fused_opts {
    const char *op, *dtype, *out_dtype, *shape, *in, *out, *weight, *bias, *residual, *target, *eps, *ignore, *backend,
        *repeat, *seed, *sim_budget, *math;
    bool check, explain, stats, specials;
} fused_opts;

/* An element of dtype dt at p[i] as a double. */
static double elem(tilec_dtype dt, const unsigned char *p, int64_t i) {
    uint16_t h;
    float f;
    switch (dt) {
    case TILEC_F16: memcpy(&h, p + 2 * i, 2); return tilec_f16_to_double(h);
    case TILEC_BF16: memcpy(&h, p + 2 * i, 2); return tilec_bf16_to_double(h);
    default: memcpy(&f, p + 4 * i, 4); return f;
    }
}

/* Within the tolerance of a result of dtype dt whose terms' magnitudes sum to `scale`:
 * the result's own rounding (2^-8 of bf16, 2^-11 of f16, 2^-24 of f32) twice, plus f32's
 * accumulation (2^-16 relative), plus two steps of the dtype's subnormals (a result
 * there is rounded to their spacing); NaN matches NaN, an infinity itself. */
/* approx: math=approx's exponentials, within 2^-21 + |x| 2^-24 (inside the 2^-16 term, whose scale
 * holds |x|) and flushed below 2^-126 */
static bool within_tol(tilec_dtype dt, double got, double want, double scale, bool approx) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    double ulp = dt == TILEC_BF16 ? 0x1p-8 : dt == TILEC_F16 ? 0x1p-11 : 0x1p-24;
    double sub = dt == TILEC_BF16 ? 0x1p-133 : dt == TILEC_F16 ? 0x1p-24 : 0x1p-149; /* the spacing of subnormals */
    if (approx && sub < 0x1p-127) sub = 0x1p-127;
    return fabs(got - want) <= (2 * ulp + 0x1p-16) * scale + 2 * sub;
}

/* A file (.npy or raw) of exactly dt[shape], or NULL with a message. */
static unsigned char *read_file(const char *opt, const char *path, tilec_dtype dt, const int64_t *shape, int rank,
                                size_t bytes) {
    char dims[160];
    size_t at = (size_t)snprintf(dims, sizeof dims, "%s[", tilec_dtype_name(dt));
    for (int k = 0; k < rank && at < sizeof dims; k++) at += (size_t)snprintf(dims + at, sizeof dims - at, "%s%" PRId64, k ? ", " : "", shape[k]);
    if (at < sizeof dims) snprintf(dims + at, sizeof dims - at, "]");
    if (is_npy_path(path)) return read_npy_tensor(opt, path, dt, shape, rank, bytes, opt + 2, dims);
    size_t len;
    int64_t size;
    char *data = read_input(path, bytes, &len, &size);
    if (data && (size < 0 || (uint64_t)size != bytes)) {
        char have[48];
        fprintf(stderr, "tilec fused: %s '%s' has %s bytes, but %s is %zu bytes\n", opt, path, size_text(size, bytes, have, sizeof have),
                dims, bytes);
        free(data);
        return NULL;
    }
    return (unsigned char *)data;
}

/* The reference of row r into want[] (cols values, or one for cross_entropy) and the
 * scale each is checked at; stats into st[0..1] (mean, rstd / lse). */
static void reference(const tilec_fused_desc *d, const unsigned char *x, const unsigned char *res, const unsigned char *w,
                      const unsigned char *b, const int64_t *tg, int64_t r, double *want, double *scale, double *st) {
    int64_t C = d->cols;
    tilec_dtype T = d->dtype;
    double *h = want; /* the row's values (add_rms_norm: x + residual rounded to dtype) */
    for (int64_t j = 0; j < C; j++) {
        double v = elem(T, x, r * (d->row_stride ? d->row_stride : C) + j);
        if (d->op == TILEC_FUSED_ADD_RMS_NORM) {
            v += elem(T, res, r * C + j);
            v = T == TILEC_BF16 ? tilec_bf16_to_double(tilec_bf16_from_double(v))
                : T == TILEC_F16 ? tilec_f16_to_double(tilec_f16_from_double(v)) : (double)(float)v;
        }
        h[j] = v;
    }
    switch (d->op) {
    case TILEC_FUSED_SOFTMAX:
    case TILEC_FUSED_LOG_SOFTMAX:
    case TILEC_FUSED_CROSS_ENTROPY: {
        double m = -INFINITY, s = 0;
        bool nan = false;
        for (int64_t j = 0; j < C; j++) nan = nan || isnan(h[j]), m = h[j] > m ? h[j] : m;
        for (int64_t j = 0; j < C && isfinite(m); j++) s += exp(h[j] - m);
        double lse = nan ? NAN : isfinite(m) ? m + log(s) : m;
        st[1] = lse;
        if (isinf(lse) && lse > 0) lse = NAN; /* a row with +inf: inf - inf, as exp(x - max(x)) */
        if (d->op == TILEC_FUSED_CROSS_ENTROPY) {
            int64_t t = tg[r];
            if (t == d->ignore_index) want[0] = 0, scale[0] = 0;
            else if (t < 0 || t >= C) want[0] = NAN, scale[0] = 0;
            else {
                double picked = h[t]; /* h is want's storage: read before want[0] is written */
                want[0] = lse - picked, scale[0] = fabs(lse) + fabs(picked);
            }
            return;
        }
        for (int64_t j = 0; j < C; j++) {
            double v = h[j];
            want[j] = d->op == TILEC_FUSED_SOFTMAX ? exp(v - lse) : v - lse;
            /* softmax: relative to the value (an error in lse scales it); log_softmax: |x| + |lse| */
            scale[j] = d->op == TILEC_FUSED_SOFTMAX ? (want[j] == 0 ? 0 : fabs(want[j]) * (1 + fabs(v) + fabs(lse)))
                                                    : fabs(v) + fabs(lse);
        }
        return;
    }
    default: break;
    }
    double mu = 0, var = 0, ss = 0;
    for (int64_t j = 0; j < C; j++) mu += h[j], ss += h[j] * h[j];
    mu /= (double)C;
    for (int64_t j = 0; j < C; j++) var += (h[j] - mu) * (h[j] - mu);
    var /= (double)C;
    bool ln = d->op == TILEC_FUSED_LAYER_NORM;
    double rs = 1 / sqrt((ln ? var : ss / (double)C) + (double)(float)d->eps);
    st[0] = mu, st[1] = rs;
    for (int64_t j = 0; j < C; j++) {
        double v = ln ? (h[j] - mu) * rs : h[j] * rs, sc = fabs(ln ? (fabs(h[j]) + fabs(mu)) * rs : v);
        if (!ln && T != TILEC_F32 && w) { /* torch's: the normalised value rounds to dtype before the weight */
            double q = T == TILEC_BF16 ? tilec_bf16_to_double(tilec_bf16_from_double(v)) : tilec_f16_to_double(tilec_f16_from_double(v));
            /* the kernel's f32 value of x * rs may round to the other side of a tie: one ulp of
               q more (up to 2^-7 of |q| in bf16, 2^-10 in f16), a third rounding besides the
               result's own two, which the tolerance counts against |q| twice */
            sc = 2 * fabs(q);
            v = q;
        }
        if (w) v *= elem(T, w, j), sc *= fabs(elem(T, w, j));
        if (b) v += elem(T, b, j), sc += fabs(elem(T, b, j));
        want[j] = v, scale[j] = sc;
    }
}

int cmd_fused(int argc, char **argv) {
    fused_opts o = {0};
    const opt_spec specs[] = {
        {"--op", NULL, OPT_VALUE, .value = &o.op}, {"--dtype", NULL, OPT_VALUE, .value = &o.dtype},
        {"--out-dtype", NULL, OPT_VALUE, .value = &o.out_dtype}, {"--shape", NULL, OPT_VALUE, .value = &o.shape},
        {"--in", NULL, OPT_VALUE, .value = &o.in}, {"--out", NULL, OPT_VALUE, .value = &o.out},
        {"--weight", NULL, OPT_VALUE, .value = &o.weight}, {"--bias", NULL, OPT_VALUE, .value = &o.bias},
        {"--residual", NULL, OPT_VALUE, .value = &o.residual}, {"--target", NULL, OPT_VALUE, .value = &o.target},
        {"--eps", NULL, OPT_VALUE, .value = &o.eps}, {"--ignore-index", NULL, OPT_VALUE, .value = &o.ignore},
        {"--backend", NULL, OPT_VALUE, .value = &o.backend}, {"--repeat", NULL, OPT_VALUE, .value = &o.repeat},
        {"--seed", NULL, OPT_VALUE, .value = &o.seed}, {"--sim-budget", NULL, OPT_VALUE, .value = &o.sim_budget},
        {"--math", NULL, OPT_VALUE, .value = &o.math},
        {"--check", NULL, OPT_FLAG, .flag = &o.check}, {"--explain", NULL, OPT_FLAG, .flag = &o.explain},
        {"--stats", NULL, OPT_FLAG, .flag = &o.stats}, {"--specials", NULL, OPT_FLAG, .flag = &o.specials},
    };
    int n, rc;
    if ((rc = parse_options("fused", argc, argv, specs, sizeof specs / sizeof specs[0], NULL, 0, &n))) return rc;
    if (!o.op || !o.dtype || !o.shape)
        return usage_error("fused", "%s--op, --dtype and --shape are required (e.g. --op softmax --dtype bf16 --shape 4096x1024)", "");
    tilec_fused_op op = TILEC_FUSED_COUNT;
    const char *names[TILEC_FUSED_COUNT];
    for (int t = 0; t < TILEC_FUSED_COUNT; t++) {
        names[t] = tilec_fused_name((tilec_fused_op)t);
        if (!strcmp(o.op, names[t])) op = (tilec_fused_op)t;
    }
    if (op == TILEC_FUSED_COUNT) {
        char ops[160], msg[300];
        snprintf(msg, sizeof msg, "--op must be %s, not '%.100s'", join_names(ops, sizeof ops, names, TILEC_FUSED_COUNT), o.op);
        return usage_error("fused", "%s", msg);
    }
    const unsigned floats = 1u << TILEC_F16 | 1u << TILEC_BF16 | 1u << TILEC_F32;
    tilec_dtype dt, odt;
    if ((rc = parse_dtype("fused", "--dtype", o.dtype, floats, &dt))) return rc;
    odt = dt;
    if (o.out_dtype && (rc = parse_dtype("fused", "--out-dtype", o.out_dtype, floats, &odt))) return rc;
    int64_t shape[TILEC_MAX_RANK];
    int rank;
    if ((rc = parse_int_list("fused", "--shape", o.shape, 'x', 1, TILEC_MAX_ELEMENTS, shape, TILEC_MAX_RANK, &rank))) return rc;
    int64_t total = tensor_elements(shape, rank);
    if (total < 0) return usage_error("fused", "--shape %s has more than 2^48 elements", o.shape);
    int64_t C = shape[rank - 1], R = total / C;
    tilec_fused_desc d = tilec_fused_desc_default(op, dt, R, C);
    d.out_dtype = odt;
    bool norm = op == TILEC_FUSED_RMS_NORM || op == TILEC_FUSED_LAYER_NORM || op == TILEC_FUSED_ADD_RMS_NORM;
    bool ce = op == TILEC_FUSED_CROSS_ENTROPY;
    if ((o.weight || o.eps) && !norm) return usage_error("fused", "--weight and --eps are for the norms, not %s", o.op);
    if (o.bias && op != TILEC_FUSED_LAYER_NORM) return usage_error("fused", "--bias is for layer_norm, not %s", o.op);
    if (o.residual && op != TILEC_FUSED_ADD_RMS_NORM) return usage_error("fused", "--residual is for add_rms_norm, not %s", o.op);
    if ((o.target || o.ignore) && !ce) return usage_error("fused", "--target and --ignore-index are for cross_entropy, not %s", o.op);
    if (o.stats && (op == TILEC_FUSED_SOFTMAX || op == TILEC_FUSED_LOG_SOFTMAX))
        return usage_error("fused", "--stats is for the norms (mean, rstd) and cross_entropy (lse), not %s", o.op);
    if (o.eps) {
        int64_t e;
        /* eps as 10^-k (1e-5, 1e-6: what models use): an integer k, read by the one strict parser
           (which says what is wrong with it: one message) */
        if (strncmp(o.eps, "1e-", 3))
            return usage_error("fused", "--eps takes 1e-K with K from 1 to 30 (1e-5, 1e-6), not '%s'", o.eps);
        if ((rc = parse_int("fused", "--eps 1e-K: K", o.eps + 3, 1, 30, &e))) return rc;
        d.eps = pow(10.0, -(double)e);
    }
    if (o.ignore && (rc = parse_int("fused", "--ignore-index", o.ignore, INT64_MIN, INT64_MAX, &d.ignore_index))) return rc;
    if (o.math) {
        int m = 0;
        while (m < TILEC_MATH_COUNT && strcmp(o.math, tilec_math_name((tilec_math)m))) m++;
        if (m == TILEC_MATH_COUNT)
            return usage_error("fused", "--math takes exact (the same bits everywhere, the default) or approx (the GPU's "
                                        "hardware exponential), not '%.100s'", o.math);
        d.math = (tilec_math)m;
        if (d.math == TILEC_MATH_APPROX && norm)
            return usage_error("fused", "--math approx is for softmax, log_softmax and cross_entropy (their exponentials), not %s",
                               o.op);
    }
    d.weight = o.weight != NULL, d.bias = o.bias != NULL, d.stats = o.stats;
    tilec_backend backend = TILEC_BACKEND_AUTO;
    if (o.backend && (rc = parse_backend("fused", "--backend", o.backend, false, &backend))) return rc;
    int64_t repeat = -1;
    if (o.repeat && (rc = parse_int("fused", "--repeat", o.repeat, 0, MAX_REPEAT, &repeat))) return rc;
    uint64_t seed = 1, budget = 0;
    if (o.seed && (rc = parse_uint("fused", "--seed", o.seed, UINT64_MAX, &seed))) return rc;
    if (o.sim_budget && (rc = parse_sim_budget("fused", o.sim_budget, &budget))) return rc;
    if (o.out && writes_terminal(o.out))
        return usage_error("fused", "%swill not write raw tensor bytes to a terminal; use --out FILE", "");
    named_file outs[1] = {{"--out", NULL, o.out, "y"}};
    const char *const rnd = "random";
    const named_file ins[5] = {{"--in", NULL, o.in, "x"},
                               {"--weight", NULL, o.weight && strcmp(o.weight, rnd) ? o.weight : NULL, "weight"},
                               {"--bias", NULL, o.bias && strcmp(o.bias, rnd) ? o.bias : NULL, "bias"},
                               {"--residual", NULL, o.residual, "residual"},
                               {"--target", NULL, o.target, "target"}};
    if ((rc = check_outputs("fused", outs, o.out ? 1 : 0, ins, 5))) return rc;
    FILE *report = o.out && writes_stdout(o.out) ? stderr : stdout;

    size_t es = tilec_dtype_size(dt), os = tilec_dtype_size(odt);
    size_t xb = (size_t)total * es, yb = (size_t)(ce ? R : total) * os, vb = (size_t)C * es, sb = (size_t)R * 4;
    int64_t vshape[1] = {C}, rshape[TILEC_MAX_RANK];
    for (int k = 0; k + 1 < rank; k++) rshape[k] = shape[k];
    int rrank = rank > 1 ? rank - 1 : 1;
    if (rank == 1) rshape[0] = 1;
    unsigned char *hx = o.in ? read_file("--in", o.in, dt, shape, rank, xb) : malloc(xb);
    unsigned char *hw = !o.weight ? NULL : strcmp(o.weight, rnd) ? read_file("--weight", o.weight, dt, vshape, 1, vb) : malloc(vb);
    unsigned char *hb = !o.bias ? NULL : strcmp(o.bias, rnd) ? read_file("--bias", o.bias, dt, vshape, 1, vb) : malloc(vb);
    unsigned char *hr = op != TILEC_FUSED_ADD_RMS_NORM ? NULL : o.residual ? read_file("--residual", o.residual, dt, shape, rank, xb)
                                                                            : malloc(xb);
    int64_t *ht = !ce ? NULL : o.target ? (int64_t *)read_file("--target", o.target, TILEC_I64, rshape, rrank, (size_t)R * 8)
                                        : malloc((size_t)R * 8 + 1);
    unsigned char *hy = malloc(yb + 1), *hres = hr ? malloc(xb + 1) : NULL, *hm = calloc(1, sb + 1), *hs = calloc(1, sb + 1);
    tilec_ctx *ctx = NULL;
    void *dx = NULL, *dy = NULL, *dw = NULL, *db = NULL, *dr = NULL, *dtg = NULL, *dm = NULL, *ds = NULL;
    tilec_status st = TILEC_OK;
    rc = EXIT_OK;
    if (!hx || (o.weight && !hw) || (o.bias && !hb) || (op == TILEC_FUSED_ADD_RMS_NORM && !hr) || (ce && !ht) || !hy ||
        (hr && !hres) || !hm || !hs) {
        /* a file that could not be read has said why; an allocation that failed says so here */
        bool unread = (o.in && !hx) || (o.weight && strcmp(o.weight, rnd) && !hw) || (o.bias && strcmp(o.bias, rnd) && !hb) ||
                      (o.residual && !hr) || (o.target && !ht);
        if (!unread)
            fprintf(stderr, "tilec fused: out of memory for the data of --shape %s (x alone is %zu bytes of %s); use a "
                            "smaller --shape\n", o.shape, xb, tilec_dtype_name(dt));
        rc = EXIT_BAD_INPUT;
        goto done;
    }
    if (!o.in) fill_random(dt, hx, total, &seed, o.specials);
    if (hw && !strcmp(o.weight, rnd)) fill_random(dt, hw, C, &seed, false);
    if (hb && !strcmp(o.bias, rnd)) fill_random(dt, hb, C, &seed, false);
    if (hr && !o.residual) fill_random(dt, hr, total, &seed, o.specials);
    if (ht && !o.target) { /* classes in [0, C), one row in 8 ignored */
        unsigned char bytes[8];
        for (int64_t r = 0; r < R; r++) {
            fill_random(TILEC_I64, bytes, 1, &seed, false);
            int64_t v;
            memcpy(&v, bytes, 8);
            ht[r] = (v & 7) == 0 ? d.ignore_index : ((v % C) + C) % C;
        }
    }
    if (tilec_open(&ctx) != TILEC_OK) { fprintf(stderr, "tilec fused: out of memory\n"); rc = EXIT_BAD_INPUT; goto done; }
    tilec_set_sim_budget(ctx, budget);
    tilec_target where;
    if ((st = tilec_runtime_open(ctx, backend, 0)) || (st = tilec_runtime_target(ctx, &where))) goto failed;
    bool sim = where.backend == TILEC_BACKEND_SIM;
    if (repeat < 0) repeat = sim ? 0 : 10;
    tilec_fused_args a = {0};
    if ((st = tilec_mem_alloc(ctx, xb, &dx)) || (st = tilec_mem_upload(ctx, dx, hx, xb)) || (st = tilec_mem_alloc(ctx, yb, &dy)) ||
        (hw && ((st = tilec_mem_alloc(ctx, vb, &dw)) || (st = tilec_mem_upload(ctx, dw, hw, vb)))) ||
        (hb && ((st = tilec_mem_alloc(ctx, vb, &db)) || (st = tilec_mem_upload(ctx, db, hb, vb)))) ||
        (hr && ((st = tilec_mem_alloc(ctx, xb, &dr)) || (st = tilec_mem_upload(ctx, dr, hr, xb)))) ||
        (ht && ((st = tilec_mem_alloc(ctx, (size_t)R * 8, &dtg)) || (st = tilec_mem_upload(ctx, dtg, ht, (size_t)R * 8)))) ||
        (o.stats && ((st = tilec_mem_alloc(ctx, sb, &dm)) || (st = tilec_mem_alloc(ctx, sb, &ds)))))
        goto failed;
    a = (tilec_fused_args){.x = dx, .y = dy, .weight = dw, .bias = db, .residual = dr, .target = dtg,
                           .mean = op == TILEC_FUSED_LAYER_NORM ? dm : NULL, .rstd = ce ? NULL : ds, .lse = ce ? ds : NULL};
    char *plan = NULL;
    if ((st = tilec_fused_explain(ctx, &d, &plan))) goto failed;
    if (o.explain) out_printf(report, "%s", plan);
    else
        for (char *line = strtok(plan, "\n"); line; line = strtok(NULL, "\n"))
            if (!strncmp(line, "backend", 7) || !strncmp(line, "plan ", 5)) out_printf(report, "%s\n", line);
    tilec_free(plan);
    double t0 = now_s();
    if ((st = tilec_fused(ctx, &d, &a)) || (st = tilec_synchronize(ctx))) goto failed;
    double first = now_s() - t0;
    if ((st = tilec_mem_download(ctx, hy, dy, yb)) || (hr && (st = tilec_mem_download(ctx, hres, dr, xb))) ||
        (o.stats && op == TILEC_FUSED_LAYER_NORM && (st = tilec_mem_download(ctx, hm, dm, sb))) ||
        (o.stats && (st = tilec_mem_download(ctx, hs, ds, sb))))
        goto failed;
    if (o.out && (rc = write_tensor(o.out, odt, ce ? rshape : shape, ce ? rrank : rank, hy, yb)) != EXIT_OK) goto done;
    out_printf(report, "first call: %.3f ms (plan, compile or cache, run)\n", first * 1e3);
    if (repeat > 0) {
        t0 = now_s();
        for (int64_t i = 0; i < repeat && !st; i++) st = tilec_fused(ctx, &d, &a);
        if (st || (st = tilec_synchronize(ctx))) goto failed;
        double per = (now_s() - t0) / (double)repeat;
        size_t bytes = xb + yb + (hr ? 2 * xb : 0) + (hw ? vb : 0) + (hb ? vb : 0);
        out_printf(report, "%" PRId64 " more calls: %.3f ms a call%s", repeat, per * 1e3, sim ? "\n" : "");
        if (!sim) out_printf(report, ", %.1f GB/s (x read once, y written once)\n", (double)bytes / per * 1e-9);
    }
    if (o.check) {
        int64_t bad = 0, first_bad = -1, cmp = 0;
        double *want = malloc(sizeof(double) * (size_t)C), *scale = malloc(sizeof(double) * (size_t)C);
        if (!want || !scale) { free(want); free(scale); fprintf(stderr, "tilec fused: out of memory\n"); rc = EXIT_BAD_INPUT; goto done; }
        double got_at = 0, want_at = 0;
        for (int64_t r = 0; r < R; r++) {
            double stt[2] = {0, 0};
            reference(&d, hx, hr, hw, hb, ht, r, want, scale, stt);
            int64_t m = ce ? 1 : C;
            for (int64_t j = 0; j < m; j++, cmp++) {
                double g = elem(odt, hy, (ce ? r : r * C + j));
                if (!within_tol(odt, g, want[j], scale[j], d.math == TILEC_MATH_APPROX) && bad++ == 0) first_bad = ce ? r : r * C + j, got_at = g, want_at = want[j];
            }
            if (hr) /* the residual written back: h, exactly */
                for (int64_t j = 0; j < C; j++) {
                    double v = elem(dt, hx, r * C + j) + elem(dt, hr, r * C + j);
                    double q = dt == TILEC_BF16 ? tilec_bf16_to_double(tilec_bf16_from_double(v))
                               : dt == TILEC_F16 ? tilec_f16_to_double(tilec_f16_from_double(v)) : (double)(float)v;
                    double g = elem(dt, hres, r * C + j);
                    if (!(g == q || (isnan(g) && isnan(q))) && bad++ == 0) first_bad = r * C + j, got_at = g, want_at = q;
                }
            if (o.stats) {
                float s1;
                memcpy(&s1, hs + 4 * r, 4);
                bool ok = within_tol(TILEC_F32, s1, stt[1], fabs(stt[1]), d.math == TILEC_MATH_APPROX);
                if (op == TILEC_FUSED_LAYER_NORM) {
                    float m0;
                    memcpy(&m0, hm + 4 * r, 4);
                    ok = ok && within_tol(TILEC_F32, m0, stt[0], fabs(stt[0]) + 1e-6, false);
                }
                if (!ok && bad++ == 0) first_bad = r, got_at = s1, want_at = stt[1];
            }
        }
        free(want);
        free(scale);
        if (bad) {
            out_printf(report, "check: %" PRId64 " of %" PRId64 " values differ from the double-precision reference; the first at %" PRId64
                               ": %.9g, want %.9g\n", bad, cmp, first_bad, got_at, want_at);
            rc = EXIT_BAD_INPUT;
        } else {
            out_printf(report, "check: all %" PRId64 " values match the double-precision reference\n", cmp);
        }
    }
    goto done;
failed:
    if (*tilec_diag_text(ctx)) fputs(tilec_diag_text(ctx), stderr);
    else fprintf(stderr, "tilec fused: %s\n", tilec_status_message(st));
    rc = st == TILEC_ERR_UNAVAILABLE ? EXIT_UNAVAILABLE : EXIT_BAD_INPUT;
done:
    if (ctx) {
        void *bufs[] = {dx, dy, dw, db, dr, dtg, dm, ds};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) tilec_mem_free(ctx, bufs[i]);
        tilec_close(ctx);
    }
    free(hx), free(hw), free(hb), free(hr), free(ht), free(hy), free(hres), free(hm), free(hs);
    return rc;
}
