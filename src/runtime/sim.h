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

#endif
