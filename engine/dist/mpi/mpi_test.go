//go:build mpi

package mpi

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestCollectives starts itself under mpirun with 3 ranks; each rank checks
// the collectives, an empty all-gather share and an all-empty one included.
func TestCollectives(t *testing.T) {
	if os.Getenv("RAGEN_MPI_RANK_TEST") == "" {
		mpirun, err := exec.LookPath("mpirun")
		if err != nil {
			t.Skip("mpirun not found (scripts/mpi-check installs OpenMPI)")
		}
		cmd := exec.Command(mpirun, "-np", "3", "--allow-run-as-root", "--oversubscribe",
			"-x", "RAGEN_MPI_RANK_TEST=1", os.Args[0], "-test.run", "^TestCollectives$", "-test.v")
		out, err := cmd.CombinedOutput()
		if err != nil || bytes.Count(out, []byte("--- PASS: TestCollectives")) != 3 {
			t.Fatalf("mpirun -np 3: %v\n%s", err, out)
		}
		return
	}
	c, err := Init()
	if err != nil {
		t.Fatal(err)
	}
	defer Finalize()
	r, n := c.Rank(), c.Size()
	if n != 3 {
		t.Fatalf("size %d, want 3", n)
	}
	i := []int64{int64(r), 1 << 40}
	f64 := []float64{float64(r) / 2}
	f32 := []float32{float32(r)}
	if err := c.AllReduceInt64(i); err != nil {
		t.Fatal(err)
	}
	c.AllReduceFloat64(f64)
	c.AllReduceFloat32(f32)
	if i[0] != 3 || i[1] != 3<<40 || f64[0] != 1.5 || f32[0] != 3 {
		t.Fatalf("rank %d: sums %v %v %v", r, i, f64, f32)
	}
	data := bytes.Repeat([]byte{byte(r)}, r) // rank 0 sends nothing
	all, err := c.AllGather(data)
	if err != nil {
		t.Fatal(err)
	}
	for q, b := range all {
		if !bytes.Equal(b, bytes.Repeat([]byte{byte(q)}, q)) {
			t.Fatalf("rank %d: from rank %d got %v", r, q, b)
		}
	}
	if all, err = c.AllGather(nil); err != nil || len(all) != 3 || len(all[0])+len(all[1])+len(all[2]) != 0 {
		t.Fatalf("rank %d: empty all-gather: %v %v", r, all, err)
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	t.Log("rank " + strconv.Itoa(r) + " ok")
}

// BenchmarkAllReduceFixed is the gradient all-reduce of a model of 2²⁰
// parameters (the small preset has 0.87M): dist.Fixed's 3·2²⁰ + 1 limbs,
// 24 MiB. Under mpirun every rank must run the same number of rounds, so
// give a count:
//
//	go test -c -tags mpi -o mpi.test ./engine/dist/mpi
//	mpirun -np 2 ./mpi.test -test.run '^$' -test.bench AllReduce -test.benchtime 20x
func BenchmarkAllReduceFixed(b *testing.B) {
	c, err := Init()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { Finalize() })
	f := make([]int64, 3<<20+1)
	b.SetBytes(int64(8 * len(f)))
	for b.Loop() {
		if err := c.AllReduceInt64(f); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.Size()), "ranks")
}
