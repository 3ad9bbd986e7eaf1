/*
 * dump.c — TILEC_DUMP_SOURCE=DIR: every CUDA or HIP source the runtime compiles (the JIT's
 * kernels for tilec_reduce, and tilec_compile) is also written into DIR, for reading,
 * diffing or compiling by hand, as CuPy's CUPY_CACHE_SAVE_CUDA_SOURCE and Triton's dump
 * switches do.
 *
 * A file is named KERNEL-HASH.cu (or .hip): the kernel's name (letters, digits and '_',
 * at most 64 of them) and the first 16 hex digits of the SHA-256 of what names the binary
 * (for the JIT, the disk cache's key: tilec's version, the target, the compiler and the
 * source), so one name is always one content and a file already there is left as it is.
 * DIR must exist and be a directory (it is never created); each file is written to a new
 * temporary beside it (O_CREAT | O_EXCL | O_NOFOLLOW, relative to DIR's descriptor) and
 * renamed into place, so a reader never sees half a file and nothing planted in DIR is
 * ever opened. The library never prints: a dump that cannot be written is a warning in
 * the context's diagnostics, and the compile goes on.
 */
#define _POSIX_C_SOURCE 200809L /* openat, renameat */
#include "rtc.h"
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

static bool write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t put = write(fd, p, n);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return false;
        p += put;
        n -= (size_t)put;
    }
    return true;
}

static void warn(tilec_ctx *ctx, const char *dir, const char *name, const char *what, int err) {
    ir_diag_add(ctx, NULL, TILEC_SEV_WARNING, 0, 0,
                "TILEC_DUMP_SOURCE=%s: cannot %s%s%s (%s); the kernel is compiled, its source is not saved%s", dir, what,
                name ? " " : "", name ? name : "", strerror(err),
                err == ENOENT || err == ENOTDIR ? " (set it to an existing directory)" : "");
}

void rtc_dump_source(tilec_ctx *ctx, tilec_backend backend, const char *kernel, const void *key, size_t key_len,
                     const char *source) {
    const char *dir = getenv("TILEC_DUMP_SOURCE");
    const char *ext = tilec_backend_file_extension(backend, false);
    if (!dir || !*dir || !ext || !source) return;
    char name[64 + 1 + 16 + 8], tmp[sizeof name + 48];
    size_t at = 0;
    for (const char *k = kernel ? kernel : ""; *k && at < 64; k++) /* a bounded name of safe characters */
        if ((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') || *k == '_') name[at++] = *k;
    if (!at) at = (size_t)snprintf(name, sizeof name, "kernel");
    uint8_t h[32];
    rt_sha256(key, key_len, h);
    at += (size_t)snprintf(name + at, sizeof name - at, "-");
    for (int i = 0; i < 8; i++) at += (size_t)snprintf(name + at, sizeof name - at, "%02x", h[i]);
    snprintf(name + at, sizeof name - at, "%s", ext);

    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) { warn(ctx, dir, NULL, "open the directory", errno); return; }
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) { /* saved before: the same source */
        close(dfd);
        return;
    }
    static _Atomic unsigned counter;
    int fd = -1;
    for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
        snprintf(tmp, sizeof tmp, ".%s.%ld.%u.tmp", name, (long)getpid(), atomic_fetch_add(&counter, 1));
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) { warn(ctx, dir, tmp, "create", errno); close(dfd); return; }
    bool ok = write_all(fd, source, strlen(source));
    int err = errno;
    if (close(fd) != 0 && ok) { ok = false; err = errno; }
    if (ok && renameat(dfd, tmp, dfd, name) != 0) { ok = false; err = errno; }
    if (!ok) {
        unlinkat(dfd, tmp, 0);
        warn(ctx, dir, name, "write", err);
    }
    close(dfd);
}
