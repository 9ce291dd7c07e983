// Package avotest checks that assembly generated with avo and checked in
// is what its generator produces now, so an edit to a generator that was
// not followed by `go generate` fails a test.
package avotest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// CheckCurrent runs an avo generator's main with its -out and -stubs flags
// pointed at a temporary folder and -pkg set to pkg, and compares the two
// files with the ones checked in at pkgDir. fix is the command to print
// when they differ.
func CheckCurrent(t *testing.T, generate func(), pkg, pkgDir, asm, stubs, fix string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"out": asm, "stubs": stubs}
	for fl, name := range files {
		if err := flag.Set(fl, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := flag.Set("pkg", pkg); err != nil {
		t.Fatal(err)
	}
	generate()
	for _, name := range []string{asm, stubs} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(pkgDir, name))
		if err != nil {
			t.Fatal(err)
		}
		// The first line names the command that ran, which differs here.
		if !bytes.Equal(afterFirstLine(got), afterFirstLine(want)) {
			t.Errorf("%s is out of date: run `%s`", name, fix)
		}
	}
}

func afterFirstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}
