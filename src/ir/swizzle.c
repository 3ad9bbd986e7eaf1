/*
 * swizzle.c — swizzled shared tiles (TILEC_SWIZZLE_LIST, docs/format.md#swizzled-shared-tiles):
 * where each element of a `shared` tile is stored when the tile is laid out as TMA and
 * wgmma lay theirs out. The element at byte offset o (from the tile's first byte, by its
 * strides) is at
 *
 *   o ^ (((o >> (base + shift)) & (2^bits - 1)) << base)
 *
 * (CuTe's Swizzle<bits, base, shift> on bytes): chunks of 2^base bytes are permuted inside
 * each group of 2^(base + bits) bytes by bits that lie at or above the group (shift >=
 * bits), so the map is a bijection that keeps every group in place and every chunk whole.
 * sw128 (3, 4, 3): the 16-byte chunks of each 128-byte line XORed with the line's index in
 * its group of 8 lines (1024 bytes); sw64 (2, 4, 3) and sw32 (1, 4, 3) the same over 4 and
 * 2 chunks.
 */
#include "ir.h"

static const struct {
    int bits, base, shift;
} presets[] = {
#define X(s, n, b, m, sh) {b, m, sh},
    TILEC_SWIZZLE_LIST(X)
#undef X
};
_Static_assert(sizeof presets / sizeof presets[0] == TILEC_SWIZZLE_COUNT, "swizzle table");

/* the byte offset where byte offset o is stored */
static int64_t swizzle_bytes(const tilec_swizzle *s, int64_t o) {
    int64_t mask = ((int64_t)1 << s->bits) - 1;
    return o ^ (((o >> (s->base + s->shift)) & mask) << s->base);
}

int64_t ir_swizzle_offset(const tilec_buffer *b, int64_t off) {
    if (b->swizzle.kind == TILEC_SWIZZLE_NONE) return off;
    int64_t es = (int64_t)tilec_dtype_size(b->dtype);
    return swizzle_bytes(&b->swizzle, off * es) / es;
}

int64_t ir_swizzle_atom(const tilec_buffer *b) {
    const tilec_swizzle *s = &b->swizzle;
    return s->kind == TILEC_SWIZZLE_NONE ? 0 : (int64_t)1 << (s->base + s->shift + s->bits);
}

#define FAIL(...) (ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, at.line, at.col, __VA_ARGS__), false)

/* An allocation's elements by its strides alone (allocations have no negative strides):
 * what it spans before a swizzle grows it. */
static int64_t plain_span(const tilec_buffer *b) {
    int64_t span = 1;
    for (int d = 0; d < b->rank; d++) span += (b->shape[d] - 1) * b->strides[d];
    return span;
}

bool ir_check_swizzle(tilec_program *p, tilec_buffer *b, ir_pos at) {
    tilec_swizzle *s = &b->swizzle;
    const char *kn = tilec_swizzle_name(s->kind);
    if (!kn)
        return FAIL("'%s': swizzle %d is not a tilec_swizzle_kind", b->name, (int)s->kind);
    if (s->kind == TILEC_SWIZZLE_NONE) {
        s->bits = s->base = s->shift = 0;
        if (!b->is_param && b->space == TILEC_SPACE_SHARED && b->elems > 0) b->span = plain_span(b); /* a growth undone */
        return true;
    }
    if (b->space != TILEC_SPACE_SHARED)
        return FAIL("'%s' is %s: a swizzle places the elements of a shared tile across the banks; "
                    "drop swizzle=, or declare the buffer shared",
                    b->name, tilec_space_name(b->space));
    if (s->kind != TILEC_SWIZZLE_XOR) {
        s->bits = presets[s->kind].bits;
        s->base = presets[s->kind].base;
        s->shift = presets[s->kind].shift;
    }
    int es = (int)tilec_dtype_size(b->dtype);
    if (s->bits < 1 || s->bits > 5)
        return FAIL("'%s': a swizzle of %d bits; bits must be 1 to 5 (sw128 is xor(3, 4, 3))", b->name, s->bits);
    if (s->base < 0 || s->base > 10 || ((int64_t)1 << s->base) < es)
        return FAIL("'%s': a swizzle base of %d moves chunks of 2^%d bytes, but a %s element is %d bytes; "
                    "the base must be %d to 10 (and base + shift + bits at most 10)",
                    b->name, s->base, s->base, tilec_dtype_name(b->dtype), es, es == 8 ? 3 : es == 4 ? 2 : es == 2 ? 1 : 0);
    if (s->shift < s->bits || s->base + s->shift + s->bits > 10)
        return FAIL("'%s': a swizzle shift of %d with %d bits and base %d; the shift must be at least the bits "
                    "(the bits that choose the XOR lie above the chunks they move) and base + shift + bits at "
                    "most 10 (an atom of at most 1024 bytes, sw128's; the tile is aligned to it)",
                    b->name, s->shift, s->bits, s->base);
    /* every element's place inside the tile: only a group cut short by the tile's end can
     * send one past it. An allocation grows to whole groups (padding after its last
     * element); a func's parameter is the caller's array, which must hold them. */
    int64_t bytes = b->span * es, group = (int64_t)1 << (s->base + s->bits);
    int64_t last = bytes / group * group;
    if (!b->is_param) {
        if (b->elems > 0) b->span = (plain_span(b) * es + group - 1) / group * group / es;
        return true;
    }
    for (int64_t o = last; o < bytes; o += es)
        if (swizzle_bytes(s, o) >= bytes)
            return FAIL("'%s': the %s swizzle moves %lld-byte chunks within groups of %lld bytes, and the "
                        "tile's %lld bytes end inside a group: byte %lld would be stored at %lld, past the "
                        "end of your array; give the parameter a shape of a multiple of %lld bytes (and "
                        "your array as many)",
                        b->name, kn, (long long)((int64_t)1 << s->base), (long long)group, (long long)bytes,
                        (long long)o, (long long)swizzle_bytes(s, o), (long long)group);
    return true;
}
