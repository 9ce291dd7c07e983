//go:build linux || darwin

package parallel

import "golang.org/x/sys/unix"

// threadCPUTime returns the CPU time of the calling OS thread so far, in
// ns. The kernel reads the running thread's own clock exactly, where a
// process clock (getrusage) counts another thread's running time only when
// it next accounts it, at a scheduler tick (see cpuSample).
func threadCPUTime() (int64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return ts.Nano(), true
}
