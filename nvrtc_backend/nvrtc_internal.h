/* nvrtc_internal.h - what the files of nvrtc_backend/ share: a string
 * builder for the generated source and the prelude. Not installed; prefix
 * st_nvrtc_. */
#ifndef ST_NVRTC_INTERNAL_H
#define ST_NVRTC_INTERNAL_H

#include "st_nvrtc.h"

typedef struct {
    char *s;
    size_t n, cap;
    bool oom;
} st_nvrtc_sb;

void st_nvrtc_sbf(st_nvrtc_sb *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void st_nvrtc_sbs(st_nvrtc_sb *b, const char *s);
/* Appends the prelude (with the host layout macros it checks). */
void st_nvrtc_prelude(st_nvrtc_sb *b);

#endif
