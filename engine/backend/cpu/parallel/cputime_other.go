//go:build !unix

package parallel

// processCPUTime is not available here: For never switches to serial loops
// for lack of CPU.
func processCPUTime() (int64, bool) { return 0, false }
