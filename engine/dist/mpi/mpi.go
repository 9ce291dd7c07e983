//go:build mpi

package mpi

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdlib.h>

static MPI_Comm world(void) { return MPI_COMM_WORLD; }
static MPI_Datatype type_int64(void) { return MPI_INT64_T; }
static MPI_Datatype type_double(void) { return MPI_DOUBLE; }
static MPI_Datatype type_float(void) { return MPI_FLOAT; }
static MPI_Datatype type_byte(void) { return MPI_BYTE; }
static MPI_Op op_sum(void) { return MPI_SUM; }
static void *in_place(void) { return MPI_IN_PLACE; }
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ragen-go/ragen/engine/dist"
)

// Comm is MPI_COMM_WORLD.
type Comm struct{ rank, size int }

var (
	once    sync.Once
	theComm *Comm
	initErr error
)

// Init initialises MPI (once; later calls return the same communicator)
// and returns the world communicator. It asks for MPI_THREAD_SERIALIZED:
// a goroutine moves between OS threads, so calls may come from several
// threads, one at a time.
func Init() (*Comm, error) {
	once.Do(func() {
		var provided C.int
		if rc := C.MPI_Init_thread(nil, nil, C.MPI_THREAD_SERIALIZED, &provided); rc != C.MPI_SUCCESS {
			initErr = fmt.Errorf("MPI_Init_thread: error %d", int(rc))
			return
		}
		if provided < C.MPI_THREAD_SERIALIZED {
			initErr = fmt.Errorf("MPI_Init_thread: the library provides thread level %d, not MPI_THREAD_SERIALIZED", int(provided))
			return
		}
		var rank, size C.int
		C.MPI_Comm_rank(C.world(), &rank)
		C.MPI_Comm_size(C.world(), &size)
		theComm = &Comm{rank: int(rank), size: int(size)}
	})
	return theComm, initErr
}

// Finalize ends MPI; no collective may follow.
func Finalize() error {
	if rc := C.MPI_Finalize(); rc != C.MPI_SUCCESS {
		return fmt.Errorf("MPI_Finalize: error %d", int(rc))
	}
	return nil
}

var _ dist.Comm = (*Comm)(nil)

func (c *Comm) Rank() int { return c.rank }
func (c *Comm) Size() int { return c.size }

func check(op string, rc C.int) error {
	if rc != C.MPI_SUCCESS {
		return fmt.Errorf("%s: MPI error %d", op, int(rc))
	}
	return nil
}

// allReduce sums n elements of type t at p in place. Go memory is passed
// to C for the length of the call only (the cgo pointer rules allow it).
func allReduce(p unsafe.Pointer, n int, t C.MPI_Datatype) error {
	if n == 0 {
		return nil
	}
	return check("MPI_Allreduce", C.MPI_Allreduce(C.in_place(), p, C.int(n), t, C.op_sum(), C.world()))
}

func (c *Comm) AllReduceInt64(buf []int64) error {
	if len(buf) == 0 {
		return nil
	}
	return allReduce(unsafe.Pointer(&buf[0]), len(buf), C.type_int64())
}

func (c *Comm) AllReduceFloat64(buf []float64) error {
	if len(buf) == 0 {
		return nil
	}
	return allReduce(unsafe.Pointer(&buf[0]), len(buf), C.type_double())
}

func (c *Comm) AllReduceFloat32(buf []float32) error {
	if len(buf) == 0 {
		return nil
	}
	return allReduce(unsafe.Pointer(&buf[0]), len(buf), C.type_float())
}

// AllGather gathers the lengths first (MPI_Allgather), then the bytes
// (MPI_Allgatherv) into one buffer cut at the ranks' offsets.
func (c *Comm) AllGather(data []byte) ([][]byte, error) {
	counts := make([]C.int, c.size)
	mine := C.int(len(data))
	if err := check("MPI_Allgather", C.MPI_Allgather(unsafe.Pointer(&mine), 1, C.MPI_INT, unsafe.Pointer(&counts[0]), 1, C.MPI_INT, C.world())); err != nil {
		return nil, err
	}
	displs := make([]C.int, c.size)
	total := 0
	for r, n := range counts {
		displs[r] = C.int(total)
		total += int(n)
	}
	all := make([]byte, total+1) // +1: a valid address when every rank sends nothing
	send := unsafe.Pointer(&all[0])
	if len(data) > 0 {
		send = unsafe.Pointer(&data[0])
	}
	if err := check("MPI_Allgatherv", C.MPI_Allgatherv(send, mine, C.type_byte(), unsafe.Pointer(&all[0]), &counts[0], &displs[0], C.type_byte(), C.world())); err != nil {
		return nil, err
	}
	out := make([][]byte, c.size)
	for r, n := range counts {
		out[r] = all[displs[r] : int(displs[r])+int(n) : int(displs[r])+int(n)]
	}
	return out, nil
}

func (c *Comm) Barrier() error { return check("MPI_Barrier", C.MPI_Barrier(C.world())) }
