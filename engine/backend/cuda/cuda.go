//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ragen-go/ragen/engine/backend"
)

func init() {
	backend.Register("cuda", func() (backend.Backend, error) { return New(defaultDevice()) }, Check)
}

// Check reports whether a CUDA device is present: the driver loads and
// counts at least one, and cuBLAS and NVRTC load (Libraries says which).
func Check() error {
	n, err := deviceCount()
	if err != nil {
		return fmt.Errorf("backend cuda: %w", err)
	}
	if n == 0 {
		return errors.New("backend cuda: no CUDA device found")
	}
	if err := loadLibraries(); err != nil {
		return fmt.Errorf("backend cuda: %w", err)
	}
	return nil
}

// Backend runs the engine's ops on one CUDA device: a context, one stream
// that every copy, kernel and cuBLAS call is queued on (so they run in
// program order), the kernels of kernels.cu compiled by NVRTC, and a cuBLAS
// handle. Integer inputs are copied to small device scratch buffers on the
// same stream. Not safe for concurrent use.
type Backend struct {
	ctx    cuContext
	stream cuStream
	mod    cuModule
	fns    map[string]cuFunction
	blas   *blasHandle
	device string // the device's name
	arch   string // NVRTC target, e.g. compute_90
	err    error  // first failure; later ops are no-ops

	ints    *buffer // int32 scratch for tokens, positions, targets, lengths
	scratch *buffer // float scratch (norm partials, sampling rows)
	wide    *buffer // GemmBF16B's widened bf16 operand
	host32  []int32
}

// buffer is device memory; a Slice shares its parent's allocation.
type buffer struct {
	ptr   devptr
	n     int  // float32 values (or 4-byte words)
	owner bool // made by Alloc, freed by Free
}

func (b *buffer) Len() int { return b.n }

// New opens device ordinal: creates a context and a stream, compiles the
// kernels for the device's compute capability and loads them, creates the
// cuBLAS handle.
func New(ordinal int) (*Backend, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b := &Backend{}
	dev, major, minor, name, err := capability(ordinal)
	if err != nil {
		return nil, fmt.Errorf("backend cuda: device %d: %w", ordinal, err)
	}
	b.device = name
	if b.ctx, err = ctxCreate(dev); err != nil {
		return nil, fmt.Errorf("backend cuda: %w", err)
	}
	fail := func(e error) (*Backend, error) {
		ctxDestroy(b.ctx)
		return nil, e
	}
	if b.stream, err = streamCreate(); err != nil {
		return fail(fmt.Errorf("backend cuda: %w", err))
	}
	ptx, arch, err := compile(major, minor)
	if err != nil {
		return fail(fmt.Errorf("backend cuda: %w", err))
	}
	b.arch = arch
	if b.mod, b.fns, err = loadKernels(ptx); err != nil {
		return fail(fmt.Errorf("backend cuda: %w", err))
	}
	if b.blas, err = newBlas(b.stream); err != nil {
		return fail(fmt.Errorf("backend cuda: %w", err))
	}
	return b, nil
}

// enter makes the backend's context current on a locked OS thread (a CUDA
// context is per thread; goroutines move between threads). Use as
// defer b.enter()().
func (b *Backend) enter() func() {
	runtime.LockOSThread()
	if err := ctxSetCurrent(b.ctx); err != nil && b.err == nil {
		b.err = fmt.Errorf("backend cuda: %w", err)
	}
	return runtime.UnlockOSThread
}

func (b *Backend) Name() string { return "cuda" }

// Device is the name of the GPU.
func (b *Backend) Device() string { return b.device }

// Arch is the architecture the kernels were compiled for.
func (b *Backend) Arch() string { return b.arch }

func (b *Backend) Err() error { return b.err }

func (b *Backend) Close() error {
	defer b.enter()()
	b.sync()
	for _, s := range []*buffer{b.ints, b.scratch, b.wide} {
		if s != nil {
			memFree(s.ptr)
		}
	}
	b.blas.close()
	moduleUnload(b.mod)
	streamDestroy(b.stream)
	err := ctxDestroy(b.ctx)
	if b.err == nil {
		b.err = errors.New("backend cuda: closed")
		return err
	}
	return b.err
}

// sync waits for the stream; it records a failure of any queued op.
func (b *Backend) sync() {
	if err := streamSync(b.stream); err != nil && b.err == nil {
		b.err = fmt.Errorf("backend cuda: %w", err)
	}
}

// buf returns the device buffer behind a backend.Buffer.
func (b *Backend) buf(x backend.Buffer) *buffer {
	d, ok := x.(*buffer)
	if !ok && b.err == nil {
		b.err = fmt.Errorf("backend cuda: got a %T buffer, not one of this backend", x)
	}
	if !ok {
		return &buffer{}
	}
	return d
}

// need records an error unless every buffer holds at least n floats: a
// device kernel would write out of bounds instead of panicking.
func (b *Backend) need(op string, n int, bufs ...backend.Buffer) bool {
	for i, x := range bufs {
		if x == nil {
			continue
		}
		if x.Len() < n && b.err == nil {
			b.err = fmt.Errorf("backend cuda: %s: buffer %d holds %d values, needs %d", op, i, x.Len(), n)
		}
	}
	return b.err == nil
}

func (b *Backend) Alloc(n int) (backend.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("backend cuda: alloc of %d floats", n)
	}
	defer b.enter()()
	return b.alloc(n, 4)
}

// alloc returns zeroed device memory of n elements of size bytes.
func (b *Backend) alloc(n, size int) (*buffer, error) {
	bytes := (max(n, 1)*size + 3) / 4 * 4
	p, err := memAlloc(bytes)
	if err != nil {
		free, total := memInfo()
		return nil, fmt.Errorf("backend cuda: alloc %d MiB (%d MiB free of %d): %w", bytes>>20, free>>20, total>>20, err)
	}
	if err := memsetD32(p, bytes/4, b.stream); err != nil {
		memFree(p)
		return nil, fmt.Errorf("backend cuda: %w", err)
	}
	return &buffer{ptr: p, n: n * size / 4, owner: true}, nil
}

func (b *Backend) Free(x backend.Buffer) {
	if h, ok := x.(*bf16buf); ok {
		if h.owner && h.ptr != 0 {
			defer b.enter()()
			b.sync()
			memFree(h.ptr)
			h.ptr, h.n = 0, 0
		}
		return
	}
	d := b.buf(x)
	if !d.owner || d.ptr == 0 {
		return
	}
	defer b.enter()()
	b.sync() // queued kernels may still read it
	memFree(d.ptr)
	d.ptr, d.n = 0, 0
}

// Slice shares memory from value number off on: floats of a float32
// buffer, bf16 values of a bf16 one.
func (b *Backend) Slice(x backend.Buffer, off, n int) backend.Buffer {
	if h, ok := x.(*bf16buf); ok {
		if off < 0 || n < 0 || off+n > h.n {
			if b.err == nil {
				b.err = fmt.Errorf("backend cuda: slice [%d, %d) of a bf16 buffer of %d values", off, off+n, h.n)
			}
			return &bf16buf{}
		}
		return &bf16buf{ptr: h.ptr.addBF16(off), n: n}
	}
	d := b.buf(x)
	if off < 0 || n < 0 || off+n > d.n {
		if b.err == nil {
			b.err = fmt.Errorf("backend cuda: slice [%d, %d) of a buffer of %d floats", off, off+n, d.n)
		}
		return &buffer{}
	}
	return &buffer{ptr: d.ptr.add(off), n: n}
}

func (b *Backend) Upload(dst backend.Buffer, src []float32) error {
	d := b.buf(dst)
	if len(src) > d.n {
		return fmt.Errorf("backend cuda: upload of %d floats into a buffer of %d", len(src), d.n)
	}
	if len(src) == 0 || b.err != nil {
		return b.err
	}
	defer b.enter()()
	// Pageable memory: the call returns once src is staged, so src may be
	// reused at once; ordered after earlier ops on the stream.
	if err := memcpyHtoD(d.ptr, unsafe.Pointer(&src[0]), 4*len(src), b.stream); err != nil {
		b.err = fmt.Errorf("backend cuda: upload: %w", err)
	}
	return b.err
}

func (b *Backend) Download(dst []float32, src backend.Buffer) error {
	d := b.buf(src)
	if len(dst) > d.n {
		return fmt.Errorf("backend cuda: download of %d floats from a buffer of %d", len(dst), d.n)
	}
	defer b.enter()()
	if len(dst) > 0 && b.err == nil {
		if err := memcpyDtoH(unsafe.Pointer(&dst[0]), d.ptr, 4*len(dst), b.stream); err != nil {
			b.err = fmt.Errorf("backend cuda: download: %w", err)
		}
	}
	b.sync()
	return b.err
}

// download copies n bytes from device memory to p and waits.
func (b *Backend) download(p unsafe.Pointer, src devptr, n int) {
	if b.err != nil {
		return
	}
	if err := memcpyDtoH(p, src, n, b.stream); err != nil {
		b.err = fmt.Errorf("backend cuda: download: %w", err)
	}
	b.sync()
}

// Copy is a device-to-device copy of n floats, queued on the stream.
func (b *Backend) Copy(dst, src backend.Buffer, n int) {
	if !b.need("copy", n, dst, src) || n == 0 {
		return
	}
	defer b.enter()()
	if err := memcpyDtoD(b.buf(dst).ptr, b.buf(src).ptr, 4*n, b.stream); err != nil {
		b.err = fmt.Errorf("backend cuda: copy: %w", err)
	}
}

func (b *Backend) Zero(x backend.Buffer) {
	d := b.buf(x)
	if d.n == 0 || b.err != nil {
		return
	}
	defer b.enter()()
	if err := memsetD32(d.ptr, d.n, b.stream); err != nil {
		b.err = fmt.Errorf("backend cuda: %w", err)
	}
}

// upInts copies host ints to the int32 scratch and returns its address.
// The scratch is reused by the next op, which the stream orders after
// this one's kernels.
func (b *Backend) upInts(xs []int) devptr {
	b.host32 = b.host32[:0]
	for _, v := range xs {
		b.host32 = append(b.host32, int32(v))
	}
	b.ints = b.grow(b.ints, len(xs))
	if b.err != nil || len(xs) == 0 {
		return 0
	}
	if err := memcpyHtoD(b.ints.ptr, unsafe.Pointer(&b.host32[0]), 4*len(xs), b.stream); err != nil {
		b.err = fmt.Errorf("backend cuda: upload ints: %w", err)
	}
	return b.ints.ptr
}

// grow returns s if it holds n words, else a larger scratch buffer (the
// old one freed after the stream drains).
func (b *Backend) grow(s *buffer, n int) *buffer {
	if b.err != nil || (s != nil && s.n >= n) {
		return s
	}
	if s != nil {
		b.sync()
		memFree(s.ptr)
	}
	ns, err := b.alloc(max(n, 1024), 4)
	if err != nil {
		b.err = err
		return nil
	}
	return ns
}
