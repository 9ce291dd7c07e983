package main

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestCPUTicks checks cpuTicks against getrusage(2), which reads the same
// per-process CPU time through another door. The test burns CPU until
// rusage says this process has used 200 ms, however long that takes on a
// shared machine, so it needs no core of its own: only the comparison can
// fail, not the timing. Ticks are 10 ms (USER_HZ 100); /proc truncates to
// a tick at each end, so the ticks may lag rusage by one tick, and they
// may lead by what runs between the reads.
func TestCPUTicks(t *testing.T) {
	stat := fmt.Sprintf("/proc/%d/stat", os.Getpid())
	if _, err := os.Stat(stat); err != nil {
		t.Skip("no /proc here")
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	const work, tick = 200 * time.Millisecond, 10 * time.Millisecond
	before, ok := cpuTicks(stat)
	if !ok {
		t.Fatalf("cpuTicks(%s) failed", stat)
	}
	r0 := cpu()
	x := 1.0
	for start := time.Now(); cpu()-r0 < work; {
		for i := 0; i < 100_000; i++ {
			x = x*1.0000001 + 1e-9
		}
		if time.Since(start) > 2*time.Minute {
			t.Skipf("got %v of CPU in 2 minutes: the machine is too busy to measure", cpu()-r0)
		}
	}
	used := cpu() - r0
	after, ok := cpuTicks(stat)
	if !ok || x == 0 {
		t.Fatalf("cpuTicks(%s) failed", stat)
	}
	got := time.Duration(after-before) * tick
	if got < used-2*tick || got > used+10*tick {
		t.Errorf("cpuTicks grew by %d ticks (%v) while getrusage counted %v of CPU", after-before, got, used)
	}
	if _, ok := cpuTicks("/proc/nonexistent/stat"); ok {
		t.Error("cpuTicks of a missing file reported success")
	}
}
