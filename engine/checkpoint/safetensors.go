package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/internal/atomicfile"
)

// Tensor is a named float32 array, row-major. Data may be a view of a
// larger flat buffer: writing never copies it.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// Info describes one tensor of a safetensors file. Begin and End are byte
// offsets from the start of the data section.
type Info struct {
	Name       string
	DType      string
	Shape      []int
	Begin, End int64
}

// Len is the number of elements: the product of the shape (1 for a scalar).
func (in Info) Len() int {
	n := 1
	for _, d := range in.Shape {
		n *= d
	}
	return n
}

// maxHeader is the reference implementation's limit on the JSON header.
const maxHeader = 100_000_000

// File is an open safetensors file whose header has been checked. Tensors
// are read on demand with ReadInto or Get. Close it when done.
type File struct {
	path      string
	r         io.ReaderAt
	closer    io.Closer
	dataStart int64
	meta      map[string]string
	infos     map[string]Info
	names     []string // sorted
}

// OpenSafetensors opens path and validates its header and layout; tensor
// data is read later.
func OpenSafetensors(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	sf, err := parse(path, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	sf.closer = f
	return sf, nil
}

// ReadSafetensors reads a whole file: every tensor converted to float32, in
// name order, and the metadata.
func ReadSafetensors(path string) ([]Tensor, map[string]string, error) {
	f, err := OpenSafetensors(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	ts := make([]Tensor, 0, len(f.names))
	for _, name := range f.names {
		t, err := f.Get(name)
		if err != nil {
			return nil, nil, err
		}
		ts = append(ts, t)
	}
	return ts, f.Metadata(), nil
}

// header entry as it appears in the JSON.
type entry struct {
	DType       string  `json:"dtype"`
	Shape       []int   `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// parse reads and checks the header of a safetensors image of the given
// size read through r; path only names it in errors.
func parse(path string, r io.ReaderAt, size int64) (*File, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s: "+format, append([]any{path}, args...)...)
	}
	var lenBuf [8]byte
	if size < 8 {
		return nil, fail("file is %d bytes, too short for the 8-byte header length (not a safetensors file, or truncated)", size)
	}
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fail("reading the header length: %v", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	switch {
	case n > maxHeader:
		return nil, fail("header length %d exceeds the %d-byte limit (not a safetensors file?)", n, maxHeader)
	case int64(n) > size-8:
		return nil, fail("header length %d exceeds the %d bytes after it (file truncated?)", n, size-8)
	case n < 2:
		return nil, fail("header length %d is too short for a JSON object", n)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil {
		return nil, fail("reading the header: %v", err)
	}
	if hdr[0] != '{' {
		return nil, fail("header does not start with '{' (not a safetensors file?)")
	}
	raw, err := headerEntries(hdr)
	if err != nil {
		return nil, fail("%v", err)
	}
	sf := &File{path: path, r: r, dataStart: 8 + int64(n), infos: make(map[string]Info, len(raw))}
	dataLen := size - sf.dataStart
	if m, ok := raw["__metadata__"]; ok {
		if err := json.Unmarshal(m, &sf.meta); err != nil {
			return nil, fail("__metadata__ must map strings to strings: %v", err)
		}
		delete(raw, "__metadata__")
	}
	sf.names = slices.Sorted(maps.Keys(raw)) // checked in name order: the first error is always the same
	for _, name := range sf.names {
		d := json.NewDecoder(bytes.NewReader(raw[name]))
		d.DisallowUnknownFields()
		var e entry
		if err := d.Decode(&e); err != nil {
			return nil, fail("tensor %q: bad header entry: %v", name, err)
		}
		size, ok := dtypeSize[e.DType]
		switch {
		case !ok:
			return nil, fail("tensor %q: unknown dtype %q", name, e.DType)
		case e.Shape == nil:
			return nil, fail("tensor %q: missing shape", name)
		case len(e.DataOffsets) != 2:
			return nil, fail("tensor %q: data_offsets must be [begin, end] (got %v)", name, e.DataOffsets)
		}
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		if begin < 0 || end < begin {
			return nil, fail("tensor %q: data offsets [%d, %d) are not a valid range", name, begin, end)
		}
		if end > dataLen {
			return nil, fail("tensor %q: data offsets [%d, %d) exceed the %d bytes of data (file truncated?)", name, begin, end, dataLen)
		}
		want, ok := byteSize(e.Shape, size)
		if !ok {
			return nil, fail("tensor %q: shape %v has a negative dimension or overflows", name, e.Shape)
		}
		if end-begin != want {
			return nil, fail("tensor %q: data offsets [%d, %d) do not match shape %v × %s = %d bytes", name, begin, end, e.Shape, e.DType, want)
		}
		sf.infos[name] = Info{Name: name, DType: e.DType, Shape: e.Shape, Begin: begin, End: end}
	}
	if err := sf.checkTiling(dataLen); err != nil {
		return nil, err
	}
	return sf, nil
}

// headerEntries splits the header's JSON object into its entries. Unlike
// json.Unmarshal into a map, which keeps the last of two equal keys, a name
// that appears twice is an error: the file would mean two tensors.
func headerEntries(hdr []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(hdr) {
		var v any
		return nil, fmt.Errorf("header is not valid JSON: %v", json.Unmarshal(hdr, &v))
	}
	d := json.NewDecoder(bytes.NewReader(hdr))
	if t, _ := d.Token(); t != json.Delim('{') {
		return nil, fmt.Errorf("header is not a JSON object")
	}
	raw := map[string]json.RawMessage{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("header is not valid JSON: %v", err)
		}
		name := t.(string) // json.Valid: an object's keys are strings
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("header is not valid JSON: %v", err)
		}
		if _, dup := raw[name]; dup {
			return nil, fmt.Errorf("tensor %q appears twice in the header (which one is meant is ambiguous)", name)
		}
		raw[name] = v
	}
	return raw, nil
}

// byteSize returns shape × dtype size, false if a dimension is negative or
// the product overflows an int64.
func byteSize(shape []int, size int) (int64, bool) {
	n := int64(size)
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d == 0 {
			n = 0
			continue
		}
		if n > math.MaxInt64/int64(d) {
			return 0, false
		}
		n *= int64(d)
	}
	return n, true
}

// checkTiling checks that the tensors cover the data section exactly: in
// offset order each starts where the previous one ended, and the last ends
// at the end of the file.
func (f *File) checkTiling(dataLen int64) error {
	byOffset := slices.Clone(f.names)
	slices.SortFunc(byOffset, func(a, b string) int {
		ia, ib := f.infos[a], f.infos[b]
		return cmp.Or(cmp.Compare(ia.Begin, ib.Begin), cmp.Compare(ia.End, ib.End))
	})
	var at int64
	prev := ""
	for _, name := range byOffset {
		in := f.infos[name]
		switch {
		case in.Begin < at:
			return fmt.Errorf("checkpoint %s: tensor %q: data offsets [%d, %d) overlap tensor %q, which ends at %d", f.path, name, in.Begin, in.End, prev, at)
		case in.Begin > at:
			return fmt.Errorf("checkpoint %s: tensor %q: data starts at %d, leaving bytes [%d, %d) that no tensor uses", f.path, name, in.Begin, at, in.Begin)
		}
		at = in.End
		if in.End > in.Begin {
			prev = name
		}
	}
	if at != dataLen {
		return fmt.Errorf("checkpoint %s: the tensors cover %d bytes of data but the file holds %d after the header (trailing garbage?)", f.path, at, dataLen)
	}
	return nil
}

// Path is the file's path as given to OpenSafetensors.
func (f *File) Path() string { return f.path }

// Names lists the tensors in name order.
func (f *File) Names() []string { return slices.Clone(f.names) }

// Info describes the named tensor.
func (f *File) Info(name string) (Info, bool) {
	in, ok := f.infos[name]
	if ok {
		in.Shape = slices.Clone(in.Shape)
	}
	return in, ok
}

// Metadata returns a copy of the "__metadata__" map (empty if absent).
func (f *File) Metadata() map[string]string {
	m := make(map[string]string, len(f.meta))
	for k, v := range f.meta {
		m[k] = v
	}
	return m
}

// Close releases the file.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	return f.closer.Close()
}

// Get reads the named tensor into a new float32 slice.
func (f *File) Get(name string) (Tensor, error) {
	in, ok := f.infos[name]
	if !ok {
		return Tensor{}, f.missing(name)
	}
	t := Tensor{Name: name, Shape: slices.Clone(in.Shape), Data: make([]float32, in.Len())}
	return t, f.ReadInto(name, t.Data)
}

// Load reads the named tensor into dst after checking that its shape is
// the expected one: what a model calls for each of its parameter views. A
// NaN or infinite value is an error naming the tensor (Get and ReadInto
// return values as they are).
func (f *File) Load(name string, shape []int, dst []float32) error {
	if _, err := f.expect(name, shape); err != nil {
		return err
	}
	if err := f.ReadInto(name, dst); err != nil {
		return err
	}
	if i, n := nonFinite(dst); n > 0 {
		return fmt.Errorf("checkpoint %s: tensor %q has %d NaN or infinite values (the first, element %d, is %v): the run that wrote it diverged or the file is corrupt; load an earlier checkpoint", f.path, name, n, i, dst[i])
	}
	return nil
}

// expect returns the named tensor's header after checking that it is there
// with the shape the model expects.
func (f *File) expect(name string, shape []int) (Info, error) {
	in, ok := f.infos[name]
	if !ok {
		return Info{}, f.missing(name)
	}
	if !slices.Equal(in.Shape, shape) {
		return Info{}, fmt.Errorf("checkpoint %s: tensor %q has shape %v, the model expects %v", f.path, name, in.Shape, shape)
	}
	return in, nil
}

// LoadBF16 reads the named BF16 tensor's values as they are stored, the
// bits of each bfloat16, into dst after checking its shape, as Load does
// but without widening them: what a model that holds its frozen weights
// as bf16 reads them into (a float32 copy of them never exists). A tensor
// of another dtype is an error (load it with Load), and so is a NaN or
// infinite value, naming the tensor.
func (f *File) LoadBF16(name string, shape []int, dst []uint16) error {
	in, err := f.expect(name, shape)
	if err != nil {
		return err
	}
	if in.DType != "BF16" {
		return fmt.Errorf("checkpoint %s: tensor %q is %s, not BF16: read it as float32 (Load)", f.path, name, in.DType)
	}
	if len(dst) != in.Len() {
		return fmt.Errorf("checkpoint %s: tensor %q has %d elements (shape %v), the destination %d", f.path, name, in.Len(), in.Shape, len(dst))
	}
	buf := make([]byte, min(readChunk, in.End-in.Begin))
	per := len(buf) / 2
	for i := 0; i < len(dst); i += per {
		k := min(per, len(dst)-i)
		b := buf[:2*k]
		if _, err := f.r.ReadAt(b, f.dataStart+in.Begin+2*int64(i)); err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("unexpected end of file (truncated after opening?)")
			}
			return fmt.Errorf("checkpoint %s: tensor %q: %w", f.path, name, err)
		}
		for j := range k {
			dst[i+j] = binary.LittleEndian.Uint16(b[2*j:])
		}
	}
	first, n := -1, 0
	for i, h := range dst {
		if h&0x7f80 == 0x7f80 { // exponent all ones: ±Inf or NaN
			if n == 0 {
				first = i
			}
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("checkpoint %s: tensor %q has %d NaN or infinite values (the first, element %d, is %v): the run that wrote it diverged or the file is corrupt; load an earlier checkpoint", f.path, name, n, first, bf16ToF32(dst[first]))
	}
	return nil
}

// nonFinite returns the index of the first NaN or ±Inf of x and how many
// there are (0 when every value is finite). A model loaded with one would
// produce NaN logits at the first forward pass, far from the cause.
func nonFinite(x []float32) (first, n int) {
	first = -1
	for i, v := range x {
		if v-v != 0 { // NaN - NaN and Inf - Inf are NaN; finite v - v is 0
			if n == 0 {
				first = i
			}
			n++
		}
	}
	return first, n
}

func (f *File) missing(name string) error {
	return fmt.Errorf("checkpoint %s: no tensor %q (the file has %d tensors)", f.path, name, len(f.names))
}

// readChunk is the number of bytes converted per ReadAt: the only scratch
// memory a read needs.
const readChunk = 1 << 20

// ReadInto reads the named tensor, converted to float32, into dst, which
// must hold exactly its number of elements.
func (f *File) ReadInto(name string, dst []float32) error {
	in, ok := f.infos[name]
	if !ok {
		return f.missing(name)
	}
	if len(dst) != in.Len() {
		return fmt.Errorf("checkpoint %s: tensor %q has %d elements (shape %v), the destination %d", f.path, name, in.Len(), in.Shape, len(dst))
	}
	size := int64(dtypeSize[in.DType])
	if !convertible(in.DType) {
		return fmt.Errorf("checkpoint %s: tensor %q: dtype %s cannot be read as float32 (supported: F32, F16, BF16)", f.path, name, in.DType)
	}
	buf := make([]byte, min(readChunk, in.End-in.Begin))
	per := int64(len(buf)) / size // elements per chunk
	for i := int64(0); i < int64(len(dst)); i += per {
		k := min(per, int64(len(dst))-i)
		b := buf[:k*size]
		if _, err := f.r.ReadAt(b, f.dataStart+in.Begin+i*size); err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("unexpected end of file (truncated after opening?)")
			}
			return fmt.Errorf("checkpoint %s: tensor %q: %w", f.path, name, err)
		}
		decodeInto(dst[i:i+k], b, in.DType)
	}
	return nil
}

// WriteSafetensors writes tensors as F32 to path, atomically, in name
// order, with the given metadata (may be nil). Names must be unique and
// non-empty and each Data must match its Shape.
func WriteSafetensors(path string, tensors []Tensor, metadata map[string]string) error {
	return writeSafetensors(path, tensors, metadata, "F32")
}

// WriteSafetensorsBF16 is WriteSafetensors storing every value as BF16,
// rounded to nearest with ties to even as torch's .to(torch.bfloat16)
// rounds (NaNs stay NaN): half the bytes, the dtype of Hugging Face's
// Qwen2.5 checkpoints. Values that are bf16 already (a frozen base's)
// keep their bits.
func WriteSafetensorsBF16(path string, tensors []Tensor, metadata map[string]string) error {
	return writeSafetensors(path, tensors, metadata, "BF16")
}

// writeSafetensors writes tensors in dtype, F32 or BF16.
func writeSafetensors(path string, tensors []Tensor, metadata map[string]string, dtype string) error {
	hdr, order, err := encodeHeader(tensors, metadata, dtype)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(hdr)))
		w.Write(n[:])
		w.Write(hdr)
		buf := make([]byte, 0, 1<<16)
		for _, t := range order {
			for i, v := range t.Data {
				if dtype == "BF16" {
					buf = binary.LittleEndian.AppendUint16(buf, uint16(math.Float32bits(backend.RoundBF16(v))>>16))
				} else {
					buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
				}
				if len(buf) >= cap(buf)-4 || i == len(t.Data)-1 {
					if _, err := w.Write(buf); err != nil {
						return err
					}
					buf = buf[:0]
				}
			}
		}
		return nil
	})
}

// encodeHeader validates the tensors and returns the JSON header, padded
// with spaces to a multiple of 8 bytes so that the data is aligned, and the
// tensors in name order.
func encodeHeader(tensors []Tensor, metadata map[string]string, dtype string) ([]byte, []Tensor, error) {
	order := slices.Clone(tensors)
	slices.SortFunc(order, func(a, b Tensor) int { return strings.Compare(a.Name, b.Name) })
	var h bytes.Buffer
	h.WriteByte('{')
	if len(metadata) > 0 {
		m, err := json.Marshal(metadata) // keys sorted
		if err != nil {
			return nil, nil, err
		}
		h.WriteString(`"__metadata__":`)
		h.Write(m)
	}
	var off int64
	for i, t := range order {
		switch {
		case t.Name == "" || t.Name == "__metadata__":
			return nil, nil, fmt.Errorf("tensor name %q is not allowed", t.Name)
		case i > 0 && order[i-1].Name == t.Name:
			return nil, nil, fmt.Errorf("tensor %q appears twice", t.Name)
		}
		n, ok := byteSize(t.Shape, dtypeSize[dtype])
		if !ok || n != int64(dtypeSize[dtype]*len(t.Data)) {
			return nil, nil, fmt.Errorf("tensor %q: shape %v does not match its %d values", t.Name, t.Shape, len(t.Data))
		}
		if h.Len() > 1 {
			h.WriteByte(',')
		}
		name, _ := json.Marshal(t.Name)
		h.Write(name)
		h.WriteString(`:{"dtype":"` + dtype + `","shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.Itoa(d))
		}
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, off, off+n)
		off += n
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	return h.Bytes(), order, nil
}
