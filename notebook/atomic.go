package notebook

import "github.com/ragen-go/ragen/internal/atomicfile"

// WriteFile marshals nb and writes it to path atomically (package
// atomicfile: temporary file, fsync, rename), so that path holds either
// its old content or the whole notebook, also after a crash or Ctrl-C.
func (nb *Notebook) WriteFile(path string) error {
	b, err := nb.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b)
}
