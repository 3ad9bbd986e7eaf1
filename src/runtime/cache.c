/*
 * cache.c — the disk cache (see cache.h).
 *
 * Files in the directory: <sha256>.tcb (entries), <sha256>.lock (held while one is
 * built), temporary <sha256>.tmp.<pid>.<n> files (locked by their writer, renamed into
 * place). Eviction removes files of these names only (sha256: 64 lowercase hex digits):
 * anything else in the directory, a user's notes.tcb included, is left alone. The
 * directory's path loses trailing slashes and "/." first, so that its last component is
 * the directory itself; a path with a ".." component is not used (memory only: it would
 * resolve through a symbolic link before it). It is opened once (O_DIRECTORY | O_NOFOLLOW) and checked with
 * fstat on that descriptor; every file after is opened with openat relative to it, with
 * O_NOFOLLOW, and checked with fstat on its own descriptor, so nothing is checked under
 * one name and used under another. Anything that is not a regular file of the user (or
 * root) that only they may write, of the right shape, is a miss.
 *
 * Parents of the directory are not checked: once the directory's descriptor is checked
 * a rename above it changes nothing, and whoever can rename in a parent can at most put
 * another directory at the path — which is used only if it too is the user's own and
 * private, holding only entries that are.
 *
 * Entry layout: "TILECBIN" | u32 format (1) | u32 kind | u64 payload bytes |
 * 32-byte SHA-256 of the payload | payload. Little-endian.
 */
#define _GNU_SOURCE /* O_NOFOLLOW, flock, AT_EACCESS */
#include "cache.h"

#include "env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum {
    HEADER = 8 + 4 + 4 + 8 + 32,
    FORMAT = 1,
    ORPHAN_AGE_S = 600, /* a temporary this old, that no writer holds, was left by a killed process */
};
#define DEFAULT_CAP (1ull << 30)
#define DEFAULT_LOCK_WAIT_MS 5000ull
#define MAX_LOCK_WAIT_MS 3600000ull /* an hour */

static const char memory_only[] = "compiled kernels are kept in memory only";

static void note(rt_cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(rt_cache *c, const char *fmt, ...) {
    if (c->nnotes == CACHE_NOTES) return; /* one source gives one note: cannot happen */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notes[c->nnotes++], CACHE_NOTE_BYTES, fmt, ap);
    va_end(ap);
}

static bool mkdirs(const char *path) {
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path); /* the caller made sure it fits */
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
            *p = '/';
        }
    return mkdir(tmp, 0700) == 0 || errno == EEXIST;
}

/* Why a file or directory of the cache may not be trusted, or NULL: it must belong to
 * the effective user or root and be writable by nobody else (as ssh asks of ~/.ssh). */
static const char *untrusted(const struct stat *st) {
    if (st->st_uid != geteuid() && st->st_uid != 0) return "belongs to another user";
    if (st->st_mode & (S_IWGRP | S_IWOTH)) return "can be written by other users";
    return NULL;
}

/* TILEC_CACHE, TILEC_CACHE_MAX_BYTES and TILEC_CACHE_LOCK_WAIT_MS; unset or empty is the
 * default, anything else that is not read exactly is a note. */
static void read_settings(rt_cache *c) {
    c->mode = CACHE_RW;
    c->cap = DEFAULT_CAP;
    c->lock_wait_ms = DEFAULT_LOCK_WAIT_MS;
    const char *mode = getenv("TILEC_CACHE");
    if (mode && *mode && strcmp(mode, "rw") != 0) {
        if (strcmp(mode, "ro") == 0) c->mode = CACHE_RO;
        else if (strcmp(mode, "off") == 0) c->mode = CACHE_OFF;
        else { /* a value meant to restrict the cache that cannot be read: do neither */
            c->mode = CACHE_OFF;
            note(c, "TILEC_CACHE=%.200s is not one of rw, ro, off: the disk cache is off and %s", mode, memory_only);
        }
    }
    const char *cap = getenv("TILEC_CACHE_MAX_BYTES");
    if (cap && *cap && !rt_parse_u64(cap, rt_byte_units, UINT64_MAX, &c->cap))
        note(c, "TILEC_CACHE_MAX_BYTES=%.200s is not a size: give a whole number of bytes, optionally followed by K, M, "
             "G or T (or KiB, MiB, GiB, TiB; powers of 1024), at most 2^64 - 1; the default 1 GiB is used", cap);
    const char *wait = getenv("TILEC_CACHE_LOCK_WAIT_MS");
    if (wait && *wait && !rt_parse_u64(wait, NULL, MAX_LOCK_WAIT_MS, &c->lock_wait_ms))
        note(c, "TILEC_CACHE_LOCK_WAIT_MS=%.200s is not a number of milliseconds from 0 to %llu: the default %llu is used",
             wait, MAX_LOCK_WAIT_MS, DEFAULT_LOCK_WAIT_MS);
}

/* Opens c->dir and decides how far to trust it; memory only (OFF) with a note where it
 * cannot be used, read only (RO) with a note where it cannot be written. */
static void open_dir(rt_cache *c) {
    if (c->mode == CACHE_RW && !mkdirs(c->dir)) {
        note(c, "the kernel cache %s cannot be created (%s): %s", c->dir, strerror(errno), memory_only);
        c->mode = CACHE_OFF;
        return;
    }
    int fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        int err = errno;
        if (err == ENOTDIR && lstat(c->dir, &st) == 0 && S_ISLNK(st.st_mode))
            note(c, "the kernel cache %s is a symbolic link, which tilec does not follow: %s; set TILEC_CACHE_DIR to the "
                 "directory it names", c->dir, memory_only);
        else if (err == ENOTDIR && lstat(c->dir, &st) == 0)
            note(c, "the kernel cache %s is not a directory: %s; set TILEC_CACHE_DIR to a directory", c->dir, memory_only);
        else
            note(c, "the kernel cache %s cannot be opened (%s): %s", c->dir, strerror(err), memory_only);
        c->mode = CACHE_OFF;
        return;
    }
    if (fstat(fd, &st) != 0) {
        note(c, "the kernel cache %s cannot be examined (%s): %s", c->dir, strerror(errno), memory_only);
        close(fd);
        c->mode = CACHE_OFF;
        return;
    }
    const char *why = untrusted(&st);
    if (why) {
        note(c, "the kernel cache %s %s (owner uid %ld, mode %04o), so its entries could have been planted: %s; make it "
             "yours and private (chown, chmod 700) or set TILEC_CACHE_DIR to a directory that is",
             c->dir, why, (long)st.st_uid, (unsigned)(st.st_mode & 07777), memory_only);
        close(fd);
        c->mode = CACHE_OFF;
        return;
    }
    c->dirfd = fd;
    c->has_dir = true;
    if (c->mode == CACHE_RW && faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
        note(c, "the kernel cache %s cannot be written (%s): new %s", c->dir, strerror(errno), memory_only);
        c->mode = CACHE_RO; /* what is there (the user's or root's) is still read */
    }
}

/* Drops trailing slashes and trailing "/." components (keeping a lone "/" or "."): the
 * path's last component is then the directory itself, which O_NOFOLLOW refuses when it is
 * a symbolic link. "/link/" or "/link/." would name the directory the link points to and
 * resolve through it, so O_NOFOLLOW, which looks at the last component only, would not
 * see it. */
static void normalise_dir(char *dir) {
    size_t n = strlen(dir);
    for (;;) {
        if (n > 1 && dir[n - 1] == '/') n--;
        else if (n > 2 && dir[n - 1] == '.' && dir[n - 2] == '/') n -= 2;
        else if (n == 2 && dir[0] == '/' && dir[1] == '.') n = 1;
        else break;
        dir[n] = '\0';
    }
}

/* Whether a component of the path is "..": "/link/x/.." resolves through the symbolic
 * link /link to its target's parent (and the cache's mkdir would create x there), which
 * O_NOFOLLOW, looking at the last component only, would not see. */
static bool has_dotdot(const char *dir) {
    for (const char *p = dir; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') return true;
        p += n;
        p += strspn(p, "/");
    }
    return false;
}

void cache_open(rt_cache *c) {
    memset(c, 0, sizeof *c);
    c->dirfd = -1;
    read_settings(c);
    const char *dir = getenv("TILEC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (dir && *dir) n = snprintf(c->dir, sizeof c->dir, "%s", dir);
    else if (xdg && *xdg) n = snprintf(c->dir, sizeof c->dir, "%s/tilec", xdg);
    else if (home && *home) n = snprintf(c->dir, sizeof c->dir, "%s/.cache/tilec", home);
    else {
        c->mode = CACHE_OFF; /* no home: nowhere to keep it */
        return;
    }
    if (c->mode == CACHE_OFF) return;
    if ((size_t)n >= sizeof c->dir) { /* never a cut path: that is another directory */
        note(c, "the kernel cache directory %.200s... is %d characters long, more than a path may have (%d): %s; set "
             "TILEC_CACHE_DIR to a shorter path", c->dir, n, PATH_MAX - 1, memory_only);
        c->dir[0] = '\0';
        c->mode = CACHE_OFF;
        return;
    }
    normalise_dir(c->dir);
    if (has_dotdot(c->dir)) {
        const char *from = dir && *dir ? "TILEC_CACHE_DIR" : xdg && *xdg ? "XDG_CACHE_HOME" : "HOME";
        note(c, "the kernel cache %.200s has a '..' component, which tilec does not follow (it would resolve through "
             "any symbolic link before it): %s; set %s to the directory's path without '..' (realpath prints it)",
             c->dir, memory_only, from);
        c->mode = CACHE_OFF;
        return;
    }
    open_dir(c);
}

void cache_close(rt_cache *c) {
    if (c->has_dir) close(c->dirfd);
    c->has_dir = false;
    c->dirfd = -1;
}

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

/* Opens a file of the cache directory without following a symlink (and without
 * blocking on a FIFO). */
static int open_in(const rt_cache *c, const char *name, int flags) {
    return openat(c->dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
}

typedef enum found { FOUND, ABSENT, BAD, NOMEM } found;

/* Reads the entry open on fd if it is a regular file that may be trusted, of a size an
 * entry can have: BAD when it is not one or cannot be read whole. */
static found read_entry(int fd, uint8_t **out, size_t *n) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || untrusted(&st) || st.st_size < HEADER || st.st_size >= (1ll << 31))
        return BAD;
    uint8_t *buf = malloc((size_t)st.st_size);
    if (!buf) return NOMEM;
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0) { free(buf); return BAD; }
        got += (size_t)r;
    }
    *out = buf;
    *n = got;
    return FOUND;
}

/* The payload of a valid entry of this kind in *payload: BAD when e is not one. */
static found valid_payload(const uint8_t *e, size_t n, uint32_t kind, void **payload, size_t *size) {
    if (n < HEADER || memcmp(e, "TILECBIN", 8) != 0 || get32(e + 8) != FORMAT || get32(e + 12) != kind) return BAD;
    uint64_t len = get64(e + 16);
    if (len != n - HEADER) return BAD; /* truncated or padded */
    uint8_t sum[32];
    rt_sha256(e + HEADER, (size_t)len, sum);
    if (memcmp(sum, e + 24, 32) != 0) return BAD; /* tampered or damaged */
    char *p = malloc((size_t)len + 1); /* NUL-terminated too, for text payloads */
    if (!p) return NOMEM;
    memcpy(p, e + HEADER, (size_t)len);
    p[len] = '\0';
    *payload = p;
    *size = (size_t)len;
    return FOUND;
}

static bool lookup(rt_cache *c, const char *name, uint32_t kind, void **data, size_t *size) {
    int fd = open_in(c, name, O_RDONLY);
    if (fd < 0) return false; /* none (or a symlink, which is never followed) */
    uint8_t *e = NULL;
    size_t n = 0;
    found f = read_entry(fd, &e, &n);
    if (f == FOUND) {
        f = valid_payload(e, n, kind, data, size);
        free(e);
    }
    if (f == FOUND) futimens(fd, NULL); /* recently used */
    close(fd);
    if (f == BAD) {
        c->rejected++;
        if (c->mode == CACHE_RW) unlinkat(c->dirfd, name, 0); /* replaced below */
    }
    return f == FOUND;
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

static bool is_hex64(const char *s) {
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

/* Whether s is "<pid>.<n>", the tail of a temporary's name after "<sha256>.tmp." (store). */
static bool is_tmp_tail(const char *s) {
    size_t pid = strspn(s, "0123456789");
    if (!pid || s[pid] != '.') return false;
    size_t serial = strspn(s + pid + 1, "0123456789");
    return serial && !s[pid + 1 + serial];
}

/* Writes head (hn bytes) then body (bn) to file `name` of the directory through a
 * temporary ("<hex>.tmp.<pid>.<n>", hex the SHA-256 that names what is stored), synced,
 * then renamed into place: a reader sees the old file or the new one. The writer holds a
 * lock on its temporary until it is renamed, so eviction can tell a live writer's file
 * from one a killed process left, and removes the latter. False with errno's value in
 * *err when it could not. */
static bool write_replace(rt_cache *c, const char *hex, const char *name, const void *head, size_t hn, const void *body,
                          size_t bn, int *err) {
    static unsigned serial; /* distinguishes temporaries of one process; races only make names differ */
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", hex, (long)getpid(), __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
    int fd = open_in(c, tmp, O_WRONLY | O_CREAT | O_EXCL);
    if (fd < 0) {
        *err = errno;
        return false;
    }
    flock(fd, LOCK_EX); /* a new file: nobody else holds it, except an evictor for a moment */
    bool ok = write_all(fd, head, hn) && write_all(fd, body, bn) && fsync(fd) == 0;
    *err = errno;
    if (ok && renameat(c->dirfd, tmp, c->dirfd, name) != 0) ok = false, *err = errno;
    if (!ok) unlinkat(c->dirfd, tmp, 0);
    close(fd); /* after the rename, so the lock lasts as long as the name; fsync has reported any write error */
    if (!ok && !*err) *err = EIO;
    return ok;
}

/* Writes an entry (its header, then the payload). */
static void store(rt_cache *c, const char *hex, const char *name, uint32_t kind, const void *data, size_t size) {
    uint8_t h[HEADER];
    memcpy(h, "TILECBIN", 8);
    put32(h + 8, FORMAT);
    put32(h + 12, kind);
    put64(h + 16, size);
    rt_sha256(data, size, h + 24);
    int err;
    if (!write_replace(c, hex, name, h, HEADER, data, size, &err)) store_failed(c, err);
}

/* Removes a temporary that is older than ORPHAN_AGE_S and that no writer holds (its
 * writer was killed; a stopped one still holds its lock). */
static void remove_orphan(rt_cache *c, int dfd, const char *name, const struct stat *st, time_t now) {
    if (now - st->st_mtim.tv_sec < ORPHAN_AGE_S) return;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;
    struct stat again;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &again) == 0 && again.st_ino == st->st_ino &&
        again.st_dev == st->st_dev && unlinkat(dfd, name, 0) == 0)
        c->orphans_removed++;
    close(fd); /* and the lock with it */
}

typedef struct file_age {
    char name[69]; /* "<sha256>.tcb": 64 + 4 characters */
    struct timespec mtime; /* last written or hit */
    off_t size;
} file_age;

static int oldest_first(const void *a, const void *b) {
    const file_age *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) return (x->mtime.tv_sec > y->mtime.tv_sec) - (x->mtime.tv_sec < y->mtime.tv_sec);
    return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

/* Removes orphaned temporaries and the locks of entries that are gone (both once older
 * than ORPHAN_AGE_S and held by nobody), then the least recently used entries while the
 * cache is over its cap. */
static void evict(rt_cache *c) {
    int dfd = openat(c->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* an offset of its own for readdir */
    if (dfd < 0) return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    time_t now = time(NULL);
    file_age *all = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        bool tmp = len > 69 && is_hex64(e->d_name) && strncmp(e->d_name + 64, ".tmp.", 5) == 0 && is_tmp_tail(e->d_name + 69);
        /* only names tilec writes: another file that ends in .tcb (a user's own) is not an entry */
        bool entry = len == 68 && is_hex64(e->d_name) && strcmp(e->d_name + 64, ".tcb") == 0;
        bool lock = len == 69 && is_hex64(e->d_name) && strcmp(e->d_name + 64, ".lock") == 0;
        if (!tmp && !entry && !lock) continue;
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        if (tmp) {
            remove_orphan(c, dfd, e->d_name, &st, now);
            continue;
        }
        if (lock) { /* the lock of an entry that is gone (evicted, or never stored), that nobody holds */
            char tcb[72];
            struct stat est;
            snprintf(tcb, sizeof tcb, "%.64s.tcb", e->d_name);
            if (fstatat(dfd, tcb, &est, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
                remove_orphan(c, dfd, e->d_name, &st, now);
            continue;
        }
        if (n == cap) {
            file_age *bigger = realloc(all, (cap = cap ? 2 * cap : 64) * sizeof *all);
            if (!bigger) break;
            all = bigger;
        }
        memcpy(all[n].name, e->d_name, sizeof all[n].name); /* an entry's name: 68 characters and the NUL */
        all[n].mtime = st.st_mtim;
        all[n++].size = st.st_size;
        total += (uint64_t)st.st_size;
    }
    if (n > 1) qsort(all, n, sizeof *all, oldest_first); /* qsort may not be given NULL, even for 0 */
    for (size_t i = 0; i < n && total > c->cap; i++)
        if (unlinkat(dfd, all[i].name, 0) == 0) total -= (uint64_t)all[i].size;
    closedir(d);
    free(all);
}

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Takes the build lock open on fd, waiting at most c->lock_wait_ms for whoever holds it
 * (flock has no timeout, so it polls, from 1 ms up to every 50 ms). False when it was
 * not had: waited out, or locks do not work here. */
static bool lock_bounded(rt_cache *c, int fd, bool *timed_out) {
    *timed_out = false;
    uint64_t start = now_ms();
    long step_us = 1000;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
        if (errno != EWOULDBLOCK && errno != EINTR) return false;
        uint64_t waited = now_ms() - start;
        if (waited >= c->lock_wait_ms) {
            *timed_out = true;
            return false;
        }
        uint64_t left_us = (c->lock_wait_ms - waited) * 1000u;
        long us = (uint64_t)step_us < left_us ? step_us : (long)left_us;
        struct timespec ts = {us / 1000000, us % 1000000 * 1000};
        nanosleep(&ts, NULL);
        if (step_us < 50000) step_us *= 2;
    }
}

bool cache_get(rt_cache *c, const void *key, size_t key_len, uint32_t kind, cache_build_fn build, void *arg,
               void **data, size_t *size) {
    *data = NULL;
    if (c->mode == CACHE_OFF || !c->has_dir) {
        c->builds++;
        return build(arg, data, size);
    }
    char hex[65], name[80], lock[80];
    rt_sha256_hex(key, key_len, hex);
    snprintf(name, sizeof name, "%s.tcb", hex);
    if (lookup(c, name, kind, data, size)) {
        c->hits++;
        return true;
    }
    if (c->mode == CACHE_RO) {
        c->misses++;
        c->builds++;
        return build(arg, data, size);
    }
    /* one builder per key, across threads and processes: the others wait, then read */
    snprintf(lock, sizeof lock, "%s.lock", hex);
    int fd = open_in(c, lock, O_RDWR | O_CREAT);
    bool locked = false, timed_out = false;
    if (fd >= 0) locked = lock_bounded(c, fd, &timed_out);
    if (timed_out) { /* a stopped or stuck builder: build it too, the result is the same */
        c->lock_timeouts++;
        snprintf(c->lock_note, sizeof c->lock_note, "the kernel cache's build lock %s/%s was held by another process for "
                 "more than %llu ms (a stopped process?): the kernel was built without waiting for it (set "
                 "TILEC_CACHE_LOCK_WAIT_MS to wait longer)", c->dir, lock, (unsigned long long)c->lock_wait_ms);
    }
    bool ok;
    if (lookup(c, name, kind, data, size)) {
        c->hits++;
        ok = true;
    } else {
        c->misses++;
        c->builds++;
        ok = build(arg, data, size);
        if (ok) {
            store(c, hex, name, kind, *data, *size);
            evict(c);
        }
    }
    if (locked) flock(fd, LOCK_UN);
    if (fd >= 0) close(fd);
    return ok;
}

/* ---- small named files beside the entries (the cost model's constants) ------------------ */

int cache_read_file(rt_cache *c, const char *name, size_t max, char **data, size_t *n, char *why, size_t whyn) {
    *data = NULL;
    *n = 0;
    if (!c->has_dir || c->mode == CACHE_OFF) return 0;
    int fd = open_in(c, name, O_RDONLY);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        snprintf(why, whyn, "%s", errno == ELOOP ? "it is a symbolic link, which is never followed" : strerror(errno));
        return -1;
    }
    struct stat st;
    const char *bad = NULL;
    if (fstat(fd, &st) != 0) bad = strerror(errno);
    else if (!S_ISREG(st.st_mode)) bad = "it is not a regular file";
    else if (!(bad = untrusted(&st)) && (uint64_t)st.st_size > max) bad = "it is longer than a constants file is";
    char *buf = bad ? NULL : malloc((size_t)st.st_size + 1);
    if (!bad && !buf) bad = "out of memory";
    size_t got = 0;
    while (!bad && got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0) bad = r < 0 ? strerror(errno) : "it was cut short while being read";
        else got += (size_t)r;
    }
    close(fd);
    if (bad) {
        free(buf);
        snprintf(why, whyn, "%s", bad);
        return -1;
    }
    buf[got] = '\0';
    *data = buf;
    *n = got;
    return 1;
}

bool cache_write_file(rt_cache *c, const char *name, const void *data, size_t n, char *why, size_t whyn) {
    if (!c->has_dir || c->mode != CACHE_RW) {
        snprintf(why, whyn, "the kernel cache is %s",
                 c->mode == CACHE_RO ? "read-only (TILEC_CACHE=ro, or its directory cannot be written)"
                                     : "off (TILEC_CACHE=off, or it has no usable directory)");
        return false;
    }
    /* the temporary is named as an entry's, by the SHA-256 of the file's name, so the
       evictor removes one a killed writer left */
    char hex[65];
    rt_sha256_hex(name, strlen(name), hex);
    int err;
    if (write_replace(c, hex, name, "", 0, data, n, &err)) return true;
    snprintf(why, whyn, "%s", strerror(err));
    return false;
}
