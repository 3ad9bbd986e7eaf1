/*
 * loader.c — whether this process can load a library at run time. Every optional library
 * (the CUDA driver, libamdhip64, NVRTC, hiprtc, NCCL) is opened with dlopen; in a program
 * linked with -static there is no dynamic loader, and glibc's dlopen there crashes inside
 * itself (or loads a second libc) instead of failing. So each loader asks rt_no_loader
 * first and, in such a program, fails with its message instead of calling dlopen.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "runtime.h"

#include <link.h>
#include <stdbool.h>

/* dl_iterate_phdr's first object is the program itself: dynamically linked, it names its
 * loader (PT_INTERP); linked statically (static or static-pie), it names none. */
static int names_a_loader(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_INTERP) *(bool *)arg = true;
    return 1; /* the program only */
}

const char *rt_no_loader(void) {
    bool dynamic = false;
    dl_iterate_phdr(names_a_loader, &dynamic);
    return dynamic ? NULL
                   : "this binary is linked statically; NVRTC/hiprtc/NCCL and the GPU drivers cannot be loaded: link "
                     "libtilec dynamically (a program built without -static), or use the simulator (TILEC_BACKEND_SIM)";
}
