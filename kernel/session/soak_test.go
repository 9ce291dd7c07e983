package session

import (
	"runtime"
	"testing"
	"time"
)

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemoryPerCellSoak runs thousands of small cells and bounds what each
// leaves behind. yaegi kept every compile's syntax tree (its roots and
// scope children), ~25-50 KB a cell of `1`; what stays now is the cell's
// text and a few frame slots, under 1 KB. The loop stops at a time budget
// on a slow machine, after enough cells to measure.
func TestMemoryPerCellSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak")
	}
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "x := 1"))
	cells := []string{"1", "x", "x += 1", "_ = x * 2"}
	for i := 0; i < 40; i++ {
		exec(t, s, i, cells[i%len(cells)])
	}
	before := liveHeap()
	const maxCells, minCells, perCell = 4000, 400, 4 << 10
	budget := time.Now().Add(30 * time.Second)
	n := 0
	for ; n < maxCells && (n < minCells || time.Now().Before(budget)); n++ {
		if r := exec(t, s, n, cells[n%len(cells)]); r.res.Err != nil {
			t.Fatalf("cell %d: %v", n, r.res.Err)
		}
	}
	after := liveHeap()
	runtime.KeepAlive(s)
	grown := int64(after) - int64(before)
	t.Logf("%d cells: heap %d -> %d KB, %d bytes a cell", n, before>>10, after>>10, grown/int64(n))
	if grown > int64(n)*perCell {
		t.Errorf("the heap grew by %d bytes a cell over %d cells, want < %d", grown/int64(n), n, perCell)
	}
}
