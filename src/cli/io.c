/*
 * io.c — every byte the `tilec` command reads or writes as a file goes through the two
 * functions here.
 *
 * read_input reads at most a limit (and one byte more, to tell "exactly the limit" from
 * "more"), so /dev/zero or an endless pipe costs the limit and no more; of a regular file
 * it can still say how big it is.
 *
 * write_output replaces a regular file atomically and safely: the bytes go to a new
 * temporary file beside the target, created with O_CREAT | O_EXCL | O_NOFOLLOW under a
 * random name (so nothing planted there, a symlink least of all, is ever opened), with the
 * old file's mode (and owner, where allowed), synced to disk and renamed over the target;
 * on any failure the temporary is removed and the target is as it was. A symlink given as
 * the target is written through: the file it leads to is replaced and the symlink stays.
 * A target that is not a regular file (a FIFO, a terminal, /dev/null, /dev/full) and a
 * file standard output or standard error already has open (/dev/stdout, `> FILE`) are
 * written directly, with no temporary: renaming over them would replace the device or
 * the file the shell opened. "-" is standard output. write_tensor is write_output with
 * a .npy header before the data when the name ends in ".npy" (one write, no copy).
 *
 * check_outputs is the one check, before a command reads anything, that none of its
 * outputs is one of its inputs or another output (overwrites: by name, or device and
 * inode): a regular file is replaced by the write, so what was read, or written first,
 * would be lost. An output written into the file standard output or error has open ("-",
 * /dev/stdout, `1<>FILE`) is not replaced, but its bytes still go over an input that is
 * that file, so it is refused too. (An output that is its own tensor's input is an update
 * in place.)
 *
 * A .npy input is read by npy_open (the preamble and the header it announces, at most
 * NPY_MAX_HEADER bytes, and nothing more until its dtype and shape are checked) and
 * npy_read_data (exactly the declared data, and one byte to see that the file ends).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* ---- reading -------------------------------------------------------------------------- */

/* Reads fd until its end or want bytes, whichever comes first, into a malloc'd buffer
 * grown as bytes come (a short file costs little, whatever want is): *n bytes. NULL only
 * when memory runs out or the buffer cannot be had at all; *err is the errno of a failed
 * read (the buffer then holds what came before). */
static char *read_fd(int fd, size_t want, size_t *n, int *err) {
    size_t cap = want < (1u << 16) ? want : (1u << 16);
    char *buf = malloc(cap ? cap : 1);
    *n = 0;
    *err = buf ? 0 : ENOMEM;
    while (buf && *n < want) {
        if (*n == cap) {
            size_t bigger = cap > want / 2 ? want : cap * 2;
            char *grown = realloc(buf, bigger);
            if (!grown) { *err = ENOMEM; break; }
            buf = grown;
            cap = bigger;
        }
        ssize_t got = read(fd, buf + *n, cap - *n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) { *err = errno; break; }
        if (got == 0) break;
        *n += (size_t)got;
    }
    return buf;
}

char *read_input(const char *path, size_t limit, size_t *len, int64_t *size) {
    bool is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        fprintf(stderr, "tilec: cannot read '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    /* room for limit + 1 bytes at most, grown as bytes come: a short file costs little */
    size_t n;
    int err;
    char *buf = read_fd(fd, limit < SIZE_MAX ? limit + 1 : limit, &n, &err);
    struct stat st;
    /* past the limit, only a regular file can say by how much */
    bool known = n <= limit || (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > limit);
    if (!is_stdin) close(fd);
    if (err) {
        fprintf(stderr, "tilec: cannot read '%s': %s\n", path, strerror(err));
        free(buf);
        return NULL;
    }
    *size = !known ? -1 : n <= limit ? (int64_t)n : (int64_t)st.st_size;
    *len = n > limit ? limit : n;
    return buf;
}

/* ---- .npy files ---------------------------------------------------------------------------- */

/* Reads up to n bytes of fd into buf: the count read, or -1 with errno. */
static ssize_t read_upto(int fd, unsigned char *buf, size_t n) {
    size_t at = 0;
    while (at < n) {
        ssize_t got = read(fd, buf + at, n - at);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return -1;
        if (got == 0) break;
        at += (size_t)got;
    }
    return (ssize_t)at;
}

int npy_open(const char *opt, const char *path, npy_header *h, int *fd_out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        fprintf(stderr, "tilec: %s: cannot read '%s': %s\n", opt, path, strerror(errno));
        return EXIT_BAD_INPUT;
    }
    /* the preamble (10 bytes; 12 from version 2.0), then the header it announces, at most
     * NPY_MAX_HEADER bytes, and not a byte of the data */
    unsigned char *buf = malloc(12 + NPY_MAX_HEADER);
    ssize_t n = buf ? read_upto(fd, buf, 10) : -1;
    if (n == 10 && memcmp(buf, "\x93NUMPY", 6) == 0 && buf[6] >= 2) {
        ssize_t more = read_upto(fd, buf + 10, 2);
        n = more < 0 ? -1 : n + more;
    }
    if (n >= 10) {
        uint64_t hlen = (uint64_t)buf[8] | (uint64_t)buf[9] << 8;
        if (n == 12) hlen |= (uint64_t)buf[10] << 16 | (uint64_t)buf[11] << 24;
        if (hlen <= NPY_MAX_HEADER) { /* longer: npy_parse says so */
            ssize_t more = read_upto(fd, buf + n, (size_t)hlen);
            n = more < 0 ? -1 : n + more;
        }
    }
    int rc = EXIT_BAD_INPUT;
    if (n < 0) fprintf(stderr, "tilec: %s: cannot read '%s': %s\n", opt, path, buf ? strerror(errno) : "out of memory");
    else rc = npy_parse(path, buf, (size_t)n, h);
    free(buf);
    if (rc) close(fd);
    else *fd_out = fd;
    return rc;
}

unsigned char *npy_read_data(const char *opt, const char *path, int fd, size_t bytes, const char *dims) {
    size_t n;
    int err;
    char *data = read_fd(fd, bytes < SIZE_MAX ? bytes + 1 : bytes, &n, &err); /* one byte more: the file's end */
    close(fd);
    if (!data || err) {
        fprintf(stderr, "tilec: %s: cannot read '%s': %s\n", opt, path, strerror(err ? err : ENOMEM));
        free(data);
        return NULL;
    }
    if (n != bytes) {
        char have[48];
        fprintf(stderr, "tilec: %s '%s' has %s bytes of data after its header, but %s is %zu bytes\n", opt, path,
                size_text(n > bytes ? -1 : (int64_t)n, bytes, have, sizeof have), dims, bytes);
        free(data);
        return NULL;
    }
    return (unsigned char *)data;
}

unsigned char *read_npy_tensor(const char *opt, const char *path, tilec_dtype dt, const int64_t *shape, int rank,
                               size_t bytes, const char *what, const char *dims) {
    npy_header h;
    int fd;
    if (npy_open(opt, path, &h, &fd)) return NULL;
    if (npy_expect(opt, path, &h, dt, shape, rank, what)) {
        close(fd);
        return NULL;
    }
    return npy_read_data(opt, path, fd, bytes, dims);
}

/* ---- writing -------------------------------------------------------------------------- */

/* What is written: a head (a .npy header; may be empty) and the data after it, so that
 * neither is copied to join them. */
typedef struct out_bytes {
    const void *head;
    size_t head_len;
    const void *data;
    size_t len;
    bool binary; /* a CUBIN, a tensor: never to a terminal */
} out_bytes;

/* Refuses binary bytes for descriptor fd, which PATH opened, when it is a terminal: the
 * check of the destination itself, whatever name led there (-, /dev/tty, /dev/pts/N). */
static bool refuse_terminal(int fd, const char *path, const out_bytes *b) {
    if (!b->binary || !isatty(fd)) return false;
    fprintf(stderr, "tilec: will not write binary output to '%s', a terminal; write it to a file, or redirect standard "
                    "output (> FILE) and write '-'\n", path);
    return true;
}

static bool write_piece(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t put = write(fd, p, len);
        if (put < 0 && errno == EINTR) continue;
        if (put < 0) return false;
        p += put;
        len -= (size_t)put;
    }
    return true;
}

static bool write_all(int fd, const out_bytes *b) {
    return write_piece(fd, b->head, b->head_len) && write_piece(fd, b->data, b->len);
}

static int write_stream(FILE *f, const char *path, const out_bytes *b) {
    if (refuse_terminal(fileno(f), path, b)) return EXIT_USAGE;
    if (fflush(f) == 0 && fwrite(b->head, 1, b->head_len, f) == b->head_len && fwrite(b->data, 1, b->len, f) == b->len &&
        fflush(f) == 0)
        return EXIT_OK;
    fprintf(stderr, "tilec: cannot write '%s': %s\n", path, strerror(errno));
    if (f == stdout) stdout_reported = true; /* main's final check does not say it again */
    return EXIT_BAD_INPUT;
}

/* true when st is the file that descriptor fd has open */
static bool same_file(int fd, const struct stat *st) {
    struct stat o;
    return fstat(fd, &o) == 0 && o.st_dev == st->st_dev && o.st_ino == st->st_ino;
}

/* A name no one can have guessed: 16 hex digits from the clock, the process, a counter and
 * an address, mixed by splitmix64. Uniqueness comes from O_EXCL; this only makes a name
 * that someone planted in advance unlikely, so that retries are rare. */
static void random_suffix(char out[17]) {
    static uint64_t counter;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    uint64_t z = (uint64_t)t.tv_nsec ^ ((uint64_t)t.tv_sec << 30) ^ ((uint64_t)getpid() << 17) ^
                 (uint64_t)(uintptr_t)&t ^ (++counter * 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    snprintf(out, 17, "%016llx", (unsigned long long)z);
}

/* Writes a non-regular file (FIFO, device) in place: no temporary, no truncation. */
static int write_special(const char *path, const out_bytes *b) {
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0 && refuse_terminal(fd, path, b)) {
        close(fd);
        return EXIT_USAGE;
    }
    bool ok = fd >= 0 && write_all(fd, b);
    int err = errno;
    if (fd >= 0 && close(fd) != 0 && ok) { ok = false; err = errno; }
    if (ok) return EXIT_OK;
    fprintf(stderr, "tilec: cannot write '%s': %s\n", path, strerror(err));
    return EXIT_BAD_INPUT;
}

/* Replaces (or creates) the regular file `target` through a temporary beside it. old is
 * the existing file's status, NULL for a new file. `path` is what the user named, for
 * messages. */
/* An existing file in a directory where no temporary can be made (one we may not write):
 * truncated and written in place, as a shell's `>` would (not atomic, but nothing else is
 * possible there). */
static int rewrite_in_place(const char *path, const char *target, const out_bytes *b) {
    int fd = open(target, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    const char *step = "open";
    bool ok = fd >= 0;
    if (ok) { step = "write"; ok = write_all(fd, b); }
    if (ok) { step = "sync"; ok = fsync(fd) == 0; }
    int err = errno;
    if (fd >= 0 && close(fd) != 0 && ok) { step = "close"; ok = false; err = errno; }
    if (!ok) {
        fprintf(stderr, "tilec: cannot %s '%s' (its directory takes no temporary file, so it is written in place): %s\n",
                step, path, strerror(err));
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

static int replace_file(const char *path, const char *target, const struct stat *old, const out_bytes *b) {
    /* a file we may not write is not ours to replace (as fopen, cp and editors refuse) */
    if (old && faccessat(AT_FDCWD, target, W_OK, AT_EACCESS) != 0) {
        fprintf(stderr, "tilec: cannot write '%s': %s; make it writable (chmod u+w) or write elsewhere\n", path,
                strerror(errno));
        return EXIT_BAD_INPUT;
    }
    const char *slash = strrchr(target, '/');
    size_t dir_len = slash ? (size_t)(slash - target) + 1 : 0; /* with the '/' */
    const char *base = slash ? slash + 1 : target;
    size_t base_len = strlen(base);
    if (base_len > 200) base_len = 200; /* the temporary's name must stay under NAME_MAX */
    size_t cap = dir_len + base_len + 40;
    char *tmp = malloc(cap);
    if (!tmp) { fprintf(stderr, "tilec: cannot write '%s': out of memory\n", path); return EXIT_BAD_INPUT; }
    int fd = -1, err = 0;
    /* 0600 until the mode is set below: nobody else can open it meanwhile */
    mode_t create_mode = old ? S_IRUSR | S_IWUSR : 0666;
    for (int attempt = 0; attempt < 100; attempt++) {
        char suffix[17];
        random_suffix(suffix);
        snprintf(tmp, cap, "%.*s.%.*s.tilec-%s.tmp", (int)dir_len, target, (int)base_len, base, suffix);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, create_mode);
        if (fd >= 0 || errno != EEXIST) break;
    }
    if (fd < 0 && old && errno == EACCES) { /* a directory we may not add to: the file itself, in place */
        free(tmp);
        return rewrite_in_place(path, target, b);
    }
    if (fd < 0) {
        err = errno;
        fprintf(stderr, "tilec: cannot write '%s': cannot create a temporary file beside it (%s): %s\n", path, tmp,
                strerror(err));
        free(tmp);
        return EXIT_BAD_INPUT;
    }
    const char *step = "write";
    bool ok = write_all(fd, b);
    if (ok && old) {
        /* the owner first (it clears set-id bits), then the mode; a different owner is kept
         * where we may (as root), and the file becomes ours where we may not */
        if (old->st_uid != geteuid() || old->st_gid != getegid())
            if (fchown(fd, old->st_uid, old->st_gid) != 0) { /* not allowed: ours it is */ }
        step = "set the mode of";
        ok = fchmod(fd, old->st_mode & 07777) == 0;
    }
    if (ok) { step = "sync"; ok = fsync(fd) == 0; }
    if (!ok) err = errno;
    if (close(fd) != 0 && ok) { step = "close"; ok = false; err = errno; }
    if (ok) { step = "rename the temporary over"; ok = rename(tmp, target) == 0; if (!ok) err = errno; }
    if (!ok) {
        fprintf(stderr, "tilec: cannot %s '%s': %s\n", step, path, strerror(err));
        unlink(tmp);
        free(tmp);
        return EXIT_BAD_INPUT;
    }
    /* the rename itself reaches the disk with the directory (best effort: some file
     * systems refuse to sync a directory) */
    memcpy(tmp, target, dir_len);
    strcpy(tmp + dir_len, ".");
    int dfd = open(tmp, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (dfd >= 0) {
        if (fsync(dfd) != 0) { /* the data is written; only its durability is unknown */ }
        close(dfd);
    }
    free(tmp);
    return EXIT_OK;
}

static int write_bytes(const char *path, const out_bytes *b) {
    if (strcmp(path, "-") == 0) return write_stream(stdout, path, b);
    if (!*path) { fprintf(stderr, "tilec: cannot write '': an empty path\n"); return EXIT_BAD_INPUT; }
    struct stat st, lst;
    bool exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT) {
        fprintf(stderr, "tilec: cannot write '%s': %s\n", path, strerror(errno));
        return EXIT_BAD_INPUT;
    }
    if (exists && same_file(STDOUT_FILENO, &st)) return write_stream(stdout, path, b);
    if (exists && same_file(STDERR_FILENO, &st)) return write_stream(stderr, path, b);
    if (exists && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "tilec: cannot write '%s': it is a directory\n", path);
        return EXIT_BAD_INPUT;
    }
    if (exists && !S_ISREG(st.st_mode)) return write_special(path, b);
    if (lstat(path, &lst) != 0) { /* gone since stat: write it as a new file */
        if (errno != ENOENT) {
            fprintf(stderr, "tilec: cannot write '%s': %s\n", path, strerror(errno));
            return EXIT_BAD_INPUT;
        }
        return replace_file(path, path, NULL, b);
    }
    if (!S_ISLNK(lst.st_mode)) return replace_file(path, path, exists ? &st : NULL, b);
    /* a symlink: write the file it leads to, and keep the link */
    if (!exists) {
        fprintf(stderr, "tilec: cannot write '%s': it is a symlink to a file that does not exist; name the file "
                        "itself to create it\n", path);
        return EXIT_BAD_INPUT;
    }
    char *real = realpath(path, NULL);
    if (!real) {
        fprintf(stderr, "tilec: cannot write '%s': cannot resolve the symlink: %s\n", path, strerror(errno));
        return EXIT_BAD_INPUT;
    }
    int rc = replace_file(path, real, &st, b);
    free(real);
    return rc;
}

int write_output(const char *path, const void *data, size_t len, bool binary) {
    out_bytes b = {"", 0, data, len, binary};
    return write_bytes(path, &b);
}

int write_tensor(const char *path, tilec_dtype dt, const int64_t *shape, int rank, const void *data, size_t len) {
    char head[NPY_HEADER_ROOM];
    out_bytes b = {"", 0, data, len, true};
    if (is_npy_path(path) && !(b.head_len = npy_format_header(head, sizeof head, dt, shape, rank))) {
        fprintf(stderr, "tilec: cannot write '%s': the .npy header does not fit\n", path); /* cannot happen: rank <= 8 */
        return EXIT_BAD_INPUT;
    }
    b.head = head;
    return write_bytes(path, &b);
}

/* The absolute name PATH stands for, whether or not it exists: realpath's, or for a name
 * not there yet, its directory's real name and its last name, where a symlink to nothing
 * (which the first write would create) is followed to the name it leads to. malloc'd;
 * NULL when it cannot be told (a directory that does not exist, a loop). */
static char *canonical_name(const char *path, int depth) {
    char *real = realpath(path, NULL);
    if (real || errno != ENOENT || depth > 40) return real;
    const char *slash = strrchr(path, '/');
    struct stat st;
    char link[PATH_MAX];
    ssize_t n;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && (n = readlink(path, link, sizeof link - 1)) > 0) {
        link[n] = '\0'; /* a relative link is relative to the directory that holds it */
        size_t dir_len = link[0] == '/' || !slash ? 0 : (size_t)(slash - path) + 1;
        char *next = malloc(dir_len + (size_t)n + 1);
        if (!next) return NULL;
        memcpy(next, path, dir_len);
        memcpy(next + dir_len, link, (size_t)n + 1);
        char *r = canonical_name(next, depth + 1);
        free(next);
        return r;
    }
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    char *dir_real = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    if (!dir_real) return NULL;
    size_t len = strlen(dir_real);
    char *out = malloc(len + strlen(base) + 2);
    if (out) sprintf(out, "%s%s%s", dir_real, len && dir_real[len - 1] == '/' ? "" : "/", base);
    free(dir_real);
    return out;
}

bool overwrites(const char *out, const char *other) {
    if (strcmp(out, "-") == 0 || strcmp(other, "-") == 0) return false;
    struct stat so, sx; /* stat follows symlinks: a link to the file is the file */
    bool exists = stat(out, &so) == 0;
    /* written in turn, as write_bytes does, never replaced */
    if (exists && (!S_ISREG(so.st_mode) || same_file(STDOUT_FILENO, &so) || same_file(STDERR_FILENO, &so))) return false;
    if (strcmp(out, other) == 0) return true;
    if (exists) return stat(other, &sx) == 0 && so.st_dev == sx.st_dev && so.st_ino == sx.st_ino;
    /* not there yet (two outputs): one name once resolved ("./s.bin", a symlink to it) */
    char *a = canonical_name(out, 0), *b = a ? canonical_name(other, 0) : NULL;
    bool same = a && b && strcmp(a, b) == 0;
    free(a);
    free(b);
    return same;
}

/* "--out B='v.tile'", "FILE 'v.tile'" into buf, for check_outputs' messages */
static const char *file_text(const named_file *f, char *buf, size_t n) {
    if (f->name) snprintf(buf, n, "%s %s='%s'", f->opt, f->name, f->path);
    else snprintf(buf, n, "%s '%s'", f->opt, f->path);
    return buf;
}

/* Whether writing OUT would write over the input IN, whatever way the bytes go: replaced
 * through a temporary, or written in turn into the file standard output or error has open
 * ("-", /dev/stdout, /dev/fd/1, `1<>IN`), which puts them over what was read as well
 * (cat's "input file is output file"). "-" as IN is the file standard input reads (`--in -
 * --out F < F`). The name is compared first, always; a written file that is not a regular
 * one (a terminal, a pipe, /dev/null) loses nothing. *how is set to what to tell. */
static bool overwrites_input(const char *out, const char *in, const char **how) {
    struct stat so, si;
    bool to_stdout = strcmp(out, "-") == 0;
    bool exists = to_stdout ? fstat(STDOUT_FILENO, &so) == 0 : stat(out, &so) == 0;
    *how = "the same file";
    if (exists && !S_ISREG(so.st_mode)) return false;
    if (!to_stdout && strcmp(out, in) == 0) return true;
    if (to_stdout || (exists && same_file(STDOUT_FILENO, &so))) *how = "standard output is that file";
    else if (exists && same_file(STDERR_FILENO, &so)) *how = "standard error is that file";
    if (strcmp(in, "-") == 0) return exists && same_file(STDIN_FILENO, &so);
    if (exists) return stat(in, &si) == 0 && so.st_dev == si.st_dev && so.st_ino == si.st_ino;
    return !to_stdout && overwrites(out, in); /* not there yet: one name once resolved */
}

int check_outputs(const char *cmd, const named_file *outs, int nout, const named_file *ins, int nin) {
    char a[PATH_MAX + 160], b[PATH_MAX + 160];
    const char *how;
    for (int i = 0; i < nout; i++) {
        for (int j = 0; j < nin; j++)
            if (ins[j].path && !(outs[i].tensor && ins[j].tensor && !strcmp(outs[i].tensor, ins[j].tensor)) &&
                overwrites_input(outs[i].path, ins[j].path, &how)) {
                fprintf(stderr, "tilec %s: %s would overwrite the input %s (%s), which is read first; write the "
                                "output elsewhere\n", cmd, file_text(&outs[i], a, sizeof a), file_text(&ins[j], b, sizeof b), how);
                return EXIT_USAGE;
            }
        for (int j = 0; j < i; j++)
            if (overwrites(outs[i].path, outs[j].path)) {
                fprintf(stderr, "tilec %s: %s and %s are the same file: the second write would replace the first; give "
                                "each output its own file\n", cmd, file_text(&outs[j], a, sizeof a), file_text(&outs[i], b, sizeof b));
                return EXIT_USAGE;
            }
    }
    return EXIT_OK;
}

bool writes_stdout(const char *path) {
    if (strcmp(path, "-") == 0) return true;
    struct stat st;
    return stat(path, &st) == 0 && same_file(STDOUT_FILENO, &st);
}

bool writes_terminal(const char *path) {
    if (strcmp(path, "-") == 0) return isatty(STDOUT_FILENO);
    struct stat st; /* only a character device can be a terminal: /dev/stdout, /dev/tty, /dev/pts/N */
    if (stat(path, &st) != 0 || !S_ISCHR(st.st_mode)) return false;
    if (same_file(STDOUT_FILENO, &st)) return isatty(STDOUT_FILENO);
    int fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC); /* asked, as write_special will ask it */
    bool tty = fd >= 0 && isatty(fd);
    if (fd >= 0) close(fd);
    return tty;
}

const char *size_text(int64_t size, size_t limit, char *buf, size_t n) {
    if (size < 0) snprintf(buf, n, "more than %zu", limit);
    else snprintf(buf, n, "%" PRId64, size);
    return buf;
}
