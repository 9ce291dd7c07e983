//go:build !(linux || darwin)

package parallel

// threadCPUTime is not available here: For never switches to serial loops
// for lack of CPU.
func threadCPUTime() (int64, bool) { return 0, false }
