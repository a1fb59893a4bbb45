package dgx

import (
	"fmt"
	"strings"
	"time"
)

// The objects as the API serves them, for -o jsonpath and wait
// --for=jsonpath: the fields the simulation keeps, with the API's names
// and types (quantities as strings). Fields it does not keep are absent,
// and a template reading them prints nothing.

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func meta(ns, name, uid string, created time.Time, labels map[string]string) map[string]any {
	m := map[string]any{"name": name, "uid": uid, "creationTimestamp": rfc3339(created)}
	if ns != "" {
		m["namespace"] = ns
	}
	if len(labels) > 0 {
		m["labels"] = anyMap(labels)
	}
	return m
}

func quantities(l [][2]string) map[string]any {
	m := map[string]any{}
	for _, r := range l {
		m[r[0]] = r[1]
	}
	return m
}

func (s *kstate) nodeObject(n *knode) map[string]any {
	var conds []any
	for _, c := range [][2]string{{"MemoryPressure", "False"}, {"DiskPressure", "False"}, {"PIDPressure", "False"}, {"Ready", "True"}} {
		conds = append(conds, map[string]any{"type": c[0], "status": c[1]})
	}
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": meta("", n.name, uuidOf("node", n.name), n.created, n.labels),
		"spec":     map[string]any{"podCIDR": n.podCIDR, "podCIDRs": []any{n.podCIDR}},
		"status": map[string]any{
			"capacity":    quantities(resourceList(nodeCPUMilli, nodeMemKi*1024, binaryQuantity(nodeDiskKi*1024), n.capacity())),
			"allocatable": quantities(resourceList(nodeCPUAllocMilli, nodeMemAllocKi*1024, fmt.Sprint(int64(nodeDiskAllocBytes)), n.allocatable())),
			"conditions":  conds,
			"addresses":   []any{map[string]any{"type": "InternalIP", "address": n.ip}, map[string]any{"type": "Hostname", "address": n.name}},
			"nodeInfo": map[string]any{"kubeletVersion": kubeServerVersion, "containerRuntimeVersion": containerdVersion,
				"kernelVersion": kernelVersion, "osImage": osImage, "operatingSystem": "linux", "architecture": "amd64"},
		},
	}
	n.nodeWritten(obj)
	return obj
}

func resourceMap(r kres) map[string]any {
	return quantities(resourceLines(r))
}

func (s *kstate) podObject(p *kpod) map[string]any {
	st := p.state(s.now)
	c := map[string]any{"name": p.container, "image": p.image,
		"resources": map[string]any{"limits": resourceMap(p.lim), "requests": resourceMap(requestsOf(p))}}
	if len(p.command) > 0 {
		c["command"] = toAnyList(p.command)
	}
	var env []any
	for _, e := range p.env {
		env = append(env, map[string]any{"name": e.name, "value": e.value})
	}
	if env != nil {
		c["env"] = env
	}
	spec := map[string]any{"containers": []any{c}, "restartPolicy": p.restartPolicy, "priority": p.priority,
		"priorityClassName": p.priorityClass, "schedulerName": "default-scheduler", "serviceAccountName": "default"}
	status := map[string]any{"phase": st.phase}
	conds := []any{map[string]any{"type": "PodScheduled", "status": map[bool]string{true: "True", false: "False"}[p.node != ""]}}
	if p.node != "" {
		spec["nodeName"] = p.node
		status["podIP"], status["hostIP"], status["startTime"] = p.ip, s.node[p.node].ip, rfc3339(p.started)
		ready := map[bool]string{true: "True", false: "False"}[st.ready]
		conds = append(conds, map[string]any{"type": "Initialized", "status": "True"},
			map[string]any{"type": "Ready", "status": ready}, map[string]any{"type": "ContainersReady", "status": ready})
	} else {
		conds[0].(map[string]any)["reason"] = "Unschedulable"
	}
	status["conditions"] = conds
	md := meta(p.ns, p.name, p.uid, p.created, p.labels)
	if p.ownerKind != "" {
		md["ownerReferences"] = []any{s.ownerReference(p)}
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec, "status": status}
}

// ownerReference is the pod's controller as its ownerReferences name it
// (a drain reads it: a pod no controller makes again is not evicted).
func (s *kstate) ownerReference(p *kpod) map[string]any {
	apiVersion, uid := "apps/v1", uuidOf(strings.ToLower(p.ownerKind), p.ns, p.ownerName)
	if p.ownerKind == "Job" {
		apiVersion = "batch/v1"
		for _, j := range s.jobs {
			if j.ns == p.ns && j.name == p.ownerName {
				uid = j.uid
			}
		}
	}
	return map[string]any{"apiVersion": apiVersion, "kind": p.ownerKind, "name": p.ownerName, "uid": uid,
		"controller": true, "blockOwnerDeletion": true}
}

func toAnyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// clusterQueueObject is a Kueue ClusterQueue: its quota and what its
// admitted Workloads use (status.flavorsUsage).
func (s *kstate) clusterQueueObject(cq *kclusterQueue) map[string]any {
	used := s.cqUsage(cq)
	borrowed := max(0, used-cq.nominal)
	admitted, pending := 0, 0
	for _, j := range s.jobs {
		if s.clusterQueueOf(j) == cq {
			if j.admitted {
				admitted++
			} else {
				pending++
			}
		}
	}
	return map[string]any{
		"apiVersion": kueueGroup + "/v1beta1", "kind": "ClusterQueue",
		"metadata": meta("", cq.name, uuidOf("cq", cq.name), cq.created, nil),
		"spec": map[string]any{"cohort": cq.cohort, "namespaceSelector": map[string]any{},
			"resourceGroups": []any{map[string]any{"coveredResources": []any{"nvidia.com/gpu"},
				"flavors": []any{map[string]any{"name": "default-flavor", "resources": []any{
					map[string]any{"name": "nvidia.com/gpu", "nominalQuota": fmt.Sprint(cq.nominal)}}}}}}},
		"status": map[string]any{"admittedWorkloads": admitted, "pendingWorkloads": pending, "reservingWorkloads": admitted,
			"flavorsUsage": []any{map[string]any{"name": "default-flavor", "resources": []any{
				map[string]any{"name": "nvidia.com/gpu", "total": fmt.Sprint(used), "borrowed": fmt.Sprint(borrowed)}}}},
			"flavorsReservation": []any{map[string]any{"name": "default-flavor", "resources": []any{
				map[string]any{"name": "nvidia.com/gpu", "total": fmt.Sprint(used), "borrowed": fmt.Sprint(borrowed)}}}}},
	}
}

func (s *kstate) jobObject(j *kjob) map[string]any {
	active, succeeded, failed := 0, 0, 0
	for _, p := range s.jobPods(j) {
		switch p.state(s.now).phase {
		case "Succeeded":
			succeeded++
		case "Failed":
			failed++
		default:
			active++
		}
	}
	status := map[string]any{}
	for k, v := range map[string]int{"active": active, "succeeded": succeeded, "failed": failed} {
		if v > 0 {
			status[k] = v
		}
	}
	return map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(j.ns, j.name, j.uid, j.created, j.labels),
		"spec":   map[string]any{"parallelism": j.parallelism, "completions": j.parallelism, "suspend": j.suspend},
		"status": status}
}
