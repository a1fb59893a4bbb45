// Package step is the step library that runbooks and labs build on: a
// step runs a command on a host (RunCommand: sudo when it needs root,
// bounded in time and output), its parameters go into the command only as
// the shell cannot misread them (Param, BindParams, Expand), parse
// (step/parse) turns what it prints into facts, and rules turn facts into
// verdicts (Status, Verdict, Evidence, Judge, JudgeOutput) with the
// evidence and the next thing to look at. Missing evidence is UNKNOWN,
// never PASS.
//
// runbooks and labs import step and never each other; the loader their
// files share, and the one id rule, are tomlpos.Load and tomlpos.ValidID.
package step
