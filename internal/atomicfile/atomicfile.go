// Package atomicfile writes files so that a reader, or a crash, never sees
// half of one: the bytes go to a temporary file in the same folder, which
// is flushed, fsynced and renamed over the destination, and the folder is
// fsynced so the rename itself is durable. On any error the temporary file
// is removed and the destination is untouched. Every file the project
// writes for users (checkpoints, notebooks, images, tokenizers, run files)
// goes through here.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Sync flushes a file or folder to stable storage. A variable so that tests
// can make it fail, the way a full or failing disk does.
var Sync = (*os.File).Sync

// WriteFile writes data to path atomically with permissions 0644.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write writes path atomically through write, which gets a buffered writer.
func Write(path string, write func(w io.Writer) error) (err error) {
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
	if err = Sync(f); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a folder, making the entries created or renamed in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return Sync(d)
}
