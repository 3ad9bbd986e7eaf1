/*
 * dispatch.c — the variant registry: which cases exist, how one is chosen for a tile
 * statement, and how the verdicts read (`tilec explain` and dispatch errors).
 */
#include "dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every case, in no particular order: dsp_dispatch sorts by priority, then name. */
static const dsp_case *const registry[] = {
    &dsp_case_cta_tree, &dsp_case_local, &dsp_case_local_smem, &dsp_case_sequential, &dsp_case_shared,
    &dsp_case_smem_tree, &dsp_case_copy, &dsp_case_fill, &dsp_case_sync,
    &dsp_case_grid_rows, &dsp_case_grid_cols, &dsp_case_rows, &dsp_case_cols, &dsp_case_fragment,
    &dsp_case_fragment_copy, &dsp_case_fragment_fill, &dsp_case_map, &dsp_case_fragment_map, &dsp_case_cluster,
};
enum { NREGISTRY = sizeof registry / sizeof registry[0] };
_Static_assert((int)NREGISTRY <= (int)DSP_MAX_CASES, "report too small for the registry");

size_t dsp_registry(const dsp_case *const **cases) {
    *cases = registry;
    return NREGISTRY;
}

dsp_opkind dsp_opkind_of(const ir_stmt *st) {
    switch (st->kind) {
    case IR_COPY: return DSP_COPY;
    case IR_FILL: return DSP_FILL;
    case IR_SYNC: return DSP_SYNC;
    case IR_MAP: return DSP_MAP;
    default:
        return st->exec.scope == TILEC_SCOPE_GRID      ? DSP_GRID_REDUCE
               : st->exec.scope == TILEC_SCOPE_CLUSTER ? DSP_CLUSTER_REDUCE
                                                       : DSP_REDUCE;
    }
}

const char *dsp_stmt_what(const ir_stmt *st, char *buf, size_t n) {
    if (st->kind != IR_REDUCE || (st->exec.scope != TILEC_SCOPE_GRID && st->exec.scope != TILEC_SCOPE_CLUSTER))
        return ir_stmt_word(st);
    snprintf(buf, n, "%s %s", tilec_scope_name(st->exec.scope), tilec_op_name(st->op));
    return buf;
}

/* An arch name: the prefix, 2 to 4 characters of `digits`, then at most one of `suffix`
 * (sm_90, sm_90a, sm_100f; gfx90a, gfx1100). Anything else (sm_90x, sm_, a newline) is
 * refused before it reaches a message, a compiler or a number. */
static bool arch_ok(const char *arch, const char *prefix, const char *digits, const char *suffix) {
    size_t p = strlen(prefix);
    if (strncmp(arch, prefix, p) != 0) return false;
    size_t d = strspn(arch + p, digits);
    if (d < 2 || d > 4) return false;
    const char *rest = arch + p + d;
    return !rest[0] || (rest[1] == '\0' && suffix[0] && strchr(suffix, rest[0]));
}

bool dsp_target_resolve(const tilec_target *in, dsp_target *out, char *why, size_t n) {
    tilec_target t = in ? *in : (tilec_target){TILEC_BACKEND_SIM, NULL, 0};
    if (t.backend == TILEC_BACKEND_AUTO) t.backend = TILEC_BACKEND_SIM; /* no GPU runtime yet */
    const ir_target_info *row = ir_target(t.backend);
    if (!row) {
        snprintf(why, n, "backend %d is not a tilec_backend", (int)t.backend);
        return false;
    }
    *out = (dsp_target){.backend = t.backend, .arch = t.arch ? t.arch : row->default_arch, .warp_size = t.warp_size};
    if (row->arch_form && !arch_ok(out->arch, row->arch_prefix, row->arch_digits, row->arch_suffix)) {
        snprintf(why, n, "%s arch '%s' is not of the form %s", row->label, out->arch, row->arch_form);
        return false;
    }
    int natural = row->natural_warp(out->arch);
    if (!out->warp_size) out->warp_size = natural;
    unsigned bit = out->warp_size == 32 ? IR_WARP_32 : out->warp_size == 64 ? IR_WARP_64 : 0;
    if (!(row->warp_sizes & bit)) {
        snprintf(why, n, "%s runs warps of %s threads, not %d", row->label,
                 row->warp_sizes == IR_WARP_32 ? "32" : "32 or 64", out->warp_size);
        return false;
    }
    if (row->wave64_only && natural == 64 && out->warp_size != 64) {
        snprintf(why, n, "%s runs wave64 only", out->arch);
        return false;
    }
    return true;
}

/* ---- limits ---------------------------------------------------------------------------- */

void dsp_limits(const dsp_target *t, ir_limits *out, char *name, size_t n) {
    const ir_target_info *row = ir_target(t->backend);
    *out = ir_limits_any(t->warp_size); /* the simulator takes what the most permissive GPU launches */
    if (row->shared_bytes) out->shared_bytes = row->shared_bytes(t->arch);
    if (row->func_shared_bytes) out->func_shared_bytes = row->func_shared_bytes;
    out->kernel_why = row->kernel_why;
    out->cluster_max32 = row->cluster_max ? row->cluster_max(t->arch) : 0;
    out->cluster_max = t->warp_size == 32 ? out->cluster_max32 : 0;
    out->func_why = row->func_why;
    if (row->gpu) snprintf(name, n, "%s %s", row->label, t->arch);
    else snprintf(name, n, "%s", row->label);
    out->target = name;
}

tilec_status dsp_target_take_costs(tilec_ctx *ctx, dsp_target *t) {
    if (!ctx || !ctx->costs_set) return TILEC_OK;
    /* the simulator runs whatever plan the constants choose: it takes any file's, so their
       plans can be proven there; a GPU target only its own arch's */
    if (t->backend != TILEC_BACKEND_SIM && (strcmp(ctx->costs_arch, t->arch) != 0 || ctx->costs_warp != t->warp_size)) {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "the cost model's constants of %s are for %s at warp size %d, not this target's %s at warp size %d: "
                    "measure this target's with `tilec calibrate` on a GPU of that arch, or load no constants file",
                    ctx->costs_what, ctx->costs_arch, ctx->costs_warp, t->arch, t->warp_size);
        return TILEC_ERR_INVALID_ARG;
    }
    t->costs = &ctx->costs;
    t->costs_what = ctx->costs_what;
    return TILEC_OK;
}

tilec_status dsp_target_resolve_diag(tilec_ctx *ctx, const tilec_target *in, dsp_target *out) {
    char why[200];
    if (dsp_target_resolve(in, out, why, sizeof why)) return dsp_target_take_costs(ctx, out);
    ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s", why);
    return TILEC_ERR_INVALID_ARG;
}

tilec_status dsp_verify(tilec_program *p, const dsp_target *t) {
    char name[128];
    ir_limits lim;
    dsp_limits(t, &lim, name, sizeof name);
    return ir_verify(p, &lim);
}

/* ---- choosing -------------------------------------------------------------------------- */

static int by_priority(const void *x, const void *y) {
    const dsp_case *a = *(const dsp_case *const *)x, *b = *(const dsp_case *const *)y;
    if (a->priority != b->priority) return b->priority - a->priority;
    return strcmp(a->variant, b->variant);
}

void dsp_dispatch(const dsp_query *q, dsp_lower *l, dsp_report *rep) {
    memset(rep, 0, sizeof *rep);
    rep->chosen = -1;
    const dsp_case *cases[DSP_MAX_CASES];
    int n = 0;
    bool frag = dsp_stmt_has_fragment(q->st); /* a fragment's statements have cases of their own */
    for (int i = 0; i < NREGISTRY; i++)
        if ((registry[i]->ops >> q->opkind & 1u) && (registry[i]->targets >> q->target->backend & 1u) &&
            registry[i]->fragments == frag)
            cases[n++] = registry[i];
    qsort(cases, (size_t)n, sizeof cases[0], by_priority);
    const char *forced = q->st->kind == IR_REDUCE || q->st->kind == IR_MAP ? q->st->variant : NULL;
    if (n == 0) { rep->outcome = DSP_NO_CASES; return; }
    for (int i = 0; i < n; i++) {
        if (forced && strcmp(forced, cases[i]->variant) != 0) continue;
        dsp_verdict *v = &rep->v[rep->n++];
        v->c = cases[i];
        bool all = true;
        for (int p = 0; p < DSP_MAX_PREDS && cases[i]->preds[p].name; p++) {
            v->npreds++;
            v->pred_ok[p] = cases[i]->preds[p].check(q, v->reasons[p], sizeof v->reasons[p]);
            all = all && v->pred_ok[p];
        }
        if (!all || rep->chosen >= 0) continue;
        /* a case that forbids itself unless forced says so with a predicate, so all hold */
        if (l) {
            int mark = l->into->n, nbufs = l->k->nbufs, nregs = l->k->nregs;
            int64_t before = dsp_shared_bytes(l->k), after = 0;
            bool lowered = cases[i]->lower(l, v->declined_why, sizeof v->declined_why);
            if (lowered && l->shared_limit > 0 && (after = dsp_shared_bytes(l->k)) > l->shared_limit) {
                snprintf(v->declined_why, sizeof v->declined_why,
                         "its shared slots (%lld bytes) bring the kernel's shared memory to %lld bytes, more than the "
                         "%lld %s", (long long)(after - before), (long long)after, (long long)l->shared_limit,
                         l->limit_what ? l->limit_what : "the target allows");
                lowered = false;
            }
            if (!lowered) {
                v->declined = true;
                l->into->n = mark; /* drop whatever the lowering appended, its slots too */
                l->k->nbufs = nbufs;
                l->k->nregs = nregs; /* and its registers, which nothing reads now */
                continue;
            }
        }
        v->chosen = true;
        rep->chosen = rep->n - 1;
    }
    if (forced && rep->n == 0) rep->outcome = DSP_UNKNOWN_VARIANT;
    else rep->outcome = rep->chosen >= 0 ? DSP_FOUND : DSP_ALL_REJECTED;
}

/* ---- reporting ----------------------------------------------------------------------------- */

static void target_text(char *buf, size_t n, const dsp_query *q) {
    snprintf(buf, n, "%s %s, warp size %d", tilec_backend_name(q->target->backend), q->target->arch, q->ws);
}

void dsp_print_report(ir_str *s, const dsp_query *q, const dsp_report *rep, int indent) {
    for (int i = 0; i < rep->n; i++) {
        const dsp_verdict *v = &rep->v[i];
        const char *verdict = v->chosen ? "chosen" : v->declined ? "declined" : "rejected";
        bool all = true;
        for (int p = 0; p < v->npreds; p++) all = all && v->pred_ok[p];
        if (all && !v->chosen && !v->declined) verdict = "applies (a higher one won)";
        ir_str_printf(s, "%*s%s %-11s priority %-3d %s\n", indent, "", v->chosen ? "*" : " ",
                      v->c->variant, v->c->priority, verdict);
        for (int p = 0; p < v->npreds; p++)
            ir_str_printf(s, "%*s    %-16s %s%s\n", indent, "", v->c->preds[p].name,
                          v->pred_ok[p] ? "ok" : "no: ", v->pred_ok[p] ? "" : v->reasons[p]);
        if (v->declined) ir_str_printf(s, "%*s    declined: %s\n", indent, "", v->declined_why);
    }
    (void)q;
}

void dsp_report_error(tilec_program *p, const dsp_query *q, const dsp_report *rep) {
    ir_str s = {0};
    char tgt[96];
    target_text(tgt, sizeof tgt, q);
    char what[40];
    const char *op = dsp_stmt_what(q->st, what, sizeof what);
    switch (rep->outcome) {
    case DSP_UNKNOWN_VARIANT: {
        /* a variant that exists, for the other kind of statement: fragments have their own */
        bool frag = dsp_stmt_has_fragment(q->st), other = false;
        for (int i = 0; i < NREGISTRY; i++)
            other = other || (registry[i]->fragments != frag && !strcmp(registry[i]->variant, q->st->variant));
        if (other && frag)
            ir_str_printf(&s, "variant '%s' does not lower a statement on a fragment ('%s' has a layout); the ones that "
                              "do:", q->st->variant, q->st->src.buf && q->st->src.buf->layout.kind != TILEC_LAYOUT_NONE ? q->st->src.buf->name : q->st->dst.buf->name);
        else if (other)
            ir_str_printf(&s, "variant '%s' lowers statements on fragments only (local buffers with a layout=); the "
                              "ones for %s on %s:", q->st->variant, op, tilec_backend_name(q->target->backend));
        else
            ir_str_printf(&s, "no variant named '%s' is registered for %s on %s; registered:", q->st->variant,
                          op, tilec_backend_name(q->target->backend));
        dsp_report all;
        dsp_query q2 = *q;
        ir_stmt st2 = *q->st;
        st2.variant = NULL;
        q2.st = &st2;
        dsp_dispatch(&q2, NULL, &all);
        const char *names[DSP_MAX_CASES];
        for (int i = 0; i < all.n; i++) {
            ir_str_printf(&s, "%s %s", i ? "," : "", all.v[i].c->variant);
            names[i] = all.v[i].c->variant;
        }
        const char *near = ir_did_you_mean(q->st->variant, strlen(q->st->variant), names, all.n);
        if (near) ir_str_printf(&s, "; did you mean '%s'?", near);
        break;
    }
    case DSP_NO_CASES:
        ir_str_printf(&s, "no variant is registered for %s on %s", op, tilec_backend_name(q->target->backend));
        break;
    default:
        if ((q->st->kind == IR_REDUCE || q->st->kind == IR_MAP) && q->st->variant)
            ir_str_printf(&s, "variant=%s cannot lower this %s on %s (forced variants never fall back):\n",
                          q->st->variant, op, tgt);
        else
            ir_str_printf(&s, "no variant can lower this %s on %s; every variant was rejected:\n", op, tgt);
        dsp_print_report(&s, q, rep, 2);
        ir_str_printf(&s, "  op: ");
        ir_print_stmt(&s, q->st);
        break;
    }
    /* a variant= no variant answers to is marked at its value; the rest at the op */
    ir_pos at = q->st->op_pos.line ? q->st->op_pos : q->st->pos;
    if (rep->outcome == DSP_UNKNOWN_VARIANT && q->st->variant_pos.line) at = q->st->variant_pos;
    ir_stmt_diag(p, q->kernel, q->st, TILEC_SEV_ERROR, at, "%s", s.oom ? "no variant can lower this statement" : s.data);
    ir_str_free(&s);
}
