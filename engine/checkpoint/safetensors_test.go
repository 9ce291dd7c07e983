package checkpoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func sampleTensors() []Tensor {
	w := make([]float32, 4*8)
	for i := range w {
		w[i] = float32(i)*0.25 - 3
	}
	return []Tensor{
		{Name: "lm_head.weight", Shape: []int{4, 8}, Data: w},
		{Name: "layers.0.norm.weight", Shape: []int{3}, Data: []float32{float32(math.Inf(-1)), float32(math.Copysign(0, -1)), math.Float32frombits(0x7fc00123)}},
		{Name: "scale", Shape: []int{}, Data: []float32{0.5}},
		{Name: "empty", Shape: []int{0, 3}, Data: nil},
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	in := sampleTensors()
	meta := map[string]string{"format": "pt", "step": "12"}
	if err := WriteSafetensors(path, in, meta); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	n := binary.LittleEndian.Uint64(raw)
	if (8+n)%8 != 0 {
		t.Errorf("data starts at %d, not 8-aligned", 8+n)
	}
	out, gotMeta, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(in)
	slices.SortFunc(want, func(a, b Tensor) int { return strings.Compare(a.Name, b.Name) })
	if len(out) != len(want) {
		t.Fatalf("read %d tensors, wrote %d", len(out), len(want))
	}
	for i := range want {
		if out[i].Name != want[i].Name || !slices.Equal(out[i].Shape, want[i].Shape) || !sameBits(out[i].Data, want[i].Data) {
			t.Errorf("tensor %d: got %+v, want %+v", i, out[i], want[i])
		}
	}
	if gotMeta["format"] != "pt" || gotMeta["step"] != "12" || len(gotMeta) != 2 {
		t.Errorf("metadata %v", gotMeta)
	}
	// Offsets follow name order, as HF writes them.
	f, _ := OpenSafetensors(path)
	defer f.Close()
	var prev int64
	for _, name := range f.Names() {
		in, _ := f.Info(name)
		if in.Begin != prev {
			t.Errorf("%s begins at %d, want %d (name order)", name, in.Begin, prev)
		}
		prev = in.End
	}
}

func TestReadIntoLarge(t *testing.T) {
	// More than one read chunk, a length that does not divide it.
	data := make([]float32, readChunk/4*2+12345)
	for i := range data {
		data[i] = float32(i)
	}
	path := filepath.Join(t.TempDir(), "big.safetensors")
	if err := WriteSafetensors(path, []Tensor{{Name: "x", Shape: []int{len(data)}, Data: data}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]float32, len(data))
	if err := f.ReadInto("x", got); err != nil {
		t.Fatal(err)
	}
	if !sameBits(got, data) {
		t.Error("large tensor differs after a round trip")
	}
}

func TestLoadChecksShape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	WriteSafetensors(path, sampleTensors(), nil)
	f, err := OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dst := make([]float32, 32)
	if err := f.Load("lm_head.weight", []int{4, 8}, dst); err != nil || dst[1] != -2.75 {
		t.Fatalf("Load: %v, dst[1] = %v", err, dst[1])
	}
	for _, c := range []struct {
		name  string
		shape []int
		dst   []float32
		want  string
	}{
		{"lm_head.weight", []int{8, 4}, dst, `tensor "lm_head.weight" has shape [4 8], the model expects [8 4]`},
		{"lm_head.bias", []int{4}, dst, `no tensor "lm_head.bias" (the file has 4 tensors)`},
		{"lm_head.weight", []int{4, 8}, dst[:31], `tensor "lm_head.weight" has 32 elements (shape [4 8]), the destination 31`},
	} {
		err := f.Load(c.name, c.shape, c.dst)
		if err == nil || err.Error() != "checkpoint "+path+": "+c.want {
			t.Errorf("Load(%s, %v): %v, want %q", c.name, c.shape, err, c.want)
		}
	}
}

// TestLoadRejectsNonFinite: a NaN or infinite weight is an error naming the
// tensor at load, in every dtype; Get still returns the values as they are.
func TestLoadRejectsNonFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	for _, c := range []struct {
		name, dtype string
		data        []byte
		want        string
	}{
		{"F32 NaN", "F32", binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, math.Float32bits(1)), math.Float32bits(nan)),
			`tensor "w" has 1 NaN or infinite values (the first, element 1, is NaN)`},
		{"F32 -Inf", "F32", binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, math.Float32bits(inf)), math.Float32bits(inf)),
			`tensor "w" has 2 NaN or infinite values (the first, element 0, is -Inf)`},
		{"BF16 +Inf", "BF16", []byte{0x80, 0x3f, 0x80, 0x7f}, `tensor "w" has 1 NaN or infinite values (the first, element 1, is +Inf)`},
		{"F16 NaN", "F16", []byte{0x01, 0x7c, 0x00, 0x3c}, `tensor "w" has 1 NaN or infinite values (the first, element 0, is NaN)`},
	} {
		path := filepath.Join(t.TempDir(), "m.safetensors")
		hdr := fmt.Sprintf(`{"w":{"dtype":%q,"shape":[2],"data_offsets":[0,%d]}}`, c.dtype, len(c.data))
		if err := os.WriteFile(path, build(hdr, c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := OpenSafetensors(path)
		if err != nil {
			t.Fatal(err)
		}
		err = f.Load("w", []int{2}, make([]float32, 2))
		if err == nil || !strings.HasPrefix(err.Error(), "checkpoint "+path+": "+c.want) {
			t.Errorf("%s: Load: %v\nwant: checkpoint %s: %s...", c.name, err, path, c.want)
		}
		if _, err := f.Get("w"); err != nil {
			t.Errorf("%s: Get: %v", c.name, err)
		}
		f.Close()
	}
}

func TestWriteRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.safetensors")
	for _, c := range []struct {
		ts   []Tensor
		want string
	}{
		{[]Tensor{{Name: "a", Shape: []int{2}, Data: []float32{1}}}, `tensor "a": shape [2] does not match its 1 values`},
		{[]Tensor{{Name: "a", Shape: []int{-1}, Data: nil}}, `tensor "a": shape [-1] does not match its 0 values`},
		{[]Tensor{{Name: "a", Shape: []int{1}, Data: []float32{1}}, {Name: "a", Shape: []int{1}, Data: []float32{2}}}, `tensor "a" appears twice`},
		{[]Tensor{{Name: "__metadata__", Shape: []int{1}, Data: []float32{1}}}, `tensor name "__metadata__" is not allowed`},
	} {
		err := WriteSafetensors(path, c.ts, nil)
		if err == nil || err.Error() != "checkpoint "+path+": "+c.want {
			t.Errorf("write %v: %v, want %q", c.ts, err, c.want)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a rejected write left a file")
	}
}

// build makes a safetensors image from a header and data.
func build(header string, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func parseBytes(name string, b []byte) (*File, error) {
	return parse(name, bytes.NewReader(b), int64(len(b)))
}

// TestCorrupt: each kind of bad file gives its own clear error.
func TestCorrupt(t *testing.T) {
	d128 := make([]byte, 128)
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "file is 0 bytes, too short for the 8-byte header length (not a safetensors file, or truncated)"},
		{"header beyond file", build(`{}`, nil)[:9], "header length 2 exceeds the 1 bytes after it (file truncated?)"},
		{"huge header", append(binary.LittleEndian.AppendUint64(nil, 1<<40), "{}"...), "header length 1099511627776 exceeds the 100000000-byte limit (not a safetensors file?)"},
		{"not json", build(`{"a":`, nil), "header is not valid JSON: unexpected end of JSON input"},
		{"not an object", build(`[1,2]`, nil), "header does not start with '{' (not a safetensors file?)"},
		{"duplicate tensor", build(`{"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]},"a":{"dtype":"F32","shape":[8],"data_offsets":[32,64]}}`, d128[:64]),
			`tensor "a" appears twice in the header (which one is meant is ambiguous)`},
		{"duplicate tensor, escaped", build(`{"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]},"\u0061":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}}`, d128[:32]),
			`tensor "a" appears twice in the header (which one is meant is ambiguous)`},
		{"shape mismatch", build(`{"lm_head.weight":{"dtype":"F32","shape":[4,8],"data_offsets":[0,100]}}`, d128[:100]),
			`tensor "lm_head.weight": data offsets [0, 100) do not match shape [4 8] × F32 = 128 bytes`},
		{"out of range", build(`{"a":{"dtype":"F32","shape":[4,8],"data_offsets":[0,128]}}`, d128[:64]),
			`tensor "a": data offsets [0, 128) exceed the 64 bytes of data (file truncated?)`},
		{"reversed", build(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}}`, d128[:8]),
			`tensor "a": data offsets [8, 4) are not a valid range`},
		{"overlap", build(`{"a":{"dtype":"F32","shape":[16],"data_offsets":[0,64]},"b":{"dtype":"F32","shape":[16],"data_offsets":[32,96]}}`, d128[:96]),
			`tensor "b": data offsets [32, 96) overlap tensor "a", which ends at 64`},
		{"gap", build(`{"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]},"b":{"dtype":"F32","shape":[8],"data_offsets":[64,96]}}`, d128[:96]),
			`tensor "b": data starts at 64, leaving bytes [32, 64) that no tensor uses`},
		{"trailing", build(`{"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}}`, d128[:40]),
			"the tensors cover 32 bytes of data but the file holds 40 after the header (trailing garbage?)"},
		{"unknown dtype", build(`{"a":{"dtype":"F12","shape":[8],"data_offsets":[0,32]}}`, d128[:32]), `tensor "a": unknown dtype "F12"`},
		{"negative dim", build(`{"a":{"dtype":"F32","shape":[-8],"data_offsets":[0,32]}}`, d128[:32]), `tensor "a": shape [-8] has a negative dimension or overflows`},
		{"overflow", build(`{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}}`, nil), `tensor "a": shape [4611686018427387904 4] has a negative dimension or overflows`},
		{"no shape", build(`{"a":{"dtype":"F32","data_offsets":[0,32]}}`, d128[:32]), `tensor "a": missing shape`},
		{"bad offsets", build(`{"a":{"dtype":"F32","shape":[8],"data_offsets":[0]}}`, d128[:32]), `tensor "a": data_offsets must be [begin, end] (got [0])`},
		{"extra field", build(`{"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32],"x":1}}`, d128[:32]), `tensor "a": bad header entry: json: unknown field "x"`},
		{"entry not object", build(`{"a":7}`, nil), `tensor "a": bad header entry: json: cannot unmarshal number into Go value of type checkpoint.entry`},
		{"bad metadata", build(`{"__metadata__":{"k":1}}`, nil), "__metadata__ must map strings to strings: json: cannot unmarshal number into Go value of type string"},
	} {
		_, err := parseBytes("model.safetensors", c.file)
		if err == nil || err.Error() != "checkpoint model.safetensors: "+c.want {
			t.Errorf("%s:\n got: %v\nwant: checkpoint model.safetensors: %s", c.name, err, c.want)
		}
	}
}

// TestTruncated cuts a valid file at every length: opening or reading must
// fail with an error naming the file, never panic or succeed.
func TestTruncated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	if err := WriteSafetensors(path, sampleTensors(), map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(path)
	for n := 0; n < len(full); n++ {
		_, err := parseBytes("model.safetensors", full[:n])
		if err == nil {
			t.Fatalf("cut at %d of %d bytes: opened without error", n, len(full))
		}
		if !strings.HasPrefix(err.Error(), "checkpoint model.safetensors: ") || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("cut at %d (data from %d): error does not name the file or say truncated: %v", n, 8+binary.LittleEndian.Uint64(full), err)
		}
	}
	cut := filepath.Join(dir, "cut.safetensors")
	os.WriteFile(cut, full[:len(full)/2], 0o644)
	if _, err := OpenSafetensors(cut); err == nil || !strings.HasPrefix(err.Error(), "checkpoint "+cut+": ") {
		t.Errorf("truncated file on disk: %v", err)
	}
	// A file truncated after it was opened: ReadInto reports it.
	f, err := OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.Truncate(path, int64(len(full)-4))
	err = f.ReadInto("scale", make([]float32, 1)) // the last tensor

	if err == nil || !strings.Contains(err.Error(), "truncated after opening") {
		t.Errorf("read after truncation: %v", err)
	}
}

// TestPythonWrittenFile reads bytes laid out exactly as Python's
// safetensors.torch.save_file writes them: compact JSON, "__metadata__"
// first, tensors ordered by dtype (F32, BF16, F16 — larger alignment
// first) then name, the header padded with spaces to 8 bytes.
func TestPythonWrittenFile(t *testing.T) {
	header := `{"__metadata__":{"format":"pt"},` +
		`"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"a":{"dtype":"BF16","shape":[1,3],"data_offsets":[8,14]},` +
		`"b":{"dtype":"F16","shape":[2],"data_offsets":[14,18]}}`
	for len(header)%8 != 0 {
		header += " "
	}
	data := []byte{
		0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc1, // w: 1.0, -10.0
		0x80, 0x3f, 0xf7, 0xc2, 0x80, 0x7f, // a: 1.0, -123.5, +Inf (bf16)
		0x00, 0x3c, 0x01, 0x00, // b: 1.0, 2⁻²⁴ (f16)
	}
	file := build(header, data)
	path := filepath.Join(t.TempDir(), "py.safetensors")
	os.WriteFile(path, file, 0o644)
	ts, meta, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta["format"] != "pt" {
		t.Errorf("metadata %v", meta)
	}
	want := []Tensor{
		{Name: "a", Shape: []int{1, 3}, Data: []float32{1, -123.5, float32(math.Inf(1))}},
		{Name: "b", Shape: []int{2}, Data: []float32{1, 0x1p-24}},
		{Name: "w", Shape: []int{2}, Data: []float32{1, -10}},
	}
	for i := range want {
		if ts[i].Name != want[i].Name || !slices.Equal(ts[i].Shape, want[i].Shape) || !sameBits(ts[i].Data, want[i].Data) {
			t.Errorf("tensor %d: got %+v, want %+v", i, ts[i], want[i])
		}
	}
}

func TestUnconvertibleDType(t *testing.T) {
	f, err := parseBytes("x.safetensors", build(`{"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}}`, make([]byte, 16)))
	if err != nil {
		t.Fatal(err)
	}
	err = f.ReadInto("ids", make([]float32, 2))
	if err == nil || err.Error() != `checkpoint x.safetensors: tensor "ids": dtype I64 cannot be read as float32 (supported: F32, F16, BF16)` {
		t.Errorf("I64: %v", err)
	}
}

func TestHalfConversions(t *testing.T) {
	nan := func(v float32) bool { return v != v }
	for _, c := range []struct {
		bits uint16
		want float32
	}{
		{0x0000, 0}, {0x8000, float32(math.Copysign(0, -1))},
		{0x3c00, 1}, {0xc000, -2}, {0x3555, 0.333251953125},
		{0x7bff, 65504},                 // largest finite
		{0x0400, 0x1p-14},               // smallest normal
		{0x0001, 0x1p-24},               // smallest subnormal
		{0x03ff, 0x3ffp-24},             // largest subnormal
		{0x8001, -0x1p-24},              // negative subnormal
		{0x7c00, float32(math.Inf(1))},  // +Inf
		{0xfc00, float32(math.Inf(-1))}, // -Inf
	} {
		if got := f16ToF32(c.bits); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("f16 %#04x = %v, want %v", c.bits, got, c.want)
		}
	}
	if v := f16ToF32(0x7e00); !nan(v) || math.Float32bits(v) != 0x7fc00000 {
		t.Errorf("f16 NaN 0x7e00 = %#x", math.Float32bits(v))
	}
	// Every half against the definition (-1)^s · 2^(e-15) · (1 + m/1024),
	// subnormals 2^-14 · m/1024.
	for h := 0; h < 1<<16; h++ {
		s, e, m := h>>15, (h>>10)&0x1f, h&0x3ff
		var want float64
		switch {
		case e == 0x1f && m != 0:
			if !nan(f16ToF32(uint16(h))) {
				t.Fatalf("f16 %#04x should be NaN", h)
			}
			continue
		case e == 0x1f:
			want = math.Inf(1)
		case e == 0:
			want = math.Ldexp(float64(m), -24)
		default:
			want = math.Ldexp(1+float64(m)/1024, e-15)
		}
		if s == 1 {
			want = -want
		}
		if got := f16ToF32(uint16(h)); math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Fatalf("f16 %#04x = %v, want %v", h, got, want)
		}
	}
	for _, c := range []struct {
		bits uint16
		want float32
	}{
		{0x3f80, 1}, {0xc2f7, -123.5}, {0x0000, 0}, {0x8000, float32(math.Copysign(0, -1))},
		{0x0001, 0x1p-133},   // smallest subnormal
		{0x7f7f, 0x1.fep127}, // largest finite
		{0x7f80, float32(math.Inf(1))}, {0xff80, float32(math.Inf(-1))},
	} {
		if got := bf16ToF32(c.bits); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("bf16 %#04x = %v, want %v", c.bits, got, c.want)
		}
	}
	if v := bf16ToF32(0x7fc0); !nan(v) {
		t.Errorf("bf16 NaN = %v", v)
	}
}

// FuzzReadSafetensors: arbitrary bytes never panic; whatever parses reads
// every tensor and reads it consistently.
func FuzzReadSafetensors(f *testing.F) {
	f.Add(build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(build(`{"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[1,2],"data_offsets":[0,4]},"c":{"dtype":"F16","shape":[],"data_offsets":[4,6]}}`, []byte{1, 2, 3, 4, 5, 6}))
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := parseBytes("fuzz.safetensors", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "checkpoint fuzz.safetensors: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, name := range sf.Names() {
			in, _ := sf.Info(name)
			if in.Len() > 1<<20 {
				continue
			}
			err := sf.ReadInto(name, make([]float32, in.Len()))
			if convertible(in.DType) != (err == nil) {
				t.Fatalf("tensor %q (%s) parsed, then read gave %v", name, in.DType, err)
			}
		}
	})
}

// TestBF16RoundTrip: WriteSafetensorsBF16 rounds to nearest even (ties
// to even, the way torch's .to(torch.bfloat16) does), Load widens what it
// wrote and LoadBF16 returns the very bits; more than one read chunk.
func TestBF16RoundTrip(t *testing.T) {
	x := make([]float32, readChunk/2+37)
	for i := range x {
		x[i] = float32(math.Sin(float64(i))) * 3
	}
	copy(x, []float32{1, -123.5, 1 + 1.0/256, 1 + 3.0/256, 1 + 1.0/512})
	path := filepath.Join(t.TempDir(), "w.safetensors")
	if err := WriteSafetensorsBF16(path, []Tensor{{Name: "w", Shape: []int{len(x)}, Data: x}, {Name: "b", Shape: []int{1}, Data: []float32{2}}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if in, _ := f.Info("w"); in.DType != "BF16" || in.End-in.Begin != int64(2*len(x)) {
		t.Fatalf("info %+v", in)
	}
	wide := make([]float32, len(x))
	bits := make([]uint16, len(x))
	if err := f.Load("w", []int{len(x)}, wide); err != nil {
		t.Fatal(err)
	}
	if err := f.LoadBF16("w", []int{len(x)}, bits); err != nil {
		t.Fatal(err)
	}
	// 1+1/256 is a tie between 1 and 1+1/128 (even: 1); 1+3/256 between
	// 1+2/256 and 1+4/256 (even: 1+4/256); 1+1/512 rounds down.
	want := []float32{1, -123.5, 1, 1 + 4.0/256, 1}
	for i, w := range want {
		if wide[i] != w {
			t.Errorf("value %d: %v written as bf16 reads %v, want %v", i, x[i], wide[i], w)
		}
	}
	for i, v := range wide {
		if uint32(bits[i])<<16 != math.Float32bits(v) {
			t.Fatalf("value %d: LoadBF16 %#04x, Load %v", i, bits[i], v)
		}
		if d := math.Abs(float64(v - x[i])); d > math.Abs(float64(x[i]))/256 {
			t.Fatalf("value %d: %v rounded to %v", i, x[i], v)
		}
	}
}

// TestLoadBF16Rejects: LoadBF16 reads only BF16 tensors of the expected
// shape, without NaN or infinite values, and says what to do instead.
func TestLoadBF16Rejects(t *testing.T) {
	dir := t.TempDir()
	f32 := filepath.Join(dir, "f32.safetensors")
	if err := WriteSafetensors(f32, []Tensor{{Name: "w", Shape: []int{2}, Data: []float32{1, 2}}}, nil); err != nil {
		t.Fatal(err)
	}
	inf := filepath.Join(dir, "inf.safetensors")
	if err := WriteSafetensorsBF16(inf, []Tensor{{Name: "w", Shape: []int{2}, Data: []float32{1, float32(math.Inf(-1))}}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		shape []int
		want  string
	}{
		{f32, []int{2}, `tensor "w" is F32, not BF16: read it as float32 (Load)`},
		{inf, []int{2}, `tensor "w" has 1 NaN or infinite values (the first, element 1, is -Inf)`},
		{inf, []int{1, 2}, `tensor "w" has shape [2], the model expects [1 2]`},
	} {
		f, err := OpenSafetensors(c.path)
		if err != nil {
			t.Fatal(err)
		}
		err = f.LoadBF16("w", c.shape, make([]uint16, 2))
		f.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", filepath.Base(c.path), err, c.want)
		}
	}
}
