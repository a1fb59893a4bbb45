package dgx

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/sim/spec"
	"github.com/gpulab/gpulab/step/parse"
)

// kubeFleet is the hosts of a simulated fleet sharing one cluster, the
// cluster's clock stopped at its epoch.
type kubeFleet struct {
	c      *Cluster
	names  []string
	faults []spec.Faults
	hosts  []*Host
	sick   int
}

func newKubeFleet(t testing.TB, seed int64, n int) *kubeFleet {
	t.Helper()
	f := &kubeFleet{}
	f.sick, f.faults = Plan(seed, n)
	for i := 0; i < n; i++ {
		f.names = append(f.names, fmt.Sprintf("dgx%02d", i+1))
	}
	f.c = NewCluster(f.names, f.faults)
	epoch := f.c.epoch
	f.c.Now = func() time.Time { return epoch }
	for i, name := range f.names {
		h := New(name, i, f.faults[i])
		h.Cluster, h.Pace = f.c, time.Microsecond
		f.hosts = append(f.hosts, h)
	}
	return f
}

// kubectl runs kubectl ARGS on host i with stdin.
func (f *kubeFleet) kubectl(t testing.TB, i int, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code, ok := f.hosts[i].Run(context.Background(), IO{Stdin: strings.NewReader(stdin), Stdout: &o, Stderr: &e}, append([]string{"kubectl"}, args...))
	if !ok {
		t.Fatal("the host has no kubectl")
	}
	return o.String(), e.String(), code
}

// ok runs kubectl on the first host and fails t unless it exits 0.
func (f *kubeFleet) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := f.kubectl(t, 0, "", args...)
	if code != 0 {
		t.Fatalf("kubectl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func (f *kubeFleet) node(t *testing.T, name string) *parse.Node {
	t.Helper()
	n, err := parse.ParseDescribeNode(f.ok(t, "describe", "node", name))
	if err != nil {
		t.Fatalf("describe node %s: %v", name, err)
	}
	return n
}

func (f *kubeFleet) events(t *testing.T, args ...string) []parse.Event {
	t.Helper()
	evs, err := parse.ParseGetEvents(f.ok(t, append([]string{"get", "events"}, args...)...))
	if err != nil {
		t.Fatalf("get events %v: %v", args, err)
	}
	return evs
}

func gpuOf(n *parse.Node, r string) (capacity, allocatable, requested int) {
	g := n.GPU[r]
	for _, p := range []struct {
		v   *int
		out *int
	}{{g.Capacity, &capacity}, {g.Allocatable, &allocatable}, {g.Requested, &requested}} {
		if p.v != nil {
			*p.out = *p.v
		}
	}
	return
}

// The cluster's nodes are the fleet's hosts, and every host sees the
// same cluster.
func TestClusterNodesAreTheFleet(t *testing.T) {
	for _, n := range []int{1, 4, 12} {
		f := newKubeFleet(t, 3, n)
		var want []string
		for _, name := range f.names {
			want = append(want, "node/"+name)
		}
		if got := strings.Fields(f.ok(t, "get", "nodes", "-o", "name")); !slices.Equal(got, want) {
			t.Errorf("%d hosts: get nodes -o name = %v, want %v", n, got, want)
		}
		table := f.ok(t, "get", "nodes")
		for i := range f.hosts {
			if out, _, _ := f.kubectl(t, i, "", "get", "nodes"); out != table {
				t.Errorf("%d hosts: %s's get nodes differs from %s's:\n%s\n%s", n, f.names[i], f.names[0], out, table)
			}
		}
		rows := strings.Split(strings.TrimSpace(table), "\n")[1:]
		for i, r := range rows {
			if fl := strings.Fields(r); len(fl) != 5 || fl[0] != f.names[i] || fl[1] != "Ready" || fl[4] != kubeServerVersion {
				t.Errorf("%d hosts: get nodes row %q, want %s Ready ... %s", n, r, f.names[i], kubeServerVersion)
			}
		}
	}
}

// The GPU story: every node has 2-6 GPUs in use, none has 8 free
// (though the fleet has more than 8 free in all: fragmentation), the
// healthy nodes offer 8 whole GPUs, the sick one its MIG slices and its
// healthy whole GPUs; the 8-GPU pod is Pending for that reason, and the
// quota refuses ml-team's Job.
func TestClusterGPUStory(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		f := newKubeFleet(t, seed, 4)
		free := 0
		for i, name := range f.names {
			n := f.node(t, name)
			c, a, r := gpuOf(n, "nvidia.com/gpu")
			free += a - r
			if r < 2 || r > 6 || a-r >= 8 {
				t.Errorf("seed %d: %s requests %d of %d allocatable GPUs, want 2-6 in use and fewer than 8 free", seed, name, r, a)
			}
			mig, bad := 0, map[int]bool{}
			for g := 0; g < spec.GPUs; g++ {
				if f.faults[i].MIGOn(g) {
					mig++
				}
			}
			for _, x := range f.faults[i].XIDs {
				if !f.faults[i].MIGOn(x.GPU) && !deviceHealthyXid(x.Code) {
					bad[x.GPU] = true
				}
			}
			if c != 8-mig || a != c-len(bad) {
				t.Errorf("seed %d: %s nvidia.com/gpu %d/%d (allocatable/capacity), want %d/%d", seed, name, a, c, 8-mig-len(bad), 8-mig)
			}
			for k, v := range map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.memory": "40960",
				"nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.count": strconv.Itoa(c)} {
				if n.Labels[k] != v {
					t.Errorf("seed %d: %s label %s=%q, want %q", seed, name, k, n.Labels[k], v)
				}
			}
		}
		if free < 8 {
			t.Errorf("seed %d: %d GPUs free in the fleet, want at least 8 (free, but fragmented)", seed, free)
		}
		pendingStoryHolds(t, f)
	}
}

// pendingStoryHolds checks the two GPU jobs that do not run.
func pendingStoryHolds(t *testing.T, f *kubeFleet) {
	t.Helper()
	evs := f.events(t, "-A", "--field-selector", "reason=FailedScheduling")
	n := len(f.names)
	if len(evs) != 1 || !strings.HasPrefix(evs[0].Object, "pod/llm-finetune-8gpu-") || evs[0].Scheduling == nil ||
		len(evs[0].Scheduling.Reasons) != 1 || evs[0].Scheduling.Reasons[0] != (parse.Reason{Nodes: n, Reason: "Insufficient nvidia.com/gpu", Resource: "nvidia.com/gpu"}) ||
		*evs[0].Scheduling.Total != n || *evs[0].Scheduling.Available != 0 ||
		evs[0].Scheduling.Preemption != fmt.Sprintf("0/%d nodes are available: %d No preemption victims found for incoming pod.", n, n) {
		t.Errorf("FailedScheduling events: %+v, want the 8-GPU pod's, every node short of nvidia.com/gpu", evs)
	}
	var used int
	for _, q := range strings.Fields(f.ok(t, "-n", "ml-team", "get", "pods", "-o", `jsonpath={.items[*].spec.containers[*].resources.requests.nvidia\.com/gpu}`)) {
		v, _ := strconv.Atoi(q)
		used += v
	}
	quota := f.ok(t, "get", "resourcequota", "-A")
	if want := fmt.Sprintf("requests.nvidia.com/gpu: %d/%d", used, used+2); !strings.Contains(quota, want) {
		t.Errorf("get resourcequota -A:\n%s\nwant %q", quota, want)
	}
	ml := f.events(t, "-n", "ml-team")
	if len(ml) != 1 || ml[0].Reason != "FailedCreate" || ml[0].Object != "job/eval-sweep" ||
		!strings.Contains(ml[0].Message, fmt.Sprintf("exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=%d, limited: requests.nvidia.com/gpu=%d", used, used+2)) {
		t.Errorf("-n ml-team get events: %+v, want the quota's refusal of job/eval-sweep", ml)
	}
	pods := f.ok(t, "get", "pods", "-A")
	if strings.Count(pods, " Pending ") != 1 || strings.Contains(pods, "eval-sweep") {
		t.Errorf("get pods -A: want one Pending pod and none of eval-sweep:\n%s", pods)
	}
}

// The sick host's MIG resources are its MIG layout: what nvidia-smi mig
// -lgi lists there, by profile.
func TestSickNodeMIGMatchesSMI(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		f := newKubeFleet(t, seed, 4)
		h := f.hosts[f.sick]
		var o bytes.Buffer
		h.Run(context.Background(), IO{Stdout: &o}, []string{"nvidia-smi", "mig", "-lgi"})
		lgi, err := parse.ParseMIGInstances(o.String(), false)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{}
		for _, r := range lgi.Rows {
			want["nvidia.com/mig-"+r.Name]++
		}
		n := f.node(t, f.names[f.sick])
		got := map[string]int{}
		for r := range n.GPU {
			if strings.HasPrefix(r, "nvidia.com/mig-") {
				c, a, _ := gpuOf(n, r)
				if c != a {
					t.Errorf("seed %d: %s capacity %d, allocatable %d", seed, r, c, a)
				}
				got[r] = c
			}
		}
		if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("seed %d: describe node %s MIG resources %v, nvidia-smi mig -lgi there %v", seed, f.names[f.sick], got, want)
		}
		for i := range f.names {
			if i != f.sick && len(f.node(t, f.names[i]).GPU) != 1 {
				t.Errorf("seed %d: healthy %s offers %v, want nvidia.com/gpu only", seed, f.names[i], f.node(t, f.names[i]).GPU)
			}
		}
	}
}

// What the runbooks and labs run parses with gpulab's parsers, on every
// host.
func TestKubectlAnswersParse(t *testing.T) {
	f := newKubeFleet(t, 2, 4)
	pending := strings.Fields(f.ok(t, "-n", "research", "get", "pods", "--field-selector", "status.phase=Pending", "-o", "name"))
	if len(pending) != 1 {
		t.Fatalf("pending pods in research: %v", pending)
	}
	for i, name := range f.names {
		for _, tc := range []struct {
			kind string
			args []string
		}{
			{"kubectl-describe-node", []string{"describe", "node", name}},
			{"kubectl-get-events", []string{"get", "events", "-A", "--field-selector", "reason=FailedScheduling"}},
			{"kubectl-get-events", []string{"get", "events", "-A"}},
			{"kubectl-get-events", []string{"-n", "ml-team", "get", "events"}},
			{"kubectl-get-events", []string{"-n", "research", "get", "events", "--field-selector", "involvedObject.kind=Pod"}},
			{"kubectl-describe-pod", []string{"-n", "research", "describe", "pod", strings.TrimPrefix(pending[0], "pod/")}},
		} {
			out, errOut, code := f.kubectl(t, i, "", tc.args...)
			k, _ := parse.Lookup(tc.kind)
			v, err := k.Parse(out)
			if code != 0 || err != nil {
				t.Errorf("%s: kubectl %v: exit %d (%s), %s parser: %v", name, tc.args, code, errOut, tc.kind, err)
			}
			if p, ok := v.(*parse.Pod); ok && (p.Status != "Pending" || p.Requests["nvidia.com/gpu"] != "8" || len(p.Events) != 1) {
				t.Errorf("describe pod: %+v, want Pending, 8 GPUs, its FailedScheduling", p)
			}
		}
	}
	all := f.ok(t, "describe", "nodes")
	if got := strings.Count("\n"+all, "\nName:"); got != 4 || !strings.Contains(all, "Events:              <none>\n\n\nName:") {
		t.Errorf("describe nodes: %d nodes, want 4 separated by two blank lines", got)
	}
}

func TestKubectlJSONPath(t *testing.T) {
	f := newKubeFleet(t, 1, 4)
	alloc := make([]string, 4)
	for i, name := range f.names {
		_, a, _ := gpuOf(f.node(t, name), "nvidia.com/gpu")
		alloc[i] = strconv.Itoa(a)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "nodes", "-o", `jsonpath={.items[*].status.allocatable.nvidia\.com/gpumem}`}, ""},
		{[]string{"get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.labels.nvidia\.com/gpu\.replicas}{"\n"}{end}`}, "\n\n\n\n"},
		{[]string{"get", "nodes", "-o", `jsonpath={.items[*].status.allocatable.nvidia\.com/gpu}`}, strings.Join(alloc, " ")},
		{[]string{"get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}:{.status.conditions[?(@.type=="Ready")].status} {end}`},
			"dgx01:True dgx02:True dgx03:True dgx04:True "},
		{[]string{"get", "clusterqueue", "team-a", "-o", `jsonpath={.status.flavorsUsage[*].resources[?(@.name=="nvidia.com/gpu")].total}`}, "0"},
		{[]string{"get", "node", "dgx02", "-o", "jsonpath={.metadata.name} {.status.nodeInfo.kubeletVersion}"}, "dgx02 " + kubeServerVersion},
		{[]string{"get", "pods", "-n", "research", "--field-selector", "status.phase=Pending", "-o", "jsonpath={.items[0].status.phase}"}, "Pending"},
	} {
		if got := f.ok(t, tc.args...); got != tc.want {
			t.Errorf("kubectl %v = %q, want %q", tc.args, got, tc.want)
		}
	}
	// (A range without its end is no error: kubectl's JSONPath, which the
	// simulator now uses, runs it to the template's end.)
	for _, bad := range []string{"{.items[", `{"\q"}`, "{.a b}"} {
		if nodes, err := parseJSONPath(bad); err == nil {
			if _, err = executeJSONPath(nodes, map[string]any{}); err == nil {
				t.Errorf("jsonpath %q: no error", bad)
			}
		}
	}
}

// Errors as kubectl gives them: its words, its exit status.
func TestKubectlErrors(t *testing.T) {
	f := newKubeFleet(t, 1, 4)
	pending := strings.TrimPrefix(strings.TrimSpace(f.ok(t, "-n", "research", "get", "pods", "--field-selector", "status.phase=Pending", "-o", "name")), "pod/")
	for _, tc := range []struct {
		args []string
		says string // in stderr
	}{
		{[]string{"get"}, "You must specify the type of resource to get."},
		{[]string{"get", "pods", "--bogus"}, "error: unknown flag: --bogus\nSee 'kubectl get --help' for usage.\n"},
		{[]string{"get", "pods", "-z"}, "error: unknown shorthand flag: 'z' in -z\n"},
		{[]string{"get", "pods", "-n"}, "error: flag needs an argument: 'n' in -n\n"},
		{[]string{"get", "foo"}, "error: the server doesn't have a resource type \"foo\"\n"},
		{[]string{"get", "clusterpolicies"}, "serves no clusterpolicies.nvidia.com objects"},
		{[]string{"gte", "pods"}, "error: unknown command \"gte\" for \"kubectl\"\n\nDid you mean this?\n\tget\n"},
		{[]string{"cordon", "dgx01"}, "error: kubectl cordon is not simulated"},
		{[]string{"get", "pod", "nope"}, "Error from server (NotFound): pods \"nope\" not found\n"},
		{[]string{"describe", "node", "nope"}, "Error from server (NotFound): nodes \"nope\" not found\n"},
		{[]string{"get", "pods", "-o", "json"}, "does not print objects as json"},
		{[]string{"get", "pods", "-o", "bogus"}, "error: unable to match a printer suitable for the output format \"bogus\""},
		{[]string{"get", "pods", "--field-selector", "foo=bar"}, "field label not supported: foo"},
		{[]string{"get", "events", "-o", "wide"}, "prints events only as a table, not -o wide"},
		{[]string{"get", "pods", "-w"}, "does not watch"},
		{[]string{"version", "-o", "json"}, "prints its version as text only"},
		{[]string{"run", "x"}, "error: required flag(s) \"image\" not set\n"},
		{[]string{"run", "x", "--image=busybox", "--command", "--", "python3", "-c", "1"}, "cannot run \"python3\" in a container"},
		{[]string{"run", "x", "--image=busybox", "-it"}, "does not attach to pods"},
		{[]string{"-n", "nowhere", "run", "x", "--image=busybox"}, "Error from server (NotFound): namespaces \"nowhere\" not found\n"},
		{[]string{"-n", "research", "logs", pending}, "is waiting to start: ContainerCreating\n"},
		{[]string{"-n", "research", "exec", pending, "--", "nvidia-smi", "-L"}, "Error from server (BadRequest): pod " + pending + " does not have a host assigned\n"},
		{[]string{"wait", "pod/x"}, "error: --for must be specified\n"},
		{[]string{"api-resources"}, "use --api-group"},
		{[]string{"create", "-f", "job.yaml"}, "reads manifests from standard input only"},
		{[]string{"delete", "pod", "nope"}, "Error from server (NotFound): pods \"nope\" not found\n"},
		{[]string{"-n", "ml-team", "run", "x", "--image=busybox", `--overrides={"spec":{"containers":[{"name":"x","resources":{"limits":{"nvidia.com/gpu":"4"}}}]}}`},
			"Error from server (Forbidden): pods \"x\" is forbidden: exceeded quota: gpu-quota"},
		{[]string{"run", "x", "--image=busybox", `--overrides={"spec":{"priorityClassName":"inference-high","containers":[{"name":"x","resources":{"limits":{"nvidia.com/gpu":"8"}}}]}}`},
			"does not preempt"},
	} {
		out, errOut, code := f.kubectl(t, 0, "", tc.args...)
		if code != 1 || !strings.Contains(errOut, tc.says) || out != "" {
			t.Errorf("kubectl %v: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, code, out, errOut, tc.says)
		}
	}
	rec := recording(recKubectl)
	client := strings.Join(strings.SplitAfter(rec, "\n")[:2], "")
	if got := f.ok(t, "version", "--client"); got != client {
		t.Errorf("version --client = %q, want the recording's %q", got, client)
	}
	if got := f.ok(t, "version"); got != client+"Server Version: "+kubeServerVersion+"\n" {
		t.Errorf("version = %q", got)
	}
}

// A fleet of 1,000 hosts: kubectl's answers cost a pass over the
// objects, not one per node (describe nodes, the scheduler).
func BenchmarkKubectl1000Hosts(b *testing.B) {
	f := newKubeFleet(b, 1, 1000)
	for _, seq := range [][][]string{{{"describe", "nodes"}}, {{"get", "pods", "-A", "-o", "wide"}},
		{{"run", "x", "--image=busybox"}, {"delete", "pod", "x"}}} {
		b.Run(fmt.Sprint(seq), func(b *testing.B) {
			for b.Loop() {
				for _, args := range seq {
					if _, errOut, code := f.kubectl(b, 0, "", args...); code != 0 {
						b.Fatalf("kubectl %v: exit %d, %s", args, code, errOut)
					}
				}
			}
		})
	}
}
