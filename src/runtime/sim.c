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
 * Races: every shared element remembers its last write and a few reads since, with the
 * thread and a timestamp from one clock that also stamps barrier releases. Two accesses of
 * different threads are ordered when the later thread has passed a barrier, released after
 * the earlier access, that both threads belong to (the CTA, their warpgroup or their warp).
 */
#include "sim.h"

#include "../ir/numeric.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef union sim_val {
    int64_t i; /* integer and bool types (i32 sign-extended, u32 zero-extended) */
    double f;  /* float types, exactly their type's value */
} sim_val;

typedef enum ins_kind { SI_ASSIGN, SI_STORE, SI_SHFL, SI_BARRIER, SI_IF, SI_ELSE, SI_ENDIF,
                        SI_FOR, SI_TEST, SI_STEP, SI_VLOAD, SI_VSTORE, SI_ATOMIC, SI_FENCE, SI_END } ins_kind;

typedef struct ins {
    ins_kind kind;
    const lp_stmt *st;
    int jump;              /* IF: its ELSE; ELSE: its ENDIF; TEST: after the loop; STEP: its TEST */
    const ir_stmt *origin; /* the tile statement, for messages */
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
    int64_t cta;
    void *const *args;
    /* per buffer: host memory (global: the argument; shared: per CTA; local: per thread
     * at local_off within each thread's area) */
    unsigned char **mem;
    shadow **shadows;     /* shared buffers */
    int64_t *local_off;   /* local buffers: byte offset in a thread's area */
    size_t local_bytes;   /* one thread's local area */
    int64_t local_elems;  /* elements, for the init flags */
    int64_t *local_first; /* local buffers: element offset in a thread's init flags */
    unsigned char *locals, *local_init;
    sim_val *regs; /* threads x nregs */
    uint64_t (*sync)[3]; /* per thread: release time of its last cta / warpgroup / warp barrier */
    uint64_t clock;
    warp *warps;
    bool failed;
} sim;

/* ---- flattening ------------------------------------------------------------------------ */

static int emit(sim *S, ins_kind kind, const lp_stmt *st, const ir_stmt *origin) {
    if (S->ncode == S->cap) {
        int cap = S->cap ? 2 * S->cap : 64;
        ins *c = realloc(S->code, (size_t)cap * sizeof *c);
        if (!c) { S->failed = true; return 0; }
        S->code = c;
        S->cap = cap;
    }
    S->code[S->ncode] = (ins){kind, st, 0, origin};
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
    if (tid >= 0)
        snprintf(who, sizeof who, "CTA %lld, thread %d (warp %d, lane %d): ", (long long)S->cta, tid,
                 tid / S->ws, tid % S->ws);
    ir_pos at = origin ? (origin->op_pos.line ? origin->op_pos : origin->pos) : (ir_pos){0, 0};
    ir_stmt_diag(S->p, S->k->tile, origin, TILEC_SEV_ERROR, at, "simulator (warp size %d): %s%s", S->ws, who, msg);
}

/* ---- memory -------------------------------------------------------------------------------- */

static bool ordered(const sim *S, int a, uint64_t ts, int b) {
    if (a == b) return true;
    const uint64_t *sb = S->sync[b];
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

/* Checks and records an access to a shared element. */
static void track(sim *S, const lp_buf *b, int64_t i, int tid, bool write, const ir_stmt *origin) {
    shadow *sh = &S->shadows[b->id][i];
    uint64_t now = ++S->clock;
    char where[32];
    if (!write && sh->wtid == -1) {
        fail(S, origin, tid, "reads %s[%lld] before anything wrote it", b->name, (long long)i);
        return;
    }
    if (sh->wtid >= 0 && !ordered(S, sh->wtid, sh->wts, tid)) {
        fail(S, origin, tid, "%s %s[%lld], which thread %d wrote at %s with no barrier between",
             write ? "writes" : "reads", b->name, (long long)i, sh->wtid, line_of(sh->worigin, where, sizeof where));
        return;
    }
    if (write) {
        for (int r = 0; r < sh->nreads; r++)
            if (!ordered(S, sh->r[r].tid, sh->r[r].ts, tid)) {
                fail(S, origin, tid, "writes %s[%lld] while thread %d may still read it (%s) with no barrier between",
                     b->name, (long long)i, sh->r[r].tid, line_of(sh->r[r].origin, where, sizeof where));
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

/* The address of element i of b for thread tid, after the bounds and shadow checks. */
static unsigned char *element(sim *S, const lp_buf *b, int64_t i, int tid, bool write, const ir_stmt *origin) {
    if (i < 0 || i >= b->elems) {
        fail(S, origin, tid, "%s %s[%lld], out of bounds (%lld elements)", write ? "writes" : "reads",
             b->name, (long long)i, (long long)b->elems);
        return NULL;
    }
    size_t size = num_size(b->type);
    if (b->space == TILEC_SPACE_SHARED) {
        track(S, b, i, tid, write, origin);
        return S->failed ? NULL : S->mem[b->id] + (size_t)i * size;
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

static sim_val load(sim *S, const lp_buf *b, int64_t i, int tid, const ir_stmt *origin) {
    sim_val v = {0};
    unsigned char *p = element(S, b, i, tid, false, origin);
    if (!p) return v;
    if (lp_is_float(b->type)) v.f = num_load_float(b->type, p, 0);
    else v.i = num_load_int(b->type, p, 0);
    return v;
}

static void store(sim *S, const lp_buf *b, int64_t i, int tid, sim_val v, const ir_stmt *origin) {
    unsigned char *p = element(S, b, i, tid, true, origin);
    if (!p) return;
    if (lp_is_float(b->type)) num_store_float(b->type, p, 0, v.f);
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
        r.i = isfinite(v.f) && fabs(v.f) < 9.2e18 ? wrap(to, (uint64_t)(int64_t)v.f) : 0;
    } else {
        r.i = wrap(to, (uint64_t)v.i);
    }
    return r;
}

static sim_val eval(sim *S, const lp_expr *e, int tid, const ir_stmt *origin);

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
    if (lp_is_float(t)) {
        if (e->op == LO_MAX) r.f = num_fmax(a.f, b.f, e->nan);
        else if (e->op == LO_MIN) r.f = num_fmin(a.f, b.f, e->nan);
        else if (t == LP_F32) { /* float arithmetic, rounded to f32 at every step */
            float x = (float)a.f, y = (float)b.f;
            r.f = e->op == LO_ADD ? (double)(x + y) : e->op == LO_SUB ? (double)(x - y) : (double)(x * y);
        } else {
            r.f = e->op == LO_ADD ? a.f + b.f : e->op == LO_SUB ? a.f - b.f : a.f * b.f;
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
    switch (s) {
    case LP_TID: v.i = tid; break;
    case LP_CTA: v.i = S->cta; break;
    case LP_LANE: v.i = tid % S->ws; break;
    default: v.i = tid / S->ws; break;
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
        else if (lp_is_float(e->type)) v.f = -v.f;
        else v.i = wrap(e->type, 0 - (uint64_t)v.i);
        return v;
    case LX_BINARY: {
        sim_val a = eval(S, e->a, tid, origin), b = eval(S, e->b, tid, origin);
        return arith(S, e, a, b, tid, origin);
    }
    case LX_SELECT:
        return eval(S, e->a, tid, origin).i ? eval(S, e->b, tid, origin) : eval(S, e->c, tid, origin);
    case LX_CAST: return cast(e->type, e->a->type, eval(S, e->a, tid, origin));
    case LX_LOAD: return load(S, e->buf, eval(S, e->a, tid, origin).i, tid, origin);
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

/* Runs warp w until it finishes, waits at a CTA or warpgroup barrier, or fails. */
static void run_warp(sim *S, warp *w) {
    while (!S->failed && w->state == W_RUN) {
        const ins *in = &S->code[w->pc];
        const lp_stmt *st = in->st;
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
            /* a 16-byte access: the index must be a multiple of the vector length */
            int64_t at[64];
            EACH_LANE(w, lane, tid) {
                at[lane] = eval(S, st->a, tid, in->origin).i;
                if (at[lane] % st->vec) {
                    fail(S, in->origin, tid, "vector access %s[%lld .. +%d] is not aligned to %d elements",
                         st->buf->name, (long long)at[lane], st->vec, st->vec);
                    return;
                }
            }
            EACH_LANE(w, lane, tid)
                for (int v = 0; v < st->vec && !S->failed; v++) {
                    if (in->kind == SI_VLOAD) *reg(S, tid, st->reg + v) = load(S, st->buf, at[lane] + v, tid, in->origin);
                    else store(S, st->buf, at[lane] + v, tid, *reg(S, tid, st->src_reg + v), in->origin);
                }
            w->pc++;
            break;
        }
        case SI_ATOMIC: /* lanes, warps and CTAs take turns, so each add is whole */
            EACH_LANE(w, lane, tid) {
                int64_t i = eval(S, st->a, tid, in->origin).i;
                sim_val add = eval(S, st->b, tid, in->origin), old = load(S, st->buf, i, tid, in->origin);
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
            S->sync[x->first + lane][level] = now;
            if (level == 0) S->sync[x->first + lane][1] = S->sync[x->first + lane][2] = now;
            if (level == 1) S->sync[x->first + lane][2] = now;
        }
        x->state = W_RUN;
        x->pc++;
    }
    return true;
}

static void run_cta(sim *S) {
    int wpg = 128 / S->ws; /* warps per warpgroup */
    for (int w = 0; w < S->nwarps; w++) {
        warp *x = &S->warps[w];
        x->first = w * S->ws;
        x->nlanes = S->threads - x->first < S->ws ? S->threads - x->first : S->ws;
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
        /* warpgroup barriers: every warp of the group waits at one */
        for (int g = 0; g * wpg < S->nwarps; g++) {
            int first = g * wpg, last = first + wpg < S->nwarps ? first + wpg : S->nwarps, n = 0;
            for (int w = first; w < last; w++)
                n += S->warps[w].state == W_WAIT && S->code[S->warps[w].pc].st->scope == TILEC_SCOPE_WARPGROUP;
            if (n == last - first) {
                if (!release(S, first, last, 1)) return;
                progress = true;
            }
        }
        if (!progress && waiting == S->nwarps) {
            bool all_cta = true;
            for (int w = 0; w < S->nwarps; w++)
                all_cta = all_cta && S->code[S->warps[w].pc].st->scope == TILEC_SCOPE_CTA;
            if (all_cta) {
                if (!release(S, 0, S->nwarps, 0)) return;
                progress = true;
            }
        }
        if (!progress) {
            /* some warps wait for others that finished or wait elsewhere */
            for (int w = 0; w < S->nwarps; w++) {
                const warp *x = &S->warps[w];
                if (x->state != W_WAIT) continue;
                for (int o = 0; o < S->nwarps; o++) {
                    if (S->warps[o].state == W_DONE) {
                        fail(S, S->code[x->pc].origin, x->first,
                             "barrier (%s) reached by part of its scope: warp %d finished without reaching it",
                             tilec_scope_name(S->code[x->pc].st->scope), o);
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

tilec_status sim_run(tilec_program *p, const lp_kernel *k, void *const *args) {
    return sim_run_scratch(p, k, args, NULL);
}

tilec_status sim_run_scratch(tilec_program *p, const lp_kernel *k, void *const *args, void *const *scratch) {
    sim S = {.p = p, .k = k, .ws = k->warp_size, .threads = k->threads, .args = args};
    S.nwarps = (k->threads + S.ws - 1) / S.ws;
    const ir_stmt *origin = NULL;
    flatten(&S, &k->body, &origin, 1);
    emit(&S, SI_END, NULL, origin);
    int nb = k->nbufs;
    S.mem = calloc((size_t)nb + 1, sizeof *S.mem);
    S.shadows = calloc((size_t)nb + 1, sizeof *S.shadows);
    S.local_off = calloc((size_t)nb + 1, sizeof *S.local_off);
    S.local_first = calloc((size_t)nb + 1, sizeof *S.local_first);
    S.warps = calloc((size_t)S.nwarps, sizeof *S.warps);
    S.sync = calloc((size_t)S.threads, sizeof *S.sync);
    S.regs = calloc((size_t)S.threads * (size_t)(k->nregs + 1), sizeof *S.regs);
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
        } else if (b->space == TILEC_SPACE_SHARED) {
            ok = (S.mem[i] = calloc(1, bytes ? bytes : 1)) && (S.shadows[i] = calloc((size_t)b->elems, sizeof(shadow)));
        } else {
            S.local_off[i] = (int64_t)S.local_bytes;
            S.local_first[i] = S.local_elems;
            S.local_bytes += (bytes + 7) & ~(size_t)7;
            S.local_elems += b->elems;
        }
    }
    if (ok && S.local_bytes) {
        S.locals = calloc((size_t)S.threads, S.local_bytes);
        S.local_init = calloc((size_t)S.threads, (size_t)S.local_elems);
        ok = S.locals && S.local_init;
    }
    tilec_status st = TILEC_OK;
    if (!ok) {
        ir_diag_add(p->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "out of memory while simulating '%s'", k->tile->name);
        st = TILEC_ERR_NOMEM;
    }
    for (S.cta = 0; st == TILEC_OK && S.cta < k->grid; S.cta++) {
        if (S.local_init) memset(S.local_init, 0, (size_t)S.threads * (size_t)S.local_elems);
        for (int i = 0; i < nb; i++) {
            const lp_buf *b = k->bufs[i];
            if (S.shadows[i]) {
                memset(S.shadows[i], 0, (size_t)b->elems * sizeof(shadow));
                for (int64_t e = 0; e < b->elems; e++) S.shadows[i][e].wtid = b->param >= 0 ? -2 : -1;
            }
            if (b->param < 0 || b->space == TILEC_SPACE_GLOBAL) continue;
            /* a func's shared or local parameter starts with the caller's content */
            size_t bytes = (size_t)b->elems * num_size(b->type);
            if (b->space == TILEC_SPACE_SHARED) memcpy(S.mem[i], args[b->param], bytes);
            else
                for (int t = 0; t < S.threads; t++) {
                    memcpy(S.locals + (size_t)t * S.local_bytes + (size_t)S.local_off[i], args[b->param], bytes);
                    memset(S.local_init + (size_t)t * (size_t)S.local_elems + (size_t)S.local_first[i], 1, (size_t)b->elems);
                }
        }
        memset(S.sync, 0, (size_t)S.threads * sizeof *S.sync);
        S.clock = 0;
        run_cta(&S);
        if (S.failed) st = TILEC_ERR_SIMULATE;
    }
    for (int i = 0; st == TILEC_OK && i < nb; i++) { /* a func's parameters go back (thread 0's locals) */
        const lp_buf *b = k->bufs[i];
        if (b->param < 0 || b->space == TILEC_SPACE_GLOBAL) continue;
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
