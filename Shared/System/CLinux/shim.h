#ifndef PIER_CLINUX_SHIM_H
#define PIER_CLINUX_SHIM_H
#include <malloc.h>

/// glibc allocator settings that Glibc's Swift module does not expose (malloc.h).
static inline void CLinux_tune_malloc(int mmap_threshold, int arena_max) {
    mallopt(M_MMAP_THRESHOLD, mmap_threshold);
    mallopt(M_ARENA_MAX, arena_max);
}
#endif
