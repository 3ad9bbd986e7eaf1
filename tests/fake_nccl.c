/*
 * fake_nccl.c — a stand-in for libnccl.so.2 that tests/test_sharded.c loads through
 * TILEC_NCCL_PATH: the ranks of a group are threads of one process on the simulator,
 * whose device memory is host memory, so an all-gather is a memcpy from every rank's
 * send buffer. Groups meet in a registry keyed by the unique id's bytes.
 *
 * Every wait is bounded: FAKE_NCCL_TIMEOUT_MS (default 10000) and a rank that has not
 * arrived by then makes the waiters return ncclInternalError. A failing rank marks its
 * group failed, so the others return ncclRemoteError at once instead of waiting.
 * FAKE_NCCL_FAIL plants failures, read at every call:
 *   "init:R"        rank R's ncclCommInitRank fails (ncclSystemError)
 *   "gather:R:K"    rank R's K-th ncclAllGather (from 1) fails (ncclInternalError)
 *   "absent:R:K"    rank R never makes its K-th ncclAllGather (returns ncclInternalError
 *                   at once, without telling the group): the others time out
 * ncclCommInitRank also fails (ncclInvalidUsage) unless NCCL_NVLS_ENABLE=0 is set, which
 * every process of these machines must have.
 *
 * It exchanges host memory and says so by exporting tilecNcclHostMemory, which real NCCL
 * never does. Built with -DFAKE_NCCL_LIKE_REAL (fake_nccl_real in tests/meson.build) it
 * stands for real NCCL on a machine without a GPU instead: no marker, and
 * ncclCommInitRank fails with "unhandled cuda error", as NCCL does there.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char internal[128];
} ncclUniqueId;
typedef struct fake_comm *ncclComm_t;

enum { SUCCESS = 0, CUDA_ERROR = 1, SYSTEM_ERROR = 2, INTERNAL_ERROR = 3, INVALID_ARGUMENT = 4, INVALID_USAGE = 5, REMOTE_ERROR = 6 };
enum { MAX_RANKS = 64 };

typedef struct group {
    ncclUniqueId id;
    int nranks, joined, alive; /* ranks that joined; comms not yet destroyed */
    int failed;                /* a rank failed: every wait returns ncclRemoteError */
    unsigned long gen;         /* collectives completed */
    int arrived, departed;
    const void *send[MAX_RANKS];
    size_t count[MAX_RANKS];
    struct group *next;
} group;

struct fake_comm {
    group *g;
    int rank;
    int gathers; /* ncclAllGather calls so far */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static group *groups;
static unsigned long ids;

int ncclGetUniqueId(ncclUniqueId *id);
int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
int ncclAllGather(const void *send, void *recv, size_t count, int dtype, ncclComm_t comm, void *stream);
int ncclCommDestroy(ncclComm_t comm);
int ncclCommAbort(ncclComm_t comm);
const char *ncclGetErrorString(int result);
int ncclGroupStart(void);
int ncclGroupEnd(void);
#ifndef FAKE_NCCL_LIKE_REAL
int tilecNcclHostMemory = 1; /* the all-gather copies host memory (tilec's simulator's) */
#endif

/* Whether FAKE_NCCL_FAIL plants `what` for rank (and call k, when the mode takes one). */
static int planted(const char *what, int rank, int k) {
    const char *v = getenv("FAKE_NCCL_FAIL");
    size_t n = strlen(what);
    if (!v || strncmp(v, what, n) != 0 || v[n] != ':') return 0;
    int r = -1, kk = -1;
    int got = sscanf(v + n + 1, "%d:%d", &r, &kk);
    return got >= 1 && r == rank && (got == 1 || kk == k);
}

static struct timespec deadline(void) {
    const char *v = getenv("FAKE_NCCL_TIMEOUT_MS");
    long ms = v && *v ? strtol(v, NULL, 10) : 10000;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
    return t;
}

/* Waits (lock held) until done(g) or the group fails or the deadline passes. */
static int wait_for(group *g, int (*done)(const group *, unsigned long), unsigned long gen) {
    struct timespec t = deadline();
    while (!done(g, gen)) {
        if (g->failed) return REMOTE_ERROR;
        if (pthread_cond_timedwait(&cond, &lock, &t) == ETIMEDOUT && !done(g, gen)) {
            g->failed = 1; /* as NCCL's watchdog would: the group is broken */
            pthread_cond_broadcast(&cond);
            return INTERNAL_ERROR;
        }
    }
    return SUCCESS;
}

static int all_joined(const group *g, unsigned long gen) { return (void)gen, g->joined == g->nranks; }
static int all_arrived(const group *g, unsigned long gen) { return g->gen != gen || g->arrived == g->nranks; }
static int all_departed(const group *g, unsigned long gen) { return g->gen != gen; }

/* What the real ncclGetUniqueId leaves behind: a thread of the library's own (NCCL's
 * bootstrap root) still running after the call returns, here for 200 ms, so a caller that
 * unloads the library too soon (dlclose of a handle it thinks it is done with) crashes as
 * it did with NCCL 2.28 on the H200. */
static void *bootstrap_root(void *arg) {
    (void)arg;
    for (int i = 0; i < 200; i++) {
        struct timespec t = {0, 1000000};
        nanosleep(&t, NULL);
    }
    return NULL;
}

int ncclGetUniqueId(ncclUniqueId *id) {
    if (!id) return INVALID_ARGUMENT;
    pthread_attr_t attr;
    pthread_t root;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int made = pthread_create(&root, &attr, bootstrap_root, NULL);
    pthread_attr_destroy(&attr);
    if (made != 0) return INTERNAL_ERROR;
    memset(id, 0, sizeof *id);
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    pthread_mutex_lock(&lock);
    unsigned long n = ++ids;
    pthread_mutex_unlock(&lock);
    snprintf(id->internal, sizeof id->internal, "fake-nccl %lu %lld.%09ld", n, (long long)t.tv_sec, t.tv_nsec);
    return SUCCESS;
}

int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    if (!comm || nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks) return INVALID_ARGUMENT;
    if (!nvls || strcmp(nvls, "0") != 0) return INVALID_USAGE;
#ifdef FAKE_NCCL_LIKE_REAL
    return CUDA_ERROR; /* real NCCL without a GPU */
#endif
    pthread_mutex_lock(&lock);
    group *g = groups;
    while (g && memcmp(&g->id, &id, sizeof id) != 0) g = g->next;
    if (!g) {
        g = calloc(1, sizeof *g);
        if (!g) {
            pthread_mutex_unlock(&lock);
            return SYSTEM_ERROR;
        }
        g->id = id;
        g->nranks = nranks;
        g->next = groups;
        groups = g;
    }
    if (g->nranks != nranks) {
        pthread_mutex_unlock(&lock);
        return INVALID_USAGE;
    }
    if (planted("init", rank, 0)) {
        g->failed = 1;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
        return SYSTEM_ERROR;
    }
    g->joined++;
    g->alive++;
    pthread_cond_broadcast(&cond);
    int res = wait_for(g, all_joined, 0);
    struct fake_comm *c = res == SUCCESS ? calloc(1, sizeof *c) : NULL;
    if (res == SUCCESS && !c) res = SYSTEM_ERROR;
    if (res != SUCCESS) {
        g->alive--;
        pthread_mutex_unlock(&lock);
        return res;
    }
    c->g = g;
    c->rank = rank;
    *comm = c;
    pthread_mutex_unlock(&lock);
    return SUCCESS;
}

int ncclAllGather(const void *send, void *recv, size_t count, int dtype, ncclComm_t c, void *stream) {
    (void)stream;
    if (!c || dtype != 1 /* ncclUint8 */) return INVALID_ARGUMENT;
    group *g = c->g;
    int k = ++c->gathers;
    pthread_mutex_lock(&lock);
    if (planted("absent", c->rank, k)) {
        pthread_mutex_unlock(&lock);
        return INTERNAL_ERROR;
    }
    if (planted("gather", c->rank, k)) {
        g->failed = 1;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
        return INTERNAL_ERROR;
    }
    if (g->failed) {
        pthread_mutex_unlock(&lock);
        return REMOTE_ERROR;
    }
    unsigned long gen = g->gen;
    g->send[c->rank] = send;
    g->count[c->rank] = count;
    g->arrived++;
    pthread_cond_broadcast(&cond);
    int res = wait_for(g, all_arrived, gen);
    if (res == SUCCESS) {
        for (int r = 0; r < g->nranks; r++)
            if (g->count[r] != count) res = INVALID_USAGE;
        for (int r = 0; r < g->nranks && res == SUCCESS; r++) {
            char *dst = (char *)recv + (size_t)r * count;
            if (dst != g->send[r]) memmove(dst, g->send[r], count);
        }
        /* nobody leaves before every rank has read every send buffer */
        if (++g->departed == g->nranks) {
            g->arrived = g->departed = 0;
            g->gen++;
            pthread_cond_broadcast(&cond);
        } else {
            int w = wait_for(g, all_departed, gen);
            if (res == SUCCESS) res = w;
        }
        if (res != SUCCESS) g->failed = 1, pthread_cond_broadcast(&cond);
    }
    pthread_mutex_unlock(&lock);
    return res;
}

int ncclCommDestroy(ncclComm_t c) {
    if (!c) return INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    group *g = c->g;
    if (--g->alive == 0 && g->joined == g->nranks) { /* the last one out removes the group */
        for (group **p = &groups; *p; p = &(*p)->next)
            if (*p == g) {
                *p = g->next;
                break;
            }
        free(g);
    }
    pthread_mutex_unlock(&lock);
    free(c);
    return SUCCESS;
}

/* The fake's comms hold nothing in flight: aborting is destroying. */
int ncclCommAbort(ncclComm_t c) { return ncclCommDestroy(c); }

const char *ncclGetErrorString(int result) {
    switch (result) {
    case SUCCESS: return "no error";
    case CUDA_ERROR: return "unhandled cuda error (fake NCCL standing for NCCL without a GPU)";
    case SYSTEM_ERROR: return "unhandled system error (fake NCCL: a planted failure)";
    case INTERNAL_ERROR: return "internal error (fake NCCL: a planted failure or a timeout)";
    case INVALID_ARGUMENT: return "invalid argument";
    case INVALID_USAGE: return "invalid usage (fake NCCL: NCCL_NVLS_ENABLE=0 must be set, and every rank agree)";
    case REMOTE_ERROR: return "remote process exited or there was a network error (fake NCCL: another rank failed)";
    default: return "unknown result";
    }
}

int ncclGroupStart(void) { return SUCCESS; }
int ncclGroupEnd(void) { return SUCCESS; }
