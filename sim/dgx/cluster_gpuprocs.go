package dgx

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/gpulab/gpulab/sim/spec"
)

// gpuProgram is what a running GPU pod's container does on each GPU it
// holds, as NVML would list it: the process name, its memory and the
// GPU's utilisation. Notebooks hold their GPU and run nothing on it: the
// allocated-and-idle GPU that reconciliation is for.
var gpuProgram = map[string]struct {
	name    string
	usedMiB uint64
	util    uint32
}{
	"trainer": {"python", 34816, 96},
	"triton":  {"tritonserver", 21504, 58},
}

// strayGPU is the process outside Kubernetes on the sick host: someone's
// script on a GPU the scheduler thinks is free.
const strayCgroup = "0::/user.slice/user-1000.slice/session-7.scope"

// Workload is what runs on node's GPUs now, for the probe's simulator
// (spec.Faults' Processes and Utilization): a process per GPU of each
// running training or inference pod, in the pod's cgroup, busy; nothing on
// a notebook's GPU; and, on the sick host, one process outside Kubernetes
// on a GPU no pod holds. Pods on MIG instances run nothing. A node that
// is not in the cluster has no workload.
func (c *Cluster) Workload(node string) ([]spec.Process, map[int]uint32) {
	s := c.state()
	defer c.mu.Unlock()
	i := slices.IndexFunc(s.nodes, func(n *knode) bool { return n.name == node })
	if i < 0 {
		return nil, nil
	}
	n := s.nodes[i]
	var procs []spec.Process
	util := map[int]uint32{}
	held := map[int]bool{}
	for _, p := range s.pods {
		if p.node != node || p.state(s.now).phase != "Running" {
			continue
		}
		for _, d := range p.devices {
			held[d] = true
		}
		prog, ok := gpuProgram[p.container]
		if !ok {
			continue
		}
		for _, d := range p.devices {
			procs = append(procs, spec.Process{GPU: d, PID: pidOf(p.uid, d), Name: prog.name, UsedMiB: prog.usedMiB, Cgroup: podCgroup(p)})
			util[d] = prog.util
		}
	}
	if !isHealthyNode(n) {
		if g := slices.IndexFunc(n.healthy, func(i int) bool { return !held[i] && !n.faults.MIGOn(i) }); g >= 0 {
			gpu := n.healthy[g]
			procs = append(procs, spec.Process{GPU: gpu, PID: 4242, Name: "python3", UsedMiB: 12288, Cgroup: strayCgroup})
			util[gpu] = 37
		}
	}
	return procs, util
}

func isHealthyNode(n *knode) bool {
	return len(n.faults.NVLinkDown) == 0 && len(n.faults.ECC) == 0 && len(n.faults.XIDs) == 0 && len(n.faults.SXids) == 0 && len(n.faults.KernelLog) == 0 && len(n.faults.MIG) == 0
}

// pidOf is a process's PID, the same for a pod and GPU every time.
func pidOf(uid string, gpu int) uint32 {
	h := fnv.New32a()
	h.Write([]byte(uid))
	return 10000 + h.Sum32()%500000*8 + uint32(gpu)
}

// podCgroup is a pod's container cgroup as the kubelet's systemd driver
// names it: the QoS class's slice, the pod's UID with underscores, the
// container's scope.
func podCgroup(p *kpod) string {
	qos := "kubepods-burstable.slice/kubepods-burstable-pod"
	if p.req.cpu == p.lim.cpu && p.req.mem == p.lim.mem && p.req.cpu > 0 {
		qos = "kubepods-pod"
	}
	uid := strings.ReplaceAll(p.uid, "-", "_")
	return fmt.Sprintf("0::/kubepods.slice/%s%s.slice/cri-containerd-%s.scope", qos, uid, digest("container", p.uid))
}
