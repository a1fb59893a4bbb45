package fence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/step/parse"
)

// The Slurm plans, from nodes as scontrol's parser gives them: another
// tool's drain or down reason is never touched, gpulab's own is
// unchanged on a second fence, and gpulab's reason on a node whose drain
// was cleared is drained again rather than stuck (fence refused, release
// with nothing to do). The reason reaches the shell quoted.
func TestSlurmPlans(t *testing.T) {
	req := fence.Request{Reason: `XID 79 $(reboot) 'x'`, Record: "r1", By: "a@b"}
	idle := parse.SlurmNode{Name: "gpu1", State: "IDLE"}
	if p := fence.PlanSlurmFence(idle, req); len(p.Changes) != 1 || !strings.Contains(p.Changes[0].What, `Reason='gpulab: XID 79 $(reboot) '\''x'\'' (record ID)'`) {
		t.Errorf("fence of an idle node = %+v", p)
	}
	nhc := parse.SlurmNode{Name: "gpu2", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "NHC: check_fs_mount", ReasonBy: "root"}
	down := parse.SlurmNode{Name: "gpu3", State: "DOWN", Flags: []string{"NOT_RESPONDING"}, Reason: "Not responding", ReasonBy: "slurm"}
	for _, n := range []parse.SlurmNode{nhc, down} {
		if p := fence.PlanSlurmFence(n, req); p.Refused == "" || !strings.Contains(p.Refused, n.Reason) {
			t.Errorf("fence of %s (%s) = %+v, want refused naming the reason", n.Name, n.Reason, p)
		}
		if p := fence.PlanSlurmRelease(n); p.Refused == "" {
			t.Errorf("release of %s = %+v, want refused", n.Name, p)
		}
	}
	ours := parse.SlurmNode{Name: "gpu4", State: "MIXED", Flags: []string{"DRAIN"}, Reason: "gpulab: ecc (record r0)", ReasonBy: "root"}
	if p := fence.PlanSlurmFence(ours, req); p.Unchanged == "" || p.Fence == nil || p.Fence.Record != "r0" {
		t.Errorf("fence of gpulab's drain = %+v, want unchanged, record r0", p)
	}
	if p := fence.PlanSlurmRelease(ours); len(p.Changes) != 1 || p.Changes[0].Op != fence.OpUndrain {
		t.Errorf("release of gpulab's drain = %+v", p)
	}
	cleared := parse.SlurmNode{Name: "gpu5", State: "DOWN", Reason: "gpulab: ecc (record r0)", ReasonBy: "root"}
	if p := fence.PlanSlurmFence(cleared, req); len(p.Changes) != 1 || !strings.Contains(strings.Join(p.Left, ""), "record r0") {
		t.Errorf("fence of a node whose gpulab drain was cleared = %+v, want a drain again", p)
	}

	// A login host that does not answer: the node is not read (failed),
	// never refused as if gpulab chose not to act.
	run := func(context.Context, string) (string, error) { return "", errors.New("dial tcp: connection refused") }
	plans := fence.ReadSlurm(t.Context(), run, []string{"gpu1"}, func(n parse.SlurmNode) fence.Plan { return fence.PlanSlurmFence(n, req) })
	res := fence.ApplySlurm(t.Context(), run, plans, nil)
	if plans[0].Error == "" || res[0].Outcome != fence.Failed {
		t.Errorf("an unreachable login host: plan %+v, result %+v", plans[0], res[0])
	}
}
