/*
 * test_hip.c — the HIP backend (src/runtime/be_hip.c) against a fake HIP runtime
 * (tests/fake_hip.c, loaded by TILEC_HIP_PATH; meson passes both builds in FAKE_HIP5 and
 * FAKE_HIP6): the device's arch read from hipDeviceProp_t through the entry point of each
 * layout (ROCm 6's hipGetDevicePropertiesR0600, ROCm 5's hipGetDeviceProperties), its CUs
 * and wavefront through hipDeviceGetAttribute with the numbers of the runtime's release
 * (5.0 and later, 4.x), TILEC_HIP_ARCH over it, what is refused (no arch where gcnArchName
 * should be, a wavefront the arch does not run, a bad TILEC_HIP_PATH) with its message;
 * and, where hiprtc is installed, tilec_reduce compiling for the fake device's arch and
 * loading and launching the code object through the backend, and calls on a stream being
 * captured into a graph (the fake's hipStreamIsCapturing, its capture modes and its log of
 * the calls on each stream).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/ir/ir.h" /* the context's runtime: the target it opened */
#include "../src/runtime/rtc.h"
#include "../src/runtime/runtime.h"

static void fake_env(const char *lib, const char *version, const char *arch, const char *cus, const char *warp) {
    setenv("TILEC_HIP_PATH", getenv(lib), 1);
    setenv("FAKE_HIP_VERSION", version, 1);
    setenv("FAKE_HIP_ARCH", arch, 1);
    setenv("FAKE_HIP_CUS", cus, 1);
    setenv("FAKE_HIP_WARP", warp, 1);
    unsetenv("FAKE_HIP_ATTR_FAIL");
    unsetenv("FAKE_HIP_ARCH_R0000");
    unsetenv("FAKE_HIP_ARCH_R0600");
    unsetenv("TILEC_HIP_ARCH");
}

/* Opens the HIP backend; on success the target it found. */
static tilec_status open_hip(tilec_ctx **ctx, dsp_target *t) {
    tilec_open(ctx);
    tilec_status st = tilec_runtime_open(*ctx, TILEC_BACKEND_HIP, 0);
    if (st == TILEC_OK) *t = ((rt *)(*ctx)->runtime)->target;
    return st;
}

static void expect_target(const char *arch, int warp, int sms) {
    tilec_ctx *ctx;
    dsp_target t;
    tilec_status st = open_hip(&ctx, &t);
    if (st != TILEC_OK) fail_msg("HIP did not open: %s", tilec_diag_text(ctx));
    assert_string_equal(t.arch, arch);
    assert_int_equal(t.warp_size, warp);
    assert_int_equal(t.sms, sms);
    assert_int_equal(tilec_runtime_backend(ctx), TILEC_BACKEND_HIP);
    tilec_close(ctx);
}

static void expect_refusal(const char *message) {
    tilec_ctx *ctx;
    dsp_target t;
    assert_int_equal(open_hip(&ctx, &t), TILEC_ERR_UNAVAILABLE);
    if (!strstr(tilec_diag_text(ctx), message)) fail_msg("wanted '%s' in: %s", message, tilec_diag_text(ctx));
    tilec_close(ctx);
}

/* ROCm 6: the R0600 layout, gcnArchName at 1160; features dropped; the 5.0 numbering */
static void test_rocm6(void **state) {
    (void)state;
    fake_env("FAKE_HIP6", "60200000", "gfx942:sramecc+:xnack-", "304", "64");
    expect_target("gfx942", 64, 304);
    fake_env("FAKE_HIP6", "60032830", "gfx1100", "48", "32");
    expect_target("gfx1100", 32, 48);
    /* R0600 is asked first; R0000 only where R0600 gives no arch */
    fake_env("FAKE_HIP6", "60200000", "gfx942", "304", "64");
    setenv("FAKE_HIP_ARCH_R0000", "gfx908", 1);
    expect_target("gfx942", 64, 304);
    fake_env("FAKE_HIP6", "60200000", "gfx942", "304", "64");
    setenv("FAKE_HIP_ARCH_R0600", "", 1);
    setenv("FAKE_HIP_ARCH_R0000", "gfx90a", 1);
    expect_target("gfx90a", 64, 304);
}

/* ROCm 5: only hipGetDeviceProperties, gcnArchName at 396 */
static void test_rocm5(void **state) {
    (void)state;
    fake_env("FAKE_HIP5", "50731921", "gfx90a:sramecc+:xnack-", "110", "64");
    expect_target("gfx90a", 64, 110);
    fake_env("FAKE_HIP5", "50221153", "gfx1030", "40", "32");
    expect_target("gfx1030", 32, 40);
}

/* ROCm 4 numbered the attributes otherwise: the table picks by hipRuntimeGetVersion */
static void test_rocm4_numbers(void **state) {
    (void)state;
    fake_env("FAKE_HIP5", "40522000", "gfx908", "120", "64");
    expect_target("gfx908", 64, 120);
}

/* attributes that fail leave the CU count unknown (0: the planner's default), not an error */
static void test_attributes_fail(void **state) {
    (void)state;
    fake_env("FAKE_HIP6", "60200000", "gfx942", "304", "64");
    setenv("FAKE_HIP_ATTR_FAIL", "1", 1);
    expect_target("gfx942", 64, 0);
    fake_env("FAKE_HIP6", "60200000", "gfx942", "304", "48"); /* a wavefront no release has: numbers not trusted */
    expect_target("gfx942", 64, 0);
}

static void test_arch_override(void **state) {
    (void)state;
    fake_env("FAKE_HIP6", "60200000", "gfx942", "304", "64");
    setenv("TILEC_HIP_ARCH", "gfx90a", 1);
    expect_target("gfx90a", 64, 304);
    setenv("TILEC_HIP_ARCH", "sm_90", 1);
    expect_refusal("HIP arch 'sm_90' is not of the form gfxNNN (gfx90a, gfx1100…) (TILEC_HIP_ARCH)");
    unsetenv("TILEC_HIP_ARCH");
}

static void test_refusals(void **state) {
    (void)state;
    /* what lies at gcnArchName's offset is no arch: the layout is not the one expected */
    fake_env("FAKE_HIP6", "60200000", "AMD Instinct", "304", "64");
    expect_refusal("could not tell HIP device 0's arch: hipGetDeviceProperties gave 'AMD Instinct' where its "
                   "gcnArchName should be, not an arch; set TILEC_HIP_ARCH to it");
    fake_env("FAKE_HIP5", "50731921", "", "304", "64");
    expect_refusal("hipGetDeviceProperties gave '' where its gcnArchName should be");
    fake_env("FAKE_HIP5", "50731921", "gfx9", "304", "64");
    expect_refusal("gave 'gfx9' where");
    /* a device whose wavefront is not the arch's */
    fake_env("FAKE_HIP6", "60200000", "gfx942", "304", "32");
    expect_refusal("HIP device 0 (Fake Instinct) runs wavefronts of 32, but tilec takes gfx942 for wave64: set "
                   "TILEC_HIP_ARCH to the device's arch");
    setenv("TILEC_HIP_PATH", "/nonexistent/libamdhip64.so", 1);
    expect_refusal("no HIP runtime: TILEC_HIP_PATH=/nonexistent/libamdhip64.so could not be loaded (");
}

/* The fake ROCm 6 gfx90a opened with the disk cache off, where hiprtc can compile for it
 * (else false: the test is skipped, saying so) */
static bool open_compiling(tilec_ctx **ctx) {
    if (!rtc_version(TILEC_BACKEND_HIP)) {
        print_message("skipped: hiprtc is not installed here, so nothing is compiled for the fake GPU\n");
        return false;
    }
    fake_env("FAKE_HIP6", "60200000", "gfx90a:sramecc+:xnack-", "110", "64");
    setenv("TILEC_CACHE", "off", 1);
    dsp_target t;
    if (open_hip(ctx, &t) != TILEC_OK) fail_msg("HIP did not open: %s", tilec_diag_text(*ctx));
    return true;
}

/* tilec_reduce through the backend: compiled by hiprtc for the fake device's arch, loaded
 * (the code object's EF_AMDGPU_MACH) and launched; the fake computes nothing */
static void test_reduce_loads_and_launches(void **state) {
    (void)state;
    tilec_ctx *ctx;
    if (!open_compiling(&ctx)) return;
    void *in, *out;
    assert_int_equal(tilec_mem_alloc(ctx, 300 * 37 * sizeof(float), &in), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 300 * sizeof(float), &out), TILEC_OK);
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {300, 37}, .naxes = 1, .axes = {-1}};
    tilec_status st = tilec_reduce(ctx, &d, in, out);
    if (st != TILEC_OK) fail_msg("tilec_reduce on the fake GPU: %s", tilec_diag_text(ctx));
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
    void *fake = dlopen(getenv("FAKE_HIP6"), RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(fake);
    unsigned (*loaded)(void) = NULL, (*launches)(void) = NULL;
    void *p = dlsym(fake, "fake_hip_loaded");
    memcpy(&loaded, &p, sizeof p);
    p = dlsym(fake, "fake_hip_launches");
    memcpy(&launches, &p, sizeof p);
    assert_int_equal(loaded() & 0xff, 0x3f); /* EF_AMDGPU_MACH_AMDGCN_GFX90A */
    assert_true(launches() >= 1);
    tilec_mem_free(ctx, in);
    tilec_mem_free(ctx, out);
    tilec_close(ctx);
    dlclose(fake);
    unsetenv("TILEC_CACHE");
}

typedef struct fake_call {
    char op;
    void *stream;
    int mode;
} fake_call;

/* The fake's entry point name, bound from the loaded FAKE_HIP6 */
static void *fake_sym(void *fake, const char *name) {
    void *p = dlsym(fake, name);
    if (!p) fail_msg("fake_hip has no %s", name);
    return p;
}

/* What the log holds of op on stream (NULL: any stream but `not`) from entry `from` on. */
static int count_calls(const fake_call *log, int n, int from, char op, void *stream, void *not) {
    int k = 0;
    for (int i = from; i < n; i++)
        if (log[i].op == op && (stream ? log[i].stream == stream : log[i].stream != not)) k++;
    return k;
}

/* Calls on a stream being captured into a graph, through be_hip's capture ops: the first
 * call of a plan with scratch, never made before, is compiled, loaded and given its set in
 * the relaxed mode (the fake refuses hipMalloc and hipModuleLoadData in the global one,
 * as HIP does during a capture), the set zeroed on the backend's own stream and waited
 * for; the captured stream gets the launch and nothing else (no memset, no event); the
 * mode is the caller's again after the call. Later calls, captured or after the capture,
 * launch only. An empty prod (ones from the host) is refused during the capture, and
 * nothing is enqueued. */
static void test_capture(void **state) {
    (void)state;
    tilec_ctx *ctx;
    if (!open_compiling(&ctx)) return;
    void *fake = dlopen(getenv("FAKE_HIP6"), RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(fake);
    const fake_call *(*log)(int *) = NULL;
    void (*clear)(void) = NULL, (*capture)(void *) = NULL;
    void *p = fake_sym(fake, "fake_hip_log");
    memcpy(&log, &p, sizeof p);
    p = fake_sym(fake, "fake_hip_log_clear");
    memcpy(&clear, &p, sizeof p);
    p = fake_sym(fake, "fake_hip_capture");
    memcpy(&capture, &p, sizeof p);
    enum { N = (1 << 20) + 3 };
    void *in, *out;
    assert_int_equal(tilec_mem_alloc(ctx, N * sizeof(float), &in), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 4 * sizeof(float), &out), TILEC_OK);
    static int stream_object;
    void *cap = &stream_object;
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {N}, .naxes = 1, .axes = {0}, .stream = cap};
    char *text = NULL;
    assert_int_equal(tilec_reduce_explain(ctx, &d, &text), TILEC_OK);
    if (!strstr(text, "scratch buffers") || strstr(text, " 0 scratch buffers")) fail_msg("the shape plans no scratch:\n%s", text);
    tilec_free(text);

    capture(cap);
    clear();
    tilec_status st = tilec_reduce(ctx, &d, in, out);
    if (st != TILEC_OK) fail_msg("a captured first call: %s", tilec_diag_text(ctx));
    int n;
    const fake_call *c = log(&n);
    assert_int_equal(count_calls(c, n, 0, 'l', cap, NULL), 1);
    assert_int_equal(count_calls(c, n, 0, 'z', cap, NULL), 0); /* nothing but the launch on it */
    assert_int_equal(count_calls(c, n, 0, 'r', cap, NULL), 0);
    assert_true(count_calls(c, n, 0, 'z', NULL, cap) >= 1); /* the set zeroed aside, and waited for */
    assert_true(count_calls(c, n, 0, 'y', NULL, cap) >= 1);
    assert_true(n >= 2 && c[0].op == 'm' && c[0].mode == 2); /* relaxed first */
    int last_mode = -1;
    for (int i = 0; i < n; i++)
        if (c[i].op == 'm') last_mode = c[i].mode;
    assert_int_equal(last_mode, 0); /* the caller's global mode again */
    assert_int_equal(c[n - 1].op, 'l');

    clear(); /* the next captured call: the launch alone */
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    c = log(&n);
    assert_int_equal(n, 1);
    assert_true(c[0].op == 'l' && c[0].stream == cap);

    tilec_reduce_desc empty = {.op = TILEC_OP_PROD, .dtype = TILEC_F32, .rank = 2, .shape = {4, 0}, .naxes = 1, .axes = {1},
                               .stream = cap};
    clear();
    assert_int_equal(tilec_reduce(ctx, &empty, in, out), TILEC_ERR_INVALID_ARG);
    if (!strstr(tilec_diag_text(ctx), "cannot order")) fail_msg("wanted the capture's reason in: %s", tilec_diag_text(ctx));
    c = log(&n);
    assert_int_equal(n, 0);

    capture(NULL); /* the capture ended: the pinned set launches with no event after it */
    clear();
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &empty, in, out), TILEC_OK); /* outside a capture, the ones are copied */
    c = log(&n);
    assert_int_equal(count_calls(c, n, 0, 'l', cap, NULL), 1);
    assert_int_equal(count_calls(c, n, 0, 'z', cap, NULL), 0);
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
    float ones[4];
    assert_int_equal(tilec_mem_download(ctx, ones, out, sizeof ones), TILEC_OK);
    for (int i = 0; i < 4; i++) assert_true(ones[i] == 1.0f);
    tilec_mem_free(ctx, in);
    tilec_mem_free(ctx, out);
    tilec_close(ctx);
    dlclose(fake);
    unsetenv("TILEC_CACHE");
}

int main(void) {
    if (!getenv("FAKE_HIP5") || !getenv("FAKE_HIP6")) {
        fprintf(stderr, "test_hip: FAKE_HIP5 and FAKE_HIP6 name the fake HIP runtimes (meson test sets them)\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rocm6),
        cmocka_unit_test(test_rocm5),
        cmocka_unit_test(test_rocm4_numbers),
        cmocka_unit_test(test_attributes_fail),
        cmocka_unit_test(test_arch_override),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_reduce_loads_and_launches),
        cmocka_unit_test(test_capture),
    };
    return cmocka_run_group_tests_name("HIP backend on a fake runtime", tests, NULL, NULL);
}
