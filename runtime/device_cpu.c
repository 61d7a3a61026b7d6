/* runtime/device_cpu.c - owns the CPU device (64-byte aligned system
 * allocation through posix_memalign, memcpy copies, no-op synchronize) and
 * the lookup of devices by type and index (st_rt_device). The CUDA devices
 * (runtime/device_cuda.c) sit behind the same st_device interface. */
#include "st_runtime.h"
#include "st_cuda.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ST_CPU_ALIGN 64
/* Blocks of at least HUGE_MIN bytes are aligned to 2 MiB and advised as
 * transparent huge pages (Linux; where THP is "madvise" only such ranges
 * get them): the big operands of a step (the 31 MB word embedding, its
 * gradient and Adam state, activations) then take one TLB entry per 2 MiB,
 * which matters for strided walks (a transposed matmul operand packed
 * column by column). The caching allocator keeps the blocks, so the first
 * touch's page clearing is paid once. SYMTRACE_HUGEPAGES=0 turns it off. */
#define HUGE_ALIGN ((size_t)2 << 20)
#define HUGE_MIN ((size_t)4 << 20)

static bool huge_pages(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("SYMTRACE_HUGEPAGES");
        on = !(e && e[0] == '0');
    }
    return on;
}

static void *cpu_raw_alloc(st_device *d, size_t nbytes)
{
    (void)d;
    void *p = NULL;
    if (nbytes == 0)
        nbytes = ST_CPU_ALIGN;
#ifdef MADV_HUGEPAGE
    if (nbytes >= HUGE_MIN && huge_pages()) {
        if (posix_memalign(&p, HUGE_ALIGN, nbytes) != 0)
            return NULL;
        (void)madvise(p, nbytes & ~(HUGE_ALIGN - 1), MADV_HUGEPAGE); /* advice only */
        return p;
    }
#endif
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
