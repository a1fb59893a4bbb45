package sim

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/sim/dgx"
)

// Informers on the mirrored cluster see what the simulation holds (its
// GPU nodes, the pod pending for fragmentation, the Job the quota
// refuses), and a pod made with kubectl on a simulated host arrives as a
// watch event.
func TestMirrorClusterFeedsInformers(t *testing.T) {
	_, faults := dgx.Plan(0, 4)
	names := []string{"dgx01", "dgx02", "dgx03", "dgx04"}
	c := dgx.NewCluster(names, faults)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client, err := MirrorCluster(ctx, c, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if client.Context != KubeContext {
		t.Errorf("context = %q, want %q", client.Context, KubeContext)
	}
	live := cluster.StartLive(ctx, client, cluster.LiveOptions{Interval: 10 * time.Millisecond})
	waitFor(t, live, "the simulated cluster synced", func(o *cluster.Objects, st cluster.LiveStatus) bool {
		return st.State == cluster.Synced && len(o.GPUNodes()) == 4 && len(o.Pending("")) == 1
	})
	o := live.Snapshot()
	if !slices.ContainsFunc(o.Events, func(e *corev1.Event) bool {
		return e.Reason == "FailedCreate" && e.InvolvedObject.Name == "eval-sweep" && strings.Contains(e.Message, "exceeded quota")
	}) {
		t.Error("no FailedCreate event for ml-team/eval-sweep")
	}
	h := dgx.New(names[1], 1, faults[1])
	h.Cluster = c
	var out, errOut bytes.Buffer
	if code, _ := h.Run(ctx, dgx.IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut},
		[]string{"kubectl", "run", "smoke", "--image=nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04", "--restart=Never"}); code != 0 {
		t.Fatalf("kubectl run: %d %s", code, errOut.String())
	}
	waitFor(t, live, "the pod kubectl made", func(o *cluster.Objects, _ cluster.LiveStatus) bool {
		return slices.ContainsFunc(o.Pods, func(p *corev1.Pod) bool { return p.Name == "smoke" })
	})
}

func waitFor(t *testing.T, l *cluster.Live, what string, ok func(*cluster.Objects, cluster.LiveStatus) bool) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for !ok(l.Snapshot(), l.Status()) {
		select {
		case <-l.Changes():
		case <-deadline.C:
			t.Fatalf("no %s within 30s: %s", what, l.Status())
		}
	}
}
