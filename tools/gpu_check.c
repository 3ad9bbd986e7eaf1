/*
 * gpu_check.c — runs tilec's generated CUDA on a real GPU and checks every result twice:
 * bit for bit against the simulator running the same loop IR, and against the
 * double-precision reference. Programs: every example, the variant matrix of the tests
 * (lengths × threads × ops × forced variants) and the tests' random kernels.
 *
 * A minimal launcher of its own: the CUDA driver through dlopen (libcuda.so.1), NVRTC
 * through tilec's rtc, one module per batch of kernels. It does not use tilec_run_kernel,
 * which emits and compiles one kernel a plan and launches kernels only: here 150 kernels
 * share one NVRTC compile, and funcs run inside a wrapper kernel (func_wrapper). The
 * public call is checked on the GPU by `tilec run --backend cuda --check` over the
 * examples, in scripts/gpu-check.
 *
 *   gpu_check [--examples DIR] [--random N] [--jobs N] [--out FILE.md]
 *
 * --jobs N splits the batches of the matrix and the random kernels among N processes
 * (forked before any of them opens the GPU; NVRTC's compiles are most of the time, and
 * they are single-threaded), each taking every N-th batch, so the whole run fits one call
 * of a 16-core GPU machine; the tallies are added up and the table is the same.
 *
 * Exit: 0 all matched, 1 a mismatch or failure, 3 no usable GPU (with the reason).
 */
#include "../src/codegen/codegen.h"
#include "../src/runtime/rtc.h"
#include "../tests/programs.h"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the driver API, declared here so no CUDA header is needed ------------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction;
typedef unsigned long long CUdeviceptr;

static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*attribute)(int *, int, CUdevice);
    CUresult (*name)(char *, int, CUdevice);
    CUresult (*driver_version)(int *);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*set_current)(CUcontext);
    CUresult (*load)(CUmodule *, const void *);
    CUresult (*unload)(CUmodule);
    CUresult (*function)(CUfunction *, CUmodule, const char *);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*release)(CUdeviceptr);
    CUresult (*htod)(CUdeviceptr, const void *, size_t);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
    CUresult (*sync)(void);
    CUresult (*set_attribute)(CUfunction, int, int);
    CUresult (*error)(CUresult, const char **);
} cu;

enum { CC_MAJOR = 75, CC_MINOR = 76, MAX_DYNAMIC_SHARED = 8 };

static void bind(void *lib, void *fn, const char *name, bool *ok) {
    void *p = dlsym(lib, name);
    memcpy(fn, &p, sizeof p);
    if (!p) *ok = false;
}

static const char *cu_error(CUresult r) {
    const char *s = NULL;
    if (cu.error) cu.error(r, &s);
    return s ? s : "unknown CUDA error";
}

#define CU(call)                                                                                     \
    do {                                                                                             \
        CUresult r_ = (call);                                                                        \
        if (r_ != 0) {                                                                               \
            fprintf(stderr, "gpu_check: %s failed: %s (%d)\n", #call, cu_error(r_), r_);             \
            return false;                                                                            \
        }                                                                                            \
    } while (0)

/* Opens the driver and the first device; *arch gets its sm_XY. */
static bool open_gpu(char *arch, size_t n, char *device, size_t dn, int *driver) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "gpu_check: no CUDA driver (libcuda.so.1: %s): skipped\n", dlerror());
        return false;
    }
    bool ok = true;
    bind(lib, &cu.init, "cuInit", &ok);
    bind(lib, &cu.device_get, "cuDeviceGet", &ok);
    bind(lib, &cu.attribute, "cuDeviceGetAttribute", &ok);
    bind(lib, &cu.name, "cuDeviceGetName", &ok);
    bind(lib, &cu.driver_version, "cuDriverGetVersion", &ok);
    bind(lib, &cu.retain, "cuDevicePrimaryCtxRetain", &ok);
    bind(lib, &cu.set_current, "cuCtxSetCurrent", &ok);
    bind(lib, &cu.load, "cuModuleLoadData", &ok);
    bind(lib, &cu.unload, "cuModuleUnload", &ok);
    bind(lib, &cu.function, "cuModuleGetFunction", &ok);
    bind(lib, &cu.alloc, "cuMemAlloc_v2", &ok);
    bind(lib, &cu.release, "cuMemFree_v2", &ok);
    bind(lib, &cu.htod, "cuMemcpyHtoD_v2", &ok);
    bind(lib, &cu.dtoh, "cuMemcpyDtoH_v2", &ok);
    bind(lib, &cu.launch, "cuLaunchKernel", &ok);
    bind(lib, &cu.sync, "cuCtxSynchronize", &ok);
    bind(lib, &cu.set_attribute, "cuFuncSetAttribute", &ok);
    bind(lib, &cu.error, "cuGetErrorString", &ok);
    if (!ok) {
        fprintf(stderr, "gpu_check: libcuda.so.1 lacks driver API entry points: skipped\n");
        return false;
    }
    CU(cu.init(0));
    CUdevice dev;
    CU(cu.device_get(&dev, 0));
    int major, minor;
    CU(cu.attribute(&major, CC_MAJOR, dev));
    CU(cu.attribute(&minor, CC_MINOR, dev));
    CU(cu.name(device, (int)dn, dev));
    CU(cu.driver_version(driver));
    CUcontext ctx;
    CU(cu.retain(&ctx, dev));
    CU(cu.set_current(ctx));
    snprintf(arch, n, "sm_%d%d", major, minor);
    return true;
}

/* ---- one batch: kernels of one program, compiled once, each launched and checked --------- */

typedef struct tally {
    int kernels, matched, failed;
    double worst; /* largest error against the reference, relative to the magnitudes (sums) */
} tally;

/* A kernel that calls func `name`: global copies in, the func, copies out (as the
 * simulator runs a func: shared parameters start with the content, thread 0's locals
 * come back). */
static void func_wrapper(ir_str *s, const tilec_kernel *k) {
    ir_str_printf(s, "\nextern \"C\" __global__ void tl_gpu_check_%s(", k->name);
    for (int i = 0; i < k->nparams; i++) {
        const char *t = lp_type_of(k->params[i]->dtype) == LP_F16 || lp_type_of(k->params[i]->dtype) == LP_BF16 ? CG_P "u16"
                      : k->params[i]->dtype == TILEC_F32 ? "float" : k->params[i]->dtype == TILEC_F64 ? "double"
                      : k->params[i]->dtype == TILEC_I32 ? "int" : k->params[i]->dtype == TILEC_U32 ? "unsigned" : "long long";
        ir_str_printf(s, "%s%s *g%d", i ? ", " : "", t, i);
    }
    ir_str_printf(s, ") {\n");
    for (int i = 0; i < k->nparams; i++) {
        const tilec_buffer *b = k->params[i];
        const char *t = b->dtype == TILEC_F32 ? "float" : b->dtype == TILEC_F64 ? "double" : b->dtype == TILEC_I32 ? "int"
                      : b->dtype == TILEC_U32 ? "unsigned" : b->dtype == TILEC_I64 ? "long long" : CG_P "u16";
        ir_str_printf(s, "  %s%s p%d[%lld];\n", b->space == TILEC_SPACE_SHARED ? "__shared__ " : "", t, i, (long long)b->span);
        ir_str_printf(s, "  for (int e = %s; e < %lld; e += %s) p%d[e] = g%d[e];\n",
                      b->space == TILEC_SPACE_SHARED ? "(int)threadIdx.x" : "0", (long long)b->span,
                      b->space == TILEC_SPACE_SHARED ? "(int)blockDim.x" : "1", i, i);
    }
    ir_str_printf(s, "  __syncthreads();\n  ");
    cg_name(s, k->name);
    ir_str_printf(s, "(");
    for (int i = 0; i < k->nparams; i++) ir_str_printf(s, "%sp%d", i ? ", " : "", i);
    ir_str_printf(s, ");\n  __syncthreads();\n");
    for (int i = 0; i < k->nparams; i++) {
        const tilec_buffer *b = k->params[i];
        if (b->space == TILEC_SPACE_SHARED)
            ir_str_printf(s, "  for (int e = (int)threadIdx.x; e < %lld; e += (int)blockDim.x) g%d[e] = p%d[e];\n", (long long)b->span, i, i);
        else
            ir_str_printf(s, "  if (threadIdx.x == 0) for (int e = 0; e < %lld; e++) g%d[e] = p%d[e];\n", (long long)b->span, i, i);
    }
    ir_str_printf(s, "}\n");
}

/* Equal bits, or both NaN of a float type. */
static bool same(tilec_dtype dt, const void *a, const void *b, int64_t n) {
    size_t es = tilec_dtype_size(dt);
    if (memcmp(a, b, (size_t)n * es) == 0) return true;
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *x = (const unsigned char *)a + i * (int64_t)es, *y = (const unsigned char *)b + i * (int64_t)es;
        if (memcmp(x, y, es) == 0) continue;
        double u, v;
        if (dt == TILEC_F32) { float f, g; memcpy(&f, x, 4); memcpy(&g, y, 4); u = f; v = g; }
        else if (dt == TILEC_F64) { memcpy(&u, x, 8); memcpy(&v, y, 8); }
        else if (dt == TILEC_F16 || dt == TILEC_BF16) {
            uint16_t h, k;
            memcpy(&h, x, 2);
            memcpy(&k, y, 2);
            u = dt == TILEC_F16 ? tilec_f16_to_double(h) : tilec_bf16_to_double(h);
            v = dt == TILEC_F16 ? tilec_f16_to_double(k) : tilec_bf16_to_double(k);
        } else return false;
        if (!(isnan(u) && isnan(v))) return false;
    }
    return true;
}

static bool run_kernel(tilec_program *p, const tilec_kernel *k, CUmodule mod, const char *arch, uint64_t seed, tally *t,
                       FILE *log) {
    tilec_ctx *ctx = tilec_program_ctx(p);
    tilec_target tg = {TILEC_BACKEND_CUDA, arch, 0}, sim = {TILEC_BACKEND_SIM, NULL, 32};
    tilec_launch_info info;
    if (tilec_launch_info_get(p, &tg, k->name, &info) != TILEC_OK) return false;
    char symbol[128];
    if (k->is_func) snprintf(symbol, sizeof symbol, "tl_gpu_check_%s", k->name);
    else snprintf(symbol, sizeof symbol, "%s", info.symbol);
    CUfunction fn;
    CU(cu.function(&fn, mod, symbol));
    if (info.dynamic_shared) CU(cu.set_attribute(fn, MAX_DYNAMIC_SHARED, (int)info.dynamic_shared));
    int np = k->nparams;
    void *in[16], *gpu[16], *sim_buf[16];
    CUdeviceptr dev[16];
    void *params[16];
    bool prod = false; /* a product's data stays in range (fill_factors) */
    for (int i = 0; i < k->nstmts; i++) prod |= k->stmts[i]->kind == IR_REDUCE && k->stmts[i]->op == TILEC_OP_PROD;
    for (int i = 0; i < np; i++) {
        const tilec_buffer *b = k->params[i];
        size_t bytes = (size_t)b->span * tilec_dtype_size(b->dtype);
        in[i] = malloc(bytes);
        gpu[i] = malloc(bytes);
        sim_buf[i] = malloc(bytes);
        (prod ? fill_factors : fill_buffer)(b->dtype, in[i], b->span, b->shape[b->rank - 1], true, &seed);
        memcpy(sim_buf[i], in[i], bytes);
        CU(cu.alloc(&dev[i], bytes));
        CU(cu.htod(dev[i], in[i], bytes));
        params[i] = &dev[i];
    }
    CU(cu.launch(fn, (unsigned)info.grid, 1, 1, (unsigned)info.threads, 1, 1, (unsigned)info.dynamic_shared, NULL, params, NULL));
    CU(cu.sync());
    for (int i = 0; i < np; i++)
        CU(cu.dtoh(gpu[i], dev[i], (size_t)k->params[i]->span * tilec_dtype_size(k->params[i]->dtype)));
    bool ok = tilec_simulate(p, k->name, &sim, sim_buf) == TILEC_OK;
    if (!ok) fprintf(log, "  %s: the simulator failed:\n%s", k->name, tilec_diag_text(ctx));
    for (int i = 0; ok && i < np; i++)
        if (!same(k->params[i]->dtype, gpu[i], sim_buf[i], k->params[i]->span)) {
            fprintf(log, "  %s: %s differs between the GPU and the simulator\n", k->name, k->params[i]->name);
            ok = false;
        }
    tilec_check_result res[16];
    size_t nres = 0;
    if (ok && tilec_check(p, k->name, &sim, (const void *const *)in, (const void *const *)gpu, res, &nres) == TILEC_OK)
        for (size_t i = 0; i < nres; i++) {
            if (!res[i].exact && res[i].max_error > t->worst) t->worst = res[i].max_error;
            if (!res[i].ok) {
                fprintf(log, "  %s: %s differs from the reference at [%lld]: got %.9g want %.9g\n", k->name, res[i].param,
                        (long long)res[i].first_bad, res[i].got, res[i].want);
                ok = false;
            }
        }
    for (int i = 0; i < np; i++) {
        cu.release(dev[i]);
        free(in[i]);
        free(gpu[i]);
        free(sim_buf[i]);
    }
    t->kernels++;
    if (ok) t->matched++;
    else t->failed++;
    return true;
}

/* Compiles text (one or more kernels) for arch and runs every kernel of it. */
static bool run_program(const char *name, const char *text, const char *arch, tally *t, FILE *log) {
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p = NULL;
    tilec_target tg = {TILEC_BACKEND_CUDA, arch, 0};
    char *src = NULL;
    bool ok = tilec_parse(ctx, name, text, strlen(text), &p) == TILEC_OK && tilec_emit(p, &tg, &src, NULL) == TILEC_OK;
    ir_str full = {0};
    if (ok) {
        ir_str_printf(&full, "%s", src);
        for (size_t i = 0; i < tilec_program_kernel_count(p); i++)
            if (tilec_program_kernel(p, i)->is_func) func_wrapper(&full, tilec_program_kernel(p, i));
    }
    rtc_result bin = {0};
    if (ok && rtc_compile(ctx, TILEC_BACKEND_CUDA, arch, 32, name, full.data, RTC_BINARY, &bin) != TILEC_OK) ok = false;
    CUmodule mod = NULL;
    if (ok && cu.load(&mod, bin.data) != 0) {
        fprintf(log, "  %s: the driver rejected the CUBIN\n", name);
        ok = false;
    }
    if (!ok) {
        fprintf(log, "%s: could not be prepared:\n%s", name, tilec_diag_text(ctx));
        t->failed++;
    }
    for (size_t i = 0; ok && i < tilec_program_kernel_count(p); i++)
        ok = run_kernel(p, tilec_program_kernel(p, i), mod, arch, 1000 + i, t, log);
    if (mod) cu.unload(mod);
    rtc_result_free(&bin);
    ir_str_free(&full);
    tilec_free(src);
    tilec_program_free(p);
    tilec_close(ctx);
    return ok;
}

/* Appends a generated single-kernel program to a batch, its kernel renamed k<i>; skips
 * programs no variant can take (a forced cta_tree on short rows, say). */
static bool batch_add(ir_str *batch, const char *text, int i, const char *arch) {
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p = NULL;
    char *src = NULL;
    tilec_target tg = {TILEC_BACKEND_CUDA, arch, 0};
    bool ok = tilec_parse(ctx, "gen", text, strlen(text), &p) == TILEC_OK && tilec_emit(p, &tg, &src, NULL) == TILEC_OK;
    tilec_free(src);
    tilec_program_free(p);
    tilec_close(ctx);
    if (!ok) return false;
    const char *at = strstr(text, "kernel k(");
    ir_str_printf(batch, "%.*skernel k%d(%s", (int)(at - text), text, i, at + strlen("kernel k("));
    return true;
}

/* one process's share: batch b (counted over the matrix's and the random kernels'
 * batches) is this process's when b % jobs == job; the examples are job 0's */
typedef struct share {
    int job, jobs, batch;
} share;
static bool mine(share *sh) { return sh->batch++ % sh->jobs == sh->job; }

/* --jobs: forks jobs - 1 workers (before this process opens the GPU), each of which runs
 * its share and writes its three tallies to a pipe; returns the write end in *to_parent
 * for a worker (and its job number), -1 for the parent, with the read ends in fds[] */
static int fork_jobs(int jobs, int fds[], pid_t pids[], int *to_parent) {
    *to_parent = -1;
    for (int j = 1; j < jobs; j++) {
        int p[2];
        if (pipe(p) != 0) { perror("pipe"); return -2; }
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) { perror("fork"); return -2; }
        if (pid == 0) {
            close(p[0]);
            for (int k = 1; k < j; k++) close(fds[k]);
            *to_parent = p[1];
            return j;
        }
        close(p[1]);
        fds[j] = p[0];
        pids[j] = pid;
    }
    return 0;
}

static void add_tally(tally *into, const tally *t) {
    into->kernels += t->kernels;
    into->matched += t->matched;
    into->failed += t->failed;
    if (t->worst > into->worst) into->worst = t->worst;
}

int main(int argc, char **argv) {
    const char *examples = "examples", *out = NULL;
    int nrandom = 1500, jobs = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--examples") == 0 && i + 1 < argc) examples = argv[++i];
        else if (strcmp(argv[i], "--random") == 0 && i + 1 < argc) nrandom = atoi(argv[++i]);
        else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc) jobs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
        else {
            fprintf(stderr, "usage: gpu_check [--examples DIR] [--random N] [--jobs N] [--out FILE.md]\n");
            return 2;
        }
    }
    if (jobs < 1 || jobs > 64) {
        fprintf(stderr, "gpu_check: --jobs takes 1 to 64 processes\n");
        return 2;
    }
    int fds[64] = {0}, to_parent = -1;
    pid_t pids[64] = {0};
    int job = fork_jobs(jobs, fds, pids, &to_parent);
    if (job < -1) return 1;
    share sh = {job, jobs, 0};
    char arch[32], device[256] = "";
    int driver = 0;
    if (!open_gpu(arch, sizeof arch, device, sizeof device, &driver)) return 3;
    if (job == 0)
        printf("gpu_check: %s (%s), CUDA driver API %d.%d, %s%s\n", device, arch, driver / 1000, driver % 1000 / 10,
               rtc_version(TILEC_BACKEND_CUDA) ? rtc_version(TILEC_BACKEND_CUDA) : "no NVRTC",
               jobs > 1 ? "; the batches shared among processes" : "");
    FILE *log = stdout;
    tally ex = {0}, mat = {0}, rnd = {0};
    /* every example */
    DIR *d = job == 0 ? opendir(examples) : NULL;
    struct dirent *e;
    char *names[64];
    int nnames = 0;
    while (d && (e = readdir(d)) && nnames < 64)
        if (strstr(e->d_name, ".tile")) names[nnames++] = strdup(e->d_name);
    if (d) closedir(d);
    for (int i = 0; i < nnames; i++) { /* sorted, so the table is stable */
        for (int j = i + 1; j < nnames; j++)
            if (strcmp(names[j], names[i]) < 0) { char *x = names[i]; names[i] = names[j]; names[j] = x; }
    }
    for (int i = 0; i < nnames; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", examples, names[i]);
        FILE *f = fopen(path, "rb");
        char *text = calloc(1, 1 << 16);
        if (f) { size_t n = fread(text, 1, (1 << 16) - 1, f); text[n] = 0; fclose(f); }
        run_program(names[i], text, arch, &ex, log);
        free(text);
        free(names[i]);
    }
    if (job == 0) printf("  examples: %d of %d kernels matched\n", ex.matched, ex.kernels);
    /* the variant matrix and the random kernels, in batches of 150 kernels per module */
    char one[4096];
    ir_str batch = {0};
    int in_batch = 0;
    for (int i = 0; i < MATRIX_ROWS; i++) {
        matrix_program(i, one, sizeof one, NULL, NULL, NULL);
        in_batch += batch_add(&batch, one, i, arch);
        if (in_batch == 150 || i == MATRIX_ROWS - 1) {
            if (mine(&sh)) run_program("matrix", batch.data, arch, &mat, log);
            ir_str_free(&batch);
            in_batch = 0;
        }
    }
    uint64_t s = 2026;
    for (int i = 0; i < nrandom; i++) {
        make_program(&s, one, sizeof one);
        in_batch += batch_add(&batch, one, i, arch);
        if (in_batch == 150 || i == nrandom - 1) {
            if (mine(&sh)) run_program("random", batch.data, arch, &rnd, log);
            ir_str_free(&batch);
            in_batch = 0;
        }
    }
    if (job > 0) { /* a worker: its tallies to the parent */
        tally t[3] = {ex, mat, rnd};
        fflush(stdout);
        bool sent = write(to_parent, t, sizeof t) == (ssize_t)sizeof t;
        return sent ? 0 : 1;
    }
    bool lost = false;
    for (int j = 1; j < jobs; j++) {
        tally t[3];
        int status = 0;
        bool got = read(fds[j], t, sizeof t) == (ssize_t)sizeof t;
        waitpid(pids[j], &status, 0);
        if (!got || !WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1)) {
            fprintf(stderr, "gpu_check: worker %d ended without its results (status %d)\n", j, status);
            lost = true;
            continue;
        }
        add_tally(&mat, &t[1]);
        add_tally(&rnd, &t[2]);
    }
    printf("  variant matrix: %d of %d kernels matched\n", mat.matched, mat.kernels);
    printf("  random kernels: %d of %d matched\n", rnd.matched, rnd.kernels);
    int failed = ex.failed + mat.failed + rnd.failed + lost;
    if (out) {
        FILE *f = fopen(out, "w");
        if (!f) { perror(out); return 1; }
        time_t now = time(NULL);
        char date[32];
        strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
        fprintf(f, "| set | kernels | bitwise equal to the simulator and within the reference's tolerance | largest sum error (relative to magnitudes) |\n"
                   "|---|---|---|---|\n");
        fprintf(f, "| examples | %d | %d | %.3g |\n", ex.kernels, ex.matched, ex.worst);
        fprintf(f, "| variant matrix (lengths × threads × ops × forced variants) | %d | %d | %.3g |\n", mat.kernels, mat.matched, mat.worst);
        fprintf(f, "| random kernels (dtypes, scopes, layouts, axes, accum, NaN policy) | %d | %d | %.3g |\n", rnd.kernels, rnd.matched, rnd.worst);
        fprintf(f, "\nRun on %s: %s (%s), CUDA driver API %d.%d, %s.\n", date, device, arch, driver / 1000, driver % 1000 / 10,
                rtc_version(TILEC_BACKEND_CUDA) ? rtc_version(TILEC_BACKEND_CUDA) : "no NVRTC");
        fclose(f);
    }
    printf("gpu_check: %s\n", failed ? "FAILED" : "every kernel matched");
    return failed ? 1 : 0;
}
