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
// update, live training (bar and chart updated in place) and an interrupt
// during training, errors, complete/inspect/is_complete/history/comm_info,
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
	cmd := exec.Command(py, "-u", "testdata/client_test.py")
	cmd.Env = installedKernel(t)
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
	case <-time.After(5 * time.Minute):
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

// installedKernel builds the ragen binary, installs its kernelspec into a
// temporary prefix, and returns the environment under which Jupyter finds
// it (JUPYTER_PATH), keeps its files in the temporary directory, and caches
// runs there (RAGEN_CACHE).
func installedKernel(t *testing.T) []string {
	t.Helper()
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
	return append(os.Environ(),
		"JUPYTER_PATH="+filepath.Join(prefix, "share", "jupyter"),
		"JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "runtime"),
		"JUPYTER_DATA_DIR="+filepath.Join(dir, "data"),
		"JUPYTER_CONFIG_DIR="+filepath.Join(dir, "config"),
		"RAGEN_CACHE="+filepath.Join(dir, "cache"),
		"TMPDIR="+dir)
}

// TestNbconvertExecute runs `jupyter nbconvert --to notebook --execute` on
// testdata/smoke.ipynb with our kernel, as a user would, and checks the
// executed notebook: state across cells, and the training cell's live
// displays folded into their final state (nbconvert applies
// update_display_data to the outputs holding the display id).
func TestNbconvertExecute(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the ragen binary and runs jupyter nbconvert")
	}
	nbconvert, err := exec.LookPath("jupyter-nbconvert")
	if err != nil {
		t.Skip("jupyter-nbconvert not found (apt-get install jupyter-nbconvert python3-nbclient)")
	}
	env := installedKernel(t)
	outDir := t.TempDir()
	cmd := exec.Command(nbconvert, "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=300",
		"--output-dir", outDir, "--output", "executed.ipynb", "testdata/smoke.ipynb")
	cmd.Env = env
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("jupyter nbconvert --execute: %v\n%s", err, out)
	}
	t.Logf("nbconvert --execute took %.1f s", time.Since(start).Seconds())
	b, err := os.ReadFile(filepath.Join(outDir, "executed.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []struct {
			CellType string `json:"cell_type"`
			Outputs  []struct {
				OutputType string         `json:"output_type"`
				Data       map[string]any `json:"data"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatal(err)
	}
	var code [][]map[string]any // each code cell's outputs' data, with output_type
	for _, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		var outs []map[string]any
		for _, o := range c.Outputs {
			d := map[string]any{"output_type": o.OutputType}
			for k, v := range o.Data {
				d[k] = joined(v)
			}
			outs = append(outs, d)
		}
		code = append(code, outs)
	}
	if len(code) != 4 {
		t.Fatalf("executed notebook has %d code cells, want 4", len(code))
	}
	if got := code[1]; len(got) != 1 || got[0]["text/plain"] != "42" {
		t.Errorf("cell `x * 2`: outputs %v, want 42", got)
	}
	train := code[2]
	if len(train) != 2 {
		t.Fatalf("training cell: %d outputs, want the bar and the chart: %v", len(train), train)
	}
	// The summary table is the run's own display (a cell ending with `run`
	// shows it): in the bar as well, it showed twice.
	if bar, _ := train[0]["text/plain"].(string); !strings.Contains(bar, "done, 3 steps") || strings.Contains(bar, "rollout/reward_mean") {
		t.Errorf("training cell's bar: %q, want the outcome and no summary", bar)
	}
	if png, _ := train[1]["image/png"].(string); !strings.HasPrefix(png, "iVBORw0KGgo") {
		t.Errorf("training cell's chart is not a PNG: %.80v", train[1])
	}
	if got := code[3]; len(got) != 1 || got[0]["text/plain"] != "3" {
		t.Errorf("cell `run.Steps()`: outputs %v, want 3", got)
	}
}

// joined is a notebook's multi-line string (a list of lines) as one string.
func joined(v any) any {
	lines, ok := v.([]any)
	if !ok {
		return v
	}
	var b strings.Builder
	for _, l := range lines {
		s, _ := l.(string)
		b.WriteString(s)
	}
	return b.String()
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
