/* runtime/device_cuda.c - owns the CUDA devices: the driver API loaded with
 * dlopen (libcuda.so.1 or $SYMTRACE_LIBCUDA; nothing CUDA is linked), one
 * st_device per GPU made on first use (primary context, a non-blocking
 * stream, cuMemAlloc/cuMemFree as raw_alloc/raw_free under the caching
 * allocator, copies with cuMemcpy through unified addressing, synchronize
 * on the stream). Without a driver or a GPU every entry point answers with
 * a clear "CUDA is not available" error. NOTE: the driver-API paths here
 * have NOT run on a GPU yet (the machines this was written on had none).
 * Owns: st_cuda_api_get, st_cuda_is_available, st_cuda_device_count,
 * st_cuda_device, st_cuda_dev_of, st_cuda_make_current,
 * st_cuda_synchronize, st_cuda_stream_sync, st_cuda_check. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_cuda.h"

#define ST_CUDA_MAX_DEVICES 16

static st_cuda_api api;
static bool api_ok;
static char api_err[512];
static pthread_once_t api_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static st_device *devices[ST_CUDA_MAX_DEVICES];

static void load_api(void)
{
    const char *env = getenv("SYMTRACE_LIBCUDA");
    const char *names[] = {env && *env ? env : "libcuda.so.1", "libcuda.so"};
    void *h = NULL;
    for (int i = 0; i < 2 && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(api_err, sizeof api_err,
                 "CUDA is not available: no CUDA driver (%s could not be loaded)", names[0]);
        return;
    }
    /* versioned names as cuda.h maps them (cuda.h 13.0) */
#define SYM(f, name)                                                        \
    do {                                                                    \
        *(void **)&api.f = dlsym(h, name);                                  \
        if (!api.f) {                                                       \
            snprintf(api_err, sizeof api_err,                               \
                     "CUDA is not available: the driver lacks %s", name);   \
            return;                                                         \
        }                                                                   \
    } while (0)
    SYM(Init, "cuInit");
    SYM(DriverGetVersion, "cuDriverGetVersion");
    SYM(DeviceGetCount, "cuDeviceGetCount");
    SYM(DeviceGet, "cuDeviceGet");
    SYM(DeviceGetName, "cuDeviceGetName");
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute");
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    SYM(CtxSetCurrent, "cuCtxSetCurrent");
    SYM(CtxSynchronize, "cuCtxSynchronize");
    SYM(MemAlloc, "cuMemAlloc_v2");
    SYM(MemFree, "cuMemFree_v2");
    SYM(Memcpy, "cuMemcpy");
    SYM(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    SYM(MemsetD8, "cuMemsetD8_v2");
    SYM(ModuleLoadData, "cuModuleLoadData");
    SYM(ModuleUnload, "cuModuleUnload");
    SYM(ModuleGetFunction, "cuModuleGetFunction");
    SYM(LaunchKernel, "cuLaunchKernel");
    SYM(StreamCreate, "cuStreamCreate");
    SYM(StreamDestroy, "cuStreamDestroy_v2");
    SYM(StreamSynchronize, "cuStreamSynchronize");
    SYM(EventCreate, "cuEventCreate");
    SYM(EventDestroy, "cuEventDestroy_v2");
    SYM(EventRecord, "cuEventRecord");
    SYM(EventSynchronize, "cuEventSynchronize");
    SYM(EventElapsedTime, "cuEventElapsedTime");
    SYM(GetErrorString, "cuGetErrorString");
#undef SYM
    st_cu_result r = api.Init(0);
    if (r != ST_CU_SUCCESS) {
        const char *s = NULL;
        api.GetErrorString(r, &s);
        snprintf(api_err, sizeof api_err, "CUDA is not available: cuInit failed: %s (%d)",
                 s ? s : "unknown error", r);
        return;
    }
    api_ok = true;
}

const st_cuda_api *st_cuda_api_get(void)
{
    pthread_once(&api_once, load_api);
    if (!api_ok) {
        st_err(ST_ERR_RUNTIME, "%s", api_err);
        return NULL;
    }
    return &api;
}

st_status st_cuda_check(st_cu_result r, const char *what)
{
    if (r == ST_CU_SUCCESS)
        return ST_OK;
    const char *s = NULL;
    if (api.GetErrorString)
        api.GetErrorString(r, &s);
    return st_err(ST_ERR_RUNTIME, "CUDA error in %s: %s (%d)", what,
                  s ? s : "unknown error", r);
}

int st_cuda_device_count(void)
{
    pthread_once(&api_once, load_api);
    if (!api_ok)
        return 0;
    int n = 0;
    if (api.DeviceGetCount(&n) != ST_CU_SUCCESS)
        return 0;
    return n;
}

bool st_cuda_is_available(void)
{
    return st_cuda_device_count() > 0;
}

/* ---- the st_device of one GPU ---- */

st_cuda_dev *st_cuda_dev_of(st_device *d)
{
    return d && d->type == ST_DEV_CUDA ? d->impl : NULL;
}

st_status st_cuda_make_current(st_device *d)
{
    st_cuda_dev *g = st_cuda_dev_of(d);
    if (!g)
        return st_err(ST_ERR_RUNTIME, "not a CUDA device");
    return st_cuda_check(api.CtxSetCurrent(g->ctx), "cuCtxSetCurrent");
}

static void *cuda_raw_alloc(st_device *d, size_t nbytes)
{
    if (st_cuda_make_current(d) != ST_OK)
        return NULL;
    st_cu_ptr p = 0;
    st_cu_result r = api.MemAlloc(&p, nbytes ? nbytes : 256);
    if (r != ST_CU_SUCCESS) {
        st_cuda_check(r, "cuMemAlloc");
        return NULL;
    }
    return (void *)(uintptr_t)p;
}

static void cuda_raw_free(st_device *d, void *p, size_t nbytes)
{
    (void)nbytes;
    if (!p || st_cuda_make_current(d) != ST_OK)
        return;
    /* cuMemFree synchronizes with pending work on the block */
    api.MemFree((st_cu_ptr)(uintptr_t)p);
}

/* host <-> device or device <-> device (unified addressing decides) */
static st_status cuda_copy(st_device *d, void *dst, const void *src, size_t n)
{
    if (n == 0)
        return ST_OK;
    if (!dst || !src)
        return st_err(ST_ERR_RUNTIME, "cuda copy: NULL pointer (dst=%p, src=%p, %zu bytes)",
                      dst, src, n);
    st_status s = st_cuda_make_current(d);
    if (s != ST_OK)
        return s;
    /* kernels run on the device's stream; a copy sees their results */
    s = st_cuda_stream_sync(d);
    if (s != ST_OK)
        return s;
    return st_cuda_check(api.Memcpy((st_cu_ptr)(uintptr_t)dst,
                                    (st_cu_ptr)(uintptr_t)src, n), "cuMemcpy");
}

st_status st_cuda_stream_sync(st_device *d)
{
    st_cuda_dev *g = st_cuda_dev_of(d);
    if (!g)
        return st_err(ST_ERR_RUNTIME, "not a CUDA device");
    st_status s = st_cuda_make_current(d);
    if (s == ST_OK)
        s = st_cuda_check(api.StreamSynchronize(g->stream), "cuStreamSynchronize");
    if (s == ST_OK && g->sync_check)
        s = g->sync_check(d);
    return s;
}

static void cuda_synchronize(st_device *d)
{
    if (st_cuda_dev_of(d))
        st_cuda_stream_sync(d);
}

static st_device *make_device(int index)
{
    st_device *d = calloc(1, sizeof *d);
    st_cuda_dev *g = calloc(1, sizeof *g);
    char *name = malloc(24);
    if (!d || !g || !name) {
        free(d);
        free(g);
        free(name);
        st_err(ST_ERR_MEMORY, "out of memory making cuda:%d", index);
        return NULL;
    }
    g->index = index;
    st_status s = st_cuda_check(api.DeviceGet(&g->dev, index), "cuDeviceGet");
    if (s == ST_OK)
        s = st_cuda_check(api.DevicePrimaryCtxRetain(&g->ctx, g->dev),
                          "cuDevicePrimaryCtxRetain");
    if (s == ST_OK)
        s = st_cuda_check(api.CtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    if (s == ST_OK)
        s = st_cuda_check(api.StreamCreate(&g->stream, ST_CU_STREAM_NON_BLOCKING),
                          "cuStreamCreate");
    int maj = 0, min = 0;
    if (s == ST_OK)
        s = st_cuda_check(api.DeviceGetAttribute(&g->sm_count, ST_CU_ATTR_SM_COUNT, g->dev),
                          "cuDeviceGetAttribute");
    if (s == ST_OK)
        s = st_cuda_check(api.DeviceGetAttribute(&maj, ST_CU_ATTR_CC_MAJOR, g->dev),
                          "cuDeviceGetAttribute");
    if (s == ST_OK)
        s = st_cuda_check(api.DeviceGetAttribute(&min, ST_CU_ATTR_CC_MINOR, g->dev),
                          "cuDeviceGetAttribute");
    if (s != ST_OK) {
        if (g->ctx)
            api.DevicePrimaryCtxRelease(g->dev);
        free(d);
        free(g);
        free(name);
        return NULL;
    }
    g->cc = 10 * maj + min;
    if (api.DeviceGetName(g->name, (int)sizeof g->name, g->dev) != ST_CU_SUCCESS)
        snprintf(g->name, sizeof g->name, "CUDA device %d", index);
    snprintf(name, 24, "cuda:%d", index);
    d->type = ST_DEV_CUDA;
    d->index = index;
    d->name = name;
    d->raw_alloc = cuda_raw_alloc;
    d->raw_free = cuda_raw_free;
    d->copy = cuda_copy;
    d->synchronize = cuda_synchronize;
    d->impl = g;
    return d;
}

st_device *st_cuda_device(int index)
{
    if (!st_cuda_api_get())
        return NULL;
    int n = st_cuda_device_count();
    if (n <= 0) {
        st_err(ST_ERR_RUNTIME, "CUDA is not available: the driver sees no CUDA device");
        return NULL;
    }
    if (index == -1)
        index = 0;
    if (index < 0 || index >= n || index >= ST_CUDA_MAX_DEVICES) {
        st_err(ST_ERR_RUNTIME, "CUDA error: invalid device ordinal %d (%d device%s)",
               index, n, n == 1 ? "" : "s");
        return NULL;
    }
    pthread_mutex_lock(&dev_lock);
    if (!devices[index])
        devices[index] = make_device(index);
    st_device *d = devices[index];
    pthread_mutex_unlock(&dev_lock);
    return d;
}

st_status st_cuda_synchronize(int index)
{
    if (!st_cuda_api_get())
        return st_err_kind();
    if (index >= 0) {
        st_device *d = st_cuda_device(index);
        if (!d)
            return st_err_kind();
        return st_cuda_stream_sync(d);
    }
    for (int i = 0; i < ST_CUDA_MAX_DEVICES; i++) {
        pthread_mutex_lock(&dev_lock);
        st_device *d = devices[i];
        pthread_mutex_unlock(&dev_lock);
        if (!d)
            continue;
        st_status s = st_cuda_synchronize(i);
        if (s != ST_OK)
            return s;
    }
    return ST_OK;
}
