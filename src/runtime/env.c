/*
 * env.c — the one strict parser for numbers in the environment (see env.h).
 */
#include "env.h"

#include <string.h>

const rt_unit rt_byte_units[] = {
    {"K", 1ull << 10}, {"M", 1ull << 20}, {"G", 1ull << 30}, {"T", 1ull << 40},
    {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40},
    {NULL, 0},
};

bool rt_parse_u64(const char *text, const rt_unit *units, uint64_t max, uint64_t *out) {
    if (!text || !(*text >= '0' && *text <= '9')) return false;
    uint64_t v = 0;
    const char *p = text;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return false; /* past 2^64 - 1 */
        v = v * 10 + d;
    }
    if (*p) { /* a suffix: one of the table's, whole */
        uint64_t scale = 0;
        for (const rt_unit *u = units; u && u->name; u++)
            if (strcmp(p, u->name) == 0) scale = u->scale;
        if (!scale || v > UINT64_MAX / scale) return false;
        v *= scale;
    }
    if (v > max) return false;
    *out = v;
    return true;
}
