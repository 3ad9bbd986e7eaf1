/*
 * names.c — the names a user's identifier takes in emitted code (cg_name).
 *
 * A kernel, func, parameter or buffer keeps its spelling in the .cu / .hip file unless
 * that spelling could mean something else there: a C++ keyword, a CUDA or HIP built-in,
 * a function, type or macro that NVRTC, hiprtc or a user's nvcc / hipcc build declares
 * (the device math library, the C library the CUDA runtime header brings in), or one of
 * our own names (tl_…, the prelude's TL_P<ABI>_…). Such a name becomes "tl_u_" + itself,
 * which nothing else starts with: renamed names never meet each other or ours.
 *
 * What could clash is decided by rules (needs_rename) and one table (reserved[]). The
 * rules cover open families: reserved identifiers (_x, __ anywhere), macro-like names (no
 * lower-case letter: INT_MAX, EOF, M_PI; X_… too, as M_PIf and L_tmpnam), POSIX's *_t
 * types (size_t, int8_t, cudaError_t), vendor prefixes (cudaMalloc, cuMemAlloc,
 * hipMalloc, nv_bfloat16, CUDART_…). The table lists the rest; a name is in it also with
 * one or two of the suffixes below (expf, sqrtl, lgammaf_r, fopen64, float4, uint3,
 * clock64) and after "make_" (make_float4). It was checked against NVRTC 13 and, for a
 * user's nvcc build, g++ 12 with glibc 2.36: every identifier their headers declare or
 * define that fails to compile as a kernel's name or parameter is renamed.
 * tests/codegen_warnings.sh and tests/cli_test.sh compile kernels of such names.
 *
 * A kernel's exported symbol is its emitted name: tilec_launch_info_get returns it, and
 * every launch by name (tilec run, tilec_run_kernel, gpu_check) goes through cg_name.
 */
#include "codegen.h"

#include <stdbool.h>
#include <string.h>

/* Names that are taken in emitted code, alone or with suffixes (see the top). */
static const char *const reserved[] = {
    /* C++ keywords (and C's restrict) */
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case",
    "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval",
    "constexpr", "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype",
    "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern",
    "false", "float", "for", "friend", "goto", "if", "import", "inline", "int", "long", "module", "mutable",
    "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private",
    "protected", "public", "register", "reinterpret_cast", "requires", "restrict", "return", "short",
    "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this",
    "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
    /* CUDA / HIP built-in variables, types and functions (vectors: float + 4, make_ + float4) */
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "clock", "clock64", "wall_clock64", "dim3",
    "uint3", "atomicAdd", "atomicSub", "atomicExch", "atomicMin", "atomicMax", "atomicInc", "atomicDec",
    "atomicCAS", "atomicAnd", "atomicOr", "atomicXor", "half", "bfloat16", "nv_bfloat16", "uchar", "ushort",
    "uint", "ulong", "longlong", "ulonglong", "printf", "malloc", "free", "memcpy", "memset", "assert",
    "main", "std",
    /* the device math library (CUDA's, HIP's, C's): each with its f, l, f32… forms */
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos",
    "cosh", "cospi", "cyl_bessel_i0", "cyl_bessel_i1", "dadd", "ddiv", "dfma", "dmul", "drem", "dsqrt",
    "dsub", "erf", "erfc", "erfcinv", "erfcx", "erfinv", "exp", "exp10", "exp2", "expm1", "f32add",
    "f32div", "f32fma", "f32mul", "f32sqrt", "f32sub", "f32xadd", "f32xdiv", "f32xfma", "f32xmul",
    "f32xsqrt", "f32xsub", "f64add", "f64div", "f64fma", "f64mul", "f64sqrt", "f64sub", "f64xadd",
    "f64xdiv", "f64xfma", "f64xmul", "f64xsqrt", "f64xsub", "fabs", "fadd", "fdim", "fdiv", "fdivide",
    "ffma", "finite", "floor", "fma", "fmax", "fmaximum", "fmaximum_mag", "fmaximum_mag_num",
    "fmaximum_num", "fmaxmag", "fmin", "fminimum", "fminimum_mag", "fminimum_mag_num", "fminimum_num",
    "fminmag", "fmod", "fmul", "frexp", "fromfp", "fromfpx", "fsqrt", "fsub", "gamma", "getpayload",
    "hypot", "ilogb", "isfinite", "isinf", "isnan", "issubnormal", "j0", "j1", "jn", "labs", "ldexp",
    "lgamma", "llabs", "llmax", "llmin", "llogb", "llrint", "llround", "log", "log10", "log1p", "log2",
    "logb", "lrint", "lround", "max", "min", "modf", "nan", "nearbyint", "nextafter", "nextdown",
    "nexttoward", "nextup", "norm", "norm3d", "norm4d", "normcdf", "normcdfinv", "pow", "rcbrt",
    "remainder", "remquo", "rhypot", "rint", "rnorm", "rnorm3d", "rnorm4d", "round", "roundeven", "rsqrt",
    "scalb", "scalbln", "scalbn", "setpayload", "setpayloadsig", "signbit", "significand", "sin", "sincos",
    "sincospi", "sinh", "sinpi", "sqrt", "tan", "tanh", "tgamma", "totalorder", "totalordermag", "trunc",
    "ufromfp", "ufromfpx", "ullmax", "ullmin", "umax", "umin", "y0", "y1", "yn",
    /* the C and POSIX library of a host build (glibc, which cuda_runtime.h includes) */
    "CUuuid", "INFINITY", "NAN", "NULL", "a64l", "abort", "aligned_alloc", "alloca", "arc4random",
    "arc4random_buf", "arc4random_uniform", "asctime", "asprintf", "assert_perror", "atexit", "atof",
    "atoi", "atol", "bcmp", "bcopy", "be16toh", "be32toh", "be64toh", "bsearch", "bzero", "calloc",
    "canonicalize", "canonicalize_file_name", "clearenv", "clearerr", "clock_adjtime",
    "clock_getcpuclockid", "clock_getres", "clock_gettime", "clock_nanosleep", "clock_settime", "ctermid",
    "ctime", "cuserid", "daylight", "difftime", "div", "dprintf", "drand48", "dysize", "ecvt", "erand48",
    "errno", "exit", "explicit_bzero", "fclose", "fcloseall", "fcvt", "fd_mask", "fd_set", "fdopen", "feof",
    "ferror", "fflush", "ffs", "fgetc", "fgetpos", "fgets", "fileno", "flockfile", "fmemopen", "fopen",
    "fopencookie", "fprintf", "fputc", "fputs", "fread", "freopen", "fscanf", "fseek", "fseeko", "fsetpos",
    "ftell", "ftello", "ftrylockfile", "funlockfile", "fwrite", "gcvt", "getc", "getchar", "getdate",
    "getdate_err", "getdelim", "getenv", "getline", "getloadavg", "getpt", "getsubopt", "getw", "gmtime",
    "grantpt", "htobe16", "htobe32", "htobe64", "htole16", "htole32", "htole64", "initstate", "isalnum",
    "isalpha", "isascii", "isblank", "iscntrl", "isctype", "isdigit", "isgraph", "isinff", "isinfl",
    "islower", "isnanf", "isnanl", "isprint", "ispunct", "isspace", "isupper", "isxdigit", "jrand48",
    "l64a", "lcong48", "ldiv", "le16toh", "le32toh", "le64toh", "libraryPropertyType", "linux", "lldiv",
    "localtime", "longjmp", "lrand48", "math_errhandling", "mblen", "mbstowcs", "mbtowc", "memccpy",
    "memcmp", "memfrob", "memmem", "memmove", "mempcpy", "mkdtemp", "mkostemp", "mkostemps", "mkstemp",
    "mkstemps", "mktemp", "mktime", "mrand48", "nanosleep", "nrand48", "obstack_printf", "obstack_vprintf",
    "offsetof", "on_exit", "open_memstream", "pclose", "perror", "popen", "posix_memalign", "posix_openpt",
    "pselect", "ptsname", "putc", "putchar", "putenv", "puts", "putw", "qecvt", "qfcvt", "qgcvt", "qsort",
    "quick_exit", "raise", "rand", "random", "realloc", "reallocarray", "realpath", "remove", "rename",
    "renameat", "rewind", "rpmatch", "scanf", "secure_getenv", "seed48", "select", "setbuf", "setbuffer",
    "setenv", "setjmp", "setlinebuf", "setstate", "setvbuf", "sigabbrev_np", "sigdescr_np", "signal",
    "signgam", "snprintf", "sprintf", "srand", "srand48", "srandom", "sscanf", "stderr", "stdin", "stdout",
    "stpcpy", "stpncpy", "strcasecmp", "strcat", "strcmp", "strcoll", "strcpy", "strcspn", "strdup",
    "strdupa", "strerror", "strerrordesc_np", "strerrorname_np", "strfromd", "strfromf", "strfromf32x",
    "strfromf64x", "strfroml", "strfry", "strftime", "strlen", "strncasecmp", "strncat", "strncmp",
    "strncpy", "strndup", "strndupa", "strnlen", "strptime", "strsep", "strsignal", "strspn", "strtod",
    "strtof", "strtof32_l", "strtof32x", "strtof64x", "strtok", "strtol", "strtold", "strtoq", "strtoul",
    "strtouq", "strverscmp", "strxfrm", "system", "tempnam", "time", "timegm", "timelocal", "timer_create",
    "timer_delete", "timer_getoverrun", "timer_gettime", "timer_settime", "timespec_get", "timespec_getres",
    "timezone", "tmpfile", "tmpnam", "toascii", "tolower", "toupper", "tzname", "tzset", "u_char", "u_int",
    "u_long", "u_short", "ungetc", "unix", "unlockpt", "unsetenv", "va_arg", "va_copy", "va_end", "va_list",
    "va_start", "valloc", "vasprintf", "vdprintf", "vfprintf", "vfscanf", "vprintf", "vscanf", "vsnprintf",
    "vsprintf", "vsscanf", "wcstombs", "wctomb",
};

/* What a reserved name may carry and still clash: C's float and long double forms, TS
 * 18661's, reentrant (_r), locale (_l), stdio's _unlocked, large-file 64, vector widths. */
static const char *const suffixes[] = {"f",  "l",  "f16", "f32",       "f64", "f128", "f32x", "f64x", "f128x",
                                       "_r", "_l", "64",  "_unlocked", "1",   "2",    "3",    "4"};

/* Whether s[0..n) is a reserved name with at most `more` suffixes. */
static bool reserved_stem(const char *s, size_t n, int more) {
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strlen(reserved[i]) == n && memcmp(reserved[i], s, n) == 0) return true;
    for (size_t i = 0; more > 0 && i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && memcmp(s + n - k, suffixes[i], k) == 0 && reserved_stem(s, n - k, more - 1)) return true;
    }
    return false;
}

static bool needs_rename(const char *name) {
    size_t n = strlen(name);
    bool lower = false;
    for (size_t i = 0; i < n; i++) lower = lower || (name[i] >= 'a' && name[i] <= 'z');
    if (name[0] == '_' || strstr(name, "__")) return true; /* reserved to the implementation */
    if ((name[0] == 't' || name[0] == 'T') && (name[1] == 'l' || name[1] == 'L') && name[2] == '_')
        return true;                                   /* ours: tl_…, and the prelude's TL_P<ABI>_… */
    if (!lower && n >= 2) return true;                 /* macro-like: INT_MAX, EOF, NAN */
    if (name[0] >= 'A' && name[0] <= 'Z' && name[1] == '_') return true; /* M_PIf, L_tmpnam */
    if (n > 2 && strcmp(name + n - 2, "_t") == 0) return true;           /* size_t, int8_t, hipError_t */
    static const char *const vendors[] = {"cuda", "cu", "CU", "hip", "HIP", "nv", "NV"};
    for (size_t i = 0; i < sizeof vendors / sizeof vendors[0]; i++) {
        size_t k = strlen(vendors[i]);
        char c = n > k ? name[k] : 0;
        if (strncmp(name, vendors[i], k) == 0 && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            return true; /* cudaMalloc, cuMemAlloc, hipMalloc, nv_bfloat16, CUDART_… */
    }
    if (strncmp(name, "make_", 5) == 0 && reserved_stem(name + 5, n - 5, 2)) return true; /* make_float4 */
    return reserved_stem(name, n, 2);
}

void cg_name(ir_str *s, const char *name) { ir_str_printf(s, needs_rename(name) ? "tl_u_%s" : "%s", name); }
