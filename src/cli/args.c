/*
 * args.c — how every command reads its command line: options that take one value (an
 * error when the value is missing or the option is given twice), the one strict parser
 * that every number goes through (the whole text, decimal, range-checked, and a message
 * that names the option and the range), lists of numbers built on it, and the backend
 * and warp-size words several commands share.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int usage_error(const char *cmd, const char *fmt, const char *arg) {
    fprintf(stderr, "tilec%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'tilec %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
    return EXIT_USAGE;
}

bool is_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

/* The spec named by arg[0 .. len): its name or its alias. */
static const opt_spec *find_spec(const opt_spec *specs, int n, const char *arg, size_t len) {
    for (int k = 0; k < n; k++) {
        const char *names[2] = {specs[k].name, specs[k].alias};
        for (int j = 0; j < 2; j++)
            if (names[j] && strlen(names[j]) == len && strncmp(names[j], arg, len) == 0) return &specs[k];
    }
    return NULL;
}

/* Stores or passes on one option's value. */
static int take_value(const char *cmd, const opt_spec *o, const char *v) {
    if (o->kind == OPT_REPEAT) return o->each(o->arg, o->name, v);
    if (*o->value) {
        fprintf(stderr, "tilec %s: option %s is given twice ('%s', then '%s'); give it once\n", cmd, o->name, *o->value, v);
        fprintf(stderr, "Try 'tilec %s --help'.\n", cmd);
        return EXIT_USAGE;
    }
    *o->value = v;
    return EXIT_OK;
}

int parse_options(const char *cmd, int argc, char **argv, const opt_spec *specs, int n, const char **operands, int max,
                  int *noperands) {
    bool options = true; /* until "--" */
    *noperands = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options && strcmp(a, "--") == 0) { options = false; continue; }
        if (!options || a[0] != '-' || !a[1]) { /* an operand ("-" is standard input or output) */
            if (*noperands == max) {
                if (max == 0) return usage_error(cmd, "takes no FILE; '%s' is extra (options start with --)", a);
                if (max == 1) return usage_error(cmd, "one FILE only; '%s' is extra", a);
                return usage_error(cmd, "too many FILEs; '%s' is extra", a);
            }
            operands[(*noperands)++] = a;
            continue;
        }
        bool is_long = a[1] == '-';
        const char *eq = is_long ? strchr(a, '=') : NULL;
        size_t len = eq ? (size_t)(eq - a) : is_long ? strlen(a) : 2;
        const opt_spec *o = find_spec(specs, n, a, len);
        /* a short option is one letter: "-ofile" is -o with "file", "-ix" is unknown */
        if (o && !is_long && a[2] && o->kind == OPT_FLAG) o = NULL;
        if (!o) {
            fprintf(stderr, "tilec %s: unknown option %.*s; see tilec %s --help\n", cmd,
                    (int)(is_long ? len : strlen(a)), a, cmd);
            return EXIT_USAGE;
        }
        if (o->kind == OPT_FLAG) {
            if (eq) {
                fprintf(stderr, "tilec %s: option %.*s takes no value, not '%s'; give %.*s alone\n", cmd, (int)len, a, eq + 1,
                        (int)len, a);
                fprintf(stderr, "Try 'tilec %s --help'.\n", cmd);
                return EXIT_USAGE;
            }
            *o->flag = true;
            continue;
        }
        const char *v = eq ? eq + 1 : !is_long && a[2] ? a + 2 : NULL;
        if (!v) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tilec %s: option %s needs a value\n", cmd, o->name);
                fprintf(stderr, "Try 'tilec %s --help'.\n", cmd);
                return EXIT_USAGE;
            }
            v = argv[++i]; /* whatever it is: "--axes -1" takes "-1" */
        }
        int r = take_value(cmd, o, v);
        if (r) return r;
    }
    return EXIT_OK;
}

/* The digits of TEXT[0, len) as a sign and a magnitude; false unless they are all of a
 * decimal integer: an optional '-', then one or more digits, nothing else (no '+', no
 * spaces, no other base), and a magnitude below 2^64. */
static bool scan_integer(const char *text, size_t len, bool *negative, uint64_t *magnitude) {
    size_t i = 0;
    *negative = len > 0 && text[0] == '-';
    if (*negative) i++;
    if (i == len) return false;
    uint64_t m = 0;
    for (; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') return false;
        unsigned digit = (unsigned)(text[i] - '0');
        if (m > (UINT64_MAX - digit) / 10) return false;
        m = m * 10 + digit;
    }
    *magnitude = m;
    return true;
}

/* A bound of a range as a sign and a magnitude, so that int64_t and uint64_t bounds meet in
 * one parser. */
typedef struct bound {
    bool negative;
    uint64_t magnitude;
} bound;

static bound bound_of(int64_t v) {
    /* |v| without overflow, INT64_MIN included */
    return v < 0 ? (bound){true, (uint64_t)(-(v + 1)) + 1} : (bound){false, (uint64_t)v};
}

static int64_t int_of(bool negative, uint64_t m) { return negative ? -(int64_t)(m - 1) - 1 : (int64_t)m; }

/* The one parser every number of the command line goes through: TEXT[0, len) must be a
 * whole decimal integer in [lo, hi] (hi >= 0). WHOLE, when not NULL, is the list (of
 * items separated by SEP) the text is an item of, and is named in the message. On success *negative and *magnitude
 * hold the value (-0 reads as 0). */
static int parse_number(const char *cmd, const char *opt, const char *text, size_t len, const char *whole,
                        char sep, bound lo, uint64_t hi, bool *negative, uint64_t *magnitude) {
    bool neg;
    uint64_t m;
    bool ok = scan_integer(text, len, &neg, &m);
    if (ok && m == 0) neg = false;
    if (ok) ok = neg ? lo.negative && m <= lo.magnitude : m <= hi && (lo.negative || m >= lo.magnitude);
    if (ok) {
        *negative = neg;
        *magnitude = m;
        return EXIT_OK;
    }
    char range[96];
    int at = snprintf(range, sizeof range, "%s%" PRIu64 " to %" PRIu64, lo.negative ? "-" : "", lo.magnitude, hi);
    int shown = len > 64 ? 64 : (int)len;
    const char *cut = len > 64 ? "..." : "";
    if (!whole) {
        fprintf(stderr, "tilec %s: %s takes an integer from %s, not '%.*s%s'\n", cmd, opt, range, shown, text, cut);
    } else {
        snprintf(range + at, sizeof range - (size_t)at, " separated by '%c'", sep);
        if (len == 0) fprintf(stderr, "tilec %s: %s takes integers from %s, not '%s' (an empty item)\n", cmd, opt, range, whole);
        else if (len == strlen(whole)) fprintf(stderr, "tilec %s: %s takes integers from %s, not '%s'\n", cmd, opt, range, whole);
        else fprintf(stderr, "tilec %s: %s takes integers from %s, not '%s' ('%.*s%s' is not one)\n", cmd, opt, range,
                     whole, shown, text, cut);
    }
    fprintf(stderr, "Try 'tilec %s --help'.\n", cmd);
    return EXIT_USAGE;
}

int parse_int(const char *cmd, const char *opt, const char *text, int64_t lo, int64_t hi, int64_t *out) {
    bool neg;
    uint64_t m;
    int rc = parse_number(cmd, opt, text, strlen(text), NULL, 0, bound_of(lo), (uint64_t)hi, &neg, &m);
    if (rc == EXIT_OK) *out = int_of(neg, m);
    return rc;
}

int parse_uint(const char *cmd, const char *opt, const char *text, uint64_t hi, uint64_t *out) {
    bool neg;
    return parse_number(cmd, opt, text, strlen(text), NULL, 0, bound_of(0), hi, &neg, out);
}

int parse_int_list(const char *cmd, const char *opt, const char *text, char sep, int64_t lo, int64_t hi,
                   int64_t *out, int max, int *n) {
    *n = 0;
    for (const char *p = text;;) {
        const char *end = strchr(p, sep);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (*n == max) {
            fprintf(stderr, "tilec %s: %s takes at most %d values, not '%s'\n", cmd, opt, max, text);
            fprintf(stderr, "Try 'tilec %s --help'.\n", cmd);
            return EXIT_USAGE;
        }
        bool neg;
        uint64_t m;
        int rc = parse_number(cmd, opt, p, len, text, sep, bound_of(lo), (uint64_t)hi, &neg, &m);
        if (rc) return rc;
        out[(*n)++] = int_of(neg, m);
        if (!end) return EXIT_OK;
        p = end + 1;
    }
}

int parse_warp_size(const char *cmd, const char *v, int *out) {
    if (strcmp(v, "32") != 0 && strcmp(v, "64") != 0) return usage_error(cmd, "--warp-size must be 32 or 64, not '%s'", v);
    *out = v[0] == '3' ? 32 : 64;
    return EXIT_OK;
}

int parse_sim_budget(const char *cmd, const char *v, uint64_t *out) {
    if (strcmp(v, "unlimited") == 0) {
        *out = TILEC_SIM_UNLIMITED;
        return EXIT_OK;
    }
    if (!v[0] || strspn(v, "0123456789") != strlen(v))
        return usage_error(cmd, "--sim-budget takes a number of thread-steps (0: the default) or 'unlimited', not '%s'", v);
    return parse_uint(cmd, "--sim-budget", v, UINT64_MAX, out); /* UINT64_MAX is unlimited too */
}

const char *join_names(char *buf, size_t n, const char *const *names, int count) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < count && at < n; i++) {
        int w = snprintf(buf + at, n - at, "%s%s", i == 0 ? "" : i == count - 1 ? " or " : ", ", names[i]);
        if (w < 0) break;
        at += (size_t)w;
    }
    return buf;
}

int parse_backend(const char *cmd, const char *opt, const char *v, bool gpu_only, tilec_backend *out) {
    const char *names[TILEC_BACKEND_COUNT];
    tilec_backend which[TILEC_BACKEND_COUNT];
    int n = 0;
    for (int b = 0; b < TILEC_BACKEND_COUNT; b++) /* the backends this option takes (GPU ones emit files) */
        if (!gpu_only || tilec_backend_file_extension((tilec_backend)b, false))
            names[n] = tilec_backend_name((tilec_backend)b), which[n++] = (tilec_backend)b;
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = which[i];
            return EXIT_OK;
        }
    char list[64];
    fprintf(stderr, "tilec %s: %s must be %s, not '%s'\nTry 'tilec %s --help'.\n", cmd, opt,
            join_names(list, sizeof list, names, n), v, cmd);
    return EXIT_USAGE;
}

/* numpy's names, indexed by dtype, from the public list (tilec.h) */
static const char *const numpy_names[TILEC_DTYPE_COUNT] = {
#define X(s, n) [TILEC_##s] = n,
    TILEC_DTYPE_NUMPY_LIST(X)
#undef X
};

const char *numpy_dtype_name(tilec_dtype d) { return (int)d >= 0 && d < TILEC_DTYPE_COUNT ? numpy_names[d] : NULL; }

int parse_dtype(const char *cmd, const char *opt, const char *v, unsigned allowed, tilec_dtype *out) {
    for (int t = 0; t < TILEC_DTYPE_COUNT; t++) {
        if (!(allowed & (1u << t))) continue;
        if (!strcmp(v, tilec_dtype_name((tilec_dtype)t)) || (numpy_names[t] && !strcmp(v, numpy_names[t]))) {
            *out = (tilec_dtype)t;
            return EXIT_OK;
        }
    }
    char list[256];
    size_t at = 0;
    list[0] = '\0';
    int n = 0, count = 0;
    for (int t = 0; t < TILEC_DTYPE_COUNT; t++) count += (allowed >> t) & 1;
    for (int t = 0; t < TILEC_DTYPE_COUNT && at < sizeof list; t++) {
        if (!(allowed & (1u << t))) continue;
        int w = snprintf(list + at, sizeof list - at, "%s%s (%s)", n == 0 ? "" : n == count - 1 ? " or " : ", ",
                         tilec_dtype_name((tilec_dtype)t), numpy_names[t]);
        if (w < 0) break;
        at += (size_t)w;
        n++;
    }
    fprintf(stderr, "tilec %s: %s must be %s, not '%.100s'\nTry 'tilec %s --help'.\n", cmd, opt, list, v, cmd);
    return EXIT_USAGE;
}
