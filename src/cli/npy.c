/*
 * npy.c — numpy's .npy format for --in and --out of `tilec run` and `tilec reduce`: the
 * header parsed strictly and within bounds, and written for a file name that ends in
 * ".npy". The bytes themselves go through io.c (read_npy, write_tensor).
 *
 * A .npy file is: the magic "\x93NUMPY", a version byte pair (1.0: a 2-byte header
 * length; 2.0 and 3.0: 4 bytes), the little-endian header length, then the header: a
 * Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), } padded
 * with spaces and ended by '\n'; then the elements, row-major unless fortran_order.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

bool is_npy_path(const char *path) {
    size_t n = strlen(path);
    return n > 4 && strcmp(path + n - 4, ".npy") == 0;
}

/* numpy's descr of each dtype, as tilec writes it (bf16, which numpy lacks: its 16-bit
 * patterns as uint16, read back with .view(ml_dtypes.bfloat16)) */
static const char *const descr_of[TILEC_DTYPE_COUNT] = {
    [TILEC_F16] = "<f2", [TILEC_BF16] = "<u2", [TILEC_F32] = "<f4", [TILEC_F64] = "<f8",
    [TILEC_I32] = "<i4", [TILEC_U32] = "<u4", [TILEC_I64] = "<i8",
};

const char *npy_descr(tilec_dtype dt) { return (int)dt >= 0 && dt < TILEC_DTYPE_COUNT ? descr_of[dt] : NULL; }

/* ---- parsing ----------------------------------------------------------------------------- */

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_space(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t')) c->p++;
}

static bool take(cursor *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return false;
    c->p += n;
    return true;
}

/* A Python string literal in single or double quotes, of printable ASCII without escapes. */
static bool take_string(cursor *c, char *out, size_t n) {
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char q = *c->p++;
    size_t len = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || *c->p < 0x20 || *c->p > 0x7e || len + 1 >= n) return false;
        out[len++] = *c->p++;
    }
    if (c->p >= c->end) return false;
    c->p++;
    out[len] = '\0';
    return true;
}

/* A decimal integer from 0 to TILEC_MAX_ELEMENTS. */
static bool take_extent(cursor *c, int64_t *v) {
    int64_t x = 0;
    const char *start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        if (c->p - start >= 16) return false;
        x = x * 10 + (*c->p++ - '0');
    }
    if (c->p == start || x > TILEC_MAX_ELEMENTS) return false;
    *v = x;
    return true;
}

/* (), (5,), (3, 5) and (3, 5,): at most TILEC_MAX_RANK extents. */
static bool take_shape(cursor *c, npy_header *h, char *why, size_t n) {
    if (!take(c, "(")) return snprintf(why, n, "'shape' is not a tuple"), false;
    h->rank = 0;
    skip_space(c);
    while (!take(c, ")")) {
        if (h->rank == TILEC_MAX_RANK) return snprintf(why, n, "'shape' has more than %d extents", TILEC_MAX_RANK), false;
        if (!take_extent(c, &h->shape[h->rank]))
            return snprintf(why, n, "'shape' holds something other than extents from 0 to 2^48"), false;
        h->rank++;
        skip_space(c);
        bool comma = take(c, ",");
        skip_space(c);
        if (!comma && !(c->p < c->end && *c->p == ')')) return snprintf(why, n, "'shape' is not a tuple of integers"), false;
        if (!comma && h->rank == 1) return snprintf(why, n, "'shape' is not a tuple of integers"), false; /* (5) */
    }
    return true;
}

int npy_parse(const char *path, const unsigned char *buf, size_t len, npy_header *h) {
    char why[160] = "";
    memset(h, 0, sizeof *h);
    h->dtype = TILEC_DTYPE_COUNT;
    if (len < 6 || memcmp(buf, "\x93NUMPY", 6) != 0) {
        snprintf(why, sizeof why, "it does not start with numpy's magic \\x93NUMPY");
        goto bad;
    }
    if (len < 10) {
        snprintf(why, sizeof why, "it ends inside its preamble");
        goto bad;
    }
    int major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0) {
        snprintf(why, sizeof why, "format version %d.%d; tilec reads 1.0, 2.0 and 3.0", major, minor);
        goto bad;
    }
    size_t at = major == 1 ? 10 : 12;
    if (len < at) {
        snprintf(why, sizeof why, "it ends inside its preamble");
        goto bad;
    }
    uint64_t hlen = major == 1 ? (uint64_t)buf[8] | (uint64_t)buf[9] << 8
                               : (uint64_t)buf[8] | (uint64_t)buf[9] << 8 | (uint64_t)buf[10] << 16 | (uint64_t)buf[11] << 24;
    if (hlen > NPY_MAX_HEADER) {
        snprintf(why, sizeof why, "a header of %" PRIu64 " bytes; tilec reads headers of at most %d", hlen, NPY_MAX_HEADER);
        goto bad;
    }
    if (len < at + hlen) {
        snprintf(why, sizeof why, "it ends inside its header");
        goto bad;
    }
    h->data_offset = at + (size_t)hlen;
    cursor c = {(const char *)buf + at, (const char *)buf + at + hlen};
    if (hlen == 0 || c.end[-1] != '\n') {
        snprintf(why, sizeof why, "its header does not end with a newline");
        goto bad;
    }
    c.end--;
    while (c.end > c.p && c.end[-1] == ' ') c.end--; /* the padding */
    bool seen_descr = false, seen_order = false, seen_shape = false;
    char descr[32] = "";
    skip_space(&c);
    if (!take(&c, "{")) {
        snprintf(why, sizeof why, "its header is not a dict");
        goto bad;
    }
    for (;;) {
        skip_space(&c);
        if (take(&c, "}")) break;
        char key[32];
        if (!take_string(&c, key, sizeof key)) {
            snprintf(why, sizeof why, "its header is not a dict of 'descr', 'fortran_order' and 'shape'");
            goto bad;
        }
        skip_space(&c);
        if (!take(&c, ":")) {
            snprintf(why, sizeof why, "its header has no ':' after '%s'", key);
            goto bad;
        }
        skip_space(&c);
        bool *seen = !strcmp(key, "descr") ? &seen_descr : !strcmp(key, "fortran_order") ? &seen_order
                   : !strcmp(key, "shape") ? &seen_shape : NULL;
        if (!seen) {
            snprintf(why, sizeof why, "its header has the key '%s'; tilec knows 'descr', 'fortran_order' and 'shape'", key);
            goto bad;
        }
        if (*seen) {
            snprintf(why, sizeof why, "its header gives '%s' twice", key);
            goto bad;
        }
        *seen = true;
        if (seen == &seen_descr && !take_string(&c, descr, sizeof descr)) {
            snprintf(why, sizeof why, "'descr' is not a simple dtype string (a structured or object dtype?)");
            goto bad;
        }
        if (seen == &seen_order) {
            if (take(&c, "True")) h->fortran_order = true;
            else if (!take(&c, "False")) {
                snprintf(why, sizeof why, "'fortran_order' is neither True nor False");
                goto bad;
            }
        }
        if (seen == &seen_shape && !take_shape(&c, h, why, sizeof why)) goto bad;
        skip_space(&c);
        if (take(&c, ",")) continue;
        skip_space(&c);
        if (take(&c, "}")) break;
        snprintf(why, sizeof why, "its header dict is not separated by commas");
        goto bad;
    }
    skip_space(&c);
    if (c.p != c.end) {
        snprintf(why, sizeof why, "its header has text after the dict");
        goto bad;
    }
    if (!seen_descr || !seen_order || !seen_shape) {
        snprintf(why, sizeof why, "its header lacks '%s'", !seen_descr ? "descr" : !seen_order ? "fortran_order" : "shape");
        goto bad;
    }
    snprintf(h->descr, sizeof h->descr, "%s", descr);
    if (tensor_elements(h->shape, h->rank) < 0) {
        snprintf(why, sizeof why, "its shape has more than 2^48 elements");
        goto bad;
    }
    for (int t = 0; t < TILEC_DTYPE_COUNT; t++)
        if (t != TILEC_BF16 && !strcmp(descr, descr_of[t])) h->dtype = (tilec_dtype)t;
    /* bf16 as ml_dtypes' bfloat16 saves it: a void of 2 bytes (uint16, "<u2", is uint16:
     * bf16 only where a bf16 is asked for, npy_expect) */
    if (!strcmp(descr, "<V2") || !strcmp(descr, "|V2")) h->dtype = TILEC_BF16;
    return EXIT_OK;
bad:
    fprintf(stderr, "tilec: '%s' is not a .npy file tilec reads: %s\n", path, why);
    return EXIT_BAD_INPUT;
}

/* "float32[3, 5]" */
static const char *npy_text(tilec_dtype dt, const char *descr, const int64_t *shape, int rank, char *buf, size_t n) {
    size_t at = (size_t)snprintf(buf, n, "%s[", dt < TILEC_DTYPE_COUNT ? numpy_dtype_name(dt)
                                                : !strcmp(descr, "<u2") ? "uint16" : descr);
    for (int k = 0; k < rank && at < n; k++) at += (size_t)snprintf(buf + at, n - at, "%s%" PRId64, k ? ", " : "", shape[k]);
    if (at < n) snprintf(buf + at, n - at, "]");
    return buf;
}

int npy_layout(const char *opt, const char *path, const npy_header *h) {
    if (h->fortran_order) {
        fprintf(stderr, "tilec: %s '%s' is in Fortran (column-major) order; tilec reads row-major: save "
                        "np.ascontiguousarray(x) instead\n", opt, path);
        return EXIT_BAD_INPUT;
    }
    if (h->descr[0] == '>') {
        fprintf(stderr, "tilec: %s '%s' holds big-endian elements ('%s'); tilec reads little-endian: save "
                        "x.astype('<%s') instead\n", opt, path, h->descr, h->descr + 1);
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

int npy_expect(const char *opt, const char *path, const npy_header *h, tilec_dtype dt, const int64_t *shape, int rank,
               const char *what) {
    char have[160], want[160];
    npy_text(h->dtype, h->descr, h->shape, h->rank, have, sizeof have);
    npy_text(dt, NULL, shape, rank, want, sizeof want);
    if (npy_layout(opt, path, h)) return EXIT_BAD_INPUT;
    /* bf16 is read from its 16-bit patterns: a uint16 array (or ml_dtypes' void of 2) */
    bool patterns = dt == TILEC_BF16 && !strcmp(h->descr, "<u2");
    if (h->dtype == TILEC_DTYPE_COUNT && !patterns) {
        fprintf(stderr, "tilec: %s '%s' holds dtype '%s', which tilec does not reduce; %s is %s: save x.astype('%s')\n", opt,
                path, h->descr, what, want, numpy_dtype_name(dt) && dt != TILEC_BF16 ? numpy_dtype_name(dt) : "uint16");
        return EXIT_BAD_INPUT;
    }
    bool same_dtype = h->dtype == dt || patterns;
    bool same_shape = h->rank == rank;
    for (int k = 0; same_shape && k < rank; k++) same_shape = h->shape[k] == shape[k];
    if (!same_dtype || !same_shape) {
        if (!same_dtype)
            fprintf(stderr, "tilec: %s '%s' holds %s, but %s is %s: save x.astype('%s')\n", opt, path, have, what, want,
                    dt == TILEC_BF16 ? "uint16" : numpy_dtype_name(dt));
        else
            fprintf(stderr, "tilec: %s '%s' holds %s, but %s is %s: give an array of that shape\n", opt, path, have, what,
                    want);
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

size_t npy_format_header(char *out, size_t n, tilec_dtype dt, const int64_t *shape, int rank) {
    char dict[NPY_HEADER_ROOM];
    size_t at = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr_of[dt]);
    for (int k = 0; k < rank; k++) at += (size_t)snprintf(dict + at, sizeof dict - at, "%s%" PRId64, k ? ", " : "", shape[k]);
    at += (size_t)snprintf(dict + at, sizeof dict - at, "%s), }", rank == 1 ? "," : "");
    /* padded with spaces and a '\n' so the data starts at a multiple of 64, as numpy does */
    size_t total = (10 + at + 1 + 63) / 64 * 64;
    if (total > n) return 0;
    size_t hlen = total - 10;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (char)(hlen & 0xff);
    out[9] = (char)(hlen >> 8);
    memcpy(out + 10, dict, at);
    memset(out + 10 + at, ' ', hlen - at - 1);
    out[total - 1] = '\n';
    return total;
}
