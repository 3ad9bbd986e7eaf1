/*
 * cli.h — what the `tilec` command's files share: exit codes, file helpers, and the
 * commands. The CLI sees only the public API (tilec.h).
 */
#ifndef TILEC_CLI_H
#define TILEC_CLI_H

#include "tilec.h"

#include <stdbool.h>
#include <stddef.h>

enum { EXIT_OK = 0, EXIT_BAD_INPUT = 1, EXIT_USAGE = 2, EXIT_UNAVAILABLE = 3 };

/* Prints "tilec CMD: MESSAGE" and a pointer to --help; returns EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, const char *arg);
/* A whole file ("-": standard input), malloc'd; NULL with a message on failure. */
char *read_file(const char *path, size_t *len);
/* Writes a file through a temporary beside it ("-": standard output). */
int write_file(const char *path, const char *text, size_t len);
/* Parses FILE (and verifies it for warp_size when verify is set); prints diagnostics. */
tilec_program *load(tilec_ctx *ctx, const char *path, bool verify, int warp_size);
int parse_warp_size(const char *cmd, const char *v, int *out);
/* --sim-budget N: thread-steps (a decimal count; 0 for the default) or "unlimited". */
int parse_sim_budget(const char *cmd, const char *v, uint64_t *out);
bool is_help(const char *arg);
/* n random elements of dtype dt from a seeded stream that is the same everywhere: floats
 * uniform in [-1, 1), signed integers in [-100, 100], u32 in [0, 100]. */
void fill_random(tilec_dtype dt, unsigned char *p, int64_t n, uint64_t *seed);

int cmd_check(int argc, char **argv);
int cmd_fmt(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_emit(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_reduce(int argc, char **argv);

#endif
