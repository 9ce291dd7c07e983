//go:build linux || darwin

package train

import (
	"runtime"
	"syscall"
	"time"
)

// PeakMemory returns the process's peak resident memory so far, in bytes
// (getrusage's ru_maxrss: kilobytes on Linux, bytes on macOS).
func PeakMemory() (int64, bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	if runtime.GOOS == "darwin" {
		return int64(u.Maxrss), true
	}
	return int64(u.Maxrss) * 1024, true
}

// CPUTime returns the CPU time this process has used so far, user and
// system, every thread counted.
func CPUTime() (time.Duration, bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
