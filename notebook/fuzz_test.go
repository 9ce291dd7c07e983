package notebook

import (
	"os"
	"testing"
)

// FuzzParse: arbitrary bytes never panic the .ipynb reader; what it reads
// marshals and reads back to the same bytes.
func FuzzParse(f *testing.F) {
	for _, path := range []string{"testdata/smoke.ipynb"} {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "id": "a", "metadata": {"tags": ["parameters"]}, "source": ["x := 1\n", "x"], "outputs": [{"output_type": "stream", "name": "stdout", "text": "1\n"}], "execution_count": 1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		nb, err := Parse(b)
		if err != nil {
			return
		}
		out, err := nb.Marshal()
		if err != nil {
			t.Fatalf("parsed, then Marshal: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Marshal wrote what Parse refuses: %v\n%s", err, out)
		}
		out2, err := again.Marshal()
		if err != nil || string(out2) != string(out) {
			t.Fatalf("marshal is not stable: %v\n%s\n%s", err, out, out2)
		}
	})
}
