package report

// Outcome is how one host's probe ended, as every count of a probe run
// counts it.
type Outcome int

// Outcomes.
const (
	// Healthy: the probe read the GPUs through NVML and flagged nothing.
	Healthy Outcome = iota
	// Flagged: the probe read the GPUs and found something worth a look
	// (Flags).
	Flagged
	// Failed: no snapshot, or one without NVML: the probe saw no GPU, so
	// it can tell nothing about this host's health.
	Failed
)

// OutcomeOf is a host's outcome from its snapshot (nil when the probe
// gave none) and its class, how reaching it ended (the orchestrator's
// class: "ok", "lost", "timeout-command", ...; "" when unknown). A run
// that did not end as it should (any class but "ok" or "no-nvml") is
// Failed whatever its snapshot says: what it printed may be the start of
// a report, never evidence of a healthy host.
func OutcomeOf(s *Snapshot, class string) Outcome {
	switch {
	case s == nil || !s.NVML.Available:
		return Failed
	case class != "" && class != "ok" && class != "no-nvml":
		return Failed
	case len(Flags(s)) > 0:
		return Flagged
	}
	return Healthy
}

// String is the outcome as the summary line counts it and probe --json
// names it: "ok", "flagged", "failed".
func (o Outcome) String() string {
	switch o {
	case Healthy:
		return "ok"
	case Flagged:
		return "flagged"
	}
	return "failed"
}
