// Package step is the step library that runbooks and labs build on: a
// step runs a command on a host and parse (step/parse) turns what it
// prints into facts. The parsers live here; statuses, parameters and
// running a command are still in runbooks (issue: one step library).
package step
