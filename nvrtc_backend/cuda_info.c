/* cuda_info.c - built only where the CUDA headers are (meson finds
 * cuda.h): checks at compile time that the driver-API constants and types
 * runtime/st_cuda.h declares without cuda.h match cuda.h's, and reports
 * the header version. The backend itself needs no CUDA header. */
#include <cuda.h>

#include "st_cuda.h"

_Static_assert((int)ST_CU_SUCCESS == (int)CUDA_SUCCESS, "CUDA_SUCCESS");
_Static_assert((int)ST_CU_ATTR_SM_COUNT == (int)CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
               "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT");
_Static_assert((int)ST_CU_ATTR_CC_MAJOR == (int)CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
               "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR");
_Static_assert((int)ST_CU_ATTR_CC_MINOR == (int)CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
               "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR");
_Static_assert((int)ST_CU_STREAM_NON_BLOCKING == (int)CU_STREAM_NON_BLOCKING, "CU_STREAM_NON_BLOCKING");
_Static_assert((int)ST_CU_EVENT_DEFAULT == (int)CU_EVENT_DEFAULT, "CU_EVENT_DEFAULT");
_Static_assert(sizeof(st_cu_result) == sizeof(CUresult), "CUresult size");
_Static_assert(sizeof(st_cu_device) == sizeof(CUdevice), "CUdevice size");
_Static_assert(sizeof(st_cu_ptr) == sizeof(CUdeviceptr), "CUdeviceptr size");

int st_cuda_header_version(void);

__attribute__((visibility("default"))) int st_cuda_header_version(void) {
    return CUDA_VERSION;
}
