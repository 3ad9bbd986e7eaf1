/*
 * sharded_sum.c — a sum over the columns of a matrix whose columns are sharded across the
 * ranks of a group, one thread (and one context) per rank: the way one process drives
 * several GPUs. Rank r runs on device r when a GPU is usable, else on the simulator. Each
 * rank holds a slice of the columns, the sharded dim is reduced, and every rank gets the
 * same row sums, bit for bit (docs/runtime.md, "Sharded reductions").
 *
 *   cc sharded_sum.c $(pkg-config --cflags --libs tilec) -lpthread -o sharded_sum
 *   NCCL_NVLS_ENABLE=0 ./sharded_sum 4        (a GPU per rank)
 *
 * NCCL is libnccl.so.2, or the file TILEC_NCCL_PATH names; without it the program says so
 * and exits with status 3. NCCL moves GPU memory only, so a rank on the simulator (the
 * "sim" argument, or a rank beyond the GPUs there are) fails with a message saying so;
 * "sim" runs only with an NCCL stand-in that exchanges host memory, as `meson test
 * sharded-example` runs it with tests/fake_nccl.c:
 *   TILEC_NCCL_PATH=build/tests/libfake_nccl.so NCCL_NVLS_ENABLE=0 ./sharded_sum 3 sim
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tilec.h>

enum { ROWS = 8, COLS = 10000, MAX_RANKS = 8 };

typedef struct rank_arg {
    int rank, nranks;
    bool sim;                  /* the simulator, whatever GPUs there are */
    const tilec_comm_id *id;
    const float *matrix;       /* the whole matrix, row-major, on the host */
    float sums[ROWS];          /* what this rank got */
    tilec_status st;
    char message[512];
} rank_arg;

static void *run_rank(void *p) {
    rank_arg *a = p;
    int64_t first = (int64_t)COLS * a->rank / a->nranks, mine = (int64_t)COLS * (a->rank + 1) / a->nranks - first;
    float *shard = malloc(sizeof(float) * ROWS * (size_t)mine);
    for (int i = 0; i < ROWS; i++) memcpy(shard + i * mine, a->matrix + i * COLS + first, sizeof(float) * (size_t)mine);
    tilec_ctx *ctx;
    tilec_comm *comm = NULL;
    void *in = NULL, *out = NULL;
    a->st = tilec_open(&ctx);
    if (a->st != TILEC_OK) return NULL;
    if (a->sim || (a->st = tilec_runtime_open(ctx, TILEC_BACKEND_AUTO, a->rank)) != TILEC_OK)
        a->st = tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0); /* fewer GPUs than ranks: the simulator */
    if (a->st == TILEC_OK) a->st = tilec_comm_init(ctx, a->nranks, a->rank, a->id, &comm);
    if (a->st == TILEC_OK) a->st = tilec_mem_alloc(ctx, sizeof(float) * ROWS * (size_t)mine, &in);
    if (a->st == TILEC_OK) a->st = tilec_mem_upload(ctx, in, shard, sizeof(float) * ROWS * (size_t)mine);
    if (a->st == TILEC_OK) a->st = tilec_mem_alloc(ctx, sizeof a->sums, &out);
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {ROWS, mine}, .naxes = 1, .axes = {1}};
    if (a->st == TILEC_OK) a->st = tilec_reduce_sharded(ctx, comm, &d, /* shard_dim */ 1, in, out);
    if (a->st == TILEC_OK) a->st = tilec_mem_download(ctx, a->sums, out, sizeof a->sums);
    if (a->st != TILEC_OK) snprintf(a->message, sizeof a->message, "%s", tilec_diag_text(ctx));
    tilec_comm_free(comm);
    tilec_mem_free(ctx, out);
    tilec_mem_free(ctx, in);
    tilec_close(ctx);
    free(shard);
    return NULL;
}

int main(int argc, char **argv) {
    int nranks = argc > 1 ? atoi(argv[1]) : 2;
    if (nranks < 1 || nranks > MAX_RANKS) {
        fprintf(stderr, "usage: sharded_sum [RANKS, 1 to %d] [sim]\n", MAX_RANKS);
        return 2;
    }
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) return 1;
    tilec_comm_id id; /* made once, handed to every rank (here: a variable they share) */
    tilec_status st = tilec_comm_unique_id(ctx, &id);
    if (st != TILEC_OK) {
        fprintf(stderr, "%s\n", tilec_diag_text(ctx));
        tilec_close(ctx);
        return st == TILEC_ERR_UNAVAILABLE ? 3 : 1;
    }
    tilec_close(ctx);
    float *matrix = malloc(sizeof(float) * ROWS * COLS);
    for (long i = 0; i < (long)ROWS * COLS; i++) matrix[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
    pthread_t t[MAX_RANKS];
    rank_arg a[MAX_RANKS];
    for (int r = 0; r < nranks; r++) {
        a[r] = (rank_arg){.rank = r, .nranks = nranks, .sim = argc > 2 && !strcmp(argv[2], "sim"), .id = &id, .matrix = matrix};
        pthread_create(&t[r], NULL, run_rank, &a[r]);
    }
    for (int r = 0; r < nranks; r++) pthread_join(t[r], NULL);
    int bad = 0;
    for (int r = 0; r < nranks; r++) {
        if (a[r].st != TILEC_OK) {
            fprintf(stderr, "rank %d: %s\n%s", r, tilec_status_name(a[r].st), a[r].message);
            bad = 1;
        } else if (memcmp(a[r].sums, a[0].sums, sizeof a[0].sums) != 0) {
            fprintf(stderr, "rank %d's sums differ from rank 0's\n", r);
            bad = 1;
        }
    }
    if (!bad) {
        double want = 0;
        for (int c = 0; c < COLS; c++) want += matrix[c];
        printf("%d ranks: row 0 sums to %.6f (in f64 %.6f); every rank has the same bits\n", nranks, a[0].sums[0], want);
    }
    free(matrix);
    return bad;
}
