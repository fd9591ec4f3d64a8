/*
 * loader.h — the CUDA driver API, reached at run time.
 *
 * libcuda.so.1 is opened with dlopen and every entry point is fetched with cuGetProcAddress for
 * the CUDA version weft was built against, so that libweft, weftrun and the CPU tests load and
 * run on a machine without a driver. Call through the table: WEFT_CU(comm, cuMemCreate(...)).
 */
#ifndef WEFT_LOADER_H
#define WEFT_LOADER_H

#include <cuda.h>

#include "../internal.h"

/* Every driver entry point weft uses. cuda.h renames some (cuStreamWriteValue32 ->
 * cuStreamWriteValue32_v2 ...): the member names follow the renaming and the lookup string does
 * not, which is what cuGetProcAddress expects. */
#define WEFT_CU_FUNCTIONS(X)                                                              \
  X(cuInit)                                                                               \
  X(cuDriverGetVersion)                                                                   \
  X(cuGetErrorName)                                                                       \
  X(cuGetErrorString)                                                                     \
  X(cuDeviceGet)                                                                          \
  X(cuDeviceGetCount)                                                                     \
  X(cuDeviceGetAttribute)                                                                 \
  X(cuDeviceGetName)                                                                      \
  X(cuDeviceGetPCIBusId)                                                                  \
  X(cuDeviceCanAccessPeer)                                                                \
  X(cuDeviceGetP2PAttribute)                                                              \
  X(cuDevicePrimaryCtxRetain)                                                             \
  X(cuDevicePrimaryCtxRelease)                                                            \
  X(cuCtxSetCurrent)                                                                      \
  X(cuCtxGetCurrent)                                                                      \
  X(cuCtxEnablePeerAccess)                                                                \
  X(cuMemAlloc)                                                                           \
  X(cuMemFree)                                                                            \
  X(cuMemHostAlloc)                                                                       \
  X(cuMemFreeHost)                                                                        \
  X(cuMemHostGetDevicePointer)                                                            \
  X(cuMemHostRegister)                                                                    \
  X(cuMemHostUnregister)                                                                  \
  X(cuMemcpyHtoD)                                                                         \
  X(cuMemcpyDtoH)                                                                         \
  X(cuMemcpyAsync)                                                                        \
  X(cuMemcpyHtoDAsync)                                                                    \
  X(cuMemcpyDtoHAsync)                                                                    \
  X(cuMemcpyDtoDAsync)                                                                    \
  X(cuMemcpyPeerAsync)                                                                    \
  X(cuMemsetD8)                                                                           \
  X(cuMemsetD8Async)                                                                      \
  X(cuMemsetD32Async)                                                                     \
  X(cuMemsetD2D16Async)                                                                   \
  X(cuMemsetD2D32Async)                                                                   \
  X(cuMemGetAllocationGranularity)                                                        \
  X(cuMemCreate)                                                                          \
  X(cuMemRelease)                                                                         \
  X(cuMemExportToShareableHandle)                                                         \
  X(cuMemImportFromShareableHandle)                                                       \
  X(cuMemAddressReserve)                                                                  \
  X(cuMemAddressFree)                                                                     \
  X(cuMemMap)                                                                             \
  X(cuMemUnmap)                                                                           \
  X(cuMemSetAccess)                                                                       \
  X(cuPointerGetAttribute)                                                                \
  X(cuStreamCreate)                                                                       \
  X(cuStreamDestroy)                                                                      \
  X(cuStreamSynchronize)                                                                  \
  X(cuStreamQuery)                                                                        \
  X(cuStreamWaitEvent)                                                                    \
  X(cuStreamWriteValue32)                                                                 \
  X(cuStreamWriteValue64)                                                                 \
  X(cuStreamWaitValue32)                                                                  \
  X(cuStreamWaitValue64)                                                                  \
  X(cuStreamBatchMemOp)                                                                    \
  X(cuStreamBeginCapture)                                                                 \
  X(cuStreamEndCapture)                                                                   \
  X(cuStreamIsCapturing)                                                                  \
  X(cuThreadExchangeStreamCaptureMode)                                                    \
  X(cuGraphInstantiateWithFlags)                                                                  \
  X(cuGraphLaunch)                                                                        \
  X(cuGraphExecDestroy)                                                                   \
  X(cuGraphDestroy)                                                                       \
  X(cuEventCreate)                                                                        \
  X(cuEventDestroy)                                                                       \
  X(cuEventRecord)                                                                        \
  X(cuEventSynchronize)                                                                   \
  X(cuEventElapsedTime)                                                                   \
  X(cuModuleLoadData)                                                                     \
  X(cuModuleUnload)                                                                       \
  X(cuModuleGetFunction)                                                                  \
  X(cuModuleGetGlobal)                                                                    \
  X(cuFuncSetAttribute)                                                                   \
  X(cuFuncGetAttribute)                                                                   \
  X(cuLaunchKernel)                                                                       \
  X(cuLaunchKernelEx)                                                                     \
  X(cuOccupancyMaxActiveClusters)                                                          \
  X(cuTensorMapEncodeTiled)

/* Entry points whose CUDA 13 version changed its arguments while cuda.h 13.0 still declares the
 * old ones (cuCtxSynchronize_v2 takes a context): these are fetched at CUDA 12.0, so that the
 * prototype we call through is the one the driver gives. */
#define WEFT_CU_FUNCTIONS_CUDA12(X)                                                       \
  X(cuCtxGetDevice)                                                                       \
  X(cuCtxSynchronize)

typedef struct weft_cu_table {
#define WEFT_CU_MEMBER(f) __typeof__(&f) f;
  WEFT_CU_FUNCTIONS(WEFT_CU_MEMBER)
  WEFT_CU_FUNCTIONS_CUDA12(WEFT_CU_MEMBER)
#undef WEFT_CU_MEMBER
} weft_cu_table_t;

/* The table, loaded once (thread-safe). WEFT_STATUS_NO_DEVICE (with a message naming what was
 * missing) when there is no driver, or cuInit fails, or no GPU is present. */
weft_status_t weft_cu_load(weft_comm_t *comm, const weft_cu_table_t **table);

/* The loaded table; only valid after weft_cu_load succeeded. */
extern weft_cu_table_t weft_cu;

/* Records a failed driver call ("cuMemCreate(...) failed: CUDA_ERROR_OUT_OF_MEMORY (out of
 * memory) at file:line") and returns WEFT_STATUS_CUDA_ERROR (WEFT_STATUS_OUT_OF_MEMORY for
 * CUDA_ERROR_OUT_OF_MEMORY). */
weft_status_t weft_cu_error(weft_comm_t *comm, CUresult res, const char *call, const char *file,
                            int line);

#define WEFT_CU(comm, call)                                                               \
  do {                                                                                    \
    CUresult weft_cu_res_ = weft_cu.call;                                                 \
    if (weft_cu_res_ != CUDA_SUCCESS)                                                     \
      return weft_cu_error((comm), weft_cu_res_, #call, __FILE__, __LINE__);              \
  } while (0)

#define WEFT_CU_GOTO(comm, call, st, label)                                               \
  do {                                                                                    \
    CUresult weft_cu_res_ = weft_cu.call;                                                 \
    if (weft_cu_res_ != CUDA_SUCCESS) {                                                   \
      (st) = weft_cu_error((comm), weft_cu_res_, #call, __FILE__, __LINE__);              \
      goto label;                                                                         \
    }                                                                                     \
  } while (0)

#endif /* WEFT_LOADER_H */
