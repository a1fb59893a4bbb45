package suggest

import "testing"

func TestClosest(t *testing.T) {
	kinds := []string{"nvidia-smi-topo", "nvidia-smi-L", "nvidia-smi-q-xml", "numactl-hardware"}
	for _, tc := range []struct {
		name string
		in   []string
		want string
	}{
		{"nvidia-smi-topo-m", kinds, "nvidia-smi-topo"}, // the command's flag typed into the kind
		{"nvidia-smi-l", kinds, "nvidia-smi-L"},         // case
		{"numactl-hardwar", kinds, "numactl-hardware"},  // a letter short
		{"nvidia-smi-topo", kinds, ""},                  // exact: nothing to suggest
		{"xml", kinds, ""},                              // nothing near
		{"topology-sanit", []string{"exclusive-baseline", "topology-sanity"}, "topology-sanity"},
		{"nope", []string{"nccl-slow", "topology"}, ""},
		{"", kinds, ""},
	} {
		if got := Closest(tc.name, tc.in); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A name typed short of two kinds suggests both, before a kind it runs
// past: "nvidia-smi-nvlink" is not "nvidia-smi".
func TestHintGoesOnFromWhatWasTyped(t *testing.T) {
	kinds := []string{"nvidia-smi", "nvidia-smi-L", "nvidia-smi-nvlink-errors", "nvidia-smi-nvlink-status", "nvidia-smi-topo"}
	if got, want := Hint("nvidia-smi-nvlink", kinds), `: did you mean "nvidia-smi-nvlink-errors" or "nvidia-smi-nvlink-status"?`; got != want {
		t.Errorf("Hint = %q, want %q", got, want)
	}
	if got, want := Hint("nvidia-smi-nvlink-stat", kinds), `: did you mean "nvidia-smi-nvlink-status"?`; got != want {
		t.Errorf("Hint = %q, want %q", got, want)
	}
}
