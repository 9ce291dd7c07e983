//go:build unix

package parallel

import "syscall"

// processCPUTime returns the user and system CPU time of the process so
// far, in ns, summed over its threads.
func processCPUTime() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
