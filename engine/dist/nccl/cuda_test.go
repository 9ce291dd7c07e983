//go:build cuda

package nccl

import (
	"bytes"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"github.com/ragen-go/ragen/engine/backend/cuda"
	"github.com/ragen-go/ragen/engine/dist"
)

// needGPUs skips unless n CUDA devices and NCCL are here.
func needGPUs(t *testing.T, n int) {
	have, err := cuda.Devices()
	if err != nil {
		t.Skip("no CUDA device: " + err.Error())
	}
	if have < n {
		t.Skipf("needs %d CUDA devices, found %d", n, have)
	}
	if _, err := cuda.NCCLUniqueID(); err != nil {
		t.Skip("no NCCL: " + err.Error())
	}
}

// TestNCCLOneRank runs every collective on a communicator of one rank.
func TestNCCLOneRank(t *testing.T) {
	needGPUs(t, 1)
	c, err := New(Launch{Rank: 0, Size: 1, Local: 0, Launcher: "test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCollectives(t, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Barrier(); err == nil {
		t.Fatal("a closed communicator ran a barrier")
	}
}

// TestNCCLTwoRanks starts itself twice, a rank per GPU, with torchrun's
// environment: rank 0 hands out the id over TCP, NCCL sums across GPUs.
func TestNCCLTwoRanks(t *testing.T) {
	if os.Getenv("RAGEN_NCCL_RANK_TEST") != "" {
		l, ok, err := FromEnv(os.Getenv)
		if !ok || err != nil {
			t.Fatalf("launch environment: %v %v", ok, err)
		}
		c, err := New(l, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkCollectives(t, c)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	needGPUs(t, 2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run", "^TestNCCLTwoRanks$", "-test.v")
			cmd.Env = append(os.Environ(), "RAGEN_NCCL_RANK_TEST=1", "RANK="+strconv.Itoa(r), "WORLD_SIZE=2",
				"LOCAL_RANK="+strconv.Itoa(r), "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port)
			outs[r], errs[r] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil || !bytes.Contains(outs[r], []byte("--- PASS: TestNCCLTwoRanks")) {
			t.Errorf("rank %d: %v\n%s", r, errs[r], outs[r])
		}
	}
}

// checkCollectives checks sums, gathers and a barrier against the values
// every rank can compute alone.
func checkCollectives(t *testing.T, c dist.Comm) {
	t.Helper()
	r, n := c.Rank(), c.Size()
	tri := int64(n * (n - 1) / 2) // 0 + 1 + ... + n-1
	i := []int64{int64(r), 1 << 40, -3 * int64(r)}
	f64 := []float64{float64(r) / 2}
	f32 := []float32{float32(r) + 0.5}
	for _, err := range []error{c.AllReduceInt64(i), c.AllReduceFloat64(f64), c.AllReduceFloat32(f32)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if i[0] != tri || i[1] != int64(n)<<40 || i[2] != -3*tri || f64[0] != float64(tri)/2 || f32[0] != float32(tri)+0.5*float32(n) {
		t.Fatalf("rank %d of %d: sums %v %v %v", r, n, i, f64, f32)
	}

	// The exact gradient sum of decision 41 over NCCL: nine parts dealt
	// round-robin give the bits of one process adding all nine, and a
	// vector of 2²⁰ values (25 MB of limbs) grows the staging buffer.
	const size, parts = 1 << 20, 9
	rng := rand.New(rand.NewPCG(5, 6))
	xs := make([][]float32, parts)
	for p := range xs {
		xs[p] = make([]float32, size)
		for k := range xs[p] {
			xs[p][k] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(10)-7)))
		}
	}
	alone, shared := dist.NewFixed(size), dist.NewFixed(size)
	for p := range xs {
		alone.Add(xs[p])
		if p%n == r {
			shared.Add(xs[p])
		}
	}
	if err := c.AllReduceInt64(shared.Limbs); err != nil {
		t.Fatal(err)
	}
	want, got := make([]float32, size), make([]float32, size)
	alone.Floats(want)
	shared.Floats(got)
	for k := range want {
		if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
			t.Fatalf("rank %d: exact sum element %d: %v, one process %v", r, k, got[k], want[k])
		}
	}

	// Gathers: rank q sends (q+1)·scale bytes of value q, then q·scale
	// (rank 0 nothing), then every rank nothing.
	for _, g := range []struct{ plus, scale int }{{1, 1}, {1, 3 << 20}, {0, 1000}} {
		size := func(q int) int { return (q + g.plus) * g.scale }
		all, err := c.AllGather(bytes.Repeat([]byte{byte(r)}, size(r)))
		if err != nil {
			t.Fatal(err)
		}
		for q, b := range all {
			if !bytes.Equal(b, bytes.Repeat([]byte{byte(q)}, size(q))) {
				t.Fatalf("rank %d: from rank %d got %d bytes, want %d of %d", r, q, len(b), size(q), q)
			}
		}
	}
	all, err := c.AllGather(nil)
	if err != nil || len(all) != n {
		t.Fatalf("rank %d: empty all-gather: %v %v", r, all, err)
	}
	for _, b := range all {
		if len(b) != 0 {
			t.Fatalf("rank %d: empty all-gather gave %v", r, all)
		}
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	t.Logf("rank %d of %d: collectives ok", r, n)
}
