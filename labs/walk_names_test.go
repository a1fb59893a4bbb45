package labs

import "testing"

// A prerequisite's step is named after what it checks, without the
// remedy its description goes on to give, in any script; two that read
// the same get their number; one with nothing to name is numbered.
func TestPrerequisiteIDs(t *testing.T) {
	got := prerequisiteIDs([]Prerequisite{
		{Description: "numactl is installed (apt-get install numactl)"},
		{Description: "numactl is installed: apt-get install numactl"},
		{Description: "驱动可用"},
		{Description: "?!"},
		{Description: "The NVIDIA driver answers: nvidia-smi runs and lists every GPU of the host, whatever its MIG mode"},
	})
	want := []string{"numactl-is-installed", "numactl-is-installed-2", "驱动可用", "prerequisite-4", "the-nvidia-driver-answers"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("prerequisite %d: %q, want %q", i+1, got[i], want[i])
		}
	}
}
