package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/cpu"
)

// The peers' OpenBLAS, tuned as a user would before comparing.
//
// OpenBLAS built with DYNAMIC_ARCH (Debian's 0.3.21) picks its kernels
// from the CPU's family and model numbers. A model it does not know — a
// newer Xeon, or a VM that reports an odd one — falls back to Prescott,
// SSE3 only: cblas_sgemm ran at 30–41 GF/s on 2 threads of an AVX-512
// Xeon, 226 GF/s with OPENBLAS_CORETYPE=SkylakeX. With OPENBLAS_VERBOSE=2
// the library prints the core it chose ("Core: Prescott") when it loads;
// the bench reads that, compares it with the best core the CPU's features
// allow, and sets OPENBLAS_CORETYPE for both peers when OpenBLAS chose
// worse. A user's own OPENBLAS_CORETYPE is kept as it is.

// blasLevel is the widest instruction set of an OpenBLAS core type:
// 0 SSE, 1 AVX, 2 AVX2 + FMA, 3 AVX-512; -1 for a name we do not know.
func blasLevel(core string) int {
	switch strings.ToLower(core) {
	case "skylakex", "cooperlake", "sapphirerapids":
		return 3
	case "haswell", "zen", "excavator":
		return 2
	case "sandybridge", "bulldozer", "piledriver", "steamroller":
		return 1
	case "katmai", "coppermine", "northwood", "prescott", "banias", "atom", "core2", "penryn", "dunnington",
		"nehalem", "athlon", "opteron", "opteron(sse3)", "barcelona", "nano", "bobcat":
		return 0
	}
	return -1
}

// cpuFeatures are the x86 features that decide the best OpenBLAS core.
type cpuFeatures struct {
	avx, avx2, fma, avx512f, avx512bw, avx512vl, avx512dq bool
}

// hostFeatures are this machine's, as the OS enables them (x/sys/cpu
// checks the OS saves the wide registers, not only the CPUID bits).
func hostFeatures() cpuFeatures {
	x := cpu.X86
	return cpuFeatures{avx: x.HasAVX, avx2: x.HasAVX2, fma: x.HasFMA, avx512f: x.HasAVX512F,
		avx512bw: x.HasAVX512BW, avx512vl: x.HasAVX512VL, avx512dq: x.HasAVX512DQ}
}

// bestCoreType is the OpenBLAS core type with the widest kernels f runs
// ("" where no core beats the SSE ones).
func bestCoreType(f cpuFeatures) string {
	switch {
	case f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq:
		return "SkylakeX"
	case f.avx2 && f.fma:
		return "Haswell"
	case f.avx:
		return "Sandybridge"
	}
	return ""
}

// parseOpenBLASCore reads the core OpenBLAS chose from its output with
// OPENBLAS_VERBOSE=2: the last "Core: NAME" line ("" if none), and whether
// it printed that it fell back ("Falling back to Prescott core", or a
// warning that it "is using ... kernels as a fallback").
func parseOpenBLASCore(out string) (core string, fellBack bool) {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "Core: "); ok {
			core = strings.TrimSpace(name)
		}
		if strings.Contains(line, "Falling back to") || strings.Contains(line, "as a fallback") {
			fellBack = true
		}
	}
	return core, fellBack
}

// blasTuning is the OpenBLAS setting the peers run with.
type blasTuning struct {
	detected string // the core OpenBLAS chose on its own ("" unknown)
	fellBack bool   // OpenBLAS said it fell back
	best     string // the best core the CPU allows ("" none beyond SSE)
	coreType string // OPENBLAS_CORETYPE for the peers ("" unset)
	byUser   bool   // coreType came from the user's environment
	why      string // why nothing was detected
	torch    int    // torch.set_num_threads of the PyTorch peer
	blas     int    // OPENBLAS_NUM_THREADS of the PyTorch peer
}

// chooseCoreType is the OPENBLAS_CORETYPE for the peers: the user's when
// set, else best when OpenBLAS chose a core of a narrower instruction set
// than the CPU has (or said it fell back), else "" (OpenBLAS's own choice
// stands, also when its name is one we do not know).
func chooseCoreType(user, detected string, fellBack bool, best string) string {
	switch {
	case user != "":
		return user
	case best == "" || detected == "":
		return ""
	case fellBack && !strings.EqualFold(detected, best) || blasLevel(detected) >= 0 && blasLevel(detected) < blasLevel(best):
		return best
	}
	return ""
}

// detectBLAS asks OpenBLAS which core it picks by running probe (a
// command that loads OpenBLAS; nil: none available, why says so) with
// OPENBLAS_VERBOSE=2 and no OPENBLAS_CORETYPE, and decides the peers'
// setting.
func detectBLAS(probe func() *exec.Cmd, why string, torchThreads, blasThreads int) blasTuning {
	t := blasTuning{best: bestCoreType(hostFeatures()), torch: torchThreads, blas: blasThreads, why: why}
	user := os.Getenv("OPENBLAS_CORETYPE")
	if probe != nil {
		cmd := probe()
		cmd.Env = append(envWithout(os.Environ(), "OPENBLAS_CORETYPE"), "OPENBLAS_VERBOSE=2")
		out, err := cmd.CombinedOutput()
		t.detected, t.fellBack = parseOpenBLASCore(string(out))
		if t.detected == "" {
			t.why = fmt.Sprintf("%s printed no \"Core:\" line (%v)", cmd.Path, err)
		}
	}
	t.coreType, t.byUser = chooseCoreType(user, t.detected, t.fellBack, t.best), user != ""
	return t
}

// env is the peers' environment additions.
func (t blasTuning) env() []string {
	if t.coreType == "" || t.byUser { // the user's is in os.Environ already
		return nil
	}
	return []string{"OPENBLAS_CORETYPE=" + t.coreType}
}

// String is the line the bench prints about it.
func (t blasTuning) String() string {
	var s strings.Builder
	s.WriteString("OpenBLAS: ")
	switch {
	case t.detected == "":
		fmt.Fprintf(&s, "core not detected (%s)", t.why)
	case t.fellBack:
		fmt.Fprintf(&s, "fell back to %s", t.detected)
	default:
		fmt.Fprintf(&s, "detected %s", t.detected)
	}
	cpuName := map[string]string{"SkylakeX": "AVX-512", "Haswell": "AVX2", "Sandybridge": "AVX", "": "SSE only"}[t.best]
	fmt.Fprintf(&s, " on a CPU with %s; ", cpuName)
	switch {
	case t.byUser:
		fmt.Fprintf(&s, "peers run with your OPENBLAS_CORETYPE=%s", t.coreType)
		// A machine-wide setting (some images set Haswell) can make the
		// peer slower than OpenBLAS on its own: say so.
		own, whose := t.detected, "OpenBLAS uses here on its own"
		if t.fellBack {
			own, whose = t.best, "this CPU allows"
		}
		if l := blasLevel(t.coreType); l >= 0 && l < blasLevel(own) {
			fmt.Fprintf(&s, " (narrower than the %s %s: unset it for a tuned peer)", own, whose)
		}
	case t.coreType != "":
		fmt.Fprintf(&s, "peers run with OPENBLAS_CORETYPE=%s", t.coreType)
	default:
		s.WriteString("peers run with OpenBLAS's own choice")
	}
	fmt.Fprintf(&s, ", torch %d thread(s) + OpenBLAS %d thread(s) (-torch-threads, -openblas-threads), SGEMM peer %d threads", t.torch, t.blas, blasPeerThreads)
	return s.String()
}

// envWithout is env without the variable name.
func envWithout(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
