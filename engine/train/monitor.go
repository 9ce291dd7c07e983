package train

import (
	"fmt"
	"math"
	"slices"

	"github.com/ragen-go/ragen/engine/metrics"
)

// Monitor actions when a collapse signal fires.
const (
	MonitorWarn   = "warn"   // record the event and go on
	MonitorStop   = "stop"   // record the event and end the run (an error wrapping ErrCollapse)
	MonitorRewind = "rewind" // restore the best step's weights so far and go on
)

// MonitorConfig sets the collapse monitor: online detectors of the Echo
// Trap signals the RAGEN paper reports before collapse. Every signal is
// read on an exponential moving average (EMA) of the metric, with smoothing
// factor Smoothing, so one noisy step does not fire it.
type MonitorConfig struct {
	// Action: warn | stop | rewind (warn).
	Action string `json:"action" flag:"action" help:"what a collapse signal does: warn | stop | rewind (to the best weights so far)"`
	// Smoothing α of the EMA  s_t = α·s_{t−1} + (1−α)·x_t  (0.7).
	Smoothing float64 `json:"smoothing" flag:"smoothing" help:"EMA factor α of the smoothed signals, in [0, 1)"`
	// Warmup steps before any detector may fire (5).
	Warmup int `json:"warmup" flag:"warmup" help:"steps before any detector may fire"`
	// StdDrop fires "reward_std_collapse" when the smoothed in-group reward
	// std falls below (1 − StdDrop) × its peak (0.6): groups stop
	// disagreeing, the filter and group advantages lose their signal.
	StdDrop float64 `json:"std_drop" flag:"std-drop" help:"in-group reward std collapse: fraction below its peak"`
	// EntropyDrop fires "entropy_collapse" when the smoothed entropy falls
	// below (1 − EntropyDrop) × its peak (0.6).
	EntropyDrop float64 `json:"entropy_drop" flag:"entropy-drop" help:"entropy collapse: fraction below its peak"`
	// EntropySwings fires "entropy_oscillation" when the entropy's step to
	// step change reverses sign this many times in a row, each change
	// larger than 10% of the level (4).
	EntropySwings int `json:"entropy_swings" flag:"entropy-swings" help:"entropy oscillation: sign reversals in a row"`
	// GradSpike fires "grad_norm_spike" when the gradient norm exceeds this
	// multiple of its running median over the last Window steps (5).
	GradSpike float64 `json:"grad_spike" flag:"grad-spike" help:"gradient-norm spike: multiple of the running median (> 1)"`
	// RewardDrop fires "reward_drop" when the smoothed reward falls by this
	// fraction of its rise (peak − first value) below its peak (0.5). A
	// rise within the noise — less than 3× the median step-to-step change
	// of the raw reward over the last Window steps — does not count.
	RewardDrop float64 `json:"reward_drop" flag:"reward-drop" help:"reward drop: fraction of its rise below its peak"`
	// Window of the running median (10).
	Window int `json:"window" flag:"window" help:"steps of the running median (≥ 3)"`
}

// DefaultMonitor warns on every signal with the defaults above.
func DefaultMonitor() MonitorConfig {
	return MonitorConfig{Action: MonitorWarn, Smoothing: 0.7, Warmup: 5, StdDrop: 0.6, EntropyDrop: 0.6,
		EntropySwings: 4, GradSpike: 5, RewardDrop: 0.5, Window: 10}
}

// Validate names the first bad field.
func (c MonitorConfig) Validate() error {
	switch c.Action {
	case MonitorWarn, MonitorStop, MonitorRewind:
	default:
		return fmt.Errorf("monitor.action: must be one of warn, stop, rewind (got %q)", c.Action)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"monitor.smoothing", c.Smoothing}, {"monitor.std_drop", c.StdDrop}, {"monitor.entropy_drop", c.EntropyDrop}, {"monitor.reward_drop", c.RewardDrop}} {
		if !(f.v >= 0 && f.v < 1) {
			return fmt.Errorf("%s: must be in [0, 1) (got %v)", f.name, f.v)
		}
	}
	if !(c.GradSpike > 1) {
		return fmt.Errorf("monitor.grad_spike: must be > 1 (got %v)", c.GradSpike)
	}
	if c.Window < 3 {
		return fmt.Errorf("monitor.window: must be ≥ 3 (got %d)", c.Window)
	}
	if c.Warmup < 0 || c.EntropySwings < 0 {
		return fmt.Errorf("monitor.warmup and monitor.entropy_swings: must be ≥ 0 (got %d, %d)", c.Warmup, c.EntropySwings)
	}
	return nil
}

// The template-collapse detector fires when the smoothed MI estimate
// (metrics.CollapseMI) falls below (1 − templateMIDrop) × its peak, a peak
// above templateMIFloor nats per token (below it the reasoning never
// depended on the prompt: nothing to lose). Constants, not knobs, so that
// config.json keeps its keys; the entropy test reuses EntropyDrop.
const (
	templateMIDrop  = 0.5
	templateMIFloor = 1e-3
)

// Monitor watches a run's metrics step by step. Each detector fires once,
// and again only after its signal has recovered.
type Monitor struct {
	cfg        MonitorConfig
	steps      int
	ema        map[string]float64
	peak       map[string]float64
	first      map[string]float64
	armed      map[string]bool // detector → may fire
	grads      []float64       // last Window gradient norms
	jumps      []float64       // last Window |Δ reward| of the raw reward
	lastReward float64         // previous raw reward
	prevH      float64         // previous entropy
	prevD      float64         // previous entropy change
	swing      int             // consecutive sign reversals
}

// NewMonitor returns a monitor with no history.
func NewMonitor(c MonitorConfig) *Monitor {
	return &Monitor{cfg: c, ema: map[string]float64{}, peak: map[string]float64{}, first: map[string]float64{}, armed: map[string]bool{}}
}

// Observe reads one step's metrics and returns the events it fires.
func (m *Monitor) Observe(s metrics.Step) []metrics.Event {
	m.steps++
	var events []metrics.Event
	fire := func(kind string, cond bool, msg string, evidence map[string]float64) {
		if _, ok := m.armed[kind]; !ok {
			m.armed[kind] = true
		}
		if !cond {
			m.armed[kind] = true
			return
		}
		if m.armed[kind] && m.steps > m.cfg.Warmup {
			events = append(events, metrics.Event{Step: s.Step, Kind: kind, Message: msg, Evidence: evidence})
			m.armed[kind] = false
		}
	}
	smooth := func(name string) (ema, peak, first float64, ok bool) {
		x, ok := s.Values[name]
		if !ok || math.IsNaN(x) {
			return 0, 0, 0, false
		}
		if _, seen := m.ema[name]; !seen {
			m.ema[name], m.peak[name], m.first[name] = x, x, x
		} else {
			m.ema[name] = m.cfg.Smoothing*m.ema[name] + (1-m.cfg.Smoothing)*x
		}
		m.peak[name] = max(m.peak[name], m.ema[name])
		return m.ema[name], m.peak[name], m.first[name], true
	}

	if v, peak, _, ok := smooth(metrics.InGroupStd); ok {
		fire("reward_std_collapse", peak > 1e-6 && v < (1-m.cfg.StdDrop)*peak,
			fmt.Sprintf("in-group reward std fell to %.3g from a peak of %.3g: the groups' rollouts stopped disagreeing", v, peak),
			map[string]float64{"in_group_std": v, "peak": peak})
	}
	if h, peak, _, ok := smooth(metrics.Entropy); ok {
		fire("entropy_collapse", peak > 1e-6 && h < (1-m.cfg.EntropyDrop)*peak,
			fmt.Sprintf("entropy fell to %.3g from a peak of %.3g: responses are turning into one template", h, peak),
			map[string]float64{"entropy": h, "peak": peak})
	}
	if h, ok := s.Values[metrics.Entropy]; ok && m.cfg.EntropySwings > 0 {
		d := h - m.prevH
		if m.steps > 1 && math.Abs(d) > 0.1*math.Abs(m.prevH) && d*m.prevD < 0 {
			m.swing++
		} else if m.steps > 1 {
			m.swing = 0
		}
		fire("entropy_oscillation", m.swing >= m.cfg.EntropySwings,
			fmt.Sprintf("entropy swung up and down %d steps in a row by more than 10%%", m.swing),
			map[string]float64{"entropy": h, "swings": float64(m.swing)})
		m.prevH, m.prevD = h, d
	}
	if g, ok := s.Values[metrics.GradNorm]; ok && !math.IsNaN(g) {
		if len(m.grads) >= 3 {
			med := median(m.grads)
			fire("grad_norm_spike", med > 0 && g > m.cfg.GradSpike*med,
				fmt.Sprintf("gradient norm %.3g is %.1f× its running median %.3g", g, g/med, med),
				map[string]float64{"grad_norm": g, "median": med})
		}
		m.grads = append(m.grads, g)
		if len(m.grads) > m.cfg.Window {
			m.grads = m.grads[1:]
		}
	}
	if mi, peak, _, ok := smooth(metrics.CollapseMI); ok {
		// Template collapse (RAGEN-2): the reasoning stops depending on
		// the prompt — the mutual information falls — while the entropy
		// holds, so entropy_collapse stays silent. Read on the steps that
		// compute it (Config.CollapseEvery).
		h, hPeak := m.ema[metrics.Entropy], m.peak[metrics.Entropy]
		holds := hPeak > 1e-6 && h >= (1-m.cfg.EntropyDrop)*hPeak
		fire("template_collapse", peak > templateMIFloor && mi < (1-templateMIDrop)*peak && holds,
			fmt.Sprintf("mutual information of prompt and reasoning fell to %.3g from a peak of %.3g nats per token while the entropy holds at %.3g: the reasoning is turning into one template for every prompt", mi, peak, h),
			map[string]float64{"mi": mi, "peak": peak, "entropy": h})
	}
	raw, hadRaw := m.lastReward, m.steps > 1
	if r, peak, first, ok := smooth(metrics.RewardMean); ok {
		x := s.Values[metrics.RewardMean]
		if hadRaw {
			m.jumps = append(m.jumps, math.Abs(x-raw))
			if len(m.jumps) > m.cfg.Window {
				m.jumps = m.jumps[1:]
			}
		}
		m.lastReward = x
		noise := 0.0
		if len(m.jumps) > 0 {
			noise = median(m.jumps)
		}
		rise := peak - first
		fire("reward_drop", rise > 1e-6 && rise > 3*noise && r < peak-m.cfg.RewardDrop*rise,
			fmt.Sprintf("reward fell to %.3g after a peak of %.3g", r, peak),
			map[string]float64{"reward": r, "peak": peak})
	}
	return events
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}
