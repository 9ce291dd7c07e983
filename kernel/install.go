package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// SpecName is the kernelspec directory name.
const SpecName = "ragen-go"

// KernelsDir is where `ragen kernel install` puts kernelspecs: with user,
// the user's Jupyter data dir ($JUPYTER_DATA_DIR, else
// ~/.local/share/jupyter); with prefix, PREFIX/share/jupyter; otherwise
// the system-wide /usr/local/share/jupyter, as `jupyter kernelspec install`
// does.
func KernelsDir(user bool, prefix string) (string, error) {
	switch {
	case user && prefix != "":
		return "", fmt.Errorf("--user and --prefix exclude each other")
	case user:
		if d := os.Getenv("JUPYTER_DATA_DIR"); d != "" {
			return filepath.Join(d, "kernels"), nil
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find the home directory: %w", err)
		}
		return filepath.Join(home, ".local", "share", "jupyter", "kernels"), nil
	case prefix != "":
		return filepath.Join(prefix, "share", "jupyter", "kernels"), nil
	}
	return "/usr/local/share/jupyter/kernels", nil
}

// Spec is the kernel.json of the kernelspec.
func Spec(exe string) map[string]any {
	return map[string]any{
		"argv":           []string{exe, "kernel", "-f", "{connection_file}"},
		"display_name":   "Go (ragen)",
		"language":       "go",
		"interrupt_mode": "message",
		"env":            map[string]string{},
		"metadata":       map[string]any{},
	}
}

// Install writes the kernelspec directory kernelsDir/ragen-go (kernel.json
// running exe, and two logos) atomically: it is built in a temporary
// directory beside it and renamed into place, so Jupyter never sees half a
// kernelspec. It returns the directory written.
func Install(kernelsDir, exe string) (string, error) {
	if !filepath.IsAbs(exe) {
		return "", fmt.Errorf("kernel executable %q: must be an absolute path", exe)
	}
	if err := os.MkdirAll(kernelsDir, 0o755); err != nil {
		return "", fmt.Errorf("cannot create %s: %w", kernelsDir, err)
	}
	tmp, err := os.MkdirTemp(kernelsDir, "."+SpecName+".tmp")
	if err != nil {
		return "", fmt.Errorf("cannot write kernelspec: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	js, err := json.MarshalIndent(Spec(exe), "", "  ")
	if err != nil {
		return "", err
	}
	files := map[string][]byte{"kernel.json": append(js, '\n')}
	for _, size := range []int{32, 64} {
		png, err := Logo(size)
		if err != nil {
			return "", err
		}
		files[fmt.Sprintf("logo-%dx%d.png", size, size)] = png
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return "", fmt.Errorf("cannot write kernelspec: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(kernelsDir, SpecName)
	// Move an existing spec aside first: rename cannot replace a directory.
	old := ""
	if _, err := os.Stat(dst); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dst, old); err != nil {
			return "", fmt.Errorf("cannot replace %s: %w", dst, err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		if old != "" {
			os.Rename(old, dst)
		}
		return "", fmt.Errorf("cannot install %s: %w", dst, err)
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return dst, nil
}
