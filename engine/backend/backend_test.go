package backend_test

import (
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	_ "github.com/ragen-go/ragen/engine/backend/cpu" // registers "cpu"
)

func TestCheck(t *testing.T) {
	if err := backend.Check("cpu"); err != nil {
		t.Fatalf("Check(cpu) = %v", err)
	}
	err := backend.Check("tpu")
	if err == nil || err.Error() != `backend "tpu": unknown (valid: cpu, cuda)` {
		t.Fatalf("Check(tpu) = %v", err)
	}
	if _, err := backend.Open("tpu"); err == nil {
		t.Fatal("Open(tpu) succeeded")
	}
	b, err := backend.Open("cpu")
	if err != nil || b.Name() != "cpu" {
		t.Fatalf("Open(cpu) = %v, %v", b, err)
	}
}

// This package's tests are built without the cuda tag, so nothing
// registers "cuda" and Check says how to rebuild.
func TestCheckCUDAWithoutTag(t *testing.T) {
	want := "backend cuda: this binary was built without CUDA support; rebuild with: go build -tags cuda ./cmd/ragen (needs the CUDA toolkit headers and libraries)"
	if err := backend.Check("cuda"); err == nil || err.Error() != want {
		t.Fatalf("Check(cuda) = %v\nwant %s", err, want)
	}
}
