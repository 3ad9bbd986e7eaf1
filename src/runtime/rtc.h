/*
 * rtc.h — run-time compilers: NVRTC for CUDA, hiprtc for HIP, both loaded with dlopen at
 * first use, so libtilec builds and runs where neither is installed (and says what it
 * looked for). Neither needs a GPU: the arch is always given.
 */
#ifndef TILEC_RTC_H
#define TILEC_RTC_H

#include "../ir/ir.h"

typedef enum rtc_output { RTC_BINARY, RTC_PTX } rtc_output;

typedef struct rtc_result {
    void *data;  /* CUBIN, HIP code object, or PTX text (NUL-terminated); malloc'd */
    size_t size; /* bytes (PTX: without the NUL) */
    char *log;   /* the compiler's log, NUL-terminated, malloc'd; may be empty */
} rtc_result;

/* Compiles source for backend (CUDA or HIP) and arch (sm_XX / gfxNNN) at warp size ws.
 * TILEC_ERR_UNAVAILABLE: the compiler library is missing or does not know the arch (the
 * diagnostic says what was tried); TILEC_ERR_COMPILE: the compiler failed (the log is in
 * the diagnostic and in out->log). */
tilec_status rtc_compile(tilec_ctx *ctx, tilec_backend backend, const char *arch, int ws,
                         const char *name, const char *source, rtc_output kind, rtc_result *out);
void rtc_result_free(rtc_result *r);

/* TILEC_DUMP_SOURCE=DIR: writes source into DIR as KERNEL-HASH.cu or .hip, HASH from the
 * SHA-256 of key (what names the binary), unless that file is there already. Does nothing
 * when the variable is unset or empty; a failure is a warning in ctx's diagnostics, never
 * an error (dump.c). */
void rtc_dump_source(tilec_ctx *ctx, tilec_backend backend, const char *kernel, const void *key, size_t key_len,
                     const char *source);

/* The compiler's version as text ("NVRTC 13.0", "hiprtc 5.2"), or NULL when missing. */
const char *rtc_version(tilec_backend backend);

#endif
