package dgx

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpulab/gpulab/sim/spec"
	"github.com/gpulab/gpulab/step/parse"
)

// expect runs kubectl on the first host and checks its exit status and
// that stdout and stderr hold what they must.
func (f *kubeFleet) expect(t *testing.T, code int, stdout, stderr string, args ...string) string {
	t.Helper()
	out, errOut, got := f.kubectl(t, 0, "", args...)
	if got != code || !strings.Contains(out, stdout) || !strings.Contains(errOut, stderr) {
		t.Errorf("kubectl %s: exit %d\nstdout %q\nstderr %q\nwant exit %d, %q and %q", strings.Join(args, " "), got, out, errOut, code, stdout, stderr)
	}
	return out
}

// The pod-cannot-see-gpu lab's pods: without a request and with
// NVIDIA_VISIBLE_DEVICES=void nvidia-smi is not in the container (it
// fails to start, Failed, and its logs are not there); with
// nvidia.com/gpu: 1 it sees one GPU, the one the device plugin gave it;
// an NVIDIA image that asks for none sees every GPU (the leak).
func TestKubectlPodLifecycle(t *testing.T) {
	f := newKubeFleet(t, 1, 4)
	const image = "nvidia/cuda:12.4.1-base-ubuntu22.04"
	f.expect(t, 0, "", "", "-n", "default", "delete", "pod", "gpulab-nogpu", "--ignore-not-found", "--wait=true")
	f.expect(t, 0, "pod/gpulab-nogpu created\n", "", "-n", "default", "run", "gpulab-nogpu", "--image="+image, "--restart=Never",
		"--env=NVIDIA_VISIBLE_DEVICES=void", "--command", "--", "nvidia-smi", "-L")
	start := time.Now()
	f.expect(t, 1, "", "error: timed out waiting for the condition on pods/gpulab-nogpu\n",
		"-n", "default", "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/gpulab-nogpu", "--timeout=120s")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("wait for a phase that never comes took %v: the simulation knows it never comes", d)
	}
	f.expect(t, 0, "pod/gpulab-nogpu condition met\n", "", "-n", "default", "wait", "--for=jsonpath={.status.phase}=Failed", "pod/gpulab-nogpu", "--timeout=10s")
	if logs := f.expect(t, 0, "no such file or directory", "", "-n", "default", "logs", "gpulab-nogpu"); strings.Contains(logs, "GPU ") {
		t.Errorf("a pod with NVIDIA_VISIBLE_DEVICES=void logs %q", logs)
	}
	overrides := `{"spec":{"containers":[{"name":"gpulab-gpu","image":"` + image + `","command":["nvidia-smi","-L"],"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}`
	f.expect(t, 0, "pod/gpulab-gpu created\n", "", "-n", "default", "run", "gpulab-gpu", "--image="+image, "--restart=Never", "--overrides="+overrides)
	f.expect(t, 0, "pod/gpulab-gpu condition met\n", "", "-n", "default", "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/gpulab-gpu", "--timeout=180s")
	list, err := parse.ParseSMIList(f.ok(t, "-n", "default", "logs", "gpulab-gpu"))
	if err != nil || len(list.GPUs) != 1 || !strings.HasPrefix(list.GPUs[0].UUID, "GPU-") {
		t.Errorf("logs of the pod with one GPU: %+v, %v", list, err)
	}
	f.expect(t, 0, "pod/gpulab-leak created\n", "", "run", "gpulab-leak", "--image="+image, "--restart=Never", "--command", "--", "nvidia-smi", "-L")
	if list, err := parse.ParseSMIList(f.ok(t, "logs", "gpulab-leak")); err != nil || len(list.GPUs) != spec.GPUs {
		t.Errorf("an NVIDIA image that asks for no GPU sees %+v, %v; want every GPU (NVIDIA_VISIBLE_DEVICES=all)", list, err)
	}
	pod, err := parse.ParseDescribePod(f.ok(t, "describe", "pod", "gpulab-gpu"))
	if err != nil || pod.Status != "Succeeded" || pod.Node == "" || pod.Limits["nvidia.com/gpu"] != "1" {
		t.Errorf("describe pod gpulab-gpu: %+v, %v", pod, err)
	}
	evs := f.events(t, "--field-selector", "involvedObject.kind=Pod")
	reasons := map[string]int{}
	for _, e := range evs {
		reasons[e.Reason]++
	}
	if reasons["FailedScheduling"] != 0 || reasons["Scheduled"] != 3 || reasons["Failed"] != 1 || reasons["Started"] != 2 {
		t.Errorf("events of the test pods: %v", reasons)
	}
	f.expect(t, 0, "pod \"gpulab-nogpu\" deleted\npod \"gpulab-gpu\" deleted\npod \"gpulab-leak\" deleted\n", "",
		"-n", "default", "delete", "pod", "gpulab-nogpu", "gpulab-gpu", "gpulab-leak", "--ignore-not-found", "--wait=false")
	f.expect(t, 0, "", "No resources found in default namespace.\n", "get", "pods")
}

// A pod no node has room for stays Pending and says why; deleting a Job
// frees its GPUs: the scheduler then places the 8-GPU pod that waited,
// and the quota lets ml-team's refused Job create its pod.
func TestKubectlControllers(t *testing.T) {
	f := newKubeFleet(t, 1, 4)
	big := `--overrides={"spec":{"containers":[{"name":"big","resources":{"limits":{"nvidia.com/gpu":"8"}}}]}}`
	f.expect(t, 0, "pod/big created\n", "", "run", "big", "--image=busybox", "--restart=Never", big, "--command", "--", "sleep", "infinity")
	if evs := f.events(t, "--field-selector", "involvedObject.name=big"); len(evs) != 1 || evs[0].Reason != "FailedScheduling" ||
		!strings.HasPrefix(evs[0].Message, "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.") {
		t.Errorf("events of a pod that fits nowhere: %+v", evs)
	}
	f.expect(t, 1, "", "error: timed out waiting for the condition on pods/big\n", "wait", "--for=condition=Ready", "pod/big", "--timeout=30s")

	// The node holding one 4-GPU shard and nothing else frees all 8.
	var shard string
	for _, p := range strings.Fields(f.ok(t, "-n", "ml-team", "get", "pods", "-o", "jsonpath={range .items[*]}{.metadata.labels.job-name}/{.spec.nodeName} {end}")) {
		job, node, _ := strings.Cut(p, "/")
		if n := f.node(t, node); job != "" && n.Allocated["nvidia.com/gpu"].Requests == "4" {
			shard = job
		}
	}
	if shard == "" {
		t.Fatal("no node runs a pretraining shard alone")
	}
	f.expect(t, 0, fmt.Sprintf("job.batch %q deleted\n", shard), "", "-n", "ml-team", "delete", "job", shard)
	phase := f.ok(t, "-n", "research", "get", "pods", "-l", "job-name=llm-finetune-8gpu", "-o", "jsonpath={.items[*].status.phase}")
	if phase != "Running" {
		t.Errorf("the 8-GPU pod that waited is %q once a node has 8 free, want Running", phase)
	}
	sweep := f.ok(t, "-n", "ml-team", "get", "pods", "-l", "job-name=eval-sweep", "-o", "name")
	if strings.Count(sweep, "pod/eval-sweep-") != 1 {
		t.Errorf("eval-sweep's pods once the quota has room: %q, want one", sweep)
	}
	for _, e := range f.events(t, "-n", "ml-team") {
		if e.Reason == "SuccessfulCreate" && e.Object != "job/eval-sweep" {
			t.Errorf("unexpected event %+v", e)
		}
	}
	if got := f.ok(t, "get", "events", "-A", "--field-selector", "reason=FailedScheduling,involvedObject.name=big"); !strings.Contains(got, "pod/big") {
		t.Errorf("the pod that still fits nowhere lost its FailedScheduling:\n%s", got)
	}
}

// Kueue: the pending-explained lab's 32-GPU Job is admitted by team-a's
// ClusterQueue borrowing team-b's idle 16, then its pods find no node
// with 8 free GPUs; a second one waits for quota, and gets it when the
// first is deleted.
func TestKueueAdmission(t *testing.T) {
	f := newKubeFleet(t, 4, 4)
	job := func(ns, name string) string {
		return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\n  labels:\n    kueue.x-k8s.io/queue-name: " + ns +
			"\nspec:\n  parallelism: 4\n  completions: 4\n  suspend: true\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n" +
			"      - name: work\n        image: busybox:1.36\n        command: [sleep, '300']\n        resources:\n          limits:\n            nvidia.com/gpu: 8\n"
	}
	usage := func(cq string) string {
		return f.ok(t, "get", "clusterqueue", cq, "-o", `jsonpath={.status.flavorsUsage[*].resources[?(@.name=="nvidia.com/gpu")].total}`)
	}
	if out, errOut, code := f.kubectl(t, 0, job("team-a", "gpulab-32gpu"), "-n", "team-a", "create", "-f", "-"); code != 0 || out != "job.batch/gpulab-32gpu created\n" {
		t.Fatalf("create -f -: exit %d, %q %q", code, out, errOut)
	}
	if got := usage("team-a"); got != "32" {
		t.Errorf("team-a's usage after admission = %q, want 32 (16 borrowed)", got)
	}
	reasons := map[string]int{}
	for _, e := range f.events(t, "-n", "team-a") {
		reasons[e.Reason]++
		if e.Reason == "FailedScheduling" && (e.Scheduling == nil || len(e.Scheduling.Reasons) == 0 || strings.TrimSpace(e.Message) == "") {
			t.Errorf("unexplained FailedScheduling: %+v", e)
		}
	}
	want := map[string]int{"CreatedWorkload": 1, "QuotaReserved": 1, "Admitted": 1, "Started": 1, "Resumed": 1, "SuccessfulCreate": 4, "FailedScheduling": 4}
	if fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Errorf("team-a's events: %v, want %v", reasons, want)
	}
	if _, errOut, code := f.kubectl(t, 0, job("team-a", "gpulab-32gpu"), "-n", "team-a", "create", "-f", "-"); code != 1 ||
		!strings.Contains(errOut, `jobs.batch "gpulab-32gpu" already exists`) {
		t.Errorf("creating the Job again: exit %d, %q", code, errOut)
	}
	f.kubectl(t, 0, job("team-b", "wait-b"), "-n", "team-b", "create", "-f", "-")
	if evs := f.events(t, "-n", "team-b", "--field-selector", "reason=Pending"); len(evs) != 1 || evs[0].Object != "workload/job-wait-b-"+digest("wait-b", "Job", uuidOf("job", "team-b", "wait-b"))[:5] ||
		!strings.Contains(evs[0].Message, "insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 32 more needed") {
		t.Errorf("team-b's Pending events with the cohort's quota all used: %+v", evs)
	}
	f.expect(t, 0, "job.batch \"gpulab-32gpu\" deleted\n", "", "-n", "team-a", "delete", "job", "gpulab-32gpu", "--ignore-not-found", "--wait=false")
	if a, b := usage("team-a"), usage("team-b"); a != "0" || b != "32" {
		t.Errorf("after the delete: team-a uses %q, team-b %q; want 0 and 32 (its Job admitted)", a, b)
	}
	names := strings.Fields(f.ok(t, "api-resources", "--api-group=kueue.x-k8s.io", "-o", "name"))
	var crds []string
	for _, c := range strings.Fields(f.ok(t, "get", "crd", "-o", "name")) {
		if strings.HasSuffix(c, ".kueue.x-k8s.io") {
			crds = append(crds, strings.TrimPrefix(c, "customresourcedefinition.apiextensions.k8s.io/"))
		}
	}
	if len(names) == 0 || fmt.Sprint(names) != fmt.Sprint(crds) || !strings.Contains(strings.Join(names, " "), "clusterqueues.kueue.x-k8s.io") {
		t.Errorf("api-resources of Kueue %v, its CRDs %v", names, crds)
	}
}

// Every host's kubectl uses the one cluster at once (run with -race).
func TestKubectlConcurrent(t *testing.T) {
	f := newKubeFleet(t, 1, 4)
	var wg sync.WaitGroup
	for i := range f.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				name := fmt.Sprintf("c%d-%d", i, k)
				for _, args := range [][]string{{"run", name, "--image=busybox", "--command", "--", "sleep", "60"},
					{"get", "pods", "-A", "-o", "wide"}, {"describe", "nodes"}, {"get", "events", "-A"}, {"delete", "pod", name}} {
					if _, errOut, code := f.kubectl(t, i, "", args...); code != 0 {
						t.Errorf("%s: kubectl %v: exit %d, %s", f.names[i], args, code, errOut)
					}
				}
			}
		}()
	}
	wg.Wait()
	f.expect(t, 0, "", "No resources found in default namespace.\n", "get", "pods")
}

// A cancelled wait stops at once.
func TestKubectlWaitCancel(t *testing.T) {
	f := newKubeFleet(t, 1, 2)
	h := f.hosts[0]
	h.Pace = time.Hour
	f.ok(t, "run", "forever", "--image=busybox")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		code, _ := h.Run(ctx, IO{}, []string{"kubectl", "wait", "--for=delete", "pod/forever", "--timeout=1h"})
		done <- code
	}()
	cancel()
	select {
	case code := <-done:
		if code != ExitCancelled {
			t.Errorf("cancelled wait: exit %d, want %d", code, ExitCancelled)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled wait did not stop")
	}
}
