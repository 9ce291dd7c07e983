package train

import "syscall"

// peakRSS returns the process's peak resident memory in GB. Linux reports
// ru_maxrss in kilobytes.
func peakRSS() (float64, bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return float64(u.Maxrss) * 1024 / 1e9, true
}
