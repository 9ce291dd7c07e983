// Package metrics holds the names of every metric the engine reports — one
// file of namespaced constants, identical in logs, run.Metric(...) and
// plots — and the in-memory history of a run.
package metrics
