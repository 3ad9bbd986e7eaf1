/*
 * sim.h — the CPU SIMT simulator: runs a loop kernel for its whole grid, each warp in
 * lockstep, and checks what a GPU would not: shuffles that read inactive or missing
 * lanes, barriers reached by part of their scope, out-of-bounds accesses, races on shared
 * memory between barriers, and reads of uninitialised shared or local memory.
 */
#ifndef TILEC_SIM_H
#define TILEC_SIM_H

#include "../dispatch/dispatch.h"

/* Runs k on host buffers: args[i] is the kernel's parameter i (dense, row-major elements
 * of its dtype). Returns TILEC_ERR_SIMULATE with a diagnostic at the tile statement on the
 * first problem found. */
tilec_status sim_run(tilec_program *p, const lp_kernel *k, void *const *args);

/* sim_run with the kernel's global scratch given (in the order of its buffers, as
 * tilec_launch_info counts them) rather than made zeroed for the run: what the runtime
 * keeps between launches, so a kernel that did not leave its counters at zero gives the
 * next launch a wrong answer here as on a GPU. scratch NULL: sim_run. */
tilec_status sim_run_scratch(tilec_program *p, const lp_kernel *k, void *const *args, void *const *scratch);

/* A lower bound of the thread-steps a complete run of k takes (the count its budget is
 * held to), given that it loads at least `reads` elements of its global parameter `param`
 * (a reduction's input: every element of its view): from its loop IR, the least each load
 * costs in the loops that make it, and what a lane spends outside them. *rate: the steps an
 * element the bound counts. False when k loads nothing of `param` (no bound). */
bool sim_work_floor(const lp_kernel *k, int param, uint64_t reads, uint64_t *at_least, uint64_t *rate);

/* The work budget of a run in ctx, in thread-steps: the context's (tilec_set_sim_budget),
 * else TILEC_SIM_BUDGET from the environment, else the default. False, with a diagnostic,
 * when the environment's value is not a count. */
bool sim_budget(tilec_ctx *ctx, uint64_t *out);

/* How to raise the budget, for the messages that stop at it. */
#define SIM_RAISE_BUDGET                                                                        \
    "raise the budget (tilec_set_sim_budget, TILEC_SIM_BUDGET=N in the environment, or "       \
    "--sim-budget N of tilec run and tilec reduce) or run a smaller program"

#endif
