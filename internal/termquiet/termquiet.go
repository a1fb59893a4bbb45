// Package termquiet keeps the terminal out of gpulab's start-up.
//
// Bubble Tea's init (tea_init.go, "a workaround … removed in v2") asks Lip
// Gloss whether the terminal's background is dark, so every program that
// links Bubble Tea has termenv write ESC ] 11 ; ? and ESC [ 6 n to a
// terminal on standard output before main runs, and wait up to 5 s for an
// answer that a terminal which does not answer never sends. Only the
// workbench draws in colour; the commands print text.
//
// Imported by package main for its side effect. Its import path sorts
// before github.com/muesli/termenv and it imports only os, so by the Go
// spec's order of initialization (packages sorted by import path, each
// initialized once its imports are) it is initialized before termenv, Lip
// Gloss and Bubble Tea. It sets CI, which termenv reads as "not a
// terminal": Bubble Tea's query finds no terminal and sends nothing.
// Restore, the first thing main does, puts CI back as it was; the
// workbench then asks the terminal itself, before it takes the terminal
// over.
package termquiet

import "os"

// ci is CI as gpulab found it.
var ci, ciSet = os.LookupEnv("CI")

func init() { os.Setenv("CI", "1") }

// Restore puts CI back as it was before this package's init.
func Restore() {
	if ciSet {
		os.Setenv("CI", ci)
	} else {
		os.Unsetenv("CI")
	}
}
