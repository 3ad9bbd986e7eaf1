/*
 * arena.c — one arena per program: chunks of memory handed out in order and freed
 * together, so IR nodes never need freeing one by one.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

struct ir_chunk {
    ir_chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
};

enum { CHUNK_SIZE = 64 * 1024, ALIGN = 16 };

void *ir_arena_alloc(ir_arena *a, size_t size) {
    if (size > SIZE_MAX - 2 * ALIGN - sizeof(ir_chunk)) return NULL;
    size = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    ir_chunk *c = a->head;
    if (!c || c->size - c->used < size) {
        size_t want = size > CHUNK_SIZE ? size : CHUNK_SIZE;
        c = malloc(sizeof(ir_chunk) + want);
        if (!c) return NULL;
        c->next = a->head;
        c->used = 0;
        c->size = want;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    a->total += size;
    memset(p, 0, size);
    return p;
}

char *ir_arena_strndup(ir_arena *a, const char *s, size_t n) {
    char *p = ir_arena_alloc(a, n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

bool ir_arena_grow(ir_arena *a, void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > (1 << 28)) return false;
        ncap *= 2;
    }
    void *p = ir_arena_alloc(a, (size_t)ncap * elem);
    if (!p) return false;
    if (*arr) memcpy(p, *arr, (size_t)*cap * elem);
    *arr = p;
    *cap = ncap;
    return true;
}

void ir_arena_free(ir_arena *a) {
    ir_chunk *c = a->head;
    while (c) {
        ir_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}
