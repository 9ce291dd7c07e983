//go:build cuda

package cuda

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLibraries logs which CUDA libraries were loaded (scripts/gpu-check
// prints it); with a device present, every one must have loaded.
func TestLibraries(t *testing.T) {
	t.Log("CUDA libraries:\n" + Libraries())
	if err := Check(); err != nil {
		t.Skip("no CUDA device: " + err.Error())
	}
	if err := loadLibraries(); err != nil {
		t.Fatal(err)
	}
}

// Every function dl.h binds is exported under its name by the CUDA 11.8
// link stubs in $RAGEN_CUDA_STUBS (scripts/cuda-check sets it): the check
// of those names that `nm -D` would be.
func TestLoaderSymbols(t *testing.T) {
	stubs := os.Getenv("RAGEN_CUDA_STUBS")
	if stubs == "" {
		t.Skip("RAGEN_CUDA_STUBS is not set (scripts/cuda-check sets it)")
	}
	for _, c := range []struct {
		lib  *library
		file string
	}{{driverLib, "libcuda.so"}, {blasLib, "libcublas.so"}, {nvrtcLib, "libnvrtc.so"}} {
		if err := c.lib.bindCheck(filepath.Join(stubs, c.file)); err != nil {
			t.Error(err)
		}
	}
}

func TestNewestFirst(t *testing.T) {
	got := newestFirst([]string{"/usr/local/cuda-12.9/lib64", "/usr/local/cuda-13.0/lib64", "/usr/local/cuda-11.8/lib64", "/usr/local/cuda-12.10/lib64"})
	want := []string{"/usr/local/cuda-13.0/lib64", "/usr/local/cuda-12.10/lib64", "/usr/local/cuda-12.9/lib64", "/usr/local/cuda-11.8/lib64"}
	if !slices.Equal(got, want) {
		t.Errorf("newestFirst: got %q, want %q", got, want)
	}
	for name, want := range map[string]int{"libnvrtc.so.11.2": 11, "libcublas.so.13": 13, "libcuda.so.1": 1} {
		if got := soMajor(name); got != want {
			t.Errorf("soMajor(%s) = %d, want %d", name, got, want)
		}
	}
}
