/*
 * costs.c — the cost model's constants files (docs/dispatch.md#calibrated-constants): the
 * text tilec_calibrate writes for one device, read back strictly (tilec_costs_load, and
 * the runtime when it opens that device), never trusted when it is not byte for byte
 * what was written.
 *
 * A file is lines of "key value", '#' comments, and last a line "sha256 HEX" of every
 * byte before it, so a truncated, edited or damaged file is refused as a whole rather
 * than read for a wrong number. Numbers are written and read as plain decimals with at
 * most three decimal places, by hand: never through the C locale's decimal point.
 */
#include "costs.h"

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The constants, in the file's order: name and offset in tilec_costs. */
static const struct {
    const char *name;
    size_t off;
} fields[] = {
#define TILEC_X_(n, what) {#n, offsetof(tilec_costs, n)},
    TILEC_COSTS_LIST(TILEC_X_)
#undef TILEC_X_
};
enum { NFIELDS = sizeof fields / sizeof fields[0] };

/* The other keys, in the file's order; FORMAT first. */
enum { K_FORMAT, K_DEVICE, K_ARCH, K_WARP, K_SMS, K_TILEC, NKEYS };
static const char *const keys[NKEYS] = {"format", "device", "arch", "warp-size", "sms", "tilec"};

#define FORMAT_LINE "tilec-costs 1"

const char *tilec_costs_name(int i) { return i >= 0 && i < NFIELDS ? fields[i].name : NULL; }

static double *field(tilec_costs *c, int i) { return (double *)((char *)c + fields[i].off); }

/* v to three decimal places, by hand (no locale): "23.050" */
static void put_number(ir_str *s, double v) {
    long long m = (long long)(v * 1000 + 0.5);
    ir_str_printf(s, "%lld.%03lld", m / 1000, m % 1000);
}

void rt_costs_format(ir_str *s, const rt_costs_file *f) {
    size_t start = s->len;
    ir_str_printf(s, "# The in-kernel cost model's constants for one GPU, in cycles, measured by `tilec calibrate`\n"
                     "# (docs/dispatch.md#calibrated-constants). The last line is the SHA-256 of every byte\n"
                     "# before it: a file changed by hand is refused; calibrate again instead.\n");
    ir_str_printf(s, "format %s\ndevice %s\narch %s\nwarp-size %d\nsms %d\ntilec %s\n", FORMAT_LINE, f->device, f->arch,
                  f->warp_size, f->sms, TILEC_VERSION_STRING);
    for (int i = 0; i < NFIELDS; i++) {
        ir_str_printf(s, "%s ", fields[i].name);
        put_number(s, *field((tilec_costs *)&f->c, i));
        ir_str_printf(s, "\n");
    }
    if (s->oom) return;
    char hex[65];
    rt_sha256_hex(s->data + start, s->len - start, hex);
    ir_str_printf(s, "sha256 %s\n", hex);
}

/* A failure at line `line`, column `col` (1-based), into e. */
static bool fail(rt_costs_error *e, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool fail(rt_costs_error *e, int line, int col, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    e->line = line;
    e->col = col;
    return false;
}

/* A constant: 1 to 6 digits, optionally '.' and 1 to 3 digits; above 0, at most 100000. */
static bool number(const char *p, size_t n, double *out) {
    size_t i = 0;
    long long whole = 0, frac = 0, scale = 1;
    while (i < n && p[i] >= '0' && p[i] <= '9' && i < 6) whole = whole * 10 + (p[i++] - '0');
    if (i == 0) return false;
    if (i < n && p[i] == '.') {
        size_t d = ++i;
        while (i < n && p[i] >= '0' && p[i] <= '9' && i - d < 3) { frac = frac * 10 + (p[i++] - '0'); scale *= 10; }
        if (i == d) return false;
    }
    if (i != n) return false;
    *out = (double)whole + (double)frac / (double)scale;
    return *out > 0 && *out <= 100000;
}

static bool integer(const char *p, size_t n, long long hi, int *out) {
    long long v = 0;
    if (n == 0 || n > 6 || (n > 1 && p[0] == '0')) return false;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        v = v * 10 + (p[i] - '0');
    }
    if (v < 1 || v > hi) return false;
    *out = (int)v;
    return true;
}

static bool printable(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] > 0x7e) return false;
    return true;
}

bool rt_costs_parse(const char *text, size_t len, rt_costs_file *out, rt_costs_error *e) {
    memset(out, 0, sizeof *out);
    memset(e, 0, sizeof *e);
    if (len > RT_COSTS_MAX_BYTES)
        return fail(e, 0, 0, "it has %zu bytes, more than a constants file has (at most %d)", len, RT_COSTS_MAX_BYTES);
    if (len == 0) return fail(e, 0, 0, "it is empty");
    if (memchr(text, '\0', len)) return fail(e, 0, 0, "it has a NUL byte: it is not a constants file");
    if (text[len - 1] != '\n') {
        int lines = 1;
        for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
        return fail(e, lines, 1, "the file ends inside a line: it was cut short (truncated); calibrate again");
    }
    /* the last line: "sha256 HEX" over every byte before it */
    size_t last = len - 1;
    while (last > 0 && text[last - 1] != '\n') last--;
    int nlines = 0;
    for (size_t i = 0; i < last; i++) nlines += text[i] == '\n';
    const char *sl = text + last;
    size_t slen = len - 1 - last;
    if (slen != 7 + 64 || strncmp(sl, "sha256 ", 7) != 0)
        return fail(e, nlines + 1, 1, "the last line is not 'sha256' and the checksum of the lines above it: the file "
                                      "was cut short (truncated) or is not one `tilec calibrate` wrote");
    char hex[65];
    rt_sha256_hex(text, last, hex);
    if (memcmp(hex, sl + 7, 64) != 0)
        return fail(e, nlines + 1, 8, "the checksum does not match the lines above it: the file was edited or damaged; "
                                      "calibrate again rather than changing it by hand");
    /* the lines above it */
    bool seen_key[NKEYS] = {false}, seen_field[NFIELDS] = {false};
    int line = 0;
    for (size_t p = 0; p < last;) {
        line++;
        const char *l = text + p, *nl = memchr(l, '\n', last - p);
        size_t n = (size_t)(nl - l);
        p += n + 1;
        if (n == 0) return fail(e, line, 1, "an empty line: a constants file has none");
        if (!printable(l, n)) return fail(e, line, 1, "the line has a byte that is not printable ASCII");
        if (l[0] == '#') continue;
        const char *sp = memchr(l, ' ', n);
        if (!sp || sp == l || sp + 1 == l + n)
            return fail(e, line, 1, "expected 'KEY VALUE' (one space between them)");
        size_t kn = (size_t)(sp - l), vn = n - kn - 1;
        const char *v = sp + 1;
        int col = (int)kn + 2;
        int k = 0, f = 0;
        while (k < NKEYS && !(strlen(keys[k]) == kn && !strncmp(l, keys[k], kn))) k++;
        while (k == NKEYS && f < NFIELDS && !(strlen(fields[f].name) == kn && !strncmp(l, fields[f].name, kn))) f++;
        if (k == NKEYS && f == NFIELDS)
            return fail(e, line, 1, "unknown key '%.*s': a constants file has format, device, arch, warp-size, sms, "
                                    "tilec and the constants lds_latency ... instruction", (int)(kn > 40 ? 40 : kn), l);
        if (k < NKEYS ? seen_key[k] : seen_field[f])
            return fail(e, line, 1, "'%s' is given twice", k < NKEYS ? keys[k] : fields[f].name);
        if (k != K_FORMAT && !seen_key[K_FORMAT])
            return fail(e, line, 1, "the first key must be 'format %s'", FORMAT_LINE);
        if (k < NKEYS) seen_key[k] = true;
        else seen_field[f] = true;
        switch (k) {
        case K_FORMAT:
            if (vn != strlen(FORMAT_LINE) || strncmp(v, FORMAT_LINE, vn) != 0)
                return fail(e, line, col, "format '%.*s' is not one this tilec reads ('%s'): calibrate again with this "
                                          "tilec", (int)(vn > 40 ? 40 : vn), v, FORMAT_LINE);
            break;
        case K_DEVICE:
            if (vn >= sizeof out->device) return fail(e, line, col, "the device's name is longer than %zu characters", sizeof out->device - 1);
            memcpy(out->device, v, vn);
            break;
        case K_ARCH:
            if (vn >= sizeof out->arch || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") < vn)
                return fail(e, line, col, "arch '%.*s' is not an arch's name (sm_90, gfx90a)", (int)(vn > 30 ? 30 : vn), v);
            memcpy(out->arch, v, vn);
            break;
        case K_WARP:
            if (!integer(v, vn, 64, &out->warp_size) || (out->warp_size != 32 && out->warp_size != 64))
                return fail(e, line, col, "warp-size must be 32 or 64");
            break;
        case K_SMS: /* 0: the driver did not say */
            if (!(vn == 1 && v[0] == '0') && !integer(v, vn, 100000, &out->sms))
                return fail(e, line, col, "sms must be a count of multiprocessors, 0 (unknown) to 100000");
            break;
        case K_TILEC:
            break; /* the version that wrote it: for people */
        default:
            if (!number(v, vn, field(&out->c, f)))
                return fail(e, line, col, "%s must be a number of cycles above 0 and at most 100000, written as digits "
                                          "with at most 3 decimals (23.050), not '%.*s'", fields[f].name,
                            (int)(vn > 30 ? 30 : vn), v);
        }
    }
    for (int k = 0; k < NKEYS; k++)
        if (!seen_key[k]) return fail(e, 0, 0, "it has no '%s' line", keys[k]);
    for (int f = 0; f < NFIELDS; f++)
        if (!seen_field[f]) return fail(e, 0, 0, "it has no '%s' line", fields[f].name);
    return true;
}

void rt_costs_describe(const rt_costs_file *f, const char *file, char *out, size_t n) {
    if (snprintf(out, n, "%s (measured on %s, %s, %d multiprocessors)", file, f->device, f->arch, f->sms) >= (int)n && n > 4)
        memcpy(out + n - 4, "...", 4); /* a description only: cut, and said to be */
}

tilec_status tilec_costs_load(tilec_ctx *ctx, const char *file, const char *text, size_t len) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!text) {
        ctx->costs_set = false;
        return TILEC_OK;
    }
    if (!file) file = "<constants>";
    rt_costs_file f;
    rt_costs_error e;
    if (!rt_costs_parse(text, len, &f, &e)) {
        ir_source src = {file, text, len};
        ir_diag_add(ctx, e.line ? &src : NULL, TILEC_SEV_ERROR, e.line, e.col, "%s%s%s", e.line ? "" : file,
                    e.line ? "" : ": not a cost model constants file: ", e.message);
        return TILEC_ERR_PARSE;
    }
    ctx->costs = f.c;
    snprintf(ctx->costs_arch, sizeof ctx->costs_arch, "%s", f.arch);
    ctx->costs_warp = f.warp_size;
    rt_costs_describe(&f, file, ctx->costs_what, sizeof ctx->costs_what);
    ctx->costs_set = true;
    return TILEC_OK;
}

/* ---- a device's own file, in the kernel cache's directory --------------------------------- */

void rt_costs_identity(const rt *r, rt_costs_file *f) {
    memset(f, 0, sizeof *f);
    /* the driver's name as a file's line holds it: printable ASCII ('?' for other bytes) */
    size_t n = 0;
    for (const char *p = r->device_name; *p && n + 1 < sizeof f->device; p++, n++)
        f->device[n] = (unsigned char)*p >= 0x20 && (unsigned char)*p <= 0x7e ? *p : '?';
    if (!n) snprintf(f->device, sizeof f->device, "unnamed device");
    snprintf(f->arch, sizeof f->arch, "%s", r->target.arch);
    f->warp_size = r->target.warp_size;
    f->sms = r->target.sms > 0 && r->target.sms <= 100000 ? r->target.sms : 0;
}

void rt_costs_file_name(const rt_costs_file *f, char *out, size_t n) {
    char id[256];
    int len = snprintf(id, sizeof id, "%s\n%s\n%d\n%d\n", f->device, f->arch, f->sms, f->warp_size);
    char hex[65];
    rt_sha256_hex(id, len < 0 ? 0 : (size_t)len < sizeof id ? (size_t)len : sizeof id - 1, hex);
    snprintf(out, n, "costs-%s-%.16s.txt", f->arch, hex);
}

void rt_costs_open(rt *r) {
    r->has_costs = false;
    if (r->target.backend == TILEC_BACKEND_SIM || !r->cache.has_dir) return;
    rt_costs_file me;
    rt_costs_identity(r, &me);
    char name[96];
    rt_costs_file_name(&me, name, sizeof name);
    char *text = NULL, why[400];
    size_t len = 0;
    int got = cache_read_file(&r->cache, name, RT_COSTS_MAX_BYTES, &text, &len, why, sizeof why);
    if (got == 0) return; /* none: the defaults */
    rt_costs_file f;
    rt_costs_error e = {0};
    bool ok = got > 0 && rt_costs_parse(text, len, &f, &e);
    if (got > 0 && !ok && e.line) snprintf(why, sizeof why, "line %d: %s", e.line, e.message);
    else if (got > 0 && !ok) snprintf(why, sizeof why, "%s", e.message);
    if (ok && (strcmp(f.device, me.device) != 0 || strcmp(f.arch, me.arch) != 0 || f.sms != me.sms ||
               f.warp_size != me.warp_size)) {
        ok = false;
        snprintf(why, sizeof why, "it was measured on another device (%s, %s, %d multiprocessors, warp size %d)", f.device,
                 f.arch, f.sms, f.warp_size);
    }
    free(text);
    if (!ok) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_WARNING, 0, 0,
                    "the cost model's constants file %s/%s is not used (%s): the default constants are; run `tilec "
                    "calibrate` on this GPU to measure them again", r->cache.dir, name, why);
        rt_log(r, "cost model constants %s/%s refused: %s", r->cache.dir, name, why);
        return;
    }
    r->costs = f.c;
    char path[PATH_MAX + 100];
    snprintf(path, sizeof path, "%s/%s", r->cache.dir, name);
    rt_costs_describe(&f, path, r->costs_what, sizeof r->costs_what);
    r->has_costs = true;
    r->target.costs = &r->costs;
    r->target.costs_what = r->costs_what;
    rt_log(r, "cost model constants from %s", r->costs_what);
}
