/*
 * cost.c — the in-kernel cost model: the candidate lowerings of a reduction inside a CTA,
 * warpgroup or warp (`rows`: lanes along the reduced elements; `cols`: neighbouring
 * threads on neighbouring outputs), and each one's estimated cycles.
 *
 * The counts are exact, from the source's real layout: the element offset of every lane's
 * load of every warp-wide load instruction (strides, padding, element size), and from
 * those the shared-memory wavefronts (32 banks of 4 bytes; a request of w bytes a lane is
 * served 128 / w lanes at a time, at most 32; within a phase, the most distinct 4-byte
 * words any one bank holds; one word read by several lanes is read once) or, for a global
 * source, its 32-byte sectors (four to a 128-byte transfer). Warp size 64 (HIP) is
 * modelled the same way: 32 banks of 4 bytes, a 64-lane request served in phases of at most
 * 32 lanes. Shuffles, combines, barriers and the longest dependent chain come from the
 * plan's shape. The estimate for `occ` instances of the statement on one multiprocessor:
 *
 *   max(occ · (wavefronts · wavefront + shuffles · shuffle),   the shared-memory pipe
 *       occ · instructions · instruction,                     the schedulers
 *       chain)                                                 the latency of one warp
 *
 * and a plan's cost is the sum at one and at four instances. When a request count is
 * large the wavefronts of an evenly spread sample of requests are counted and scaled.
 */
#include "dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Measured on an H200 by `scripts/bench kernels --only tiles` (its "constant" lines;
 * docs/dispatch.md#the-cost-model). */
const dsp_cost_consts dsp_costs = {
    .lds_latency = 23,  /* a dependent 4- or 16-byte shared load */
    .shfl_latency = 24, /* a dependent shfl.sync.bfly */
    .add_latency = 4.5, /* a dependent f32 add */
    .barrier = 25,      /* a barrier of 4 to 8 warps (21 and 29), back to back */
    .wavefront = 0.87,  /* cycles a wavefront holds a multiprocessor's shared memory (16-byte loads) */
    .request = 1.4,     /* and the least a warp-wide load holds it (a 4-byte load's one wavefront) */
    .shuffle = 0.8,     /* cycles a warp-wide shuffle holds it */
    .instruction = 0.25, /* cycles a warp instruction costs a multiprocessor (4 schedulers) */
};

tilec_costs tilec_costs_default(void) { return dsp_costs; }

int dsp_batch(int64_t count, int per, int accs, int budget) {
    int best = 0;
    for (int64_t b = 1; b <= count && b * per <= budget; b++)
        if (count % b == 0 && ((b * per) % accs == 0 || b == count)) best = (int)b;
    return best;
}

const tilec_costs *dsp_target_costs(const dsp_target *t) { return t && t->costs ? t->costs : &dsp_costs; }

/* What a request holds the shared-memory pipe: its wavefronts, at least a request's. */
static double request_cycles(const dsp_cost_consts *c, int64_t wf) {
    double x = (double)wf * c->wavefront;
    return x > c->request ? x : c->request;
}

enum { SAMPLE = 96 }; /* requests whose wavefronts are counted exactly */

/* The source as the model reads it: its kept and reduced dims in row-major order, their
 * strides in elements, and the offset of element 0 (instance 0's). */
typedef struct view {
    int nk, nr;
    int64_t kdim[TILEC_MAX_RANK], kstr[TILEC_MAX_RANK], rdim[TILEC_MAX_RANK], rstr[TILEC_MAX_RANK];
    int64_t base, id_gcd; /* id_gcd: the strides of dims indexed by an instance id, all of them */
    bool last_reduced;    /* the innermost dim as indexed is a reduced one */
    int esize;
    bool global;
} view;

static int64_t gcd64(int64_t a, int64_t b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) { int64_t t = a % b; a = b; b = t; }
    return a;
}

static void view_of(const dsp_query *q, view *v) {
    const ir_region *r = &q->st->src;
    const tilec_buffer *b = r->buf;
    memset(v, 0, sizeof *v);
    v->esize = (int)tilec_dtype_size(b->dtype);
    v->global = b->space == TILEC_SPACE_GLOBAL;
    v->base = b->origin;
    int j = 0;
    for (int d = 0; d < b->rank; d++) {
        if (d < r->nindex && ir_index_is_id(&r->index[d])) {
            v->id_gcd = gcd64(v->id_gcd, b->strides[d]);
            continue;
        }
        int64_t lo = 0, hi = b->shape[d];
        if (d < r->nindex) ir_index_range(&r->index[d], b->shape[d], &lo, &hi);
        v->base += lo * b->strides[d];
        if (d < r->nindex && r->index[d].kind == TILEC_INDEX_AT) continue;
        if (j >= q->src_rank) break;
        int64_t ext = q->src_dims[j];
        if (q->reduced[j]) {
            v->rdim[v->nr] = ext;
            v->rstr[v->nr++] = b->strides[d];
        } else {
            v->kdim[v->nk] = ext;
            v->kstr[v->nk++] = b->strides[d];
        }
        v->last_reduced = q->reduced[j];
        j++;
    }
}

/* The element offset of output s, reduced element e. */
static int64_t offset(const view *v, int64_t s, int64_t e) {
    int64_t off = v->base;
    for (int i = v->nk - 1; i >= 0; i--) {
        off += (s % v->kdim[i]) * v->kstr[i];
        s /= v->kdim[i];
    }
    for (int i = v->nr - 1; i >= 0; i--) {
        off += (e % v->rdim[i]) * v->rstr[i];
        e /= v->rdim[i];
    }
    return off;
}

/* The byte address of element offset `off` of the source: where a swizzled tile stores it. */
static int64_t byte_addr(const dsp_query *q, const view *v, int64_t off) {
    return ir_swizzle_offset(q->st->src.buf, off) * v->esize;
}

static bool vec_ok(const dsp_query *q, const view *v, dsp_orient o, int vec) {
    if (vec == 1) return true;
    int bytes = vec * v->esize;
    if (bytes != 4 && bytes != 8 && bytes != 16) return false;
    if (q->st->src.buf->space == TILEC_SPACE_LOCAL) return false;
    if (!dsp_region_base_aligned(&q->st->src, vec)) return false; /* (a swizzle's chunk holds the vector) */
    if (v->base % vec || (v->id_gcd && v->id_gcd % vec)) return false;
    if (o == DSP_ALONG_REDUCED) {
        if (!v->last_reduced || q->red_len % vec) return false;
        /* a vector inside the innermost reduced dim: contiguous, a whole number of vectors
         * (the other reduced dims may lie anywhere: TMA's panels [box, row, 32] over (0, 2)) */
        if (v->rstr[v->nr - 1] != 1 || v->rdim[v->nr - 1] % vec) return false;
        for (int i = 0; i < v->nr - 1; i++)
            if (v->rdim[i] > 1 && v->rstr[i] % vec) return false;
        for (int i = 0; i < v->nk; i++)
            if (v->kdim[i] > 1 && v->kstr[i] % vec) return false;
        return true;
    }
    if (v->last_reduced || v->nk == 0 || v->kstr[v->nk - 1] != 1 || v->kdim[v->nk - 1] % vec) return false;
    for (int i = 0; i < v->nk - 1; i++)
        if (v->kdim[i] > 1 && v->kstr[i] % vec) return false;
    for (int i = 0; i < v->nr; i++)
        if (v->rdim[i] > 1 && v->rstr[i] % vec) return false;
    return true;
}

bool dsp_vec_ok(const dsp_query *q, dsp_orient orient, int vec) {
    view v;
    view_of(q, &v);
    return vec_ok(q, &v, orient, vec);
}

/* The wavefronts of one warp-wide request: addr[i] the byte address of lane i's access of
 * w bytes, or -1 for an inactive lane. */
static int64_t request_wavefronts(const int64_t *addr, int nl, int w, bool global) {
    if (global) {
        int64_t sec[64 * 4];
        int ns = 0;
        for (int i = 0; i < nl; i++) {
            if (addr[i] < 0) continue;
            for (int64_t x = addr[i] / 32; x <= (addr[i] + w - 1) / 32; x++) {
                int k = 0;
                while (k < ns && sec[k] != x) k++;
                if (k == ns && ns < (int)(sizeof sec / sizeof sec[0])) sec[ns++] = x;
            }
        }
        return (ns + 3) / 4;
    }
    int per = 128 / w;
    if (per > 32) per = 32;
    int64_t total = 0;
    for (int p0 = 0; p0 < nl; p0 += per) {
        int64_t slot[64]; /* a tiny open-addressed set of the phase's words */
        for (int i = 0; i < 64; i++) slot[i] = -1;
        int count[32] = {0}, most = 0;
        for (int i = p0; i < p0 + per && i < nl; i++) {
            if (addr[i] < 0) continue;
            for (int64_t word = addr[i] / 4; word <= (addr[i] + w - 1) / 4; word++) {
                unsigned h = (unsigned)(word * 2654435761u) & 63u;
                while (slot[h] != -1 && slot[h] != word) h = (h + 1) & 63u;
                if (slot[h] == word) continue;
                slot[h] = word;
                int bank = (int)(word % 32);
                if (++count[bank] > most) most = count[bank];
            }
        }
        total += most;
    }
    return total;
}

enum { STEP_CHECKS = 1 << 16 }; /* starts dsp_load_step checks at most */

bool dsp_load_step(const dsp_query *q, const dsp_starts *st, int64_t c, int64_t *x, int64_t *a) {
    view v;
    view_of(q, &v);
    const tilec_buffer *b = q->st->src.buf;
    bool swz = b->swizzle.kind != TILEC_SWIZZLE_NONE;
    /* an instance id moves the base by a run-time amount: a distance stays, a swizzle's XOR
     * may not */
    if (swz && v.id_gcd) return false;
    /* without a swizzle an offset is the output's part plus the element's: one output says
     * what the distance is for all of them */
    int64_t ns = swz ? st->ns : (st->ns > 0);
    if (ns <= 0 || st->na <= 0 || st->ni <= 0 || ns > STEP_CHECKS / st->na / st->ni) return false;
    bool add = true, xr = swz, first = true;
    int64_t dadd = 0, dxor = 0, ones = 0; /* ones: the bits set in some start's offset */
    for (int64_t k = 0; k < ns && (add || xr); k++)
        for (int64_t m = 0; m < st->na && (add || xr); m++)
            for (int64_t i = 0; i < st->ni && (add || xr); i++) {
                int64_t s = st->s0 + k * st->s_step, e = m * st->a_step + i * st->i_step;
                if (s >= q->spatial_len || e + c >= q->red_len) return false;
                int64_t p0 = ir_swizzle_offset(b, offset(&v, s, e)), p1 = ir_swizzle_offset(b, offset(&v, s, e + c));
                if (first) {
                    dadd = p1 - p0;
                    dxor = p1 ^ p0;
                    first = false;
                }
                add = add && p1 - p0 == dadd;
                xr = xr && (p1 ^ p0) == dxor;
                ones |= p0;
            }
    if (add) {
        *x = 0;
        *a = dadd;
        return true;
    }
    if (xr) {
        *x = dxor & ones;
        *a = dxor & ~ones;
        return true;
    }
    return false;
}

static int log2i(int64_t v) {
    int n = 0;
    while ((1ll << n) < v) n++;
    return n;
}

static int pow2_dividing(int v) { return v & -v; }

/* 4-byte words a value of the accumulation type moves in a shuffle */
static int acc_words(const dsp_query *q) {
    lp_type t = lp_op_accum_type(q->st->op, q->st->src.buf->dtype);
    return t == LP_F64X2 || t == LP_I64X2 ? 4 : t == LP_F64 || t == LP_I64 ? 2 : 1;
}

/* What a fold costs, in instructions a lane and in dependent steps: taking in an element
 * (elem), merging two states (merge: an accumulator into another, or a shuffled partner's),
 * and a merge's dependent steps (depth). One add for most ops. logsumexp's merge rescales
 * one sum by an exponential (lse_exp: about 13 instructions and as many steps, with its
 * compare and four selects: 28, 20), and rows fold each accumulator's elements of a turn at
 * once (dsp_lse_fold_elements: a max, a subtraction, the exponential and an add: 17 an
 * element, plus one exponential an accumulator a turn, the rescale, counted as an element). */
typedef struct fold_cost {
    double elem, merge, depth;
    bool many;
} fold_cost;
static fold_cost fold_costs(const dsp_query *q) {
    if (dsp_folds_many(q)) return (fold_cost){17, 28, 20, true};
    return (fold_cost){1, 1, 1, false};
}

/* The instance's threads the model plans for. */
static int inst_threads(const dsp_query *q) {
    if (q->selected) return q->st->exec.instance == q->inst_count - 1 ? q->inst_last : q->inst_size;
    return q->inst_size;
}
static int instances(const dsp_query *q) { return q->selected ? 1 : q->inst_count; }

static void finish(const dsp_query *q, dsp_tile_plan *p, double mio, double instrs) {
    const dsp_cost_consts *c = dsp_target_costs(q->target);
    double n = instances(q);
    double pipe = n * mio, sched = n * instrs * c->instruction, chain = (double)p->chain;
    double one = pipe > sched ? pipe : sched;
    p->cycles1 = one > chain ? one : chain;
    p->cycles4 = 4 * one > chain ? 4 * one : chain;
}

/* rows: lanes per output L (<= a warp), or the whole instance (L = T > a warp). */
/* The sampled requests of the last plan costed: plans that differ only in their
 * accumulators (and so their batch) make the same loads, which are counted once. */
typedef struct sampled_loads {
    int orient, a, b; /* rows: lanes, width; cols: width, slices; orient -1: none yet */
    int64_t loads, wavefronts;
    double pipe;
} sampled_loads;

static bool reuse(const sampled_loads *m, dsp_tile_plan *p, int orient, int a, int b, double *pipe) {
    if (m->orient != orient || m->a != a || m->b != b) return false;
    p->loads = m->loads;
    p->wavefronts = m->wavefronts;
    *pipe = m->pipe;
    return true;
}

/* One sampled request: its wavefronts and pipe cycles added up. */
static void tally(const dsp_cost_consts *c, const int64_t *addr, int nl, int w, bool global, int64_t *sampled,
                  int64_t *wf, double *pipe) {
    int64_t one = request_wavefronts(addr, nl, w, global);
    *wf += one;
    *pipe += request_cycles(c, one);
    ++*sampled;
}

/* The sample scaled to all `total` requests, into p and *pipe, and kept for the plans
 * that make the same loads. */
static void scale(sampled_loads *m, dsp_tile_plan *p, int orient, int a, int b, int64_t total, int64_t sampled,
                  int64_t wf, double *pipe) {
    p->loads = total;
    p->wavefronts = sampled ? (int64_t)((double)wf * (double)total / (double)sampled + 0.5) : 0;
    *pipe = sampled ? *pipe * (double)total / (double)sampled : 0;
    *m = (sampled_loads){orient, a, b, p->loads, p->wavefronts, *pipe};
}

static void cost_rows(const dsp_query *q, const view *v, dsp_tile_plan *p, sampled_loads *memo) {
    const dsp_cost_consts *c = dsp_target_costs(q->target);
    int ws = q->ws, T = inst_threads(q), L = p->lanes, V = p->vec, A = p->accs;
    bool tree = L > ws;
    int64_t S = q->spatial_len, nch = (q->red_len + V - 1) / V;
    int64_t groups = tree ? 1 : T / L, steps = (S + groups - 1) / groups, cpl = (nch + L - 1) / L;
    int nw = (T + ws - 1) / ws, w = V * v->esize;
    int64_t total = (int64_t)nw * steps * cpl, every = total > SAMPLE ? total / SAMPLE : 1;
    int64_t sampled = 0, wf = 0, addr[64];
    double pipe = 0;
    bool known = reuse(memo, p, DSP_ALONG_REDUCED, L, V, &pipe);
    for (int64_t idx = 0; idx < total && !known; idx += every) {
        int64_t wi = idx / (steps * cpl), st = idx / cpl % steps, ci = idx % cpl;
        for (int i = 0; i < ws; i++) {
            int64_t t = wi * ws + i;
            int64_t grp = tree ? 0 : t / L, lane = tree ? t : t % L;
            int64_t s = st * groups + grp, ch = ci * L + lane;
            addr[i] = t < T && s < S && ch < nch ? byte_addr(q, v, offset(v, s, ch * V)) : -1;
        }
        tally(c, addr, ws, w, v->global, &sampled, &wf, &pipe);
    }
    if (!known) scale(memo, p, DSP_ALONG_REDUCED, L, V, total, sampled, wf, &pipe);
    int words = acc_words(q);
    int64_t per_lane = cpl * V; /* elements a lane folds per output */
    int bfly = log2i(tree ? ws : L);
    p->shuffles = (int64_t)nw * steps * bfly * words;
    fold_cost fc = fold_costs(q);
    int64_t waits = p->batch > 0 ? cpl / p->batch : cpl; /* load latencies a lane waits out, a turn */
    /* a many-at-once fold (v_rows.c, lse_many: two elements or more an accumulator a batch,
       or a chunk) takes its elements at fc.elem and rescales each accumulator once a batch;
       otherwise each element is a merge */
    int64_t unit = p->batch > 0 ? (int64_t)p->batch * V : V;
    bool many = fc.many && unit / A >= 2;
    double rescales = many ? (double)(waits * A) : 0;
    double lane_instrs = (double)per_lane * (many ? fc.elem : fc.merge) + rescales * fc.elem + 2.0 * (double)cpl +
                         (A - 1) * fc.merge + bfly * (1 + fc.merge) + 2;
    double instrs = (double)nw * (double)steps * lane_instrs;
    /* the fold's chain: an add an element of an accumulator and a rescale's steps a batch
       (many at once), or a merge's steps an element of an accumulator; then the halving tree */
    double fold_chain = many ? (double)((per_lane + A - 1) / A) + (double)waits * fc.depth
                             : (double)((per_lane + A - 1) / A) * fc.depth;
    fold_chain += log2i(A) * fc.depth;
    int R = p->inflight;
    int64_t turns = (steps + R - 1) / R;
    double avg = p->loads ? pipe / (double)p->loads : c->request; /* a request's cycles */
    double fold = fold_chain * c->add_latency;
    if (fold < (double)(R * per_lane)) fold = (double)(R * per_lane);
    double per_turn = (double)waits * c->lds_latency + (double)R * (double)cpl * avg + fold +
                      bfly * (c->shfl_latency + c->add_latency * fc.depth);
    double mio = pipe + (double)p->shuffles * c->shuffle;
    p->barriers = 0;
    if (tree) { /* a slot per warp, a barrier, a warp folds the slots */
        int steps2 = log2i(nw);
        per_turn += c->lds_latency + c->barrier + steps2 * (c->shfl_latency + c->add_latency * fc.depth);
        p->barriers = (int)(2 * turns - 1);
        p->shuffles += S * steps2 * words;
        mio += (double)(S * steps2 * words) * c->shuffle + 2.0 * (double)(S * nw * words) / 32;
        instrs += (double)S * (steps2 * (1 + fc.merge) + 4);
        per_turn += c->barrier;
    }
    p->chain = (int64_t)((double)turns * per_turn);
    finish(q, p, mio, instrs);
}

/* cols: V neighbouring outputs a thread, P slices of an output's elements. */
static void cost_cols(const dsp_query *q, const view *v, dsp_tile_plan *p, sampled_loads *memo) {
    const dsp_cost_consts *c = dsp_target_costs(q->target);
    int ws = q->ws, T = inst_threads(q), V = p->vec, P = p->slices, A = p->accs;
    int64_t S = q->spatial_len, G = (S + V - 1) / V, red = q->red_len;
    int64_t steps = P > 1 ? 1 : (G + T - 1) / T, rpt = (red + P - 1) / P;
    int nw = (T + ws - 1) / ws, w = V * v->esize;
    int64_t total = (int64_t)nw * steps * rpt, every = total > SAMPLE ? total / SAMPLE : 1;
    int64_t sampled = 0, wf = 0, addr[64];
    double pipe = 0;
    bool known = reuse(memo, p, DSP_ALONG_KEPT, V, P, &pipe);
    for (int64_t idx = 0; idx < total && !known; idx += every) {
        int64_t wi = idx / (steps * rpt), st = idx / rpt % steps, i = idx % rpt;
        for (int l = 0; l < ws; l++) {
            int64_t t = wi * ws + l;
            int64_t g = P > 1 ? t % G : t + st * T, sl = P > 1 ? t / G : 0, r = sl + P * i;
            addr[l] = t < T && g < G && sl < P && r < red ? byte_addr(q, v, offset(v, g * V, r)) : -1;
        }
        tally(c, addr, ws, w, v->global, &sampled, &wf, &pipe);
    }
    if (!known) scale(memo, p, DSP_ALONG_KEPT, V, P, total, sampled, wf, &pipe);
    p->shuffles = 0;
    int words = acc_words(q);
    int64_t per_thread = rpt * V;
    fold_cost fc = fold_costs(q); /* cols merge their elements one at a time */
    double instrs = (double)nw * (double)steps *
                    ((double)per_thread * fc.merge + 2.0 * (double)rpt + (A - 1) * V * fc.merge + 2);
    double avg = p->loads ? pipe / (double)p->loads : c->request;
    int64_t waits = p->batch > 0 ? rpt / p->batch : rpt;
    double fold_chain = (double)((rpt + A - 1) / A + log2i(A)) * fc.depth;
    double fold = fold_chain * c->add_latency;
    if (fold < (double)per_thread) fold = (double)per_thread;
    double chain = (double)steps * ((double)waits * c->lds_latency + (double)rpt * avg + fold);
    double mio = pipe;
    p->barriers = P > 1;
    if (P > 1) { /* slices 1.. store, a barrier, slice 0 folds them in order */
        double slot_wf = 2.0 * (double)((P - 1) * S * words) / 32;
        mio += slot_wf;
        instrs += (double)((P - 1) * ((G + ws - 1) / ws) * V) * (2 + fc.merge);
        chain += c->barrier + c->lds_latency + (double)(P - 1) * V * c->add_latency * fc.depth;
    }
    p->chain = (int64_t)chain;
    finish(q, p, mio, instrs);
}

static int by_cost(const void *x, const void *y) {
    const dsp_tile_plan *a = x, *b = y;
    double ca = a->cycles1 + a->cycles4, cb = b->cycles1 + b->cycles4;
    if (ca != cb) return ca < cb ? -1 : 1;
    if (a->orient != b->orient) return (int)a->orient - (int)b->orient;
    if (a->lanes != b->lanes) return a->lanes - b->lanes;
    if (a->slices != b->slices) return a->slices - b->slices;
    if (a->vec != b->vec) return b->vec - a->vec;
    return a->accs - b->accs;
}

/* Whether the instances of the statement may synchronise alone (a barrier of its scope)
 * and are all the same size. */
static bool whole_instances(const dsp_query *q) {
    return q->selected || q->inst_last == q->inst_size;
}

int dsp_tile_plans(const dsp_query *q, int orient, dsp_tile_plan *out, int max) {
    const ir_stmt *st = q->st;
    if (st->kind != IR_REDUCE || q->opkind != DSP_REDUCE || st->exec.scope == TILEC_SCOPE_THREAD) return 0;
    if (st->src.buf->space == TILEC_SPACE_LOCAL || st->dst.buf->space == TILEC_SPACE_LOCAL) return 0;
    if (st->dst2.buf && st->dst2.buf->space == TILEC_SPACE_LOCAL) return 0;
    view v;
    view_of(q, &v);
    int n = 0, T = inst_threads(q), ws = q->ws;
    int sizes = q->selected ? T : (q->inst_size | q->inst_last);
    int64_t S = q->spatial_len, red = q->red_len;
    static const int vecs[] = {1, 2, 4, 8}, accs[] = {1, 2, 4};
    sampled_loads memo = {.orient = -1};
    if (orient < 0 || orient == DSP_ALONG_REDUCED) {
        int lmax = pow2_dividing(sizes) < ws ? pow2_dividing(sizes) : ws;
        for (int vi = 0; vi < 4; vi++) {
            int V = vecs[vi];
            if (V > red || !vec_ok(q, &v, DSP_ALONG_REDUCED, V)) continue;
            int64_t nch = (red + V - 1) / V;
            int lanes[8], nl = 0;
            for (int L = 1; L <= lmax && (L == 1 || L / 2 < nch); L *= 2) lanes[nl++] = L;
            if (T >= 2 * ws && T % ws == 0 && whole_instances(q) && st->exec.scope != TILEC_SCOPE_WARP && nch >= T / 4)
                lanes[nl++] = T;
            for (int li = 0; li < nl; li++)
                for (int ai = 0; ai < 3 && n < max; ai++) {
                    int L = lanes[li], A = accs[ai];
                    int64_t cpl = (nch + L - 1) / L;
                    if (A > 1 && A > cpl * V) continue;
                    dsp_tile_plan p = {.orient = DSP_ALONG_REDUCED, .lanes = L, .vec = V, .accs = A, .slices = 1};
                    int64_t groups = L > ws ? 1 : T / L, steps = (S + groups - 1) / groups;
                    int kmax = L > ws ? (T / ws < 4 ? T / ws : 4) : 4;
                    p.inflight = (int)(steps < kmax ? steps : kmax);
                    if (nch % L == 0) p.batch = dsp_batch(cpl, V, A, 32 / p.inflight > V ? 32 / p.inflight : V);
                    cost_rows(q, &v, &p, &memo);
                    out[n++] = p;
                }
        }
    }
    if (orient < 0 || orient == DSP_ALONG_KEPT) {
        for (int vi = 0; vi < 4; vi++) {
            int V = vecs[vi];
            if (!vec_ok(q, &v, DSP_ALONG_KEPT, V) || V > S) continue;
            int64_t G = (S + V - 1) / V;
            for (int P = 1; P <= red && (P == 1 || G * P <= T); P *= 2) {
                if (P > 1 && (!whole_instances(q) || (int64_t)(P - 1) * S * 4 * acc_words(q) * instances(q) > 16384))
                    break;
                for (int ai = 0; ai < 3 && n < max; ai++) {
                    int A = accs[ai];
                    if (A > 1 && A > (red + P - 1) / P) continue;
                    dsp_tile_plan p = {.orient = DSP_ALONG_KEPT, .lanes = 1, .vec = V, .accs = A, .slices = P, .inflight = 1};
                    if (red % P == 0) p.batch = dsp_batch(red / P, 1, A, 32 / V > 1 ? 32 / V : 1);
                    cost_cols(q, &v, &p, &memo);
                    out[n++] = p;
                }
            }
        }
    }
    qsort(out, (size_t)n, sizeof *out, by_cost);
    return n;
}

/* Bytes of shared slots plan p adds (each copy of its lowering: two for the checked wide
 * loads of a source whose address is unknown, dsp_address_unknown), each buffer rounded up to 16 bytes as the kernel's are. */
static int64_t slot_bytes(const dsp_lower *l, const dsp_tile_plan *p) {
    const dsp_query *q = l->q;
    int64_t acc = 4 * (int64_t)acc_words(q), elems = 0;
    if (p->orient == DSP_ALONG_REDUCED && p->lanes > q->ws) elems = (int64_t)q->inst_count * p->inflight * (p->lanes / q->ws);
    if (p->orient == DSP_ALONG_KEPT && p->slices > 1) elems = (int64_t)q->inst_count * (p->slices - 1) * q->spatial_len;
    const tilec_buffer *b = q->st->src.buf;
    int copies = p->vec > 1 && dsp_address_unknown(q, b) ? 2 : 1;
    return elems ? copies * ((elems * acc + 15) & ~(int64_t)15) : 0;
}

bool dsp_tile_fit(const dsp_lower *l, dsp_orient orient, dsp_tile_plan *out) {
    if (!dsp_tile_best(l->q, orient, out)) return false;
    if (l->shared_limit <= 0 || dsp_shared_bytes(l->k) + slot_bytes(l, out) <= l->shared_limit) return true;
    dsp_tile_plan *all = malloc(DSP_MAX_PLANS * sizeof *all);
    if (!all) return true; /* the dispatcher declines it for its slots */
    int n = dsp_tile_plans(l->q, orient, all, DSP_MAX_PLANS);
    for (int i = 0; i < n; i++)
        if (slot_bytes(l, &all[i]) == 0) {
            *out = all[i];
            break;
        }
    free(all);
    return true;
}

bool dsp_tile_best(const dsp_query *q, dsp_orient orient, dsp_tile_plan *out) {
    if (q->has_plan[orient]) {
        *out = q->plan[orient];
        return true;
    }
    return false;
}

void dsp_plan_text(const dsp_query *q, const dsp_tile_plan *p, char *buf, size_t n) {
    int bytes = p->vec * (int)tilec_dtype_size(q->st->src.buf->dtype);
    char acc[80] = "";
    int m = 0;
    if (p->batch > 1) m = snprintf(acc, sizeof acc, ", %d in flight", p->batch);
    if (p->accs > 1) snprintf(acc + m, sizeof acc - (size_t)m, ", %d accumulators", p->accs);
    if (p->orient == DSP_ALONG_REDUCED && p->lanes > q->ws)
        snprintf(buf, n, "all %d threads an output (%d-byte loads%s, a butterfly a warp, then shared slots)", p->lanes,
                 bytes, acc);
    else if (p->orient == DSP_ALONG_REDUCED)
        snprintf(buf, n, "%d lane%s an output (%d-byte loads%s)", p->lanes, p->lanes == 1 ? "" : "s", bytes, acc);
    else
        snprintf(buf, n, "a thread %d output%s (%d-byte loads%s), %d slice%s of the reduced elements", p->vec,
                 p->vec == 1 ? "" : "s", bytes, acc, p->slices, p->slices == 1 ? "" : "s");
}
