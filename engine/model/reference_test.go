package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
)

// safetensors is a minimal reader of the safetensors format for the test
// data: an 8-byte little-endian header length, a JSON header mapping names
// to dtype/shape/byte offsets, then the raw data.
type safetensors struct {
	meta   map[string]string
	f32    map[string][]float32
	i32    map[string][]int
	shapes map[string][]int
}

func readSafetensors(path string) (*safetensors, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 8 {
		return nil, fmt.Errorf("%s: too short for a safetensors header", path)
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("%s: header length %d beyond the file", path, n)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	data := b[8+n:]
	st := &safetensors{f32: map[string][]float32{}, i32: map[string][]int{}, shapes: map[string][]int{}}
	for name, raw := range hdr {
		if name == "__metadata__" {
			if err := json.Unmarshal(raw, &st.meta); err != nil {
				return nil, fmt.Errorf("%s: metadata: %w", path, err)
			}
			continue
		}
		var e struct {
			Dtype   string `json:"dtype"`
			Shape   []int  `json:"shape"`
			Offsets [2]int `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		if e.Offsets[0] < 0 || e.Offsets[1] > len(data) || e.Offsets[0] > e.Offsets[1] || (e.Offsets[1]-e.Offsets[0])%4 != 0 {
			return nil, fmt.Errorf("%s: tensor %s: bad offsets %v", path, name, e.Offsets)
		}
		raw := data[e.Offsets[0]:e.Offsets[1]]
		st.shapes[name] = e.Shape
		switch e.Dtype {
		case "F32":
			x := make([]float32, len(raw)/4)
			for i := range x {
				x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			st.f32[name] = x
		case "I32":
			x := make([]int, len(raw)/4)
			for i := range x {
				x[i] = int(int32(binary.LittleEndian.Uint32(raw[4*i:])))
			}
			st.i32[name] = x
		default:
			return nil, fmt.Errorf("%s: tensor %s: dtype %s not supported", path, name, e.Dtype)
		}
	}
	return st, nil
}

// relErr is the error of got against want relative to want's largest
// magnitude, max_i |got_i − want_i| / max_i |want_i|, and the worst index.
func relErr(got, want []float32) (float64, int) {
	var scale, worst float64
	at := 0
	for i := range want {
		scale = math.Max(scale, math.Abs(float64(want[i])))
	}
	if scale == 0 {
		scale = 1
	}
	for i := range want {
		if e := math.Abs(float64(got[i]) - float64(want[i])); e > worst || math.IsNaN(e) {
			worst, at = e, i
		}
	}
	return worst / scale, at
}

// TestMatchesPyTorch compares one forward and backward with the PyTorch
// reference in testdata (see gen_reference.py): logits and loss to 1e-4,
// each parameter gradient to 1e-3, in error relative to the tensor's
// largest magnitude.
func TestMatchesPyTorch(t *testing.T) {
	ref, err := readSafetensors("testdata/reference.safetensors")
	if err != nil {
		t.Fatalf("%v (regenerate with: cd engine/model/testdata && /usr/bin/python3 gen_reference.py)", err)
	}
	var c Config
	if err := json.Unmarshal([]byte(ref.meta["config"]), &c); err != nil {
		t.Fatalf("config: %v", err)
	}
	m, err := New(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range m.Layout.Views {
		w, ok := ref.f32["param."+v.Name]
		if !ok || len(w) != v.Size {
			t.Fatalf("reference has no parameter %s of %d floats", v.Name, v.Size)
		}
		copy(m.Params.Slice(v.Name), w)
	}
	tokens, lens := ref.i32["tokens"], ref.i32["lens"]
	out, err := m.Forward(tokens, lens, Want{Logits: true, Value: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b, cv, ret := ref.f32["coef.logprob"], ref.f32["coef.entropy"], ref.f32["coef.value"], ref.f32["returns"]
	var loss float64
	dv := make([]float32, len(tokens))
	for i := range tokens {
		loss += float64(a[i]*out.LogProb[i]) + float64(b[i]*out.Entropy[i])
		e := out.Value[i] - ret[i]
		loss += 0.5 * float64(cv[i]*e*e)
		dv[i] = cv[i] * e
	}

	type cmp struct {
		name      string
		got, want []float32
		tol       float64
	}
	cmps := []cmp{
		{"logits", append([]float32(nil), out.Logits...), ref.f32["logits"], 1e-4},
		{"logprob", out.LogProb, ref.f32["logprob"], 1e-4},
		{"entropy", out.Entropy, ref.f32["entropy"], 1e-4},
		{"value", out.Value, ref.f32["value"], 1e-4},
		{"loss", []float32{float32(loss)}, ref.f32["loss"], 1e-4},
	}
	m.ZeroGrad()
	if err := m.Backward(Grad{LogProb: a, Entropy: b, Value: dv}); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(m.Layout.Views))
	for _, v := range m.Layout.Views {
		names = append(names, v.Name)
	}
	sort.Strings(names)
	for _, n := range names {
		cmps = append(cmps, cmp{"grad " + n, m.Grads.Slice(n), ref.f32["grad."+n], 1e-3})
	}
	for _, c := range cmps {
		if len(c.got) != len(c.want) {
			t.Errorf("%s: %d values, reference has %d", c.name, len(c.got), len(c.want))
			continue
		}
		e, at := relErr(c.got, c.want)
		t.Logf("%-58s max rel err %.2e", c.name, e)
		if !(e <= c.tol) {
			t.Errorf("%s: max rel err %.2e > %.0e; worst element %d: got %g, want %g", c.name, e, c.tol, at, c.got[at], c.want[at])
		}
	}
	if strings.TrimSpace(ref.meta["torch"]) == "" {
		t.Error("reference metadata lacks the torch version")
	}
}
