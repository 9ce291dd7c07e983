package notebook

import (
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path so that path holds either its old
// content or all of data, never a part: the data goes to a temporary file
// in the same directory, is synced, and is renamed over path (rename is
// atomic within a file system); the directory is synced too so the rename
// survives a crash. An existing file keeps its permissions.
func WriteFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
	return nil
}

// WriteFile marshals nb and writes it atomically to path.
func (nb *Notebook) WriteFile(path string) error {
	b, err := nb.Marshal()
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, b)
}
