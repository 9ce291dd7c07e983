//go:build !unix

package kernel

// watchParent watches nothing: on Windows jupyter_client passes a process
// handle in JPY_PARENT_PID, not a pid, and the kernel does not wait on it
// yet (see parent_unix.go).
func watchParent(env string, stop <-chan struct{}) <-chan int { return nil }
