package dgx

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"
)

// kubectl describe node and describe pod, as kubectl v1.32's describers
// write them (pkg/describe): the same lines, tabs and flushes through
// the same tabwriter, so that the columns come out as they would. The
// renderers take a view of preformatted strings; nodeDescription and
// podDescription fill it from the cluster.

// describeNodeView is what describe node prints.
type describeNodeView struct {
	name, roles           string
	labels, annotations   map[string]string
	created               string
	taints                []string
	unschedulable         bool
	lease                 *[3]string // holder, acquire time, renew time
	conditions            [][6]string
	addresses             [][2]string
	capacity, allocatable [][2]string // sorted by name
	systemInfo            [10]string  // machine id ... kube-proxy version
	podCIDR, providerID   string
	pods                  [][7]string // namespace, name, cpu req, cpu lim, mem req, mem lim, age
	allocated             [][3]string // resource, requests, limits
	events                []describeEventRow
	podCIDRs              []string
}

// describeEventRow is a row of describe's Events table.
type describeEventRow struct{ typ, reason, age, from, msg string }

var systemInfoKeys = [10]string{"Machine ID", "System UUID", "Boot ID", "Kernel Version", "OS Image", "Operating System",
	"Architecture", "Container Runtime Version", "Kubelet Version", "Kube-Proxy Version"}

func renderDescribeNode(v describeNodeView) string {
	w := newDescribeWriter()
	w.write(0, "Name:\t%s\n", v.name)
	w.write(0, "Roles:\t%s\n", v.roles)
	writeLabels(w, "Labels", v.labels)
	writeAnnotations(w, v.annotations)
	w.write(0, "CreationTimestamp:\t%s\n", v.created)
	writeMultiline(w, "Taints", v.taints)
	w.write(0, "Unschedulable:\t%v\n", v.unschedulable)
	if v.lease != nil {
		w.write(0, "Lease:\n")
		w.write(1, "HolderIdentity:\t%s\n", v.lease[0])
		w.write(1, "AcquireTime:\t%s\n", v.lease[1])
		w.write(1, "RenewTime:\t%s\n", v.lease[2])
	}
	if len(v.conditions) > 0 {
		w.write(0, "Conditions:\n  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage\n")
		w.write(1, "----\t------\t-----------------\t------------------\t------\t-------\n")
		for _, c := range v.conditions {
			w.write(1, "%v \t%v \t%s \t%s \t%v \t%v\n", c[0], c[1], c[2], c[3], c[4], c[5])
		}
	}
	w.write(0, "Addresses:\n")
	for _, a := range v.addresses {
		w.write(1, "%s:\t%s\n", a[0], a[1])
	}
	for _, sec := range []struct {
		title string
		list  [][2]string
	}{{"Capacity", v.capacity}, {"Allocatable", v.allocatable}} {
		if len(sec.list) > 0 {
			w.write(0, "%s:\n", sec.title)
			writeResources(w, sec.list)
		}
	}
	w.write(0, "System Info:\n")
	for k, key := range systemInfoKeys {
		w.write(0, "  %s:\t%s\n", key, v.systemInfo[k])
	}
	if v.podCIDR != "" {
		w.write(0, "PodCIDR:\t%s\n", v.podCIDR)
	}
	if len(v.podCIDRs) > 0 {
		w.write(0, "PodCIDRs:\t%s\n", strings.Join(v.podCIDRs, ","))
	}
	if v.providerID != "" {
		w.write(0, "ProviderID:\t%s\n", v.providerID)
	}
	writeNodePods(w, v)
	writeEvents(w, v.events)
	return w.String()
}

// writeResources is describe node's printResourceList.
func writeResources(w *describeWriter, list [][2]string) {
	for _, r := range list {
		w.write(0, "  %s:\t%s\n", r[0], r[1])
	}
}

// writeNodePods is describeNodeResource: the node's pods and what they
// ask of it.
func writeNodePods(w *describeWriter, v describeNodeView) {
	w.write(0, "Non-terminated Pods:\t(%d in total)\n", len(v.pods))
	w.write(1, "Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge\n")
	w.write(1, "---------\t----\t\t------------\t----------\t---------------\t-------------\t---\n")
	for _, p := range v.pods {
		w.write(1, "%s\t%s\t\t%s\t%s\t%s\t%s\t%s\n", p[0], p[1], p[2], p[3], p[4], p[5], p[6])
	}
	w.write(0, "Allocated resources:\n  (Total limits may be over 100 percent, i.e., overcommitted.)\n")
	w.write(1, "Resource\tRequests\tLimits\n")
	w.write(1, "--------\t--------\t------\n")
	for _, a := range v.allocated {
		w.write(1, "%s\t%s\t%s\n", a[0], a[1], a[2])
	}
}

// writeLabels is printLabelsMultiline.
func writeLabels(w *describeWriter, title string, labels map[string]string) {
	var lines []string
	for _, k := range sortedKeys(labels) {
		lines = append(lines, k+"="+labels[k])
	}
	writeMultiline(w, title, lines)
}

// writeMultiline writes title, then each line aligned after a tab;
// "<none>" for none.
func writeMultiline(w *describeWriter, title string, lines []string) {
	w.write(0, "%s:\t", title)
	if len(lines) == 0 {
		w.line("<none>")
		return
	}
	for i, l := range lines {
		if i != 0 {
			w.write(0, "%s", "\t")
		}
		w.write(0, "%s\n", l)
	}
}

// writeAnnotations is printAnnotationsMultiline (annotations here are
// short: none is folded).
func writeAnnotations(w *describeWriter, a map[string]string) {
	w.write(0, "%s:\t", "Annotations")
	if len(a) == 0 {
		w.line("<none>")
		return
	}
	for i, k := range sortedKeys(a) {
		if i != 0 {
			w.write(0, "\t")
		}
		w.write(0, "%s: %s\n", k, a[k])
	}
}

// writeEvents is DescribeEvents.
func writeEvents(w *describeWriter, rows []describeEventRow) {
	if len(rows) == 0 {
		w.write(0, "Events:\t<none>\n")
		return
	}
	w.flush()
	w.write(0, "Events:\n  Type\tReason\tAge\tFrom\tMessage\n")
	w.write(1, "----\t------\t----\t----\t-------\n")
	for _, e := range rows {
		w.write(1, "%v\t%v\t%s\t%v\t%v\n", e.typ, e.reason, e.age, e.from, strings.TrimSpace(e.msg))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describeRows turns an object's events into describe's rows, oldest
// last occurrence first.
func describeRows(evs []eventView, now time.Time) []describeEventRow {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].last.Before(evs[j].last) })
	var rows []describeEventRow
	for _, e := range evs {
		age := humanDuration(now.Sub(e.first))
		if e.count > 1 {
			age = fmt.Sprintf("%s (x%d over %s)", humanDuration(now.Sub(e.last)), e.count, age)
		}
		rows = append(rows, describeEventRow{e.typ, e.reason, age, e.from, e.msg})
	}
	return rows
}

// eventsOf lists the events of one object.
func (s *kstate) eventsOf(ns, kind, name string) []eventView {
	var of []*kevent
	for _, e := range s.events {
		if e.ns == ns && e.kind == kind && e.object == name {
			of = append(of, e)
		}
	}
	return s.eventViewsOf(of)
}

// percent is describe's int64(fraction*100).
func percent(part, whole int64) int64 {
	if whole == 0 {
		return 0
	}
	return int64(float64(part) / float64(whole) * 100)
}

// nodeDescription is describe node NAME.
func (s *kstate) nodeDescription(n *knode) string {
	v := describeNodeView{name: n.name, roles: "<none>", labels: n.labels, created: rfc1123z(n.created), podCIDR: n.podCIDR, podCIDRs: []string{n.podCIDR},
		annotations: map[string]string{
			"flannel.alpha.coreos.com/backend-data": "null", "flannel.alpha.coreos.com/backend-type": "host-gw",
			"flannel.alpha.coreos.com/kube-subnet-manager": "true", "flannel.alpha.coreos.com/public-ip": n.ip,
			"kubeadm.alpha.kubernetes.io/cri-socket": "unix:///var/run/containerd/containerd.sock",
			"node.alpha.kubernetes.io/ttl":           "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
		taints: n.describeTaints(), unschedulable: n.unschedulable}
	maps.Copy(v.annotations, n.annotations)
	renew := s.now.Add(-time.Duration(s.now.Unix()%10) * time.Second)
	v.lease = &[3]string{n.name, "<unset>", rfc1123z(renew)}
	beat := s.now.Add(-s.now.Sub(n.boot) % (5 * time.Minute))
	for _, c := range [][4]string{
		{"MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		{"Ready", "True", "KubeletReady", "kubelet is posting ready status"},
	} {
		since := n.boot.Add(31 * time.Second)
		if c[0] == "Ready" {
			since = n.boot.Add(47 * time.Second)
		}
		v.conditions = append(v.conditions, [6]string{c[0], c[1], rfc1123z(beat), rfc1123z(since), c[2], c[3]})
	}
	v.addresses = [][2]string{{"InternalIP", n.ip}, {"Hostname", n.name}}
	v.capacity = resourceList(nodeCPUMilli, nodeMemKi*1024, binaryQuantity(nodeDiskKi*1024), n.capacity())
	v.allocatable = resourceList(nodeCPUAllocMilli, nodeMemAllocKi*1024, fmt.Sprint(int64(nodeDiskAllocBytes)), n.allocatable())
	// Kube-Proxy Version is empty, as in the recorded node: kubelets no
	// longer report kube-proxy's version.
	v.systemInfo = [10]string{digest("machine-id", n.name)[:32], uuidOf("system-uuid", n.name), uuidOf("boot-id", n.name, n.boot.String()),
		kernelVersion, osImage, "linux", "amd64", containerdVersion, kubeServerVersion, ""}
	s.nodeAllocation(n, &v)
	v.events = describeRows(s.eventsOf("", "Node", n.name), s.now)
	return renderDescribeNode(v)
}

// Node OS: DGX OS 6 (what the hosts' /etc/os-release and uname say).
const (
	osImage       = "Ubuntu 22.04.3 LTS"
	kernelVersion = "5.15.0-1042-nvidia"
)

// resourceList is a node's resources, sorted by name, as describe lists
// them.
func resourceList(cpuMilli, memBytes int64, disk string, ext map[string]int64) [][2]string {
	m := map[string]string{"cpu": cpuQuantity(cpuMilli), "memory": binaryQuantity(memBytes), "ephemeral-storage": disk,
		"hugepages-1Gi": "0", "hugepages-2Mi": "0", "pods": fmt.Sprint(nodeMaxPods)}
	for r, v := range ext {
		m[r] = fmt.Sprint(v)
	}
	var out [][2]string
	for _, k := range sortedKeys(m) {
		out = append(out, [2]string{k, m[k]})
	}
	return out
}

// nodeAllocation fills the node's pods and the sums of what they ask.
func (s *kstate) nodeAllocation(n *knode, v *describeNodeView) {
	var sum, lim kres
	sum.ext, lim.ext = map[string]int64{}, map[string]int64{}
	for _, p := range s.podsOn(n.name) {
		v.pods = append(v.pods, podRow(p.ns, p.name, p.req, p.lim, nodeCPUAllocMilli, nodeMemAllocKi*1024, humanDuration(s.now.Sub(p.created))))
		sum.cpu, lim.cpu, sum.mem, lim.mem = sum.cpu+p.req.cpu, lim.cpu+p.lim.cpu, sum.mem+p.req.mem, lim.mem+p.lim.mem
		for r, q := range requestsOf(p).ext {
			sum.ext[r] += q
		}
		for r, q := range p.lim.ext {
			lim.ext[r] += q
		}
	}
	v.allocated = allocatedRows(sum, lim, nodeCPUAllocMilli, nodeMemAllocKi*1024, sortedKeys(n.allocatable()))
}

// podRow is a row of describe node's pods: what the pod asks, and its
// share of the node's allocatable CPU and memory.
func podRow(ns, name string, req, lim kres, cpu, mem int64, age string) [7]string {
	return [7]string{ns, name,
		fmt.Sprintf("%s (%d%%)", cpuQuantity(req.cpu), percent(req.cpu, cpu)),
		fmt.Sprintf("%s (%d%%)", cpuQuantity(lim.cpu), percent(lim.cpu, cpu)),
		fmt.Sprintf("%s (%d%%)", binaryQuantity(req.mem), percent(req.mem, mem)),
		fmt.Sprintf("%s (%d%%)", binaryQuantity(lim.mem), percent(lim.mem, mem)), age}
}

// allocatedRows is describe node's Allocated resources: CPU, memory,
// ephemeral storage and huge pages with their shares, then the extended
// resources the node offers (ext, sorted), as counts.
func allocatedRows(req, lim kres, cpu, mem int64, ext []string) [][3]string {
	rows := [][3]string{
		{"cpu", fmt.Sprintf("%s (%d%%)", cpuQuantity(req.cpu), percent(req.cpu, cpu)), fmt.Sprintf("%s (%d%%)", cpuQuantity(lim.cpu), percent(lim.cpu, cpu))},
		{"memory", fmt.Sprintf("%s (%d%%)", binaryQuantity(req.mem), percent(req.mem, mem)), fmt.Sprintf("%s (%d%%)", binaryQuantity(lim.mem), percent(lim.mem, mem))},
		{"ephemeral-storage", "0 (0%)", "0 (0%)"},
		{"hugepages-1Gi", "0 (0%)", "0 (0%)"},
		{"hugepages-2Mi", "0 (0%)", "0 (0%)"},
	}
	for _, r := range ext {
		rows = append(rows, [3]string{r, fmt.Sprint(req.ext[r]), fmt.Sprint(lim.ext[r])})
	}
	return rows
}

// podDescription is describe pod.
func (s *kstate) podDescription(p *kpod) string {
	st := p.state(s.now)
	w := newDescribeWriter()
	w.write(0, "Name:\t%s\n", p.name)
	w.write(0, "Namespace:\t%s\n", p.ns)
	w.write(0, "Priority:\t%d\n", p.priority)
	w.write(0, "Priority Class Name:\t%s\n", p.priorityClass)
	w.write(0, "Service Account:\t%s\n", "default")
	if p.node == "" {
		w.write(0, "Node:\t<none>\n")
	} else {
		w.write(0, "Node:\t%s\n", p.node+"/"+s.node[p.node].ip)
		w.write(0, "Start Time:\t%s\n", rfc1123z(p.started.Add(-time.Second)))
	}
	writeLabels(w, "Labels", p.labels)
	writeAnnotations(w, nil)
	w.write(0, "Status:\t%s\n", st.phase)
	w.write(0, "IP:\t%s\n", p.ip)
	if p.ip == "" {
		w.write(0, "IPs:\t<none>\n")
	} else {
		w.write(0, "IPs:\n")
		w.write(1, "IP:\t%s\n", p.ip)
	}
	if p.ownerKind != "" {
		w.write(0, "Controlled By:\t%s/%s\n", p.ownerKind, p.ownerName)
	}
	s.describeContainer(w, p, st)
	writePodConditions(w, p, st)
	volume := "kube-api-access-" + nameSuffix(5, p.uid, "token")
	w.write(0, "Volumes:\n")
	w.write(1, "%v:\n", volume)
	w.write(2, "Type:\tProjected (a volume that contains injected data from multiple sources)\n")
	w.write(2, "TokenExpirationSeconds:\t%d\n", 3607)
	w.write(2, "ConfigMapName:\t%v\n    ConfigMapOptional:\t%v\n", "kube-root-ca.crt", "<nil>")
	w.write(2, "DownwardAPI:\ttrue\n")
	w.write(0, "QoS Class:\t%s\n", qosClass(p))
	writeLabels(w, "Node-Selectors", nil)
	writeMultiline(w, "Tolerations", tolerations(p))
	writeEvents(w, describeRows(s.eventsOf(p.ns, "Pod", p.name), s.now))
	return w.String()
}

// describeContainer is describeContainers for the pod's one container.
func (s *kstate) describeContainer(w *describeWriter, p *kpod, st podState) {
	w.write(0, "%s%s:%s\n", "", "Containers", "")
	w.write(1, "%v:\n", p.container)
	bound := p.node != ""
	if bound {
		w.write(2, "Container ID:\t%s\n", "containerd://"+digest("container", p.uid))
	}
	w.write(2, "Image:\t%s\n", p.image)
	if bound {
		w.write(2, "Image ID:\t%s\n", imageRepo(p.image)+"@sha256:"+digest("image", p.image))
	}
	w.write(2, "Port:\t%s\n", "<none>")
	w.write(2, "Host Port:\t%s\n", "<none>")
	if len(p.command) > 0 {
		w.write(2, "Command:\n")
		for _, c := range p.command {
			w.write(3, "%s\n", c)
		}
	}
	if bound {
		describeState(w, p, st)
		w.write(2, "Ready:\t%v\n", map[bool]string{true: "True", false: "False"}[st.ready])
		w.write(2, "Restart Count:\t%d\n", p.restarts)
	}
	for _, sec := range []struct {
		title string
		r     kres
	}{{"Limits", p.lim}, {"Requests", requestsOf(p)}} {
		list := resourceLines(sec.r)
		if len(list) > 0 {
			w.write(2, "%s:\n", sec.title)
		}
		for _, l := range list {
			w.write(3, "%s:\t%s\n", l[0], l[1])
		}
	}
	if len(p.env) == 0 {
		w.write(2, "Environment:%s\n", "\t<none>")
	} else {
		w.write(2, "Environment:%s\n", "")
		for _, e := range p.env {
			w.write(3, "%s:\t%s\n", e.name, e.value)
		}
	}
	w.write(2, "Mounts:%s\n", "")
	w.write(3, "%s from %s (%s)\n", "/var/run/secrets/kubernetes.io/serviceaccount", "kube-api-access-"+nameSuffix(5, p.uid, "token"), "ro")
}

// describeState is describeStatus for the container's state (and the
// one before its last restart).
func describeState(w *describeWriter, p *kpod, st podState) {
	if st.reason == "" {
		w.write(2, "%s:\tRunning\n", "State")
		w.write(3, "Started:\t%v\n", rfc1123z(p.started))
	} else {
		w.write(2, "%s:\tTerminated\n", "State")
		w.write(3, "Reason:\t%s\n", st.reason)
		if st.message != "" {
			w.write(3, "Message:\t%s\n", st.message)
		}
		w.write(3, "Exit Code:\t%d\n", st.exit)
		w.write(3, "Started:\t%s\n", rfc1123z(map[bool]time.Time{true: time.Unix(0, 0).UTC(), false: p.started}[st.reason == "StartError"]))
		w.write(3, "Finished:\t%s\n", rfc1123z(st.finished))
	}
	if p.restarts > 0 {
		w.write(2, "%s:\tTerminated\n", "Last State")
		w.write(3, "Reason:\t%s\n", "Unknown")
		w.write(3, "Exit Code:\t%d\n", 255)
		w.write(3, "Started:\t%s\n", rfc1123z(p.created.Add(5*time.Second)))
		w.write(3, "Finished:\t%s\n", rfc1123z(p.lastRestart))
	}
}

// requestsOf is what the pod requests: extended resources given only as
// limits are requested as much.
func requestsOf(p *kpod) kres {
	r := p.req
	if len(r.ext) == 0 && len(p.lim.ext) > 0 {
		r.ext = p.lim.ext
	}
	return r
}

// resourceLines lists a container's resources, sorted by name.
func resourceLines(r kres) [][2]string {
	m := map[string]string{}
	if r.cpu > 0 {
		m["cpu"] = cpuQuantity(r.cpu)
	}
	if r.mem > 0 {
		m["memory"] = binaryQuantity(r.mem)
	}
	for k, v := range r.ext {
		m[k] = fmt.Sprint(v)
	}
	var out [][2]string
	for _, k := range sortedKeys(m) {
		out = append(out, [2]string{k, m[k]})
	}
	return out
}

func writePodConditions(w *describeWriter, p *kpod, st podState) {
	conds := [][2]string{{"PodScheduled", "False"}}
	if p.node != "" {
		ready := map[bool]string{true: "True", false: "False"}[st.ready]
		conds = [][2]string{{"PodReadyToStartContainers", ready}, {"Initialized", "True"}, {"Ready", ready},
			{"ContainersReady", ready}, {"PodScheduled", "True"}}
	}
	w.write(0, "Conditions:\n  Type\tStatus\n")
	for _, c := range conds {
		w.write(1, "%v \t%v \n", c[0], c[1])
	}
}

// qosClass is the pod's QoS class, from its CPU and memory.
func qosClass(p *kpod) string {
	switch {
	case p.req.cpu == 0 && p.req.mem == 0 && p.lim.cpu == 0 && p.lim.mem == 0:
		return "BestEffort"
	case p.lim.cpu > 0 && p.lim.mem > 0 && p.req.cpu == p.lim.cpu && p.req.mem == p.lim.mem:
		return "Guaranteed"
	}
	return "Burstable"
}

// tolerations are the ones the API server and the DaemonSet controller
// add.
func tolerations(p *kpod) []string {
	if p.ownerKind == "DaemonSet" {
		t := []string{"node.kubernetes.io/disk-pressure:NoSchedule op=Exists", "node.kubernetes.io/memory-pressure:NoSchedule op=Exists"}
		if p.hostNetwork {
			t = append(t, "node.kubernetes.io/network-unavailable:NoSchedule op=Exists")
		}
		return append(t, "node.kubernetes.io/not-ready:NoExecute op=Exists", "node.kubernetes.io/pid-pressure:NoSchedule op=Exists",
			"node.kubernetes.io/unreachable:NoExecute op=Exists", "node.kubernetes.io/unschedulable:NoSchedule op=Exists")
	}
	return []string{"node.kubernetes.io/not-ready:NoExecute op=Exists for 300s", "node.kubernetes.io/unreachable:NoExecute op=Exists for 300s"}
}

// imageRepo is an image reference without its tag.
func imageRepo(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i]
	}
	return image
}
