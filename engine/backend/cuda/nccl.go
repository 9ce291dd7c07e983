//go:build cuda

package cuda

/*
#include "dl.h"

// Device addresses are integers on the Go side; NCCL takes pointers.
static ncclResult_t all_reduce(CUdeviceptr buf, size_t n, ncclDataType_t t, ncclComm_t comm, CUstream s) {
	return dl_ncclAllReduce((void *)buf, (void *)buf, n, t, ncclSum, comm, s);
}

// all_gather gathers n bytes from every rank into buf, in place: this
// rank's share is already at buf + rank·n.
static ncclResult_t all_gather(CUdeviceptr buf, int rank, size_t n, ncclComm_t comm, CUstream s) {
	return dl_ncclAllGather((char *)buf + (size_t)rank * n, (void *)buf, n, ncclUint8, comm, s);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/ragen-go/ragen/engine/dist"
)

// NCCL is one rank of an NCCL communicator: the dist.Comm of a
// data-parallel run on GPUs, one process per GPU (engine/dist/nccl sets it
// up from the launcher's environment).
//
// The trainer's buffers are on the host (the gradients' fixed-point limbs,
// gathered trajectories), so every collective copies its buffer to the
// device, runs NCCL on it and copies the result back. NCCL's int64 sum is
// exact, so the limbs of dist.Fixed add up to the same bits as over MPI
// (decision 43).
//
// The communicator lives in the device's primary context, the one the
// CUDA runtime inside libnccl uses in its own threads (cudaSetDevice);
// the compute backend keeps its own context on the same device. Calls must
// come from one goroutine at a time.
type NCCL struct {
	rank, size int
	dev        C.CUdevice
	ctx        C.CUcontext
	stream     C.CUstream
	comm       C.ncclComm_t
	buf        devptr // staging buffer of bufBytes
	bufBytes   int
	err        error // first failure: the communicator is unusable after it
}

var _ dist.Comm = (*NCCL)(nil)

// NCCLUniqueID loads NCCL and returns a new communicator id: 128 bytes
// that rank 0 makes and every rank passes to NewNCCL. Making it starts
// NCCL's bootstrap listener in this process, so rank 0 must call it.
func NCCLUniqueID() ([]byte, error) {
	if err := ncclLib.load(); err != nil {
		return nil, err
	}
	var id C.ncclUniqueId
	if err := ncclCheck("ncclGetUniqueId", C.dl_ncclGetUniqueId(&id)); err != nil {
		return nil, err
	}
	return C.GoBytes(unsafe.Pointer(&id.internal[0]), C.NCCL_UNIQUE_ID_BYTES), nil
}

// NewNCCL joins rank rank of size ranks to the communicator id on device
// ordinal. It returns when every rank has joined (ncclCommInitRank waits
// for them).
func NewNCCL(ordinal, rank, size int, id []byte) (*NCCL, error) {
	if len(id) != C.NCCL_UNIQUE_ID_BYTES {
		return nil, fmt.Errorf("nccl: a communicator id has %d bytes, not %d", C.NCCL_UNIQUE_ID_BYTES, len(id))
	}
	if rank < 0 || rank >= size {
		return nil, fmt.Errorf("nccl: rank %d of %d", rank, size)
	}
	if err := Check(); err != nil {
		return nil, err
	}
	if err := ncclLib.load(); err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := &NCCL{rank: rank, size: size}
	if err := check("cuDeviceGet", C.dl_cuDeviceGet(&c.dev, C.int(ordinal))); err != nil {
		return nil, fmt.Errorf("nccl: device %d: %w", ordinal, err)
	}
	if err := check("cuDevicePrimaryCtxRetain", C.dl_cuDevicePrimaryCtxRetain(&c.ctx, c.dev)); err != nil {
		return nil, fmt.Errorf("nccl: device %d: %w", ordinal, err)
	}
	if err := ctxSetCurrent(c.ctx); err != nil {
		C.dl_cuDevicePrimaryCtxRelease(c.dev)
		return nil, fmt.Errorf("nccl: %w", err)
	}
	var err error
	if c.stream, err = streamCreate(); err != nil {
		C.dl_cuDevicePrimaryCtxRelease(c.dev)
		return nil, fmt.Errorf("nccl: %w", err)
	}
	var cid C.ncclUniqueId
	for i, b := range id {
		cid.internal[i] = C.char(b)
	}
	if err := ncclCheck("ncclCommInitRank", C.dl_ncclCommInitRank(&c.comm, C.int(size), cid, C.int(rank))); err != nil {
		streamDestroy(c.stream)
		C.dl_cuDevicePrimaryCtxRelease(c.dev)
		return nil, fmt.Errorf("nccl: rank %d of %d on device %d: %w", rank, size, ordinal, err)
	}
	return c, nil
}

// ncclCheck turns an ncclResult_t into an error naming the call.
func ncclCheck(call string, r C.ncclResult_t) error {
	if r == C.ncclSuccess {
		return nil
	}
	return fmt.Errorf("%s: %s (NCCL error %d)", call, C.GoString(C.dl_ncclGetErrorString(r)), int(r))
}

func (c *NCCL) Rank() int { return c.rank }
func (c *NCCL) Size() int { return c.size }

// enter makes the primary context current on a locked OS thread; use as
// defer c.enter()().
func (c *NCCL) enter() func() {
	runtime.LockOSThread()
	if err := ctxSetCurrent(c.ctx); err != nil && c.err == nil {
		c.err = fmt.Errorf("nccl: %w", err)
	}
	return runtime.UnlockOSThread
}

// staging returns the staging buffer, grown to hold n bytes.
func (c *NCCL) staging(n int) devptr {
	if c.err != nil || n <= c.bufBytes {
		return c.buf
	}
	if c.buf != 0 {
		memFree(c.buf)
		c.buf, c.bufBytes = 0, 0
	}
	size := max(n, 1<<20)
	p, err := memAlloc(size)
	if err != nil {
		c.err = fmt.Errorf("nccl: staging buffer of %d MiB: %w", size>>20, err)
		return 0
	}
	c.buf, c.bufBytes = p, size
	return p
}

// run copies n bytes of host memory h to the staging buffer, queues op on
// it and waits, then copies out bytes back to h.
func (c *NCCL) run(h unsafe.Pointer, n, out int, call string, op func(buf devptr) C.ncclResult_t) error {
	defer c.enter()()
	buf := c.staging(max(n, out))
	if c.err != nil {
		return c.err
	}
	if n > 0 {
		if err := memcpyHtoD(buf, h, n, c.stream); err != nil {
			c.err = fmt.Errorf("nccl: %w", err)
			return c.err
		}
	}
	if err := ncclCheck(call, op(buf)); err != nil {
		c.err = fmt.Errorf("nccl: %w", err)
		return c.err
	}
	if err := c.wait(call); err != nil {
		return err
	}
	if err := memcpyDtoH(h, buf, out, c.stream); err != nil {
		c.err = fmt.Errorf("nccl: %w", err)
		return c.err
	}
	if err := streamSync(c.stream); err != nil {
		c.err = fmt.Errorf("nccl: %w", err)
	}
	return c.err
}

// wait polls the stream until the collective is done, checking NCCL's
// asynchronous error state meanwhile: when a peer dies the collective
// never ends, and a blocking synchronise would hang the process instead of
// reporting it. On an error the communicator is aborted.
func (c *NCCL) wait(call string) error {
	pause := time.Microsecond
	for {
		switch r := C.dl_cuStreamQuery(c.stream); r {
		case C.CUDA_SUCCESS:
			return nil
		case C.CUDA_ERROR_NOT_READY:
		default:
			c.err = fmt.Errorf("nccl: %s: %w", call, check("cuStreamQuery", r))
			return c.err
		}
		var async C.ncclResult_t
		if err := ncclCheck("ncclCommGetAsyncError", C.dl_ncclCommGetAsyncError(c.comm, &async)); err != nil {
			c.err = fmt.Errorf("nccl: %w", err)
			return c.err
		}
		if async != C.ncclSuccess && async != C.ncclInProgress {
			c.err = fmt.Errorf("nccl: %s: %w (a rank failed or left; the communicator is aborted)", call, ncclCheck("asynchronous error", async))
			C.dl_ncclCommAbort(c.comm)
			c.comm = nil
			return c.err
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// allReduce sums n elements of type t, of size bytes each, at p in place.
func (c *NCCL) allReduce(p unsafe.Pointer, n, size int, t C.ncclDataType_t) error {
	if n == 0 {
		return c.err
	}
	return c.run(p, n*size, n*size, "ncclAllReduce", func(buf devptr) C.ncclResult_t {
		return C.all_reduce(C.CUdeviceptr(buf), C.size_t(n), t, c.comm, c.stream)
	})
}

func (c *NCCL) AllReduceInt64(buf []int64) error {
	if len(buf) == 0 {
		return c.err
	}
	return c.allReduce(unsafe.Pointer(&buf[0]), len(buf), 8, C.ncclInt64)
}

func (c *NCCL) AllReduceFloat64(buf []float64) error {
	if len(buf) == 0 {
		return c.err
	}
	return c.allReduce(unsafe.Pointer(&buf[0]), len(buf), 8, C.ncclFloat64)
}

func (c *NCCL) AllReduceFloat32(buf []float32) error {
	if len(buf) == 0 {
		return c.err
	}
	return c.allReduce(unsafe.Pointer(&buf[0]), len(buf), 4, C.ncclFloat32)
}

// AllGather sums the lengths first (each rank fills its own slot), then
// gathers every rank's bytes padded to the longest, in place: rank r's
// share sits at r·longest in the staging buffer, where NCCL's in-place
// all-gather expects it.
func (c *NCCL) AllGather(data []byte) ([][]byte, error) {
	lens := make([]int64, c.size)
	lens[c.rank] = int64(len(data))
	if err := c.AllReduceInt64(lens); err != nil {
		return nil, err
	}
	longest := 0
	for _, n := range lens {
		longest = max(longest, int(n))
	}
	out := make([][]byte, c.size)
	if longest == 0 {
		return out, nil
	}
	all := make([]byte, c.size*longest)
	copy(all[c.rank*longest:], data)
	err := c.run(unsafe.Pointer(&all[0]), len(all), len(all), "ncclAllGather", func(buf devptr) C.ncclResult_t {
		return C.all_gather(C.CUdeviceptr(buf), C.int(c.rank), C.size_t(longest), c.comm, c.stream)
	})
	if err != nil {
		return nil, err
	}
	for r, n := range lens {
		out[r] = all[r*longest : r*longest+int(n) : r*longest+int(n)]
	}
	return out, nil
}

// Barrier is a one-element all-reduce: NCCL has no barrier, and a rank
// returns from a sum only once every rank has contributed.
func (c *NCCL) Barrier() error { return c.AllReduceInt64(make([]int64, 1)) }

// Close destroys the communicator (every rank must close it) and frees
// the staging buffer, the stream and the primary context reference.
func (c *NCCL) Close() error {
	defer c.enter()()
	var errs []error
	if c.comm != nil {
		errs = append(errs, ncclCheck("ncclCommDestroy", C.dl_ncclCommDestroy(c.comm)))
		c.comm = nil
	}
	if c.buf != 0 {
		errs = append(errs, memFree(c.buf))
		c.buf, c.bufBytes = 0, 0
	}
	if c.stream != nil {
		errs = append(errs, streamDestroy(c.stream))
		c.stream = nil
	}
	if c.ctx != nil {
		errs = append(errs, check("cuDevicePrimaryCtxRelease", C.dl_cuDevicePrimaryCtxRelease(c.dev)))
		c.ctx = nil
	}
	if c.err == nil {
		c.err = errors.New("nccl: closed")
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("nccl: %w", err)
	}
	return nil
}

// Devices is the number of CUDA devices (0 and the reason when the driver
// is missing).
func Devices() (int, error) { return deviceCount() }

var (
	deviceMu sync.Mutex
	device   int // the ordinal the registered backend opens
)

// UseDevice sets the device that the backend registered as "cuda" opens
// (default 0), as cudaSetDevice does for the runtime: a data-parallel run
// sets each rank's before its models are placed.
func UseDevice(ordinal int) {
	deviceMu.Lock()
	device = ordinal
	deviceMu.Unlock()
}

func defaultDevice() int {
	deviceMu.Lock()
	defer deviceMu.Unlock()
	return device
}
