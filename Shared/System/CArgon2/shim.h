#ifndef PIER_CARGON2_SHIM_H
#define PIER_CARGON2_SHIM_H
#include <argon2.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/*
 * Argon2's working memory (19 MiB at OWASP's minimum) is kept per thread and reused, instead of
 * being allocated and freed for every hash: freeing returned the pages to the kernel and the
 * next hash faulted them in again, which cost a third of the CPU of a login. libargon2 still
 * wipes the memory after each hash (clear_internal_memory) before handing it back here.
 * Memory stays bounded: one buffer per hashing thread, and the hashing threads are a fixed pool;
 * a thread frees its buffer when no more work is waiting, so an idle service holds none.
 */
static __thread uint8_t *CArgon2_buffer = NULL;
static __thread size_t CArgon2_buffer_size = 0;

static inline int CArgon2_allocate(uint8_t **memory, size_t bytes) {
    if (CArgon2_buffer_size < bytes) {
        // Mapped directly, not through malloc: unmapping returns the pages for certain, where
        // glibc's adaptive thresholds would keep a freed 19 MiB chunk in the heap.
        if (CArgon2_buffer != NULL) munmap(CArgon2_buffer, CArgon2_buffer_size);
        void *mapped = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CArgon2_buffer = mapped == MAP_FAILED ? NULL : (uint8_t *)mapped;
        CArgon2_buffer_size = CArgon2_buffer != NULL ? bytes : 0;
    }
    *memory = CArgon2_buffer;
    return CArgon2_buffer != NULL ? ARGON2_OK : ARGON2_MEMORY_ALLOCATION_ERROR;
}

static inline void CArgon2_keep(uint8_t *memory, size_t bytes) {
    (void)memory;
    (void)bytes;
}

/// Frees this thread's working memory (when its pool has nothing more to hash).
static inline void CArgon2_release_thread_memory(void) {
    if (CArgon2_buffer != NULL) munmap(CArgon2_buffer, CArgon2_buffer_size);
    CArgon2_buffer = NULL;
    CArgon2_buffer_size = 0;
}

/// Raw Argon2id (version 0x13) into `out`, using the thread's reusable working memory.
static inline int CArgon2_argon2id(uint32_t iterations, uint32_t memory_kib, uint32_t parallelism,
                                   const uint8_t *password, size_t password_length,
                                   const uint8_t *salt, size_t salt_length,
                                   uint8_t *out, size_t out_length) {
    argon2_context context = {0};
    context.out = out;
    context.outlen = (uint32_t)out_length;
    context.pwd = (uint8_t *)password;
    context.pwdlen = (uint32_t)password_length;
    context.salt = (uint8_t *)salt;
    context.saltlen = (uint32_t)salt_length;
    context.t_cost = iterations;
    context.m_cost = memory_kib;
    context.lanes = parallelism;
    context.threads = parallelism;
    context.version = ARGON2_VERSION_13;
    context.allocate_cbk = CArgon2_allocate;
    context.free_cbk = CArgon2_keep;
    context.flags = ARGON2_DEFAULT_FLAGS;
    return argon2_ctx(&context, Argon2_id);
}
#endif
