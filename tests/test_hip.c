/*
 * test_hip.c — the HIP backend (src/runtime/be_hip.c) against a fake HIP runtime
 * (tests/fake_hip.c, loaded by TILEC_HIP_PATH; meson passes both builds in FAKE_HIP5 and
 * FAKE_HIP6): the device's arch read from hipDeviceProp_t through the entry point of each
 * layout (ROCm 6's hipGetDevicePropertiesR0600, ROCm 5's hipGetDeviceProperties), its CUs
 * and wavefront through hipDeviceGetAttribute with the numbers of the runtime's release
 * (5.0 and later, 4.x), TILEC_HIP_ARCH over it, what is refused (no arch where gcnArchName
 * should be, a wavefront the arch does not run, a bad TILEC_HIP_PATH) with its message;
 * and, where hiprtc is installed, tilec_reduce compiling for the fake device's arch and
 * loading and launching the code object through the backend.
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

/* tilec_reduce through the backend: compiled by hiprtc for the fake device's arch, loaded
 * (the code object's EF_AMDGPU_MACH) and launched; the fake computes nothing */
static void test_reduce_loads_and_launches(void **state) {
    (void)state;
    if (!rtc_version(TILEC_BACKEND_HIP)) {
        print_message("skipped: hiprtc is not installed here, so nothing is compiled for the fake GPU\n");
        return;
    }
    fake_env("FAKE_HIP6", "60200000", "gfx90a:sramecc+:xnack-", "110", "64");
    setenv("TILEC_CACHE", "off", 1);
    tilec_ctx *ctx;
    dsp_target t;
    tilec_status st = open_hip(&ctx, &t);
    if (st != TILEC_OK) fail_msg("HIP did not open: %s", tilec_diag_text(ctx));
    void *in, *out;
    assert_int_equal(tilec_mem_alloc(ctx, 300 * 37 * sizeof(float), &in), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 300 * sizeof(float), &out), TILEC_OK);
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {300, 37}, .naxes = 1, .axes = {-1}};
    st = tilec_reduce(ctx, &d, in, out);
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
    };
    return cmocka_run_group_tests_name("HIP backend on a fake runtime", tests, NULL, NULL);
}
