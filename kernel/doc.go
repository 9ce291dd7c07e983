// Package kernel is ragen's Jupyter kernel: Jupyter messaging protocol 5.3
// over ZeroMQ (github.com/go-zeromq/zmq4, pure Go) in front of a yaegi
// session in which notebook cells, written in Go, keep their state.
//
// Layout:
//
//	kernel          Run (the five sockets and the request handlers), Install (the kernelspec), Logo
//	kernel/wire     connection file, message framing, HMAC-SHA256 signing; no sockets
//	kernel/session  the interpreter session, independent of ZeroMQ (ragen-run reuses it in process)
//	kernel/display  how cells and compiled packages publish rich output
//	kernel/cellctx  the running cell's context, cancelled by an interrupt
//	kernel/live     the live view of a training run (progress bar and chart)
//
// # Protocol
//
// Shell requests are served one at a time, in order; control requests
// (interrupt, shutdown, kernel_info) on their own goroutine, so they are
// never stuck behind a running cell. Every request is wrapped in status
// busy/idle on IOPub with the request as parent header, and its reply goes
// out on the socket it came from, after every IOPub message it caused. The
// kernel publishes status "starting" once. A message whose HMAC does not
// verify is logged and dropped. After a failed cell, execute requests
// already queued are answered "aborted" (unless stop_on_error is false).
// Output is batched into stream messages (64 KiB or 50 ms) and the PUB
// socket's high-water mark is raised, so nothing is dropped. Output is
// captured at the file-descriptor level while a cell runs, so prints of
// compiled code are caught too; what a goroutine left running writes after
// its cell ended goes to the kernel's own stdout and stderr. stdin
// (input_request) is not supported: reading os.Stdin in a cell gives EOF.
//
// # Cells
//
// A cell may mix imports, declarations and statements in any order:
// imports are hoisted, declarations compiled as declarations, statements
// run in order at global scope (`x := 1` defines x for later cells). The
// value of a last bare expression is the cell's result (execute_result),
// unless it ends with ';'. A call with zero or several results shows
// nothing (`fmt.Println(x)` prints, it does not show `2 <nil>`).
//
// Redefining a function recompiles the earlier functions that call it, so
// they call the new one (yaegi alone keeps the old one). A type cannot be
// redefined (yaegi keeps the first definition everywhere): a different
// definition of an existing type is an error that says to restart the
// kernel; re-running an identical definition is fine.
//
// Errors name the cell by its execution count: cell[3]:2:5 with the source
// line and a caret. A panic becomes an error with the interpreted frames
// and their lines; the session keeps its state. os.Exit and log.Fatal in a
// cell are an error, not the end of the kernel. A panic in a goroutine a
// cell started is recovered too (the session rewrites go statements so the
// goroutine recovers): the running cell fails with it, or, if its cell had
// ended, the next cell says so on stderr. A panic in a goroutine started by
// compiled code cannot be caught from outside and ends the process
// (Jupyter restarts the kernel); the runtime's report goes to the kernel's
// log, not into the dead cell's captured stderr.
//
// # Display
//
// A value displays itself when a cell ends with it, or when passed to
// display.Display (import "ragen/display"), through the first of these
// methods it has: MIMEBundle() map[string]any (with optional
// MIMEMetadata() map[string]any), PNG() ([]byte, error), SVG() ([]byte,
// error), HTML() string, Markdown() string, String() string, Error()
// string; else fmt's %v. text/plain is always present; []byte image data
// is base64-encoded. For values of types declared in a cell, the method is
// found by the interpreter (display.Display of such a value sees only its
// fmt form; end the cell with it, or pass display.MIMEBundler(v)).
// display.NewHandle gives an updatable display (update_display_data), the
// hook for live training progress.
//
// # Live training
//
// cmd/ragen installs kernel/live as the DSL's observer: a training cell
// (exp.Train(), exp.TrainContext(ctx)) shows one progress bar (step i/N,
// phase, elapsed, ETA, last reward and success rate, the collapse
// monitor's events as lines under it) and one metrics chart, refreshed in
// place with update_display_data (the bar at most 4 times a second, the
// chart at most every 2 s), and ends with the outcome, the summary table
// and the final chart, also when the cell has no value to show
// (run := exp.Train()). An interrupted run ends with "interrupted at step
// k"; TrainContext returns the run so far with the context's error.
//
// # Interrupt
//
// interrupt_request (interrupt_mode "message") and SIGINT both interrupt
// the running cell. The first interrupt cancels the cell's context
// (cellctx.Context), so compiled calls that honour it (training) return at
// their next safe point (between training steps, and between the turns of
// a rollout); after ten seconds, or at a second interrupt, the
// interpreter itself is stopped, which ends interpreted loops. A cell in
// which nothing asked for cellctx.Context is stopped at the first
// interrupt, without waiting. A compiled
// call that ignores its context cannot be stopped; the cell is reported as
// interrupted and the call finishes in the background.
package kernel
