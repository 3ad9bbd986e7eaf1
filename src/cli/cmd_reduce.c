/*
 * cmd_reduce.c — `tilec reduce`: a JIT reduction of random data or of a file (--in)
 * through the same public API a host program uses (tilec_runtime_open, tilec_mem_*,
 * tilec_reduce), with its plan, its time and, on a GPU, its effective bandwidth (input +
 * output bytes over the time of one call). --out writes the first call's result, the one --check
 * compares; the timed calls that follow change neither.
 */
#include "cli.h"

#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum { MAX_REPEAT = 1000000 };
/* Input elements from which a simulated call takes long enough (about a second here) that
 * the command says what it is doing first. */
enum { LONG_SIMULATION = 1 << 23 };

/* The options of `tilec reduce` as given (NULL: not given), read before any is converted. */
typedef struct reduce_opts {
    const char *op, *dtype, *out_dtype, *shape, *axes, *strides, *nan, *backend, *repeat, *seed, *in, *out, *out_init, *sim_budget,
        *out2, *index_dtype, *correction, *offsets;
    bool check, explain, accumulate, specials;
} reduce_opts;

/* Reads the command line into o. */
static int reduce_options(int argc, char **argv, reduce_opts *o) {
    const opt_spec specs[] = {
        {"--op", NULL, OPT_VALUE, .value = &o->op}, {"--dtype", NULL, OPT_VALUE, .value = &o->dtype},
        {"--out-dtype", NULL, OPT_VALUE, .value = &o->out_dtype}, {"--shape", NULL, OPT_VALUE, .value = &o->shape},
        {"--axes", NULL, OPT_VALUE, .value = &o->axes}, {"--strides", NULL, OPT_VALUE, .value = &o->strides},
        {"--nan", NULL, OPT_VALUE, .value = &o->nan}, {"--backend", NULL, OPT_VALUE, .value = &o->backend},
        {"--repeat", NULL, OPT_VALUE, .value = &o->repeat}, {"--seed", NULL, OPT_VALUE, .value = &o->seed},
        {"--in", NULL, OPT_VALUE, .value = &o->in}, {"--out", NULL, OPT_VALUE, .value = &o->out},
        {"--out-init", NULL, OPT_VALUE, .value = &o->out_init}, {"--sim-budget", NULL, OPT_VALUE, .value = &o->sim_budget},
        {"--out2", NULL, OPT_VALUE, .value = &o->out2}, {"--index-dtype", NULL, OPT_VALUE, .value = &o->index_dtype},
        {"--correction", NULL, OPT_VALUE, .value = &o->correction}, {"--offsets", NULL, OPT_VALUE, .value = &o->offsets},
        {"--check", NULL, OPT_FLAG, .flag = &o->check}, {"--explain", NULL, OPT_FLAG, .flag = &o->explain},
        {"--accumulate", NULL, OPT_FLAG, .flag = &o->accumulate}, {"--specials", NULL, OPT_FLAG, .flag = &o->specials},
    };
    int n;
    return parse_options("reduce", argc, argv, specs, sizeof specs / sizeof specs[0], NULL, 0, &n);
}

/* "f32[3, 5]" */
static const char *tensor_text(tilec_dtype dt, const int64_t *shape, int rank, char *buf, size_t n) {
    size_t at = (size_t)snprintf(buf, n, "%s[", tilec_dtype_name(dt));
    for (int k = 0; k < rank && at < n; k++) at += (size_t)snprintf(buf + at, n - at, "%s%" PRId64, k ? ", " : "", shape[k]);
    if (at < n) snprintf(buf + at, n - at, "]");
    return buf;
}

/* Reads exactly `bytes` bytes of PATH, the content of `what` (the input, the output): a
 * file of another size is an error that names both sizes. */
static unsigned char *read_tensor(const char *opt, const char *path, const char *what, const char *dims, size_t bytes,
                                  tilec_dtype dt, const int64_t *shape, int rank) {
    if (is_npy_path(path)) return read_npy_tensor(opt, path, dt, shape, rank, bytes, what, dims);
    size_t len;
    int64_t size;
    char *data = read_input(path, bytes, &len, &size);
    if (data && (size < 0 || (uint64_t)size != bytes)) {
        char have[48];
        fprintf(stderr, "tilec reduce: %s '%s' has %s bytes, but %s %s is %zu bytes\n", opt, path,
                size_text(size, bytes, have, sizeof have), what, dims, bytes);
        free(data);
        return NULL;
    }
    return (unsigned char *)data;
}

/* --offsets FILE: a .npy of int64 or int32 (1-D), or text of decimal integers separated by
 * commas or white space, each read by the strict parser: *n offsets (nsegs + 1) into a
 * malloc'd *out, of int32 when *i32. EXIT_OK, or a code with a message. */
enum { MAX_OFFSETS_TEXT = 1 << 30 };
static int read_offsets(const char *path, void **out, int64_t *n, bool *i32) {
    *out = NULL;
    if (is_npy_path(path)) {
        npy_header h;
        int fd;
        if (npy_open("--offsets", path, &h, &fd)) return EXIT_BAD_INPUT;
        bool ok = !npy_layout("--offsets", path, &h);
        if (ok && ((h.dtype != TILEC_I64 && h.dtype != TILEC_I32) || h.rank != 1))
            fprintf(stderr, "tilec reduce: --offsets '%s' holds '%s' of %d dims; give a 1-D int64 or int32 array of nsegs + 1 "
                            "offsets (save np.asarray(x, dtype=np.int64).ravel())\n", path, h.descr, h.rank);
        else if (ok && h.shape[0] < 1)
            fprintf(stderr, "tilec reduce: --offsets '%s' holds no offsets (shape (0,)); give nsegs + 1 of them, at least "
                            "one (np.array([0]): no segments)\n", path);
        if (!ok || (h.dtype != TILEC_I64 && h.dtype != TILEC_I32) || h.rank != 1 || h.shape[0] < 1) {
            close(fd);
            return EXIT_BAD_INPUT;
        }
        *i32 = h.dtype == TILEC_I32;
        *n = h.shape[0];
        char dims[64];
        snprintf(dims, sizeof dims, "%s[%" PRId64 "]", tilec_dtype_name(h.dtype), *n);
        *out = npy_read_data("--offsets", path, fd, (size_t)*n * (*i32 ? 4 : 8), dims);
        return *out ? EXIT_OK : EXIT_BAD_INPUT;
    }
    size_t len;
    int64_t size;
    char *text = read_input(path, MAX_OFFSETS_TEXT, &len, &size);
    if (!text) return EXIT_BAD_INPUT;
    if (size < 0 || (uint64_t)size != len) {
        fprintf(stderr, "tilec reduce: --offsets '%s' is more than %d bytes of text; give a .npy\n", path, MAX_OFFSETS_TEXT);
        free(text);
        return EXIT_BAD_INPUT;
    }
    int64_t *v = malloc((len / 2 + 1) * sizeof *v), k = 0;
    int rc = v ? EXIT_OK : EXIT_BAD_INPUT;
    if (!v)
        fprintf(stderr, "tilec reduce: out of memory for the offsets of --offsets '%s' (%zu bytes of text); give a "
                        "smaller file, or a .npy\n", path, len);
    for (size_t i = 0; rc == EXIT_OK && i < len;) {
        size_t j = i;
        while (j < len && !strchr(" \t\r\n,", text[j]) && text[j]) j++;
        if (j == i) {
            if (!text[i]) {
                fprintf(stderr, "tilec reduce: --offsets '%s' holds a NUL byte; give decimal integers\n", path);
                rc = EXIT_BAD_INPUT;
            }
            i++;
            continue;
        }
        char num[32];
        if (j - i >= sizeof num) {
            fprintf(stderr, "tilec reduce: --offsets '%s': '%.40s...' is not an offset\n", path, text + i);
            rc = EXIT_BAD_INPUT;
            break;
        }
        memcpy(num, text + i, j - i);
        num[j - i] = 0;
        if (parse_int("reduce", "--offsets", num, -TILEC_MAX_ELEMENTS, TILEC_MAX_ELEMENTS, &v[k++])) rc = EXIT_BAD_INPUT;
        i = j;
    }
    free(text);
    if (rc == EXIT_OK && k < 1) {
        fprintf(stderr, "tilec reduce: --offsets '%s' holds no offsets; give nsegs + 1 of them (0 10 25: two segments)\n", path);
        rc = EXIT_BAD_INPUT;
    }
    if (rc != EXIT_OK) {
        free(v);
        return rc;
    }
    *out = v;
    *n = k;
    *i32 = false;
    return EXIT_OK;
}

int cmd_reduce(int argc, char **argv) {
    reduce_opts o = {0};
    int bad = reduce_options(argc, argv, &o);
    if (bad) return bad;
    /* a .npy input says its dtype and shape: --dtype and --shape may be left out */
    char npy_dtype[16], npy_shape[TILEC_MAX_RANK * 17 + 1];
    if (o.in && is_npy_path(o.in) && (!o.dtype || !o.shape)) {
        if (o.strides && !o.shape)
            return usage_error("reduce", "%s--strides needs --shape: a .npy --in then holds the memory the view reaches", "");
        npy_header h;
        int fd;
        if (npy_open("--in", o.in, &h, &fd)) return EXIT_BAD_INPUT;
        close(fd); /* read again below, with the dtype and shape checked */
        if (!o.dtype) {
            if (npy_layout("--in", o.in, &h)) return EXIT_BAD_INPUT; /* how to save it instead */
            if (h.dtype == TILEC_DTYPE_COUNT) {
                fprintf(stderr, "tilec reduce: --in '%s' holds dtype '%s', which tilec does not reduce%s\n", o.in, h.descr,
                        !strcmp(h.descr, "<u2") ? " (give --dtype bf16 to read its 16-bit patterns as bf16)"
                                                : "; save x.astype('float32') or another dtype tilec takes (docs/cli.md)");
                return EXIT_BAD_INPUT;
            }
            snprintf(npy_dtype, sizeof npy_dtype, "%s", tilec_dtype_name(h.dtype));
            o.dtype = npy_dtype;
        }
        if (!o.shape) {
            if (h.rank == 0) {
                fprintf(stderr, "tilec reduce: --in '%s' holds one number (shape ()); give --shape 1 to reduce it\n", o.in);
                return EXIT_BAD_INPUT;
            }
            size_t at = 0;
            for (int k = 0; k < h.rank; k++)
                at += (size_t)snprintf(npy_shape + at, sizeof npy_shape - at, "%s%" PRId64, k ? "x" : "", h.shape[k]);
            o.shape = npy_shape;
        }
    }
    if (!o.op || !o.dtype || !o.shape) { /* name the missing ones */
        const char *missing[3];
        int n = 0;
        if (!o.op) missing[n++] = "--op";
        if (!o.dtype) missing[n++] = "--dtype";
        if (!o.shape) missing[n++] = "--shape";
        char msg[160];
        snprintf(msg, sizeof msg, "%s%s%s%s%s %s required (e.g. --op sum --dtype f32 --shape 4096x1024)", missing[0],
                 n == 3 ? ", " : n == 2 ? " and " : "", n > 1 ? missing[1] : "", n == 3 ? " and " : "",
                 n == 3 ? missing[2] : "", n == 1 ? "is" : "are");
        return usage_error("reduce", "%s", msg);
    }
    tilec_reduce_desc d = {.op = TILEC_OP_COUNT, .dtype = TILEC_DTYPE_COUNT, .naxes = 1, .axes = {-1}};
    for (int t = 0; t < TILEC_OP_COUNT; t++)
        if (!strcmp(o.op, tilec_op_name((tilec_op)t))) d.op = (tilec_op)t;
    if (d.op == TILEC_OP_COUNT) {
        const char *names[TILEC_OP_COUNT];
        for (int t = 0; t < TILEC_OP_COUNT; t++) names[t] = tilec_op_name((tilec_op)t);
        char ops[128], msg[256];
        snprintf(msg, sizeof msg, "--op must be %s, not '%.100s'", join_names(ops, sizeof ops, names, TILEC_OP_COUNT), o.op);
        return usage_error("reduce", "%s", msg);
    }
    int rc;
    if ((rc = parse_dtype("reduce", "--dtype", o.dtype, ALL_DTYPES, &d.dtype))) return rc;
    tilec_dtype out_dt = d.dtype, wide = tilec_dtype_wide(d.dtype);
    if (o.out_dtype) {
        tilec_dtype asked = TILEC_DTYPE_COUNT; /* f64 or float64 */
        for (int t = 0; t < TILEC_DTYPE_COUNT; t++)
            if (!strcmp(o.out_dtype, tilec_dtype_name((tilec_dtype)t)) || !strcmp(o.out_dtype, numpy_dtype_name((tilec_dtype)t)))
                asked = (tilec_dtype)t;
        d.widen = wide != d.dtype && asked == wide;
        if (!d.widen && asked != d.dtype) {
            if (wide != d.dtype)
                fprintf(stderr, "tilec reduce: --out-dtype %s for input dtype %s: give %s, or %s (the wider result)\n",
                        o.out_dtype, tilec_dtype_name(d.dtype), tilec_dtype_name(d.dtype), tilec_dtype_name(wide));
            else
                fprintf(stderr, "tilec reduce: --out-dtype %s for input dtype %s: %s has no wider result; give %s\n",
                        o.out_dtype, tilec_dtype_name(d.dtype), tilec_dtype_name(d.dtype), tilec_dtype_name(d.dtype));
            return EXIT_USAGE;
        }
        out_dt = d.widen ? wide : d.dtype;
    }
    bool two = tilec_op_outputs(d.op) == 2; /* argmax, argmin: the indices too; aminmax: the maxima */
    if (!two && (o.out2 || o.index_dtype))
        return usage_error("reduce", "%s--out2 is for argmax, argmin and aminmax, which have a second output; "
                                     "--index-dtype for the first two", "");
    if (o.index_dtype && tilec_op_second_dtype(d.op, d.dtype) != TILEC_I64)
        return usage_error("reduce", "--index-dtype is for argmax and argmin: %s's second output is in the input's dtype", o.op);
    if (o.index_dtype) {
        tilec_dtype it;
        if ((rc = parse_dtype("reduce", "--index-dtype", o.index_dtype, 1u << TILEC_I64 | 1u << TILEC_I32, &it))) return rc;
        d.index_i32 = it == TILEC_I32;
    }
    if (o.nan) {
        d.nan = TILEC_NAN_COUNT;
        for (int t = 0; t < TILEC_NAN_COUNT; t++)
            if (!strcmp(o.nan, tilec_nan_name((tilec_nan)t))) d.nan = (tilec_nan)t;
        if (d.nan == TILEC_NAN_COUNT) return usage_error("reduce", "--nan must be propagate or ignore, not '%s'", o.nan);
    }
    int n;
    int64_t correction;
    if (o.correction && !tilec_op_takes_correction(d.op))
        return usage_error("reduce", "--correction is for var and std, not %s", o.op);
    if (o.correction) {
        if ((rc = parse_int("reduce", "--correction", o.correction, 0, INT64_MAX, &correction))) return rc;
        d.correction = &correction;
    }
    int64_t vals[TILEC_MAX_RANK];
    if ((rc = parse_int_list("reduce", "--shape", o.shape, 'x', 0, TILEC_MAX_ELEMENTS, vals, TILEC_MAX_RANK, &n)))
        return rc;
    d.rank = n;
    for (int k = 0; k < n; k++) d.shape[k] = vals[k];
    if (o.axes) {
        if ((rc = parse_int_list("reduce", "--axes", o.axes, ',', -TILEC_MAX_RANK, TILEC_MAX_RANK - 1, vals,
                                 TILEC_MAX_RANK, &n)))
            return rc;
        d.naxes = n;
        for (int k = 0; k < n; k++) d.axes[k] = (int)vals[k];
    }
    int64_t strides[TILEC_MAX_RANK];
    if (o.strides) {
        if ((rc = parse_int_list("reduce", "--strides", o.strides, ',', -TILEC_MAX_ELEMENTS, TILEC_MAX_ELEMENTS, strides,
                                 TILEC_MAX_RANK, &n)))
            return rc;
        if (n != d.rank) {
            fprintf(stderr, "tilec reduce: --strides %s gives %d strides for the %d dims of --shape %s: give one per dim\n",
                    o.strides, n, d.rank, o.shape);
            return EXIT_USAGE;
        }
        d.strides = strides;
    }
    d.accumulate = o.accumulate;
    /* --offsets: segments of the one axis, read once the outputs are checked (the output's
     * shape depends on them) */
    void *h_off = NULL;
    int64_t noff = 0;
    bool off_i32 = false;
    if (o.offsets) {
        if (d.naxes != 1 || d.strides)
            return usage_error("reduce", "%s--offsets cuts one axis into segments: give one --axes (or none: the last) "
                                         "and no --strides", "");
    }
    tilec_backend backend = TILEC_BACKEND_AUTO;
    if (o.backend && (rc = parse_backend("reduce", "--backend", o.backend, false, &backend))) return rc;
    int64_t repeat = -1; /* not given: 10 timed calls on a GPU, none on the simulator */
    if (o.repeat && (rc = parse_int("reduce", "--repeat", o.repeat, 0, MAX_REPEAT, &repeat))) return rc;
    uint64_t seed = 1;
    if (o.seed && (rc = parse_uint("reduce", "--seed", o.seed, UINT64_MAX, &seed))) return rc;
    uint64_t budget = 0;
    if (o.sim_budget && (rc = parse_sim_budget("reduce", o.sim_budget, &budget))) return rc;
    const char *const binary[2][2] = {{"--out", o.out}, {"--out2", o.out2}};
    for (int k = 0; k < 2; k++)
        if (binary[k][1] && writes_terminal(binary[k][1])) {
            fprintf(stderr, "tilec reduce: will not write %s's raw tensor bytes to a terminal; use %s FILE or redirect "
                            "standard output (> FILE)\n", binary[k][0], binary[k][0]);
            return EXIT_USAGE;
        }
    /* no output overwrites an input, nor the other output */
    named_file outs[2];
    int nout = 0;
    if (o.out) outs[nout++] = (named_file){"--out", NULL, o.out, "out"};
    if (o.out2) outs[nout++] = (named_file){"--out2", NULL, o.out2, "out2"};
    /* a NULL path: not given; --out may be --out-init's file (accumulating in place) */
    const named_file ins[3] = {{"--in", NULL, o.in, "in"}, {"--out-init", NULL, o.out_init, "out"},
                               {"--offsets", NULL, o.offsets, NULL}};
    if ((rc = check_outputs("reduce", outs, nout, ins, 3))) return rc;
    /* raw bytes on standard output are all that goes there: the report goes to stderr */
    FILE *report = (o.out && writes_stdout(o.out)) || (o.out2 && writes_stdout(o.out2)) ? stderr : stdout;
    if (o.out_init && !o.accumulate)
        return usage_error("reduce", "%s--out-init gives the output before an accumulating call: it needs --accumulate", "");
    if (o.out && o.accumulate && !o.out_init)
        return usage_error("reduce", "%s--accumulate with --out needs --out-init FILE, the output before the call "
                                     "(without it the output starts from random values)", "");
    if (o.offsets && (rc = read_offsets(o.offsets, &h_off, &noff, &off_i32))) return rc;
    int64_t nsegs = noff - 1;

    /* sizes, checked before anything is allocated: every product stays within 2^48 */
    int64_t kept[TILEC_MAX_RANK];
    int nkept = 0;
    bool red[TILEC_MAX_RANK] = {0};
    for (int k = 0; k < d.naxes; k++) {
        int ax = d.axes[k] < 0 ? d.axes[k] + d.rank : d.axes[k];
        if (ax < 0 || ax >= d.rank) { /* before the output is sized from the axes */
            fprintf(stderr, "tilec reduce: axis %d is out of range for rank %d (axes %d to %d)\n", d.axes[k], d.rank,
                    -d.rank, d.rank - 1);
            return EXIT_BAD_INPUT;
        }
        red[ax] = true; /* an axis given twice: the library says so */
    }
    for (int k = 0; k < d.rank; k++)
        if (!red[k] || o.offsets) kept[nkept++] = red[k] ? nsegs : d.shape[k]; /* segments: the axis holds them */
    int64_t in_n = tensor_elements(d.shape, d.rank), out_n = tensor_elements(kept, nkept);
    size_t es = tilec_dtype_size(d.dtype);
    if (in_n < 0 || (uint64_t)in_n > SIZE_MAX / es || (uint64_t)out_n > SIZE_MAX / es) {
        fprintf(stderr, "tilec reduce: --shape %s has more than 2^48 elements (the extents other than 0 multiply to "
                        "more); tilec reduces tensors of up to 2^48 elements\n", o.shape);
        return EXIT_USAGE;
    }
    /* a strided view: its memory runs from its lowest element (element [0, ...] is `origin`
     * past it) to its highest, span elements; the library checks the bounds again */
    int64_t origin = 0, span = in_n, lo = 0, hi = 0;
    for (int k = 0; d.strides && in_n > 0 && k < d.rank; k++) {
        int64_t reach;
        if (__builtin_mul_overflow(d.shape[k] - 1, d.strides[k], &reach) ||
            __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi) || hi - lo >= TILEC_MAX_ELEMENTS) {
            fprintf(stderr, "tilec reduce: --strides %s with --shape %s reach more than 2^48 elements\n", o.strides, o.shape);
            return EXIT_USAGE;
        }
        origin = -lo;
        span = hi - lo + 1;
    }
    if ((uint64_t)span > SIZE_MAX / es) return EXIT_USAGE;
    size_t eo = tilec_dtype_size(out_dt);
    if ((uint64_t)out_n > SIZE_MAX / eo) return EXIT_USAGE;
    size_t in_bytes = (size_t)span * es, out_bytes = (size_t)out_n * eo, out2_bytes = two ? (size_t)out_n * tilec_dtype_size(d.index_i32 ? TILEC_I32 : tilec_op_second_dtype(d.op, out_dt)) : 0;
    char in_dims[256], out_dims[256];
    tensor_text(d.dtype, d.shape, d.rank, in_dims, sizeof in_dims);
    if (d.strides) /* the memory the view reaches, which --in holds and random data fills */
        snprintf(in_dims + strlen(in_dims), sizeof in_dims - strlen(in_dims), " with --strides %.60s (%" PRId64
                 " elements of memory)", o.strides, span);
    tensor_text(out_dt, kept, nkept, out_dims, sizeof out_dims);
    if (nkept == 0) snprintf(out_dims, sizeof out_dims, "%s[1]", tilec_dtype_name(out_dt));

    rc = EXIT_OK;
    tilec_status st = TILEC_OK;
    tilec_ctx *ctx = NULL;
    void *d_in = NULL, *d_out = NULL, *d_out2 = NULL, *d_off = NULL;
    size_t off_bytes = (size_t)noff * (off_i32 ? 4 : 8);
    int64_t mem_shape[1] = {span}; /* what a strided --in holds: the memory the view reaches */
    unsigned char *h_in = o.in ? read_tensor("--in", o.in, "the input", in_dims, in_bytes, d.dtype,
                                             d.strides ? mem_shape : d.shape, d.strides ? 1 : d.rank)
                               : malloc(in_bytes + 1);
    unsigned char *h_before = o.out_init ? read_tensor("--out-init", o.out_init, "the output", out_dims, out_bytes, out_dt,
                                                       kept, nkept)
                                         : calloc(1, out_bytes + 1);
    unsigned char *h_out = calloc(1, out_bytes + 1), *h_out2 = calloc(1, out2_bytes + 1);
    if (!h_in || !h_before || !h_out || !h_out2) {
        if ((!o.in || h_in) && (!o.out_init || h_before))
            fprintf(stderr, "tilec reduce: out of memory for %s and %s\n", in_dims, out_dims);
        rc = EXIT_BAD_INPUT;
        goto done;
    }
    if (!o.in) fill_random(d.dtype, h_in, span, &seed, o.specials);
    if (d.accumulate && !o.out_init) fill_random(out_dt, h_before, out_n, &seed, o.specials);
    if (tilec_open(&ctx) != TILEC_OK) { fprintf(stderr, "tilec reduce: out of memory\n"); rc = EXIT_BAD_INPUT; goto done; }
    tilec_set_sim_budget(ctx, budget);
    tilec_target where;
    if ((st = tilec_runtime_open(ctx, backend, 0)) || (st = tilec_runtime_target(ctx, &where))) goto failed;
    bool sim = where.backend == TILEC_BACKEND_SIM;
    if (repeat < 0) repeat = sim ? 0 : 10; /* timing the simulator measures the CPU, slowly */
    if ((st = tilec_mem_alloc(ctx, in_bytes, &d_in)) || (st = tilec_mem_alloc(ctx, out_bytes, &d_out)) ||
        (st = tilec_mem_upload(ctx, d_in, h_in, in_bytes)) || (st = tilec_mem_upload(ctx, d_out, h_before, out_bytes)) ||
        (two && (st = tilec_mem_alloc(ctx, out2_bytes ? out2_bytes : 1, &d_out2))))
        goto failed;
    d.out2 = d_out2;
    if (o.offsets && ((st = tilec_mem_alloc(ctx, off_bytes, &d_off)) || (st = tilec_mem_upload(ctx, d_off, h_off, off_bytes))))
        goto failed;
    char *plan = NULL;
    if (o.offsets) { /* the plan is chosen on the device's side of the call: say what is reduced */
        out_printf(report, "segments: %" PRId64 " of axis %d (%s offsets from %s), each folded as a dense row of its length\n",
                   nsegs, d.axes[0], off_i32 ? "int32" : "int64", o.offsets);
    } else if ((st = tilec_reduce_explain(ctx, &d, &plan))) goto failed;
    print_warnings(ctx); /* the plan is compiled here: TILEC_DUMP_SOURCE's */
    if (!plan) {
    } else if (o.explain) out_printf(report, "%s", plan);
    else { /* the short form: backend, view and variant lines */
        for (char *line = strtok(plan, "\n"); line; line = strtok(NULL, "\n"))
            if (!strncmp(line, "backend", 7) || !strncmp(line, "view", 4) || !strncmp(line, "variant", 7) ||
                !strncmp(line, "the output", 10) || !strncmp(line, "a reduced", 9))
                out_printf(report, "%s\n", line);
    }
    tilec_free(plan);
    /* the first call is the one --out writes and --check compares; the timed ones
     * (accumulating calls would keep adding) follow and change neither */
    if (sim && in_n >= LONG_SIMULATION) { /* say what takes the time before it does */
        flush_output(report);
        fprintf(stderr, "tilec reduce: simulating %s (%" PRId64 " elements) on the CPU, every thread of every CTA in turn: "
                        "this takes a while%s (--backend cuda or hip runs it on a GPU)\n",
                in_dims, in_n, repeat > 0 ? ", then as long again for each --repeat call" : "");
        flush_output(stderr);
    }
    double t0 = now_s();
    void *at = (char *)d_in + (size_t)origin * es; /* element [0, ..., 0] */
    if ((st = o.offsets ? tilec_reduce_segmented(ctx, &d, d_off, off_i32, nsegs, at, d_out) : tilec_reduce(ctx, &d, at, d_out)) ||
        (st = tilec_synchronize(ctx)))
        goto failed;
    double first = now_s() - t0;
    if ((st = tilec_mem_download(ctx, h_out, d_out, out_bytes)) || (two && (st = tilec_mem_download(ctx, h_out2, d_out2, out2_bytes))))
        goto failed;
    tilec_dtype out2_dt = d.index_i32 ? TILEC_I32 : tilec_op_second_dtype(d.op, out_dt);
    if (o.out && (rc = write_tensor(o.out, out_dt, kept, nkept, h_out, out_bytes)) != EXIT_OK) goto done;
    if (o.out2 && (rc = write_tensor(o.out2, out2_dt, kept, nkept, h_out2, out2_bytes)) != EXIT_OK) goto done;
    if (o.check && o.offsets) { /* each segment against the reference of a row of its elements */
        int ax = d.axes[0] < 0 ? d.axes[0] + d.rank : d.axes[0];
        int64_t rows = 1, extent = d.shape[ax], nbad = 0, first_bad = -1;
        for (int k = 0; k < ax; k++) rows *= d.shape[k];
        size_t e2 = two ? tilec_dtype_size(d.index_i32 ? TILEC_I32 : tilec_op_second_dtype(d.op, out_dt)) : 0;
        double worst = 0;
        bool exact = true;
        for (int64_t r = 0; r < rows && !st; r++)
            for (int64_t g = 0; g < nsegs && !st; g++) {
                int64_t s0 = off_i32 ? ((int32_t *)h_off)[g] : ((int64_t *)h_off)[g];
                int64_t s1 = off_i32 ? ((int32_t *)h_off)[g + 1] : ((int64_t *)h_off)[g + 1], at_o = r * nsegs + g;
                tilec_reduce_desc one = d;
                one.rank = 1;
                one.shape[0] = s1 - s0;
                one.axes[0] = 0;
                one.out2 = two ? h_out2 + (size_t)at_o * e2 : NULL;
                tilec_check_result cr;
                st = tilec_reduce_check(ctx, &one, h_in + (size_t)(r * extent + s0) * es, h_before + (size_t)at_o * eo,
                                        h_out + (size_t)at_o * eo, &cr);
                if (!st && !cr.ok && nbad++ == 0) first_bad = at_o;
                if (!st && cr.max_error > worst) worst = cr.max_error;
                exact = exact && (st || cr.exact);
            }
        if (st) goto failed;
        out_printf(report, "check: %" PRId64 " segment%s%s, each against the reference of its row, largest error %g: %s\n",
                   rows * nsegs, rows * nsegs == 1 ? "" : "s", exact ? " exact" : "", worst, nbad ? "MISMATCH" : "ok");
        if (nbad) {
            out_printf(report, "  %" PRId64 " segment%s differ; the first is output [%" PRId64 "]\n", nbad, nbad == 1 ? "" : "s",
                       first_bad);
            rc = EXIT_BAD_INPUT;
        }
    } else if (o.check) {
        tilec_check_result r;
        tilec_reduce_desc host = d; /* the indices as downloaded */
        host.out2 = two ? h_out2 : NULL;
        if ((st = tilec_reduce_check(ctx, &host, h_in + (size_t)origin * es, h_before, h_out, &r))) goto failed;
        if (r.exact) out_printf(report, "check: exact, largest error %g: %s\n", r.max_error, r.ok ? "ok" : "MISMATCH");
        else out_printf(report, "check: largest error %.3g of the magnitude (tolerance %g): %s\n", r.max_error, r.tolerance, r.ok ? "ok" : "MISMATCH");
        if (!r.ok) {
            out_printf(report, "  %" PRId64 " elements of %s differ; the first is [%" PRId64 "]: got %.9g, want %.9g\n", r.mismatches,
                   r.param && !strcmp(r.param, "out2") ? "the indices" : "the output", r.first_bad, r.got, r.want);
            rc = EXIT_BAD_INPUT;
        }
    }
    if (repeat == 0) {
        out_printf(report, "first call %.3f ms (planning and compiling included)\n", first * 1e3);
        goto done;
    }
    t0 = now_s();
    for (int64_t k = 0; k < repeat && !st; k++)
        st = o.offsets ? tilec_reduce_segmented(ctx, &d, d_off, off_i32, nsegs, at, d_out) : tilec_reduce(ctx, &d, at, d_out);
    if (!st) st = tilec_synchronize(ctx);
    if (st) goto failed;
    double each = (now_s() - t0) / (double)repeat;
    out_printf(report, "first call %.3f ms (planning and compiling included); then %.3f ms per call over %" PRId64 " call%s",
               first * 1e3, each * 1e3, repeat, repeat == 1 ? "" : "s");
    /* a bandwidth is the GPU's; the simulator's time is the CPU's, which says nothing of it */
    if (sim) out_printf(report, ", simulated on the CPU (no bandwidth)\n");
    else out_printf(report, ", %.3f GB/s\n", (double)(in_bytes + out_bytes + out2_bytes + off_bytes) / each / 1e9);
    goto done;
failed:
    fputs(tilec_diag_text(ctx), stderr);
    rc = st == TILEC_ERR_UNAVAILABLE ? EXIT_UNAVAILABLE : EXIT_BAD_INPUT;
done:
    if (ctx) {
        tilec_mem_free(ctx, d_in);
        tilec_mem_free(ctx, d_out);
        tilec_mem_free(ctx, d_out2);
        tilec_mem_free(ctx, d_off);
    }
    free(h_off);
    free(h_in);
    free(h_out);
    free(h_out2);
    free(h_before);
    tilec_close(ctx);
    return rc;
}
