/*
 * cache.h — the disk cache of compiled kernels, shared by every process of a user.
 *
 * An entry is named by the SHA-256 of everything that changes the binary (the caller's
 * key material: schema, tilec version, backend, exact target, compiler version, options,
 * source). Builds of one key are serialised with a lock file, across threads and
 * processes, so a key is compiled once (a lock held too long is given up on: single
 * flight saves work, it is not needed for a right answer); entries are written to a
 * temporary file, synced and renamed, so nobody reads half an entry; a header with the
 * payload's size and SHA-256 turns any damage into a miss.
 *
 * What is on disk is run on the GPU, so the directory and each entry are trusted only if
 * they belong to the effective user (or root) and nobody else may write them; the
 * directory is opened once, checked on its descriptor, and everything after is relative
 * to that descriptor.
 */
#ifndef TILEC_CACHE_H
#define TILEC_CACHE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void rt_sha256(const void *data, size_t n, uint8_t out[32]);
/* The same as 64 lowercase hex digits and a NUL. */
void rt_sha256_hex(const void *data, size_t n, char out[65]);

typedef enum cache_mode { CACHE_OFF, CACHE_RO, CACHE_RW } cache_mode;

enum {
    CACHE_NOTES = 4,                    /* at most one each: TILEC_CACHE, _MAX_BYTES, _LOCK_WAIT_MS, the directory */
    CACHE_NOTE_BYTES = PATH_MAX + 512,  /* a note names the directory */
};

typedef struct rt_cache {
    cache_mode mode;       /* what is done: OFF when asked, or when the directory cannot be used */
    char dir[PATH_MAX];    /* the directory's path, for messages ("" when there is none) */
    int dirfd;             /* the directory, opened and checked once (when has_dir) */
    bool has_dir;
    uint64_t cap;          /* bytes of entries kept; the least recently used go first */
    uint64_t lock_wait_ms; /* how long to wait for another builder of the same key */
    /* what the settings or the directory made the cache do that was not asked for: a
     * note each, for the call that opens the runtime (and TILEC_JIT_LOG) */
    int nnotes;
    char notes[CACHE_NOTES][CACHE_NOTE_BYTES];
    char store_error[CACHE_NOTE_BYTES]; /* why the last entry could not be stored ("" when none failed) */
    char lock_note[CACHE_NOTE_BYTES];   /* the last lock that was given up on ("" when none) */
    /* counters, for logs and tests */
    int hits, misses, builds, rejected, store_failures, lock_timeouts, orphans_removed;
} rt_cache;

/* Reads TILEC_CACHE (rw, ro, off; unset or empty: rw), TILEC_CACHE_DIR (else
 * $XDG_CACHE_HOME/tilec, else ~/.cache/tilec), TILEC_CACHE_MAX_BYTES (default 1 GiB) and
 * TILEC_CACHE_LOCK_WAIT_MS (default 5000); in rw mode creates the directory 0700; opens
 * and checks it. A value it cannot read, or a directory it cannot use or trust, is a
 * note in c->notes; the cache then does less, never more, than asked. cache_close
 * releases what it holds. */
void cache_open(rt_cache *c);
void cache_close(rt_cache *c);

/* Builds a payload: returns malloc'd bytes in *data / *size, or false. */
typedef bool (*cache_build_fn)(void *arg, void **data, size_t *size);

/* The payload for key: from the cache, or built (and stored, in rw mode). kind tags the
 * payload (1 CUBIN, 2 AMD code object). *data is malloc'd. False when building failed. */
bool cache_get(rt_cache *c, const void *key, size_t key_len, uint32_t kind, cache_build_fn build, void *arg,
               void **data, size_t *size);

/* A small file of the directory that is not an entry (the cost model's constants:
 * costs.c), by name: 1 read whole into *data (malloc'd, NUL-terminated, *n bytes), 0 when
 * there is none (or the cache has no directory), -1 refused with why: not a regular file,
 * not the user's own or writable by others, longer than max bytes, unreadable. */
int cache_read_file(rt_cache *c, const char *name, size_t max, char **data, size_t *n, char *why, size_t whyn);
/* Writes such a file through a temporary, synced, then renamed into place (a reader sees
 * the old file or the new one, never half of one): false with why, and nothing replaced,
 * when it cannot (no directory, a read-only cache, a full disk). */
bool cache_write_file(rt_cache *c, const char *name, const void *data, size_t n, char *why, size_t whyn);

#endif
