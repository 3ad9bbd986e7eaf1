/*
 * test_cache.c — the disk cache with a fake compiler behind it: hits and misses,
 * corrupted, truncated and tampered entries, a planted symlink, an unwritable directory,
 * read-only and off modes, eviction of the least recently used, 8 threads asking for one
 * key (built once), 4 processes sharing a directory (built once, nobody reads half an
 * entry), a full disk, and SHA-256 against known answers. Trust: a directory others may
 * write or that another user owns, and such entries, are never loaded (also in ro mode).
 * Settings: a file as the directory, sizes with suffixes, unknown modes, long paths,
 * orphaned temporaries, and a stopped process holding a build lock.
 */
#define _DEFAULT_SOURCE /* usleep */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../src/runtime/cache.h"
#include "../src/runtime/env.h"
#include "../src/runtime/rtc.h"
#include "../src/runtime/runtime.h"

#include <dirent.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[256];
static int builds; /* the fake compiler's count (atomic where threads share it) */

typedef struct fake {
    const char *payload;
    unsigned sleep_us;
    const char *marker; /* a file to append a line to, for counting across processes */
} fake;

static bool fake_build(void *arg, void **data, size_t *size) {
    fake *f = arg;
    if (f->sleep_us) usleep(f->sleep_us);
    __atomic_add_fetch(&builds, 1, __ATOMIC_SEQ_CST);
    if (f->marker) {
        int fd = open(f->marker, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (write(fd, "built\n", 6) != 6) return false;
        close(fd);
    }
    *size = strlen(f->payload);
    *data = malloc(*size + 1);
    memcpy(*data, f->payload, *size + 1);
    return true;
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tilec-cache-test-%ld-XXXXXX", (long)getpid());
    if (!mkdtemp(dir)) return -1;
    setenv("TILEC_CACHE_DIR", dir, 1);
    unsetenv("TILEC_CACHE");
    unsetenv("TILEC_CACHE_MAX_BYTES");
    builds = 0;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *get(rt_cache *c, const char *key, uint32_t kind, fake *f) {
    void *data;
    size_t n;
    assert_true(cache_get(c, key, strlen(key), kind, fake_build, f, &data, &n));
    assert_int_equal(n, strlen(data));
    return data;
}

/* The one entry file in dir (the test writes a single key). */
static void entry_file(char *out, size_t n) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls %s/*.tcb", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(fgets(out, (int)n, p));
    out[strcspn(out, "\n")] = '\0';
    pclose(p);
}

static void test_sha256(void **state) {
    (void)state;
    uint8_t h[32];
    char hex[65];
    rt_sha256("abc", 3, h);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    rt_sha256("", 0, h);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    rt_sha256(two_blocks, strlen(two_blocks), h);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_hit_and_miss(void **state) {
    (void)state;
    rt_cache c;
    cache_open(&c);
    assert_int_equal(c.mode, CACHE_RW);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    fake f = {"CUBIN-1", 0, NULL};
    char *a = get(&c, "key one", 1, &f), *b = get(&c, "key one", 1, &f);
    assert_string_equal(a, "CUBIN-1");
    assert_string_equal(b, "CUBIN-1");
    assert_int_equal(builds, 1);
    assert_int_equal(c.hits, 1);
    /* a new context finds it on disk */
    rt_cache c2;
    cache_open(&c2);
    char *d = get(&c2, "key one", 1, &f);
    assert_int_equal(builds, 1);
    assert_int_equal(c2.hits, 1);
    /* another key, and the same key of another kind, are built */
    char *e = get(&c, "key two", 1, &f), *g = get(&c, "key one", 2, &f);
    assert_int_equal(builds, 3);
    free(a); free(b); free(d); free(e); free(g);
    cache_close(&c);
    cache_close(&c2);
}

static void test_damaged_entries(void **state) {
    (void)state;
    rt_cache c;
    cache_open(&c);
    fake f = {"a payload long enough to damage", 0, NULL};
    free(get(&c, "k", 1, &f));
    char path[512];
    entry_file(path, sizeof path);
    /* a flipped payload byte: the checksum fails, the entry is rebuilt */
    int fd = open(path, O_RDWR);
    assert_true(pwrite(fd, "X", 1, 60) == 1);
    close(fd);
    char *x = get(&c, "k", 1, &f);
    assert_string_equal(x, f.payload);
    assert_int_equal(builds, 2);
    assert_int_equal(c.rejected, 1);
    free(x);
    /* truncated */
    assert_int_equal(truncate(path, 70), 0);
    free(get(&c, "k", 1, &f));
    assert_int_equal(builds, 3);
    /* a header that lies about the size */
    fd = open(path, O_RDWR);
    assert_true(pwrite(fd, "\x01", 1, 16) == 1);
    close(fd);
    free(get(&c, "k", 1, &f));
    assert_int_equal(builds, 4);
    /* garbage */
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(write(fd, "not an entry at all, just bytes that fill a header's length....", 64) == 64);
    close(fd);
    free(get(&c, "k", 1, &f));
    assert_int_equal(builds, 5);
    assert_int_equal(c.rejected, 4);
    /* after all that, a valid entry again */
    free(get(&c, "k", 1, &f));
    assert_int_equal(builds, 5);
    cache_close(&c);
}

static void test_symlink_not_followed(void **state) {
    (void)state;
    rt_cache c;
    cache_open(&c);
    fake f = {"real", 0, NULL};
    free(get(&c, "k", 1, &f));
    char path[512], outside[600];
    entry_file(path, sizeof path);
    snprintf(outside, sizeof outside, "%s.outside", dir);
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && rm '%s' && ln -s '%s' '%s'", path, outside, path, outside, path);
    assert_int_equal(system(cmd), 0);
    free(get(&c, "k", 1, &f)); /* the link is not read: a miss */
    assert_int_equal(builds, 2);
    unlink(outside);
    cache_close(&c);
}

static void test_unwritable_and_modes(void **state) {
    (void)state;
    char file[600], below[700];
    snprintf(file, sizeof file, "%s/a-file", dir);
    FILE *p = fopen(file, "w");
    fclose(p);
    snprintf(below, sizeof below, "%s/cache", file); /* a directory cannot be made under a file */
    setenv("TILEC_CACHE_DIR", below, 1);
    rt_cache c;
    cache_open(&c);
    assert_int_equal(c.nnotes, 1);
    assert_non_null(strstr(c.notes[0], "cannot be created (Not a directory)"));
    assert_non_null(strstr(c.notes[0], "memory only"));
    assert_int_equal(c.mode, CACHE_OFF);
    fake f = {"x", 0, NULL};
    free(get(&c, "k", 1, &f));
    free(get(&c, "k", 1, &f));
    assert_int_equal(builds, 2); /* nothing stored */
    cache_close(&c);
    setenv("TILEC_CACHE_DIR", dir, 1);
    setenv("TILEC_CACHE", "off", 1);
    cache_open(&c);
    assert_int_equal(c.mode, CACHE_OFF);
    assert_int_equal(c.nnotes, 0);
    free(get(&c, "k", 1, &f));
    assert_int_equal(builds, 3);
    cache_close(&c);
    /* ro: reads what is there, stores nothing */
    setenv("TILEC_CACHE", "rw", 1);
    cache_open(&c);
    free(get(&c, "stored", 1, &f));
    cache_close(&c);
    setenv("TILEC_CACHE", "ro", 1);
    cache_open(&c);
    assert_int_equal(c.nnotes, 0);
    free(get(&c, "stored", 1, &f));
    assert_int_equal(c.hits, 1);
    free(get(&c, "new", 1, &f));
    free(get(&c, "new", 1, &f));
    assert_int_equal(c.hits, 1);
    cache_close(&c);
    unsetenv("TILEC_CACHE");
}

static void test_eviction(void **state) {
    (void)state;
    setenv("TILEC_CACHE_MAX_BYTES", "300", 1); /* room for three entries of ~90 bytes */
    rt_cache c;
    cache_open(&c);
    fake f = {"payload-of-thirty-two-bytes-xx", 0, NULL};
    char key[32], cmd[400];
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "key %d", i);
        free(get(&c, key, 1, &f));
        usleep(20000); /* distinct modification times */
    }
    snprintf(cmd, sizeof cmd, "ls %s/*.tcb | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = 0;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    assert_true(n <= 3 && n >= 1);
    /* the newest is still there */
    builds = 0;
    free(get(&c, "key 4", 1, &f));
    assert_int_equal(builds, 0);
    cache_close(&c);
    unsetenv("TILEC_CACHE_MAX_BYTES");
}

typedef struct thread_arg {
    char *got;
} thread_arg;

static void *ask(void *p) {
    thread_arg *t = p;
    rt_cache c;
    cache_open(&c);
    fake f = {"shared-binary", 200000, NULL};
    void *data;
    size_t n;
    if (cache_get(&c, "same key", 8, 1, fake_build, &f, &data, &n)) t->got = data;
    cache_close(&c);
    return NULL;
}

static void test_threads_build_once(void **state) {
    (void)state;
    pthread_t th[8];
    thread_arg args[8] = {{0}};
    for (int i = 0; i < 8; i++) pthread_create(&th[i], NULL, ask, &args[i]);
    for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
    assert_int_equal(builds, 1);
    for (int i = 0; i < 8; i++) {
        assert_non_null(args[i].got);
        assert_string_equal(args[i].got, "shared-binary");
        free(args[i].got);
    }
}

static void test_processes_share(void **state) {
    (void)state;
    char marker[600];
    snprintf(marker, sizeof marker, "%s/built.txt", dir);
    pid_t kids[4];
    for (int i = 0; i < 4; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            rt_cache c;
            cache_open(&c);
            fake f = {"binary shared by processes, long enough to be caught half-written", 300000, marker};
            void *data;
            size_t n;
            bool ok = cache_get(&c, "process key", 11, 1, fake_build, &f, &data, &n) && n == strlen(f.payload) &&
                      memcmp(data, f.payload, n) == 0;
            _exit(ok ? 0 : 1);
        }
    }
    for (int i = 0; i < 4; i++) {
        int status;
        waitpid(kids[i], &status, 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    FILE *p = fopen(marker, "r");
    assert_non_null(p);
    int lines = 0;
    char line[64];
    while (fgets(line, sizeof line, p)) lines++;
    fclose(p);
    assert_int_equal(lines, 1); /* built once for the four */
}

/* A full disk: in a child process whose files may not grow past 16 bytes (RLIMIT_FSIZE,
 * SIGXFSZ ignored, so writes fail with EFBIG as on a full file system), the build's result
 * still comes back right and the write fails quietly; nothing half-written is left, and
 * the next process rebuilds rather than loading a truncated entry. */
static void test_disk_full(void **state) {
    (void)state;
    fake f = {"a payload longer than the 16 bytes a file may hold", 0, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit small = {16, 16};
        setrlimit(RLIMIT_FSIZE, &small);
        rt_cache c;
        cache_open(&c);
        void *data = NULL;
        size_t n = 0;
        bool ok = cache_get(&c, "full key", 8, 1, fake_build, &f, &data, &n);
        char want[1400];
        snprintf(want, sizeof want, "a kernel could not be stored in the cache %s (File too large): it is kept in memory", dir);
        bool said = c.store_failures == 1 && strcmp(c.store_error, want) == 0;
        _exit(ok && n == strlen(f.payload) && memcmp(data, f.payload, n) == 0 ? (said ? 0 : 2) : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls -A %s | grep -c '\\.tmp\\.'", dir);
    FILE *p = popen(cmd, "r");
    char count[16] = "";
    assert_non_null(fgets(count, sizeof count, p));
    pclose(p);
    assert_int_equal(atoi(count), 0); /* no temporary file left behind */
    snprintf(cmd, sizeof cmd, "ls -A %s | grep -c '\\.tcb$'", dir);
    p = popen(cmd, "r");
    assert_non_null(fgets(count, sizeof count, p));
    pclose(p);
    assert_int_equal(atoi(count), 0); /* and no entry: the write really failed */
    rt_cache c;
    cache_open(&c);
    builds = 0;
    char *again = get(&c, "full key", 1, &f);
    assert_string_equal(again, f.payload);
    assert_int_equal(builds, 1); /* a miss: no truncated entry was taken */
    free(again);
    cache_close(&c);
}

/* ---- trust: the directory and each entry must be the user's (or root's) and private ---- */

/* Whether the cache has a note holding each of the texts. */
static bool noted(const rt_cache *c, const char *a, const char *b) {
    for (int i = 0; i < c->nnotes; i++)
        if (strstr(c->notes[i], a) && (!b || strstr(c->notes[i], b))) return true;
    return false;
}

/* Files in directory d whose names end with suffix (or contain it, for ".tmp."). */
static int count_files(const char *d, const char *part) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -c -- '%s'", d, part);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1) n = -1;
    if (p) pclose(p);
    return n;
}

/* Eviction removes only files of the names tilec writes: a user's own files in the
 * directory (a notes.tcb, names near an entry's, a temporary's with another tail), old and
 * large enough to be the first evicted were they entries, stay; tilec's entries go. It
 * used to delete any *.tcb. */
static void test_eviction_spares_other_files(void **state) {
    (void)state;
    const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char names[5][80];
    snprintf(names[0], sizeof names[0], "notes.tcb");
    snprintf(names[1], sizeof names[1], "%.63s.tcb", hex);                      /* 63 digits */
    snprintf(names[2], sizeof names[2], "%.63sA.tcb", hex);                     /* not lowercase */
    snprintf(names[3], sizeof names[3], "%s.tcb.bak", hex);
    snprintf(names[4], sizeof names[4], "%s.tmp.mine", hex);                   /* not <pid>.<n> */
    struct timespec old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    char path[800];
    static char big[1000];
    memset(big, 'u', sizeof big);
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        assert_true(write(fd, big, sizeof big) == (ssize_t)sizeof big);
        close(fd);
        assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
    }
    setenv("TILEC_CACHE_MAX_BYTES", "300", 1); /* room for three entries of ~90 bytes */
    rt_cache c;
    cache_open(&c);
    fake f = {"payload-of-thirty-two-bytes-xx", 0, NULL};
    char key[32];
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "key %d", i);
        free(get(&c, key, 1, &f));
        usleep(20000); /* distinct modification times */
    }
    cache_close(&c);
    unsetenv("TILEC_CACHE_MAX_BYTES");
    struct stat st;
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &st) != 0 || st.st_size != (off_t)sizeof big) fail_msg("the user's %s was removed", names[i]);
    }
    /* tilec's own entries were evicted down to the cap: 3 of ~90 bytes at most */
    int n = count_files(dir, "^[0-9a-f]\\{64\\}\\.tcb$");
    assert_true(n >= 1 && n <= 3);
}

/* A directory other users may write (0777, 0770, 0722) is not trusted, also in ro mode
 * (which security.md recommends for such a directory), nor one of another owner: memory
 * only, one note, nothing read or written there. */
static void test_untrusted_directory(void **state) {
    (void)state;
    fake f = {"planted?", 0, NULL};
    rt_cache c;
    cache_open(&c);
    free(get(&c, "k", 1, &f)); /* an entry, stored while the directory was private */
    cache_close(&c);
    assert_int_equal(builds, 1);
    const mode_t modes[] = {0777, 0770, 0722};
    const char *settings[] = {NULL, "ro"};
    for (int m = 0; m < 3; m++)
        for (int s = 0; s < 2; s++) {
            assert_int_equal(chmod(dir, modes[m]), 0);
            if (settings[s]) setenv("TILEC_CACHE", settings[s], 1);
            else unsetenv("TILEC_CACHE");
            cache_open(&c);
            assert_int_equal(c.mode, CACHE_OFF);
            assert_int_equal(c.nnotes, 1);
            assert_true(noted(&c, "can be written by other users", "memory only"));
            char mode_text[32];
            snprintf(mode_text, sizeof mode_text, "mode %04o", (unsigned)modes[m]);
            assert_true(noted(&c, dir, mode_text));
            int before = builds;
            free(get(&c, "k", 1, &f));
            free(get(&c, "new", 1, &f));
            assert_int_equal(builds, before + 2); /* the entry there is not loaded */
            assert_int_equal(c.hits, 0);
            assert_int_equal(count_files(dir, ".tcb$"), 1); /* and nothing is stored */
            cache_close(&c);
        }
    unsetenv("TILEC_CACHE");
    assert_int_equal(chmod(dir, 0700), 0);
    cache_open(&c); /* private again: trusted */
    assert_int_equal(c.nnotes, 0);
    free(get(&c, "k", 1, &f));
    assert_int_equal(c.hits, 1);
    cache_close(&c);
    if (geteuid() != 0) {
        print_message("skipped: a directory of another owner needs root to make (chown)\n");
        return;
    }
    assert_int_equal(chown(dir, 65534, 65534), 0); /* nobody's, mode 0700 */
    for (int s = 0; s < 2; s++) {
        if (settings[s]) setenv("TILEC_CACHE", settings[s], 1);
        else unsetenv("TILEC_CACHE");
        cache_open(&c);
        assert_int_equal(c.mode, CACHE_OFF);
        assert_true(noted(&c, "belongs to another user", "owner uid 65534"));
        int before = builds;
        free(get(&c, "k", 1, &f));
        assert_int_equal(builds, before + 1);
        cache_close(&c);
    }
    unsetenv("TILEC_CACHE");
    assert_int_equal(chown(dir, 0, 0), 0);
}

/* The directory given as a symbolic link is not followed (it is opened O_NOFOLLOW). */
static void test_directory_symlink(void **state) {
    (void)state;
    char real[600], link[600];
    snprintf(real, sizeof real, "%s/real", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    assert_int_equal(mkdir(real, 0700), 0);
    assert_int_equal(symlink(real, link), 0);
    setenv("TILEC_CACHE_DIR", link, 1);
    rt_cache c;
    cache_open(&c);
    assert_int_equal(c.mode, CACHE_OFF);
    assert_true(noted(&c, "is a symbolic link", "memory only"));
    fake f = {"x", 0, NULL};
    free(get(&c, "k", 1, &f));
    assert_int_equal(count_files(real, ".tcb$"), 0);
    cache_close(&c);
    /* nor when the path ends in a slash or "/." (which resolve through the link: O_NOFOLLOW
     * alone looks at the last component); the note names the link */
    const char *tails[] = {"/", "//", "/.", "/./", "/././/"};
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        char given[700];
        snprintf(given, sizeof given, "%s%s", link, tails[i]);
        setenv("TILEC_CACHE_DIR", given, 1);
        cache_open(&c);
        if (c.mode != CACHE_OFF || !noted(&c, "is a symbolic link", "memory only"))
            fail_msg("TILEC_CACHE_DIR=%s: mode %d, %d notes", given, (int)c.mode, c.nnotes);
        assert_true(noted(&c, link, NULL));
        free(get(&c, "k", 1, &f));
        assert_int_equal(count_files(real, ".tcb$"), 0);
        cache_close(&c);
    }
    /* the real directory with a trailing slash is used */
    char slashed[700];
    snprintf(slashed, sizeof slashed, "%s/./", real);
    setenv("TILEC_CACHE_DIR", slashed, 1);
    cache_open(&c);
    assert_int_equal(c.mode, CACHE_RW);
    assert_string_equal(c.dir, real);
    free(get(&c, "k", 1, &f));
    assert_int_equal(count_files(real, ".tcb$"), 1);
    cache_close(&c);
}

/* A path with a ".." component is not used: "LINK/x/.." resolved through the link to its
 * target (the cache made x there and wrote its entries beside it), where the link itself
 * is refused. Memory only, with a note that says why and what to give instead. */
static void test_directory_dotdot(void **state) {
    (void)state;
    char real[600], link[600], given[700], made[700];
    snprintf(real, sizeof real, "%s/real", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    assert_int_equal(mkdir(real, 0700), 0);
    assert_int_equal(symlink(real, link), 0);
    snprintf(made, sizeof made, "%s/x", real);
    fake f = {"x", 0, NULL};
    rt_cache c;
    const char *forms[] = {"%s/x/..", "%s/x/../", "%s/x/../.", "%s/x/../x", "%s/../link", "%s//x//..//"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(given, sizeof given, forms[i], link);
        setenv("TILEC_CACHE_DIR", given, 1);
        cache_open(&c);
        if (c.mode != CACHE_OFF || !noted(&c, "has a '..' component", "memory only") ||
            !noted(&c, "set TILEC_CACHE_DIR to the directory's path without '..'", NULL))
            fail_msg("TILEC_CACHE_DIR=%s: mode %d, %d notes: %s", given, (int)c.mode, c.nnotes, c.nnotes ? c.notes[0] : "");
        free(get(&c, "k", 1, &f));
        cache_close(&c);
        struct stat st;
        if (stat(made, &st) == 0) fail_msg("TILEC_CACHE_DIR=%s made %s through the link", given, made);
        assert_int_equal(count_files(real, ".tcb$"), 0);
        assert_int_equal(count_files(dir, ".tcb$"), 0);
    }
    /* XDG_CACHE_HOME's path likewise, and its note names that variable */
    unsetenv("TILEC_CACHE_DIR");
    snprintf(given, sizeof given, "%s/x/..", link);
    setenv("XDG_CACHE_HOME", given, 1);
    cache_open(&c);
    assert_int_equal(c.mode, CACHE_OFF);
    assert_true(noted(&c, "has a '..' component", "set XDG_CACHE_HOME to"));
    cache_close(&c);
    unsetenv("XDG_CACHE_HOME");
    /* names that only begin with two dots are names: used */
    snprintf(given, sizeof given, "%s/..x/...", real);
    setenv("TILEC_CACHE_DIR", given, 1);
    cache_open(&c);
    assert_int_equal(c.mode, CACHE_RW);
    free(get(&c, "k", 1, &f));
    cache_close(&c);
    assert_int_equal(count_files(given, ".tcb$"), 1);
}

/* An entry that others may write, or that belongs to someone else, is rejected and
 * rebuilt (rw) or just not loaded (ro). */
static void test_untrusted_entries(void **state) {
    (void)state;
    fake f = {"an entry of the user's own", 0, NULL};
    rt_cache c;
    cache_open(&c);
    free(get(&c, "k", 1, &f));
    char path[512];
    entry_file(path, sizeof path);
    const mode_t modes[] = {0660, 0620, 0602, 0666};
    for (int m = 0; m < 4; m++) {
        assert_int_equal(chmod(path, modes[m]), 0);
        setenv("TILEC_CACHE", "ro", 1); /* ro: not loaded, left alone */
        rt_cache ro;
        cache_open(&ro);
        int before = builds;
        free(get(&ro, "k", 1, &f));
        assert_int_equal(builds, before + 1);
        assert_int_equal(ro.hits, 0);
        assert_int_equal(ro.rejected, 1);
        cache_close(&ro);
        unsetenv("TILEC_CACHE");
        int rejected = c.rejected; /* rw: rejected, rebuilt and replaced by a private one */
        free(get(&c, "k", 1, &f));
        assert_int_equal(builds, before + 2);
        assert_int_equal(c.rejected, rejected + 1);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        free(get(&c, "k", 1, &f));
        assert_int_equal(builds, before + 2); /* and that one is loaded */
    }
    if (geteuid() != 0) {
        print_message("skipped: an entry of another owner needs root to make (chown)\n");
        cache_close(&c);
        return;
    }
    assert_int_equal(chown(path, 65534, 65534), 0); /* nobody's, mode 0600 */
    int before = builds, rejected = c.rejected;
    free(get(&c, "k", 1, &f));
    assert_int_equal(builds, before + 1);
    assert_int_equal(c.rejected, rejected + 1);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, 0); /* replaced by root's own */
    free(get(&c, "k", 1, &f));
    assert_int_equal(builds, before + 1);
    cache_close(&c);
}

/* ---- settings ---- */

/* TILEC_CACHE_DIR naming a regular file: a note, memory only (it used to say nothing and
 * fail every store). */
static void test_dir_is_a_file(void **state) {
    (void)state;
    char file[600];
    snprintf(file, sizeof file, "%s/a-file", dir);
    FILE *p = fopen(file, "w");
    fclose(p);
    setenv("TILEC_CACHE_DIR", file, 1);
    const char *settings[] = {NULL, "ro"};
    fake f = {"x", 0, NULL};
    for (int s = 0; s < 2; s++) {
        if (settings[s]) setenv("TILEC_CACHE", settings[s], 1);
        else unsetenv("TILEC_CACHE");
        rt_cache c;
        cache_open(&c);
        assert_int_equal(c.mode, CACHE_OFF);
        assert_int_equal(c.nnotes, 1);
        assert_true(noted(&c, file, "is not a directory"));
        assert_true(noted(&c, "memory only", NULL));
        free(get(&c, "k", 1, &f));
        assert_int_equal(c.store_failures, 0); /* nothing is tried */
        cache_close(&c);
    }
    unsetenv("TILEC_CACHE");
}

/* The strict parser every number of the environment goes through. */
static void test_parse_u64(void **state) {
    (void)state;
    static const struct { const char *text; uint64_t want; } good[] = {
        {"0", 0}, {"300", 300}, {"007", 7}, {"1K", 1024}, {"1KiB", 1024}, {"3M", 3ull << 20}, {"3MiB", 3ull << 20},
        {"1G", 1ull << 30}, {"1GiB", 1ull << 30}, {"2T", 2ull << 40}, {"2TiB", 2ull << 40},
        {"18446744073709551615", 18446744073709551615ull}, {"16777215T", 16777215ull << 40},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        uint64_t v = 12345;
        assert_true(rt_parse_u64(good[i].text, rt_byte_units, UINT64_MAX, &v));
        assert_true(v == good[i].want);
    }
    static const char *bad[] = {
        "", "G", "1g", "1k", "1 G", " 1", "1 ", "-1", "+5", "1GB", "1Gi", "1KB", "0x10", "1.5G", "1e9", "1GG", "1GiBs",
        "18446744073709551616", "99999999999999999999999", "16777216T", "17179869184G", "1\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint64_t v = 12345;
        assert_false(rt_parse_u64(bad[i], rt_byte_units, UINT64_MAX, &v));
        assert_true(v == 12345); /* untouched */
    }
    uint64_t v = 0;
    assert_false(rt_parse_u64(NULL, rt_byte_units, UINT64_MAX, &v));
    assert_false(rt_parse_u64("1K", NULL, UINT64_MAX, &v)); /* no suffix where none is allowed */
    assert_true(rt_parse_u64("10", NULL, 10, &v) && v == 10);
    assert_false(rt_parse_u64("11", NULL, 10, &v)); /* the bound */
}

/* TILEC_CACHE_MAX_BYTES: 1G is 1 GiB (it was read as 1 byte); anything not read exactly
 * is a note that names it and what is accepted, and the default stays. */
static void test_max_bytes(void **state) {
    (void)state;
    static const struct { const char *text; uint64_t cap; } good[] = {
        {"1G", 1ull << 30}, {"512M", 512ull << 20}, {"2GiB", 2ull << 30}, {"300", 300}, {"1T", 1ull << 40}, {"", 1ull << 30},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        setenv("TILEC_CACHE_MAX_BYTES", good[i].text, 1);
        rt_cache c;
        cache_open(&c);
        assert_true(c.cap == good[i].cap);
        assert_int_equal(c.nnotes, 0);
        cache_close(&c);
    }
    static const char *bad[] = {"1g", "1GB", "-1", "1.5G", "abc", "18446744073709551616", "17179869184G", "10 M"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("TILEC_CACHE_MAX_BYTES", bad[i], 1);
        rt_cache c;
        cache_open(&c);
        assert_true(c.cap == 1ull << 30);
        assert_int_equal(c.nnotes, 1);
        char named[100];
        snprintf(named, sizeof named, "TILEC_CACHE_MAX_BYTES=%s is not a size", bad[i]);
        assert_true(noted(&c, named, "K, M, G or T (or KiB, MiB, GiB, TiB; powers of 1024)"));
        assert_true(noted(&c, "the default 1 GiB is used", NULL));
        assert_int_equal(c.mode, CACHE_RW); /* the cache itself still works */
        cache_close(&c);
    }
    unsetenv("TILEC_CACHE_MAX_BYTES");
}

/* An unknown TILEC_CACHE is refused with a note naming the accepted values; the cache is
 * then off (the variable is set to restrict the cache: a value that cannot be read must
 * not make it write). */
static void test_unknown_mode(void **state) {
    (void)state;
    static const char *bad[] = {"RW", "on", "1", "readonly", "no", "rw "};
    fake f = {"x", 0, NULL};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("TILEC_CACHE", bad[i], 1);
        rt_cache c;
        cache_open(&c);
        assert_int_equal(c.mode, CACHE_OFF);
        assert_int_equal(c.nnotes, 1);
        char named[100];
        snprintf(named, sizeof named, "TILEC_CACHE=%s is not one of rw, ro, off", bad[i]);
        assert_true(noted(&c, named, "memory only"));
        free(get(&c, "k", 1, &f));
        cache_close(&c);
    }
    assert_int_equal(count_files(dir, ".tcb$"), 0);
    setenv("TILEC_CACHE", "", 1); /* empty is unset: rw, quietly */
    rt_cache c;
    cache_open(&c);
    assert_int_equal(c.mode, CACHE_RW);
    assert_int_equal(c.nnotes, 0);
    cache_close(&c);
    unsetenv("TILEC_CACHE");
}

/* A directory path of 1100 characters is used whole (it used to be cut at 1023, and the
 * cut path created and used); one longer than a path may be is a note, memory only, and
 * nothing is created. */
static void test_long_dir(void **state) {
    (void)state;
    char deep[1200], comp[201];
    memset(comp, 'd', 200);
    comp[200] = '\0';
    int n = snprintf(deep, sizeof deep, "%s", dir);
    while (n < 1100) n += snprintf(deep + n, sizeof deep - (size_t)n, "/%s", comp);
    assert_true(strlen(deep) > 1100);
    setenv("TILEC_CACHE_DIR", deep, 1);
    fake f = {"deep", 0, NULL};
    rt_cache c;
    cache_open(&c);
    assert_int_equal(c.mode, CACHE_RW);
    assert_int_equal(c.nnotes, 0);
    free(get(&c, "k", 1, &f));
    cache_close(&c);
    assert_int_equal(count_files(deep, ".tcb$"), 1); /* in the directory named, not a cut one */
    cache_open(&c);
    free(get(&c, "k", 1, &f));
    assert_int_equal(c.hits, 1);
    cache_close(&c);
    char *huge = malloc(5000);
    n = snprintf(huge, 5000, "%s/huge", dir);
    while (n < 4900) n += snprintf(huge + n, 5000 - (size_t)n, "/%s", comp);
    setenv("TILEC_CACHE_DIR", huge, 1);
    cache_open(&c);
    assert_int_equal(c.mode, CACHE_OFF);
    assert_int_equal(c.nnotes, 1);
    assert_true(noted(&c, "characters long, more than a path may have", "memory only"));
    free(get(&c, "k", 1, &f));
    cache_close(&c);
    char top[700];
    snprintf(top, sizeof top, "%s/huge", dir);
    struct stat st;
    assert_int_not_equal(stat(top, &st), 0); /* no part of it was made */
    free(huge);
}

/* Temporaries left by a killed process are removed once they are 10 minutes old; a young
 * one (being written) and an old one whose writer still holds it (stopped) stay. */
static void test_orphan_temporaries(void **state) {
    (void)state;
    const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char orphan[700], young[700], held[700];
    snprintf(orphan, sizeof orphan, "%s/%s.tmp.99999.1", dir, hex);
    snprintf(young, sizeof young, "%s/%s.tmp.99999.2", dir, hex);
    snprintf(held, sizeof held, "%s/%s.tmp.99999.3", dir, hex);
    const char *all[] = {orphan, young, held};
    for (int i = 0; i < 3; i++) {
        int fd = open(all[i], O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        assert_true(write(fd, "half an entry", 13) == 13);
        close(fd);
    }
    struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    assert_int_equal(utimensat(AT_FDCWD, orphan, old, 0), 0);
    assert_int_equal(utimensat(AT_FDCWD, held, old, 0), 0);
    int hold = open(held, O_RDONLY); /* as its (stopped) writer would */
    assert_int_equal(flock(hold, LOCK_EX), 0);
    rt_cache c;
    cache_open(&c);
    fake f = {"x", 0, NULL};
    free(get(&c, "k", 1, &f)); /* a store: the directory is tidied */
    assert_int_equal(c.orphans_removed, 1);
    struct stat st;
    assert_int_not_equal(stat(orphan, &st), 0);
    assert_int_equal(stat(young, &st), 0);
    assert_int_equal(stat(held, &st), 0);
    close(hold); /* its writer is gone now */
    free(get(&c, "k2", 1, &f));
    assert_int_not_equal(stat(held, &st), 0);
    assert_int_equal(stat(young, &st), 0);
    cache_close(&c);
}

/* Locks of entries that are gone (an evicted entry, a build that never stored) are
 * removed once old and unheld; the lock of an entry that is there, a young one and a held
 * one stay. They used to pile up, one per key ever built. */
static void test_stale_locks(void **state) {
    (void)state;
    const char *gone = "1111111111111111111111111111111111111111111111111111111111111111";
    const char *young = "2222222222222222222222222222222222222222222222222222222222222222";
    const char *held = "3333333333333333333333333333333333333333333333333333333333333333";
    const char *kept = "4444444444444444444444444444444444444444444444444444444444444444";
    const char *names[] = {gone, young, held, kept};
    char path[4][700];
    for (int i = 0; i < 4; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s.lock", dir, names[i]);
        int fd = open(path[i], O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        close(fd);
    }
    char entry[700];
    snprintf(entry, sizeof entry, "%s/%s.tcb", dir, kept); /* kept's entry is there */
    int efd = open(entry, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(efd >= 0);
    close(efd);
    struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    for (int i = 0; i < 4; i++)
        if (i != 1) assert_int_equal(utimensat(AT_FDCWD, path[i], old, 0), 0);
    int hold = open(path[2], O_RDONLY); /* a builder at work */
    assert_int_equal(flock(hold, LOCK_EX), 0);
    rt_cache c;
    cache_open(&c);
    fake f = {"x", 0, NULL};
    free(get(&c, "k", 1, &f)); /* a store: the directory is tidied */
    struct stat st;
    assert_int_not_equal(stat(path[0], &st), 0);
    assert_int_equal(stat(path[1], &st), 0);
    assert_int_equal(stat(path[2], &st), 0);
    assert_int_equal(stat(path[3], &st), 0);
    close(hold);
    cache_close(&c);
}

/* A process stopped (SIGSTOP) while it holds a key's build lock: another waits at most
 * TILEC_CACHE_LOCK_WAIT_MS, then builds without the lock, gets the right payload and a
 * note; it used to wait forever. The waiter runs in a child with an alarm, so a wait that
 * does not end fails the test instead of hanging it. */
static void test_stopped_lock_holder(void **state) {
    (void)state;
    const char *key = "stuck key";
    uint8_t sum[32];
    char lock[700];
    rt_sha256(key, strlen(key), sum);
    int n = snprintf(lock, sizeof lock, "%s/", dir);
    for (int i = 0; i < 32; i++) n += snprintf(lock + n, sizeof lock - (size_t)n, "%02x", sum[i]);
    snprintf(lock + n, sizeof lock - (size_t)n, ".lock");
    pid_t holder = fork();
    if (holder == 0) {
        int fd = open(lock, O_RDWR | O_CREAT, 0600);
        if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
        raise(SIGSTOP);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(holder, &status, WUNTRACED), holder);
    bool stopped = WIFSTOPPED(status);
    setenv("TILEC_CACHE_LOCK_WAIT_MS", "300", 1);
    fake f = {"built while the lock was stuck", 0, NULL};
    pid_t waiter = fork();
    if (waiter == 0) {
        alarm(20);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rt_cache c;
        cache_open(&c);
        void *data = NULL;
        size_t len = 0;
        bool ok = cache_get(&c, key, strlen(key), 1, fake_build, &f, &data, &len) && len == strlen(f.payload) &&
                  memcmp(data, f.payload, len) == 0;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        bool said = c.lock_timeouts == 1 && strstr(c.lock_note, "held by another process for more than 300 ms") &&
                    strstr(c.lock_note, "built without waiting") && strstr(c.lock_note, lock);
        _exit(!ok ? 1 : !said ? 2 : ms < 290 ? 3 : ms > 5000 ? 4 : 0);
    }
    int wstatus = 0;
    pid_t got = waitpid(waiter, &wstatus, 0);
    kill(holder, SIGKILL); /* before any assert, so no stopped process outlives the test */
    waitpid(holder, &status, 0);
    assert_true(stopped);
    assert_int_equal(got, waiter);
    assert_true(WIFEXITED(wstatus)); /* not killed by its alarm */
    assert_int_equal(WEXITSTATUS(wstatus), 0);
    unsetenv("TILEC_CACHE_LOCK_WAIT_MS");
    rt_cache c; /* what it built was stored */
    cache_open(&c);
    builds = 0;
    free(get(&c, key, 1, &f));
    assert_int_equal(builds, 0);
    assert_int_equal(c.lock_timeouts, 0);
    cache_close(&c);
}

/* TILEC_CACHE_LOCK_WAIT_MS goes through the strict parser too. */
static void test_lock_wait_setting(void **state) {
    (void)state;
    static const char *bad[] = {"5s", "-1", "1K", "3600001", "1e3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("TILEC_CACHE_LOCK_WAIT_MS", bad[i], 1);
        rt_cache c;
        cache_open(&c);
        assert_true(c.lock_wait_ms == 5000);
        char named[100];
        snprintf(named, sizeof named, "TILEC_CACHE_LOCK_WAIT_MS=%s is not a number of milliseconds", bad[i]);
        assert_true(noted(&c, named, "from 0 to 3600000: the default 5000 is used"));
        cache_close(&c);
    }
    setenv("TILEC_CACHE_LOCK_WAIT_MS", "0", 1);
    rt_cache c;
    cache_open(&c);
    assert_true(c.lock_wait_ms == 0);
    assert_int_equal(c.nnotes, 0);
    cache_close(&c);
    unsetenv("TILEC_CACHE_LOCK_WAIT_MS");
}

/* ---- TILEC_DUMP_SOURCE ------------------------------------------------------------------ */

/* Plans one reduction (tilec_reduce_explain: lowered, emitted, compiled, loaded, not run)
 * through a runtime that is the simulator but compiles for CUDA sm_90 as a GPU's would,
 * with NVRTC; returns the context for its diagnostics. */
static tilec_ctx *jit_for_cuda(void) {
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    rt *r = ctx->runtime;
    r->target = (dsp_target){.backend = TILEC_BACKEND_CUDA, .arch = "sm_90", .warp_size = 32};
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {64, 100}, .naxes = 1, .axes = {-1}};
    char *plan = NULL;
    assert_int_equal(tilec_reduce_explain(ctx, &d, &plan), TILEC_OK);
    tilec_free(plan);
    return ctx;
}

/* The names in path that do not start with '.' (one at most is kept in *name). */
static int dumped(const char *path, char *name, size_t n) {
    DIR *dp = opendir(path);
    assert_non_null(dp);
    int count = 0;
    for (struct dirent *e; (e = readdir(dp));)
        if (e->d_name[0] != '.') { count++; snprintf(name, n, "%s", e->d_name); }
    closedir(dp);
    return count;
}

static void test_dump_source(void **state) {
    (void)state;
    if (!rtc_version(TILEC_BACKEND_CUDA)) { skip(); }
    char out[300], name[256], file[600], victim[300];
    snprintf(out, sizeof out, "%s/dump", dir);
    assert_int_equal(mkdir(out, 0700), 0);
    setenv("TILEC_DUMP_SOURCE", out, 1);
    setenv("TILEC_CACHE", "off", 1);
    tilec_ctx *ctx = jit_for_cuda();
    assert_int_equal(tilec_diag_count(ctx), 0);
    tilec_close(ctx);
    /* one file, named by the kernel and the key, holding the kernel NVRTC compiled */
    assert_int_equal(dumped(out, name, sizeof name), 1);
    assert_int_equal(strncmp(name, "tilec_reduce-", 13), 0);
    assert_int_equal(strlen(name), strlen("tilec_reduce-") + 16 + strlen(".cu"));
    assert_string_equal(name + strlen(name) - 3, ".cu");
    snprintf(file, sizeof file, "%s/%s", out, name);
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    assert_non_null(strstr(text, "__global__"));
    assert_non_null(strstr(text, "tilec_reduce("));
    /* the same kernel again: the same name, still one file */
    tilec_close(jit_for_cuda());
    assert_int_equal(dumped(out, name, sizeof name), 1);
    /* a symlink planted at the name is replaced, never followed */
    snprintf(victim, sizeof victim, "%s/victim", dir);
    f = fopen(victim, "w");
    fputs("keep", f);
    fclose(f);
    assert_int_equal(unlink(file), 0);
    assert_int_equal(symlink(victim, file), 0);
    tilec_close(jit_for_cuda());
    struct stat st;
    assert_int_equal(lstat(file, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_size, 4);
    /* DIR that is a file, or missing: a warning, and the reduction is planned all the same */
    const char *bad[] = {victim, "/nonexistent/tilec-dump"};
    for (int i = 0; i < 2; i++) {
        setenv("TILEC_DUMP_SOURCE", bad[i], 1);
        ctx = jit_for_cuda();
        assert_int_equal(tilec_diag_count(ctx), 1);
        tilec_diag dg;
        assert_int_equal(tilec_diag_get(ctx, 0, &dg), TILEC_OK);
        assert_int_equal(dg.severity, TILEC_SEV_WARNING);
        assert_non_null(strstr(dg.message, "TILEC_DUMP_SOURCE="));
        assert_non_null(strstr(dg.message, "its source is not saved (set it to an existing directory)"));
        assert_non_null(strstr(tilec_diag_text(ctx), "tilec: warning: TILEC_DUMP_SOURCE="));
        tilec_close(ctx);
    }
    unsetenv("TILEC_DUMP_SOURCE");
    unsetenv("TILEC_CACHE");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256),
        cmocka_unit_test_setup_teardown(test_hit_and_miss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_and_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eviction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eviction_spares_other_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_build_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes_share, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_untrusted_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_symlink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_dotdot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_untrusted_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_is_a_file, setup, teardown),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test_setup_teardown(test_max_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_orphan_temporaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_locks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_lock_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_wait_setting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dump_source, setup, teardown),
    };
    return cmocka_run_group_tests_name("kernel cache", tests, NULL, NULL);
}
