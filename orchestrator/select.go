package orchestrator

import "github.com/gpulab/gpulab/inventory"

// Targets resolves every selected host, in selection order, into exactly
// one Target each: one ready to dial, or one whose Unresolved says why it
// could not be resolved (an invalid ssh_config entry, a ProxyJump loop, a
// bad character in its name). This is the one place where selected hosts
// become targets; the engine gives each of them exactly one result, in
// this order, so that no selected host can vanish from a run.
func (r *Resolver) Targets(hosts []inventory.Host) []Target {
	out := make([]Target, len(hosts))
	for i, h := range hosts {
		t, err := r.Resolve(h)
		if err != nil {
			t = Target{Name: h.Name, Unresolved: err.Error()}
		}
		out[i] = t
	}
	return out
}

// unresolvedResult is the result of a target that could not be resolved: class
// Error, with the reason, and nothing run.
func (t Target) unresolvedResult() HostResult {
	return HostResult{Host: t.Name, Via: t.Via(), Class: Error, Err: t.Unresolved, Steps: []Result{}}
}

// Reachable reports whether the target was resolved, so that it can be
// dialled: the others end in their Unresolved error.
func (t Target) Reachable() bool { return t.Unresolved == "" }
