package dgx

import (
	"fmt"
	"strconv"
	"strings"
)

// The rows of each type kubectl get lists, in the API's order (by
// namespace, then name).

func (s *kstate) nodeItems() []kubeItem {
	var out []kubeItem
	for _, n := range s.nodes {
		out = append(out, kubeItem{name: n.name,
			cells:  []string{n.name, n.nodeStatus(), "<none>", humanDuration(s.now.Sub(n.created)), kubeServerVersion},
			wide:   []string{n.ip, "<none>", osImage, kernelVersion, containerdVersion},
			fields: map[string]string{"metadata.name": n.name, "spec.unschedulable": strconv.FormatBool(n.unschedulable)},
			labels: n.labels, obj: func() map[string]any { return s.nodeObject(n) }})
	}
	return out
}

func (s *kstate) podItems() []kubeItem {
	pods := append([]*kpod(nil), s.pods...)
	sortPods(pods)
	var out []kubeItem
	for _, p := range pods {
		st := p.state(s.now)
		ready := "0/1"
		if st.ready {
			ready = "1/1"
		}
		restarts := strconv.Itoa(p.restarts)
		if p.restarts > 0 {
			restarts = fmt.Sprintf("%d (%s ago)", p.restarts, humanDuration(s.now.Sub(p.lastRestart)))
		}
		ip, node := orNone(p.ip), orNone(p.node)
		out = append(out, kubeItem{ns: p.ns, name: p.name,
			cells: []string{p.name, ready, st.status(), restarts, humanDuration(s.now.Sub(p.created))},
			wide:  []string{ip, node, "<none>", "<none>"},
			fields: map[string]string{"metadata.name": p.name, "metadata.namespace": p.ns, "spec.nodeName": p.node,
				"status.phase": st.phase, "spec.restartPolicy": p.restartPolicy, "spec.schedulerName": "default-scheduler",
				"spec.serviceAccountName": "default", "status.podIP": p.ip, "status.nominatedNodeName": ""},
			labels: p.labels, obj: func() map[string]any { return s.podObject(p) }})
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func (s *kstate) eventItems() []kubeItem {
	var out []kubeItem
	for _, e := range s.eventViews() {
		obj := map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": meta(e.ns, e.key, uuidOf("event", e.ns, e.key), e.first, nil),
			"involvedObject": map[string]any{"kind": e.kind, "name": e.object, "namespace": e.ns},
			"reason":         e.reason, "message": e.msg, "type": e.typ, "count": e.count, "source": map[string]any{"component": e.from},
			"firstTimestamp": rfc3339(e.first), "lastTimestamp": rfc3339(e.last)}
		out = append(out, kubeItem{ns: e.ns, name: e.key,
			cells: []string{humanDuration(s.now.Sub(e.last)), e.typ, e.reason, e.target(), strings.TrimSpace(e.msg)},
			fields: map[string]string{"metadata.name": e.key, "metadata.namespace": e.ns, "involvedObject.kind": e.kind,
				"involvedObject.name": e.object, "involvedObject.namespace": e.ns, "involvedObject.apiVersion": kindAPIVersion(e.kind),
				"involvedObject.uid": "", "involvedObject.resourceVersion": "", "involvedObject.fieldPath": "",
				"reason": e.reason, "type": e.typ, "source": e.from, "reportingComponent": e.from},
			obj: func() map[string]any { return obj }})
	}
	return out
}

func kindAPIVersion(kind string) string {
	switch kind {
	case "Job":
		return "batch/v1"
	case "Workload":
		return kueueGroup + "/v1beta1"
	}
	return "v1"
}

func (s *kstate) quotaItems() []kubeItem {
	var out []kubeItem
	for _, q := range s.quotas {
		used := s.quotaUsed(q)
		obj := map[string]any{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta(q.ns, q.name, uuidOf("quota", q.ns, q.name), q.created, nil),
			"spec":   map[string]any{"hard": map[string]any{"requests.nvidia.com/gpu": fmt.Sprint(q.hard)}},
			"status": map[string]any{"hard": map[string]any{"requests.nvidia.com/gpu": fmt.Sprint(q.hard)}, "used": map[string]any{"requests.nvidia.com/gpu": fmt.Sprint(used)}}}
		out = append(out, kubeItem{ns: q.ns, name: q.name,
			cells:  []string{q.name, humanDuration(s.now.Sub(q.created)), fmt.Sprintf("requests.nvidia.com/gpu: %d/%d", used, q.hard), ""},
			fields: map[string]string{"metadata.name": q.name, "metadata.namespace": q.ns},
			obj:    func() map[string]any { return obj }})
	}
	return out
}

func (s *kstate) priorityItems() []kubeItem {
	var out []kubeItem
	for _, p := range s.prios {
		obj := map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta("", p.name, uuidOf("pc", p.name), p.created, nil),
			"value": p.value, "globalDefault": p.globalDefault, "preemptionPolicy": p.policy}
		out = append(out, kubeItem{name: p.name,
			cells:  []string{p.name, strconv.Itoa(p.value), strconv.FormatBool(p.globalDefault), humanDuration(s.now.Sub(p.created)), p.policy},
			fields: map[string]string{"metadata.name": p.name},
			obj:    func() map[string]any { return obj }})
	}
	return out
}

func (s *kstate) crdItems() []kubeItem {
	crds := append([]kcrd(nil), s.crds...)
	sortBy(crds, kcrd.name)
	var out []kubeItem
	for _, c := range crds {
		obj := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": meta("", c.name(), uuidOf("crd", c.name()), c.created, nil),
			"spec":     map[string]any{"group": c.group, "names": map[string]any{"plural": c.plural}}}
		out = append(out, kubeItem{name: c.name(), cells: []string{c.name(), rfc3339(c.created)},
			fields: map[string]string{"metadata.name": c.name()}, obj: func() map[string]any { return obj }})
	}
	return out
}

func (s *kstate) namespaceItems() []kubeItem {
	nss := append([]knamespace(nil), s.namespaces...)
	sortBy(nss, func(n knamespace) string { return n.name })
	var out []kubeItem
	for _, n := range nss {
		obj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": meta("", n.name, uuidOf("ns", n.name), n.created, nil),
			"status": map[string]any{"phase": "Active"}}
		out = append(out, kubeItem{name: n.name, cells: []string{n.name, "Active", humanDuration(s.now.Sub(n.created))},
			fields: map[string]string{"metadata.name": n.name, "status.phase": "Active"}, obj: func() map[string]any { return obj }})
	}
	return out
}

func (s *kstate) jobItems() []kubeItem {
	jobs := append([]*kjob(nil), s.jobs...)
	sortBy(jobs, func(j *kjob) string { return j.ns + "/" + j.name })
	var out []kubeItem
	for _, j := range jobs {
		out = append(out, kubeItem{ns: j.ns, name: j.name, fields: map[string]string{"metadata.name": j.name, "metadata.namespace": j.ns},
			labels: j.labels, obj: func() map[string]any { return s.jobObject(j) }})
	}
	return out
}

func (s *kstate) clusterQueueItems() []kubeItem {
	var out []kubeItem
	for _, cq := range s.cqs {
		out = append(out, kubeItem{name: cq.name, fields: map[string]string{"metadata.name": cq.name},
			obj: func() map[string]any { return s.clusterQueueObject(cq) }})
	}
	return out
}

func (s *kstate) localQueueItems() []kubeItem {
	var out []kubeItem
	for _, lq := range s.lqs {
		obj := map[string]any{"apiVersion": kueueGroup + "/v1beta1", "kind": "LocalQueue",
			"metadata": meta(lq.ns, lq.name, uuidOf("lq", lq.ns, lq.name), s.epoch.Add(-queueSetupAt), nil),
			"spec":     map[string]any{"clusterQueue": lq.clusterQueue}}
		out = append(out, kubeItem{ns: lq.ns, name: lq.name, fields: map[string]string{"metadata.name": lq.name, "metadata.namespace": lq.ns},
			obj: func() map[string]any { return obj }})
	}
	return out
}

func (s *kstate) workloadItems() []kubeItem {
	var out []kubeItem
	for _, j := range s.jobs {
		if j.workload == "" {
			continue
		}
		status := map[bool]string{true: "True", false: "False"}[j.admitted]
		obj := map[string]any{"apiVersion": kueueGroup + "/v1beta1", "kind": "Workload",
			"metadata": meta(j.ns, j.workload, uuidOf("wl", j.ns, j.workload), j.created, nil),
			"spec":     map[string]any{"queueName": j.queue},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "QuotaReserved", "status": status},
				map[string]any{"type": "Admitted", "status": status}}}}
		if cq := s.clusterQueueOf(j); cq != nil && j.admitted {
			obj["status"].(map[string]any)["admission"] = map[string]any{"clusterQueue": cq.name}
		}
		out = append(out, kubeItem{ns: j.ns, name: j.workload, fields: map[string]string{"metadata.name": j.workload, "metadata.namespace": j.ns},
			obj: func() map[string]any { return obj }})
	}
	return out
}

// crdOf is the CRD a type names ("clusterpolicies", "clusterpolicy",
// "nodefeatures.nfd.k8s-sigs.io"), "" if none does.
func (s *kstate) crdOf(typ string) string {
	typ = strings.ToLower(typ)
	for _, c := range s.crds {
		for _, n := range []string{c.plural, strings.TrimSuffix(c.plural, "s"), strings.TrimSuffix(c.plural, "es")} {
			if typ == n || typ == n+"."+c.group {
				return c.name()
			}
		}
	}
	return ""
}

// sortBy sorts a slice by a string key, stably.
func sortBy[T any](s []T, key func(T) string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && key(s[j]) < key(s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// describe is describe node(s) and describe pod(s): by name, by name
// prefix when no object has the name (kubectl's DescribeMatchingResources),
// or all of them.
func (k *kubeRun) describe() int {
	kind, names, code := k.resourceArgs()
	if kind == nil {
		return code
	}
	if kind.plural != "nodes" && kind.plural != "pods" {
		return k.fail("error: the SIMULATED cluster describes nodes and pods, not %s", kind.plural)
	}
	s := k.h.Cluster.state()
	defer k.h.Cluster.mu.Unlock()
	defer s.indexPods()()
	items, _ := k.selected(s, kind, nil)
	var out []string
	if len(names) == 0 {
		for _, it := range items {
			out = append(out, k.describeItem(s, kind, it))
		}
	}
	for _, n := range names {
		var match []string
		for _, it := range items {
			if it.name == n {
				match = []string{k.describeItem(s, kind, it)}
				break
			}
			if strings.HasPrefix(it.name, n) {
				match = append(match, k.describeItem(s, kind, it))
			}
		}
		if len(match) == 0 {
			k.t.print(strings.Join(out, "\n\n"))
			return k.fail("%s", notFound(kind.plural, n))
		}
		out = append(out, match...)
	}
	if len(out) == 0 {
		if kind.namespaced && !k.inv.bool("all-namespaces") {
			k.t.eprint("No resources found in " + k.namespace() + " namespace.\n")
		} else {
			k.t.eprint("No resources found\n")
		}
		return 0
	}
	k.t.print(strings.Join(out, "\n\n"))
	return 0
}

func (k *kubeRun) describeItem(s *kstate, kind *kubeKind, it kubeItem) string {
	if kind.plural == "nodes" {
		return s.nodeDescription(s.node[it.name])
	}
	return s.podDescription(s.findPod(it.ns, it.name))
}

// apiResources is api-resources --api-group=G [-o name]: the simulation
// lists the groups it serves objects of (Kueue, the GPU Operator's, NFD's);
// for any other group there is nothing to list.
func (k *kubeRun) apiResources() int {
	group, ok := k.inv.flags["api-group"]
	if !ok {
		return k.fail("error: the SIMULATED cluster lists API resources of one group at a time: use --api-group")
	}
	s := k.h.Cluster.state()
	var rows [][]string
	for _, c := range s.crds {
		if c.group == group {
			kind := strings.TrimSuffix(strings.ToUpper(c.plural[:1])+c.plural[1:], "s")
			rows = append(rows, []string{c.plural, "", c.group + "/" + crdVersion(c.group), "true", kind})
		}
	}
	k.h.Cluster.mu.Unlock()
	sortBy(rows, func(r []string) string { return r[0] })
	switch k.inv.flags["output"] {
	case "name":
		for _, r := range rows {
			k.t.print(r[0] + "." + group + "\n")
		}
		return 0
	case "":
	default:
		return k.fail("error: --output %v is not available", k.inv.flags["output"])
	}
	if k.inv.bool("no-headers") {
		k.t.print(strings.SplitN(printTable([]string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}, rows), "\n", 2)[1])
		return 0
	}
	k.t.print(printTable([]string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}, rows))
	return 0
}

func crdVersion(group string) string {
	switch group {
	case kueueGroup:
		return "v1beta1"
	case "nvidia.com":
		return "v1"
	}
	return "v1alpha1"
}
