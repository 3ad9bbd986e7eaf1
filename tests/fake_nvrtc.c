/*
 * fake_nvrtc.c — a stand-in for NVRTC that tests/test_faults.c loads through
 * TILEC_NVRTC_PATH, so a compiler failure can be planted on a machine whose NVRTC works.
 * FAKE_NVRTC, read at every call, says how it fails: "create" (nvrtcCreateProgram fails),
 * "compile" (a compile error with a log), "empty" (success, a 0-byte CUBIN), "not-elf"
 * (success, bytes that are no ELF file), "size" (the size query fails); anything else
 * succeeds with a small ELF-looking CUBIN.
 */
#include <stdlib.h>
#include <string.h>

typedef int nvrtcResult;
typedef struct fake_program {
    int compiled;
} *nvrtcProgram;

/* the entry points tilec looks up (src/runtime/rtc.c) */
nvrtcResult nvrtcVersion(int *major, int *minor);
nvrtcResult nvrtcGetNumSupportedArchs(int *n);
nvrtcResult nvrtcGetSupportedArchs(int *archs);
const char *nvrtcGetErrorString(nvrtcResult r);
nvrtcResult nvrtcCreateProgram(nvrtcProgram *p, const char *src, const char *name, int n, const char *const *headers,
                               const char *const *names);
nvrtcResult nvrtcDestroyProgram(nvrtcProgram *p);
nvrtcResult nvrtcCompileProgram(nvrtcProgram p, int n, const char *const *options);
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, size_t *n);
nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char *log);
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, size_t *n);
nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char *out);
nvrtcResult nvrtcGetPTXSize(nvrtcProgram p, size_t *n);
nvrtcResult nvrtcGetPTX(nvrtcProgram p, char *out);

enum { OK = 0, CREATION_FAILURE = 3, COMPILATION = 6, INVALID_PROGRAM = 5, CUBIN_BYTES = 64 };
static const char LOG[] = "tilec.cu(12): error: a planted compile error\n";

static int mode(const char *m) {
    const char *v = getenv("FAKE_NVRTC");
    return v && strcmp(v, m) == 0;
}

nvrtcResult nvrtcVersion(int *major, int *minor) {
    *major = 13;
    *minor = 0;
    return OK;
}

nvrtcResult nvrtcGetNumSupportedArchs(int *n) {
    *n = 2;
    return OK;
}

nvrtcResult nvrtcGetSupportedArchs(int *archs) {
    archs[0] = 80;
    archs[1] = 90;
    return OK;
}

const char *nvrtcGetErrorString(nvrtcResult r) {
    return r == COMPILATION ? "NVRTC_ERROR_COMPILATION" : r == CREATION_FAILURE ? "NVRTC_ERROR_PROGRAM_CREATION_FAILURE"
                                                                                  : "NVRTC_ERROR_INVALID_PROGRAM";
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram *p, const char *src, const char *name, int n, const char *const *headers,
                               const char *const *names) {
    (void)src, (void)name, (void)n, (void)headers, (void)names;
    if (mode("create")) return CREATION_FAILURE;
    *p = calloc(1, sizeof **p);
    return *p ? OK : CREATION_FAILURE;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram *p) {
    free(*p);
    *p = NULL;
    return OK;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram p, int n, const char *const *options) {
    (void)n, (void)options;
    p->compiled = !mode("compile");
    return p->compiled ? OK : COMPILATION;
}

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, size_t *n) {
    *n = p->compiled ? 1 : sizeof LOG; /* NVRTC's size counts the NUL */
    return OK;
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char *log) {
    strcpy(log, p->compiled ? "" : LOG);
    return OK;
}

static nvrtcResult size_of(nvrtcProgram p, size_t *n) {
    if (!p->compiled || mode("size")) return INVALID_PROGRAM;
    *n = mode("empty") ? 0 : CUBIN_BYTES;
    return OK;
}

static nvrtcResult bytes_of(nvrtcProgram p, char *out) {
    if (!p->compiled) return INVALID_PROGRAM;
    memset(out, 0, CUBIN_BYTES);
    memcpy(out, mode("not-elf") ? "MZ not an ELF file" : "\x7f" "ELF fake cubin", 16);
    return OK;
}

nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, size_t *n) { return size_of(p, n); }
nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char *out) { return bytes_of(p, out); }
nvrtcResult nvrtcGetPTXSize(nvrtcProgram p, size_t *n) { return size_of(p, n); }
nvrtcResult nvrtcGetPTX(nvrtcProgram p, char *out) { return bytes_of(p, out); }
