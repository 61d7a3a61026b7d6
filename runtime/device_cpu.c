/* runtime/device_cpu.c - owns the CPU device (64-byte aligned system
 * allocation through posix_memalign, memcpy copies, no-op synchronize) and
 * the lookup of devices by type and index (st_rt_device). The CUDA devices
 * (runtime/device_cuda.c) sit behind the same st_device interface. */
#include "st_runtime.h"
#include "st_cuda.h"

#include <stdlib.h>
#include <string.h>

#define ST_CPU_ALIGN 64

static void *cpu_raw_alloc(st_device *d, size_t nbytes)
{
    (void)d;
    void *p = NULL;
    if (nbytes == 0)
        nbytes = ST_CPU_ALIGN;
    if (posix_memalign(&p, ST_CPU_ALIGN, nbytes) != 0)
        return NULL;
    return p;
}

static void cpu_raw_free(st_device *d, void *p, size_t nbytes)
{
    (void)d;
    (void)nbytes;
    free(p);
}

static st_status cpu_copy(st_device *d, void *dst, const void *src, size_t n)
{
    (void)d;
    if (n == 0)
        return ST_OK;
    if (!dst || !src)
        return st_err(ST_ERR_RUNTIME, "cpu copy: NULL pointer (dst=%p, src=%p, %zu bytes)",
                      dst, src, n);
    memmove(dst, src, n);
    return ST_OK;
}

static void cpu_synchronize(st_device *d)
{
    (void)d;
}

static st_device cpu_device = {
    .type = ST_DEV_CPU,
    .index = 0,
    .name = "cpu",
    .raw_alloc = cpu_raw_alloc,
    .raw_free = cpu_raw_free,
    .copy = cpu_copy,
    .synchronize = cpu_synchronize,
    .impl = NULL,
};

st_device *st_rt_cpu(void)
{
    return &cpu_device;
}

st_device *st_rt_device(st_device_type t, int index)
{
    switch (t) {
    case ST_DEV_CPU:
        if (index != 0 && index != -1) {
            st_err(ST_ERR_RUNTIME, "cpu device index must be 0, got %d", index);
            return NULL;
        }
        return &cpu_device;
    case ST_DEV_CUDA: /* runtime/device_cuda.c: the driver through dlopen */
        return st_cuda_device(index);
    default:
        st_err(ST_ERR_RUNTIME, "unknown device type %d", (int)t);
        return NULL;
    }
}
