package kernel

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestJupyterClient drives the real kernel binary through Debian's
// jupyter_client (testdata/client_test.py): kernel_info, state across
// cells, stream, execute_result, display_data with image/png and its
// update, errors, complete/inspect/is_complete/history/comm_info,
// stop_on_error, interrupt, a mis-signed message, restart and shutdown,
// and the round-trip benchmark.
func TestJupyterClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the ragen binary and starts Jupyter clients")
	}
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import jupyter_client").Run(); err != nil {
		t.Skipf("%s cannot import jupyter_client (apt-get install python3-jupyter-client): %v", py, err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ragen")
	build := exec.Command("go", "build", "-o", bin, "../cmd/ragen")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/ragen: %v\n%s", err, out)
	}
	prefix := filepath.Join(dir, "prefix")
	if out, err := exec.Command(bin, "kernel", "install", "--prefix", prefix).CombinedOutput(); err != nil {
		t.Fatalf("ragen kernel install: %v\n%s", err, out)
	}
	cmd := exec.Command(py, "-u", "testdata/client_test.py")
	cmd.Env = append(os.Environ(),
		"JUPYTER_PATH="+filepath.Join(prefix, "share", "jupyter"),
		"JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "runtime"),
		"JUPYTER_DATA_DIR="+filepath.Join(dir, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("client_test.py:\n%s", out.String())
		if err != nil {
			t.Fatalf("client_test.py failed: %v", err)
		}
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("client_test.py timed out:\n%s", out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "BENCH ") {
			t.Log(line)
		}
	}
}

func TestInstall(t *testing.T) {
	dir := t.TempDir()
	kernels, err := KernelsDir(false, dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "share", "jupyter", "kernels"); kernels != want {
		t.Errorf("KernelsDir(prefix) = %s, want %s", kernels, want)
	}
	for i := 0; i < 2; i++ { // installing twice replaces the spec
		got, err := Install(kernels, "/opt/bin/ragen")
		if err != nil {
			t.Fatal(err)
		}
		if got != filepath.Join(kernels, "ragen-go") {
			t.Errorf("installed in %s", got)
		}
	}
	entries, _ := os.ReadDir(kernels)
	if len(entries) != 1 {
		t.Errorf("kernels dir holds %d entries, want only ragen-go (no temporary leftovers)", len(entries))
	}
	b, err := os.ReadFile(filepath.Join(kernels, "ragen-go", "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Argv          []string `json:"argv"`
		DisplayName   string   `json:"display_name"`
		Language      string   `json:"language"`
		InterruptMode string   `json:"interrupt_mode"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	if strings.Join(spec.Argv, " ") != "/opt/bin/ragen kernel -f {connection_file}" || spec.DisplayName != "Go (ragen)" ||
		spec.Language != "go" || spec.InterruptMode != "message" {
		t.Errorf("kernel.json = %s", b)
	}
	for _, size := range []int{32, 64} {
		f, err := os.Open(filepath.Join(kernels, "ragen-go", "logo-"+strconv.Itoa(size)+"x"+strconv.Itoa(size)+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() != size || img.Bounds().Dy() != size {
			t.Errorf("logo %d: %v %v", size, err, img.Bounds())
		}
	}
	if _, err := Install(kernels, "relative/ragen"); err == nil || !strings.Contains(err.Error(), "must be an absolute path") {
		t.Errorf("relative executable: err = %v", err)
	}
	if _, err := KernelsDir(true, dir); err == nil {
		t.Error("--user with --prefix: no error")
	}
	t.Setenv("JUPYTER_DATA_DIR", dir)
	if d, _ := KernelsDir(true, ""); d != filepath.Join(dir, "kernels") {
		t.Errorf("KernelsDir(user) with JUPYTER_DATA_DIR = %s", d)
	}
}
