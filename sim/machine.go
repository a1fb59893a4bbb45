package sim

// plan picks the sick host and every host's faults, as the probe's
// --mock-faults JSON (none for a healthy host).
func plan(seed int64, n int) (int, [][]byte) {
	sick := int(uint64(seed) % uint64(n))
	return sick, make([][]byte, n)
}

// newMachine is the host's hardware side.
func newMachine(name string, index int, faults []byte) machine { return nil }
