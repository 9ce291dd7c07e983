// Package live is the live view of a training run in a notebook: one
// progress bar and one metrics chart that refresh in place, and at the end
// the final chart and the run's summary table.
//
// A View is a dsl.RunObserver. The kernel installs one per run with
//
//	dsl.SetObserver(live.Observer(display.PublishData, live.Options{}))
//
// and everything the view shows goes through that one func(display.Data),
// so a headless runner (ragen-run) plugs in its own and gets the same
// outputs written into the notebook it executes.
//
// The view publishes two displays, each with its own display id: the bar
// (HTML: step i/N, phase, elapsed, ETA, last reward and success rate, and
// the collapse monitor's events as lines under it; during the warm start's
// fine-tuning its step i/N, loss and ETA instead) and the chart (a PNG
// dashboard of reward with its in-group std band, success rate and
// validation success, entropy and gradient norm; ~50 ms to render). Later
// states are update_display_data of the same ids, throttled: the bar at
// most every ProgressEvery (250 ms), the chart at most every ChartEvery
// (2 s), or at every step when steps are slower. A change that arrives
// inside the interval is not lost: a timer publishes the latest state when
// the interval is over. While nothing changes (the warm start's
// demonstrations and vocabulary report only that they begin) the bar is
// redrawn every TickEvery (1 s), so its elapsed time runs and it does not
// look frozen.
//
// At the end the bar becomes the outcome ("done: 40 steps in 1m12s",
// "interrupted at step 7", or the error that stopped the run), and the
// chart becomes the run's full dashboard (dsl.Run.Dashboard). The summary
// table is the Run's own display, shown once by a cell that ends with the
// run (`run := exp.Train(); run`).
package live
