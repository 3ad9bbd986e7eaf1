/*
 * rtc.c — NVRTC and hiprtc through dlopen (see rtc.h).
 *
 * The libraries are looked up once per process (pthread_once): an environment override
 * (TILEC_NVRTC_PATH, TILEC_HIPRTC_PATH) is the only place tried when set; otherwise the
 * sonames of recent releases, then the toolkits' usual folders. hiprtc lives in libhiprtc.so.N in newer ROCm and inside
 * libamdhip64 in ROCm 5. Entry points are resolved by name; a missing one makes the
 * library unusable rather than crashing later.
 *
 * Facts this file relies on (reference-runtime.md): NVRTC's log size counts the NUL and
 * hiprtc's does not; asking NVRTC for compute_XX returns an empty CUBIN, so size and ELF
 * magic are checked; some NVRTC versions change the thread's locale, so it is restored;
 * hiprtc is not known to be thread-safe and can crash on an arch the installed ROCm does
 * not know, so calls are serialised and the arch is checked against comgr's ISA list first.
 */
#include "rtc.h"
#include "runtime.h"

#include <dlfcn.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int rstatus; /* nvrtcResult / hiprtcResult: 0 is success in both */

/* The entry points NVRTC and hiprtc share, under their own prefixes. */
typedef struct rtc_lib {
    void *handle;
    char path[512];
    char tried[2048];
    char version[600];
    int major, minor; /* of the compiler's release (NVRTC; 0 for hiprtc) */
    rstatus (*create)(void **prog, const char *src, const char *name, int nh, const char *const *h, const char *const *hn);
    rstatus (*compile)(void *prog, int n, const char *const *opts);
    rstatus (*log_size)(void *prog, size_t *n);
    rstatus (*log)(void *prog, char *log);
    rstatus (*code_size)(void *prog, size_t *n);
    rstatus (*code)(void *prog, char *code);
    rstatus (*ptx_size)(void *prog, size_t *n); /* NVRTC only */
    rstatus (*ptx)(void *prog, char *ptx);
    rstatus (*destroy)(void **prog);
    rstatus (*version_fn)(int *major, int *minor);
    const char *(*error_string)(rstatus r);
    rstatus (*num_archs)(int *n);      /* NVRTC only, optional */
    rstatus (*archs)(int *archs);
} rtc_lib;

static rtc_lib nvrtc, hiprtc;
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT, hiprtc_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t hiprtc_lock = PTHREAD_MUTEX_INITIALIZER;

/* comgr knows which AMD ISAs the installed ROCm can compile for */
static char amd_isas[4096];
static bool amd_isas_known;

/* Stores dlsym(h, prefix + name) into the function pointer at fn (POSIX guarantees the
 * conversion; ISO C does not, hence the copy). */
static void load_fn(void *fn, void *h, const char *prefix, const char *name) {
    char full[96];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    void *p = dlsym(h, full);
    memcpy(fn, &p, sizeof p);
}
#define LOAD(field, h, prefix, name) load_fn(&(field), h, prefix, name)

/* Tries the candidates in order; keeps the first that has every required entry point. */
static void open_lib(rtc_lib *L, const char *env, const char *const *names, const char *prefix) {
    if (rt_no_loader()) return; /* rtc_compile says why */
    const char *over = getenv(env);
    const char *cuda_home = getenv("CUDA_HOME");
    char extra[2][512];
    snprintf(extra[0], sizeof extra[0], "%s/lib64/libnvrtc.so", cuda_home ? cuda_home : "/usr/local/cuda");
    snprintf(extra[1], sizeof extra[1], "%s", "/opt/rocm/lib/libhiprtc.so");
    const char *list[24];
    int n = 0;
    if (over && *over) { /* an explicit choice replaces the search, so a mistake shows */
        list[n++] = over;
    } else {
        for (int i = 0; names[i] && n < 20; i++) list[n++] = names[i];
        list[n++] = prefix[0] == 'n' ? extra[0] : extra[1];
    }
    for (int i = 0; i < n; i++) {
        size_t used = strlen(L->tried);
        snprintf(L->tried + used, sizeof L->tried - used, "%s%s", used ? ", " : "", list[i]);
        void *h = dlopen(list[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            /* a library that is there but does not load says why (a newer glibc it needs, a
             * dependency of another release); one that is not there is only named */
            const char *e = dlerror();
            if (e && !strstr(e, "No such file or directory")) {
                used = strlen(L->tried);
                snprintf(L->tried + used, sizeof L->tried - used, " (%s)", e);
            }
            continue;
        }
        LOAD(L->create, h, prefix, "CreateProgram");
        LOAD(L->compile, h, prefix, "CompileProgram");
        LOAD(L->log_size, h, prefix, "GetProgramLogSize");
        LOAD(L->log, h, prefix, "GetProgramLog");
        bool nv = prefix[0] == 'n';
        LOAD(L->code_size, h, prefix, nv ? "GetCUBINSize" : "GetCodeSize");
        LOAD(L->code, h, prefix, nv ? "GetCUBIN" : "GetCode");
        L->ptx_size = NULL;
        L->ptx = NULL;
        L->num_archs = NULL;
        L->archs = NULL;
        if (nv) {
            LOAD(L->ptx_size, h, prefix, "GetPTXSize");
            LOAD(L->ptx, h, prefix, "GetPTX");
            LOAD(L->num_archs, h, prefix, "GetNumSupportedArchs");
            LOAD(L->archs, h, prefix, "GetSupportedArchs");
        }
        LOAD(L->destroy, h, prefix, "DestroyProgram");
        LOAD(L->version_fn, h, prefix, "Version");
        LOAD(L->error_string, h, prefix, "GetErrorString");
        if (!L->create || !L->compile || !L->log_size || !L->log || !L->code_size || !L->code || !L->destroy) {
            dlclose(h);
            continue;
        }
        L->handle = h;
        snprintf(L->path, sizeof L->path, "%s", list[i]);
        int major = 0, minor = 0;
        if (L->version_fn) L->version_fn(&major, &minor);
        if (nv) L->major = major, L->minor = minor;
        if (nv) snprintf(L->version, sizeof L->version, "NVRTC %d.%d", major, minor);
        else {
            /* hiprtcVersion's number is not ROCm's (9.0 in ROCm 5.2 and 5.7 alike); where
             * hiprtc lives in libamdhip64 (ROCm 5), hipRuntimeGetVersion gives the HIP
             * release (50731921: 5.7.31921), which needs no GPU. It is part of the disk
             * cache's key, so code objects of one ROCm are never taken for another's. */
            int (*hip_version)(int *) = NULL;
            load_fn(&hip_version, h, "hip", "RuntimeGetVersion");
            int v = 0;
            if (hip_version && hip_version(&v) == 0 && v > 0)
                snprintf(L->version, sizeof L->version, "hiprtc from %s (HIP %d.%d.%d)", list[i], v / 10000000,
                         v / 100000 % 100, v % 100000);
            else snprintf(L->version, sizeof L->version, "hiprtc from %s", list[i]);
        }
        return;
    }
}

static void open_nvrtc(void) {
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so", NULL};
    open_lib(&nvrtc, "TILEC_NVRTC_PATH", names, "nvrtc");
}

static void open_hiprtc(void) {
    static const char *const names[] = {"libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.7",
                                        "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so", NULL};
    open_lib(&hiprtc, "TILEC_HIPRTC_PATH", names, "hiprtc");
    if (rt_no_loader()) return;
    static const char *const comgr[] = {"libamd_comgr.so.3", "libamd_comgr.so.2", "/opt/rocm/lib/libamd_comgr.so"};
    /* the comgr hiprtc loaded is the one that compiles: looked for among the loaded
     * libraries first (RTLD_NOLOAD), so a comgr of another release on the search path is not
     * taken for it */
    void *h = NULL;
    for (size_t i = 0; i < sizeof comgr / sizeof comgr[0] && hiprtc.handle && !h; i++)
        h = dlopen(comgr[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    for (size_t i = 0; i < sizeof comgr / sizeof comgr[0] && !h; i++) h = dlopen(comgr[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
        int (*count)(size_t *) = NULL;
        int (*name)(size_t, const char **) = NULL;
        load_fn(&count, h, "amd_comgr_", "get_isa_count");
        load_fn(&name, h, "amd_comgr_", "get_isa_name");
        size_t n = 0;
        if (count && name && count(&n) == 0) {
            amd_isas_known = true;
            for (size_t j = 0; j < n; j++) {
                const char *isa;
                if (name(j, &isa) != 0) continue;
                const char *g = strstr(isa, "--");
                size_t used = strlen(amd_isas);
                snprintf(amd_isas + used, sizeof amd_isas - used, "%s%s", used ? " " : "", g ? g + 2 : isa);
            }
        }
        /* comgr stays loaded: hiprtc uses the same library, and unloading it leaves LLVM's
         * option registry behind, which aborts when hiprtc loads it again */
    }
}

static rtc_lib *get(tilec_backend b) {
    if (b == TILEC_BACKEND_CUDA) {
        pthread_once(&nvrtc_once, open_nvrtc);
        return &nvrtc;
    }
    pthread_once(&hiprtc_once, open_hiprtc);
    return &hiprtc;
}

const char *rtc_version(tilec_backend backend) {
    rtc_lib *L = get(backend);
    return L->handle ? L->version : NULL;
}

void rtc_result_free(rtc_result *r) {
    free(r->data);
    free(r->log);
    *r = (rtc_result){0};
}

/* Whether comgr lists arch (features after ':' aside); true when the list is unknown. */
static bool amd_knows(const char *arch) {
    if (!amd_isas_known) return true;
    size_t n = strcspn(arch, ":");
    for (const char *p = amd_isas; *p;) {
        size_t m = strcspn(p, " ");
        if (m == n && strncmp(p, arch, n) == 0) return true;
        p += m;
        while (*p == ' ') p++;
    }
    return false;
}

/* sm_XX[a|f] → XX, or -1 */
static int sm_number(const char *arch) {
    if (strncmp(arch, "sm_", 3) != 0) return -1;
    char *end;
    long v = strtol(arch + 3, &end, 10);
    if (end == arch + 3 || (*end && strcmp(end, "a") != 0 && strcmp(end, "f") != 0) || v <= 0 || v > 1000) return -1;
    return (int)v;
}

static tilec_status check_arch(tilec_ctx *ctx, tilec_backend b, rtc_lib *L, const char *arch) {
    if (b == TILEC_BACKEND_HIP) {
        bool ok = strncmp(arch, "gfx", 3) == 0 && strlen(arch) < 40 && arch[3];
        for (const char *p = arch; ok && *p; p++)
            ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == ':' || *p == '+' || *p == '-';
        if (!ok) {
            ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "'%s' is not a HIP arch (gfx90a, gfx1030, gfx90a:xnack-…)", arch);
            return TILEC_ERR_INVALID_ARG;
        }
        if (!amd_knows(arch)) {
            ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                        "%s does not know %s; it compiles for: %s. A newer ROCm knows more archs: set "
                        "TILEC_HIPRTC_PATH to its hiprtc (libhiprtc.so, or ROCm 5's libamdhip64.so.5); on Debian 12, "
                        "tilec's scripts/with-rocm-root runs a program with Debian 13's ROCm 5.7, which knows gfx942 "
                        "and gfx1100 (docs/runtime.md)",
                        L->version, arch, amd_isas);
            return TILEC_ERR_UNAVAILABLE;
        }
        return TILEC_OK;
    }
    int sm = sm_number(arch);
    if (sm < 0) {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "'%s' is not a CUDA arch (sm_80, sm_90, sm_90a…)", arch);
        return TILEC_ERR_INVALID_ARG;
    }
    int n = 0, archs[128];
    if (L->num_archs && L->archs && L->num_archs(&n) == 0 && n > 0 && n <= 128 && L->archs(archs) == 0) {
        for (int i = 0; i < n; i++)
            if (archs[i] == sm) return TILEC_OK;
        char list[512] = "";
        for (int i = 0; i < n; i++) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%ssm_%d", i ? " " : "", archs[i]);
        }
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s does not compile for %s; it knows: %s", L->version, arch, list);
        return TILEC_ERR_UNAVAILABLE;
    }
    return TILEC_OK;
}

static bool is_elf(const void *p, size_t n) { return n > 4 && memcmp(p, "\x7f" "ELF", 4) == 0; }

tilec_status rtc_compile(tilec_ctx *ctx, tilec_backend backend, const char *arch, int ws, const char *name,
                         const char *source, rtc_output kind, rtc_result *out) {
    *out = (rtc_result){0};
    bool cuda = backend == TILEC_BACKEND_CUDA;
    rtc_lib *L = get(backend);
    if (!L->handle && rt_no_loader()) {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s is not available: %s", cuda ? "NVRTC" : "hiprtc", rt_no_loader());
        return TILEC_ERR_UNAVAILABLE;
    }
    if (!L->handle) {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "%s is not available: tried %s. Install %s, or set %s to the library's path.",
                    cuda ? "NVRTC" : "hiprtc", L->tried, cuda ? "the CUDA toolkit" : "ROCm (hiprtc)",
                    cuda ? "TILEC_NVRTC_PATH" : "TILEC_HIPRTC_PATH");
        return TILEC_ERR_UNAVAILABLE;
    }
    if (!source || !*source) {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "nothing to compile: the source is empty");
        return TILEC_ERR_INVALID_ARG;
    }
    tilec_status st = check_arch(ctx, backend, L, arch);
    if (st != TILEC_OK) return st;
    char opt_arch[64];
    const char *opts[5];
    int nopts = 0;
    if (cuda) {
        snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=%s%s", kind == RTC_PTX ? "compute_" : "sm_",
                 arch + 3);
        opts[nopts++] = opt_arch;
        opts[nopts++] = "--std=c++17";
        /* the generated source uses none of what -minimal leaves out (textures, the
         * device runtime, its types), and NVRTC then parses less (12.4 and later) */
        if (L->major > 12 || (L->major == 12 && L->minor >= 4)) opts[nopts++] = "-minimal";
    } else {
        snprintf(opt_arch, sizeof opt_arch, "--offload-arch=%s", arch);
        opts[nopts++] = opt_arch;
        opts[nopts++] = "-O3";
        opts[nopts++] = "-ffp-contract=off"; /* HIP contracts by default: the bits must not change */
        bool gfx9 = strncmp(arch, "gfx9", 4) == 0 && strcspn(arch, ":") <= 6;
        if (ws == 64 && !gfx9) opts[nopts++] = "-mwavefrontsize64";
    }
    if (!cuda) pthread_mutex_lock(&hiprtc_lock);
    char *saved = setlocale(LC_ALL, NULL);
    if (saved && !(saved = strdup(saved))) { /* without it the locale NVRTC may change could not be put back */
        if (!cuda) pthread_mutex_unlock(&hiprtc_lock);
        return TILEC_ERR_NOMEM;
    }
    void *prog = NULL;
    rstatus r = L->create(&prog, source, name, 0, NULL, NULL);
    rstatus c = r == 0 ? L->compile(prog, nopts, opts) : r;
    if (saved) {
        setlocale(LC_ALL, saved);
        free(saved);
    }
    size_t log_n = 0;
    if (!(prog && L->log_size(prog, &log_n) == 0 && log_n > 0 && log_n < (64u << 20))) log_n = 0;
    out->log = calloc(1, log_n + 1); /* hiprtc's log carries no NUL of its own */
    if (out->log && log_n) L->log(prog, out->log);
    if (!out->log) {
        st = TILEC_ERR_NOMEM;
    } else if (r == 0 && c == 0) {
        size_t n = 0;
        bool ptx = kind == RTC_PTX;
        rstatus g = ptx ? L->ptx_size(prog, &n) : L->code_size(prog, &n);
        rstatus f = 0;
        if (g == 0 && n > 0 && n < ((size_t)1 << 31)) {
            out->data = calloc(1, n + 1);
            if (out->data && (f = ptx ? L->ptx(prog, out->data) : L->code(prog, out->data)) == 0)
                out->size = ptx ? strlen(out->data) : n;
        }
        if (g != 0 || f != 0 || n == 0 || n >= ((size_t)1 << 31)) { /* nothing usable came back */
            ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s compiled for %s but returned no %s (%zu bytes)", L->version,
                        arch, ptx ? "PTX" : "binary", g != 0 || f != 0 ? (size_t)0 : n);
            st = TILEC_ERR_COMPILE;
        } else if (!out->data) st = TILEC_ERR_NOMEM;
        else if (!ptx && !is_elf(out->data, out->size)) {
            ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s returned %zu bytes that are not an ELF binary for %s",
                        L->version, out->size, arch);
            st = TILEC_ERR_COMPILE;
        }
    } else {
        const char *why = L->error_string ? L->error_string(c) : "failed";
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s could not compile the generated source for %s (%s):\n%s",
                    L->version, arch, why ? why : "failed", out->log && *out->log ? out->log : "(no log)");
        st = TILEC_ERR_COMPILE;
    }
    if (prog) L->destroy(&prog);
    if (!cuda) pthread_mutex_unlock(&hiprtc_lock);
    if (st != TILEC_OK) {
        free(out->data);
        out->data = NULL;
        out->size = 0;
    }
    return st;
}
