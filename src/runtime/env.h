/*
 * env.h — settings read from the environment. Every number the runtime reads from a
 * variable goes through rt_parse_u64, so "1G", "12abc", "-1" or a value past 2^64 is
 * either read exactly or refused, never cut short or wrapped.
 */
#ifndef TILEC_ENV_H
#define TILEC_ENV_H

#include <stdbool.h>
#include <stdint.h>

/* A suffix a number may carry, and what it multiplies by. A table ends with {NULL, 0}. */
typedef struct rt_unit {
    const char *name;
    uint64_t scale;
} rt_unit;

/* Sizes in bytes: K, M, G, T and KiB, MiB, GiB, TiB, all powers of 1024 (so "1G" is the
 * 1 GiB of the cache's default cap). */
extern const rt_unit rt_byte_units[];

/* Reads all of text as a decimal integer (digits only: no sign, space or 0x), optionally
 * followed by exactly one suffix of units (NULL: none allowed), into *out. False, with
 * *out untouched, when text is NULL or empty, holds anything else, or the value (after
 * the suffix) is above max or past 2^64 - 1. */
bool rt_parse_u64(const char *text, const rt_unit *units, uint64_t max, uint64_t *out);

#endif
