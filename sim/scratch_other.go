//go:build !linux

package sim

// memScratchBase is "" where no memory filesystem is known.
func memScratchBase() string { return "" }
