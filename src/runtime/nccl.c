/*
 * nccl.c — NCCL through dlopen (see nccl.h).
 *
 * The library is opened for each group (a comm holds its handle; dlopen counts them), not
 * once per process, so a program can point TILEC_NCCL_PATH elsewhere between groups and
 * a missing NCCL is an error of the call that needed it. An explicit TILEC_NCCL_PATH is
 * the only place tried when set, so a mistake shows. The library never sets
 * NCCL_NVLS_ENABLE: callers run with NCCL_NVLS_ENABLE=0 (docs/runtime.md).
 */
#include "nccl.h"
#include "runtime.h"
#include "../ir/ir.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stores dlsym(h, name) into the function pointer at fn (POSIX allows the conversion). */
static void load_fn(void *fn, void *h, const char *name) {
    void *p = dlsym(h, name);
    memcpy(fn, &p, sizeof p);
}

tilec_status rt_nccl_open(tilec_ctx *ctx, rt_nccl *lib) {
    memset(lib, 0, sizeof *lib);
    const char *over = getenv("TILEC_NCCL_PATH");
    const char *path = over && *over ? over : "libnccl.so.2";
    /* RTLD_NODELETE: NCCL is never unmapped, since ncclGetUniqueId leaves a thread of its
     * own running (the bootstrap root, until every rank has joined) that a dlclose would
     * pull the code from under (a segfault on the H200 with NCCL 2.28, the id made in a
     * context closed before the ranks joined). */
    const char *no_loader = rt_no_loader();
    void *h = no_loader ? NULL : dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h && no_loader) {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "NCCL is not available: %s", no_loader);
        return TILEC_ERR_UNAVAILABLE;
    }
    if (!h) {
        const char *why = dlerror();
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "NCCL is not available: tried %s (%s); install NCCL 2 or set TILEC_NCCL_PATH to a libnccl.so.2",
                    path, why ? why : "not found");
        return TILEC_ERR_UNAVAILABLE;
    }
    load_fn(&lib->get_unique_id, h, "ncclGetUniqueId");
    load_fn(&lib->comm_init_rank, h, "ncclCommInitRank");
    load_fn(&lib->all_gather, h, "ncclAllGather");
    load_fn(&lib->comm_destroy, h, "ncclCommDestroy");
    load_fn(&lib->comm_abort, h, "ncclCommAbort");
    load_fn(&lib->error_string, h, "ncclGetErrorString");
    if (!lib->get_unique_id || !lib->comm_init_rank || !lib->all_gather || !lib->comm_destroy) {
        dlclose(h);
        memset(lib, 0, sizeof *lib);
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "NCCL is not available: %s lacks ncclGetUniqueId, ncclCommInitRank, ncclAllGather or "
                    "ncclCommDestroy; set TILEC_NCCL_PATH to a libnccl.so.2", path);
        return TILEC_ERR_UNAVAILABLE;
    }
    lib->host_memory = dlsym(h, "tilecNcclHostMemory") != NULL;
    lib->handle = h;
    snprintf(lib->path, sizeof lib->path, "%s", path);
    return TILEC_OK;
}

void rt_nccl_close(rt_nccl *lib) {
    if (lib->handle) dlclose(lib->handle);
    memset(lib, 0, sizeof *lib);
}

const char *rt_nccl_error(const rt_nccl *lib, int result) {
    const char *s = lib->error_string ? lib->error_string(result) : NULL;
    return s ? s : "unknown NCCL result";
}
