//go:build cuda

package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "dl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// The CUDA libraries are opened at run time (dl.h, dl.c), not linked: a
// binary built here against Debian's CUDA 11.8 headers runs on a machine
// with CUDA 12 or 13 libraries, in a toolkit or in Python's NVIDIA wheels,
// and one without any says what it looked for.
//
// NCCL (libnccl.so.2) is opened the same way, only when a data-parallel
// run asks for a communicator (nccl.go), so a machine without it trains on
// one GPU.
//
// Each library is tried by soname, newest first (libcublas.so.13, .12,
// .11), and each soname in these places, in order:
//
//  1. the directories of $RAGEN_CUDA_LIBS (colon-separated);
//  2. the loader's own search: LD_LIBRARY_PATH, the ld.so cache;
//  3. all but the driver: $CUDA_HOME/lib64, /usr/local/cuda/lib64,
//     /usr/local/cuda-*/lib64 (newest first);
//  4. /usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/local/nvidia/lib64,
//     /usr/lib/wsl/lib;
//  5. all but the driver: $CONDA_PREFIX/lib and the NVIDIA wheels of
//     every site-packages or dist-packages of $VIRTUAL_ENV, $CONDA_PREFIX,
//     ~/.local, /usr/local and /usr (lib/python3*/): nvidia/cu13/lib
//     (CUDA 13 wheels), nvidia/cublas/lib, nvidia/cuda_nvrtc/lib, then
//     any nvidia/*/lib (NCCL's wheel: nvidia/nccl/lib).
//
// Once the driver is loaded, a cuBLAS or NVRTC newer than it (major
// version) is skipped: cuBLAS 13 does not start on a CUDA 12 driver, and
// a CUDA 12 driver cannot load NVRTC 13's PTX. cuBLAS's libcublasLt of the
// same major, and NVRTC's libnvrtc-builtins of its version, are loaded
// first from the same directory when they are there: NVRTC opens its
// builtins by soname at compile time, which finds no wheel directory.

// A library is one of the four the backend opens.
type library struct {
	id     C.int    // dl.h's DL_CUDA, DL_CUBLAS, DL_NVRTC, DL_NCCL
	what   string   // "CUDA driver", for messages
	names  []string // sonames, newest first
	system bool     // the driver: not in a toolkit's lib64 nor a wheel

	once    sync.Once
	err     error
	name    string   // the soname loaded
	path    string   // the file, symlinks resolved
	version string   // e.g. "cuBLAS 13.0.2"
	extra   []string // also loaded: libcublasLt, libnvrtc-builtins
}

var (
	driverLib = &library{id: C.DL_CUDA, what: "CUDA driver", names: []string{"libcuda.so.1"}, system: true}
	blasLib   = &library{id: C.DL_CUBLAS, what: "cuBLAS", names: []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}}
	nvrtcLib  = &library{id: C.DL_NVRTC, what: "NVRTC",
		names: []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so.11.0"}}
	ncclLib = &library{id: C.DL_NCCL, what: "NCCL", names: []string{"libnccl.so.2"}}

	driverMajor int // the driver's CUDA major version, 0 if unknown
)

// loadLibraries opens the driver, cuBLAS and NVRTC once each and returns
// the first that is missing.
func loadLibraries() error {
	for _, l := range []*library{driverLib, blasLib, nvrtcLib} {
		if err := l.load(); err != nil {
			return err
		}
	}
	return nil
}

// Libraries reports the CUDA libraries, one line each: the soname, the
// file and its version, or why it is missing and every place looked in.
// It loads them if that was not done yet. NCCL comes last: only a
// data-parallel run needs it.
func Libraries() string {
	var lines []string
	for _, l := range []*library{driverLib, blasLib, nvrtcLib, ncclLib} {
		if err := l.load(); err != nil {
			if l == ncclLib {
				lines = append(lines, err.Error()+" (needed only by data-parallel runs)")
				continue
			}
			lines = append(lines, err.Error())
			continue
		}
		s := fmt.Sprintf("%s: %s (%s)", l.name, l.path, l.version)
		if len(l.extra) > 0 {
			s += ", with " + strings.Join(l.extra, ", ")
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}

// load opens the library once and reports its failure each time.
func (l *library) load() error {
	l.once.Do(func() { l.err = l.open() })
	return l.err
}

func (l *library) open() error {
	if l != driverLib {
		driverLib.load() // for driverMajor; its absence is reported by Check
	}
	places := l.places()
	var notes []string
	for _, name := range l.names {
		if major := soMajor(name); driverMajor > 0 && major > driverMajor {
			notes = append(notes, fmt.Sprintf("%s skipped: newer than the driver (%s)", name, driverLib.version))
			continue
		}
		for _, dir := range places {
			l.extra = l.extra[:0]
			path := name
			if dir != "" {
				path = filepath.Join(dir, name)
				if _, err := os.Stat(path); err != nil {
					continue
				}
				if l == blasLib { // its libcublasLt, which the loader may not find by itself
					lt := filepath.Join(dir, strings.Replace(name, "libcublas.", "libcublasLt.", 1))
					if _, err := os.Stat(lt); err == nil {
						if _, err := dlopen(lt, true); err != nil {
							notes = append(notes, err.Error())
							continue
						}
						l.extra = append(l.extra, realPath(lt))
					}
				}
			}
			h, err := dlopen(path, false)
			if err != nil {
				if dir != "" || !strings.Contains(err.Error(), "No such file") {
					notes = append(notes, err.Error())
				}
				continue
			}
			if missing := C.dl_bind(l.id, h, 1); missing != nil {
				notes = append(notes, fmt.Sprintf("%s: has no %s", path, C.GoString(missing)))
				C.dl_close(h)
				continue
			}
			l.name = name
			l.path = path
			if p := C.dl_path(h); p != nil {
				l.path = realPath(C.GoString(p))
			}
			l.describe()
			return nil
		}
	}
	where := make([]string, len(places))
	for i, dir := range places {
		where[i] = dir
		if dir == "" {
			where[i] = "the loader's path (ld.so.cache"
			if p := os.Getenv("LD_LIBRARY_PATH"); p != "" {
				where[i] += ", LD_LIBRARY_PATH=" + p
			}
			where[i] += ")"
		}
	}
	msg := fmt.Sprintf("no %s: %s not found (looked in %s)", l.what, strings.Join(l.names, ", "), strings.Join(where, ", "))
	if len(notes) > 0 {
		msg += "; " + strings.Join(notes, "; ")
	}
	return errors.New(msg)
}

// describe sets the version of a library just bound, and loads NVRTC's
// builtins.
func (l *library) describe() {
	switch l {
	case driverLib:
		var v C.int
		if err := check("cuDriverGetVersion", C.dl_cuDriverGetVersion(&v)); err != nil {
			l.version = "version unknown: " + err.Error()
			return
		}
		driverMajor = int(v) / 1000
		l.version = fmt.Sprintf("CUDA %d.%d driver", v/1000, v%1000/10)
	case blasLib:
		var v [3]C.int // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
		for i := range v {
			if st := C.dl_cublasGetProperty(C.libraryPropertyType(i), &v[i]); st != C.CUBLAS_STATUS_SUCCESS {
				l.version = fmt.Sprintf("cuBLAS, version unknown: status %d", int(st))
				return
			}
		}
		l.version = fmt.Sprintf("cuBLAS %d.%d.%d", v[0], v[1], v[2])
	case ncclLib:
		var v C.int
		if r := C.dl_ncclGetVersion(&v); r != C.ncclSuccess {
			l.version = "NCCL, version unknown: " + C.GoString(C.dl_ncclGetErrorString(r))
			return
		}
		// NCCL_VERSION_CODE: X·1000 + Y·100 + Z up to 2.8, X·10000 + Y·100 + Z after.
		if v < 10000 {
			l.version = fmt.Sprintf("NCCL %d.%d.%d", v/1000, v/100%10, v%100)
		} else {
			l.version = fmt.Sprintf("NCCL %d.%d.%d", v/10000, v/100%100, v%100)
		}
	case nvrtcLib:
		var major, minor C.int
		C.dl_nvrtcVersion(&major, &minor)
		l.version = fmt.Sprintf("NVRTC %d.%d", major, minor)
		builtins := filepath.Join(filepath.Dir(l.path), fmt.Sprintf("libnvrtc-builtins.so.%d.%d", major, minor))
		if _, err := os.Stat(builtins); err != nil {
			l.extra = append(l.extra, filepath.Base(builtins)+" not beside it (NVRTC looks on the loader's path)")
		} else if _, err := dlopen(builtins, true); err != nil {
			l.extra = append(l.extra, err.Error())
		} else {
			l.extra = append(l.extra, realPath(builtins))
		}
		if archs := nvrtcArchs(); len(archs) > 0 {
			l.version += fmt.Sprintf(", compute_%d to compute_%d", archs[0], archs[len(archs)-1])
		}
	}
}

// dlopen opens a library file or soname; global makes its symbols
// available to those opened later (a dependency).
func dlopen(path string, global bool) (unsafe.Pointer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	g := C.int(0)
	if global {
		g = 1
	}
	var msg *C.char
	h := C.dl_open(cpath, g, &msg)
	if h == nil {
		return nil, fmt.Errorf("%s: %s", path, C.GoString(msg))
	}
	return h, nil
}

// bindCheck reports whether the file at path has every function the
// backend calls in library l, binding nothing (a test of dl.h's names
// against a library's stub).
func (l *library) bindCheck(path string) error {
	h, err := dlopen(path, false)
	if err != nil {
		return err
	}
	defer C.dl_close(h)
	if missing := C.dl_bind(l.id, h, 0); missing != nil {
		return fmt.Errorf("%s: has no %s", path, C.GoString(missing))
	}
	return nil
}

// places lists the directories to look in, in order, existing ones only;
// "" is the loader's own search.
func (l *library) places() []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(dir string) {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil || seen[real] {
			return
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return
		}
		seen[real] = true
		dirs = append(dirs, dir)
	}
	glob := func(patterns ...string) {
		for _, p := range patterns {
			matches, _ := filepath.Glob(p)
			for _, m := range newestFirst(matches) {
				add(m)
			}
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("RAGEN_CUDA_LIBS")) {
		add(dir)
	}
	dirs = append(dirs, "")
	if !l.system {
		if home := os.Getenv("CUDA_HOME"); home != "" {
			add(filepath.Join(home, "lib64"))
		}
		glob("/usr/local/cuda/lib64", "/usr/local/cuda-*/lib64")
	}
	glob("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib")
	if l.system {
		return dirs
	}
	if conda := os.Getenv("CONDA_PREFIX"); conda != "" {
		add(filepath.Join(conda, "lib"))
	}
	var roots []string
	for _, prefix := range []string{os.Getenv("VIRTUAL_ENV"), os.Getenv("CONDA_PREFIX"), homeDir(".local"), "/usr/local", "/usr"} {
		if prefix == "" {
			continue
		}
		for _, kind := range []string{"site-packages", "dist-packages"} {
			m, _ := filepath.Glob(filepath.Join(prefix, "lib", "python3*", kind))
			roots = append(roots, newestFirst(m)...)
		}
	}
	for _, site := range roots {
		glob(site+"/nvidia/cu13/lib", site+"/nvidia/cublas/lib", site+"/nvidia/cuda_nvrtc/lib", site+"/nvidia/*/lib")
	}
	return dirs
}

func homeDir(sub string) string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, sub)
}

// newestFirst sorts paths by the numbers in them, highest first
// (cuda-13.0 before cuda-12.9, python3.12 before python3.9).
func newestFirst(paths []string) []string {
	slices.SortStableFunc(paths, func(a, b string) int { return slices.Compare(numbers(b), numbers(a)) })
	return paths
}

// numbers are the decimal numbers in s, in order.
func numbers(s string) []int {
	var ns []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		n, _ := strconv.Atoi(f)
		ns = append(ns, n)
	}
	return ns
}

// soMajor is the major version in a soname: libnvrtc.so.11.2 → 11.
func soMajor(name string) int {
	_, v, _ := strings.Cut(name, ".so.")
	v, _, _ = strings.Cut(v, ".")
	n, _ := strconv.Atoi(v)
	return n
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	return p
}
