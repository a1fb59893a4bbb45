package dgx

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/gpulab/gpulab/sim/spec"
)

// Versions of the simulated cluster's software.
const (
	kubeServerVersion = "v1.31.4"
	containerdVersion = "containerd://1.7.13"
	gpuOperatorImage  = "nvcr.io/nvidia/gpu-operator:v24.6.2"
	devicePluginImage = "nvcr.io/nvidia/k8s-device-plugin:v0.16.2"
	dcgmExporterImage = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.7-3.5.0-ubuntu22.04"
	validatorImage    = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.6.2"
	nfdImage          = "registry.k8s.io/nfd/node-feature-discovery:v0.16.3"
	kueueImage        = "registry.k8s.io/kueue/kueue:v0.8.1"
	pytorchImage      = "nvcr.io/nvidia/pytorch:24.01-py3"
	tritonImage       = "nvcr.io/nvidia/tritonserver:24.01-py3"
	notebookImage     = "nvcr.io/nvidia/pytorch:24.01-py3"
)

// Ages of the cluster's story, before its epoch.
const (
	clusterAge   = 62 * 24 * time.Hour // the control plane, CRDs, priority classes
	nodeAge      = 61 * 24 * time.Hour // the first node joined
	pendingAge   = 3*time.Hour + 12*time.Minute
	quotaJobAge  = 2*time.Hour + 5*time.Minute
	queueSetupAt = 20 * 24 * time.Hour // Kueue was installed
)

// Node resources of a DGX A100 (2x EPYC 7742 with SMT, 1 TiB, the OS
// RAID): capacity, and what the kubelet keeps back (a CPU each for the
// system and Kubernetes, 8 GiB and the 100 MiB eviction threshold, 10%
// of the disk).
const (
	nodeCPUMilli       = 256000
	nodeCPUAllocMilli  = 254000
	nodeMemKi          = 1056445308
	nodeMemAllocKi     = nodeMemKi - 8*1024*1024 - 100*1024
	nodeDiskKi         = 1843932052
	nodeDiskAllocBytes = nodeDiskKi * 1024 / 10 * 9
	nodeMaxPods        = 110
)

// deviceHealthyXid reports whether the device plugin keeps a GPU
// healthy after this Xid: it skips only the application errors.
func deviceHealthyXid(code int) bool {
	switch code {
	case 13, 31, 43, 45, 68, 109:
		return true
	}
	return false
}

func buildState(names []string, faults []spec.Faults, epoch time.Time) *kstate {
	s := &kstate{epoch: epoch, now: epoch, node: map[string]*knode{}}
	s.buildCatalog()
	for i, name := range names {
		n := newNode(name, i, faults[i], epoch)
		s.nodes = append(s.nodes, n)
		s.node[name] = n
	}
	for _, n := range s.nodes {
		s.systemPods(n)
	}
	s.gpuWorkloads()
	s.pendingStory()
	return s
}

// buildCatalog makes the cluster-wide objects: namespaces, priority
// classes, CRDs, Kueue's queues.
func (s *kstate) buildCatalog() {
	born := s.epoch.Add(-clusterAge)
	for k, ns := range []string{"default", "kube-flannel", "kube-node-lease", "kube-public", "kube-system"} {
		s.namespaces = append(s.namespaces, knamespace{ns, born.Add(time.Duration(k) * time.Second)})
	}
	for k, ns := range []string{"gpu-operator", "ml-team", "research"} {
		s.namespaces = append(s.namespaces, knamespace{ns, born.Add(time.Duration(k+1) * time.Hour)})
	}
	kueueAt := s.epoch.Add(-queueSetupAt)
	for k, ns := range []string{"kueue-system", "team-a", "team-b"} {
		s.namespaces = append(s.namespaces, knamespace{ns, kueueAt.Add(time.Duration(k) * time.Minute)})
	}
	s.prios = []kpriority{
		{"batch-low", 100, false, "Never", born.Add(2 * time.Hour)},
		{"inference-high", 100000, false, "PreemptLowerPriority", born.Add(2 * time.Hour)},
		{"system-cluster-critical", 2000000000, false, "PreemptLowerPriority", born},
		{"system-node-critical", 2000001000, false, "PreemptLowerPriority", born},
		{"training", 1000, true, "PreemptLowerPriority", born.Add(2 * time.Hour)},
	}
	for _, p := range []string{"clusterpolicies", "nvidiadrivers"} {
		s.crds = append(s.crds, kcrd{p, "nvidia.com", born.Add(time.Hour + 5*time.Minute)})
	}
	for _, p := range []string{"nodefeatures", "nodefeaturerules", "nodefeaturegroups"} {
		s.crds = append(s.crds, kcrd{p, "nfd.k8s-sigs.io", born.Add(time.Hour + 5*time.Minute)})
	}
	for _, p := range kueueResources {
		s.crds = append(s.crds, kcrd{p, kueueGroup, kueueAt})
	}
	s.cqs = []*kclusterQueue{{"team-a", "gpu-pool", 16, kueueAt.Add(3 * time.Minute)}, {"team-b", "gpu-pool", 16, kueueAt.Add(3 * time.Minute)}}
	s.lqs = []klocalQueue{{"team-a", "team-a", "team-a"}, {"team-b", "team-b", "team-b"}}
}

// Kueue's API group and resources (v0.8).
const kueueGroup = "kueue.x-k8s.io"

var kueueResources = []string{"admissionchecks", "clusterqueues", "localqueues", "multikueueclusters", "multikueueconfigs",
	"provisioningrequestconfigs", "resourceflavors", "workloadpriorityclasses", "workloads"}

// addrAt is base plus n, as an IPv4 address.
func addrAt(base string, n int) string {
	b := netip.MustParseAddr(base).As4()
	v := binary.BigEndian.Uint32(b[:]) + uint32(n)
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b).String()
}

func newNode(name string, i int, f spec.Faults, epoch time.Time) *knode {
	n := &knode{name: name, index: i, ip: addrAt("10.0.0.11", i), podCIDR: addrAt("10.244.0.0", i*256) + "/24",
		created: epoch.Add(-nodeAge + time.Duration(i)*97*time.Second), boot: epoch.Add(-DefaultUptime), mig: map[string]int{}, faults: f}
	sick := map[int]bool{}
	for _, x := range f.XIDs {
		if !deviceHealthyXid(x.Code) {
			sick[x.GPU] = true
		}
	}
	for g := 0; g < spec.GPUs; g++ {
		if f.MIGOn(g) {
			for _, gi := range f.Instances(g) {
				n.mig[gi.Profile.Name]++
				n.migInst = append(n.migInst, kmig{g, gi.ID, gi.Profile.Name})
			}
			continue
		}
		n.gpuCap++
		if !sick[g] {
			n.healthy = append(n.healthy, g)
		}
	}
	n.labels = nodeLabels(n, f, epoch)
	return n
}

func nodeLabels(n *knode, f spec.Faults, epoch time.Time) map[string]string {
	l := map[string]string{
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux",
		"feature.node.kubernetes.io/pci-10de.present": "true",
		"nvidia.com/cuda.driver.major":                "535", "nvidia.com/cuda.driver.minor": "129", "nvidia.com/cuda.driver.rev": "03",
		"nvidia.com/cuda.runtime.major": "12", "nvidia.com/cuda.runtime.minor": "2",
		"nvidia.com/gfd.timestamp":     strconv.FormatInt(n.boot.Add(95*time.Second).Unix(), 10),
		"nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0",
		"nvidia.com/gpu.count":                strconv.Itoa(n.gpuCap),
		"nvidia.com/gpu.deploy.dcgm-exporter": "true", "nvidia.com/gpu.deploy.device-plugin": "true",
		"nvidia.com/gpu.deploy.driver": "pre-installed", "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
		"nvidia.com/gpu.deploy.operator-validator": "true",
		"nvidia.com/gpu.family":                    "ampere", "nvidia.com/gpu.machine": "DGXA100-920-23687-2530-000",
		"nvidia.com/gpu.memory": "40960", "nvidia.com/gpu.present": "true",
		"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "mixed",
	}
	for name, count := range n.mig {
		p, _ := spec.ProfileByName(name)
		pre := "nvidia.com/mig-" + name + "."
		l[pre+"count"] = strconv.Itoa(count)
		l[pre+"engines.copy"] = strconv.Itoa(p.CE)
		l[pre+"engines.decoder"] = strconv.Itoa(p.DEC)
		l[pre+"engines.encoder"] = strconv.Itoa(p.ENC)
		l[pre+"engines.jpeg"] = strconv.Itoa(p.JPEG)
		l[pre+"engines.ofa"] = strconv.Itoa(p.OFA)
		l[pre+"memory"] = strconv.Itoa(p.MemoryMiB)
		l[pre+"multiprocessors"] = strconv.Itoa(p.SMs)
		l[pre+"slices.ci"] = strconv.Itoa(p.Slices)
		l[pre+"slices.gi"] = strconv.Itoa(p.Slices)
	}
	return l
}

// allocatable is the node's allocatable extended resources.
func (n *knode) allocatable() map[string]int64 {
	m := map[string]int64{"nvidia.com/gpu": int64(len(n.healthy))}
	for p, c := range n.mig {
		m["nvidia.com/mig-"+p] = int64(c)
	}
	return m
}

// capacity is the node's extended resources before health.
func (n *knode) capacity() map[string]int64 {
	m := n.allocatable()
	m["nvidia.com/gpu"] = int64(n.gpuCap)
	return m
}

// nextPodIP hands out the next pod address of the node's range.
func (n *knode) nextPodIP() string {
	n.podCount++
	return addrAt(n.podCIDR[:len(n.podCIDR)-3], n.podCount+1)
}

// sysPod is a pod of a cluster add-on on every node (or one node).
type sysPod struct {
	ns, owner, kind, container, image, prio string
	hostNet                                 bool
	req, lim                                kres
	completes                               bool // a validation pod: runs once, Completed
	only                                    int  // the node index it runs on; -1: every node
}

var sysPods = []sysPod{
	{ns: "kube-flannel", owner: "kube-flannel-ds", kind: "DaemonSet", container: "kube-flannel", image: "docker.io/flannel/flannel:v0.25.5", prio: "system-node-critical", hostNet: true, req: kres{cpu: 100, mem: 50 << 20}, only: -1},
	{ns: "kube-system", owner: "kube-proxy", kind: "DaemonSet", container: "kube-proxy", image: "registry.k8s.io/kube-proxy:" + kubeServerVersion, prio: "system-node-critical", hostNet: true, only: -1},
	{ns: "kube-system", owner: "coredns", kind: "ReplicaSet", container: "coredns", image: "registry.k8s.io/coredns/coredns:v1.11.3", prio: "system-cluster-critical", req: kres{cpu: 100, mem: 70 << 20}, lim: kres{mem: 170 << 20}, only: 0},
	{ns: "kube-system", owner: "coredns", kind: "ReplicaSet", container: "coredns", image: "registry.k8s.io/coredns/coredns:v1.11.3", prio: "system-cluster-critical", req: kres{cpu: 100, mem: 70 << 20}, lim: kres{mem: 170 << 20}, only: 1},
	{ns: "gpu-operator", owner: "gpu-feature-discovery", kind: "DaemonSet", container: "gpu-feature-discovery", image: devicePluginImage, prio: "system-node-critical", only: -1},
	{ns: "gpu-operator", owner: "gpu-operator", kind: "ReplicaSet", container: "gpu-operator", image: gpuOperatorImage, prio: "system-node-critical", req: kres{cpu: 200, mem: 100 << 20}, lim: kres{cpu: 500, mem: 350 << 20}, only: 0},
	{ns: "gpu-operator", owner: "gpu-operator-node-feature-discovery-gc", kind: "ReplicaSet", container: "gc", image: nfdImage, only: 0, req: kres{cpu: 10, mem: 128 << 20}},
	{ns: "gpu-operator", owner: "gpu-operator-node-feature-discovery-master", kind: "ReplicaSet", container: "master", image: nfdImage, only: 0, req: kres{cpu: 100, mem: 128 << 20}, lim: kres{mem: 4 << 30}},
	{ns: "gpu-operator", owner: "gpu-operator-node-feature-discovery-worker", kind: "DaemonSet", container: "worker", image: nfdImage, req: kres{cpu: 5, mem: 64 << 20}, lim: kres{mem: 512 << 20}, only: -1},
	{ns: "gpu-operator", owner: "nvidia-cuda-validator", kind: "", container: "nvidia-cuda-validator", image: validatorImage, completes: true, only: -1},
	{ns: "gpu-operator", owner: "nvidia-dcgm-exporter", kind: "DaemonSet", container: "nvidia-dcgm-exporter", image: dcgmExporterImage, prio: "system-node-critical", only: -1},
	{ns: "gpu-operator", owner: "nvidia-device-plugin-daemonset", kind: "DaemonSet", container: "nvidia-device-plugin", image: devicePluginImage, prio: "system-node-critical", only: -1},
	{ns: "gpu-operator", owner: "nvidia-operator-validator", kind: "DaemonSet", container: "nvidia-operator-validator", image: validatorImage, prio: "system-node-critical", only: -1},
	{ns: "kueue-system", owner: "kueue-controller-manager", kind: "ReplicaSet", container: "manager", image: kueueImage, req: kres{cpu: 500, mem: 512 << 20}, lim: kres{cpu: 2000, mem: 512 << 20}, only: 0},
}

// systemPods places the add-ons' pods on n. DaemonSet pods have run
// since the node joined and restarted once, at its last boot; the
// others started after the boot.
func (s *kstate) systemPods(n *knode) {
	for k, sp := range sysPods {
		if sp.only >= 0 && min(sp.only, len(s.nodes)-1) != n.index {
			continue
		}
		owner, name := sp.owner, ""
		switch sp.kind {
		case "DaemonSet", "":
			name = sp.owner + "-" + nameSuffix(5, sp.owner, n.name)
		case "ReplicaSet":
			owner = sp.owner + "-" + nameSuffix(10, sp.owner, "template")
			name = owner + "-" + nameSuffix(5, sp.owner, n.name, strconv.Itoa(k))
		}
		p := &kpod{ns: sp.ns, name: name, ownerKind: sp.kind, ownerName: owner, container: sp.container, image: sp.image,
			priorityClass: sp.prio, req: sp.req, lim: sp.lim, restartPolicy: "Always", node: n.name, hostNetwork: sp.hostNet}
		if p.ownerKind == "" {
			p.ownerKind, p.ownerName, p.restartPolicy = "", "", "Never"
		}
		p.created = n.boot.Add(40 * time.Second)
		if sp.kind == "DaemonSet" {
			p.created = n.created.Add(90 * time.Second)
			p.restarts, p.lastRestart = 1, n.boot.Add(-2*time.Minute)
		}
		if sp.completes {
			p.run = kprogram{ends: true, lasts: 8 * time.Second}
		}
		p.labels = podLabels(p)
		s.addPod(p, p.created.Add(5*time.Second))
	}
}

// podLabels are the labels its controller gives a pod.
func podLabels(p *kpod) map[string]string {
	switch p.ownerKind {
	case "Job":
		uid := uuidOf("job", p.ns, p.ownerName)
		return map[string]string{"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": p.ownerName,
			"controller-uid": uid, "job-name": p.ownerName}
	case "ReplicaSet":
		base := p.ownerName[:len(p.ownerName)-11]
		return map[string]string{"app.kubernetes.io/name": base, "pod-template-hash": p.ownerName[len(base)+1:]}
	case "DaemonSet":
		return map[string]string{"app.kubernetes.io/name": p.ownerName, "controller-revision-hash": nameSuffix(10, p.ownerName, "rev"),
			"pod-template-generation": "1"}
	case "StatefulSet":
		return map[string]string{"app.kubernetes.io/name": p.ownerName, "apps.kubernetes.io/pod-index": "0",
			"controller-revision-hash":           p.ownerName + "-" + nameSuffix(10, p.ownerName, "rev"),
			"statefulset.kubernetes.io/pod-name": p.name}
	case "":
		if p.labels != nil {
			return p.labels
		}
		return map[string]string{"app": p.name}
	}
	return map[string]string{}
}

// addPod adds p, bound to its node (if any) and started at started.
func (s *kstate) addPod(p *kpod, started time.Time) {
	if p.uid == "" {
		p.uid = uuidOf("pod", p.ns, p.name, p.created.String())
	}
	if p.priorityClass == "" {
		p.priorityClass = "training"
	}
	p.priority = s.priorityOf(p.priorityClass)
	if p.node != "" {
		n := s.node[p.node]
		p.ip = n.ip
		if !p.hostNetwork {
			p.ip = n.nextPodIP()
		}
		p.started = started
	}
	s.pods = append(s.pods, p)
}

func (s *kstate) priorityOf(class string) int {
	for _, pc := range s.prios {
		if pc.name == class {
			return pc.value
		}
	}
	return 0
}

var notebookUsers = []string{"alice", "bob", "chen", "dana", "emeka", "farah", "goran", "hana", "ivan", "jun", "kofi", "lena"}

// gpuChunks splits n GPUs in use on a node into pods of 4, 2 and 1.
func gpuChunks(n int) []int {
	switch {
	case n >= 4:
		return append([]int{4}, gpuChunks(n-4)...)
	case n >= 2:
		return append([]int{2}, gpuChunks(n-2)...)
	case n == 1:
		return []int{1}
	}
	return nil
}

// gpuWorkloads places the running GPU pods: on node i, 2 to 6 GPUs in
// use (fewer than the sick host offers), as pretraining shards of 4
// (Jobs in ml-team), inference replicas of 2 (a Deployment in ml-team)
// and notebooks of 1 (StatefulSets in research).
func (s *kstate) gpuWorkloads() {
	shard, nb := 0, 0
	triton := "triton-llm-" + nameSuffix(10, "triton-llm", "template")
	for _, n := range s.nodes {
		u := &nodeUse{ext: map[string]int64{}, devices: map[int]bool{}}
		use := 2 + (n.index*3+1)%5
		use = min(use, len(n.healthy)-1)
		start := n.boot.Add(2*time.Hour + time.Duration(n.index%7)*11*time.Minute)
		for k, size := range gpuChunks(use) {
			p := &kpod{restartPolicy: "Always", node: n.name, created: start.Add(time.Duration(k) * 17 * time.Minute)}
			switch size {
			case 4:
				shard++
				p.ns, p.ownerKind, p.ownerName = "ml-team", "Job", fmt.Sprintf("pretrain-shard-%02d", shard)
				p.name, p.container, p.image, p.restartPolicy = p.ownerName+"-"+nameSuffix(5, p.ownerName), "trainer", pytorchImage, "Never"
				p.command = []string{"torchrun", "--nproc-per-node=4", "/workspace/pretrain.py", fmt.Sprintf("--shard=%d", shard)}
				p.req, p.lim = kres{cpu: 48000, mem: 384 << 30}, kres{cpu: 48000, mem: 384 << 30}
			case 2:
				p.ns, p.ownerKind, p.ownerName, p.priorityClass = "ml-team", "ReplicaSet", triton, "inference-high"
				p.name, p.container, p.image = triton+"-"+nameSuffix(5, triton, n.name), "triton", tritonImage
				p.command = []string{"tritonserver", "--model-repository=/models"}
				p.req, p.lim = kres{cpu: 16000, mem: 128 << 30}, kres{cpu: 16000, mem: 128 << 30}
			case 1:
				user := notebookUsers[nb%len(notebookUsers)]
				if nb >= len(notebookUsers) {
					user += strconv.Itoa(nb / len(notebookUsers))
				}
				nb++
				p.ns, p.ownerKind, p.ownerName = "research", "StatefulSet", "notebook-"+user
				p.name, p.container, p.image = p.ownerName+"-0", "notebook", notebookImage
				p.command = []string{"jupyter", "lab", "--ip=0.0.0.0", "--no-browser"}
				p.req, p.lim = kres{cpu: 8000, mem: 64 << 30}, kres{mem: 64 << 30}
			}
			p.req.ext = map[string]int64{"nvidia.com/gpu": int64(size)}
			p.lim.ext = map[string]int64{"nvidia.com/gpu": int64(size)}
			p.labels = podLabels(p)
			p.devices = freeDevices(n, u, size)
			s.addPod(p, p.created.Add(20*time.Second))
			if p.ownerKind == "Job" {
				t := *p
				s.jobs = append(s.jobs, &kjob{ns: p.ns, name: p.ownerName, uid: uuidOf("job", p.ns, p.ownerName), labels: map[string]string{},
					parallelism: 1, created: p.created, template: &t, made: 1})
			}
		}
	}
}

// pendingStory adds the two GPU jobs that do not run: one too large for
// any node's free GPUs, one over its namespace's quota.
func (s *kstate) pendingStory() {
	big := &kjob{ns: "research", name: "llm-finetune-8gpu", parallelism: 1, created: s.epoch.Add(-pendingAge)}
	big.template = &kpod{container: "trainer", image: pytorchImage, restartPolicy: "Never",
		command: []string{"torchrun", "--nproc-per-node=8", "/workspace/finetune.py"},
		req:     kres{cpu: 32000, mem: 256 << 30, ext: map[string]int64{"nvidia.com/gpu": 8}},
		lim:     kres{cpu: 32000, mem: 256 << 30, ext: map[string]int64{"nvidia.com/gpu": 8}}}
	s.addJob(big)
	s.reconcile(big.created)

	var used int64
	for _, p := range s.pods {
		if p.ns == "ml-team" {
			used += p.req.ext["nvidia.com/gpu"]
		}
	}
	s.quotas = append(s.quotas, &kquota{ns: "ml-team", name: "gpu-quota", hard: used + 2, created: s.epoch.Add(-45 * 24 * time.Hour)})
	sweep := &kjob{ns: "ml-team", name: "eval-sweep", parallelism: 1, created: s.epoch.Add(-quotaJobAge)}
	sweep.template = &kpod{container: "eval", image: pytorchImage, restartPolicy: "Never",
		command: []string{"python", "/workspace/eval_sweep.py"},
		req:     kres{cpu: 32000, mem: 256 << 30, ext: map[string]int64{"nvidia.com/gpu": 4}},
		lim:     kres{cpu: 32000, mem: 256 << 30, ext: map[string]int64{"nvidia.com/gpu": 4}}}
	s.addJob(sweep)
	s.reconcile(sweep.created)
}
