// nccl_abi.h: the part of NCCL 2's nccl.h that the backend calls, written
// out because no Debian package ships NCCL's header. Every type below is
// part of NCCL's stable C ABI (unchanged from NCCL 2.0 to 2.28: an opaque
// communicator pointer, a 128-byte id passed by value, int-sized enums),
// so one binary runs with any libnccl.so.2. The prototypes exist for dl.c's
// __typeof__ only: nothing here is linked.

#ifndef RAGEN_NCCL_ABI_H
#define RAGEN_NCCL_ABI_H

#include <stddef.h>
#include <cuda.h>

typedef struct ncclComm *ncclComm_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7,
} ncclResult_t;

typedef enum {
	ncclUint8 = 1,
	ncclInt64 = 4,
	ncclFloat32 = 7,
	ncclFloat64 = 8,
} ncclDataType_t;

typedef enum { ncclSum = 0 } ncclRedOp_t;

// cudaStream_t is the driver's CUstream.
ncclResult_t ncclGetVersion(int *version);
ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err);
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
	ncclComm_t comm, CUstream stream);
ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t type, ncclComm_t comm,
	CUstream stream);
const char *ncclGetErrorString(ncclResult_t r);

#endif
