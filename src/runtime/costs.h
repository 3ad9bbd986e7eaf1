/*
 * costs.h — the cost model's constants files (costs.c) and their measurement
 * (calibrate.c): docs/dispatch.md#calibrated-constants.
 */
#ifndef TILEC_COSTS_H
#define TILEC_COSTS_H

#include "runtime.h"

enum { RT_COSTS_MAX_BYTES = TILEC_COSTS_MAX_BYTES }; /* a file is about 800 bytes: a longer one is not one */

/* A constants file's content: the constants and the device they were measured on. */
typedef struct rt_costs_file {
    tilec_costs c;
    char device[128]; /* the driver's name of the device */
    char arch[24];
    int warp_size, sms;
} rt_costs_file;

/* Why a file was refused: at line and column (0: the whole file), and what is wrong. */
typedef struct rt_costs_error {
    int line, col;
    char message[300];
} rt_costs_error;

/* The file's text for f, its checksum line last. */
void rt_costs_format(ir_str *s, const rt_costs_file *f);
/* Reads a file strictly: false with e filled when it is not one rt_costs_format wrote,
 * byte for byte (its checksum), or its values are not valid. */
bool rt_costs_parse(const char *text, size_t len, rt_costs_file *out, rt_costs_error *e);
/* "FILE (measured on DEVICE, ARCH, N multiprocessors)", for explain. */
void rt_costs_describe(const rt_costs_file *f, const char *file, char *out, size_t n);
/* The runtime's device as a file names it (f's constants zero): the driver's name in
 * printable ASCII ("unnamed device" without one), the arch, the warp size and the
 * multiprocessor count (0 when the driver did not say). calibrate writes it, and a
 * runtime's open reads only a file of exactly it. */
void rt_costs_identity(const rt *r, rt_costs_file *f);
/* The name of a device's file in the cache directory: costs-ARCH-HASH.txt, HASH of f's
 * device, arch, multiprocessors and warp size. */
void rt_costs_file_name(const rt_costs_file *f, char *out, size_t n);
/* At a GPU runtime's open: the device's file, if there is a valid one for this very device,
 * becomes r->target's constants; one that is refused is a warning, and the defaults stay. */
void rt_costs_open(rt *r);

/* The micro-kernels' CUDA / HIP source (calibrate.c), appended to s. */
void rt_calibrate_source(ir_str *s);

#endif
