//go:build unix

package kernel

import (
	"os"
	"strconv"
	"time"
)

// Orphans. A kernel started by Jupyter must not outlive the process that
// started it (the notebook server, a console): killed with SIGKILL, that
// process cannot shut the kernel down, and the kernel would keep running
// and holding its ports. Like ipykernel (ParentPollerUnix), the kernel
// watches its parent only when the launcher says who that is: jupyter_client
// puts its own pid in JPY_PARENT_PID (unless the kernel is started
// independent). Without it (a kernel started by hand, or by a launcher that
// daemonises it on purpose) nothing is watched.
//
// If JPY_PARENT_PID is our parent, the parent is gone when getppid changes
// (the orphan is adopted by init or by a subreaper). If it is not (a
// wrapper script in between), we can only tell that our own parent is gone
// when init (pid 1) adopts us, as ipykernel does.
//
// getppid is polled once a second, not delivered by the kernel through
// prctl(PR_SET_PDEATHSIG): that signal fires when the *thread* that forked
// us exits, and a launcher may fork from a worker thread that ends while
// the process lives on, which would kill a healthy kernel.

// parentPollInterval is how often getppid is read: ipykernel's period.
const parentPollInterval = time.Second

// watchParent returns a channel closed once the parent named by the
// JPY_PARENT_PID value env has exited, or nil if there is nothing to watch.
// It stops watching when stop is closed.
func watchParent(env string, stop <-chan struct{}) <-chan int {
	pid, err := strconv.Atoi(env)
	if err != nil || pid <= 1 {
		return nil
	}
	want := os.Getppid()
	if want != pid {
		want = 0 // not our parent: watch for init adopting us
		if os.Getppid() == 1 {
			return nil // already adopted: cannot tell anything
		}
	}
	gone := make(chan int, 1)
	go func() {
		t := time.NewTicker(parentPollInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if ppid := os.Getppid(); (want != 0 && ppid != want) || (want == 0 && ppid == 1) {
				gone <- pid
				return
			}
		}
	}()
	return gone
}
