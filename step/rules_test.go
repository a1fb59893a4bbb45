package step

import (
	"os"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/step/parse"
)

// The driver writes "GPU has fallen off the bus" beside its Xid 79: one
// event, counted once. A GPU that fell off the bus with no Xid is counted
// on its own (real kernel logs of both kinds).
func TestXidRecentCountsFallenOffBusOnce(t *testing.T) {
	for file, want := range map[string]string{
		"rtx5090-xid79-fallen-off-bus-gsp-rc-no-timestamps.txt": "1 hardware Xid event(s)",
		"fallen-off-bus-no-xid-multiline-drv570.txt":            "1 GPU(s) fallen off the bus without an Xid",
	} {
		data, err := os.ReadFile("../testdata/fixtures/dmesg-xid/" + file)
		if err != nil {
			t.Fatal(err)
		}
		k, err := parse.ParseDmesgXid(string(data))
		if err != nil {
			t.Fatal(err)
		}
		v := JudgeOutput("dmesg-xid", k)["xid-recent"]
		if v.Status != Fail || !strings.HasPrefix(v.Summary, want) {
			t.Errorf("%s: %s %q, want FAIL %q", file, v.Status, v.Summary, want)
		}
	}
}

// NCCL_IB_HCA against a real `rdma link` output: prefixes, '=' exact,
// ports, '^' exclusion, a name that matches nothing, a device that is down.
func TestNCCLEnvRule(t *testing.T) {
	data, err := os.ReadFile("../testdata/fixtures/rdma-link/moc-gpu-node-roce-6links-trailing-space.txt")
	if err != nil {
		t.Fatal(err)
	}
	links, _ := parse.ParseRdmaLink(string(data))
	for _, tc := range []struct{ hca, want string }{
		{"mlx5_2,mlx5_3:1", "PASS NCCL_IB_HCA name devices that are up"},
		{"mlx5", "PASS NCCL_IB_HCA name devices that are up"},
		{"^mlx5_0", "PASS NCCL_IB_HCA name devices that are up"},
		{"=mlx5", `FAIL NCCL_IB_HCA==mlx5: no device "mlx5" on this host`},
		{"mlx5_2,mlx4_0", `FAIL NCCL_IB_HCA=mlx5_2,mlx4_0: no device "mlx4_0" on this host`},
		{"mlx5_0", "FAIL NCCL_IB_HCA=mlx5_0: mlx5_0 is not up"},
	} {
		n := &parse.NCCL{Env: map[string]string{"NCCL_IB_HCA": tc.hca}}
		v := ncclEnv([]Input{{Step: "nccl", Value: n}, {Step: "rdma", Value: links}, {Step: "links", Value: []parse.Link{}}}, nil)
		if got := string(v.Status) + " " + v.Summary; !strings.HasPrefix(got, tc.want) {
			t.Errorf("NCCL_IB_HCA=%s: %s, want %s", tc.hca, got, tc.want)
		}
	}
}

// A rule that judges a failed command itself (ran, output-matches,
// driver-loaded) says FAIL only for a command that ran on the host and
// exited non-zero; a host never reached, a connection lost, a timeout, a
// stopped run or a step refused before it ran are no evidence: UNKNOWN,
// with the way to the evidence.
func TestFailureRulesNeedACommandThatRan(t *testing.T) {
	checks := []Check{
		{ID: "ran", Rule: "ran", Uses: []string{"s"}},
		{ID: "match", Rule: "output-matches", Uses: []string{"s"}, With: map[string]any{"pattern": "^ok$"}},
		{ID: "driver", Rule: "driver-loaded", Uses: []string{"s"}},
	}
	for _, tc := range []struct {
		in   Input
		want Status
	}{
		{Input{Step: "s", Class: orchestrator.Exit, ExitCode: 9, Problem: "exited 9: NVIDIA-SMI has failed"}, Fail},
		{Input{Step: "s", Class: orchestrator.Unreachable, ExitCode: -1, Problem: "did not run: host unreachable"}, Unknown},
		{Input{Step: "s", Class: orchestrator.Error, ExitCode: -1, Problem: "did not run: host error (ssh_config line 3)"}, Unknown},
		{Input{Step: "s", Class: orchestrator.Lost, ExitCode: -1, Problem: "lost: connection reset"}, Unknown},
		{Input{Step: "s", Class: orchestrator.TimeoutCommand, ExitCode: -1, Problem: "timeout: 60s"}, Unknown},
		{Input{Step: "s", Class: orchestrator.Cancelled, ExitCode: -1, Problem: "was skipped (dangerous, not confirmed)"}, Unknown},
	} {
		for _, c := range checks {
			v := Judge(c, []Input{tc.in})
			if v.Status != tc.want {
				t.Errorf("%s on a %s step: %s %q, want %s", c.Rule, tc.in.Class, v.Status, v.Summary, tc.want)
			}
			if tc.want == Unknown && (v.Hint == "" || !strings.HasPrefix(v.Summary, "no evidence")) {
				t.Errorf("%s on a %s step: UNKNOWN %q with hint %q: want \"no evidence\" and a way to it", c.Rule, tc.in.Class, v.Summary, v.Hint)
			}
		}
	}
}
