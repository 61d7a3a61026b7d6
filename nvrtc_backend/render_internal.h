/* render_internal.h - what render_expr.c (per-point statements) and
 * render_kernels.c (loop structure of each kernel kind) share: the point
 * context that says how the current point is addressed. Not installed. */
#ifndef ST_NVRTC_RENDER_INTERNAL_H
#define ST_NVRTC_RENDER_INTERNAL_H

#include "nvrtc_internal.h"

typedef struct {
    st_nvrtc_sb *b;
    const st_kernel *k;
    /* C expressions of the current point: element offset per buffer,
     * coordinate per iteration dim ("" = 0), linear index */
    char off[ST_K_MAX_BUFS][32];
    char coord[ST_MAX_DIMS][16];
    char lin[32];
    /* REDUCED r: a variable and its dtype ("" = not yet available) */
    char reduced[ST_K_MAX_REDUCE][24];
    st_dtype reduced_dt[ST_K_MAX_REDUCE];
    /* the vector path: plain loads read L<b>[j], stores write S<b>[j] */
    bool vec;
    /* buffers (bit b) whose point loads read L<b>[j], loaded ahead by
     * st_nvrtc_pt_preload; `loaded` collects the buffers a region's point
     * loads read (gathers through an index excepted) */
    unsigned pre, loaded;
    unsigned char *done;      /* per node: emitted in the current region */
    const char *ind, *ind2;   /* indentation; ind2 one level deeper */
    char err[256];            /* first rendering error */
} st_nvrtc_pc;

bool st_nvrtc_isf(st_dtype t);
const char *st_nvrtc_vty(st_dtype t);   /* value type */
const char *st_nvrtc_mty(st_dtype t);   /* memory type */
/* d (256 bytes) = v converted from `from` to `to` (interp's convert) */
void st_nvrtc_conv(char *d, const char *v, st_dtype from, st_dtype to,
                   bool exact);
void st_nvrtc_as_i(char *d, const char *v, st_dtype t);

/* Starts a region (a new C scope): nodes are emitted again on demand. */
void st_nvrtc_pt_reset(st_nvrtc_pc *pc);
/* Emits node i (and what it needs) as `const T v<i> = ...;`. */
void st_nvrtc_pt_node(st_nvrtc_pc *pc, int i);
/* Emits `L<b>[j] = <buffer b at the current point>;` (plain or unravel). */
void st_nvrtc_pt_preload(st_nvrtc_pc *pc, int b);
/* Emits store s of the kernel at the current point. */
void st_nvrtc_pt_store(st_nvrtc_pc *pc, int s);
/* Stores expression v of dtype vdt into buf at the current point. */
void st_nvrtc_pt_store_value(st_nvrtc_pc *pc, int buf, const char *v,
                             st_dtype vdt);

#endif
