/* launch.c - the host side decisions of a launch, in plain C (tested
 * without a GPU): the layout flags of an ELEMENTWISE launch (may the
 * 16-byte vector path run: every buffer contiguous over the iteration
 * space and 16-byte aligned, or a broadcast scalar) and the grid/block of
 * every kernel kind (rows per warp or per block for reductions; 64x64
 * tiles for matmul; the tensor-core variant only when SYMTRACE_CUDA_MMA=1,
 * because it has not yet run on a GPU). Owns: st_nvrtc_ew_flags,
 * st_nvrtc_launch_config. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "st_nvrtc.h"

unsigned st_nvrtc_ew_flags(const st_kernel *k, const st_kargs *a)
{
    if (st_nvrtc_vec_width(k) <= 1)
        return 0;
    unsigned f = ST_NVRTC_F_VEC;
    for (int b = 0; b < k->nbufs; b++) {
        bool zero = true, contig = true;
        int64_t expect = 1;
        for (int d = k->rank - 1; d >= 0; d--) {
            int64_t sz = a->shape[d], s = a->bufs[b].strides[d];
            if (sz == 1)
                continue;
            if (s != 0)
                zero = false;
            if (s != expect)
                contig = false;
            expect *= sz;
        }
        if (zero && !k->bufs[b].is_out)
            f |= ST_NVRTC_F_BCAST0 << b;
        else if (!contig || ((uintptr_t)a->bufs[b].data & 15u) != 0)
            return 0;
    }
    return f;
}

static unsigned cap_grid(int64_t blocks, int sm_count)
{
    int64_t cap = (int64_t)(sm_count > 0 ? sm_count : 1) * 32;
    if (blocks > cap)
        blocks = cap;
    return blocks < 1 ? 1u : (unsigned)blocks;
}

static int64_t prod(const st_kargs *a, int lo, int hi)
{
    int64_t p = 1;
    for (int d = lo; d < hi; d++)
        p *= a->shape[d];
    return p;
}

st_nvrtc_launch st_nvrtc_launch_config(const st_kernel *k, const st_kargs *a,
                                       int sm_count, int cc)
{
    st_nvrtc_launch L;
    memset(&L, 0, sizeof L);
    for (int i = 0; i < 3; i++)
        L.grid[i] = L.block[i] = 1;
    switch (k->kind) {
    case ST_K_ELEMENTWISE: {
        int64_t total = prod(a, 0, k->rank);
        if (total <= 0) {
            L.empty = true;
            break;
        }
        L.flags = st_nvrtc_ew_flags(k, a);
        int64_t per = (L.flags & ST_NVRTC_F_VEC) ? st_nvrtc_vec_width(k) : 1;
        int64_t threads = (total + per - 1) / per;
        L.block[0] = 256;
        L.grid[0] = cap_grid((threads + 255) / 256, sm_count);
        break;
    }
    case ST_K_REDUCE: {
        int ro = k->rank - k->nred;
        int64_t nouter = prod(a, 0, ro), R = prod(a, ro, k->rank);
        if (nouter <= 0) {
            L.empty = true;
            break;
        }
        if (R <= 256) { /* a warp per row, 8 rows per block */
            L.block[0] = 32;
            L.block[1] = 8;
            L.grid[0] = cap_grid((nouter + 7) / 8, sm_count);
        } else {
            L.block[0] = R <= 2048 ? 128 : R <= 8192 ? 256 : R <= 32768 ? 512 : 1024;
            L.grid[0] = cap_grid(nouter, sm_count);
        }
        break;
    }
    case ST_K_MATMUL: {
        int nb = k->rank - 3;
        int64_t nbatch = prod(a, 0, nb), M = a->shape[nb], N = a->shape[nb + 1];
        if (nbatch <= 0 || M <= 0 || N <= 0) {
            L.empty = true;
            break;
        }
        const char *env = getenv("SYMTRACE_CUDA_MMA");
        L.mma = st_nvrtc_has_mma(k) && cc >= 80 && env && env[0] == '1';
        L.block[0] = L.mma ? 128 : 256;
        L.grid[0] = (unsigned)((N + 63) / 64);
        L.grid[1] = (unsigned)((M + 63) / 64);   /* <= 65535: M up to ~4.19M */
        L.grid[2] = (unsigned)(nbatch < 65535 ? nbatch : 65535);
        break;
    }
    default:
        L.empty = true;
        break;
    }
    return L;
}
