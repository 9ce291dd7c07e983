package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckedInFilesAreCurrent regenerates the kernel and compares it with
// the files checked in beside package cpu, so an edit to this generator that
// was not followed by `go generate` fails here.
func TestCheckedInFilesAreCurrent(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"out": "exp_amd64.s", "stubs": "exp_amd64_stub.go"}
	for fl, name := range files {
		if err := flag.Set(fl, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := flag.Set("pkg", "cpu"); err != nil {
		t.Fatal(err)
	}
	main()
	for _, name := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		// The first line names the command that ran, which differs here.
		if !bytes.Equal(afterFirstLine(got), afterFirstLine(want)) {
			t.Errorf("%s is out of date: run `go generate ./engine/backend/cpu`", name)
		}
	}
}

func afterFirstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}
