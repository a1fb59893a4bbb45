//go:build race

package sim

// raceEnabled: the race detector's shadow memory takes terabytes of
// address space, which RLIMIT_AS would refuse.
const raceEnabled = true
