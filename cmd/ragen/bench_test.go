package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		x    []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.x); got != tc.want {
			t.Errorf("median(%v) = %g, want %g", tc.x, got, tc.want)
		}
	}
}

// TestBenchBadFlags: bad flags are errors naming the flag, before any
// benchmark runs.
func TestBenchBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rounds", "-1"}, "-rounds"},
		{[]string{"-presets", "small,huge"}, `-presets: unknown preset "huge"`},
	} {
		err := runBench(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench %v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestBenchConfig: the presets get the benchmark's vocabulary and a value
// head, as in the PyTorch peer.
func TestBenchConfig(t *testing.T) {
	c, err := benchConfig("small")
	if err != nil {
		t.Fatal(err)
	}
	if c.VocabSize != benchVocab || !c.ValueHead {
		t.Fatalf("bench config: vocab %d, value head %v", c.VocabSize, c.ValueHead)
	}
}

// TestBenchParseOpenBLASCore reads the core from OPENBLAS_VERBOSE=2 output as
// OpenBLAS 0.3.21 prints it (dynamic.c), mixed with the program's own.
func TestBenchParseOpenBLASCore(t *testing.T) {
	for _, tc := range []struct {
		out, core string
		fellBack  bool
	}{
		{"Core: Prescott\n1 1 1 0.01\n", "Prescott", false},
		{"1024 1024 1024 137.19\nCore: SkylakeX\n", "SkylakeX", false},
		{"Falling back to Prescott core\nCore: Prescott\n", "Prescott", true},
		{"OpenBLAS : Your OS does not support AVX512VL instructions. OpenBLAS is using Haswell kernels as a fallback, which may give poorer performance.\nCore: Haswell\n", "Haswell", true},
		{"Core not found: Bogus\nCore: Cooperlake\n", "Cooperlake", false}, // a forced name it does not know
		{"  Core: Zen \r\n", "Zen", false},
		{"", "", false},
		{"Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'\n", "", false},
	} {
		core, fellBack := parseOpenBLASCore(tc.out)
		if core != tc.core || fellBack != tc.fellBack {
			t.Errorf("parseOpenBLASCore(%q) = %q, %v; want %q, %v", tc.out, core, fellBack, tc.core, tc.fellBack)
		}
	}
}

// TestBenchChooseCoreType: the best core the features allow, and the override
// only when OpenBLAS picked a narrower one, never over the user's.
func TestBenchChooseCoreType(t *testing.T) {
	avx512 := cpuFeatures{avx: true, avx2: true, fma: true, avx512f: true, avx512bw: true, avx512vl: true, avx512dq: true}
	knl := avx512 // Knights Landing: AVX-512F without BW/VL/DQ
	knl.avx512bw, knl.avx512vl, knl.avx512dq = false, false, false
	for _, tc := range []struct {
		f    cpuFeatures
		best string
	}{
		{avx512, "SkylakeX"}, {knl, "Haswell"}, {cpuFeatures{avx: true, avx2: true, fma: true}, "Haswell"},
		{cpuFeatures{avx: true, avx2: true}, "Sandybridge"}, {cpuFeatures{avx: true}, "Sandybridge"}, {cpuFeatures{}, ""},
	} {
		if got := bestCoreType(tc.f); got != tc.best {
			t.Errorf("bestCoreType(%+v) = %q, want %q", tc.f, got, tc.best)
		}
	}
	for _, tc := range []struct {
		user, detected string
		fellBack       bool
		best, want     string
	}{
		{"", "Prescott", false, "SkylakeX", "SkylakeX"},         // the mis-detected Xeon
		{"", "Prescott", true, "SkylakeX", "SkylakeX"},          // said so
		{"", "Haswell", false, "SkylakeX", "SkylakeX"},          // AVX2 kernels on an AVX-512 CPU
		{"", "Sandybridge", false, "Haswell", "Haswell"},        //
		{"", "SkylakeX", false, "SkylakeX", ""},                 // right already
		{"", "Cooperlake", false, "SkylakeX", ""},               // newer than our pick: keep it
		{"", "Zen", false, "Haswell", ""},                       // AMD's AVX2 core: as good
		{"", "Haswell", true, "Haswell", ""},                    // fell back to what we would pick
		{"", "Prescott", false, "", ""},                         // an SSE-only CPU
		{"", "Neoverse", false, "SkylakeX", ""},                 // a name we do not know
		{"", "", false, "SkylakeX", ""},                         // not detected
		{"Haswell", "SkylakeX", false, "SkylakeX", "Haswell"},   // the user's, even if worse
		{"SkylakeX", "Prescott", false, "SkylakeX", "SkylakeX"}, //
	} {
		if got := chooseCoreType(tc.user, tc.detected, tc.fellBack, tc.best); got != tc.want {
			t.Errorf("chooseCoreType(user %q, detected %q, fell back %v, best %q) = %q, want %q", tc.user, tc.detected, tc.fellBack, tc.best, got, tc.want)
		}
	}
}

// TestBenchBLASTuningString: the line says what OpenBLAS chose, on what CPU,
// and what the peers run with; env sets only the bench's own choice.
func TestBenchBLASTuningString(t *testing.T) {
	for _, tc := range []struct {
		t         blasTuning
		want, env string
	}{
		{blasTuning{detected: "Prescott", best: "SkylakeX", coreType: "SkylakeX", torch: 1, blas: 2},
			"OpenBLAS: detected Prescott on a CPU with AVX-512; peers run with OPENBLAS_CORETYPE=SkylakeX, torch 1 thread(s) + OpenBLAS 2 thread(s)", "OPENBLAS_CORETYPE=SkylakeX"},
		{blasTuning{detected: "Prescott", fellBack: true, best: "Haswell", coreType: "Haswell", torch: 2, blas: 1},
			"OpenBLAS: fell back to Prescott on a CPU with AVX2; peers run with OPENBLAS_CORETYPE=Haswell, torch 2 thread(s) + OpenBLAS 1 thread(s)", "OPENBLAS_CORETYPE=Haswell"},
		{blasTuning{detected: "SkylakeX", best: "SkylakeX", torch: 1, blas: 2},
			"OpenBLAS: detected SkylakeX on a CPU with AVX-512; peers run with OpenBLAS's own choice", ""},
		{blasTuning{detected: "SkylakeX", best: "SkylakeX", coreType: "Haswell", byUser: true, torch: 1, blas: 2},
			"OpenBLAS: detected SkylakeX on a CPU with AVX-512; peers run with your OPENBLAS_CORETYPE=Haswell (narrower than the SkylakeX OpenBLAS uses here on its own: unset it for a tuned peer), torch 1", ""},
		{blasTuning{detected: "Cooperlake", best: "SkylakeX", coreType: "SkylakeX", byUser: true, torch: 1, blas: 2},
			"OpenBLAS: detected Cooperlake on a CPU with AVX-512; peers run with your OPENBLAS_CORETYPE=SkylakeX, torch 1", ""},
		{blasTuning{detected: "Prescott", fellBack: true, best: "SkylakeX", coreType: "Haswell", byUser: true, torch: 1, blas: 2},
			"OpenBLAS: fell back to Prescott on a CPU with AVX-512; peers run with your OPENBLAS_CORETYPE=Haswell (narrower than the SkylakeX this CPU allows: unset it for a tuned peer)", ""},
		{blasTuning{best: "Haswell", why: "gcc not found", torch: 1, blas: 2},
			"OpenBLAS: core not detected (gcc not found) on a CPU with AVX2; peers run with OpenBLAS's own choice", ""},
	} {
		if got := tc.t.String(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%+v: got %q, want it to start with %q", tc.t, got, tc.want)
		}
		if got := strings.Join(tc.t.env(), " "); got != tc.env {
			t.Errorf("%+v: env %q, want %q", tc.t, got, tc.env)
		}
	}
}

// TestBenchEnvWithout drops exactly the variable named.
func TestBenchEnvWithout(t *testing.T) {
	got := envWithout([]string{"OPENBLAS_CORETYPE=Haswell", "OPENBLAS_CORETYPE_X=1", "PATH=/bin"}, "OPENBLAS_CORETYPE")
	if strings.Join(got, " ") != "OPENBLAS_CORETYPE_X=1 PATH=/bin" {
		t.Errorf("envWithout = %q", got)
	}
}

// TestBenchDetectBLAS: the probe runs with OPENBLAS_VERBOSE=2 and without
// the user's OPENBLAS_CORETYPE (OpenBLAS's own choice is what is asked),
// which still decides what the peers get.
func TestBenchDetectBLAS(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	echo := func(script string) func() *exec.Cmd {
		return func() *exec.Cmd { return exec.Command("sh", "-c", script) }
	}
	t.Setenv("OPENBLAS_CORETYPE", "")
	os.Unsetenv("OPENBLAS_CORETYPE")
	tu := detectBLAS(echo(`echo "Core: Prescott$OPENBLAS_CORETYPE" >&2; echo "verbose $OPENBLAS_VERBOSE"`), "", 1, 2)
	if tu.detected != "Prescott" || tu.byUser || tu.coreType != chooseCoreType("", "Prescott", false, bestCoreType(hostFeatures())) {
		t.Errorf("detectBLAS = %+v", tu)
	}
	t.Setenv("OPENBLAS_CORETYPE", "Haswell")
	tu = detectBLAS(echo(`echo "Core: X${OPENBLAS_CORETYPE}-$OPENBLAS_VERBOSE"`), "", 1, 2)
	if tu.detected != "X-2" || !tu.byUser || tu.coreType != "Haswell" || tu.env() != nil {
		t.Errorf("detectBLAS with the user's OPENBLAS_CORETYPE = %+v", tu)
	}
	tu = detectBLAS(echo(`exit 1`), "", 1, 2)
	if tu.detected != "" || !strings.Contains(tu.String(), "core not detected") {
		t.Errorf("detectBLAS of a silent probe = %+v: %s", tu, tu)
	}
	tu = detectBLAS(nil, "gcc not found", 1, 2)
	if !strings.Contains(tu.String(), "core not detected (gcc not found)") {
		t.Errorf("detectBLAS without a probe: %s", tu)
	}
}
