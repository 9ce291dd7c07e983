package notebook

import (
	"testing"
)

func checkNotebooks(stored, fresh []*Output, tags ...any) (*Notebook, *Notebook) {
	mk := func(outs []*Output) *Notebook {
		return &Notebook{NBFormat: 4, Cells: []*Cell{{ID: "c1", Type: "code", Source: "x", Metadata: map[string]any{"tags": tags}, Outputs: outs}}}
	}
	return mk(stored), mk(fresh)
}

func TestCheckDiff(t *testing.T) {
	stored := []*Output{
		{Type: "stream", Name: "stdout", Text: "step 1\nstep 2\nreward 0.500 success 1\n"},
		{Type: "display_data", Data: map[string]any{"image/png": "AAAA", "text/plain": "chart"}},
	}
	fresh := []*Output{
		{Type: "stream", Name: "stdout", Text: "step 1\nstep 2\nreward 0.501 success 1\n"},
		{Type: "display_data", Data: map[string]any{"image/png": "BBBB", "text/plain": "chart"}},
	}
	a, b := checkNotebooks(stored, fresh)
	ms := Check(a, b, 0)
	if len(ms) != 1 {
		t.Fatalf("%d mismatches, want 1", len(ms))
	}
	want := "--- stored\n+++ executed\n@@\n  step 1\n  step 2\n- reward 0.500 success 1\n+ reward 0.501 success 1\n  [display]\n  <image/png>\n"
	if ms[0].Diff != want || ms[0].ID != "c1" {
		t.Errorf("diff:\n%s\nwant:\n%s", ms[0].Diff, want)
	}
	// Within the tolerance the numbers match; images compare by presence.
	if ms := Check(a, b, 0.01); len(ms) != 0 {
		t.Errorf("rtol 0.01: %v", ms[0].Diff)
	}
	if ms := Check(a, b, 0.001); len(ms) != 1 {
		t.Errorf("rtol 0.001: 0.500 vs 0.501 should differ")
	}
	// nocheck, by tag or by comment.
	a, b = checkNotebooks(stored, fresh, "nocheck")
	if ms := Check(a, b, 0); len(ms) != 0 {
		t.Errorf("nocheck tag: %d mismatches", len(ms))
	}
	a, b = checkNotebooks(stored, fresh)
	b.Cells[0].Source = "x // ragen:nocheck"
	if ms := Check(a, b, 0); len(ms) != 0 {
		t.Errorf("nocheck comment: %d mismatches", len(ms))
	}
}

func TestCheckStructure(t *testing.T) {
	img := &Output{Type: "display_data", Data: map[string]any{"image/png": "AAAA", "text/plain": "chart"}}
	text := &Output{Type: "display_data", Data: map[string]any{"text/plain": "chart"}}
	errOut := &Output{Type: "error", EName: "panic", EValue: "boom", Traceback: []string{"tb 1"}}
	errOut2 := &Output{Type: "error", EName: "panic", EValue: "boom", Traceback: []string{"tb 2"}}
	long := &Output{Type: "stream", Name: "stdout", Text: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"}
	long2 := &Output{Type: "stream", Name: "stdout", Text: "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n12\nten\n"}
	for _, tc := range []struct {
		name          string
		stored, fresh []*Output
		rtol          float64
		want          string
	}{
		{"image lost", []*Output{img}, []*Output{text}, 0, "--- stored\n+++ executed\n  [display]\n- <image/png>\n  chart\n"},
		{"traceback ignored", []*Output{errOut}, []*Output{errOut2}, 0, ""},
		{"number count differs", []*Output{{Type: "stream", Name: "stdout", Text: "a 1 2"}}, []*Output{{Type: "stream", Name: "stdout", Text: "a 1"}}, 0.5, "--- stored\n+++ executed\n  [stdout]\n- a 1 2\n+ a 1\n"},
		{"context", []*Output{long}, []*Output{long2}, 0, "--- stored\n+++ executed\n@@\n  3\n  4\n- 5\n+ five\n  6\n  7\n@@\n  11\n  12\n+ ten\n"},
	} {
		a, b := checkNotebooks(tc.stored, tc.fresh)
		got := ""
		if ms := Check(a, b, tc.rtol); len(ms) > 0 {
			got = ms[0].Diff
		}
		if got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, got, tc.want)
		}
	}
}
