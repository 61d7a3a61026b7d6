/* cudaemu_internal.h - what the files of nvrtc_backend/emu/ share: the
 * launch ABI of a compiled object (st_cudaemu.hpp, its C part), the
 * emulation header's text (embedded at build time by embed.py) and the
 * compile-and-load step of cxx.c. Not installed; prefix st_cudaemu_. */
#ifndef ST_CUDAEMU_INTERNAL_H
#define ST_CUDAEMU_INTERNAL_H

#include "st_cudaemu.h"
#define ST_CUDAEMU_ABI_ONLY
#include "st_cudaemu.hpp"
#undef ST_CUDAEMU_ABI_ONLY

/* st_cudaemu.hpp's bytes (the generated st_cudaemu_header.c) */
extern const char st_cudaemu_header[];
extern const size_t st_cudaemu_header_len;

/* cxx.c: source (a rendered translation unit, asm rewritten, the entry
 * line appended) compiled with the header force-included into a shared
 * object, from the disk cache when there, loaded (for the process) into
 * *handle with its entry point. Errors name the compiler's command, the
 * source file kept for the look and the head of its messages. */
st_status st_cudaemu_load(const char *source, void **handle, st_cudaemu_entry_fn *entry);

#endif
