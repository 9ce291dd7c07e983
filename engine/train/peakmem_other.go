//go:build !linux && !darwin

package train

// PeakMemory is not reported here.
func PeakMemory() (int64, bool) { return 0, false }
