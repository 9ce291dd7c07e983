package checkpoint

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// fsync flushes a file to stable storage. A variable so that tests can make
// it fail, the way a full or failing disk does.
var fsync = (*os.File).Sync

// writeAtomic writes path through write: into a temporary file in the same
// folder, flushed and fsynced, then renamed over path, then the folder
// fsynced so the rename itself is durable. On any error the temporary file
// is removed and path is untouched.
func writeAtomic(path string, write func(w *bufio.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("cannot write %s: %w", path, err)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	if err = write(w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil { // CreateTemp makes it 0600
		return err
	}
	if err = fsync(f); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir fsyncs a folder, making the entries created or renamed in it
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return fsync(d)
}
