/* gemm.c - a cuBLAS plan (st_nvrtc_gemm, gemm_plan.c) run on the host the
 * way cublasGemmStridedBatchedEx / cublasGemmBatchedEx would run it: the
 * column-major product per call and batch, through the plan's transposes,
 * leading dimensions and strides, with optional bounds checks. The
 * cudaemu backend computes a MATMUL's product with it before NAME_epi;
 * tests/c/test_gemm_plan.c checks every plan against a naive row-major
 * product with it. Owns: st_cudaemu_gemm. */
#include <math.h>
#include <stdlib.h>

#include "st_cudaemu.h"

static double rd(const void *base, st_dtype t, int64_t i)
{
    switch (t) {
    case ST_FLOAT64: return ((const double *)base)[i];
    case ST_FLOAT32: return ((const float *)base)[i];
    case ST_FLOAT16: return st_half_to_float(((const uint16_t *)base)[i]);
    case ST_BFLOAT16: return st_bf16_to_float(((const uint16_t *)base)[i]);
    default: return 0;
    }
}

static void wr(void *base, st_dtype t, int64_t i, double v)
{
    switch (t) {
    case ST_FLOAT64: ((double *)base)[i] = v; break;
    case ST_FLOAT32: ((float *)base)[i] = (float)v; break;
    case ST_FLOAT16: ((uint16_t *)base)[i] = st_float_to_half((float)v); break;
    case ST_BFLOAT16: ((uint16_t *)base)[i] = st_float_to_bf16((float)v); break;
    default: break;
    }
}

static bool inside(int64_t i, int64_t n)
{
    return n <= 0 || (i >= 0 && i < n);
}

/* one column-major product: cuBLAS's A (our B) at element oa, B (our A)
 * at ob, C at oc */
static bool product(const st_nvrtc_gemm *p, const st_cudaemu_gemm_io *io, int64_t oa,
                    int64_t ob, int64_t oc)
{
    for (int col = 0; col < p->n; col++)
        for (int row = 0; row < p->m; row++) {
            double sd = 0;
            float sf = 0;
            for (int l = 0; l < p->k; l++) {
                int64_t ia = oa + (p->transa ? l + (int64_t)row * p->lda
                                             : row + (int64_t)l * p->lda);
                int64_t ib = ob + (p->transb ? col + (int64_t)l * p->ldb
                                             : l + (int64_t)col * p->ldb);
                if (!inside(ia, io->nb) || !inside(ib, io->na))
                    return false;
                double x = rd(io->b, io->ab_dtype, ia), y = rd(io->a, io->ab_dtype, ib);
                if (p->f64)
                    sd += x * y;
                else   /* float compute: a fused multiply-add per step */
                    sf = fmaf((float)x, (float)y, sf);
            }
            int64_t ic = oc + row + (int64_t)col * p->ldc;
            if (!inside(ic, io->nc))
                return false;
            wr(io->c, io->c_dtype, ic, p->f64 ? sd : (double)sf);
        }
    return true;
}

bool st_cudaemu_gemm(const st_nvrtc_gemm *p, const st_cudaemu_gemm_io *io)
{
    int64_t nprod = p->calls * p->batch;
    const void **arr = NULL, **pa[3] = {NULL, NULL, NULL};
    size_t eab = st_dtype_size(io->ab_dtype), ec = st_dtype_size(io->c_dtype);
    if (io->ptrs) {
        arr = malloc(sizeof(void *) * 3 * (size_t)(nprod > 0 ? nprod : 1));
        if (!arr)
            return false;
        for (int o = 0; o < 3; o++)
            pa[o] = arr + o * nprod;
        st_nvrtc_gemm_pointers(p, io->a, io->b, io->c, eab, ec, pa);
    }
    bool ok = true;
    for (int64_t i = 0; ok && i < p->calls; i++) {
        int64_t off[3];
        st_nvrtc_gemm_offsets(p, i, off);
        for (int64_t j = 0; ok && j < p->batch; j++) {
            /* cuBLAS's A is our B (off[1]), its B our A (off[0]) */
            int64_t oa = off[1] + j * p->stride_a, ob = off[0] + j * p->stride_b,
                    oc = off[2] + j * p->stride_c;
            if (io->ptrs) {
                int64_t x = i * p->batch + j;
                oa = ((const char *)pa[0][x] - (const char *)io->b) / (int64_t)eab;
                ob = ((const char *)pa[1][x] - (const char *)io->a) / (int64_t)eab;
                oc = ((const char *)pa[2][x] - (const char *)io->c) / (int64_t)ec;
            }
            ok = product(p, io, oa, ob, oc);
        }
    }
    free(arr);
    return ok;
}
