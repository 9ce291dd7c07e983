package notebook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Kernel names: the kernelspec of a ragen notebook (see package kernel).
const (
	KernelName        = "ragen-go"
	KernelDisplayName = "Go (ragen)"
	KernelLanguage    = "go"
)

// A Notebook is an nbformat 4 document. Fields nbformat defines but ragen
// does not interpret (notebook and cell metadata, attachments) are kept as
// they were read and written back unchanged.
type Notebook struct {
	Metadata      map[string]any
	NBFormat      int // always 4
	NBFormatMinor int // 5 once written: cell ids are present
	Cells         []*Cell
}

// A Cell is one notebook cell. Source is the joined text (nbformat stores
// it as a list of lines or a string; both read the same).
type Cell struct {
	ID          string
	Type        string // "code", "markdown" or "raw"
	Metadata    map[string]any
	Source      string
	Attachments map[string]any // markdown and raw cells; nil when absent
	// Code cells only.
	ExecutionCount *int // nil is null: never run
	Outputs        []*Output
}

// An Output is one output of a code cell, of one of the four nbformat
// types. Data values of text MIME types are joined strings; binary types
// are base64 strings; JSON types are decoded values.
type Output struct {
	Type string // "stream", "display_data", "execute_result" or "error"

	Name, Text string // stream: "stdout" or "stderr", and the text

	Data, Metadata map[string]any // display_data and execute_result
	ExecutionCount *int           // execute_result

	EName, EValue string // error
	Traceback     []string

	displayID string // transient: the display id, for update_display_data
}

// Tags are the cell's metadata.tags.
func (c *Cell) Tags() []string {
	raw, _ := c.Metadata["tags"].([]any)
	var tags []string
	for _, t := range raw {
		if s, ok := t.(string); ok {
			tags = append(tags, s)
		}
	}
	return tags
}

// HasTag reports whether the cell is tagged tag.
func (c *Cell) HasTag(tag string) bool {
	for _, t := range c.Tags() {
		if t == tag {
			return true
		}
	}
	return false
}

// ReadFile reads and validates a notebook file.
func ReadFile(path string) (*Notebook, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	nb, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return nb, nil
}

// Parse decodes an nbformat 4 notebook. Only nbformat 4 is read; an older
// notebook is an error that says how to upgrade it. Cells without an id
// (nbformat < 4.5) get a deterministic one (see EnsureIDs).
func Parse(b []byte) (*Notebook, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("not a notebook: %s", jsonError(b, err))
	}
	var major, minor int
	if err := decodeField(top, "nbformat", &major, true); err != nil {
		return nil, fmt.Errorf("not a notebook: %w", err)
	}
	if major != 4 {
		return nil, fmt.Errorf("nbformat %d is not supported: ragen-run reads nbformat 4 (upgrade the notebook with `jupyter nbconvert --to notebook --nbformat 4 --inplace FILE`, or open and save it in Jupyter)", major)
	}
	if err := decodeField(top, "nbformat_minor", &minor, true); err != nil {
		return nil, err
	}
	nb := &Notebook{NBFormat: major, NBFormatMinor: minor}
	if err := decodeField(top, "metadata", &nb.Metadata, true); err != nil {
		return nil, err
	}
	var cells []map[string]json.RawMessage
	if err := decodeField(top, "cells", &cells, true); err != nil {
		return nil, err
	}
	for i, raw := range cells {
		c, err := parseCell(raw)
		if err != nil {
			return nil, fmt.Errorf("cell %d: %w", i+1, err)
		}
		nb.Cells = append(nb.Cells, c)
	}
	nb.EnsureIDs()
	if err := nb.Validate(); err != nil {
		return nil, err
	}
	return nb, nil
}

// jsonError gives a JSON syntax error its line and column.
func jsonError(b []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(b[:se.Offset], []byte("\n"))
		col := int(se.Offset) - bytes.LastIndexByte(b[:se.Offset], '\n') - 1
		return fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, err)
	}
	return fmt.Sprintf("invalid JSON: %v", err)
}

func decodeField(m map[string]json.RawMessage, key string, v any, required bool) error {
	raw, ok := m[key]
	if !ok {
		if required {
			return fmt.Errorf("missing %q", key)
		}
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%q: %v", key, err)
	}
	return nil
}

// multiline decodes nbformat's multiline string: a string or a list of lines.
func multiline(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return "", errors.New("want a string or a list of strings")
	}
	return strings.Join(lines, ""), nil
}

func multilineField(m map[string]json.RawMessage, key string) (string, error) {
	raw, ok := m[key]
	if !ok {
		return "", fmt.Errorf("missing %q", key)
	}
	s, err := multiline(raw)
	if err != nil {
		return "", fmt.Errorf("%q: %v", key, err)
	}
	return s, nil
}

func parseCell(m map[string]json.RawMessage) (*Cell, error) {
	c := &Cell{}
	if err := decodeField(m, "cell_type", &c.Type, true); err != nil {
		return nil, err
	}
	if err := decodeField(m, "id", &c.ID, false); err != nil {
		return nil, err
	}
	if err := decodeField(m, "metadata", &c.Metadata, false); err != nil {
		return nil, err
	}
	if c.Metadata == nil {
		c.Metadata = map[string]any{}
	}
	var err error
	if c.Source, err = multilineField(m, "source"); err != nil {
		return nil, err
	}
	switch c.Type {
	case "markdown", "raw":
		return c, decodeField(m, "attachments", &c.Attachments, false)
	case "code":
	default:
		return nil, fmt.Errorf("unknown cell_type %q (want code, markdown or raw)", c.Type)
	}
	if err := decodeField(m, "execution_count", &c.ExecutionCount, false); err != nil {
		return nil, err
	}
	var outs []map[string]json.RawMessage
	if err := decodeField(m, "outputs", &outs, false); err != nil {
		return nil, err
	}
	for j, raw := range outs {
		o, err := parseOutput(raw)
		if err != nil {
			return nil, fmt.Errorf("output %d: %w", j+1, err)
		}
		c.Outputs = append(c.Outputs, o)
	}
	return c, nil
}

func parseOutput(m map[string]json.RawMessage) (*Output, error) {
	o := &Output{}
	if err := decodeField(m, "output_type", &o.Type, true); err != nil {
		return nil, err
	}
	var err error
	switch o.Type {
	case "stream":
		if err := decodeField(m, "name", &o.Name, true); err != nil {
			return nil, err
		}
		o.Text, err = multilineField(m, "text")
		return o, err
	case "display_data", "execute_result":
		var data map[string]json.RawMessage
		if err := decodeField(m, "data", &data, true); err != nil {
			return nil, err
		}
		o.Data = map[string]any{}
		for mime, raw := range data {
			if splitMIME(mime) {
				if o.Data[mime], err = multiline(raw); err != nil {
					return nil, fmt.Errorf("data %q: %v", mime, err)
				}
				continue
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, err
			}
			if _, isList := v.([]any); isList && !strings.HasSuffix(mime, "json") {
				s, err := multiline(raw) // a base64 image stored as lines
				if err != nil {
					return nil, fmt.Errorf("data %q: %v", mime, err)
				}
				v = s
			}
			o.Data[mime] = v
		}
		if err := decodeField(m, "metadata", &o.Metadata, false); err != nil {
			return nil, err
		}
		if o.Metadata == nil {
			o.Metadata = map[string]any{}
		}
		if o.Type == "execute_result" {
			return o, decodeField(m, "execution_count", &o.ExecutionCount, false)
		}
		return o, nil
	case "error":
		if err := decodeField(m, "ename", &o.EName, true); err != nil {
			return nil, err
		}
		if err := decodeField(m, "evalue", &o.EValue, true); err != nil {
			return nil, err
		}
		return o, decodeField(m, "traceback", &o.Traceback, false)
	}
	return nil, fmt.Errorf("unknown output_type %q", o.Type)
}

// splitMIME reports whether nbformat stores data of this MIME type as a
// list of lines (text types, SVG and JavaScript; never JSON or base64).
func splitMIME(mime string) bool {
	return strings.HasPrefix(mime, "text/") || mime == "image/svg+xml" || mime == "application/javascript"
}

var idPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// EnsureIDs gives every cell without a valid id one derived from its
// position and source (the same notebook always gets the same ids), unique
// within the notebook, as nbformat 4.5 requires.
func (nb *Notebook) EnsureIDs() {
	seen := map[string]bool{}
	for _, c := range nb.Cells {
		if idPattern.MatchString(c.ID) && !seen[c.ID] {
			seen[c.ID] = true
		}
	}
	for i, c := range nb.Cells {
		if idPattern.MatchString(c.ID) && seen[c.ID] && !c.dupOf(nb.Cells[:i]) {
			continue
		}
		for n := 0; ; n++ {
			sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%d\x00%s", i, n, c.Source)))
			id := hex.EncodeToString(sum[:4])
			if !seen[id] {
				c.ID = id
				seen[id] = true
				break
			}
		}
	}
}

// dupOf reports whether an earlier cell has c's id.
func (c *Cell) dupOf(earlier []*Cell) bool {
	for _, e := range earlier {
		if e.ID == c.ID {
			return true
		}
	}
	return false
}

// Validate checks what nbformat 4.5's schema requires of the parts ragen
// reads and writes: cell types, unique valid ids, output types and stream
// names, tags as strings.
func (nb *Notebook) Validate() error {
	if nb.NBFormat != 4 {
		return fmt.Errorf("nbformat %d, want 4", nb.NBFormat)
	}
	ids := map[string]int{}
	for i, c := range nb.Cells {
		where := fmt.Sprintf("cell %d", i+1)
		if !idPattern.MatchString(c.ID) {
			return fmt.Errorf("%s: id %q must be 1-64 letters, digits, '-' or '_'", where, c.ID)
		}
		if j, ok := ids[c.ID]; ok {
			return fmt.Errorf("%s: id %q already used by cell %d", where, c.ID, j+1)
		}
		ids[c.ID] = i
		if tags, ok := c.Metadata["tags"]; ok {
			list, ok := tags.([]any)
			if !ok {
				return fmt.Errorf("%s: metadata.tags must be a list of strings", where)
			}
			for _, t := range list {
				if _, ok := t.(string); !ok {
					return fmt.Errorf("%s: metadata.tags must be a list of strings (got %v)", where, t)
				}
			}
		}
		switch c.Type {
		case "markdown", "raw":
			if len(c.Outputs) > 0 {
				return fmt.Errorf("%s: a %s cell has no outputs", where, c.Type)
			}
		case "code":
		default:
			return fmt.Errorf("%s: unknown cell_type %q", where, c.Type)
		}
		for j, o := range c.Outputs {
			switch o.Type {
			case "stream":
				if o.Name != "stdout" && o.Name != "stderr" {
					return fmt.Errorf("%s output %d: stream name %q (want stdout or stderr)", where, j+1, o.Name)
				}
			case "display_data", "execute_result", "error":
			default:
				return fmt.Errorf("%s output %d: unknown output_type %q", where, j+1, o.Type)
			}
		}
	}
	return nil
}

// CheckKernel returns an error unless the notebook is a ragen notebook: a
// kernelspec (when present) named ragen-go with language go, and a
// language_info (when present) of go. A notebook without either is taken
// as ours and gets our kernelspec when written.
func (nb *Notebook) CheckKernel() error {
	if ks, ok := nb.Metadata["kernelspec"].(map[string]any); ok {
		name, _ := ks["name"].(string)
		lang, _ := ks["language"].(string)
		if name != KernelName || (lang != "" && lang != KernelLanguage) {
			return fmt.Errorf("the notebook's kernel is %q (language %q), not %q: ragen-run executes Go notebooks of the ragen kernel; select the %q kernel in Jupyter and save, or set metadata.kernelspec to {\"name\": %q, \"language\": %q, \"display_name\": %q}",
				name, lang, KernelName, KernelDisplayName, KernelName, KernelLanguage, KernelDisplayName)
		}
	}
	if li, ok := nb.Metadata["language_info"].(map[string]any); ok {
		if name, _ := li["name"].(string); name != "" && name != KernelLanguage {
			return fmt.Errorf("the notebook's language is %q, not %q: ragen-run executes Go notebooks of the ragen kernel (metadata.language_info.name)", name, KernelLanguage)
		}
	}
	return nil
}

// Marshal encodes the notebook as nbformat 4.5 JSON the way Jupyter writes
// it: keys sorted, one-space indent, multiline strings as lists of lines,
// a final newline. Missing kernelspec and language_info are filled in.
func (nb *Notebook) Marshal() ([]byte, error) {
	nb.EnsureIDs()
	if err := nb.Validate(); err != nil {
		return nil, err
	}
	meta := copyMap(nb.Metadata)
	if _, ok := meta["kernelspec"]; !ok {
		meta["kernelspec"] = map[string]any{"name": KernelName, "display_name": KernelDisplayName, "language": KernelLanguage}
	}
	if _, ok := meta["language_info"]; !ok {
		meta["language_info"] = map[string]any{"name": KernelLanguage, "file_extension": ".go", "mimetype": "text/x-go"}
	}
	cells := make([]any, len(nb.Cells))
	for i, c := range nb.Cells {
		cells[i] = c.toJSON()
	}
	doc := map[string]any{"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// lines splits text after each newline, as nbformat stores it.
func lines(s string) []string {
	out := []string{}
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

func (c *Cell) toJSON() map[string]any {
	meta := c.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	m := map[string]any{"id": c.ID, "cell_type": c.Type, "metadata": meta, "source": lines(c.Source)}
	if c.Type != "code" {
		if c.Attachments != nil {
			m["attachments"] = c.Attachments
		}
		return m
	}
	m["execution_count"] = c.ExecutionCount
	outs := make([]any, len(c.Outputs))
	for i, o := range c.Outputs {
		outs[i] = o.toJSON()
	}
	m["outputs"] = outs
	return m
}

func (o *Output) toJSON() map[string]any {
	m := map[string]any{"output_type": o.Type}
	switch o.Type {
	case "stream":
		m["name"], m["text"] = o.Name, lines(o.Text)
	case "display_data", "execute_result":
		data := map[string]any{}
		for k, v := range o.Data {
			if s, ok := v.(string); ok && splitMIME(k) {
				v = lines(s)
			}
			data[k] = v
		}
		meta := o.Metadata
		if meta == nil {
			meta = map[string]any{}
		}
		m["data"], m["metadata"] = data, meta
		if o.Type == "execute_result" {
			m["execution_count"] = o.ExecutionCount
		}
	case "error":
		tb := o.Traceback
		if tb == nil {
			tb = []string{}
		}
		m["ename"], m["evalue"], m["traceback"] = o.EName, o.EValue, tb
	}
	return m
}

// PlainText is the text an output shows in a terminal: a stream's text, a
// bundle's text/plain, an error's "ename: evalue" and traceback.
func (o *Output) PlainText() string {
	switch o.Type {
	case "stream":
		return o.Text
	case "error":
		return strings.Join(append([]string{o.EName + ": " + o.EValue}, o.Traceback...), "\n")
	}
	s, _ := o.Data["text/plain"].(string)
	return s
}

// mimeTypes are the keys of a bundle, sorted.
func mimeTypes(data map[string]any) []string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
