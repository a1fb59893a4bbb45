package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpulab/gpulab/probes/report"
)

// IdleMemoryMiB is the framebuffer use above which a GPU with no process
// listed and 0% utilisation still counts as busy. An idle GPU reports a
// few MiB (4 on the recorded A100, about 50 with MIG devices); a CUDA
// context alone takes several hundred, so memory above this bound means
// something holds the GPU that NVML did not list.
const IdleMemoryMiB = 256

// NodeProbe is what the probe gave for one node: the host it ran on and
// its snapshot, or, with no snapshot, why (the host was unreachable, the
// probe failed, no host maps to the node).
type NodeProbe struct {
	Host     string
	Snapshot *report.Snapshot
	Err      string
}

// Reconciliation joins what the API server says pods hold with what the
// probe saw on the nodes. Every list is sorted (nodes by name, pods by
// namespace and name) and never nil.
type Reconciliation struct {
	Nodes       []NodeUse            `json:"nodes"`
	Pods        []PodUse             `json:"pods"`
	Unallocated []UnallocatedProcess `json:"unallocated"`
	StrandedMIG []StrandedMIG        `json:"stranded_mig"`
	Namespaces  []NamespaceUse       `json:"namespaces"`
	Totals      Totals               `json:"totals"`
}

// Devices counts GPU devices: whole ones (nvidia.com/gpu, amd.com/gpu,
// nvidia.com/gpu.shared replicas...) and MIG instances (nvidia.com/mig-*)
// apart, since a slice is not a GPU. HAMi's gpumem and gpucores are
// amounts, not devices, and are not counted.
type Devices struct {
	GPUs      int64 `json:"gpus"`
	MIGSlices int64 `json:"mig_slices"`
}

func (d *Devices) add(o Devices) { d.GPUs += o.GPUs; d.MIGSlices += o.MIGSlices }

// Zero reports whether d counts nothing.
func (d Devices) Zero() bool { return d.GPUs == 0 && d.MIGSlices == 0 }

// Usage splits the devices pods hold by their pods' state: Allocated is
// Busy + Idle + Starting + Unknown.
type Usage struct {
	Allocated Devices `json:"allocated"`
	Busy      Devices `json:"busy"`
	Idle      Devices `json:"idle"`
	Starting  Devices `json:"starting"`
	Unknown   Devices `json:"unknown"`
}

func (u *Usage) add(p PodUse) {
	u.Allocated.add(p.Held)
	switch p.State {
	case PodBusy:
		u.Busy.add(p.Held)
	case PodIdle:
		u.Idle.add(p.Held)
	case PodStarting:
		u.Starting.add(p.Held)
	default:
		u.Unknown.add(p.Held)
	}
}

// PodState is what the probe found of a pod's devices.
type PodState string

// The states of a pod that holds GPU devices.
const (
	// PodBusy: a process of the pod (its cgroup names the pod's UID) runs
	// on a GPU of its node that shows utilisation above 0%, or whose
	// utilisation NVML does not give (a GPU in MIG mode: a process in
	// an instance is the evidence).
	PodBusy PodState = "busy"
	// PodIdle: the pod runs and holds devices, and no process of it runs
	// on any GPU of its node, or its processes sit on GPUs showing 0%.
	// This is the money: devices nobody else may have, doing nothing.
	PodIdle PodState = "idle"
	// PodStarting: bound but not yet running (phase Pending: pulling its
	// image, waiting for a volume); no process is expected yet.
	PodStarting PodState = "starting"
	// PodUnknown: its node was not probed.
	PodUnknown PodState = "unknown"
)

// PodUse is one pod holding GPU devices, and what runs of it.
type PodUse struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	UID       string           `json:"uid"`
	Node      string           `json:"node"`
	Resources map[string]int64 `json:"resources"` // the device resources it requests
	Held      Devices          `json:"held"`
	State     PodState         `json:"state"`
	Reason    string           `json:"reason"`
	// Processes are the pod's processes on its node's GPUs; InUse the
	// distinct GPUs they run on (a pod holding 2 may use 1).
	Processes []ProcessUse `json:"processes"`
	InUse     []int        `json:"gpus_in_use"`
}

// ProcessUse is a process on a GPU, with its GPU's utilisation (nil when
// NVML does not give it, or the GPU is in MIG mode).
type ProcessUse struct {
	GPU                int     `json:"gpu"`
	GPUInstance        *int    `json:"gpu_instance,omitempty"`
	PID                uint32  `json:"pid"`
	Name               string  `json:"name,omitempty"`
	UsedMiB            uint64  `json:"used_mib"`
	UtilizationPercent *uint32 `json:"utilization_percent,omitempty"`
}

// UnallocatedProcess is a process using a GPU of a node without a pod on
// that node holding a GPU resource: a process outside Kubernetes (its
// cgroup names no pod), or in a pod that requested no GPU.
type UnallocatedProcess struct {
	Node string `json:"node"`
	Host string `json:"host,omitempty"`
	ProcessUse
	PodUID string `json:"pod_uid,omitempty"`
	// Pod is namespace/name when the API server knows the pod.
	Pod    string `json:"pod,omitempty"`
	Reason string `json:"reason"`
}

// StrandedMIG is MIG capacity that exists on a node and that no pod can
// be given: for one MIG profile, the GPU instances the probe sees beyond
// what the node advertises for it (nvidia.com/mig-PROFILE with the
// device plugin's mixed strategy; nvidia.com/gpu, counting the GPUs
// not in MIG mode too, with the single strategy, the node label
// nvidia.com/mig.strategy=single), less those a process runs in (those
// are in use, and listed as unallocated when no pod holds them); or, with
// Profile "" (no instance), GPUs in MIG mode with no instance at all,
// which nothing can use. An advertised instance no pod holds is free
// capacity, not stranded; a held one with no process is an idle pod.
type StrandedMIG struct {
	Node       string `json:"node"`
	Profile    string `json:"profile"`
	Resource   string `json:"resource,omitempty"`
	Instances  int64  `json:"instances"`
	Advertised int64  `json:"advertised"`
	Stranded   int64  `json:"stranded"`
	GPUs       []int  `json:"gpus"`
}

// NodeUse is one node's side of the reconciliation.
type NodeUse struct {
	Node string `json:"node"`
	Host string `json:"host,omitempty"`
	// Probed is false when there is no snapshot; NotProbed says why.
	Probed      bool             `json:"probed"`
	NotProbed   string           `json:"not_probed,omitempty"`
	Allocatable map[string]int64 `json:"allocatable"`
	Allocated   map[string]int64 `json:"allocated"`
	// GPUs is how many physical GPUs the probe saw; BusyGPUs the indexes
	// of those busy: a process listed on it, utilisation above 0%, or
	// more than IdleMemoryMiB of memory used.
	GPUs        int   `json:"gpus"`
	BusyGPUs    []int `json:"busy_gpus"`
	Usage       Usage `json:"usage"`
	Unallocated int   `json:"unallocated_processes"`
	StrandedMIG int64 `json:"stranded_mig"`
}

// NamespaceUse is what one namespace's pods hold, by state.
type NamespaceUse struct {
	Namespace string `json:"namespace"`
	Pods      int    `json:"pods"`
	Usage     Usage  `json:"usage"`
}

// Totals sum the reconciliation.
type Totals struct {
	Nodes       int   `json:"nodes"`
	Probed      int   `json:"probed"`
	NotProbed   int   `json:"not_probed"`
	Pods        int   `json:"pods"`
	Usage       Usage `json:"usage"`
	Unallocated int   `json:"unallocated_processes"`
	// UnallocatedGPUs counts the distinct GPUs (node and index) that
	// unallocated processes use.
	UnallocatedGPUs int   `json:"unallocated_gpus"`
	StrandedMIG     int64 `json:"stranded_mig"`
}

// Wrong reports whether the reconciliation found money lost: a pod
// holding devices idle, or a GPU used without an allocation.
func (r Reconciliation) Wrong() bool {
	return !r.Totals.Usage.Idle.Zero() || r.Totals.Unallocated > 0
}

// Reconcile joins the cluster's objects with the probe's snapshots of its
// nodes, by node name. It covers every GPU node and every node with a
// snapshot; a node absent from probes, or with no snapshot, is not probed
// (the NodeProbe's Err says why) and its pods' state is unknown. It is a
// pure function of its arguments.
func Reconcile(objs *Objects, probes map[string]NodeProbe) Reconciliation {
	in := reconcileIndex(objs)
	r := Reconciliation{Nodes: []NodeUse{}, Pods: []PodUse{}, Unallocated: []UnallocatedProcess{}, StrandedMIG: []StrandedMIG{}, Namespaces: []NamespaceUse{}}
	for _, name := range in.nodeNames(probes) {
		p := probes[name]
		nu := NodeUse{Node: name, Host: p.Host, Allocatable: map[string]int64{}, Allocated: map[string]int64{}, BusyGPUs: []int{}}
		if g, ok := in.gpuNodes[name]; ok {
			nu.Allocatable, nu.Allocated = g.Allocatable, g.Allocated
		}
		pods := in.podsOn[name]
		if p.Snapshot == nil {
			nu.NotProbed = cmp.Or(p.Err, "no host maps to this node")
			for _, pod := range pods {
				r.Pods = append(r.Pods, podUse(pod, PodUnknown, "its node was not probed: "+nu.NotProbed))
			}
		} else {
			nu.Probed = true
			ns := nodeSnapshot{node: name, host: p.Host, snap: p.Snapshot}
			nu.GPUs, nu.BusyGPUs = len(p.Snapshot.GPUs), ns.busyGPUs()
			r.Pods = append(r.Pods, ns.pods(pods)...)
			un := ns.unallocated(pods, in.podsByUID)
			nu.Unallocated = len(un)
			r.Unallocated = append(r.Unallocated, un...)
			st := ns.strandedMIG(in.gpuNodes[name], in.nodes[name])
			for _, s := range st {
				nu.StrandedMIG += s.Stranded
			}
			r.StrandedMIG = append(r.StrandedMIG, st...)
		}
		r.Nodes = append(r.Nodes, nu)
	}
	r.total()
	return r
}

// total fills the per-node and per-namespace usage and the totals.
func (r *Reconciliation) total() {
	slices.SortFunc(r.Pods, func(a, b PodUse) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	nodes := map[string]*NodeUse{}
	for i := range r.Nodes {
		nodes[r.Nodes[i].Node] = &r.Nodes[i]
	}
	byNS := map[string]*NamespaceUse{}
	for _, p := range r.Pods {
		nodes[p.Node].Usage.add(p)
		n := byNS[p.Namespace]
		if n == nil {
			n = &NamespaceUse{Namespace: p.Namespace}
			byNS[p.Namespace] = n
		}
		n.Pods++
		n.Usage.add(p)
		r.Totals.Usage.add(p)
	}
	for _, n := range byNS {
		r.Namespaces = append(r.Namespaces, *n)
	}
	slices.SortFunc(r.Namespaces, func(a, b NamespaceUse) int { return strings.Compare(a.Namespace, b.Namespace) })
	t := &r.Totals
	t.Nodes, t.Pods, t.Unallocated = len(r.Nodes), len(r.Pods), len(r.Unallocated)
	for _, n := range r.Nodes {
		if n.Probed {
			t.Probed++
		} else {
			t.NotProbed++
		}
		t.StrandedMIG += n.StrandedMIG
	}
	gpus := map[string]bool{}
	for _, u := range r.Unallocated {
		gpus[fmt.Sprintf("%s/%d", u.Node, u.GPU)] = true
	}
	t.UnallocatedGPUs = len(gpus)
}

// clusterIndex is the objects arranged for the join.
type clusterIndex struct {
	nodes     map[string]*corev1.Node
	gpuNodes  map[string]GPUNode
	podsOn    map[string][]*corev1.Pod // non-terminated pods holding devices, by node
	podsByUID map[string]*corev1.Pod   // every non-terminated pod
}

func reconcileIndex(objs *Objects) clusterIndex {
	in := clusterIndex{nodes: map[string]*corev1.Node{}, gpuNodes: map[string]GPUNode{}, podsOn: map[string][]*corev1.Pod{}, podsByUID: map[string]*corev1.Pod{}}
	for _, n := range objs.Nodes {
		in.nodes[n.Name] = n
	}
	for _, g := range objs.GPUNodes() {
		in.gpuNodes[g.Name] = g
	}
	for _, p := range objs.Pods {
		if terminated(p) {
			continue
		}
		in.podsByUID[string(p.UID)] = p
		if p.Spec.NodeName != "" && !heldDevices(p).Zero() {
			in.podsOn[p.Spec.NodeName] = append(in.podsOn[p.Spec.NodeName], p)
		}
	}
	return in
}

// nodeNames are the GPU nodes and the nodes probed, sorted.
func (in clusterIndex) nodeNames(probes map[string]NodeProbe) []string {
	var names []string
	for n := range in.gpuNodes {
		names = append(names, n)
	}
	for n := range probes {
		if _, gpu := in.gpuNodes[n]; !gpu && in.nodes[n] != nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// deviceResource reports whether a GPU resource counts devices (not
// HAMi's memory or core amounts).
func deviceResource(name corev1.ResourceName) bool {
	n := strings.ToLower(string(name))
	return GPUResource(name) && !strings.Contains(n, "gpumem") && !strings.Contains(n, "gpucores")
}

// migProfile is the MIG profile of a nvidia.com/mig-PROFILE resource.
func migProfile(name string) (string, bool) {
	return strings.CutPrefix(strings.ToLower(name), "nvidia.com/mig-")
}

// podDevices are the device resources a pod requests, and their count.
func podDevices(p *corev1.Pod) (map[string]int64, Devices) {
	res := map[string]int64{}
	var d Devices
	for name, q := range PodRequests(p) {
		if !deviceResource(name) || q.Value() <= 0 {
			continue
		}
		res[string(name)] = q.Value()
		if _, mig := migProfile(string(name)); mig {
			d.MIGSlices += q.Value()
		} else {
			d.GPUs += q.Value()
		}
	}
	return res, d
}

func heldDevices(p *corev1.Pod) Devices { _, d := podDevices(p); return d }

func podUse(p *corev1.Pod, state PodState, reason string) PodUse {
	res, held := podDevices(p)
	return PodUse{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Node: p.Spec.NodeName, Resources: res, Held: held,
		State: state, Reason: reason, Processes: []ProcessUse{}, InUse: []int{}}
}
