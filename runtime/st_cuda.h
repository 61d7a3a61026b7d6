/* st_cuda.h - the CUDA device (runtime/device_cuda.c): the driver API
 * loaded with dlopen at run time (libcuda.so.1, or $SYMTRACE_LIBCUDA), one
 * st_device per GPU behind the runtime's device interface (cuMemAlloc as
 * raw_alloc, so the caching allocator pools GPU memory; copies through
 * unified addressing; a non-blocking stream per device), and the entry
 * points the NVRTC backend launches through. Without a driver or a GPU
 * nothing here fails at build time: st_cuda_is_available() is false and
 * st_rt_device(ST_DEV_CUDA, i) gives a clear error. Prefix: st_cuda_.
 * NOTE: the driver-API paths have not run on a GPU yet. */
#ifndef ST_CUDA_H
#define ST_CUDA_H

#include "st_runtime.h"

/* The driver API types we use, without cuda.h (ABI-compatible: CUresult
 * is an enum of int size, handles are pointers, CUdeviceptr 64-bit). */
typedef int st_cu_result;
typedef int st_cu_device;
typedef struct st_cu_ctx_s *st_cu_ctx;
typedef struct st_cu_module_s *st_cu_module;
typedef struct st_cu_function_s *st_cu_function;
typedef struct st_cu_stream_s *st_cu_stream;
typedef struct st_cu_event_s *st_cu_event;
typedef unsigned long long st_cu_ptr;

/* constants of cuda.h (checked against it in nvrtc_backend/cuda_info.c) */
enum {
    ST_CU_SUCCESS = 0,
    ST_CU_ATTR_SM_COUNT = 16,        /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
    ST_CU_ATTR_CC_MAJOR = 75,        /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
    ST_CU_ATTR_CC_MINOR = 76,        /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR */
    ST_CU_STREAM_NON_BLOCKING = 1,   /* CU_STREAM_NON_BLOCKING */
    ST_CU_EVENT_DEFAULT = 0,         /* CU_EVENT_DEFAULT */
};

typedef struct {
    st_cu_result (*Init)(unsigned flags);
    st_cu_result (*DriverGetVersion)(int *v);
    st_cu_result (*DeviceGetCount)(int *n);
    st_cu_result (*DeviceGet)(st_cu_device *d, int ordinal);
    st_cu_result (*DeviceGetName)(char *name, int len, st_cu_device d);
    st_cu_result (*DeviceGetAttribute)(int *v, int attr, st_cu_device d);
    st_cu_result (*DevicePrimaryCtxRetain)(st_cu_ctx *c, st_cu_device d);
    st_cu_result (*DevicePrimaryCtxRelease)(st_cu_device d);
    st_cu_result (*CtxSetCurrent)(st_cu_ctx c);
    st_cu_result (*CtxSynchronize)(void);
    st_cu_result (*MemAlloc)(st_cu_ptr *p, size_t n);
    st_cu_result (*MemFree)(st_cu_ptr p);
    st_cu_result (*Memcpy)(st_cu_ptr dst, st_cu_ptr src, size_t n);
    st_cu_result (*MemcpyHtoDAsync)(st_cu_ptr dst, const void *src, size_t n,
                                     st_cu_stream s);
    st_cu_result (*MemsetD8)(st_cu_ptr p, unsigned char v, size_t n);
    st_cu_result (*ModuleLoadData)(st_cu_module *m, const void *image);
    st_cu_result (*ModuleUnload)(st_cu_module m);
    st_cu_result (*ModuleGetFunction)(st_cu_function *f, st_cu_module m,
                                      const char *name);
    st_cu_result (*LaunchKernel)(st_cu_function f, unsigned gx, unsigned gy,
                                 unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shmem, st_cu_stream s,
                                 void **params, void **extra);
    st_cu_result (*StreamCreate)(st_cu_stream *s, unsigned flags);
    st_cu_result (*StreamDestroy)(st_cu_stream s);
    st_cu_result (*StreamSynchronize)(st_cu_stream s);
    st_cu_result (*EventCreate)(st_cu_event *e, unsigned flags);
    st_cu_result (*EventDestroy)(st_cu_event e);
    st_cu_result (*EventRecord)(st_cu_event e, st_cu_stream s);
    st_cu_result (*EventSynchronize)(st_cu_event e);
    st_cu_result (*EventElapsedTime)(float *ms, st_cu_event a, st_cu_event b);
    st_cu_result (*GetErrorString)(st_cu_result r, const char **s);
} st_cuda_api;

/* What we know of one GPU (filled when its st_device is first made). */
typedef struct {
    int index;
    st_cu_device dev;
    st_cu_ctx ctx;           /* the primary context */
    st_cu_stream stream;     /* where kernels and copies go */
    int sm_count, cc;        /* cc: 10 * major + minor, e.g. 90 */
    char name[128];
    /* Kernels run asynchronously: a backend that records device-side
     * errors (an index out of bounds) sets this hook, which reads and
     * clears its record after every synchronization of the stream (a copy
     * to the host, synchronize()); its error is the copy's, as PyTorch
     * reports a device-side assert at the next synchronizing call. */
    st_status (*sync_check)(st_device *d);
} st_cuda_dev;

/* The driver (loaded and cuInit'ed once); NULL with the error set. */
const st_cuda_api *st_cuda_api_get(void);
/* A driver, cuInit succeeds and at least one GPU. Never sets the error. */
bool st_cuda_is_available(void);
/* GPUs the driver sees (0 without a driver). */
int st_cuda_device_count(void);
/* The st_device of GPU index (made on first use); NULL with the error set
 * ("CUDA is not available: ..." without a driver or GPU). */
st_device *st_cuda_device(int index);
/* The GPU behind a CUDA st_device (NULL for another device). */
st_cuda_dev *st_cuda_dev_of(st_device *d);
/* Makes d's context current on this thread. */
st_status st_cuda_make_current(st_device *d);
/* Waits for all work on GPU index (-1: every GPU made so far). */
st_status st_cuda_synchronize(int index);
/* Synchronizes d's stream, then runs its sync_check hook. */
st_status st_cuda_stream_sync(st_device *d);
/* ST_OK, or an error "CUDA error in <what>: <driver's message>". */
st_status st_cuda_check(st_cu_result r, const char *what);

#endif
