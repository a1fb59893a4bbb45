package runbooks_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
)

const fx = "../testdata/fixtures/"

// host is what a stand-in host's commands print: fixture files, or a
// failure.
type host struct {
	topo, numa, smi, query, kernel, rdma, lgi, links string
	smiFails                                         bool
	// kubectl maps a kubectl subcommand ("describe node", "get events",
	// "get pods") to a fixture file; absent means no kubectl on the host.
	kubectl map[string]string
	// kubectlNoConfig: kubectl is there, with no kubeconfig (what it
	// prints then, recorded, and exit 1).
	kubectlNoConfig bool
	ctk             bool // nvidia-ctk installed
	// hang names a tool ("dmesg") that hangs instead of answering, after
	// writing a line into the FIFO at started (the test's event).
	hang, started string
}

// standIns writes nvidia-smi, numactl, dmesg and rdma scripts that print
// real recorded outputs, one directory per host, put first on PATH by sshd.
func standIns(t *testing.T, hosts []host) func(int) map[string]string {
	t.Helper()
	root := t.TempDir()
	for i, h := range hosts {
		dir := filepath.Join(root, fmt.Sprint(i))
		os.MkdirAll(dir, 0o755)
		abs := func(f string) string {
			if f == "" {
				return "/dev/null"
			}
			if filepath.IsAbs(f) {
				return f
			}
			p, _ := filepath.Abs(fx + f)
			return p
		}
		smi := fmt.Sprintf("#!/bin/sh\ncase \"$*\" in\n\"topo -m\") cat %s ;;\n\"-q\") cat %s ;;\n\"mig -lgi\") cat %s ;;\n\"\") cat %s ;;\n*) echo \"unexpected: $*\" >&2; exit 2 ;;\nesac\n", abs(h.topo), abs(h.query), abs(h.lgi), abs(h.smi))
		if h.smiFails {
			smi = "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\"\nexit 9\n"
		}
		write := func(name, body string) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		write("nvidia-smi", smi)
		write("numactl", "#!/bin/sh\ncat "+abs(h.numa)+"\n")
		write("dmesg", "#!/bin/sh\ncat "+abs(h.kernel)+"\n")
		write("rdma", "#!/bin/sh\ncat "+abs(h.rdma)+"\n")
		write("ip", "#!/bin/sh\ncat "+abs(h.links)+"\n")
		if h.hang != "" {
			write(h.hang, "#!/bin/sh\necho started > "+h.started+"\nexec sleep 60\n")
		}
		if h.ctk {
			write("nvidia-ctk", "#!/bin/sh\necho 'NVIDIA Container Toolkit CLI version 1.17.8'\n")
		}
		if h.kubectl == nil && !h.kubectlNoConfig && h.hang != "kubectl" {
			// No kubectl on this host, whatever the machine running the
			// test has in /usr/bin.
			write("kubectl", "#!/bin/sh\necho 'sh: 1: kubectl: not found' >&2\nexit 127\n")
		}
		if h.kubectlNoConfig {
			write("kubectl", "#!/bin/sh\ncat "+abs("kubectl-no-config/kubectl-1.32-get-pods-no-kubeconfig.stderr.txt")+" >&2\nexit 1\n")
		}
		if h.kubectl != nil {
			var b strings.Builder
			b.WriteString("#!/bin/sh\ncase \"$1 $2\" in\n")
			for sub, f := range h.kubectl {
				fmt.Fprintf(&b, "\"%s\"*) cat %s ;;\n", sub, abs(f))
			}
			b.WriteString("*) echo 'No resources found' ;;\nesac\n")
			write("kubectl", b.String())
		}
	}
	return func(i int) map[string]string {
		return map[string]string{"PATH": filepath.Join(root, fmt.Sprint(i)) + ":/usr/local/bin:/usr/bin:/bin"}
	}
}

func fleet(t *testing.T, hosts []host) (*orchestrator.Engine, []orchestrator.Target) {
	f := sshtest.Start(t, len(hosts), sshtest.Options{EnvFor: standIns(t, hosts)})
	var ts []orchestrator.Target
	for i, s := range f.Servers {
		ts = append(ts, orchestrator.Target{Name: fmt.Sprintf("gpu%02d", i+1), HostName: s.Addr, Port: s.Port, User: f.User,
			IdentityFiles: []string{f.ClientKey}, Explicit: true, KnownHosts: []string{f.KnownHosts},
			ConnectTimeout: 5 * time.Second, CommandTimeout: 30 * time.Second, InactivityTimeout: 30 * time.Second})
	}
	return &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 16}, ts
}

func load(t *testing.T, id string) runbooks.Runbook {
	t.Helper()
	rbs, err := runbooks.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, ok := runbooks.Find(rbs, id)
	if !ok {
		t.Fatalf("no runbook %s", id)
	}
	return rb
}

func groups(folded []runbooks.Folded, check string) string {
	var parts []string
	for _, f := range folded {
		if f.Check != check {
			continue
		}
		for _, g := range f.Groups {
			parts = append(parts, fmt.Sprintf("%s %s: %s", g.Status, g.Hosts, g.Summary))
		}
	}
	return strings.Join(parts, " | ")
}

func TestTopologyRunbook(t *testing.T) {
	nv12 := host{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt", numa: "numactl-hardware/asus-esc8000a-e12-2node-epyc9374f.txt"}
	// gpu04's topology is the real HGX one with one NVLink pair taken down
	// (GPU3–GPU5 at SYS), as nvidia-smi shows a failed link.
	broken := t.TempDir() + "/topo-link-down.txt"
	orig, _ := os.ReadFile(fx + nv12.topo)
	ls := strings.Split(string(orig), "\n")
	ls[4] = strings.Replace(ls[4], "NV12    NV12     X      NV12    NV12", "NV12    NV12     X      NV12    SYS ", 1)
	ls[6] = strings.Replace(ls[6], "NV12    NV12    NV12    NV12     X ", "NV12    NV12    NV12    SYS      X ", 1)
	os.WriteFile(broken, []byte(strings.Join(ls, "\n")), 0o644)
	e, ts := fleet(t, []host{nv12, nv12, nv12,
		{topo: broken, numa: "numactl-hardware/asus-esc8000a-e12-2node-epyc9374f.txt"},
		{smiFails: true, numa: "numactl-hardware/puget-wrx90-1node-threadripper.txt"},
		{topo: "nvidia-smi-topo-m/v100-sxm2-8gpu-hybrid-cube-mesh-nv1-nv2-mlx5-drv440.txt", numa: "numactl-hardware/asus-esc8000a-e12-2node-epyc9374f.txt"}})
	ts = append(ts, orchestrator.Target{Name: "gpu07", HostName: "127.0.0.1", Port: sshtest.FreePort(t), User: "root", ConnectTimeout: time.Second, KnownHosts: []string{"/dev/null"}})
	rb := load(t, "topology")
	var mu sync.Mutex
	early := map[int]runbooks.HostRun{}
	runs := runbooks.Run(context.Background(), e, ts, rb, runbooks.RunOptions{OnHost: func(i int, r runbooks.HostRun) {
		mu.Lock()
		defer mu.Unlock()
		if _, dup := early[i]; dup {
			t.Errorf("OnHost called twice for host %d", i)
		}
		early[i] = r
	}})
	// Every host, the unreachable one included, reached OnHost with the
	// verdicts it ends with.
	for i, r := range runs {
		got, ok := early[i]
		if !ok || got.Host != r.Host || got.Class != r.Class || len(got.Verdicts) != len(r.Verdicts) || got.Verdicts[0].Summary != r.Verdicts[0].Summary {
			t.Errorf("OnHost for host %d = %+v (called: %v), Run returned %+v", i, got, ok, r)
		}
	}
	folded := runbooks.Fold(rb, runs)
	mesh := groups(folded, "nvlink-mesh")
	for _, want := range []string{"PASS gpu[01-03]: 8 GPUs, NV12 full mesh", "FAIL gpu04: GPU3–GPU5 SYS (NVLink down)", "UNKNOWN gpu05: no evidence: step topo exited 9",
		"PASS gpu06: 8 GPUs, regular partial mesh: each NVLinked to 4 peers over 6 links", "UNKNOWN gpu07: no evidence: step topo did not run: host refused"} {
		if !strings.Contains(mesh, want) {
			t.Errorf("nvlink-mesh lacks %q:\n%s", want, mesh)
		}
	}
	if near := groups(folded, "nic-nearest"); !strings.Contains(near, "WARN gpu[01-04]: GPU0, GPU1, GPU4, GPU5, GPU6, GPU7 reach every NIC only across sockets (SYS)") {
		t.Errorf("nic-nearest:\n%s", near)
	}
	// Evidence points at the facts.
	v := runs[3].Verdicts[0]
	if v.Status != step.Fail || len(v.Evidence) == 0 || v.Evidence[0].Step != "topo" || !strings.Contains(v.Hint, "nvlink --status") {
		t.Errorf("gpu04 verdict = %+v", v)
	}
	if runbooks.Worst(runs) != step.Fail {
		t.Errorf("worst = %s", runbooks.Worst(runs))
	}
}

// cleanKernelLog stands in for the kernel log of a host whose driver
// loaded and said nothing since (no recorded fixture without an Xid
// exists): the banner line as sim/dgx prints it with dmesg -T.
const cleanKernelLog = `[Thu Dec  2 08:00:04 2026] nvidia: loading out-of-tree module taints kernel.
[Thu Dec  2 08:00:04 2026] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.230.02  Thu Oct 19 18:56:32 UTC 2023
`

func TestHealthRunbook(t *testing.T) {
	clean := filepath.Join(t.TempDir(), "kernel.txt")
	if err := os.WriteFile(clean, []byte(cleanKernelLog), 0o644); err != nil {
		t.Fatal(err)
	}
	good := host{smi: "nvidia-smi/a10g-drv535-in-pod-empty-processes.txt", query: "nvidia-smi-q/a100-sxm4-40gb-8gpu-drv535-full-a.txt", kernel: clean}
	e, ts := fleet(t, []host{good, good,
		{smi: "nvidia-smi/2x-rtx3090-nvlink-drv560-vllm-processes.txt", query: "nvidia-smi-q/a100-sxm4-80gb-drv510-ecc-remap-excerpt.txt", kernel: "dmesg-xid/talos-8x-a100-sxid24007-xid62-xid45.txt"},
		{smiFails: true}})
	rb := load(t, "health")
	runs := runbooks.Run(context.Background(), e, ts, rb, runbooks.RunOptions{})
	folded := runbooks.Fold(rb, runs)
	checks := map[string][]string{
		"driver":        {"PASS gpu[01-02]: driver 535.230.02, CUDA 12.2, 1 GPUs", "FAIL gpu04: nvidia-smi failed: NVIDIA-SMI has failed"},
		"persistence":   {"PASS gpu[01-02]", "WARN gpu03: persistence mode off on GPU0, GPU1", "UNKNOWN gpu04"},
		"remapped-rows": {"PASS gpu[01-02]: no pending or failed row remap on 8 GPU(s)", "WARN gpu03: row remaps pending on 1 GPU(s)"},
		// gpu03's log has the fatal SXid 24007 (the Fabric Manager guide)
		// and an Xid 62. gpu04's kernel log is empty (cleared, or the
		// command printed nothing): no Xid read from nothing is no evidence.
		"xid": {"PASS gpu[01-02]: no Xid in the kernel log", "FAIL gpu03: 2 hardware Xid event(s)", "UNKNOWN gpu04: no evidence: step kernel gave output the dmesg-xid parser could not read: empty input"},
		"ecc": {"PASS gpu[01-03]: no uncorrectable ECC error", "UNKNOWN gpu04: no evidence: step query exited 9"},
	}
	for check, wants := range checks {
		got := groups(folded, check)
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %q:\n%s", check, w, got)
			}
		}
	}
}

// podsListing stands in for `kubectl get pods -A -o wide` (no recorded
// fixture of it exists): only the device plugin's line matters to the check.
const podsListing = `NAMESPACE     NAME                                   READY   STATUS    RESTARTS   AGE   IP           NODE
kube-system   nvidia-device-plugin-daemonset-kdcg6   1/1     Running   0          47m   10.0.1.57    ip-10-0-1-230
`

func TestPodCannotSeeGPURunbook(t *testing.T) {
	pods := filepath.Join(t.TempDir(), "pods.txt")
	os.WriteFile(pods, []byte(podsListing), 0o644)
	e, ts := fleet(t, []host{
		{smi: "nvidia-smi/a10g-drv535-in-pod-empty-processes.txt", ctk: true,
			kubectl: map[string]string{"get pods": pods, "describe node": "kubectl-describe-node/eks-g4dn-xlarge-t4-full-nvidia-gpu-allocated.txt"}},
		{smiFails: true, kubectl: map[string]string{"describe node": "kubectl-describe-node/rtx2080ti-timeslicing-6-grep-gpu.txt"}},
		{smi: "nvidia-smi/a10g-drv535-in-pod-empty-processes.txt"}, // no kubectl here
	})
	rb := load(t, "pod-cannot-see-gpu")
	folded := runbooks.Fold(rb, runbooks.Run(context.Background(), e, ts, rb, runbooks.RunOptions{}))
	checks := map[string][]string{
		"driver":  {"PASS gpu[01,03]: driver 535.230.02", "FAIL gpu02: nvidia-smi failed"},
		"toolkit": {"PASS gpu01: NVIDIA Container Toolkit CLI version 1.17.8", "FAIL gpu[02-03]"},
		// Each node lists its own pods: gpu02's kubectl lists none there,
		// gpu03's reaches no cluster.
		"plugin":      {"PASS gpu01: nvidia-device-plugin-daemonset-kdcg6   1/1     Running", "FAIL gpu02: no match for", "UNKNOWN gpu03: no match for"},
		"allocatable": {"PASS gpu01: nvidia.com/gpu=1", "UNKNOWN gpu02: part of step node's output could not be read (no Capacity or Allocatable section (grepped output?)", "nvidia.com/gpu=6 holds only for the part read", "UNKNOWN gpu03: no evidence: step node exited "},
	}
	for check, wants := range checks {
		got := groups(folded, check)
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %q:\n%s", check, w, got)
			}
		}
	}
}

// A step that runs once (hosts = "first") runs on the first host reached,
// in selection order: with the first selected host refusing connections,
// the device-plugin listing runs on the next one, not on nobody.
func TestFirstStepsRunOnTheFirstHostReached(t *testing.T) {
	pods := filepath.Join(t.TempDir(), "pods.txt")
	os.WriteFile(pods, []byte(podsListing), 0o644)
	e, ts := fleet(t, []host{
		{smi: "nvidia-smi/a10g-drv535-in-pod-empty-processes.txt", kubectl: map[string]string{"get pods": pods}},
		{smi: "nvidia-smi/a10g-drv535-in-pod-empty-processes.txt", kubectl: map[string]string{"get pods": pods}},
	})
	down := ts[0]
	down.Name, down.Port = "gpu00", sshtest.FreePort(t) // nothing listens there: refused
	ts = append([]orchestrator.Target{down}, ts...)
	rb := load(t, "pod-cannot-see-gpu")
	for i := range rb.Steps {
		if rb.Steps[i].ID == "plugin" {
			rb.Steps[i].Hosts = "first" // a cluster-wide listing, once
		}
	}
	runs := runbooks.Run(context.Background(), e, ts, rb, runbooks.RunOptions{})
	got := groups(runbooks.Fold(rb, runs), "plugin")
	for _, want := range []string{"UNKNOWN gpu00: no evidence: step plugin did not run: host refused", "PASS gpu01: nvidia-device-plugin-daemonset-kdcg6", "SKIPPED gpu02: step plugin runs on the first host only"} {
		if !strings.Contains(got, want) {
			t.Errorf("plugin lacks %q:\n%s", want, got)
		}
	}
}

// A host lost while its steps run did not run to its end: its verdicts
// are UNKNOWN, the summary names it, and the run is cut short (the
// command line exits 1, --allow-unknown or not), while the other host's
// verdicts stand.
// dyingFleet starts one sshd per host and kills host dies's sshd once the
// tool it hangs in (host.hang) has started: the step is running, and the
// host dies in it. It returns the engine and targets, as fleet does.
func dyingFleet(t *testing.T, hosts []host, dies int) (*orchestrator.Engine, []orchestrator.Target) {
	t.Helper()
	started := hosts[dies].started
	f := sshtest.Start(t, len(hosts), sshtest.Options{EnvFor: standIns(t, hosts)})
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		// Opening the FIFO waits for the hanging tool to open it.
		r, err := os.Open(started)
		if err != nil {
			return
		}
		r.Close()
		f.Servers[dies].Kill()
	}()
	t.Cleanup(func() {
		// Unblock the goroutine if the tool never ran.
		if w, err := os.OpenFile(started, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-killed
	})
	var ts []orchestrator.Target
	for i, s := range f.Servers {
		ts = append(ts, orchestrator.Target{Name: fmt.Sprintf("gpu%02d", i+1), HostName: s.Addr, Port: s.Port, User: f.User,
			IdentityFiles: []string{f.ClientKey}, Explicit: true, KnownHosts: []string{f.KnownHosts},
			ConnectTimeout: 5 * time.Second, CommandTimeout: 30 * time.Second})
	}
	return &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 4}, ts
}

// fifo is a new named pipe, the event a hanging tool writes into.
func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunbookHostLostMidRun(t *testing.T) {
	clean := filepath.Join(t.TempDir(), "kernel.txt")
	os.WriteFile(clean, []byte(cleanKernelLog), 0o644)
	good := host{smi: "nvidia-smi/a10g-drv535-in-pod-empty-processes.txt", query: "nvidia-smi-q/a100-sxm4-40gb-8gpu-drv535-full-a.txt", kernel: clean}
	dying := good
	dying.hang, dying.started = "dmesg", fifo(t)
	e, ts := dyingFleet(t, []host{good, dying}, 1)
	rb := load(t, "health")
	out := runbooks.Execute(context.Background(), e, ts, rb, runbooks.RunOptions{})
	if !out.CutShort || out.Runs[0].CutShort() || !out.Runs[1].CutShort() || out.Runs[1].Class != orchestrator.Lost {
		t.Errorf("cut short %v; gpu01 %s, gpu02 %s (%s): want gpu02 lost, the run cut short", out.CutShort, out.Runs[0].Class, out.Runs[1].Class, out.Runs[1].Err)
	}
	if !strings.Contains(out.Summary, "cut short: 1 lost (gpu02)") {
		t.Errorf("summary %q does not name the host lost", out.Summary)
	}
	if got := groups(out.Folded, "xid"); !strings.Contains(got, "PASS gpu01") || !strings.Contains(got, "UNKNOWN gpu02") {
		t.Errorf("xid:\n%s", got)
	}
}

// A host lost while it runs the cluster-wide steps hands them on: the next
// host reached runs them, so the cluster is still read (it used to be
// SKIPPED "first host only" on every other host, and nobody read it).
func TestFirstStepsMoveOnWhenTheirHostIsLost(t *testing.T) {
	events := map[string]string{"get events": "kubectl-get-events/gpu-pod-insufficient-then-scheduled-field-selector.txt"}
	dying := host{lgi: "nvidia-smi-mig-lgi/a100-40gb-2x-3g.20gb.txt", hang: "kubectl", started: fifo(t)}
	good := host{lgi: "nvidia-smi-mig-lgi/a100-40gb-2x-3g.20gb.txt", kubectl: events}
	e, ts := dyingFleet(t, []host{dying, good}, 0)
	rb := load(t, "pending-gpu-pod")
	out := runbooks.Execute(context.Background(), e, ts, rb, runbooks.RunOptions{})
	if out.Runs[0].Class != orchestrator.Lost {
		t.Errorf("gpu01 %s (%s), want lost", out.Runs[0].Class, out.Runs[0].Err)
	}
	if got := groups(out.Folded, "scheduling"); !strings.Contains(got, "FAIL gpu02: 2 FailedScheduling event(s)") || !strings.Contains(got, "UNKNOWN gpu01") {
		t.Errorf("scheduling: want gpu02 to read the events gpu01 was lost reading:\n%s", got)
	}
	// gpu01's later cluster-wide steps did not run there: UNKNOWN, not
	// SKIPPED "first host only" (nothing was skipped by design). Which
	// step sees the loss first depends on when the connection's end is
	// read: "lost in an earlier cluster-wide step", or this one lost.
	if got := groups(out.Folded, "quota"); !strings.Contains(got, "UNKNOWN gpu01") || strings.Contains(got, "first host only") {
		t.Errorf("quota on the host lost before it:\n%s", got)
	}
}

func TestPendingGPUPodRunbook(t *testing.T) {
	e, ts := fleet(t, []host{
		{lgi: "nvidia-smi-mig-lgi/a100-40gb-2x-3g.20gb.txt", kubectl: map[string]string{"get events": "kubectl-get-events/gpu-pod-insufficient-then-scheduled-field-selector.txt"}},
		{lgi: "nvidia-smi-mig-lgi/a30-no-gpu-instances-found.txt"},
	})
	rb := load(t, "pending-gpu-pod")
	folded := runbooks.Fold(rb, runbooks.Run(context.Background(), e, ts, rb, runbooks.RunOptions{}))
	checks := map[string][]string{
		"scheduling": {"FAIL gpu01: 2 FailedScheduling event(s): Insufficient nvidia.com/gpu (4 node-times)", "SKIPPED gpu02"},
		"quota":      {"PASS gpu01: No resources found"},
		"mig-layout": {"PASS gpu01: GPU0:3g.20gb, GPU0:3g.20gb", "PASS gpu02: no GPU instance (No GPU instances found: Not Found)"},
	}
	for check, wants := range checks {
		got := groups(folded, check)
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %q:\n%s", check, w, got)
			}
		}
	}
}

// nccl-slow reads the job's NCCL log from the path given with --set
// (quoted: a path with spaces and $(...) is a path, not a command).
func TestNCCLSlowRunbook(t *testing.T) {
	links := "ip-br-link/server-cx6-ipoib-ibp-bond-trailing-space.txt"
	topo := "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"
	e, ts := fleet(t, []host{
		{rdma: "rdma-link/gpu-cloud-node-8x-rdma-netdevs-plus-frontend.txt", links: links, topo: topo},
		{rdma: "rdma-link/ib-format-mlx5_7-down-polling.txt", links: links, topo: topo},
		{rdma: "rdma-link/moc-gpu-node-roce-6links-trailing-space.txt", links: links, topo: topo},
	})
	rb := load(t, "nccl-slow")
	dir := filepath.Join(t.TempDir(), "job 4711 $(touch PWNED)")
	os.MkdirAll(dir, 0o755)
	logOf := func(fixture string) string {
		data, err := os.ReadFile(fx + "nccl-debug-info/" + fixture)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fixture)
		os.WriteFile(p, data, 0o644)
		return p
	}
	run := func(set ...string) []runbooks.Folded {
		t.Helper()
		params, err := runbooks.Bind(rb, set)
		if err != nil {
			t.Fatal(err)
		}
		return runbooks.Fold(rb, runbooks.Run(context.Background(), e, ts, rb, runbooks.RunOptions{Params: params}))
	}
	expect := func(folded []runbooks.Folded, check string, want ...string) {
		t.Helper()
		got := groups(folded, check)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %q:\n%s", check, w, got)
			}
		}
	}

	// No log given: the NCCL checks say how to give one.
	f := run()
	expect(f, "rdma-up", "WARN gpu01: 9 RDMA port(s) up, 1 down", "FAIL gpu02: no RDMA port is up (1 down)", "WARN gpu03: 4 RDMA port(s) up, 2 down")
	expect(f, "transport", "SKIPPED gpu[01-03]: step nccl was skipped: no value for nccl_log (--set nccl_log=...)")
	expect(f, "env", "SKIPPED gpu[01-03]")

	// The classic: NCCL fell back to sockets while RDMA ports are up.
	f = run("nccl_log=" + logOf("hgx-a100-net-socket-fallback-no-libibverbs-topo-dump.txt"))
	expect(f, "transport", "FAIL gpu01: NCCL chose NET/Socket although 9 RDMA port(s) are up (mlx5_0/1, ", "FAIL gpu03: NCCL chose NET/Socket although 4 RDMA port(s) are up", "FAIL gpu02: NCCL uses NET/Socket: the host has no RDMA port up")
	expect(f, "env", "PASS gpu[01-03]: NCCL_IB_HCA and NCCL_SOCKET_IFNAME are not set")
	// (Those verdicts read the log: unquoted, the spaces and $(...) in its
	// path would have split it and cat would have failed.)

	// RoCE without GPUDirect, and a NCCL_SOCKET_IFNAME this host lacks.
	f = run("nccl_log=" + logOf("nccl2.27-roce400g-net-ib-device-discovery.txt"))
	expect(f, "transport", "WARN gpu[01-03]: NET/IB without GPUDirect RDMA")
	expect(f, "env", `FAIL gpu[01-03]: NCCL_SOCKET_IFNAME=enp25s0np0: no device "enp25s0np0" on this host`)

	// The healthy case.
	f = run("nccl_log=" + logOf("roce-2node-16gpu-p2p-ipc-net-ib-gdrdma-pxn.txt"))
	expect(f, "transport", "PASS gpu[01-03]: NET/IB with GPUDirect RDMA")

	if _, err := runbooks.Bind(rb, []string{"ncc_log=/x"}); err == nil || !strings.Contains(err.Error(), `no parameter "ncc_log" (it has nccl_log)`) {
		t.Errorf("an unknown parameter: %v", err)
	}
}

// A run is never PASS without a check that passed; the summary line
// counts every host once and names those never reached with their class.
func TestWorstAndSummary(t *testing.T) {
	v := func(st ...step.Status) []step.Verdict {
		out := make([]step.Verdict, len(st))
		for i, s := range st {
			out[i] = step.Verdict{Status: s}
		}
		return out
	}
	runs := []runbooks.HostRun{
		{Host: "gpu01", Steps: []runbooks.StepRun{{}}, Verdicts: v(step.Pass, step.Pass)},
		{Host: "gpu02", Steps: []runbooks.StepRun{{}}, Verdicts: v(step.Pass, step.Warn)},
		{Host: "gpu03", Class: orchestrator.Refused, Err: "connection refused", Steps: []runbooks.StepRun{}, Verdicts: v(step.Unknown, step.Unknown)},
	}
	if w := runbooks.Worst(runs); w != step.Warn {
		t.Errorf("worst %s, want WARN", w)
	}
	if got, want := runbooks.Summary(runs), "3 hosts: 1 PASS, 1 WARN (gpu02), 1 UNKNOWN (gpu03); not reached: 1 refused (gpu03)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	// A check skipped for want of a parameter is named: the hosts' PASS
	// says nothing of it. One skipped by design (first host only) is not.
	skipped := []runbooks.HostRun{
		{Host: "gpu01", Steps: []runbooks.StepRun{{}}, Verdicts: []step.Verdict{{Check: "env", Status: step.Pass}, {Check: "nccl-bw", Status: step.Skipped, Summary: "step nccl was skipped: no value for nccl_log"}}},
		{Host: "gpu02", Steps: []runbooks.StepRun{{}}, Verdicts: []step.Verdict{{Check: "env", Status: step.Pass}, {Check: "plugin", Status: step.Skipped, Summary: "step plugin runs on the first host only"}, {Check: "mesh", Status: step.Skipped, Summary: "4 GPUs, no NVLink between them"}}},
	}
	if got, want := runbooks.Summary(skipped), "2 hosts: 2 PASS; not checked: nccl-bw (SKIPPED)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	// A host's WARN (or FAIL) hides the checks it could not decide; the
	// summary names them, so that exit 3 is explained.
	hidden := []runbooks.HostRun{
		{Host: "gpu01", Steps: []runbooks.StepRun{{}}, Verdicts: []step.Verdict{{Check: "mesh", Status: step.Unknown}, {Check: "nic", Status: step.Warn}, {Check: "aff", Status: step.Unknown}}},
		{Host: "gpu02", Steps: []runbooks.StepRun{{}}, Verdicts: []step.Verdict{{Check: "mesh", Status: step.Unknown}, {Check: "nic", Status: step.Warn}}},
	}
	if got, want := runbooks.Summary(hidden), "2 hosts: 2 WARN (gpu[01-02]); also UNKNOWN: mesh, aff"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	for _, tc := range []struct {
		name string
		vs   []step.Verdict
		want step.Status
	}{
		{"every check skipped", v(step.Skipped, step.Skipped), step.Skipped},
		{"no verdict", nil, step.Unknown},
		{"pass and skipped", v(step.Pass, step.Skipped), step.Pass},
		{"fail", v(step.Pass, step.Fail, step.Unknown), step.Fail},
	} {
		if got := runbooks.Worst([]runbooks.HostRun{{Host: "h", Verdicts: tc.vs}}); got != tc.want {
			t.Errorf("%s: worst %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A device plugin pod that is Running but not ready (0/1) serves no GPU.
func TestPluginNotReadyIsNoPlugin(t *testing.T) {
	rb := load(t, "pod-cannot-see-gpu")
	var plugin step.Check
	for _, c := range rb.Checks {
		if c.ID == "plugin" {
			plugin = c
		}
	}
	for listing, want := range map[string]step.Status{
		"kube-system   nvidia-device-plugin-daemonset-kdcg6   0/1     Running   3          47m   10.0.1.57    gpu01\n": step.Fail,
		"kube-system   nvidia-device-plugin-daemonset-kdcg6   1/1     Running   0          47m   10.0.1.57    gpu01\n": step.Pass,
		"gpu-operator  gpu-operator-7d9f8b7c4-x2x9q           1/1     Running   0          47m   10.0.1.9     gpu01\n": step.Fail,
	} {
		v := step.Judge(plugin, []step.Input{{Step: "plugin", Ran: true, Class: orchestrator.OK, Output: podsHeader + listing}})
		if v.Status != want {
			t.Errorf("%q: %s %q, want %s", listing, v.Status, v.Summary, want)
		}
	}
}

const podsHeader = "NAMESPACE     NAME                                   READY   STATUS    RESTARTS   AGE   IP           NODE\n"

// A host whose kubectl has no kubeconfig has no cluster to read: the
// checks on kubectl's steps are UNKNOWN "no cluster configured", never
// FAIL, and none of kubectl's klog lines reaches a verdict.
func TestNoClusterIsUnknownNotFail(t *testing.T) {
	e, ts := fleet(t, []host{{smi: "nvidia-smi/a10g-drv535-in-pod-empty-processes.txt", ctk: true, kubectlNoConfig: true}})
	rb := load(t, "pod-cannot-see-gpu")
	runs := runbooks.Run(context.Background(), e, ts, rb, runbooks.RunOptions{})
	for _, id := range []string{"plugin", "allocatable"} {
		got := groups(runbooks.Fold(rb, runs), id)
		if !strings.HasPrefix(got, "UNKNOWN gpu01: no evidence: step ") || !strings.Contains(got, "no cluster configured") {
			t.Errorf("%s: %s, want UNKNOWN saying no cluster is configured", id, got)
		}
	}
	// The host ran every step: it is whole, not cut short (the run is
	// undecided, exit 3, never a host failure).
	if sum := runbooks.Summary(runs); runs[0].CutShort() || strings.Contains(sum, "cut short") || strings.Contains(sum, "not reached") {
		t.Errorf("class %s, summary %q: a host with no cluster is no host failure", runs[0].Class, sum)
	}
	for _, r := range runs {
		for _, v := range r.Verdicts {
			text := v.Summary + " " + v.Hint
			for _, e := range v.Evidence {
				text += " " + e.Fact
			}
			if strings.Contains(text, "memcache.go") || strings.Contains(text, "E1203") {
				t.Errorf("%s: kubectl's klog line reached the verdict: %s", v.Check, text)
			}
		}
	}
}

// A host whose tool hangs is cut short by its class (timeout-command), as
// exec says it: its checks are UNKNOWN, and the run is cut short, which no
// --allow-unknown accepts (it read UNKNOWN with the host "ok", exit 0 with
// --allow-unknown). --timeout on the command line caps the step's own
// limit (30s), so one hung host does not hold the run for it.
func TestRunbookHostHungIsCutShort(t *testing.T) {
	clean := filepath.Join(t.TempDir(), "kernel.txt")
	os.WriteFile(clean, []byte(cleanKernelLog), 0o644)
	good := host{smi: "nvidia-smi/a10g-drv535-in-pod-empty-processes.txt", query: "nvidia-smi-q/a100-sxm4-40gb-8gpu-drv535-full-a.txt", kernel: clean}
	hung := good
	hung.hang, hung.started = "dmesg", filepath.Join(t.TempDir(), "started")
	e, ts := fleet(t, []host{good, hung})
	for i := range ts {
		ts[i].CommandTimeout = 2 * time.Second
		ts[i].Sources = map[string]string{"CommandTimeout": "flag"} // gpulab runbook run --timeout 2s
	}
	out := runbooks.Execute(context.Background(), e, ts, load(t, "health"), runbooks.RunOptions{})
	if !out.CutShort || out.Runs[0].CutShort() || out.Runs[1].Class != orchestrator.TimeoutCommand {
		t.Errorf("cut short %v; gpu01 %s, gpu02 %s (%s): want gpu02 timeout-command, the run cut short", out.CutShort, out.Runs[0].Class, out.Runs[1].Class, out.Runs[1].Err)
	}
	if !strings.Contains(out.Summary, "cut short: 1 timeout-command (gpu02)") {
		t.Errorf("summary %q does not name the host that hung", out.Summary)
	}
	if !strings.Contains(out.Runs[1].Err, "(2s)") {
		t.Errorf("gpu02: %q: want the step cut at --timeout's 2s, not its own limit", out.Runs[1].Err)
	}
	if got := groups(out.Folded, "xid"); !strings.Contains(got, "PASS gpu01") || !strings.Contains(got, "UNKNOWN gpu02") {
		t.Errorf("xid:\n%s", got)
	}
}
