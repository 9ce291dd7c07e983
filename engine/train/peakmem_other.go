//go:build !linux && !darwin

package train

import "time"

// PeakMemory is not reported here.
func PeakMemory() (int64, bool) { return 0, false }

// CPUTime is not reported here.
func CPUTime() (time.Duration, bool) { return 0, false }
