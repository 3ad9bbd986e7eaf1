/*
 * nccl.h — NCCL through dlopen, for the sharded reductions (sharded.c). Only the entry
 * points tilec calls are bound; nothing links against NCCL.
 */
#ifndef TILEC_NCCL_H
#define TILEC_NCCL_H

#include "../../include/tilec.h"

/* ncclUniqueId: 128 opaque bytes, passed by value to ncclCommInitRank. */
typedef struct rt_nccl_uid {
    char internal[128];
} rt_nccl_uid;

enum { RT_NCCL_UINT8 = 1 }; /* ncclUint8 of ncclDataType_t */

/* One load of the library: a comm keeps its own, so the handle lives as long as it. */
typedef struct rt_nccl {
    void *handle;
    char path[512];     /* the file loaded */
    int (*get_unique_id)(rt_nccl_uid *id);
    int (*comm_init_rank)(void **comm, int nranks, rt_nccl_uid id, int rank);
    int (*all_gather)(const void *send, void *recv, size_t count, int dtype, void *comm, void *stream);
    int (*comm_destroy)(void *comm);
    int (*comm_abort)(void *comm); /* optional */
    const char *(*error_string)(int result);
    /* whether it exchanges host memory: a stand-in that says so by exporting
     * tilecNcclHostMemory (tests/fake_nccl.c). NCCL and RCCL move device memory only, and
     * need a GPU for every rank even to start a group */
    bool host_memory;
} rt_nccl;

/* Loads TILEC_NCCL_PATH when it is set (and only it), else libnccl.so.2. On failure
 * TILEC_ERR_UNAVAILABLE with a diagnostic in ctx naming what was tried and why. */
tilec_status rt_nccl_open(tilec_ctx *ctx, rt_nccl *lib);
void rt_nccl_close(rt_nccl *lib);
/* NCCL's name for a result ("ncclRemoteError: ..."), never NULL. */
const char *rt_nccl_error(const rt_nccl *lib, int result);

#endif
