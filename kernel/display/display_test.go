package display

import (
	"errors"
	"image"
	"reflect"
	"testing"
)

type bundler struct{}

func (bundler) MIMEBundle() map[string]any {
	return map[string]any{"image/png": []byte{1, 2, 3}, "application/json": []byte(`{"a":1}`), "text/html": []byte("<p>")}
}
func (bundler) MIMEMetadata() map[string]any {
	return map[string]any{"image/png": map[string]int{"width": 10}}
}

type pnger struct{ err error }

func (p pnger) PNG() ([]byte, error) { return []byte{0x89}, p.err }

type md struct{}

func (md) Markdown() string { return "# t" }
func (md) String() string   { return "ignored: Markdown comes first" }

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		in   any
		data map[string]any
	}{
		{bundler{}, map[string]any{"image/png": "AQID", "application/json": jsonRaw(`{"a":1}`), "text/html": "<p>", "text/plain": "{}"}},
		{pnger{}, map[string]any{"image/png": "iQ==", "text/plain": "{<nil>}"}},
		{pnger{errors.New("no canvas")}, map[string]any{"text/plain": "cannot render image/png: no canvas"}},
		{md{}, map[string]any{"text/markdown": "# t", "text/plain": "# t"}},
		{HTML("<b>x</b>"), map[string]any{"text/html": "<b>x</b>", "text/plain": "<HTML>"}},
		{errors.New("boom"), map[string]any{"text/plain": "boom"}},
		{"s", map[string]any{"text/plain": `"s"`}},
		{42, map[string]any{"text/plain": "42"}},
	} {
		data, meta := Render(tc.in)
		if !reflect.DeepEqual(data, tc.data) {
			t.Errorf("Render(%#v) = %#v, want %#v", tc.in, data, tc.data)
		}
		if meta == nil {
			t.Errorf("Render(%#v): nil metadata", tc.in)
		}
	}
	if _, meta := Render(bundler{}); meta["image/png"] == nil {
		t.Error("MIMEMetadata not used")
	}
	data, _ := Render(image.NewGray(image.Rect(0, 0, 2, 2)))
	if s, _ := data["image/png"].(string); len(s) < 20 {
		t.Errorf("image.Image rendered as %v", data)
	}
}

func jsonRaw(s string) any {
	d, _ := Normalize(map[string]any{"application/json": []byte(s)}, nil, "")
	return d["application/json"]
}

func TestPublisherAndHandle(t *testing.T) {
	var got []Data
	restore := SetPublisher(func(d Data) { got = append(got, d) })
	Display(Text("a"))
	h := NewHandle()
	h.Show(Text("b"))
	h.Update(Text("c"))
	Publish(map[string]any{"text/plain": "d"}, nil)
	restore()
	Display(Text("dropped: no publisher"))
	if len(got) != 4 || got[0].ID != "" || got[1].ID != h.ID() || got[2].ID != h.ID() || !got[2].Update || got[1].Update ||
		got[2].Bundle["text/plain"] != "c" || got[3].Bundle["text/plain"] != "d" {
		t.Errorf("published %+v", got)
	}
	if NewHandle().ID() == h.ID() {
		t.Error("display ids repeat")
	}
}
