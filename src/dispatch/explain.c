/*
 * explain.c — tilec_explain: how every tile statement is lowered, and why. The short form
 * (TILEC_EXPLAIN_SHORT; `tilec explain`): per statement the variant that lowers it, the
 * one reason it won and, for reductions, what it does in plain words (for a grid
 * statement, the launch). The full form (`tilec explain --verbose`): every variant tried
 * and every predicate's verdict. Either way the lowered loop IR on request.
 */
#include "dispatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tilec_status tilec_explain(tilec_program *prog, const tilec_target *target, unsigned flags, char **text) {
    if (!prog) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    if (!text) return ir_bad(prog->ctx, "tilec_explain: text is NULL; pass where the text goes");
    *text = NULL;
    if (flags & ~(unsigned)(TILEC_EXPLAIN_LOOP | TILEC_EXPLAIN_SHORT)) {
        return ir_bad(prog->ctx, "tilec_explain: flags 0x%x has bits other than "
                                 "TILEC_EXPLAIN_LOOP and TILEC_EXPLAIN_SHORT", flags);
    }
    dsp_target t;
    tilec_status st = dsp_target_resolve_diag(prog->ctx, target, &t);
    return st != TILEC_OK ? st : dsp_explain(prog, &t, flags, text);
}

/* "1 output" / "4 outputs" */
static const char *plural(long long n) { return n == 1 ? "" : "s"; }

/* The first predicate a rejected variant failed (-1: none; it declined). */
static int first_failed(const dsp_verdict *v) {
    for (int p = 0; p < v->npreds; p++)
        if (!v->pred_ok[p]) return p;
    return -1;
}

/* What stopped rival v at its first failed check p (-1: it declined), after "why: NAME
 * (...) ": "costs more: 104 vs 86 cycles; " and the cost model's reason when that check is
 * the model's ('cheapest': the rival applies, the model prices it above the other
 * orientation, rows or cols), else "does not apply: " and the reason. */
static void verdict_text(ir_str *s, const dsp_query *q, const dsp_verdict *v, int p) {
    if (p >= 0 && !strcmp(v->c->preds[p].name, "cheapest")) {
        int o = v->c->variant[0] == 'c'; /* q->plan[0] is rows', [1] cols' */
        const dsp_tile_plan *mine = &q->plan[o], *theirs = &q->plan[!o];
        ir_str_printf(s, "costs more: %.0f vs %.0f cycles; %s\n", nearbyint(mine->cycles1) + nearbyint(mine->cycles4),
                      nearbyint(theirs->cycles1) + nearbyint(theirs->cycles4), v->reasons[p]);
        return;
    }
    ir_str_printf(s, "does not apply: %s\n", p >= 0 ? v->reasons[p] : v->declined_why);
}

/* Why the chosen variant (report entry `won`, or the variant `lowered` when lowering took
 * another because the chosen one declined) won: the nearest variant before it in
 * priority order that did not apply, and its first reason. */
static void why_line(ir_str *s, const dsp_query *q, const dsp_report *rep, const char *lowered) {
    const ir_stmt *st = q->st;
    int won = rep->chosen;
    if (st->kind == IR_REDUCE && st->variant) {
        ir_str_printf(s, "    why: forced with variant=%s\n", st->variant);
        return;
    }
    if (lowered && strcmp(lowered, rep->v[won].c->variant) != 0) {
        ir_str_printf(s, "    why: %s applies, but declined when lowered (its shared slots would pass the shared memory "
                         "the target gives)\n", rep->v[won].c->variant);
        return;
    }
    /* a variant for other operands (registers, when these are in shared memory: its
     * 'storage' check fails first) is no rival worth naming */
    for (int i = won - 1; i >= 0; i--) {
        const dsp_verdict *v = &rep->v[i];
        int p = first_failed(v);
        if (p >= 0 && !strcmp(v->c->preds[p].name, "storage")) continue;
        /* a rival of the winner's own priority (ties go by name) is said to be one, either
         * way round: "tried first at the same priority 20", "tried after it at ..." */
        if (v->c->priority == rep->v[won].c->priority)
            ir_str_printf(s, "    why: %s (tried first at the same priority %d) ", v->c->variant, v->c->priority);
        else
            ir_str_printf(s, "    why: %s (priority %d) ", v->c->variant, v->c->priority);
        verdict_text(s, q, v, p);
        return;
    }
    /* a rival of the same priority after it that does not apply */
    for (int i = won + 1; i < rep->n && rep->v[i].c->priority == rep->v[won].c->priority; i++) {
        int p = first_failed(&rep->v[i]);
        if (p < 0) continue;
        ir_str_printf(s, "    why: %s (tried after it at the same priority %d) ", rep->v[i].c->variant, rep->v[i].c->priority);
        verdict_text(s, q, &rep->v[i], p);
        return;
    }
    if (rep->n > 1)
        ir_str_printf(s, "    why: it comes first (priority %d) of the variants for these operands, and all its checks "
                         "hold\n", rep->v[won].c->priority);
}

/* What the variant does to the statement's outputs, in plain words; k is the lowered
 * kernel (its launch), or NULL. */
static void how_line(ir_str *s, const dsp_query *q, const char *variant, const lp_kernel *k) {
    long long outs = q->spatial_len, elems = q->red_len;
    ir_str_printf(s, "    how: %lld output%s of %lld element%s", outs, plural(outs), elems, plural(elems));
    const ir_stmt *st = q->st;
    bool regs = st->src.buf->space == TILEC_SPACE_LOCAL;
    if (q->opkind == DSP_GRID_REDUCE) {
        if (!k) {
            ir_str_printf(s, "\n");
            return;
        }
        /* what the launch is, and whether outputs span CTAs (their partial results then go
         * through global scratch the launcher allocates); the layout in detail is the
         * plan TILEC_JIT_LOG and `tilec reduce --explain` print */
        bool partials = false;
        for (int i = 0; i < k->nbufs; i++) partials |= k->bufs[i]->space == TILEC_SPACE_GLOBAL && !k->bufs[i]->tile;
        long long grid = k->grid;
        ir_str_printf(s, "; a grid of %lld CTA%s of %d threads; %s, always in the same order, so every run gives "
                         "the same bits\n", grid, plural(grid), k->threads,
                      partials ? "an output's elements are spread over several CTAs, whose partial results are then folded"
                               : "each output is folded inside one CTA");
        return;
    }
    if (q->opkind == DSP_CLUSTER_REDUCE) {
        char plan[256];
        dsp_cluster_plan(q, plan, sizeof plan);
        ir_str_printf(s, " (of each CTA's copy); %s\n", plan);
        return;
    }
    if (!strcmp(variant, "shared") && q->group == 1)
        ir_str_printf(s, "; one lane folds each output");
    else if (!strcmp(variant, "shared"))
        ir_str_printf(s, "; a group of %d lanes folds each output, exchanging values with shuffles", q->group);
    else if (!strcmp(variant, "cta_tree"))
        ir_str_printf(s, "; all %d warps fold each output together (a butterfly in each warp, then one warp folds the "
                         "warps' results)", q->inst_size / q->ws);
    else if ((!strcmp(variant, "rows") || !strcmp(variant, "cols")) && q->has_plan[variant[0] == 'c']) {
        const dsp_tile_plan *p = &q->plan[variant[0] == 'c'];
        char plan[160];
        dsp_plan_text(q, p, plan, sizeof plan);
        ir_str_printf(s, "; %s; the cost model's estimate: %.0f cycles alone, %.0f with four to a multiprocessor",
                      plan, p->cycles1, p->cycles4);
    } else if (!strcmp(variant, "fragment")) {
        char plan[512];
        dsp_fragment_plan(q, plan, sizeof plan);
        ir_str_printf(s, "; %s", plan);
    } else if (!strcmp(variant, "sequential"))
        ir_str_printf(s, "; one thread folds each output, element after element");
    else if (!strcmp(variant, "smem_tree"))
        ir_str_printf(s, "; a halving tree in shared memory, a barrier per level");
    else if (!strcmp(variant, "local") && st->exec.scope == TILEC_SCOPE_THREAD)
        ir_str_printf(s, "; each thread folds its own registers");
    else if (!strcmp(variant, "local"))
        ir_str_printf(s, "%s; each thread folds its registers, then a butterfly across the warp's lanes",
                      regs ? " from each lane" : "");
    else if (!strcmp(variant, "local_smem"))
        ir_str_printf(s, "%s; the lanes' partial results meet in shared slots, which every lane folds",
                      regs ? " from each lane" : "");
    ir_str_printf(s, "\n");
}

/* The cost model's candidates (cost.c), cheapest first: the best few of each family. */
static void plans_table(ir_str *s, const dsp_query *q) {
    dsp_tile_plan *all = malloc(DSP_MAX_PLANS * sizeof *all);
    if (!all) { s->oom = true; return; }
    int n = dsp_tile_plans(q, -1, all, DSP_MAX_PLANS);
    ir_str_printf(s, "    cost model (cycles alone / four to a multiprocessor; counts for one instance):\n");
    int shown[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        const dsp_tile_plan *p = &all[i];
        if (shown[p->orient]++ >= 4) continue;
        char text[160];
        dsp_plan_text(q, p, text, sizeof text);
        ir_str_printf(s, "    %s %-4s %6.0f / %-6.0f %s; %lld loads, %lld wavefronts, %lld shuffles, chain %lld, %d barrier%s\n",
                      i == 0 ? "*" : " ", p->orient == DSP_ALONG_KEPT ? "cols" : "rows", p->cycles1, p->cycles4, text,
                      (long long)p->loads, (long long)p->wavefronts, (long long)p->shuffles, (long long)p->chain,
                      p->barriers, plural(p->barriers));
    }
    free(all);
}

/* The statements of kernel k, into s: the full table, or (short) one line and the why and
 * how of each; lowered (may be NULL) is the kernel as lowered. False when a statement has
 * no variant (reported as a diagnostic). */
static bool explain_kernel(ir_str *s, tilec_program *prog, const dsp_target *t, const tilec_kernel *k, bool brief,
                           const lp_kernel *lowered, bool *modelled) {
    bool ok = true;
    ir_str_printf(s, "%s %s (target %s %s, warp size %d, threads=%d)\n", k->is_func ? "func" : "kernel", k->name,
                  tilec_backend_name(t->backend), t->arch, t->warp_size, k->threads);
    for (int j = 0; j < k->nstmts; j++) {
        const ir_stmt *st = k->stmts[j];
        if (st->kind == IR_ALLOC) continue;
        dsp_query q;
        dsp_query_init(&q, t, k, st);
        dsp_report rep;
        dsp_dispatch(&q, NULL, &rep);
        *modelled |= q.has_plan[0] || q.has_plan[1];
        if (st->pos.line) ir_str_printf(s, "  line %d: ", st->pos.line);
        else ir_str_printf(s, "  statement %d: ", st->index + 1);
        ir_print_stmt(s, st);
        if (rep.outcome != DSP_FOUND) {
            if (brief) ir_str_printf(s, " -> no variant (the error says why)\n");
            else {
                ir_str_printf(s, "\n");
                dsp_print_report(s, &q, &rep, 4);
            }
            dsp_report_error(prog, &q, &rep);
            ok = false;
            continue;
        }
        const char *variant = lowered && lowered->variants[j] ? lowered->variants[j] : rep.v[rep.chosen].c->variant;
        if (brief) {
            ir_str_printf(s, " -> %s\n", variant);
            if (st->kind == IR_REDUCE) {
                why_line(s, &q, &rep, lowered ? lowered->variants[j] : NULL);
                how_line(s, &q, variant, lowered);
            } else if (st->kind == IR_MAP) {
                char plan[512];
                dsp_map_plan(&q, plan, sizeof plan);
                ir_str_printf(s, "    how: %s\n", plan);
            }
            continue;
        }
        bool lanes = st->kind == IR_REDUCE && st->src.buf->space == TILEC_SPACE_LOCAL &&
                     st->src.buf->layout.kind == TILEC_LAYOUT_NONE && st->exec.scope != TILEC_SCOPE_THREAD;
        if (st->kind == IR_REDUCE) {
            ir_str_printf(s, "\n    %lld output%s of %lld element%s%s", (long long)q.spatial_len, plural(q.spatial_len),
                          (long long)q.red_len, plural(q.red_len), lanes ? " from each lane" : "");
            /* a grid variant picks its own lanes (its plan says how many): the CTA-scope
             * groups would only mislead */
            if (q.opkind != DSP_GRID_REDUCE) ir_str_printf(s, "; the shared variant's groups of %d lane%s", q.group, plural(q.group));
        }
        ir_str_printf(s, "\n");
        dsp_print_report(s, &q, &rep, 4);
        if (q.has_plan[0] || q.has_plan[1]) plans_table(s, &q);
    }
    return ok;
}

tilec_status dsp_explain(tilec_program *prog, const dsp_target *target, unsigned flags, char **text) {
    const dsp_target t = *target;
    bool brief = flags & TILEC_EXPLAIN_SHORT, dump_loop = flags & TILEC_EXPLAIN_LOOP;
    *text = NULL;
    tilec_status vs = dsp_verify(prog, &t);
    if (vs != TILEC_OK) return vs;
    /* the short form and --dump=loop need the lowered kernels (the short form: the variant
     * each statement really got, and a grid statement's launch); a dispatch that fails is
     * reported once, by the table of verdicts, not again by the lowering */
    bool failed = false, oom = false;
    lp_kernel **ks = NULL;
    if (brief || dump_loop) {
        for (int i = 0; i < prog->nkernels && !failed; i++) {
            const tilec_kernel *k = prog->kernels[i];
            for (int j = 0; j < k->nstmts && !failed; j++) {
                const ir_stmt *st = k->stmts[j];
                if (st->kind == IR_ALLOC) continue;
                dsp_query q;
                dsp_query_init(&q, &t, k, st);
                dsp_report rep;
                dsp_dispatch(&q, NULL, &rep);
                failed = rep.outcome != DSP_FOUND;
            }
        }
        if (!failed) {
            tilec_status st = dsp_lower_program(prog, &t, NULL, &ks);
            oom = st == TILEC_ERR_NOMEM;
            if (st != TILEC_OK) ks = NULL;
            failed = st != TILEC_OK;
        }
    }
    /* the verdicts of each kernel, then (--dump=loop) its loop IR */
    ir_str s = {0};
    bool bad = false, modelled = false;
    for (int i = 0; i < prog->nkernels; i++) {
        if (i) ir_str_printf(&s, "\n");
        bad |= !explain_kernel(&s, prog, &t, prog->kernels[i], brief, ks ? ks[i] : NULL, &modelled);
        if (ks && dump_loop) {
            ir_str_printf(&s, "\n");
            lp_print_kernel(&s, ks[i]);
        }
    }
    /* which constants priced the plans, when the cost model priced any */
    if (modelled && t.costs)
        ir_str_printf(&s, "\ncost model: the constants of %s\n", t.costs_what);
    else if (modelled)
        ir_str_printf(&s, "\ncost model: the default constants (an H200's; `tilec calibrate` measures this GPU's)\n");
    if (s.oom || oom) { ir_str_free(&s); return TILEC_ERR_NOMEM; }
    *text = s.data;
    return failed || bad ? TILEC_ERR_DISPATCH : TILEC_OK;
}
