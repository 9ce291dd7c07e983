// Package plots draws the training dynamics of ragen runs with gonum/plot:
// the charts a notebook user looks at to see an echo trap coming.
//
// # Charts
//
// Every chart is a small value you construct, add runs to and render, in the
// manner of gonum/plot:
//
//	d := plots.NewDashboard()
//	d.Smoothing = 0.6
//	d.Add(run)                       // *metrics.History
//	d.AddSeeds("StarPO-S", s0, s1, s2)
//	d.Save("run.png")                // or .svg
//
// The charts:
//
//   - LineChart: any metric against step for several runs (a sweep,
//     presets) with a legend; optional EMA smoothing and log scale.
//   - Dashboard: a grid of the signals RAGEN watches — reward mean with
//     the in-group reward std as a band, in-group std, success (train
//     solid, validation dashed), entropy, gradient norm (log), response and
//     think tokens, KL, clip fraction, filter keep ratio. Panels whose
//     metrics no run recorded are left out.
//   - ReasoningChart: think tokens per turn against step, one line per
//     environment or run, each with its change from start to end.
//   - GroupRewardChart: the per-group reward distribution at chosen steps
//     (GroupRewards), flat groups — std 0, no gradient signal — in grey.
//   - CreditChart: credit assignment on one training sample
//     (metrics.Sample): over the agent's tokens in order, the value V(s_t),
//     the return G_t and the rewards above, the advantage A_t as bars
//     below, turn boundaries dashed.
//   - GradientChart: one step's gradient analysis (GradientReportAt; the
//     trainer's GradientReportEvery): the task, entropy and KL terms'
//     gradient norms against the reward-std bucket — in total, per
//     trajectory and per token, log scale.
//
// A run keeps its colour (Palette, Okabe–Ito, colour-blind safe) on every
// panel; colours follow the order of Add and AddSeeds. The legend sits
// above the panels and never covers data.
//
// Seeds: AddSeeds draws runs that differ only in seed as their mean with a
// band (Band: BandMinMax, BandStd, BandNone), over the steps that every
// seed recorded. Steps only some seeds reached are left out and counted
// under the axis, because a mean over a changing set of seeds jumps where a
// seed stops.
//
// Events: the collapse monitor's metrics.Events are dashed vertical lines in
// the run's colour on every panel, with a short label at the top (the
// dashboard numbers them and explains the numbers in its legend). Labels
// that would overlap move down a lane.
//
// Smoothing is a bias-corrected exponential moving average over points
// (see EMA): s_t = β·s_{t-1} + (1-β)·y_t from s₀ = 0, shown as s_t/(1-β^t),
// so the curve starts at the first value instead of at zero. A smoothed run
// keeps its raw data as a faint line underneath; a seed group smooths each
// seed before averaging.
//
// Nothing is dropped silently: NaN/Inf values, values ≤ 0 on a log axis
// and unshared seed steps are skipped and counted in a note under the
// axis; a log axis with no positive value falls back to linear and says so.
//
// # Output and display
//
// Each chart builds a Figure (Chart.Figure()), a grid of *plot.Plot panels
// that can be adjusted before rendering, or assembled by hand. Figures and
// charts render with PNG() ([]byte, error) at DefaultDPI (192: 2× a 96-dpi
// screen), SVG() ([]byte, error), and Save(path), which picks the format by
// extension and writes atomically. Sizes are in points at display size;
// text is never smaller than 10 pt. Rendering is deterministic: fixed
// embedded Liberation fonts, no timestamps, no map-order dependence.
//
// The notebook kernel displays a value a cell ends with through these
// methods, which every chart and Figure has (research/kernel.md §(e).3:
// one bundle interface, plus small single-method ones, type-switched on the
// host side):
//
//	type MIMEBundler interface {
//		// MIME type → data: "image/png" ([]byte, raw; the kernel
//		// base64-encodes it as encoding/json does) and "text/plain" (string).
//		// A chart that cannot render returns only "text/plain": the error.
//		MIMEBundle() map[string]any
//	}
//	type MIMEMetadataer interface {
//		// The display_data metadata: {"image/png": {"width": w, "height": h}}
//		// in CSS pixels, half the PNG's pixel size, so the 2× image shows
//		// sharp at its design size.
//		MIMEMetadata() map[string]any
//	}
//	fmt.Stringer // String(): the text/plain summary (runs, panels, events)
//
// The interfaces are the kernel's to declare; plots implements them
// structurally and imports nothing from the kernel.
package plots
