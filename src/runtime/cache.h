/*
 * cache.h — the disk cache of compiled kernels, shared by every process of a user.
 *
 * An entry is named by the SHA-256 of everything that changes the binary (the caller's
 * key material: schema, tilec version, backend, exact target, compiler version, options,
 * source). Builds of one key are serialised with a lock file, across threads and
 * processes, so a key is compiled once; entries are written to a temporary file, synced
 * and renamed, so nobody reads half an entry; a header with the payload's size and
 * SHA-256 turns any damage into a miss.
 */
#ifndef TILEC_CACHE_H
#define TILEC_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void rt_sha256(const void *data, size_t n, uint8_t out[32]);

typedef enum cache_mode { CACHE_OFF, CACHE_RO, CACHE_RW } cache_mode;

typedef struct rt_cache {
    cache_mode mode;
    char dir[1024];
    uint64_t cap;     /* bytes of entries kept; the least recently used go first */
    bool unwritable;  /* the directory could not be made or written: memory only */
    char why[1400];   /* why, for the one warning */
    char store_error[1400]; /* why the last entry could not be stored ("" when none failed) */
    /* counters, for logs and tests */
    int hits, misses, builds, rejected, store_failures;
} rt_cache;

/* Reads TILEC_CACHE (off, ro, rw; default rw), TILEC_CACHE_DIR (else
 * $XDG_CACHE_HOME/tilec, else ~/.cache/tilec) and TILEC_CACHE_MAX_BYTES (default 1 GiB);
 * creates the directory 0700. */
void cache_open(rt_cache *c);

/* Builds a payload: returns malloc'd bytes in *data / *size, or false. */
typedef bool (*cache_build_fn)(void *arg, void **data, size_t *size);

/* The payload for key: from the cache, or built (and stored, in rw mode). kind tags the
 * payload (1 CUBIN, 2 AMD code object). *data is malloc'd. False when building failed. */
bool cache_get(rt_cache *c, const void *key, size_t key_len, uint32_t kind, cache_build_fn build, void *arg,
               void **data, size_t *size);

#endif
