package session

import (
	"runtime"
	"strings"
	"testing"
)

// A make that asks for more memory than is available fails the cell with
// a recoverable panic instead of killing the kernel (issue 27).
func TestMakeRefused(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "small := make([]float64, 1000)"))
	if runtime.GOOS == "linux" {
		// 64 TiB: more than any machine has, less than the runtime's own
		// limit, so without the check the runtime dies "out of memory".
		r := exec(t, s, 2, "huge := make([]byte, 1<<46)")
		if r.res.Err == nil || r.res.Err.Name != "panic" {
			t.Fatalf("make([]byte, 1<<46): %+v", r.res.Err)
		}
	}

	old := memAvailable
	memAvailable = func() (uint64, bool) { return 1 << 30, true }
	t.Cleanup(func() { memAvailable = old })
	for code, want := range map[string]string{
		"big := make([]float64, 200<<20)":                        "out of memory: make([]float64, 209715200) needs 1.6 GiB, more than the 1.0 GiB available; the kernel refused it rather than die",
		"var n uint64 = 2 << 30; b := make([]byte, 10, n)":       "out of memory: make([]uint8, 2147483648) needs 2.0 GiB, more than the 1.0 GiB available; the kernel refused it rather than die",
		"m := make(map[int64]int64, 100<<20)":                    "out of memory: make(map[int64]int64, 104857600) needs 1.6 GiB, more than the 1.0 GiB available; the kernel refused it rather than die",
		"type P struct{ X, Y float64 }; ps := make([]P, 0, 1e8)": "needs 1.5 GiB, more than the 1.0 GiB available",
	} {
		r := exec(t, s, 3, code)
		if r.res.Err == nil || r.res.Err.Name != "panic" || !strings.Contains(r.res.Err.Value, want) {
			t.Errorf("%s: error %+v, want a panic %q", code, r.res.Err, want)
		}
	}
	for code, want := range map[string]string{
		// The panic can be recovered like any other.
		"func() (r any) { defer func() { r = recover() }(); _ = make([]byte, 2<<30); return nil }() != nil": "true",
		// Sizes under the limit, nested makes, and the state kept.
		"len(make([]int, len(make([]int, 3)), 8)) + len(small)":              "1003",
		"func mk[T any](n int) []T { return make([]T, n) }\nlen(mk[int](5))": "5",
		"len(make([]byte, 100<<20))":                                         "104857600",
	} {
		r := exec(t, s, 4, code)
		mustOK(t, r)
		if r.text() != want {
			t.Errorf("%s = %s, want %s", code, r.text(), want)
		}
	}
	// Positions after a rewritten make are the cell's own.
	r := exec(t, s, 5, "y := make([]int, 5) + undefinedThing")
	if r.res.Err == nil || r.res.Err.Value != "cell[5]:1:23: undefined: undefinedThing" {
		t.Errorf("error after a make: %+v", r.res.Err)
	}
}
