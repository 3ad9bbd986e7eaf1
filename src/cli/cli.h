/*
 * cli.h — what the `tilec` command's files share: exit codes, file helpers, and the
 * commands. The CLI sees only the public API (tilec.h).
 */
#ifndef TILEC_CLI_H
#define TILEC_CLI_H

#include "tilec.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum { EXIT_OK = 0, EXIT_BAD_INPUT = 1, EXIT_USAGE = 2, EXIT_UNAVAILABLE = 3 };

/* Prints "tilec CMD: MESSAGE" and a pointer to --help; returns EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, const char *arg);
bool is_help(const char *arg);

/* ---- the command line (args.c) ----------------------------------------------------------
 * Every command reads its arguments with parse_options, every number through the one
 * strict parser behind parse_int / parse_uint / parse_int_list. All print their message
 * and return EXIT_USAGE on a bad command line. */

/* One option of a command, for parse_options. */
typedef enum opt_kind {
    OPT_FLAG,   /* no value: sets *flag; may repeat; "--check=x" is an error */
    OPT_VALUE,  /* one value, given once: stored in *value */
    OPT_REPEAT, /* a value each time it is given: passed to each(arg, value) */
} opt_kind;

typedef struct opt_spec {
    const char *name;  /* "--seed" or "-o" */
    const char *alias; /* another spelling ("-i" of "--in-place"), or NULL */
    opt_kind kind;
    bool *flag;          /* OPT_FLAG */
    const char **value;  /* OPT_VALUE */
    int (*each)(void *arg, const char *opt, const char *value); /* OPT_REPEAT; EXIT_OK or an exit code */
    void *arg;
} opt_spec;

/* The one option parser every command uses. Reads argv[1 .. argc) against specs[0 .. n):
 * "--opt=value" and "--opt value" both; a short option takes "-o value" (or "-ovalue");
 * "--" ends the options (every argument after it is an operand, "-x" too); "-" alone is
 * an operand (standard input or output). Operands, in order, go to operands[0 .. max)
 * and their count to *noperands. Messages, all exit EXIT_USAGE: "option --x needs a
 * value", "unknown option --x; see tilec CMD --help", "option --x takes no value",
 * "option --x is given twice", and, past max operands, that the argument is extra. */
int parse_options(const char *cmd, int argc, char **argv, const opt_spec *specs, int n, const char **operands, int max,
                  int *noperands);

/* TEXT is all of a decimal integer in [lo, hi] (hi >= 0): an optional '-', digits, nothing
 * else. The message names the option and the range. */
int parse_int(const char *cmd, const char *opt, const char *text, int64_t lo, int64_t hi, int64_t *out);
/* The same for [0, hi] of uint64_t (seeds). */
int parse_uint(const char *cmd, const char *opt, const char *text, uint64_t hi, uint64_t *out);
/* 1 to max integers in [lo, hi], separated by sep ("4096x1024", "0,-1"); an empty item is
 * an error. *n gets the count. */
int parse_int_list(const char *cmd, const char *opt, const char *text, char sep, int64_t lo, int64_t hi,
                   int64_t *out, int max, int *n);
/* --warp-size: 32 or 64. */
int parse_warp_size(const char *cmd, const char *v, int *out);
/* --sim-budget N: thread-steps (0: the default) or "unlimited". */
int parse_sim_budget(const char *cmd, const char *v, uint64_t *out);
/* auto, cuda, hip or sim (opt names the option in the message). */
/* "a, b or c" of names[0 .. count) into buf (n bytes), which is returned. */
const char *join_names(char *buf, size_t n, const char *const *names, int count);
/* A backend by its name (tilec_backend_name); gpu_only: cuda or hip. */
int parse_backend(const char *cmd, const char *opt, const char *v, bool gpu_only, tilec_backend *out);

/* A dtype by tilec's name (f32) or numpy's (float32, from TILEC_DTYPE_NUMPY_LIST), among
 * the dtypes whose bit (1u << dtype) is in allowed; the message lists them both ways. */
int parse_dtype(const char *cmd, const char *opt, const char *v, unsigned allowed, tilec_dtype *out);
/* numpy's name of a dtype ("float32"); NULL out of range. */
const char *numpy_dtype_name(tilec_dtype d);
#define ALL_DTYPES ((1u << TILEC_DTYPE_COUNT) - 1)

/* ---- files (io.c) ----------------------------------------------------------------------
 * Every file the CLI reads goes through read_input, every file it writes through
 * write_output. */

/* Reads PATH ("-": standard input) until its end or limit + 1 bytes, whichever comes
 * first, into a malloc'd buffer: *len bytes (at most limit). *size is the input's size:
 * *len when it ended within the limit, the file's size for a regular file past it, -1 for
 * anything else past it (a pipe, /dev/zero), of which only limit + 1 bytes were read.
 * NULL with a message on failure. */
char *read_input(const char *path, size_t limit, size_t *len, int64_t *size);
/* "24" or "more than 8": what read_input said of an input's size, for messages. */
const char *size_text(int64_t size, size_t limit, char *buf, size_t n);
/* Writes len bytes to PATH ("-": standard output) safely: a regular file (or the file a
 * symlink leads to) is replaced atomically through a temporary beside it created with
 * O_EXCL | O_NOFOLLOW, keeping its mode; a FIFO, a device or the file standard output or
 * error has open is written directly. Binary bytes (a CUBIN, a tensor) are never written
 * to a terminal: the descriptor opened is asked (isatty) before any byte goes to it, and
 * a terminal is EXIT_USAGE with a message. EXIT_OK, or EXIT_BAD_INPUT with a message. */
int write_output(const char *path, const void *data, size_t len, bool binary);

/* --costs FILE: reads the cost model's constants file (at most TILEC_COSTS_MAX_BYTES) and
 * gives it to ctx (tilec_costs_load); NULL path does nothing. EXIT_OK, else EXIT_BAD_INPUT
 * (EXIT_USAGE for "-") with the message printed. */
int load_costs(tilec_ctx *ctx, const char *path);

/* Set when write_output has reported a failed write of standard output, so that main's
 * final check of standard output (main.c) does not report it again. */
extern bool stdout_reported;
/* fflush(f), for a line the user should see before a long step or before diagnostics on
 * standard error; a failure of standard output is kept for main's final check. */
void flush_output(FILE *f);
/* fprintf for everything the commands print as their result (help, explain's text, run's
 * and reduce's report): when a write of standard output fails, here or in a flush it
 * causes, its errno is kept for main's final check, which says why ("No space left on
 * device"), whatever stdio does with the buffer afterwards. */
int out_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* True when writing OUT would replace the content of the file OTHER names: OUT is OTHER's
 * name, or one existing file with it (the same device and inode: through a symlink or a
 * hard link too), and it is a regular file or does not exist yet. "-" (standard input or
 * output) is never such a file, nor is a device, a FIFO, or the file standard output or
 * error has open: those take one write after another and are never replaced. */
bool overwrites(const char *out, const char *other);

/* A file a command names: its option ("--out", "-o", "FILE"), the parameter for run's
 * "--out NAME=PATH" (else NULL), the path, and the tensor it holds (run: the parameter;
 * reduce: "out" for --out-init and --out), or NULL. */
typedef struct named_file {
    const char *opt, *name, *path, *tensor;
} named_file;

/* The one check of what a command will write, made before anything is read or written:
 * no output may overwrite an input (what was read would be lost: "write the output
 * elsewhere"; an output that goes to standard output or error, "-" or /dev/stdout, when
 * that is an input's file too, and the input's own name always), nor another output (the second write would replace the first), by
 * overwrites(). An output may be the input of its own tensor (run --in V=F --out V=F,
 * reduce --accumulate --out-init F --out F): its new content replaces the content read,
 * an update in place. EXIT_OK, or EXIT_USAGE with a message that names both. */
int check_outputs(const char *cmd, const named_file *outs, int nout, const named_file *ins, int nin);

/* True when PATH is "-" or the file standard output has open (/dev/stdout, `> FILE`):
 * raw bytes go there, so the command's report goes to standard error instead. */
bool writes_stdout(const char *path);

/* True when writing PATH would put bytes on a terminal: "-" or the file standard output
 * has open when that is one, or a character device that is one (/dev/tty, opened to ask).
 * The commands ask before they work, to stop early; write_output asks the descriptor it
 * writes, which is the guarantee. */
bool writes_terminal(const char *path);

/* ---- .npy files (npy.c; read and written through io.c) ----------------------------------
 * numpy's format, versions 1.0, 2.0 and 3.0: the header is parsed strictly (a dict of
 * 'descr', 'fortran_order' and 'shape', nothing else, at most NPY_MAX_HEADER bytes), the
 * data must be exactly what it declares. */
enum { NPY_MAX_HEADER = 65536, NPY_HEADER_ROOM = 512 };

typedef struct npy_header {
    tilec_dtype dtype; /* from descr; TILEC_DTYPE_COUNT when tilec has no such dtype */
    char descr[32];    /* as written: "<f4" */
    bool fortran_order;
    int rank;
    int64_t shape[TILEC_MAX_RANK];
    size_t data_offset; /* where the elements start */
} npy_header;

/* PATH ends in ".npy": --in reads it as .npy, --out writes one. */
bool is_npy_path(const char *path);
/* The descr tilec writes for dt ("<f4"; bf16: its 16-bit patterns as "<u2"). */
const char *npy_descr(tilec_dtype dt);
/* Parses the preamble and header at buf[0 .. len); EXIT_OK, or EXIT_BAD_INPUT with a
 * message naming path. */
int npy_parse(const char *path, const unsigned char *buf, size_t len, npy_header *h);
/* The order and byte order of H's elements are what tilec reads (C order, little-endian),
 * whatever the dtype: EXIT_OK, or EXIT_BAD_INPUT with a message that says how to save
 * the array instead. */
int npy_layout(const char *opt, const char *path, const npy_header *h);
/* EXIT_OK when the header is dt (bf16 also from uint16 patterns) and exactly shape, in C
 * order and little-endian; otherwise a message that says what the file holds and what
 * `what` (the input, A) is, and EXIT_BAD_INPUT. */
int npy_expect(const char *opt, const char *path, const npy_header *h, tilec_dtype dt, const int64_t *shape, int rank,
               const char *what);
/* The header of a .npy (version 1.0) of dt and shape into out (n bytes, NPY_HEADER_ROOM
 * is enough): its length, a multiple of 64; 0 when it does not fit. */
size_t npy_format_header(char *out, size_t n, tilec_dtype dt, const int64_t *shape, int rank);

/* Opens PATH and reads its preamble and header into h, and no byte more: *fd is left at
 * the data. EXIT_OK, or EXIT_BAD_INPUT with a message (the file is closed then). */
int npy_open(const char *opt, const char *path, npy_header *h, int *fd);
/* Reads exactly bytes of data from fd (npy_open's), which must end there, and closes it;
 * NULL with a message that names dims (what the data should be) otherwise. */
unsigned char *npy_read_data(const char *opt, const char *path, int fd, size_t bytes, const char *dims);
/* Reads PATH, a .npy that must hold exactly dt and shape (bytes of data): npy_open,
 * npy_expect and npy_read_data. NULL with a message. */
unsigned char *read_npy_tensor(const char *opt, const char *path, tilec_dtype dt, const int64_t *shape, int rank,
                               size_t bytes, const char *what, const char *dims);
/* Writes a tensor of dt and shape to PATH through write_output: a .npy when PATH ends in
 * ".npy", else the raw bytes. */
int write_tensor(const char *path, tilec_dtype dt, const int64_t *shape, int rank, const void *data, size_t len);

/* A .tile source through read_input, bounded by TILEC_MAX_SOURCE; NULL with a message. */
char *read_source(const char *path, size_t *len);
/* Parses FILE (and verifies it for warp_size when verify is set); prints diagnostics. */
tilec_program *load(tilec_ctx *ctx, const char *path, bool verify, int warp_size);

/* Prints the warnings a call that succeeded left in ctx (TILEC_DUMP_SOURCE that could not
 * be written, say): a failed call prints all of its diagnostics instead. */
void print_warnings(const tilec_ctx *ctx);

/* The elements of a dense tensor of these extents (>= 0), or -1 when the extents other than
 * 0 multiply to more than TILEC_MAX_ELEMENTS (2^48): checked before anything is
 * allocated, so no product overflows. */
int64_t tensor_elements(const int64_t *shape, int rank);
/* n random elements of dtype dt from a seeded stream that is the same everywhere: floats
 * uniform in [-1, 1), signed integers in [-100, 100], u32 in [0, 100]. With specials, one
 * element in 32 (the same data otherwise) is a special value instead: for floats NaN,
 * +inf, -inf, +0, -0, the smallest subnormal or minus the largest; for integers the
 * dtype's least and greatest value, 0 or -1. */
void fill_random(tilec_dtype dt, unsigned char *p, int64_t n, uint64_t *seed, bool specials);

int cmd_check(int argc, char **argv);
int cmd_fmt(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_emit(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_reduce(int argc, char **argv);
int cmd_fused(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

#endif
