/* launch.c - the host side decisions of a launch, in plain C (tested
 * without a GPU): the layout flags of an ELEMENTWISE launch (may the
 * 16-byte vector path run: every buffer contiguous over the iteration
 * space and 16-byte aligned, or a broadcast scalar) and the grid/block of
 * every kernel kind (rows per warp or per block for reductions; 64x64
 * tiles for matmul; the tensor-core variant only when SYMTRACE_CUDA_MMA=1,
 * because it has not yet run on a GPU) and whether the column variant of
 * a reduction suits a launch (st_nvrtc_col_config), and the launch of a
 * matmul's epilogue kernel NAME_epi. Owns: st_nvrtc_ew_flags,
 * st_nvrtc_launch_config, st_nvrtc_col_config, st_nvrtc_epi_launch_config. */
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

/* nothing launched yet: a 1x1x1 grid of 1x1x1 blocks */
static st_nvrtc_launch launch0(void)
{
    st_nvrtc_launch L;
    memset(&L, 0, sizeof L);
    for (int i = 0; i < 3; i++)
        L.grid[i] = L.block[i] = 1;
    return L;
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
    st_nvrtc_launch L = launch0();
    switch (k->kind) {
    case ST_K_ELEMENTWISE: {
        int64_t total = prod(a, 0, k->rank);
        if (total <= 0) {
            L.empty = true;
            break;
        }
        L.flags = st_nvrtc_ew_flags(k, a);
        int64_t per = (L.flags & ST_NVRTC_F_VEC) ? st_nvrtc_vec_width(k) : st_nvrtc_unroll();
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
            /* enough threads that a row is one trip of the walk (every
             * load of the row in flight at once), whole warps, 64 up to
             * the kernels' bound (longer rows take more trips); a point a
             * trip (SYMTRACE_CUDA_UNROLL=1): the earlier rule */
            int64_t u = st_nvrtc_unroll(), t = (R + u - 1) / u, cap = st_nvrtc_row_threads();
            t = (t + 31) / 32 * 32;
            t = t < 64 ? 64 : t > cap ? cap : t;
            if (u == 1)
                t = R <= 2048 ? 128 : R <= 8192 ? 256 : R <= 32768 ? 512 : 1024;
            L.block[0] = (unsigned)t;
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

/* The innermost outer dim's size at least for NAME_col: on shorter runs a
 * warp's 32 points straddle several outer rows. */
#define COL_MIN_RUN 4
/* Rows per row group of a block at least when the rows are sliced over
 * several blocks (blockIdx.y): each slice's partials cost a round trip
 * through the scratch. */
#define COL_SLICE_ROWS 8

static int64_t iabs64(int64_t v)
{
    return v < 0 ? -v : v;
}

st_nvrtc_launch st_nvrtc_col_config(const st_kernel *k, const st_kargs *a,
                                    int sm_count)
{
    st_nvrtc_launch L = launch0();
    st_nvrtc_col c;
    st_nvrtc_col_plan(k, &c);
    if (!c.ok)
        return L;
    int ro = k->rank - k->nred, w = ro - 1, in = k->rank - 1;
    int64_t nouter = prod(a, 0, ro), R = prod(a, ro, k->rank);
    if (nouter <= 0 || R <= 0 || a->shape[w] < COL_MIN_RUN)
        return L;
    /* fast: every buffer touched per row point moves along the innermost
     * outer dim with stride 0 or 1; rowfast: with stride 1 along the
     * innermost row dim (which has more than one point) */
    bool fast = true, rowfast = a->shape[in] != 1;
    int64_t sw = 0, srow = 0;
    for (int b = 0; b < k->nbufs; b++) {
        if (!c.touch[b])
            continue;
        int64_t s = a->bufs[b].strides[w], t = a->bufs[b].strides[in];
        if (k->bufs[b].dimmap[w] >= 0) {
            fast &= s == 0 || s == 1;
            sw += iabs64(s);
        }
        if (k->bufs[b].dimmap[in] >= 0) {
            rowfast &= t == 1;
            srow += iabs64(t);
        }
    }
    if (rowfast || !(fast || sw < srow))
        return L;
    L.col = true;
    L.block[0] = 32;
    /* row groups: about 4 row points per thread at least, up to 32 groups */
    unsigned ny = 1;
    while (ny < 32 && (int64_t)ny * 2 * 4 <= R)
        ny *= 2;
    L.block[1] = ny;
    int64_t ntiles = (nouter + 31) / 32, sms = sm_count > 0 ? sm_count : 1;
    L.grid[0] = cap_grid(ntiles, sm_count);
    /* few tiles: the rows cut into slices (blocks along y) until about two
     * blocks per multiprocessor, each slice COL_SLICE_ROWS rows per row
     * group at least; the partials go through the scratch */
    if (ntiles < 2 * sms) {
        int64_t gy = (2 * sms + ntiles - 1) / ntiles, most = R / ((int64_t)ny * COL_SLICE_ROWS);
        if (gy > most)
            gy = most;
        if (gy > 65535)
            gy = 65535;
        if (gy > 1) {
            L.grid[1] = (unsigned)gy;
            L.col_scratch = ((ntiles * 4 + 255) & ~(int64_t)255) + gy * nouter * 8;
        }
    }
    return L;
}

/* NAME_epi, a MATMUL's epilogue over its [batch..., M, N] points: as an
 * ELEMENTWISE launch without the vector path */
st_nvrtc_launch st_nvrtc_epi_launch_config(const st_kernel *k, const st_kargs *a,
                                           int sm_count)
{
    st_nvrtc_launch L = launch0();
    int64_t rows = prod(a, 0, k->rank - 2), N = k->rank >= 3 ? a->shape[k->rank - 2] : 0;
    if (k->rank < 3 || rows <= 0 || N <= 0) {
        L.empty = true;
        return L;
    }
    /* a block per row (NAME_epi): threads along N, whole warps */
    L.block[0] = N >= 256 ? 256 : (unsigned)((N + 31) / 32 * 32);
    L.grid[0] = cap_grid(rows, sm_count);
    return L;
}
