//go:build !linux && !darwin

package train

// peakRSS is not reported here: the metric is left out.
func peakRSS() (float64, bool) { return 0, false }
