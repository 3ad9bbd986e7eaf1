/*
 * sim.c — the SIMT simulator (see sim.h).
 *
 * The structured loop IR is first flattened into instructions with jumps (IF / ELSE /
 * ENDIF, FOR / TEST / STEP). Each warp then runs them with an active-lane mask and a stack
 * of saved masks, the way a GPU's reconvergence stack does. A CTA's warps run in turn until
 * each finishes or waits at a CTA or warpgroup barrier; a barrier is released when every
 * warp of its scope waits at it, and any other state is reported as a barrier reached by
 * part of its scope. CTAs run one after another.
 *
 * Work and memory are bounded (docs/simulator.md#budget): the memory a run needs is added up
 * before anything is allocated, and every instruction a warp executes costs each active
 * lane one thread-step plus one per operation of its expressions, starting a CTA one per
 * thread and per shared and local element it clears; a run stops when the steps pass the
 * context's budget, or before it starts when starting its CTAs alone would.
 *
 * Races: every shared element remembers its last write and a few reads since, with the
 * thread and a timestamp from one clock that also stamps barrier releases. Two accesses of
 * different threads are ordered when the later thread has passed a barrier, released after
 * the earlier access, that both threads belong to (the CTA, their warpgroup or their warp).
 */
#include "sim.h"

#include "../ir/numeric.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef union sim_val {
    int64_t i;   /* integer and bool types (i32 sign-extended, u32 zero-extended) */
    double f;    /* float types, exactly their type's value */
    double p[2]; /* f64x2 */
    int64_t q[2]; /* i64x2 */
} sim_val;

typedef enum ins_kind { SI_ASSIGN, SI_STORE, SI_SHFL, SI_BARRIER, SI_IF, SI_ELSE, SI_ENDIF,
                        SI_FOR, SI_TEST, SI_STEP, SI_VLOAD, SI_VSTORE, SI_ATOMIC, SI_FENCE, SI_END } ins_kind;

typedef struct ins {
    ins_kind kind;
    const lp_stmt *st;
    int jump;              /* IF: its ELSE; ELSE: its ENDIF; TEST: after the loop; STEP: its TEST */
    const ir_stmt *origin; /* the tile statement, for messages */
    uint64_t cost;         /* thread-steps one lane spends on it (see cost_of) */
} ins;

enum { READS = 4 };

/* What a shared element remembers. */
typedef struct shadow {
    uint64_t wts;
    int32_t wtid; /* -1: never written; -2: given before the launch (a func's parameter) */
    int32_t nreads;
    const ir_stmt *worigin;
    struct { uint64_t ts; int32_t tid; const ir_stmt *origin; } r[READS];
} shadow;

typedef struct ctl {
    ins_kind kind;
    uint64_t saved, other; /* the mask before; IF: the lanes still to run the else block */
} ctl;

typedef enum { W_RUN, W_WAIT, W_DONE } wstate;

typedef struct warp {
    int pc, first, nlanes, depth;
    uint64_t mask, live;
    wstate state;
    ctl *stack;
} warp;

typedef struct sim {
    tilec_program *p;
    const lp_kernel *k;
    ins *code;
    int ncode, cap, max_depth;
    int ws, threads, nwarps;
    /* A kernel of clusters runs a cluster's nc CTAs together (else nc is 1): thread `tid` of
     * the run is thread tid % stride of the CTA of rank tid / stride (stride: the threads,
     * rounded up to 128 when nc > 1, so no warp or warpgroup spans two CTAs); cta is the
     * first CTA's index in the grid. */
    int nc, stride, wpc; /* wpc: warps of a CTA (nwarps: of the run, nc * wpc) */
    int64_t cta;
    void *const *args;
    /* per buffer: host memory (global: the argument; shared: per CTA, the nc copies one
     * after the other; local: per thread at local_off within each thread's area) */
    unsigned char **mem;
    shadow **shadows;     /* shared buffers */
    int64_t *local_off;   /* local buffers: byte offset in a thread's area */
    size_t local_bytes;   /* one thread's local area */
    int64_t local_elems;  /* elements, for the init flags */
    int64_t *local_first; /* local buffers: element offset in a thread's init flags */
    unsigned char *locals, *local_init;
    sim_val *regs; /* threads x nregs */
    uint64_t (*sync)[4]; /* per thread: release time of its last cta / warpgroup / warp / cluster barrier */
    uint64_t clock;
    warp *warps;
    uint64_t steps, budget; /* thread-steps so far, and the most allowed */
    bool failed, over_budget;
} sim;

#define RAISE_BUDGET SIM_RAISE_BUDGET

/* ---- flattening ------------------------------------------------------------------------ */

/* Operations an expression evaluates: each load, constant, register read, arithmetic,
 * comparison, conversion or selection. */
static uint64_t ops_of(const lp_expr *e) { return e ? 1 + ops_of(e->a) + ops_of(e->b) + ops_of(e->c) : 0; }

/* The thread-steps of one lane's instruction: one, plus the operations of what it
 * evaluates; a vector access one per element. */
static uint64_t cost_of(ins_kind kind, const lp_stmt *st) {
    switch (kind) {
    case SI_ASSIGN:
    case SI_IF:
    case SI_FOR: return 1 + ops_of(st->a);
    case SI_STORE:
    case SI_ATOMIC: return 1 + ops_of(st->a) + ops_of(st->b);
    case SI_TEST: return 1 + ops_of(st->b);
    case SI_STEP: return 1 + ops_of(st->step);
    case SI_VLOAD:
    case SI_VSTORE: return (uint64_t)st->vec + ops_of(st->a);
    default: return 1;
    }
}

static int emit(sim *S, ins_kind kind, const lp_stmt *st, const ir_stmt *origin) {
    if (S->ncode == S->cap) {
        int cap = S->cap ? 2 * S->cap : 64;
        ins *c = realloc(S->code, (size_t)cap * sizeof *c);
        if (!c) { S->failed = true; return 0; }
        S->code = c;
        S->cap = cap;
    }
    S->code[S->ncode] = (ins){kind, st, 0, origin, cost_of(kind, st)};
    return S->ncode++;
}

static void flatten(sim *S, const lp_block *b, const ir_stmt **origin, int depth) {
    if (depth > S->max_depth) S->max_depth = depth;
    for (int i = 0; i < b->n && !S->failed; i++) {
        const lp_stmt *st = b->items[i];
        switch (st->kind) {
        case LS_OP: *origin = st->origin; break;
        case LS_ASSIGN: emit(S, SI_ASSIGN, st, *origin); break;
        case LS_STORE: emit(S, SI_STORE, st, *origin); break;
        case LS_SHFL: emit(S, SI_SHFL, st, *origin); break;
        case LS_BARRIER: emit(S, SI_BARRIER, st, *origin); break;
        case LS_VLOAD: emit(S, SI_VLOAD, st, *origin); break;
        case LS_VSTORE: emit(S, SI_VSTORE, st, *origin); break;
        case LS_ATOMIC_ADD: emit(S, SI_ATOMIC, st, *origin); break;
        case LS_FENCE: emit(S, SI_FENCE, st, *origin); break;
        case LS_IF: {
            int at = emit(S, SI_IF, st, *origin);
            flatten(S, &st->body, origin, depth + 1);
            int el = emit(S, SI_ELSE, st, *origin);
            flatten(S, &st->orelse, origin, depth + 1);
            int end = emit(S, SI_ENDIF, st, *origin);
            if (S->failed) return;
            S->code[at].jump = el;
            S->code[el].jump = end;
            break;
        }
        case LS_FOR: {
            emit(S, SI_FOR, st, *origin);
            int test = emit(S, SI_TEST, st, *origin);
            flatten(S, &st->body, origin, depth + 1);
            int step = emit(S, SI_STEP, st, *origin);
            if (S->failed) return;
            S->code[step].jump = test;
            S->code[test].jump = step + 1;
            break;
        }
        }
    }
}

/* ---- errors ------------------------------------------------------------------------------- */

static void fail(sim *S, const ir_stmt *origin, int tid, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void fail(sim *S, const ir_stmt *origin, int tid, const char *fmt, ...) {
    if (S->failed) return;
    S->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char who[128] = "";
    int t = tid % S->stride;
    if (tid >= 0)
        snprintf(who, sizeof who, "CTA %lld, thread %d (warp %d, lane %d): ", (long long)(S->cta + tid / S->stride), t,
                 t / S->ws, t % S->ws);
    ir_pos at = origin ? (origin->op_pos.line ? origin->op_pos : origin->pos) : (ir_pos){0, 0};
    ir_stmt_diag(S->p, S->k->tile, origin, TILEC_SEV_ERROR, at, "simulator (warp size %d): %s%s", S->ws, who, msg);
}

/* ---- memory -------------------------------------------------------------------------------- */

static bool ordered(const sim *S, int a, uint64_t ts, int b) {
    if (a == b) return true;
    const uint64_t *sb = S->sync[b];
    if (sb[3] > ts) return true;                  /* a cluster barrier orders every CTA of it */
    if (a / S->stride != b / S->stride) return false; /* any other only its own CTA's threads */
    if (sb[0] > ts) return true;
    if (a / 128 == b / 128 && sb[1] > ts) return true;
    return a / S->ws == b / S->ws && sb[2] > ts;
}

static const char *line_of(const ir_stmt *st, char *buf, size_t n) {
    if (st && st->pos.line) snprintf(buf, n, "line %d", st->pos.line);
    else if (st) snprintf(buf, n, "statement %d", st->index + 1);
    else snprintf(buf, n, "a lowering");
    return buf;
}

/* "thread 5", or in a cluster "thread 5 of CTA 9" (another CTA's, or its own). */
static const char *thread_name(const sim *S, int tid, char *buf, size_t n) {
    if (S->nc > 1) snprintf(buf, n, "thread %d of CTA %lld", tid % S->stride, (long long)(S->cta + tid / S->stride));
    else snprintf(buf, n, "thread %d", tid);
    return buf;
}

/* Checks and records an access to element i of the copy `copy` of a shared buffer. */
static void track(sim *S, const lp_buf *b, int64_t i, int copy, int tid, bool write, const ir_stmt *origin) {
    shadow *sh = &S->shadows[b->id][(size_t)copy * (size_t)b->elems + (size_t)i];
    uint64_t now = ++S->clock;
    char where[32];
    if (!write && sh->wtid == -1) {
        fail(S, origin, tid, "reads %s[%lld] before anything wrote it", b->name, (long long)i);
        return;
    }
    if (sh->wtid >= 0 && !ordered(S, sh->wtid, sh->wts, tid)) {
        char other[64];
        fail(S, origin, tid, "%s %s[%lld], which %s wrote at %s with no barrier between", write ? "writes" : "reads",
             b->name, (long long)i, thread_name(S, sh->wtid, other, sizeof other), line_of(sh->worigin, where, sizeof where));
        return;
    }
    if (write) {
        for (int r = 0; r < sh->nreads; r++)
            if (!ordered(S, sh->r[r].tid, sh->r[r].ts, tid)) {
                char other[64];
                fail(S, origin, tid, "writes %s[%lld] while %s may still read it (%s) with no barrier between",
                     b->name, (long long)i, thread_name(S, sh->r[r].tid, other, sizeof other),
                     line_of(sh->r[r].origin, where, sizeof where));
                return;
            }
        sh->wtid = tid;
        sh->wts = now;
        sh->worigin = origin;
        sh->nreads = 0;
        return;
    }
    int slot = -1, oldest = 0;
    for (int r = 0; r < sh->nreads; r++) {
        if (sh->r[r].tid == tid) slot = r;
        if (sh->r[r].ts < sh->r[oldest].ts) oldest = r;
    }
    if (slot < 0) slot = sh->nreads < READS ? sh->nreads++ : oldest;
    sh->r[slot].tid = tid;
    sh->r[slot].ts = now;
    sh->r[slot].origin = origin;
}

/* The address of element i of b for thread tid, after the bounds and shadow checks; a
 * shared buffer's in the copy of the cluster's CTA of rank `rank` (-1: the thread's own). */
static unsigned char *element(sim *S, const lp_buf *b, int64_t i, int64_t rank, int tid, bool write, const ir_stmt *origin) {
    if (i < 0 || i >= b->elems) {
        fail(S, origin, tid, "%s %s[%lld], out of bounds (%lld elements)", write ? "writes" : "reads",
             b->name, (long long)i, (long long)b->elems);
        return NULL;
    }
    size_t size = num_size(b->type);
    if (b->space == TILEC_SPACE_SHARED) {
        if (rank >= 0 && (S->k->cluster == 0 || rank >= S->nc)) {
            fail(S, origin, tid, "reads %s[%lld] of the CTA of rank %lld, which is not in its cluster (%d CTA%s)",
                 b->name, (long long)i, (long long)rank, S->nc, S->nc == 1 ? "" : "s");
            return NULL;
        }
        int copy = rank >= 0 ? (int)rank : tid / S->stride;
        track(S, b, i, copy, tid, write, origin);
        return S->failed ? NULL : S->mem[b->id] + ((size_t)copy * (size_t)b->elems + (size_t)i) * size;
    }
    if (b->space == TILEC_SPACE_LOCAL) {
        unsigned char *init = S->local_init + (size_t)tid * (size_t)S->local_elems + (size_t)(S->local_first[b->id] + i);
        if (!write && !*init) {
            fail(S, origin, tid, "reads %s[%lld] (local) before anything wrote it", b->name, (long long)i);
            return NULL;
        }
        *init = 1;
        return S->locals + (size_t)tid * S->local_bytes + (size_t)S->local_off[b->id] + (size_t)i * size;
    }
    return S->mem[b->id] + (size_t)i * size;
}

static sim_val load(sim *S, const lp_buf *b, int64_t i, int64_t rank, int tid, const ir_stmt *origin) {
    sim_val v = {0};
    unsigned char *p = element(S, b, i, rank, tid, false, origin);
    if (!p) return v;
    if (b->type == LP_F64X2 || b->type == LP_I64X2) memcpy(v.p, p, sizeof v.p);
    else if (lp_is_float(b->type)) v.f = num_load_float(b->type, p, 0);
    else v.i = num_load_int(b->type, p, 0);
    return v;
}

static void store(sim *S, const lp_buf *b, int64_t i, int tid, sim_val v, const ir_stmt *origin) {
    unsigned char *p = element(S, b, i, -1, tid, true, origin);
    if (!p) return;
    if (b->type == LP_F64X2 || b->type == LP_I64X2) memcpy(p, v.p, sizeof v.p);
    else if (lp_is_float(b->type)) num_store_float(b->type, p, 0, v.f);
    else num_store_int(b->type, p, 0, v.i);
}

/* ---- expressions ---------------------------------------------------------------------------- */

/* Wraps an integer result to its type. */
static int64_t wrap(lp_type t, uint64_t v) {
    switch (t) {
    case LP_I32: return (int32_t)(uint32_t)v;
    case LP_U32: return (uint32_t)v;
    case LP_BOOL: return v != 0;
    default: return (int64_t)v;
    }
}

static sim_val cast(lp_type to, lp_type from, sim_val v) {
    sim_val r = {0};
    if (lp_is_float(to)) {
        double x = lp_is_float(from) ? v.f : (double)v.i;
        r.f = num_round(to, x);
    } else if (lp_is_float(from)) {
        /* toward zero; every value of an i64 converts (a map's casts select a value in range
         * first: beyond it C leaves the conversion undefined, and this gives 0) */
        r.i = v.f >= -0x1p63 && v.f < 0x1p63 ? wrap(to, (uint64_t)(int64_t)v.f) : 0;
    } else {
        r.i = wrap(to, (uint64_t)v.i);
    }
    return r;
}

static sim_val eval(sim *S, const lp_expr *e, int tid, const ir_stmt *origin);

/* LO_EXP2A, a kernel's math=approx: the GPUs' hardware exponentials are within 1-2 ulp
 * of 2^x and flush results below 2^-126; the simulator gives 2^x rounded to f32, flushed
 * the same way (f32's 2^x is exact in f64's exp2 but for its last bits' rounding). */
static double exp2_approx(float x) {
    float y = (float)exp2((double)x);
    return y < 0x1p-126f ? 0.0 : (double)y; /* NaN passes: y < ... is false */
}

static sim_val arith(sim *S, const lp_expr *e, sim_val a, sim_val b, int tid, const ir_stmt *origin) {
    sim_val r = {0};
    lp_type t = e->a->type;
    if (e->op >= LO_LT && e->op <= LO_NE) {
        bool f = lp_is_float(t);
        double x = f ? a.f : 0, y = f ? b.f : 0;
        int64_t p = a.i, q = b.i;
        switch (e->op) {
        case LO_LT: r.i = f ? x < y : p < q; break;
        case LO_LE: r.i = f ? x <= y : p <= q; break;
        case LO_EQ: r.i = f ? x == y : p == q; break;
        default: r.i = f ? x != y : p != q; break;
        }
        return r;
    }
    if (e->op == LO_AND) { r.i = a.i && b.i; return r; }
    if (e->op == LO_OR) { r.i = a.i || b.i; return r; }
    if (t == LP_F64X2) { /* LO_ADD, part by part */
        r.p[0] = a.p[0] + b.p[0];
        r.p[1] = a.p[1] + b.p[1];
        return r;
    }
    if (lp_is_float(t)) {
        if (e->op == LO_MAX) r.f = num_fmax(a.f, b.f, e->nan);
        else if (e->op == LO_MIN) r.f = num_fmin(a.f, b.f, e->nan);
        else { /* in double, then rounded to f32 at every step: once through double is the same
                  for +, -, *, / of f32 operands (53 >= 2 * 24 + 2 bits) */
            double x = a.f, y = b.f;
            r.f = e->op == LO_ADD ? x + y : e->op == LO_SUB ? x - y : e->op == LO_MUL ? x * y : x / y;
            if (t == LP_F32) r.f = (double)(float)r.f;
        }
        return r;
    }
    uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
    switch (e->op) {
    case LO_ADD: r.i = wrap(t, x + y); break;
    case LO_SUB: r.i = wrap(t, x - y); break;
    case LO_MUL: r.i = wrap(t, x * y); break;
    case LO_MAX: r.i = a.i > b.i ? a.i : b.i; break;
    case LO_MIN: r.i = a.i < b.i ? a.i : b.i; break;
    case LO_BAND: r.i = wrap(t, x & y); break;
    case LO_BOR: r.i = wrap(t, x | y); break;
    case LO_BXOR: r.i = wrap(t, x ^ y); break;
    case LO_SHL:
    case LO_SHR:
        if (b.i < 0 || b.i >= 8 * (int64_t)num_size(t)) { fail(S, origin, tid, "a shift by %lld bits in the lowered program", (long long)b.i); break; }
        /* the value is sign-extended (signed types) or zero-extended (u32) in 64 bits */
        r.i = wrap(t, e->op == LO_SHL ? x << b.i : (uint64_t)(a.i >> b.i));
        break;
    default:
        if (b.i == 0) { fail(S, origin, tid, "integer division by zero in the lowered program"); break; }
        if (a.i < 0 || b.i < 0) { fail(S, origin, tid, "division of negative indices in the lowered program"); break; }
        r.i = wrap(t, e->op == LO_DIV ? x / y : x % y);
        break;
    }
    return r;
}

static sim_val special(const sim *S, lp_special s, int tid) {
    sim_val v = {0};
    int t = tid % S->stride;
    switch (s) {
    case LP_TID: v.i = t; break;
    case LP_CTA: v.i = S->cta + tid / S->stride; break;
    case LP_LANE: v.i = t % S->ws; break;
    default: v.i = t / S->ws; break;
    }
    return v;
}

static sim_val eval(sim *S, const lp_expr *e, int tid, const ir_stmt *origin) {
    sim_val v = {0};
    switch (e->kind) {
    case LX_CONST:
        if (lp_is_float(e->type)) v.f = e->f;
        else v.i = e->i;
        return v;
    case LX_REG: return S->regs[(size_t)tid * (size_t)S->k->nregs + (size_t)e->reg];
    case LX_SPECIAL: return special(S, e->special, tid);
    case LX_UNARY:
        v = eval(S, e->a, tid, origin);
        if (e->op == LO_NOT) v.i = !v.i;
        else if (e->op == LO_SQRT) v.f = e->type == LP_F32 ? (double)sqrtf((float)v.f) : sqrt(v.f);
        else if (e->op == LO_EXP2A) v.f = exp2_approx((float)v.f);
        else if (lp_is_float(e->type)) v.f = -v.f;
        else v.i = wrap(e->type, 0 - (uint64_t)v.i);
        return v;
    case LX_BINARY: {
        sim_val a = eval(S, e->a, tid, origin), b = eval(S, e->b, tid, origin);
        return arith(S, e, a, b, tid, origin);
    }
    case LX_SELECT:
        return eval(S, e->a, tid, origin).i ? eval(S, e->b, tid, origin) : eval(S, e->c, tid, origin);
    case LX_FMA: { /* rounded once in the type (fmaf: an f32's, not a double's and then an f32's) */
        double a = eval(S, e->a, tid, origin).f, b = eval(S, e->b, tid, origin).f, c = eval(S, e->c, tid, origin).f;
        v.f = e->type == LP_F32 ? (double)fmaf((float)a, (float)b, (float)c) : fma(a, b, c);
        return v;
    }
    case LX_PAIR:
        if (e->type == LP_I64X2) {
            v.q[0] = eval(S, e->a, tid, origin).i;
            v.q[1] = eval(S, e->b, tid, origin).i;
            return v;
        }
        v.p[0] = eval(S, e->a, tid, origin).f;
        v.p[1] = eval(S, e->b, tid, origin).f;
        return v;
    case LX_PACK16: { /* each rounded once to the 16-bit type, a NaN as its quiet NaN */
        uint32_t w = 0;
        for (int j = 0; j < 2; j++) {
            double x = eval(S, j ? e->b : e->a, tid, origin).f;
            uint16_t h = isnan(x) ? (e->i == LP_F16 ? 0x7e00 : 0x7fc0) : e->i == LP_F16 ? num_to_f16(x) : num_to_bf16(x);
            w |= (uint32_t)h << (16 * j);
        }
        v.i = w;
        return v;
    }
    case LX_PART:
        if (e->a->type == LP_U32) { /* a pack16's half, as its 16-bit float */
            uint16_t h = (uint16_t)((uint64_t)eval(S, e->a, tid, origin).i >> (16 * e->i));
            v.f = e->type == LP_F16 ? num_from_f16(h) : num_from_bf16(h);
            return v;
        }
        if (e->type == LP_I64) v.i = eval(S, e->a, tid, origin).q[e->i];
        else v.f = eval(S, e->a, tid, origin).p[e->i];
        return v;
    case LX_ALIGNED: /* a global parameter is the caller's memory, at its own address; the
                        simulator's shared and local storage is always aligned */
        v.i = e->buf->space != TILEC_SPACE_GLOBAL || (uintptr_t)S->mem[e->buf->id] % (uintptr_t)e->i == 0;
        return v;
    case LX_CAST: return cast(e->type, e->a->type, eval(S, e->a, tid, origin));
    case LX_LOAD: {
        int64_t i = eval(S, e->a, tid, origin).i, rank = e->c ? eval(S, e->c, tid, origin).i : -1;
        if (e->c && rank < 0) {
            fail(S, origin, tid, "reads %s[%lld] of the CTA of rank %lld, which is not in its cluster", e->buf->name,
                 (long long)i, (long long)rank);
            return v;
        }
        return load(S, e->buf, i, rank, tid, origin);
    }
    case LX_BITS: { /* f32 <-> i32, through the f32's 4 bytes; f64 <-> i64, the f64's 8 */
        sim_val a = eval(S, e->a, tid, origin);
        if (e->type == LP_I64) {
            memcpy(&v.i, &a.f, sizeof v.i);
            return v;
        }
        if (e->type == LP_F64) {
            memcpy(&v.f, &a.i, sizeof v.f);
            return v;
        }
        float f;
        int32_t i;
        if (e->type == LP_I32) {
            f = (float)a.f;
            memcpy(&i, &f, sizeof i);
            v.i = i;
        } else {
            i = (int32_t)a.i;
            memcpy(&f, &i, sizeof f);
            v.f = f;
        }
        return v;
    }
    }
    return v;
}

/* ---- running one warp ---------------------------------------------------------------------- */

static sim_val *reg(sim *S, int tid, int r) { return &S->regs[(size_t)tid * (size_t)S->k->nregs + (size_t)r]; }

/* Runs the lanes in `mask`, one statement at a time: every lane reads before any writes. */
#define EACH_LANE(w, lane, tid)                                                                   \
    for (int lane = 0, tid = (w)->first; lane < (w)->nlanes; lane++, tid++)                        \
        if ((w)->mask >> lane & 1)

static void do_shfl(sim *S, warp *w, const ins *in) {
    const lp_stmt *st = in->st;
    sim_val got[64];
    if (w->mask != w->live) {
        int missing = __builtin_ctzll(w->live & ~w->mask);
        fail(S, in->origin, w->first + missing,
             "shuffle run by part of the warp: this lane is inactive (a shuffle needs every lane of the warp)");
        return;
    }
    EACH_LANE(w, lane, tid) {
        int from = lane ^ st->lane_mask;
        if (from / st->width != lane / st->width) {
            fail(S, in->origin, tid, "shuffle mask %d leaves its group of width %d", st->lane_mask, st->width);
            return;
        }
        if (from >= w->nlanes) {
            fail(S, in->origin, tid, "shuffle reads lane %d, which does not exist (the warp has %d lanes)", from, w->nlanes);
            return;
        }
        if (!(w->mask >> from & 1)) {
            fail(S, in->origin, tid, "shuffle reads lane %d, which is inactive", from);
            return;
        }
        got[lane] = *reg(S, w->first + from, st->src_reg);
    }
    EACH_LANE(w, lane, tid) *reg(S, tid, st->reg) = got[lane];
}

static void out_of_budget(sim *S, const ir_stmt *origin) {
    S->over_budget = true;
    fail(S, origin, -1, "the simulation stopped after %llu thread-steps (its budget), in CTA %lld of %lld; " RAISE_BUDGET,
         (unsigned long long)S->budget, (long long)S->cta, (long long)S->k->grid);
}

/* Runs warp w until it finishes, waits at a CTA or warpgroup barrier, or fails. */
static void run_warp(sim *S, warp *w) {
    while (!S->failed && w->state == W_RUN) {
        const ins *in = &S->code[w->pc];
        const lp_stmt *st = in->st;
        S->steps += (uint64_t)__builtin_popcountll(w->mask) * in->cost; /* for every active lane */
        if (S->steps > S->budget) {
            out_of_budget(S, in->origin);
            return;
        }
        switch (in->kind) {
        case SI_ASSIGN: {
            sim_val vals[64];
            EACH_LANE(w, lane, tid) vals[lane] = eval(S, st->a, tid, in->origin);
            EACH_LANE(w, lane, tid) *reg(S, tid, st->reg) = vals[lane];
            w->pc++;
            break;
        }
        case SI_STORE: {
            sim_val vals[64];
            int64_t at[64];
            EACH_LANE(w, lane, tid) {
                at[lane] = eval(S, st->a, tid, in->origin).i;
                vals[lane] = eval(S, st->b, tid, in->origin);
            }
            EACH_LANE(w, lane, tid) store(S, st->buf, at[lane], tid, vals[lane], in->origin);
            w->pc++;
            break;
        }
        case SI_SHFL:
            do_shfl(S, w, in);
            w->pc++;
            break;
        case SI_VLOAD:
        case SI_VSTORE: {
            /* a 16-byte access: the index must be a multiple of the vector length, and in global
               memory (the caller's, at its own address) the address a multiple of the vector's
               bytes, or a GPU faults */
            int64_t at[64];
            size_t bytes = (size_t)st->vec * num_size(st->buf->type);
            EACH_LANE(w, lane, tid) {
                at[lane] = eval(S, st->a, tid, in->origin).i;
                if (at[lane] % st->vec) {
                    fail(S, in->origin, tid, "vector access %s[%lld .. +%d] is not aligned to %d elements",
                         st->buf->name, (long long)at[lane], st->vec, st->vec);
                    return;
                }
                if (st->buf->space == TILEC_SPACE_GLOBAL && at[lane] >= 0 && at[lane] < st->buf->elems &&
                    (uintptr_t)(S->mem[st->buf->id] + (size_t)at[lane] * num_size(st->buf->type)) % bytes) {
                    fail(S, in->origin, tid, "vector access %s[%lld .. +%d] is at an address that is not a multiple of %zu "
                         "bytes: a GPU faults there (the kernel was lowered for aligned pointers)",
                         st->buf->name, (long long)at[lane], st->vec, bytes);
                    return;
                }
            }
            EACH_LANE(w, lane, tid)
                for (int v = 0; v < st->vec && !S->failed; v++) {
                    if (in->kind == SI_VLOAD) *reg(S, tid, st->reg + v) = load(S, st->buf, at[lane] + v, -1, tid, in->origin);
                    else store(S, st->buf, at[lane] + v, tid, *reg(S, tid, st->src_reg + v), in->origin);
                }
            w->pc++;
            break;
        }
        case SI_ATOMIC: /* lanes, warps and CTAs take turns, so each add is whole */
            EACH_LANE(w, lane, tid) {
                int64_t i = eval(S, st->a, tid, in->origin).i;
                sim_val add = eval(S, st->b, tid, in->origin), old = load(S, st->buf, i, -1, tid, in->origin);
                *reg(S, tid, st->reg) = old;
                old.i = wrap(st->buf->type, (uint64_t)old.i + (uint64_t)add.i);
                store(S, st->buf, i, tid, old, in->origin);
            }
            w->pc++;
            break;
        case SI_FENCE: /* memory is sequentially consistent here */
            w->pc++;
            break;
        case SI_BARRIER:
            if (w->mask != w->live) {
                int missing = __builtin_ctzll(w->live & ~w->mask);
                fail(S, in->origin, w->first + missing,
                     "barrier (%s) reached by part of its scope: this lane does not reach it",
                     tilec_scope_name(st->scope));
                return;
            }
            if (st->scope == TILEC_SCOPE_WARP) { /* a warp's lanes arrive together */
                uint64_t now = ++S->clock;
                EACH_LANE(w, lane, tid) S->sync[tid][2] = now;
                w->pc++;
            } else {
                w->state = W_WAIT;
            }
            break;
        case SI_IF: {
            uint64_t yes = 0;
            EACH_LANE(w, lane, tid) if (eval(S, st->a, tid, in->origin).i) yes |= 1ull << lane;
            uint64_t no = w->mask & ~yes;
            w->stack[w->depth++] = (ctl){SI_IF, w->mask, no};
            if (yes) { w->mask = yes; w->pc++; }
            else { w->mask = no; w->stack[w->depth - 1].other = 0; w->pc = in->jump + 1; }
            if (!w->mask) { w->mask = w->stack[--w->depth].saved; w->pc = S->code[in->jump].jump + 1; }
            break;
        }
        case SI_ELSE: {
            ctl *c = &w->stack[w->depth - 1];
            if (c->other) { w->mask = c->other; c->other = 0; w->pc++; }
            else { w->mask = c->saved; w->depth--; w->pc = in->jump + 1; }
            break;
        }
        case SI_ENDIF:
            w->mask = w->stack[--w->depth].saved;
            w->pc++;
            break;
        case SI_FOR: {
            sim_val vals[64];
            EACH_LANE(w, lane, tid) vals[lane] = eval(S, st->a, tid, in->origin);
            EACH_LANE(w, lane, tid) *reg(S, tid, st->reg) = vals[lane];
            w->stack[w->depth++] = (ctl){SI_FOR, w->mask, 0};
            w->pc++;
            break;
        }
        case SI_TEST: {
            uint64_t stay = 0;
            EACH_LANE(w, lane, tid) {
                sim_val i = *reg(S, tid, st->reg), end = eval(S, st->b, tid, in->origin);
                if (i.i < end.i) stay |= 1ull << lane;
            }
            w->mask = stay;
            if (stay) w->pc++;
            else { w->mask = w->stack[--w->depth].saved; w->pc = in->jump; }
            break;
        }
        case SI_STEP:
            EACH_LANE(w, lane, tid) {
                sim_val step = eval(S, st->step, tid, in->origin);
                if (step.i <= 0) { fail(S, in->origin, tid, "a loop step of %lld in the lowered program", (long long)step.i); return; }
                sim_val *r = reg(S, tid, st->reg);
                r->i = wrap(S->k->regs[st->reg].type, (uint64_t)r->i + (uint64_t)step.i);
            }
            w->pc = in->jump;
            break;
        case SI_END:
            w->state = W_DONE;
            break;
        }
    }
}

/* ---- one CTA ---------------------------------------------------------------------------------- */

static int warp_barrier_line(const sim *S, const warp *w) { return S->code[w->pc].origin ? S->code[w->pc].origin->pos.line : 0; }

/* Releases the warps of [first, last) waiting at the same barrier; false when they wait at
 * different ones (reported). */
static bool release(sim *S, int first, int last, int level) {
    int pc = S->warps[first].pc;
    for (int w = first; w < last; w++)
        if (S->warps[w].pc != pc) {
            fail(S, S->code[S->warps[w].pc].origin, S->warps[w].first,
                 "warps wait at different barriers: warp %d at line %d, warp %d at line %d", first,
                 warp_barrier_line(S, &S->warps[first]), w, warp_barrier_line(S, &S->warps[w]));
            return false;
        }
    uint64_t now = ++S->clock;
    for (int w = first; w < last; w++) {
        warp *x = &S->warps[w];
        for (int lane = 0; lane < x->nlanes; lane++) {
            uint64_t *t = S->sync[x->first + lane];
            t[level] = now; /* a wider barrier is every narrower one too: cluster 3, cta 0, warpgroup 1, warp 2 */
            if (level == 3) t[0] = now;
            if (level == 3 || level == 0) t[1] = t[2] = now;
            if (level == 1) t[2] = now;
        }
        x->state = W_RUN;
        x->pc++;
    }
    return true;
}

/* Whether every warp of [first, last) waits at a barrier of scope s. */
static bool all_wait(const sim *S, int first, int last, tilec_scope s) {
    for (int w = first; w < last; w++)
        if (S->warps[w].state != W_WAIT || S->code[S->warps[w].pc].st->scope != s) return false;
    return true;
}

/* Runs one CTA, or the nc CTAs of a cluster together. */
static void run_cta(sim *S) {
    int wpg = 128 / S->ws; /* warps per warpgroup */
    for (int w = 0; w < S->nwarps; w++) {
        warp *x = &S->warps[w];
        int in = w % S->wpc * S->ws; /* the warp's first thread in its CTA */
        x->first = w / S->wpc * S->stride + in;
        x->nlanes = S->threads - in < S->ws ? S->threads - in : S->ws;
        x->live = x->nlanes == 64 ? ~0ull : (1ull << x->nlanes) - 1;
        x->mask = x->live;
        x->pc = 0;
        x->depth = 0;
        x->state = W_RUN;
    }
    for (;;) {
        for (int w = 0; w < S->nwarps && !S->failed; w++) run_warp(S, &S->warps[w]);
        if (S->failed) return;
        int done = 0, waiting = 0;
        for (int w = 0; w < S->nwarps; w++) {
            done += S->warps[w].state == W_DONE;
            waiting += S->warps[w].state == W_WAIT;
        }
        if (done == S->nwarps) return;
        bool progress = false;
        for (int c = 0; c < S->nc; c++) { /* each CTA's barriers */
            int c0 = c * S->wpc, c1 = c0 + S->wpc;
            /* warpgroup barriers: every warp of the group waits at one */
            for (int first = c0; first < c1; first += wpg) {
                int last = first + wpg < c1 ? first + wpg : c1;
                if (all_wait(S, first, last, TILEC_SCOPE_WARPGROUP)) {
                    if (!release(S, first, last, 1)) return;
                    progress = true;
                }
            }
            if (all_wait(S, c0, c1, TILEC_SCOPE_CTA)) {
                if (!release(S, c0, c1, 0)) return;
                progress = true;
            }
        }
        if (!progress && waiting == S->nwarps && all_wait(S, 0, S->nwarps, TILEC_SCOPE_CLUSTER)) {
            if (!release(S, 0, S->nwarps, 3)) return;
            progress = true;
        }
        if (!progress) {
            /* some warps wait for others that finished or wait elsewhere */
            for (int w = 0; w < S->nwarps; w++) {
                const warp *x = &S->warps[w];
                if (x->state != W_WAIT) continue;
                bool cluster = S->code[x->pc].st->scope == TILEC_SCOPE_CLUSTER;
                for (int o = 0; o < S->nwarps; o++) {
                    if (!cluster && o / S->wpc != w / S->wpc) continue; /* another CTA's */
                    if (S->warps[o].state == W_DONE) {
                        char cta[48] = ""; /* in a cluster, whose warp */
                        if (S->nc > 1) snprintf(cta, sizeof cta, " of CTA %lld", (long long)(S->cta + o / S->wpc));
                        fail(S, S->code[x->pc].origin, x->first,
                             "barrier (%s) reached by part of its scope: warp %d%s finished without reaching it",
                             tilec_scope_name(S->code[x->pc].st->scope), o % S->wpc, cta);
                        return;
                    }
                }
                fail(S, S->code[x->pc].origin, x->first,
                     "barrier (%s) reached by part of its scope: the other warps wait at other barriers",
                     tilec_scope_name(S->code[x->pc].st->scope));
                return;
            }
        }
    }
}

/* ---- setup --------------------------------------------------------------------------------------- */

bool sim_budget(tilec_ctx *ctx, uint64_t *out) {
    *out = TILEC_SIM_BUDGET_DEFAULT;
    if (ctx->sim_budget) {
        *out = ctx->sim_budget;
        return true;
    }
    const char *env = getenv("TILEC_SIM_BUDGET");
    if (!env || !*env) return true;
    if (strcmp(env, "unlimited") == 0) {
        *out = TILEC_SIM_UNLIMITED;
        return true;
    }
    uint64_t v = 0;
    const char *c = env;
    for (; *c >= '0' && *c <= '9'; c++) {
        unsigned d = (unsigned)(*c - '0');
        if (v > (UINT64_MAX - d) / 10) break; /* too large */
        v = v * 10 + d;
    }
    if (c == env || *c) {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "TILEC_SIM_BUDGET='%.40s%s' is not a number of thread-steps: give a decimal count up to "
                    "18446744073709551615, 0 for the default or 'unlimited', or unset it",
                    env, strlen(env) > 40 ? "..." : "");
        return false;
    }
    if (v) *out = v;
    return true;
}

/* a += b * c, saturating at UINT64_MAX */
static void add_mul(uint64_t *a, uint64_t b, uint64_t c) {
    uint64_t m;
    if (__builtin_mul_overflow(b, c, &m) || __builtin_add_overflow(*a, m, a)) *a = UINT64_MAX;
}

static void mib(char *buf, size_t n, uint64_t bytes) {
    if (bytes == UINT64_MAX) snprintf(buf, n, "more than 16 EiB");
    else snprintf(buf, n, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
}

/* The thread-steps of starting one CTA: one per thread and per shared and local element
 * it clears. */
static uint64_t cta_start_cost(const lp_kernel *k) {
    uint64_t local_elems = 0, shared_elems = 0, cost = 0;
    for (int i = 0; i < k->nbufs; i++) {
        if (k->bufs[i]->space == TILEC_SPACE_SHARED) add_mul(&shared_elems, (uint64_t)k->bufs[i]->elems, 1);
        else if (k->bufs[i]->space != TILEC_SPACE_GLOBAL) add_mul(&local_elems, (uint64_t)k->bufs[i]->elems, 1);
    }
    add_mul(&cost, (uint64_t)k->threads, local_elems < UINT64_MAX ? 1 + local_elems : UINT64_MAX);
    add_mul(&cost, shared_elems, 1);
    return cost;
}

/* Adds up what a run allocates, and what starting each CTA costs in steps; false with a
 * diagnostic at the kernel when the memory is above TILEC_SIM_MAX_MEMORY or starting the
 * grid's CTAs alone is above the budget. */
static bool within_bounds(tilec_program *p, const lp_kernel *k, uint64_t budget, uint64_t *cta_cost) {
    uint64_t nc = k->cluster > 1 ? (uint64_t)k->cluster : 1; /* a cluster's CTAs run together */
    uint64_t shared = 0, local = 0, local_elems = 0, scratch = 0;
    uint64_t threads = nc > 1 ? nc * (((uint64_t)k->threads + 127) / 128 * 128) : (uint64_t)k->threads;
    for (int i = 0; i < k->nbufs; i++) {
        const lp_buf *b = k->bufs[i];
        uint64_t elems = (uint64_t)b->elems, bytes = 0;
        add_mul(&bytes, elems, num_size(b->type));
        if (b->space == TILEC_SPACE_GLOBAL) {
            if (b->param < 0) add_mul(&scratch, bytes, 1);
        } else if (b->space == TILEC_SPACE_SHARED) {
            add_mul(&shared, bytes, nc);
            add_mul(&shared, elems, nc * sizeof(shadow));
        } else {
            add_mul(&local, bytes < UINT64_MAX - 7 ? (bytes + 7) & ~(uint64_t)7 : UINT64_MAX, 1);
            add_mul(&local_elems, elems, 1);
        }
    }
    uint64_t locals = 0, total = 0;
    add_mul(&locals, threads, local);
    add_mul(&locals, threads, local_elems); /* one init flag an element */
    add_mul(&total, shared, 1);
    add_mul(&total, locals, 1);
    add_mul(&total, scratch, 1);
    add_mul(&total, threads, ((uint64_t)k->nregs + 1) * sizeof(sim_val) + 4 * sizeof(uint64_t));
    const tilec_kernel *tk = k->tile;
    if (total > TILEC_SIM_MAX_MEMORY) {
        char need[32], sh[32], lo[32], sc[32];
        mib(need, sizeof need, total);
        mib(sh, sizeof sh, shared);
        mib(lo, sizeof lo, locals);
        mib(sc, sizeof sc, scratch);
        ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, tk->pos.line, tk->pos.col,
                    "simulating %s '%s' needs %s of memory (shared memory and its race tracking %s, local memory of %llu "
                    "threads %s, global scratch %s), more than the simulator's %zu MiB (TILEC_SIM_MAX_MEMORY); "
                    "use smaller buffers or fewer threads%s",
                    tk->is_func ? "func" : "kernel", tk->name, need, sh, (unsigned long long)threads, lo, sc,
                    (size_t)TILEC_SIM_MAX_MEMORY >> 20, nc > 1 ? " (a cluster's CTAs run together: or a smaller cluster)" : "");
        return false;
    }
    *cta_cost = cta_start_cost(k);
    uint64_t need = 0;
    add_mul(&need, (uint64_t)k->grid, *cta_cost);
    if (need > budget) {
        ir_pos at = tk->grid_pos.line ? tk->grid_pos : tk->pos;
        ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, at.line, at.col,
                    "simulating %s '%s' takes more than %llu thread-steps, its budget: starting its %lld CTA%s of %d thread%s "
                    "takes %llu already; " RAISE_BUDGET,
                    tk->is_func ? "func" : "kernel", tk->name, (unsigned long long)budget, (long long)k->grid,
                    k->grid == 1 ? "" : "s", k->threads, k->threads == 1 ? "" : "s", (unsigned long long)need);
        return false;
    }
    return true;
}

/* ---- a floor of the work ------------------------------------------------------------------- */

/* A lower bound of a complete run's thread-steps when it must load `reads` elements of one
 * buffer, from its loop IR and the costs run_warp charges (cost_of). For a rate r, a lane
 * that runs a block along some path spends its instructions' costs and loads some elements;
 * floor_of(block, r) is the least, over the block's paths, of (steps - r x loads), counting
 * only instructions every lane on the path executes: an IF's condition and the branch taken
 * (its ELSE and ENDIF, a step each, are left out), a FOR's start and its first TEST. A
 * loop's every iteration (TEST, body, STEP) must spend at least r a load, or r is too high
 * (infeasible: a lane could load without bound for less); then a lane that runs the kernel
 * once spends at least r x its loads + floor_of(body, r), and a run of G CTAs of T threads
 * at least G x (starting a CTA) + r x reads + G x T x floor_of(body, r). That is concave in
 * r (a minimum of lines, plus a line), and the best r is searched for. */
__extension__ typedef __int128 wide;

typedef struct floor_walk {
    const lp_buf *in;
    int64_t r;
    bool infeasible;
    int64_t loads; /* loads of `in` seen */
} floor_walk;

static int64_t loads_of(floor_walk *f, const lp_expr *e) {
    if (!e) return 0;
    int64_t n = e->kind == LX_LOAD && e->buf == f->in;
    n += loads_of(f, e->a) + loads_of(f, e->b) + loads_of(f, e->c);
    f->loads += e->kind == LX_LOAD && e->buf == f->in;
    return n;
}

/* steps - r x loads of one instruction */
static wide net(floor_walk *f, ins_kind kind, const lp_stmt *st, int64_t loads) {
    return (wide)cost_of(kind, st) - (wide)f->r * loads;
}

static wide floor_of(floor_walk *f, const lp_block *b) {
    wide sum = 0;
    for (int i = 0; i < b->n && !f->infeasible; i++) {
        const lp_stmt *st = b->items[i];
        switch (st->kind) {
        case LS_OP: break;
        case LS_ASSIGN: sum += net(f, SI_ASSIGN, st, loads_of(f, st->a)); break;
        case LS_STORE: sum += net(f, SI_STORE, st, loads_of(f, st->a) + loads_of(f, st->b)); break;
        case LS_ATOMIC_ADD: {
            int64_t own = st->buf == f->in;
            f->loads += own;
            sum += net(f, SI_ATOMIC, st, own + loads_of(f, st->a) + loads_of(f, st->b));
            break;
        }
        case LS_VLOAD: {
            int64_t own = st->buf == f->in ? st->vec : 0;
            f->loads += own;
            sum += net(f, SI_VLOAD, st, own + loads_of(f, st->a));
            break;
        }
        case LS_VSTORE: sum += net(f, SI_VSTORE, st, loads_of(f, st->a)); break;
        case LS_SHFL: sum += net(f, SI_SHFL, st, 0); break;
        case LS_BARRIER: sum += net(f, SI_BARRIER, st, 0); break;
        case LS_FENCE: sum += net(f, SI_FENCE, st, 0); break;
        case LS_IF: {
            sum += net(f, SI_IF, st, loads_of(f, st->a));
            wide yes = floor_of(f, &st->body), no = floor_of(f, &st->orelse);
            sum += yes < no ? yes : no;
            break;
        }
        case LS_FOR: {
            wide test = net(f, SI_TEST, st, loads_of(f, st->b));
            wide iteration = test + floor_of(f, &st->body) + net(f, SI_STEP, st, loads_of(f, st->step));
            if (iteration < 0) f->infeasible = true;
            sum += net(f, SI_FOR, st, loads_of(f, st->a)) + test; /* no iteration: the least */
            break;
        }
        }
    }
    return sum;
}

enum { RATE_MAX = 1 << 20 };

/* The floor at rate r; false when r is infeasible. */
static bool floor_at(const lp_kernel *k, const lp_buf *in, uint64_t reads, int64_t r, wide *out, int64_t *loads) {
    floor_walk f = {.in = in, .r = r};
    wide lane = floor_of(&f, &k->body);
    if (loads) *loads = f.loads;
    if (f.infeasible) return false;
    *out = (wide)k->grid * (wide)cta_start_cost(k) + (wide)r * (wide)reads + (wide)k->grid * k->threads * lane;
    return true;
}

bool sim_work_floor(const lp_kernel *k, int param, uint64_t reads, uint64_t *at_least, uint64_t *rate) {
    const lp_buf *in = NULL;
    for (int i = 0; i < k->nbufs && !in; i++)
        if (k->bufs[i]->param == param && k->bufs[i]->space == TILEC_SPACE_GLOBAL) in = k->bufs[i];
    wide w;
    int64_t loads = 0;
    /* no load of the buffer: nothing to count by (and no rate is too high) */
    if (!in || !floor_at(k, in, reads, 1, &w, &loads) || loads == 0) return false;
    int64_t lo = 1, hi = RATE_MAX; /* the highest feasible rate: lo feasible, above hi not */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (floor_at(k, in, reads, mid, &w, NULL)) lo = mid;
        else hi = mid - 1;
    }
    /* the best rate in [1, lo]: the first whose next does not raise the floor (concave) */
    int64_t a = 1, b = lo;
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        wide here = 0, next = 0;
        floor_at(k, in, reads, mid, &here, NULL);
        floor_at(k, in, reads, mid + 1, &next, NULL);
        if (next > here) a = mid + 1;
        else b = mid;
    }
    floor_at(k, in, reads, a, &w, NULL);
    *rate = (uint64_t)a;
    *at_least = w <= 0 ? 0 : w >= (wide)UINT64_MAX ? UINT64_MAX : (uint64_t)w;
    return true;
}

tilec_status sim_run(tilec_program *p, const lp_kernel *k, void *const *args) {
    return sim_run_scratch(p, k, args, NULL);
}

tilec_status sim_run_scratch(tilec_program *p, const lp_kernel *k, void *const *args, void *const *scratch) {
    sim S = {.p = p, .k = k, .ws = k->warp_size, .threads = k->threads, .args = args};
    uint64_t cta_cost;
    if (!sim_budget(p->ctx, &S.budget)) return TILEC_ERR_INVALID_ARG;
    if (!within_bounds(p, k, S.budget, &cta_cost)) return TILEC_ERR_BUDGET;
    S.nc = k->cluster > 0 ? k->cluster : 1;
    S.stride = S.nc > 1 ? (k->threads + 127) / 128 * 128 : k->threads;
    S.wpc = (k->threads + S.ws - 1) / S.ws;
    S.nwarps = S.nc * S.wpc;
    size_t nt = (size_t)S.nc * (size_t)S.stride; /* thread slots of the run */
    const ir_stmt *origin = NULL;
    flatten(&S, &k->body, &origin, 1);
    emit(&S, SI_END, NULL, origin);
    int nb = k->nbufs;
    S.mem = calloc((size_t)nb + 1, sizeof *S.mem);
    S.shadows = calloc((size_t)nb + 1, sizeof *S.shadows);
    S.local_off = calloc((size_t)nb + 1, sizeof *S.local_off);
    S.local_first = calloc((size_t)nb + 1, sizeof *S.local_first);
    S.warps = calloc((size_t)S.nwarps, sizeof *S.warps);
    S.sync = calloc(nt, sizeof *S.sync);
    S.regs = calloc(nt * (size_t)(k->nregs + 1), sizeof *S.regs);
    bool ok = !S.failed && S.mem && S.shadows && S.local_off && S.local_first && S.warps && S.sync && S.regs;
    for (int w = 0; ok && w < S.nwarps; w++) ok = (S.warps[w].stack = calloc((size_t)S.max_depth + 1, sizeof(ctl))) != NULL;
    for (int i = 0, ns = 0; ok && i < nb; i++) {
        const lp_buf *b = k->bufs[i];
        size_t bytes = (size_t)b->elems * num_size(b->type);
        if (b->space == TILEC_SPACE_GLOBAL && b->param < 0 && scratch) { /* scratch: the caller's */
            ok = (S.mem[i] = scratch[ns++]) != NULL;
        } else if (b->space == TILEC_SPACE_GLOBAL && b->param < 0) { /* scratch: zeroed, as a launcher gives it */
            ok = (S.mem[i] = calloc(1, bytes ? bytes : 1)) != NULL;
        } else if (b->space == TILEC_SPACE_GLOBAL) {
            S.mem[i] = args[b->param];
            ok = S.mem[i] != NULL;
        } else if (b->param >= 0 && !args[b->param]) {
            ok = false;
        } else if (b->space == TILEC_SPACE_SHARED) { /* a copy for each CTA of the cluster */
            ok = (S.mem[i] = calloc((size_t)S.nc, bytes ? bytes : 1)) &&
                 (S.shadows[i] = calloc((size_t)S.nc * (size_t)b->elems, sizeof(shadow)));
        } else {
            S.local_off[i] = (int64_t)S.local_bytes;
            S.local_first[i] = S.local_elems;
            S.local_bytes += (bytes + 7) & ~(size_t)7;
            S.local_elems += b->elems;
        }
    }
    if (ok && S.local_bytes) {
        S.locals = calloc(nt, S.local_bytes);
        S.local_init = calloc(nt, (size_t)S.local_elems);
        ok = S.locals && S.local_init;
    }
    tilec_status st = TILEC_OK;
    if (!ok) {
        ir_diag_add(p->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "out of memory while simulating '%s'", k->tile->name);
        st = TILEC_ERR_NOMEM;
    }
    for (S.cta = 0; st == TILEC_OK && S.cta < k->grid; S.cta += S.nc) {
        S.steps += cta_cost * (uint64_t)S.nc; /* within the budget: within_bounds checked grid x cta_cost */
        if (S.local_init) memset(S.local_init, 0, nt * (size_t)S.local_elems);
        for (int i = 0; i < nb; i++) {
            const lp_buf *b = k->bufs[i];
            if (S.shadows[i]) {
                size_t n = (size_t)S.nc * (size_t)b->elems;
                memset(S.shadows[i], 0, n * sizeof(shadow));
                for (size_t e = 0; e < n; e++) S.shadows[i][e].wtid = b->param >= 0 ? -2 : -1;
            }
            if (b->param < 0 || b->space == TILEC_SPACE_GLOBAL) continue;
            /* a func's shared or local parameter starts with the caller's content; a
             * fragment's (a tile): each lane's registers hold the elements its layout says */
            size_t bytes = (size_t)b->elems * num_size(b->type);
            if (b->space == TILEC_SPACE_SHARED) memcpy(S.mem[i], args[b->param], bytes);
            else if (b->tile && b->tile->layout.kind != TILEC_LAYOUT_NONE)
                for (int t = 0; t < S.threads; t++) {
                    size_t es = num_size(b->type);
                    for (int64_t r = 0; r < b->elems; r++) {
                        int64_t e = ir_frag_element(b->tile, t >> 5, t & 31, (int)r);
                        memcpy(S.locals + (size_t)t * S.local_bytes + (size_t)S.local_off[i] + (size_t)r * es,
                               (const char *)args[b->param] + (size_t)e * es, es);
                    }
                    memset(S.local_init + (size_t)t * (size_t)S.local_elems + (size_t)S.local_first[i], 1, (size_t)b->elems);
                }
            else
                for (int t = 0; t < S.threads; t++) {
                    memcpy(S.locals + (size_t)t * S.local_bytes + (size_t)S.local_off[i], args[b->param], bytes);
                    memset(S.local_init + (size_t)t * (size_t)S.local_elems + (size_t)S.local_first[i], 1, (size_t)b->elems);
                }
        }
        memset(S.sync, 0, nt * sizeof *S.sync);
        S.clock = 0;
        run_cta(&S);
        if (S.failed) st = S.over_budget ? TILEC_ERR_BUDGET : TILEC_ERR_SIMULATE;
    }
    for (int i = 0; st == TILEC_OK && i < nb; i++) { /* a func's parameters go back (thread 0's locals) */
        const lp_buf *b = k->bufs[i];
        if (b->param < 0 || b->space == TILEC_SPACE_GLOBAL) continue;
        if (b->tile && b->tile->layout.kind != TILEC_LAYOUT_NONE) { /* a fragment: the first instance's tile */
            size_t es = num_size(b->type);
            int n = ir_frag_threads(b->tile);
            for (int t = 0; t < n && t < S.threads; t++)
                for (int64_t r = 0; r < b->elems; r++) {
                    int64_t e = ir_frag_element(b->tile, t >> 5, t & 31, (int)r);
                    memcpy((char *)args[b->param] + (size_t)e * es,
                           S.locals + (size_t)t * S.local_bytes + (size_t)S.local_off[i] + (size_t)r * es, es);
                }
            continue;
        }
        size_t bytes = (size_t)b->elems * num_size(b->type);
        memcpy(args[b->param], b->space == TILEC_SPACE_SHARED ? S.mem[i] : S.locals + (size_t)S.local_off[i], bytes);
    }
    for (int i = 0; i < nb && S.mem; i++) {
        const lp_buf *b = k->bufs[i];
        bool given = scratch && b->space == TILEC_SPACE_GLOBAL && b->param < 0; /* the caller's scratch */
        if ((b->space == TILEC_SPACE_SHARED || b->param < 0) && !given) free(S.mem[i]);
        if (S.shadows) free(S.shadows[i]);
    }
    for (int w = 0; S.warps && w < S.nwarps; w++) free(S.warps[w].stack);
    free(S.mem);
    free(S.shadows);
    free(S.local_off);
    free(S.local_first);
    free(S.warps);
    free(S.sync);
    free(S.regs);
    free(S.locals);
    free(S.local_init);
    free(S.code);
    return st;
}
