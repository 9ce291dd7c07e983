// Package session is the notebook interpreter, independent of Jupyter and
// ZeroMQ: the kernel serves it over the wire and ragen-run drives it in
// process, so both execute cells identically.
//
// A Session is one yaegi (v0.16.1) interpreter made by
// stdlib.NewInterpreter, as ragen script's is: the Go standard library
// (yaegi's tables, restricted: os.Exit panics, the environment is a copy,
// no os/exec), the DSL as "ragen" and our packages, the kernel's packages
// under "ragen/display" and "ragen/cellctx", and whatever symbol tables Use
// adds. Execute runs one cell:
//
//   - split.go cuts the cell into imports (hoisted), declaration chunks and
//     statement chunks and parses each once into a plan, with positions
//     that are the cell's own; the redefinition checks, the guards and the
//     result's display probes work on the plan's trees;
//   - globals.go runs a statement chunk unit by unit when yaegi cannot
//     type one of its global defines (x := cs[0] with cs of a compiled
//     package's type fails with "constant definition loop"): the define
//     runs inside a function, once, and the global is declared with the
//     values' types through compiled getters;
//   - goguard.go makes goroutines started by cell code recover their panics;
//     commaok.go rewrites the comma-ok map indexes and type assertions
//     whose value yaegi would leave stale on a miss (internal/rewrite, which
//     ragen script uses too);
//   - capture.go captures fds 1 and 2 (dup2 onto pipes) for the duration of
//     the cell and streams the output, batched, to Output.Stream;
//   - the last bare expression becomes the Result, rendered through the
//     display interfaces (see package display);
//   - errors.go turns compile errors, panics and os.Exit into Errors with
//     cell[N]:line:col, the source line and a caret, and handles the
//     redefinition of functions (callers recompiled) and types (refused).
//
// Interrupt cancels the running cell: first its context (cellctx), then,
// after Options.InterruptGrace or at a second call, the interpreter.
// yaegi.go stops the interpreter so that the stop can be undone once the
// stopped code has returned: function values made before it keep working.
// It also drops what yaegi keeps of every compile and never reads again
// (its syntax trees), so a cell leaves under 1 KB behind.
//
// Cells of one process share fds 1 and 2, so Execute calls of different
// sessions in one process run one at a time.
package session
