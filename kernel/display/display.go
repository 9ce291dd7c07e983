package display

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"strings"
	"sync"
	"sync/atomic"
)

// MIMEBundler is the primary display contract: a map from MIME type to data.
type MIMEBundler interface{ MIMEBundle() map[string]any }

// MetadataProvider gives per-MIME-type display metadata, e.g.
// {"image/png": {"width": 640, "height": 480}}.
type MetadataProvider interface{ MIMEMetadata() map[string]any }

// PNGer renders a value as a PNG image (plots implement it).
type PNGer interface{ PNG() ([]byte, error) }

// SVGer renders a value as an SVG document.
type SVGer interface{ SVG() ([]byte, error) }

// HTMLer renders a value as an HTML fragment.
type HTMLer interface{ HTML() string }

// Markdowner renders a value as Markdown.
type Markdowner interface{ Markdown() string }

// Data is one display: the bundle, its metadata, and for updatable
// displays the display id. Update marks an update_display_data.
type Data struct {
	Bundle   map[string]any // MIME type -> data, always with text/plain
	Metadata map[string]any // MIME type -> metadata; never nil
	ID       string         // display id, "" for a plain display
	Update   bool           // replace the earlier display with this ID
}

// A Publisher receives every display published while it is installed.
type Publisher func(Data)

var (
	pubMu sync.Mutex
	pub   Publisher
)

// SetPublisher installs p as the destination of Publish and returns a
// function that restores the previous one. The session installs its cell's
// publisher for the duration of the cell. With no publisher, displays are
// dropped (a compiled package used outside a notebook shows nothing).
func SetPublisher(p Publisher) (restore func()) {
	pubMu.Lock()
	prev := pub
	pub = p
	pubMu.Unlock()
	return func() {
		pubMu.Lock()
		pub = prev
		pubMu.Unlock()
	}
}

func publish(d Data) {
	pubMu.Lock()
	p := pub
	pubMu.Unlock()
	if p != nil {
		p(d)
	}
}

// Display renders x (see Render) and publishes it as display_data.
func Display(x any) {
	data, meta := Render(x)
	publish(Data{Bundle: data, Metadata: meta})
}

// Publish publishes a raw bundle with optional metadata (nil is fine).
func Publish(bundle, metadata map[string]any) {
	data, meta := Normalize(bundle, metadata, "")
	publish(Data{Bundle: data, Metadata: meta})
}

// PublishData publishes d as it is (normalising its bundle): for glue code
// that manages display ids itself, like the kernel's hook for the DSL.
func PublishData(d Data) {
	d.Bundle, d.Metadata = Normalize(d.Bundle, d.Metadata, "")
	publish(d)
}

// Value is a ready-made bundle; HTML, Markdown, SVG, PNG and Text build one
// so that a cell can write display.Display(display.HTML("<b>hi</b>")) or end
// with display.Markdown("# Title").
type Value struct {
	Bundle   map[string]any
	Metadata map[string]any
}

// MIMEBundle implements MIMEBundler.
func (v Value) MIMEBundle() map[string]any { return v.Bundle }

// MIMEMetadata implements MetadataProvider.
func (v Value) MIMEMetadata() map[string]any { return v.Metadata }

// HTML is an HTML fragment shown as such.
func HTML(s string) Value {
	return Value{Bundle: map[string]any{"text/html": s, "text/plain": "<HTML>"}}
}

// Markdown is Markdown text; its text/plain form is the source itself.
func Markdown(s string) Value {
	return Value{Bundle: map[string]any{"text/markdown": s, "text/plain": s}}
}

// SVG is an SVG document.
func SVG(s string) Value {
	return Value{Bundle: map[string]any{"image/svg+xml": s, "text/plain": "<SVG image>"}}
}

// PNG is an encoded PNG image.
func PNG(b []byte) Value {
	return Value{Bundle: map[string]any{"image/png": b, "text/plain": "<PNG image>"}}
}

// Text is plain text.
func Text(s string) Value { return Value{Bundle: map[string]any{"text/plain": s}} }

var handles atomic.Int64

// A Handle is an updatable display: Show publishes it, Update replaces what
// it shows in place (Jupyter update_display_data). Live training progress
// uses one handle for its chart and one for its progress bar.
type Handle struct{ id string }

// NewHandle returns a handle with a process-unique display id.
func NewHandle() *Handle {
	return &Handle{id: fmt.Sprintf("ragen-display-%d", handles.Add(1))}
}

// ID is the handle's display id.
func (h *Handle) ID() string { return h.id }

// Show publishes x as a new display carrying the handle's id.
func (h *Handle) Show(x any) {
	data, meta := Render(x)
	publish(Data{Bundle: data, Metadata: meta, ID: h.id})
}

// Update replaces every display shown with this handle by x.
func (h *Handle) Update(x any) {
	data, meta := Render(x)
	publish(Data{Bundle: data, Metadata: meta, ID: h.id, Update: true})
}

// Render turns x into a normalised bundle and metadata using the first of
// the interfaces listed in the package documentation that x implements.
// A render method that fails yields text/plain holding its error, so the
// cell shows why instead of nothing.
func Render(x any) (data, metadata map[string]any) {
	var bundle, meta map[string]any
	plain := ""
	switch v := x.(type) {
	case MIMEBundler:
		bundle = v.MIMEBundle()
		if m, ok := x.(MetadataProvider); ok {
			meta = m.MIMEMetadata()
		}
	case PNGer:
		b, err := v.PNG()
		bundle = binaryBundle("image/png", b, err)
	case SVGer:
		b, err := v.SVG()
		bundle = binaryBundle("image/svg+xml", b, err)
	case HTMLer:
		bundle = map[string]any{"text/html": v.HTML()}
	case Markdowner:
		s := v.Markdown()
		bundle = map[string]any{"text/markdown": s}
		plain = s
	case image.Image:
		var buf bytes.Buffer
		err := png.Encode(&buf, v)
		bundle = binaryBundle("image/png", buf.Bytes(), err)
	default:
		bundle = map[string]any{}
	}
	if _, ok := bundle["text/plain"]; !ok {
		if plain == "" {
			plain = Plain(x)
		}
		bundle["text/plain"] = plain
	}
	return Normalize(bundle, meta, "")
}

func binaryBundle(mime string, b []byte, err error) map[string]any {
	if err != nil {
		return map[string]any{"text/plain": fmt.Sprintf("cannot render %s: %v", mime, err)}
	}
	return map[string]any{mime: b}
}

// Plain is the text/plain form of a value: its Error or String method when
// it has one, else fmt's %v.
func Plain(x any) string {
	switch v := x.(type) {
	case error:
		return v.Error()
	case fmt.Stringer:
		return v.String()
	case string:
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%v", x)
}

// Normalize returns copies of bundle and metadata ready for JSON: []byte
// data of binary types (image/png, image/jpeg, application/pdf, ...) as
// base64 strings, of text types (text/*, image/svg+xml, *json, *xml,
// *javascript) as strings; text/plain set to fallback when missing (and
// fallback is not empty); metadata never nil.
func Normalize(bundle, metadata map[string]any, fallback string) (data, meta map[string]any) {
	data = make(map[string]any, len(bundle)+1)
	for k, v := range bundle {
		if b, ok := v.([]byte); ok {
			if strings.HasSuffix(k, "json") && json.Valid(b) {
				v = json.RawMessage(b) // a JSON bundle entry must be the object, not a string
			} else if isText(k) {
				v = string(b)
			} else {
				v = base64.StdEncoding.EncodeToString(b)
			}
		}
		data[k] = v
	}
	if _, ok := data["text/plain"]; !ok && fallback != "" {
		data["text/plain"] = fallback
	}
	meta = make(map[string]any, len(metadata))
	for k, v := range metadata {
		meta[k] = v
	}
	return data, meta
}

func isText(mime string) bool {
	return strings.HasPrefix(mime, "text/") || mime == "image/svg+xml" ||
		strings.HasSuffix(mime, "json") || strings.HasSuffix(mime, "xml") ||
		strings.HasSuffix(mime, "javascript")
}
