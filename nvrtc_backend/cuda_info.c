/* cuda_info.c - build-time presence of the CUDA headers; the NVRTC backend
 * (kernel IR -> CUDA C -> cubin, driver API through dlopen) lands with the
 * CUDA issue. */
#include <cuda.h>

int st_cuda_header_version(void);

__attribute__((visibility("default"))) int st_cuda_header_version(void) {
    return CUDA_VERSION;
}
