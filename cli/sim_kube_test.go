package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/sim"
)

// verdict is a check's outcome on a host, as runbook run --json gives it.
type verdict struct{ status, summary string }

// kubeRunbook runs a runbook with --json on a fleet: host → check →
// verdict. It must exit with code.
func kubeRunbook(t *testing.T, env map[string]string, id string, inv []string, code int) map[string]map[string]verdict {
	t.Helper()
	r := run(t, env, append(append([]string{"runbook", "run", id}, inv...), "--json")...)
	var out struct {
		Simulated bool `json:"simulated"`
		Hosts     []struct {
			Host     string `json:"host"`
			Verdicts []struct {
				Check, Status, Summary string
			} `json:"verdicts"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != code || !out.Simulated {
		t.Fatalf("runbook run %s --json: exit %d (want %d), simulated %v, %v\n%s\n%s", id, r.code, code, out.Simulated, err, r.stdout, r.stderr)
	}
	if len(out.Hosts) != 4 {
		t.Errorf("runbook run %s: verdicts for %d hosts, want 4", id, len(out.Hosts))
	}
	got := map[string]map[string]verdict{}
	for _, h := range out.Hosts {
		got[h.Host] = map[string]verdict{}
		for _, v := range h.Verdicts {
			got[h.Host][v.Check] = verdict{v.Status, v.Summary}
		}
	}
	return got
}

// kubeLab runs a lab with --json: the record's pass, and host → criterion
// → status and the first host's metrics.
func kubeLab(t *testing.T, env map[string]string, id string, inv []string) (bool, map[string]map[string]string, map[string]any) {
	t.Helper()
	r := run(t, env, append(append([]string{"lab", "run", id}, inv...), "--json", "--results", t.TempDir())...)
	var rec struct {
		Complete, Passed, Simulated bool
		Hosts                       []struct {
			Host    string         `json:"host"`
			Metrics map[string]any `json:"metrics"`
			Scores  []struct{ ID, Status string }
		} `json:"hosts"`
		Kubernetes *struct {
			Versions map[string]string       `json:"versions"`
			Nodes    []struct{ Name string } `json:"gpu_nodes"`
			AllNodes int                     `json:"all_nodes"`
			Error    string                  `json:"error"`
		} `json:"kubernetes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || !rec.Complete || !rec.Simulated || rec.Kubernetes == nil {
		t.Fatalf("lab run %s --json: exit %d, %v\n%s\n%s", id, r.code, err, r.stdout, r.stderr)
	}
	if k := rec.Kubernetes; k.Error != "" || k.AllNodes != len(rec.Hosts) || len(k.Nodes) != len(rec.Hosts) || k.Versions["Server Version"] == "" {
		t.Errorf("lab %s: the cluster as the record declares it: %+v; want every host a GPU node, a server version, no error", id, *k)
	}
	if (r.code == 0) != rec.Passed {
		t.Errorf("lab %s: exit %d with passed %v", id, r.code, rec.Passed)
	}
	if len(rec.Hosts) != 4 {
		t.Fatalf("lab run %s: %d hosts in the record, want 4", id, len(rec.Hosts))
	}
	scores := map[string]map[string]string{}
	for _, h := range rec.Hosts {
		scores[h.Host] = map[string]string{}
		for _, s := range h.Scores {
			scores[h.Host][s.ID] = s.Status
		}
	}
	return rec.Passed, scores, rec.Hosts[0].Metrics
}

// TestSimKubernetes runs the kubectl runbooks and labs over real SSH
// against simulated fleets, and checks that their verdicts tell the
// cluster's story: the 8-GPU pod is Pending for want of a node with 8
// free GPUs, the sick host offers its MIG slices and fewer healthy GPUs,
// a pod sees the GPU it asked for and none without, and Kueue admits the
// 32-GPU job by borrowing (the pending-explained lab, on a fleet of its
// own, runs beside the rest: its step sleeps a minute).
func TestSimKubernetes(t *testing.T) {
	t.Run("runbooks and pod-cannot-see-gpu", func(t *testing.T) {
		t.Parallel()
		f, files := simFleet(t, sim.Config{Hosts: 4, Seed: 1})
		sick, healthy := sickAndHealthy(t, f)
		env := noEnv(t)
		inv := []string{"--inventory", files.Inventory, "-H", "@dgx"}
		first := f.Hosts()[0].Name
		clusterOverview(t, env, inv, first)
		pendingGPUPod(t, env, inv, first, sick)
		podCannotSeeGPU(t, env, inv, first, sick, healthy)

		passed, scores, m := kubeLab(t, env, "pod-cannot-see-gpu", inv)
		for host, s := range scores {
			for _, c := range []string{"sees-with-request", "scheduled", "no-request-no-gpu"} {
				if s[c] != "PASS" {
					t.Errorf("lab pod-cannot-see-gpu: %s %s is %s, want PASS", host, c, s[c])
				}
			}
		}
		if !passed || m["gpus_seen_with_request"] != 1.0 || m["gpus_seen_without_request"] != 0.0 || m["failed_scheduling"] != 0.0 {
			t.Errorf("lab pod-cannot-see-gpu: passed %v, metrics %v", passed, m)
		}
		r := run(t, env, append(append([]string{"exec"}, inv...), "--", "kubectl", "get", "pods", "-A")...)
		if strings.Contains(r.stdout, "gpulab-") {
			t.Errorf("the lab's pods are still there after its cleanup:\n%s", r.stdout)
		}
	})
	t.Run("pending-explained", func(t *testing.T) {
		t.Parallel()
		_, files := simFleet(t, sim.Config{Hosts: 4, Seed: 2})
		inv := []string{"--inventory", files.Inventory, "-H", "@dgx"}
		passed, scores, m := kubeLab(t, noEnv(t), "pending-explained", inv)
		for host, s := range scores {
			for _, c := range []string{"decided", "explained", "quota-honoured"} {
				if s[c] != "PASS" {
					t.Errorf("lab pending-explained: %s %s is %s, want PASS", host, c, s[c])
				}
			}
		}
		// Admitted by borrowing (32 of a 16-GPU quota), then no node
		// has 8 free GPUs for any of its 4 pods.
		if !passed || m["admitted"] != true || m["gpus_in_use"] != 32.0 || m["quota_fulfilment"] != 2.0 ||
			m["failed_scheduling"] != 4.0 || m["node_reasons"] != 4.0 {
			t.Errorf("lab pending-explained: passed %v, metrics %v", passed, m)
		}
	})
}

// clusterOverview: kubectl answers every step on the first host; the
// others skip the cluster-wide steps.
func clusterOverview(t *testing.T, env map[string]string, inv []string, first string) {
	t.Helper()
	v := kubeRunbook(t, env, "cluster-overview", inv, ExitOK)
	for host, checks := range v {
		for _, c := range []string{"nodes", "pods", "quota", "priority", "gpu-crds"} {
			want := "SKIPPED"
			if host == first {
				want = "PASS"
			}
			if checks[c].status != want {
				t.Errorf("runbook cluster-overview: %s %s is %s (%s), want %s", host, c, checks[c].status, checks[c].summary, want)
			}
		}
	}
	if s := v[first]["gpu-crds"].summary; s != "nvidia" {
		t.Errorf("runbook cluster-overview: gpu-crds found %q, want the GPU Operator's nvidia.com CRDs", s)
	}
}

// pendingGPUPod: the scheduler's reason is the fragmentation (every node
// short of nvidia.com/gpu); the MIG layout is the sick host's.
func pendingGPUPod(t *testing.T, env map[string]string, inv []string, first, sick string) {
	t.Helper()
	v := kubeRunbook(t, env, "pending-gpu-pod", inv, ExitFailed)
	if got := v[first]["scheduling"]; got != (verdict{"FAIL", "1 FailedScheduling event(s): Insufficient nvidia.com/gpu (4 node-times)"}) {
		t.Errorf("runbook pending-gpu-pod: scheduling on %s is %+v", first, got)
	}
	for _, c := range []string{"quota", "priority"} {
		if v[first][c].status != "PASS" {
			t.Errorf("runbook pending-gpu-pod: %s on %s is %+v", c, first, v[first][c])
		}
	}
	for host, checks := range v {
		want := "UNKNOWN" // nvidia-smi mig -lgi exits 6 where MIG is off
		if host == sick {
			want = "PASS"
		}
		if checks["mig-layout"].status != want {
			t.Errorf("runbook pending-gpu-pod: mig-layout on %s is %+v, want %s", host, checks["mig-layout"], want)
		}
	}
	if !strings.Contains(v[sick]["mig-layout"].summary, "g.") {
		t.Errorf("runbook pending-gpu-pod: the sick host's MIG layout: %+v", v[sick]["mig-layout"])
	}
	// The quota's refusal is in the cluster's events, though no check of
	// this runbook reads it (its events step selects FailedScheduling).
	r := run(t, env, append(append([]string{"exec"}, inv...), "--", "kubectl", "get", "events", "-A", "--field-selector", "reason=FailedCreate")...)
	if !strings.Contains(r.stdout, "job/eval-sweep") || !strings.Contains(r.stdout, "exceeded quota: gpu-quota") {
		t.Errorf("kubectl get events -A --field-selector reason=FailedCreate:\n%s\n%s", r.stdout, r.stderr)
	}
}

// podCannotSeeGPU: every host describes itself (describe node
// "$(hostname)"): the healthy ones offer 8 GPUs; the sick one its MIG
// slices and fewer healthy GPUs than it has (WARN); the device plugin runs.
func podCannotSeeGPU(t *testing.T, env map[string]string, inv []string, first, sick string, healthy []string) {
	t.Helper()
	// Nothing fails: the sick host's allocatable is a WARN (exit 0).
	v := kubeRunbook(t, env, "pod-cannot-see-gpu", inv, ExitOK)
	if v[first]["plugin"].status != "PASS" {
		t.Errorf("runbook pod-cannot-see-gpu: plugin on %s is %+v", first, v[first]["plugin"])
	}
	for _, h := range healthy {
		if got := v[h]["allocatable"]; got != (verdict{"PASS", "nvidia.com/gpu=8"}) {
			t.Errorf("runbook pod-cannot-see-gpu: allocatable on %s is %+v", h, got)
		}
	}
	got := v[sick]["allocatable"]
	if got.status != "WARN" || !strings.Contains(got.summary, "nvidia.com/mig-") || !strings.Contains(got.summary, "some devices unhealthy") {
		t.Errorf("runbook pod-cannot-see-gpu: allocatable on the sick %s is %+v", sick, got)
	}
	for host, checks := range v {
		for _, c := range []string{"driver", "runtime", "cdi"} {
			if checks[c].status != "PASS" {
				t.Errorf("runbook pod-cannot-see-gpu: %s on %s is %+v", c, host, checks[c])
			}
		}
	}
}
