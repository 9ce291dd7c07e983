package nccl

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		name string
		env  func(string) string
		want Launch
		ok   bool
		err  string
	}{
		{"by hand", env(), Launch{}, false, ""},
		{"sbatch's own shell", env("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_LOCALID", "0"), Launch{}, false, ""},
		{"srun", env("SLURM_PROCID", "5", "SLURM_STEP_NUM_TASKS", "8", "SLURM_LOCALID", "1"), Launch{5, 8, 1, "Slurm"}, true, ""},
		{"OpenMPI first", env("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_RANK", "1",
			"SLURM_PROCID", "0", "SLURM_STEP_NUM_TASKS", "1"), Launch{1, 2, 1, "OpenMPI"}, true, ""},
		{"torchrun", env("RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "3"), Launch{3, 4, 3, "torchrun"}, true, ""},
		{"one process, no local rank", env("RANK", "0", "WORLD_SIZE", "1"), Launch{0, 1, 0, "torchrun"}, true, ""},
		{"no local rank", env("PMI_RANK", "1", "PMI_SIZE", "2"), Launch{}, true,
			"PMI_RANK and PMI_SIZE are set but not MPI_LOCALRANKID: which GPU this rank uses is unknown; set MPI_LOCALRANKID to the rank's index on its machine"},
		{"bad number", env("RANK", "x", "WORLD_SIZE", "2"), Launch{}, true, `RANK="x": not a rank or a count (torchrun sets it)`},
		{"rank too big", env("RANK", "2", "WORLD_SIZE", "2", "LOCAL_RANK", "0"), Launch{}, true, "RANK=2 is not below WORLD_SIZE=2"},
	} {
		l, ok, err := FromEnv(c.env)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || ok != c.ok || l != c.want {
			t.Errorf("%s: %+v %v %v, want %+v %v", c.name, l, ok, err, c.want, c.ok)
		}
	}
}

// Three ranks get rank 0's id through ShareID; a stray client, a rank of
// a world of another size and a duplicate rank are refused on the way.
func TestShareID(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	id := bytes.Repeat([]byte{7, 1}, idBytes/2)
	deadline := time.Now().Add(20 * time.Second)

	// Before the ranks: a stray connection and a rank of a world of 4.
	stray, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	stray.Write([]byte("GET / HTTP/1.0\r\n\r\n......"))
	stray.Close()
	var wg sync.WaitGroup
	serveErr := make(chan error, 1)
	go func() { serveErr <- serveID(l, id, 3, deadline) }()
	if _, err := fetchID(addr, 1, 4, deadline); err == nil || !strings.Contains(err.Error(), "rank 0 runs a world of 3 ranks, this rank one of 4") {
		t.Fatalf("wrong size: %v", err)
	}
	got := make([][]byte, 3)
	errs := make([]error, 3)
	for r := 1; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[r], errs[r] = fetchID(addr, r, 3, deadline)
		}()
	}
	wg.Wait()
	if err := <-serveErr; err != nil {
		t.Fatal(err)
	}
	for r := 1; r < 3; r++ {
		if errs[r] != nil || !bytes.Equal(got[r], id) {
			t.Fatalf("rank %d: %v %v", r, got[r], errs[r])
		}
	}
	l.Close()
}

func TestShareIDDuplicateAndTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	id := make([]byte, idBytes)
	serveErr := make(chan error, 1)
	go func() { serveErr <- serveID(l, id, 3, time.Now().Add(2*time.Second)) }()
	if _, err := fetchID(addr, 1, 3, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = fetchID(addr, 1, 3, time.Now().Add(5*time.Second))
	if err == nil || !strings.Contains(err.Error(), "rank 1 has already joined: two processes have the same rank") {
		t.Fatalf("duplicate rank: %v", err)
	}
	err = <-serveErr
	if err == nil || !strings.Contains(err.Error(), "ranks [2] did not ask for the NCCL id") {
		t.Fatalf("rank 0 waiting for rank 2: %v", err)
	}
	// Nobody listens: a rank gives up at its deadline, naming the address.
	_, err = fetchID(addr, 2, 3, time.Now().Add(300*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "rank 2 got no NCCL id from rank 0 at "+addr+" (MASTER_ADDR:MASTER_PORT) in time") {
		t.Fatalf("no rank 0: %v", err)
	}
}
