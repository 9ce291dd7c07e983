// Package notebook reads, executes, checks and reports Jupyter notebooks
// of the ragen kernel without Jupyter: the engine of cmd/ragen-run, the
// way notebooks run in CI and how a shared notebook proves it reproduces.
//
// # Format
//
// Notebooks are nbformat 4 (Parse, ReadFile). Written notebooks are
// nbformat 4.5 (Marshal, WriteFile) as Jupyter writes them — sorted keys,
// one-space indent, multiline strings as lists of lines — with cell ids:
// a cell without one gets an id derived from its position and source, so
// the same notebook always gets the same ids. Writes are atomic
// (internal/atomicfile: temporary file, fsync, rename). An older nbformat, a
// file that is not JSON, or a notebook of another kernel (CheckKernel) is
// an error that says what to do.
//
// # Execution
//
// Run executes the code cells in order in one kernel/session.Session —
// the interpreter and display path the Jupyter kernel uses — and fills in
// what Jupyter would: stream outputs (consecutive writes to one stream
// coalesced), display_data, execute_result with its execution count,
// error (ename, evalue, traceback), and metadata.execution timestamps as
// nbclient records them. An update_display_data replaces every earlier
// output with its display id, as the frontends do, so a live training chart
// is stored as its final frame. Per-cell timeouts interrupt the cell and
// record a TimeoutError; cancelling the context interrupts the running
// cell and stops (Ctrl-C). The DSL's hooks (package dsl) are set for the
// run: training reports one line per step to Options.Progress.
//
// Cell tags follow papermill's and nbclient's conventions: parameters,
// injected-parameters, raises-exception, skip-execution; and nocheck (or
// a "// ragen:nocheck" comment) for Check.
//
// # Parameters
//
// InjectParams is papermill with a Go translator: the first cell tagged
// "parameters" is parsed with go/parser for its var, const and :=
// declarations and their types (written, or inferred from the default:
// 30 is an int, 5*time.Second a time.Duration), and the values given as
// "name=value" are checked against them and assigned in a cell tagged
// "injected-parameters" inserted right after it:
//
//	// Parameters injected by ragen-run
//	steps = 5
//
// # Reports
//
// Check compares a fresh run with the stored outputs (text exactly,
// numbers in text within a relative tolerance, images by presence,
// errors by name and message) and gives a unified-style diff per cell.
// HTML renders a self-contained page (goldmark for markdown, a go/scanner
// highlighter for code, images as data URIs); JUnit one test case per
// code cell.
package notebook
