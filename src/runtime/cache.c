/*
 * cache.c — the disk cache (see cache.h).
 *
 * Files in the directory: <sha256>.tcb (entries), <sha256>.lock (held while one is
 * built), temporary <sha256>.tmp.<pid>.<n> files (renamed into place). Entries and
 * locks are opened with O_NOFOLLOW, so a symlink planted in the directory is never
 * followed; anything that is not a regular file of the right shape is a miss.
 *
 * Entry layout: "TILECBIN" | u32 format (1) | u32 kind | u64 payload bytes |
 * 32-byte SHA-256 of the payload | payload. Little-endian.
 */
#define _GNU_SOURCE /* O_NOFOLLOW, flock */
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum { HEADER = 8 + 4 + 4 + 8 + 32, FORMAT = 1 };

static bool mkdirs(const char *path) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
            *p = '/';
        }
    return mkdir(tmp, 0700) == 0 || errno == EEXIST;
}

void cache_open(rt_cache *c) {
    memset(c, 0, sizeof *c);
    const char *mode = getenv("TILEC_CACHE");
    c->mode = !mode || !strcmp(mode, "rw") || !*mode ? CACHE_RW : !strcmp(mode, "ro") ? CACHE_RO : CACHE_OFF;
    const char *cap = getenv("TILEC_CACHE_MAX_BYTES");
    c->cap = cap && *cap ? strtoull(cap, NULL, 10) : (1ull << 30);
    const char *dir = getenv("TILEC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (dir && *dir) snprintf(c->dir, sizeof c->dir, "%s", dir);
    else if (xdg && *xdg) snprintf(c->dir, sizeof c->dir, "%s/tilec", xdg);
    else if (home && *home) snprintf(c->dir, sizeof c->dir, "%s/.cache/tilec", home);
    else c->mode = CACHE_OFF;
    if (c->mode == CACHE_OFF) return;
    struct stat st;
    if (c->mode == CACHE_RW && (!mkdirs(c->dir) || access(c->dir, W_OK) != 0)) {
        c->unwritable = true;
        snprintf(c->why, sizeof c->why, "the kernel cache %s cannot be written (%s): compiled kernels are kept in "
                 "memory only", c->dir, strerror(errno ? errno : EACCES));
        c->mode = stat(c->dir, &st) == 0 && S_ISDIR(st.st_mode) ? CACHE_RO : CACHE_OFF;
    }
}

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

static void entry_path(const rt_cache *c, const char *hex, const char *ext, char *out, size_t n) {
    snprintf(out, n, "%s/%s.%s", c->dir, hex, ext);
}

/* Reads a whole regular file without following a symlink; NULL when it is not one. */
static uint8_t *read_entry(const char *path, size_t *n) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= HEADER && st.st_size < (1ll << 31)) {
        buf = malloc((size_t)st.st_size);
        size_t got = 0;
        while (buf && got < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
            if (r <= 0) { free(buf); buf = NULL; break; }
            got += (size_t)r;
        }
        *n = got;
    }
    close(fd);
    return buf;
}

/* The payload of a valid entry of this kind, or NULL (a miss). */
static void *valid_payload(const uint8_t *e, size_t n, uint32_t kind, size_t *size) {
    if (n < HEADER || memcmp(e, "TILECBIN", 8) != 0 || get32(e + 8) != FORMAT || get32(e + 12) != kind) return NULL;
    uint64_t len = get64(e + 16);
    if (len != n - HEADER) return NULL; /* truncated or padded */
    uint8_t sum[32];
    rt_sha256(e + HEADER, (size_t)len, sum);
    if (memcmp(sum, e + 24, 32) != 0) return NULL; /* tampered or damaged */
    char *p = malloc((size_t)len + 1); /* NUL-terminated too, for text payloads */
    if (p) {
        memcpy(p, e + HEADER, (size_t)len);
        p[len] = '\0';
    }
    *size = (size_t)len;
    return p;
}

static bool lookup(rt_cache *c, const char *path, uint32_t kind, void **data, size_t *size) {
    size_t n;
    uint8_t *e = read_entry(path, &n);
    if (!e) return false;
    *data = valid_payload(e, n, kind, size);
    free(e);
    if (!*data) {
        c->rejected++;
        if (c->mode == CACHE_RW) unlink(path); /* replaced below */
        return false;
    }
    utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW); /* recently used */
    return true;
}

static bool write_all(int fd, const void *p, size_t n) {
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w <= 0) return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

/* A write that failed (a full disk, a quota): the kernel is still returned, from memory. */
static void store_failed(rt_cache *c, int err) {
    __atomic_add_fetch(&c->store_failures, 1, __ATOMIC_RELAXED);
    snprintf(c->store_error, sizeof c->store_error, "a kernel could not be stored in the cache %s (%s): it is kept in memory",
             c->dir, strerror(err ? err : EIO));
}

/* Writes an entry through a temporary file, synced, then renamed into place. */
static void store(rt_cache *c, const char *hex, const char *path, uint32_t kind, const void *data, size_t size) {
    static unsigned serial; /* distinguishes temporaries of one process; races only make names differ */
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp.%ld.%u", c->dir, hex, (long)getpid(), __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        store_failed(c, errno);
        return;
    }
    uint8_t h[HEADER];
    memcpy(h, "TILECBIN", 8);
    put32(h + 8, FORMAT);
    put32(h + 12, kind);
    put64(h + 16, size);
    rt_sha256(data, size, h + 24);
    bool ok = write_all(fd, h, HEADER) && write_all(fd, data, size) && fsync(fd) == 0;
    int err = errno;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) != 0) ok = false, err = errno;
    if (!ok) {
        unlink(tmp);
        store_failed(c, err);
    }
}

typedef struct file_age {
    char name[128];
    struct timespec mtime; /* last written or hit */
    off_t size;
} file_age;

static int oldest_first(const void *a, const void *b) {
    const file_age *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) return (x->mtime.tv_sec > y->mtime.tv_sec) - (x->mtime.tv_sec < y->mtime.tv_sec);
    return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

/* Removes the least recently used entries while the cache is over its cap. */
static void evict(rt_cache *c) {
    DIR *d = opendir(c->dir);
    if (!d) return;
    file_age *all = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || len >= sizeof all->name || strcmp(e->d_name + len - 4, ".tcb") != 0) continue;
        struct stat st;
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", c->dir, e->d_name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (n == cap) {
            file_age *bigger = realloc(all, (cap = cap ? 2 * cap : 64) * sizeof *all);
            if (!bigger) break;
            all = bigger;
        }
        snprintf(all[n].name, sizeof all[n].name, "%s", e->d_name);
        all[n].mtime = st.st_mtim;
        all[n++].size = st.st_size;
        total += (uint64_t)st.st_size;
    }
    closedir(d);
    if (n > 1) qsort(all, n, sizeof *all, oldest_first); /* qsort may not be given NULL, even for 0 */
    for (size_t i = 0; i < n && total > c->cap; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", c->dir, all[i].name);
        if (unlink(path) == 0) total -= (uint64_t)all[i].size;
    }
    free(all);
}

bool cache_get(rt_cache *c, const void *key, size_t key_len, uint32_t kind, cache_build_fn build, void *arg,
               void **data, size_t *size) {
    *data = NULL;
    if (c->mode == CACHE_OFF) {
        c->builds++;
        return build(arg, data, size);
    }
    uint8_t sum[32];
    char hex[65], path[1200], lock[1200];
    rt_sha256(key, key_len, sum);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", sum[i]);
    entry_path(c, hex, "tcb", path, sizeof path);
    if (lookup(c, path, kind, data, size)) {
        c->hits++;
        return true;
    }
    if (c->mode == CACHE_RO) {
        c->misses++;
        c->builds++;
        return build(arg, data, size);
    }
    /* one builder per key, across threads and processes: the others wait, then read */
    entry_path(c, hex, "lock", lock, sizeof lock);
    int fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) flock(fd, LOCK_EX);
    bool ok;
    if (lookup(c, path, kind, data, size)) {
        c->hits++;
        ok = true;
    } else {
        c->misses++;
        c->builds++;
        ok = build(arg, data, size);
        if (ok) {
            store(c, hex, path, kind, *data, *size);
            evict(c);
        }
    }
    if (fd >= 0) {
        flock(fd, LOCK_UN);
        close(fd);
    }
    return ok;
}
