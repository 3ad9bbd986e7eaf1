/*
 * map_programs.h — .tile programs of map statements that more than one test runs: the
 * simulator's bits (test_sim) and the emitted source (test_codegen) of the same program.
 */
#ifndef TILEC_TEST_MAP_PROGRAMS_H
#define TILEC_TEST_MAP_PROGRAMS_H

/* Three maps into local fragments of one register a lane: E is copied out (to Y), so its
 * store selects the quiet NaN; G is read only by F's map, so its store keeps the NaN its
 * arithmetic gives (v_map.c, nan_unseen); F = G + 1, copied out (to Z), selects again. */
static const char *const map_nan_select_src =
    "kernel k(X: f32[1, 32] global, Y: f32[1, 32] global, Z: f32[1, 32] global) threads=32 {\n"
    "  local F: f32[1, 32] layout=linear(reg=(), lane=((0, 1), (0, 2), (0, 4), (0, 8), (0, 16)))\n"
    "  local E: f32[1, 32] layout=linear(reg=(), lane=((0, 1), (0, 2), (0, 4), (0, 8), (0, 16)))\n"
    "  local G: f32[1, 32] layout=linear(reg=(), lane=((0, 1), (0, 2), (0, 4), (0, 8), (0, 16)))\n"
    "  warp.copy(F, X)\n  warp.map(E, F * 2)\n  warp.copy(Y, E)\n"
    "  warp.map(G, F * 3)\n  warp.map(F, G + 1)\n  warp.copy(Z, F)\n}\n";

#endif
