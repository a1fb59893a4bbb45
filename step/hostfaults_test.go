package step

import (
	"os"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/step/parse"
)

// host-faults on real kernel logs: each verdict and the fact that carries
// its fix.
func TestHostFaultsOnRealLogs(t *testing.T) {
	for _, c := range []struct {
		file    string
		status  Status
		summary string
		fact    string
	}{
		{"dmesg-T-xid119-gsp-then-hung-task-nvidia-smi-state-D.txt", Fail, "1 host fault(s) that stop GPU work",
			"task nvidia-smi (pid 1346229) blocked 120 s in state D inside the NVIDIA driver"},
		{"dmesg-mce-system-fatal-ue-mail-wrapped.txt", Fail, "1 host fault(s) that stop GPU work", "machine check: [Hardware Error]: System Fatal error."},
		{"dmesg-edac-sbridge-ce-overflow-two-dimms-mce-logged.txt", Warn, "3 host fault(s) worth a look",
			"EDAC: 18508 corrected memory error(s) on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (4 report(s))"},
		{"dmesg-rg-oom-global-oom-killed-grep.txt", Warn, "1 host fault(s) worth a look", "OOM killer killed pid 49358 (grep): the host ran out of memory"},
		{"syslog-aks-memcg-oom-killed-pod-process-npd.txt", Warn, "1 host fault(s) worth a look", "OOM killer killed pid 183960 (stress-ng-vm) in a memory cgroup"},
		{"talos-8x-a100-sxid24007-xid62-xid45.txt", Pass, "no OOM kill, hung task, memory error or machine check in the kernel log", "7 kernel log line(s) read"},
	} {
		data, err := os.ReadFile("../testdata/fixtures/dmesg-xid/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		k, err := parse.ParseDmesgXid(string(data))
		if err != nil {
			t.Fatal(err)
		}
		v := JudgeOutput("dmesg-xid", Read("dmesg", "dmesg-xid", CommandResult{}, k, nil))["host-faults"]
		var facts []string
		for _, e := range v.Evidence {
			facts = append(facts, e.Fact)
		}
		if v.Status != c.status || v.Summary != c.summary || !strings.Contains(strings.Join(facts, "\n"), c.fact) {
			t.Errorf("%s: %s %q\n%s\nwant %s %q with %q", c.file, v.Status, v.Summary, strings.Join(facts, "\n"), c.status, c.summary, c.fact)
		}
	}
}
