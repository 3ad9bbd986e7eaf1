/*
 * test_costs.c — the cost model's constants files and their measurement, without a GPU:
 * a file written is read back to the same constants; every truncation, an edited byte,
 * bad values under a valid checksum, a missing, repeated or unknown key, another format
 * and an oversized file are refused with a message at the line; tilec_costs_load makes
 * explain and emit plan with the file (and say so), refuses a target of another arch and
 * goes back to the defaults; a constant changed changes a plan; a GPU runtime reads its
 * device's own file from the cache directory and refuses another device's, a corrupt or
 * a symlinked one (with a note); tilec_calibrate refuses the simulator; the micro-kernels
 * compile with NVRTC (and hiprtc where it is installed), their 16-byte chain a real
 * 16-byte load.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../src/runtime/costs.h"
#include "../src/runtime/rtc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static rt_costs_file sample(void) {
    rt_costs_file f;
    memset(&f, 0, sizeof f);
    f.c = (tilec_costs){29.125, 26.5, 4.25, 31.75, 0.901, 1.333, 0.75, 0.25};
    snprintf(f.device, sizeof f.device, "NVIDIA H100 80GB HBM3");
    snprintf(f.arch, sizeof f.arch, "sm_90");
    f.warp_size = 32;
    f.sms = 132;
    return f;
}

static char *text_of(const rt_costs_file *f, size_t *n) {
    ir_str s = {0};
    rt_costs_format(&s, f);
    assert_false(s.oom);
    *n = s.len;
    return s.data;
}

/* body (lines without the checksum) with its right checksum line appended */
static char *signed_text(const char *body, size_t *n) {
    uint8_t sum[32];
    rt_sha256(body, strlen(body), sum);
    size_t len = strlen(body);
    char *t = malloc(len + 7 + 64 + 2);
    memcpy(t, body, len);
    memcpy(t + len, "sha256 ", 7);
    for (int i = 0; i < 32; i++) snprintf(t + len + 7 + 2 * i, 3, "%02x", sum[i]);
    t[len + 7 + 64] = '\n';
    t[len + 7 + 65] = '\0';
    *n = len + 7 + 65;
    return t;
}

static void test_round_trip(void **state) {
    (void)state;
    rt_costs_file f = sample(), g;
    size_t n;
    char *t = text_of(&f, &n);
    rt_costs_error e;
    assert_true(rt_costs_parse(t, n, &g, &e));
    /* three decimals: every sample value is exact at that */
    assert_true(g.c.lds_latency == 29.125 && g.c.shfl_latency == 26.5 && g.c.add_latency == 4.25 &&
                g.c.barrier == 31.75 && g.c.wavefront == 0.901 && g.c.request == 1.333 && g.c.shuffle == 0.75 &&
                g.c.instruction == 0.25);
    assert_string_equal(g.device, f.device);
    assert_string_equal(g.arch, "sm_90");
    assert_int_equal(g.warp_size, 32);
    assert_int_equal(g.sms, 132);
    assert_non_null(strstr(t, "\nlds_latency 29.125\n"));
    assert_non_null(strstr(t, "\nwavefront 0.901\n"));
    free(t);
}

/* Every prefix of a file is refused, and so is every single byte changed. */
static void test_truncated_and_edited(void **state) {
    (void)state;
    rt_costs_file f = sample(), g;
    size_t n;
    char *t = text_of(&f, &n);
    rt_costs_error e;
    for (size_t k = 0; k < n; k++) {
        if (rt_costs_parse(t, k, &g, &e)) fail_msg("a file cut to %zu of %zu bytes was read", k, n);
        assert_true(e.message[0]);
    }
    char *c = malloc(n);
    for (size_t k = 0; k < n; k++) {
        memcpy(c, t, n);
        c[k] = c[k] == '1' ? '2' : '1';
        if (rt_costs_parse(c, n, &g, &e)) fail_msg("a file with byte %zu changed was read", k);
    }
    /* a changed value: the checksum says so, at the checksum's line */
    memcpy(c, t, n);
    char *v = strstr(c, "barrier 31.750");
    v[8] = '4';
    assert_false(rt_costs_parse(c, n, &g, &e));
    assert_non_null(strstr(e.message, "edited or damaged"));
    assert_int_equal(e.line, 18);
    free(c);
    /* cut inside a line, and cut at a line's end */
    assert_false(rt_costs_parse(t, n - 5, &g, &e));
    assert_non_null(strstr(e.message, "truncated"));
    char *line_end = strstr(t, "\nbarrier");
    assert_false(rt_costs_parse(t, (size_t)(line_end - t) + 1, &g, &e));
    assert_non_null(strstr(e.message, "truncated"));
    free(t);
}

/* Bad content under a right checksum: refused by what it says, at its line. */
static void test_bad_values(void **state) {
    (void)state;
    static const char head[] = "format tilec-costs 1\ndevice X\narch sm_90\nwarp-size 32\nsms 132\ntilec 1\n";
    static const char consts[] = "lds_latency 23\nshfl_latency 24\nadd_latency 4.5\nbarrier 25\nwavefront 0.87\n"
                                 "request 1.4\nshuffle 0.8\ninstruction 0.25\n";
    static const struct {
        const char *replace, *with; /* in head + consts */
        const char *message;
        int line;
    } cases[] = {
        {"barrier 25", "barrier -25", "barrier must be a number", 10},
        {"barrier 25", "barrier nan", "barrier must be a number", 10},
        {"barrier 25", "barrier inf", "barrier must be a number", 10},
        {"barrier 25", "barrier 1e3", "barrier must be a number", 10},
        {"barrier 25", "barrier 0", "barrier must be a number", 10},
        {"barrier 25", "barrier 0.000", "barrier must be a number", 10},
        {"barrier 25", "barrier 100001", "barrier must be a number", 10},
        {"barrier 25", "barrier 25.1234", "barrier must be a number", 10},
        {"barrier 25", "barrier 25.", "barrier must be a number", 10},
        {"barrier 25", "barrier .5", "barrier must be a number", 10},
        {"barrier 25", "barrier  25", "barrier must be a number", 10},
        {"barrier 25", "barrier 0x19", "barrier must be a number", 10},
        {"barrier 25", "barrier 25\r", "not printable", 10},
        {"barrier 25", "barrier 25\nbarrier 26", "given twice", 11},
        {"barrier 25\n", "", "no 'barrier' line", 0},
        {"barrier 25", "barriers 25", "unknown key 'barriers'", 10},
        {"barrier 25", "barrier", "expected 'KEY VALUE'", 10},
        {"format tilec-costs 1", "format tilec-costs 2", "not one this tilec reads", 1},
        {"format tilec-costs 1\n", "", "first key must be 'format", 1},
        {"warp-size 32", "warp-size 48", "warp-size must be 32 or 64", 4},
        {"warp-size 32", "warp-size 032", "warp-size must be 32 or 64", 4},
        {"sms 132", "sms 00", "sms must be", 5},
        {"sms 132", "sms -1", "sms must be", 5},
        {"tilec 1\n", "tilec 1\n\n", "an empty line", 7},
        {"tilec 1\n", "tilec 1\n# a \x1b comment\n", "not printable", 7},
        {"sms 132", "sms 1000000", "sms must be", 5},
        {"arch sm_90", "arch sm-90", "not an arch", 3},
        {"device X\n", "", "no 'device' line", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[2048];
        snprintf(body, sizeof body, "%s%s", head, consts);
        char *at = strstr(body, cases[i].replace);
        assert_non_null(at);
        char rest[2048];
        snprintf(rest, sizeof rest, "%s", at + strlen(cases[i].replace));
        snprintf(at, sizeof body - (size_t)(at - body), "%s%s", cases[i].with, rest);
        size_t n;
        char *t = signed_text(body, &n);
        rt_costs_file g;
        rt_costs_error e;
        if (rt_costs_parse(t, n, &g, &e)) fail_msg("case %zu (%s) was read", i, cases[i].with);
        if (!strstr(e.message, cases[i].message))
            fail_msg("case %zu (%s): '%s' does not say '%s'", i, cases[i].with, e.message, cases[i].message);
        if (e.line != cases[i].line) fail_msg("case %zu (%s): line %d, not %d", i, cases[i].with, e.line, cases[i].line);
        free(t);
    }
    /* sms 0: a driver that did not say */
    {
        char body0[2048];
        snprintf(body0, sizeof body0, "%s%s", head, consts);
        char *at = strstr(body0, "sms 132");
        memmove(at + 5, at + 7, strlen(at + 7) + 1);
        at[4] = '0';
        size_t n0;
        char *t0 = signed_text(body0, &n0);
        rt_costs_file g0;
        rt_costs_error e0;
        if (!rt_costs_parse(t0, n0, &g0, &e0)) fail_msg("sms 0: %s", e0.message);
        assert_int_equal(g0.sms, 0);
        free(t0);
    }
    /* the same body as written is read: the cases' failures are theirs */
    char body[2048];
    snprintf(body, sizeof body, "%s%s", head, consts);
    size_t n;
    char *t = signed_text(body, &n);
    rt_costs_file g;
    rt_costs_error e;
    assert_true(rt_costs_parse(t, n, &g, &e));
    free(t);
    /* a NUL, an empty file, one too long */
    assert_false(rt_costs_parse("format\0x\n", 9, &g, &e));
    assert_non_null(strstr(e.message, "NUL"));
    assert_false(rt_costs_parse("", 0, &g, &e));
    char *big = malloc(RT_COSTS_MAX_BYTES + 2);
    memset(big, '#', RT_COSTS_MAX_BYTES + 1);
    big[RT_COSTS_MAX_BYTES] = '\n';
    assert_false(rt_costs_parse(big, RT_COSTS_MAX_BYTES + 1, &g, &e));
    assert_non_null(strstr(e.message, "more than a constants file has"));
    free(big);
}

static tilec_program *parse_file(tilec_ctx *ctx, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s", TILEC_SOURCE_ROOT, name);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    tilec_program *p = NULL;
    assert_int_equal(tilec_parse(ctx, path, buf, n, &p), TILEC_OK);
    return p;
}

/* tilec_costs_load: explain and emit plan with the file and explain says so; a target of
 * another arch is refused; a bad file changes nothing; NULL goes back to the defaults. */
static void test_load_into_context(void **state) {
    (void)state;
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    tilec_program *p = parse_file(ctx, "col_sum.tile");
    tilec_target t = {TILEC_BACKEND_CUDA, "sm_90", 0};
    char *def = NULL, *mine = NULL, *text = NULL;
    assert_int_equal(tilec_explain(p, &t, TILEC_EXPLAIN_SHORT, &def), TILEC_OK);
    assert_non_null(strstr(def, "cost model: the default constants"));
    assert_non_null(strstr(def, "4 slices")); /* cols with slices, under the defaults */

    rt_costs_file f = sample();
    f.c = tilec_costs_default();
    f.c.barrier = 5000; /* barriers so dear that no plan with one wins */
    size_t n;
    char *file = text_of(&f, &n);
    assert_int_equal(tilec_costs_load(ctx, "h100.txt", file, n), TILEC_OK);
    assert_int_equal(tilec_explain(p, &t, TILEC_EXPLAIN_SHORT, &mine), TILEC_OK);
    assert_non_null(strstr(mine, "cost model: the constants of h100.txt (measured on NVIDIA H100 80GB HBM3, sm_90, 132"));
    assert_null(strstr(mine, "slices"));
    assert_non_null(strstr(mine, "-> rows"));
    tilec_free(mine);

    /* emit plans the same way: the sources differ */
    char *src_mine = NULL, *src_def = NULL;
    size_t len;
    tilec_target cu = {TILEC_BACKEND_CUDA, "sm_90", 0};
    assert_int_equal(tilec_emit(p, &cu, &src_mine, &len), TILEC_OK);

    /* another arch: refused with what to do */
    tilec_target other = {TILEC_BACKEND_CUDA, "sm_80", 0};
    assert_int_equal(tilec_explain(p, &other, TILEC_EXPLAIN_SHORT, &text), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(tilec_diag_text(ctx), "are for sm_90 at warp size 32, not this target's sm_80"));
    tilec_free(text);
    text = NULL;

    /* a bad file: a parse error at its line, and the loaded constants stay */
    char *bad = strdup(file);
    bad[strstr(bad, "barrier") - bad + 8] = '7';
    assert_int_equal(tilec_costs_load(ctx, "bad.txt", bad, n), TILEC_ERR_PARSE);
    assert_non_null(strstr(tilec_diag_text(ctx), "bad.txt:18:8: error: the checksum does not match"));
    assert_int_equal(tilec_explain(p, &t, TILEC_EXPLAIN_SHORT, &text), TILEC_OK);
    assert_non_null(strstr(text, "h100.txt"));
    tilec_free(text);
    free(bad);

    /* back to the defaults */
    assert_int_equal(tilec_costs_load(ctx, NULL, NULL, 0), TILEC_OK);
    assert_int_equal(tilec_explain(p, &t, TILEC_EXPLAIN_SHORT, &text), TILEC_OK);
    assert_string_equal(text, def);
    assert_int_equal(tilec_emit(p, &cu, &src_def, &len), TILEC_OK);
    assert_string_not_equal(src_def, src_mine);
    tilec_free(text);
    tilec_free(src_def);
    tilec_free(src_mine);
    tilec_free(def);
    free(file);
    tilec_program_free(p);
    tilec_close(ctx);
}

static void test_calibrate_needs_a_gpu(void **state) {
    (void)state;
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    tilec_costs c;
    char *text = (char *)1, *path = (char *)1;
    assert_int_equal(tilec_calibrate(ctx, 0, &c, &text, &path), TILEC_ERR_UNAVAILABLE);
    assert_null(text);
    assert_null(path);
    assert_non_null(strstr(tilec_diag_text(ctx), "calibrating needs a GPU"));
    assert_int_equal(tilec_calibrate(ctx, 8, &c, NULL, NULL), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_calibrate(NULL, 0, &c, NULL, NULL), TILEC_ERR_INVALID_ARG);
    tilec_close(ctx);
}

/* A GPU runtime's open, as rt_costs_open sees it: a cache directory, a device. */
typedef struct fake_rt {
    rt r;
    tilec_ctx *ctx;
    char dir[256];
} fake_rt;

static void fake_open(fake_rt *f, const char *device, int sms) {
    memset(&f->r, 0, sizeof f->r);
    assert_int_equal(tilec_open(&f->ctx), TILEC_OK);
    f->r.ctx = f->ctx;
    f->r.target = (dsp_target){.backend = TILEC_BACKEND_CUDA, .arch = "sm_90", .warp_size = 32, .sms = sms};
    snprintf(f->r.device_name, sizeof f->r.device_name, "%s", device);
    setenv("TILEC_CACHE_DIR", f->dir, 1);
    unsetenv("TILEC_CACHE");
    cache_open(&f->r.cache);
    assert_true(f->r.cache.has_dir);
}

static void fake_close(fake_rt *f) {
    cache_close(&f->r.cache);
    tilec_close(f->ctx);
}

static void test_device_file(void **state) {
    (void)state;
    fake_rt f;
    snprintf(f.dir, sizeof f.dir, "/tmp/tilec-costs-test-%ld", (long)getpid());
    mkdir(f.dir, 0700);
    rt_costs_file c = sample();
    char name[96], path[512];
    rt_costs_file_name(&c, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", f.dir, name);
    assert_int_equal(strncmp(name, "costs-sm_90-", 12), 0);

    /* none: the defaults, silently */
    fake_open(&f, c.device, 132);
    rt_costs_open(&f.r);
    assert_false(f.r.has_costs);
    assert_null(f.r.target.costs);
    assert_int_equal(tilec_diag_count(f.ctx), 0);
    /* written through the cache, read back on the next open */
    size_t n;
    char *t = text_of(&c, &n), why[300];
    assert_true(cache_write_file(&f.r.cache, name, t, n, why, sizeof why));
    fake_close(&f);
    fake_open(&f, c.device, 132);
    rt_costs_open(&f.r);
    assert_true(f.r.has_costs);
    assert_ptr_equal(f.r.target.costs, &f.r.costs);
    assert_true(f.r.costs.barrier == 31.75);
    assert_non_null(strstr(f.r.target.costs_what, name));
    fake_close(&f);

    /* another device of the same name's file (the name's hash is another): not read */
    fake_open(&f, c.device, 114);
    rt_costs_open(&f.r);
    assert_false(f.r.has_costs);
    fake_close(&f);
    /* a file of another device under this device's name: refused, with a note */
    rt_costs_file other = c;
    other.sms = 114;
    size_t on;
    char *ot = text_of(&other, &on);
    FILE *fp = fopen(path, "wb");
    fwrite(ot, 1, on, fp);
    fclose(fp);
    fake_open(&f, c.device, 132);
    rt_costs_open(&f.r);
    assert_false(f.r.has_costs);
    assert_non_null(strstr(tilec_diag_text(f.ctx), "measured on another device"));
    assert_non_null(strstr(tilec_diag_text(f.ctx), "the default constants are"));
    fake_close(&f);
    free(ot);
    /* corrupt: refused, with the line */
    t[n - 3] = t[n - 3] == 'a' ? 'b' : 'a';
    fp = fopen(path, "wb");
    fwrite(t, 1, n, fp);
    fclose(fp);
    fake_open(&f, c.device, 132);
    rt_costs_open(&f.r);
    assert_false(f.r.has_costs);
    assert_non_null(strstr(tilec_diag_text(f.ctx), "checksum does not match"));
    fake_close(&f);
    /* writable by others: never trusted */
    t[n - 3] = t[n - 3] == 'a' ? 'b' : 'a';
    fp = fopen(path, "wb");
    fwrite(t, 1, n, fp);
    fclose(fp);
    chmod(path, 0666);
    fake_open(&f, c.device, 132);
    rt_costs_open(&f.r);
    assert_false(f.r.has_costs);
    assert_non_null(strstr(tilec_diag_text(f.ctx), "can be written by other users"));
    fake_close(&f);
    /* a symlink to a good file: never followed */
    char real[600];
    snprintf(real, sizeof real, "%s/real.txt", f.dir);
    chmod(path, 0600);
    assert_int_equal(rename(path, real), 0);
    assert_int_equal(symlink(real, path), 0);
    fake_open(&f, c.device, 132);
    rt_costs_open(&f.r);
    assert_false(f.r.has_costs);
    assert_non_null(strstr(tilec_diag_text(f.ctx), "symbolic link"));
    fake_close(&f);
    /* the device as a file names it: printable ASCII, a name when the driver has none, the
       multiprocessors 0 when it did not say; such a file is found and read */
    unlink(path);
    assert_int_equal(rename(real, path), 0);
    fake_open(&f, "GPU \xc3\xa9\x01", 0);
    rt_costs_file id;
    rt_costs_identity(&f.r, &id);
    assert_string_equal(id.device, "GPU ???");
    assert_int_equal(id.sms, 0);
    snprintf(f.r.device_name, sizeof f.r.device_name, "%s", "");
    rt_costs_identity(&f.r, &id);
    assert_string_equal(id.device, "unnamed device");
    id.c = sample().c;
    char idname[96];
    rt_costs_file_name(&id, idname, sizeof idname);
    size_t idn;
    char *idt = text_of(&id, &idn);
    assert_true(cache_write_file(&f.r.cache, idname, idt, idn, why, sizeof why));
    rt_costs_open(&f.r);
    assert_true(f.r.has_costs);
    fake_close(&f);
    char idpath[600];
    snprintf(idpath, sizeof idpath, "%s/%s", f.dir, idname);
    unlink(idpath);
    free(idt);
    assert_int_equal(rename(path, real), 0);
    /* a read-only cache: read, but calibrate could not write */
    unlink(path);
    assert_int_equal(rename(real, path), 0);
    setenv("TILEC_CACHE", "ro", 1);
    memset(&f.r, 0, sizeof f.r);
    cache_open(&f.r.cache);
    assert_false(cache_write_file(&f.r.cache, "x.txt", "x", 1, why, sizeof why));
    assert_non_null(strstr(why, "read-only"));
    cache_close(&f.r.cache);
    unsetenv("TILEC_CACHE");
    free(t);
    unlink(path);
    rmdir(f.dir);
}

static bool have(tilec_backend b) { return rtc_version(b) != NULL; }

static void test_kernels_compile(void **state) {
    (void)state;
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    if (!have(TILEC_BACKEND_CUDA)) skip();
    static const char *const archs[] = {"sm_75", "sm_80", "sm_90"};
    ir_str src = {0};
    rt_calibrate_source(&src);
    assert_false(src.oom);
    for (int i = 0; i < 3; i++) {
        rtc_result r;
        if (rtc_compile(ctx, TILEC_BACKEND_CUDA, archs[i], 32, "calibrate.cu", src.data, RTC_BINARY, &r) !=
            TILEC_OK)
            fail_msg("%s: %s", archs[i], tilec_diag_text(ctx));
        rtc_result_free(&r);
    }
    /* the 16-byte chain loads 16 bytes: one ld.shared.v4 in its loop, not four narrow ones */
    rtc_result r;
    assert_int_equal(rtc_compile(ctx, TILEC_BACKEND_CUDA, "sm_90", 32, "calibrate.cu", src.data, RTC_PTX, &r),
                     TILEC_OK);
    const char *k = strstr(r.data, ".entry tl_cal_lds16(");
    assert_non_null(k);
    const char *end = strstr(k, "\n}\n");
    assert_non_null(end);
    int v4 = 0, all = 0;
    for (const char *p = k; (p = strstr(p, "ld.shared.v4")) && p < end; p++) v4++;
    for (const char *p = k; (p = strstr(p, "ld.shared.")) && p < end; p++) all++;
    assert_true(v4 >= 16); /* the chain's loop is unrolled 16 times */
    assert_int_equal(all, v4); /* and no load of it is split into narrow ones */
    k = strstr(r.data, ".entry tl_cal_lds4(");
    end = strstr(k, "\n}\n");
    int narrow = 0;
    for (const char *p = k; (p = strstr(p, "ld.shared.")) && p < end; p++) narrow += strncmp(p, "ld.shared.v", 11) != 0;
    assert_true(narrow >= 16);
    /* the throughput loops issue few instructions besides their loads (an address a loop,
       the 8 loads at fixed offsets), so they measure the shared-memory pipe, not the issue */
    static const char *const tp[] = {".entry tl_cal_lds4_tp(", ".entry tl_cal_lds16_tp("};
    for (int i = 0; i < 2; i++) {
        k = strstr(r.data, tp[i]);
        assert_non_null(k);
        end = strstr(k, "\n}\n");
        int loads = 0, instrs = 0;
        for (const char *p = k; (p = strstr(p, "ld.shared.")) && p < end; p++) loads++;
        for (const char *p = k; (p = strchr(p, '\n')) && p < end; p++)
            instrs += p[1] == '\t' && ((p[2] >= 'a' && p[2] <= 'z') || p[2] == '@');
        assert_true(loads >= 16);
        if (instrs >= 9 * loads) fail_msg("%s: %d instructions for %d shared loads", tp[i], instrs, loads);
    }
    rtc_result_free(&r);
    if (have(TILEC_BACKEND_HIP)) {
        rtc_result h;
        if (rtc_compile(ctx, TILEC_BACKEND_HIP, "gfx90a", 64, "calibrate.hip", src.data, RTC_BINARY, &h) !=
            TILEC_OK)
            fail_msg("gfx90a: %s", tilec_diag_text(ctx));
        rtc_result_free(&h);
    }
    ir_str_free(&src);
    tilec_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),       cmocka_unit_test(test_truncated_and_edited),
        cmocka_unit_test(test_bad_values),       cmocka_unit_test(test_load_into_context),
        cmocka_unit_test(test_calibrate_needs_a_gpu), cmocka_unit_test(test_device_file),
        cmocka_unit_test(test_kernels_compile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
