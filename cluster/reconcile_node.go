package cluster

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/probes/report"
)

// nodeSnapshot is one probed node.
type nodeSnapshot struct {
	node, host string
	snap       *report.Snapshot
}

// gpu returns the snapshot's GPU of index i (nil when it has none).
func (ns nodeSnapshot) gpu(i int) *report.GPU {
	for k := range ns.snap.GPUs {
		if ns.snap.GPUs[k].Index == i {
			return &ns.snap.GPUs[k]
		}
	}
	return nil
}

func migMode(g *report.GPU) bool { return g != nil && g.MIG.Current == "enabled" }

// utilization is GPU i's utilisation, nil when NVML did not give it or
// the GPU is in MIG mode (where NVML's figure is not the instances').
func (ns nodeSnapshot) utilization(i int) *uint32 {
	g := ns.gpu(i)
	if g == nil || g.Utilization == nil || migMode(g) {
		return nil
	}
	u := g.Utilization.GPUPercent
	return &u
}

// busyGPUs lists the GPUs with a process, utilisation above 0%, or more
// than IdleMemoryMiB used.
func (ns nodeSnapshot) busyGPUs() []int {
	busy := []int{}
	for _, g := range ns.snap.GPUs {
		used := slices.ContainsFunc(ns.snap.Processes, func(p report.Process) bool { return p.GPU == g.Index })
		if u := ns.utilization(g.Index); u != nil && *u > 0 {
			used = true
		}
		if g.Memory != nil && g.Memory.UsedMiB > IdleMemoryMiB {
			used = true
		}
		if used {
			busy = append(busy, g.Index)
		}
	}
	return busy
}

func (ns nodeSnapshot) processUse(p report.Process) ProcessUse {
	return ProcessUse{GPU: p.GPU, GPUInstance: p.GPUInstanceID, PID: p.PID, Name: p.Name, UsedMiB: p.UsedMiB, UtilizationPercent: ns.utilization(p.GPU)}
}

// pods classifies the pods holding devices on the node (see PodState).
func (ns nodeSnapshot) pods(pods []*corev1.Pod) []PodUse {
	var out []PodUse
	for _, pod := range pods {
		u := podUse(pod, PodIdle, "")
		active := false
		for _, p := range ns.snap.Processes {
			if p.PodUID == "" || p.PodUID != u.UID {
				continue
			}
			pu := ns.processUse(p)
			u.Processes = append(u.Processes, pu)
			if !slices.Contains(u.InUse, p.GPU) {
				u.InUse = append(u.InUse, p.GPU)
			}
			active = active || pu.UtilizationPercent == nil || *pu.UtilizationPercent > 0
		}
		slices.Sort(u.InUse)
		switch {
		case active:
			u.State, u.Reason = PodBusy, fmt.Sprintf("%s on GPU %s", text.Plural(len(u.Processes), "process", "processes"), intList(u.InUse))
		case len(u.Processes) > 0:
			verb := "shows"
			if len(u.InUse) > 1 {
				verb = "show"
			}
			u.Reason = fmt.Sprintf("%s on GPU %s, which %s 0%% utilisation", text.Plural(len(u.Processes), "process", "processes"), intList(u.InUse), verb)
		case pod.Status.Phase == corev1.PodPending:
			u.State, u.Reason = PodStarting, "bound, not yet running (phase Pending)"
		default:
			u.Reason = "no process of it on any GPU of " + ns.node
		}
		out = append(out, u)
	}
	return out
}

// unallocated lists the node's processes that no pod holding devices on
// the node owns.
func (ns nodeSnapshot) unallocated(pods []*corev1.Pod, byUID map[string]*corev1.Pod) []UnallocatedProcess {
	holders := map[string]bool{}
	for _, p := range pods {
		holders[string(p.UID)] = true
	}
	var out []UnallocatedProcess
	for _, p := range ns.snap.Processes {
		if p.PodUID != "" && holders[p.PodUID] {
			continue
		}
		u := UnallocatedProcess{Node: ns.node, Host: ns.host, ProcessUse: ns.processUse(p), PodUID: p.PodUID}
		pod := byUID[p.PodUID]
		switch {
		case p.PodUID == "":
			u.Reason = "not in a pod (its cgroup names none): a process outside Kubernetes"
		case pod == nil:
			u.Reason = "in pod UID " + p.PodUID + ", which the API server does not have (deleted, or a static pod)"
		case pod.Spec.NodeName != ns.node:
			u.Pod = pod.Namespace + "/" + pod.Name
			u.Reason = fmt.Sprintf("in pod %s, which the API server places on %s", u.Pod, pod.Spec.NodeName)
		default:
			u.Pod = pod.Namespace + "/" + pod.Name
			u.Reason = "in pod " + u.Pod + ", which requests no GPU resource"
		}
		out = append(out, u)
	}
	return out
}

// strandedMIG is the node's stranded MIG capacity (see StrandedMIG).
func (ns nodeSnapshot) strandedMIG(g GPUNode, node *corev1.Node) []StrandedMIG {
	type profile struct {
		instances, used int64
		gpus            []int
	}
	byProfile := map[string]*profile{}
	var empty []int
	var whole int64 // GPUs not in MIG mode
	for _, gpu := range ns.snap.GPUs {
		if !migMode(&gpu) {
			whole++
			continue
		}
		if len(gpu.MIG.GPUInstances) == 0 {
			empty = append(empty, gpu.Index)
		}
		for _, gi := range gpu.MIG.GPUInstances {
			p := byProfile[gi.Profile]
			if p == nil {
				p = &profile{}
				byProfile[gi.Profile] = p
			}
			p.instances++
			if !slices.Contains(p.gpus, gpu.Index) {
				p.gpus = append(p.gpus, gpu.Index)
			}
			if ns.instanceUsed(gpu.Index, gi.ID) {
				p.used++
			}
		}
	}
	var out []StrandedMIG
	single := node != nil && node.Labels["nvidia.com/mig.strategy"] == "single"
	if single && len(byProfile) > 0 {
		var all profile
		for _, p := range byProfile {
			all.instances += p.instances
			all.used += p.used
			all.gpus = append(all.gpus, p.gpus...)
		}
		slices.Sort(all.gpus)
		adv := g.Allocatable["nvidia.com/gpu"] - whole
		if s := min(all.instances-adv, all.instances-all.used); s > 0 {
			out = append(out, StrandedMIG{Node: ns.node, Profile: "*", Resource: "nvidia.com/gpu", Instances: all.instances, Advertised: max(adv, 0), Stranded: s, GPUs: all.gpus})
		}
	} else {
		for name, p := range byProfile {
			res := "nvidia.com/mig-" + name
			adv := g.Allocatable[res]
			if s := min(p.instances-adv, p.instances-p.used); s > 0 {
				out = append(out, StrandedMIG{Node: ns.node, Profile: name, Resource: res, Instances: p.instances, Advertised: adv, Stranded: s, GPUs: p.gpus})
			}
		}
	}
	if len(empty) > 0 {
		out = append(out, StrandedMIG{Node: ns.node, Stranded: int64(len(empty)), GPUs: empty})
	}
	slices.SortFunc(out, func(a, b StrandedMIG) int { return strings.Compare(a.Profile, b.Profile) })
	return out
}

// instanceUsed reports whether a process runs in GPU instance gi of gpu.
func (ns nodeSnapshot) instanceUsed(gpu, gi int) bool {
	return slices.ContainsFunc(ns.snap.Processes, func(p report.Process) bool {
		return p.GPU == gpu && p.GPUInstanceID != nil && *p.GPUInstanceID == gi
	})
}

func intList(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
