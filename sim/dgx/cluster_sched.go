package dgx

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The controllers of the simulated cluster, run once after every change
// (reconcile): Kueue admits queued Jobs its ClusterQueue has quota for,
// the Job controller creates their pods through the ResourceQuota
// admission, and the scheduler binds pending pods to nodes with room,
// or says why not. Each acts at once: there is no delay to simulate
// between a change and its consequences.

// reconcile runs the controllers at time at.
func (s *kstate) reconcile(at time.Time) {
	s.admitQueued(at)
	have := map[string]int{}
	for _, p := range s.pods {
		if p.ownerKind == "Job" {
			have[p.ns+"/"+p.ownerName]++
		}
	}
	for _, j := range s.jobs {
		if !j.suspend && have[j.ns+"/"+j.name] < j.parallelism {
			s.syncJob(j, have[j.ns+"/"+j.name], at)
		}
	}
	var pending []*kpod
	for _, p := range s.pods {
		if p.node == "" {
			pending = append(pending, p)
		}
	}
	for _, p := range pending {
		s.schedule(p, at)
	}
}

// addJob adds a Job (and, when it names a Kueue queue, its Workload).
func (s *kstate) addJob(j *kjob) {
	j.uid = uuidOf("job", j.ns, j.name)
	j.template.ns = j.ns
	if j.labels == nil {
		j.labels = map[string]string{}
	}
	if q := j.labels["kueue.x-k8s.io/queue-name"]; q != "" {
		j.queue = q
		j.suspend = true // Kueue's webhook suspends a queued Job until it is admitted
		j.workload = "job-" + j.name + "-" + digest(j.name, "Job", j.uid)[:5]
		s.event(j.ns, "Job", j.name, "Normal", "CreatedWorkload", "kueue-job-controller", "Created Workload: "+j.ns+"/"+j.workload, j.created)
	}
	s.jobs = append(s.jobs, j)
}

// jobPods lists a Job's pods.
func (s *kstate) jobPods(j *kjob) []*kpod {
	var out []*kpod
	for _, p := range s.pods {
		if p.ns == j.ns && p.ownerKind == "Job" && p.ownerName == j.name {
			out = append(out, p)
		}
	}
	return out
}

// syncJob creates the pods a running Job lacks, each through the quota
// admission: a refused pod is not created, and the Job says so
// (FailedCreate) until the quota has room.
func (s *kstate) syncJob(j *kjob, have int, at time.Time) {
	for have < j.parallelism {
		p := j.newPod(at)
		if q := s.quotaFor(p.ns); q != nil && s.quotaUsed(q)+p.req.ext["nvidia.com/gpu"] > q.hard {
			s.refusedByQuota(j, q, at)
			return
		}
		s.endSeries(j.ns, "Job", j.name, "FailedCreate", at)
		s.addPod(p, time.Time{})
		s.event(j.ns, "Job", j.name, "Normal", "SuccessfulCreate", "job-controller", "Created pod: "+p.name, at)
		have++
	}
}

// newPod is the next pod of a Job, from its template, created at.
func (j *kjob) newPod(at time.Time) *kpod {
	t := *j.template
	p := &t
	p.ns, p.ownerKind, p.ownerName = j.ns, "Job", j.name
	p.name = j.name + "-" + nameSuffix(5, j.uid, strconv.Itoa(j.made))
	j.made++
	p.created = at
	p.labels = podLabels(p)
	p.uid = ""
	return p
}

// quotaFor is the namespace's GPU quota, nil if it has none.
func (s *kstate) quotaFor(ns string) *kquota {
	for _, q := range s.quotas {
		if q.ns == ns {
			return q
		}
	}
	return nil
}

// quotaUsed is what the quota's namespace requests of it: every pod that
// has not finished counts.
func (s *kstate) quotaUsed(q *kquota) int64 {
	var used int64
	for _, p := range s.pods {
		if p.ns == q.ns && !p.finished(s.now) {
			used += p.req.ext["nvidia.com/gpu"]
		}
	}
	return used
}

// refusedByQuota records the Job controller's failed creations, retried
// with its backoff (1s doubling to 60s): ten events, one per attempt,
// then the event aggregator folds the rest into one ("combined from
// similar events") whose count grows.
func (s *kstate) refusedByQuota(j *kjob, q *kquota, at time.Time) {
	for _, e := range s.events {
		if e.ns == j.ns && e.object == j.name && e.reason == "FailedCreate" && e.until.IsZero() {
			return
		}
	}
	req := j.template.req.ext["nvidia.com/gpu"]
	msg := func(attempt int) string {
		return fmt.Sprintf("Error creating: pods %q is forbidden: exceeded quota: %s, requested: requests.nvidia.com/gpu=%d, used: requests.nvidia.com/gpu=%d, limited: requests.nvidia.com/gpu=%d",
			j.name+"-"+nameSuffix(5, j.uid, "attempt", strconv.Itoa(attempt)), q.name, req, s.quotaUsed(q), q.hard)
	}
	s.events = append(s.events, &kevent{ns: j.ns, kind: "Job", object: j.name, typ: "Warning", reason: "FailedCreate",
		from: "job-controller", first: at, msg: msg, retries: true})
}

// admitQueued is Kueue: a suspended Job in a LocalQueue is admitted when
// its ClusterQueue's cohort has the GPUs it asks for unused (borrowing
// from the other queues of the cohort beyond its own nominal quota);
// otherwise its Workload stays pending and says why.
func (s *kstate) admitQueued(at time.Time) {
	for _, j := range s.jobs {
		if j.queue == "" || j.admitted {
			continue
		}
		cq := s.clusterQueueOf(j)
		if cq == nil {
			continue // Kueue: "LocalQueue ... doesn't exist"; the Workload waits, no event
		}
		need := j.gpus()
		free := int64(0)
		for _, q := range s.cqs {
			if q.cohort == cq.cohort {
				free += q.nominal - s.cqUsage(q)
			}
		}
		if need > free {
			s.eventOnce(j.ns, "Workload", j.workload, "Normal", "Pending", "kueue-admission",
				fmt.Sprintf("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor default-flavor, %d more needed", need-free), at)
			continue
		}
		j.admitted, j.suspend = true, false
		s.event(j.ns, "Workload", j.workload, "Normal", "QuotaReserved", "kueue-admission",
			"Quota reserved in ClusterQueue "+cq.name+", wait time since queued was 0s", at)
		s.event(j.ns, "Workload", j.workload, "Normal", "Admitted", "kueue-admission",
			"Admitted by ClusterQueue "+cq.name+", wait time since reservation was 0s", at)
		s.event(j.ns, "Job", j.name, "Normal", "Started", "kueue-job-controller", "Admitted by clusterQueue "+cq.name, at)
		s.event(j.ns, "Job", j.name, "Normal", "Resumed", "job-controller", "Job resumed", at)
	}
}

// gpus is what all of a Job's pods ask for.
func (j *kjob) gpus() int64 { return int64(j.parallelism) * j.template.req.ext["nvidia.com/gpu"] }

func (s *kstate) clusterQueueOf(j *kjob) *kclusterQueue {
	for _, lq := range s.lqs {
		if lq.ns == j.ns && lq.name == j.queue {
			for _, cq := range s.cqs {
				if cq.name == lq.clusterQueue {
					return cq
				}
			}
		}
	}
	return nil
}

// cqUsage is the GPUs a ClusterQueue's admitted Workloads hold.
func (s *kstate) cqUsage(cq *kclusterQueue) int64 {
	var n int64
	for _, j := range s.jobs {
		if j.admitted && s.clusterQueueOf(j) == cq {
			n += j.gpus()
		}
	}
	return n
}

// nodeUse is what the pods bound to a node request.
type nodeUse struct {
	cpu, mem, pods int64
	ext            map[string]int64
	devices        map[int]bool
}

func (u *nodeUse) add(p *kpod) {
	u.cpu, u.mem, u.pods = u.cpu+p.req.cpu, u.mem+p.req.mem, u.pods+1
	for r, v := range p.req.ext {
		u.ext[r] += v
	}
	for _, d := range p.devices {
		u.devices[d] = true
	}
}

// nodeUses is every node's use by the pods that have not finished,
// leaving out those skip names (nil: none), in one pass over the pods.
func (s *kstate) nodeUses(skip func(*kpod) bool) map[string]*nodeUse {
	m := make(map[string]*nodeUse, len(s.nodes))
	for _, n := range s.nodes {
		m[n.name] = &nodeUse{ext: map[string]int64{}, devices: map[int]bool{}}
	}
	for _, p := range s.pods {
		if p.node != "" && !p.finished(s.now) && (skip == nil || !skip(p)) {
			m[p.node].add(p)
		}
	}
	return m
}

// misfits says why pod p does not fit on node n, used as u: the
// scheduler's reasons ("Insufficient nvidia.com/gpu"), none when it fits.
func misfits(p *kpod, n *knode, u *nodeUse) []string {
	if why := nodeMisfit(p, n); why != "" {
		return []string{why}
	}
	var why []string
	if u.pods+1 > nodeMaxPods {
		why = append(why, "Too many pods")
	}
	if p.req.cpu > 0 && u.cpu+p.req.cpu > nodeCPUAllocMilli {
		why = append(why, "Insufficient cpu")
	}
	if p.req.mem > 0 && u.mem+p.req.mem > nodeMemAllocKi*1024 {
		why = append(why, "Insufficient memory")
	}
	alloc := n.allocatable()
	for _, r := range slices.Sorted(mapKeys(p.req.ext)) {
		if p.req.ext[r] > 0 && u.ext[r]+p.req.ext[r] > alloc[r] {
			why = append(why, "Insufficient "+r)
		}
	}
	return why
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// schedule binds a pending pod to the node with the most free GPUs
// (the default scheduler's least-allocated scoring; ties go to the
// first node), or records why no node fits (FailedScheduling, retried
// every 5 minutes).
func (s *kstate) schedule(p *kpod, at time.Time) {
	var best *knode
	bestFree := int64(-1)
	counts := map[string]int{}
	uses := s.nodeUses(nil)
	for _, n := range s.nodes {
		why := misfits(p, n, uses[n.name])
		for _, w := range why {
			counts[w]++
		}
		if len(why) == 0 {
			if free := n.allocatable()["nvidia.com/gpu"] - uses[n.name].ext["nvidia.com/gpu"]; free > bestFree {
				best, bestFree = n, free
			}
		}
	}
	if best == nil {
		msg := fmt.Sprintf("0/%d nodes are available: %s. preemption: %s", len(s.nodes), countReasons(counts), s.preemption(p))
		s.failedScheduling(p, msg, at)
		return
	}
	s.bind(p, best, uses[best.name], at)
}

// countReasons is "1 Insufficient cpu, 4 Insufficient nvidia.com/gpu":
// the scheduler's reasons with their node counts, sorted.
func countReasons(counts map[string]int) string {
	var parts []string
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// preemption is the scheduler's preemption verdict for a pod no node
// fits: on each node, no lower-priority pod to evict, or the pod still
// would not fit without them. (A pod that preemption would place is
// refused before it is created: the simulation does not preempt.)
func (s *kstate) preemption(p *kpod) string {
	counts := map[string]int{}
	lower := func(q *kpod) bool { return q.priority < p.priority }
	all, without := s.nodeUses(nil), s.nodeUses(lower)
	for _, n := range s.nodes {
		if nodeMisfit(p, n) != "" { // no eviction makes a cordoned or tainted node fit
			counts["Preemption is not helpful for scheduling"]++
			continue
		}
		if all[n.name].pods == without[n.name].pods {
			counts["No preemption victims found for incoming pod"]++
			continue
		}
		for _, w := range misfits(p, n, without[n.name]) {
			counts[w]++
		}
	}
	return fmt.Sprintf("0/%d nodes are available: %s.", len(s.nodes), countReasons(counts))
}

// wouldPreempt reports whether some node fits p once its lower-priority
// pods are gone, and none fits it as it is.
func (s *kstate) wouldPreempt(p *kpod) bool {
	fitsNow, fitsAfter := false, false
	all, without := s.nodeUses(nil), s.nodeUses(func(q *kpod) bool { return q.priority < p.priority })
	for _, n := range s.nodes {
		fitsNow = fitsNow || len(misfits(p, n, all[n.name])) == 0
		fitsAfter = fitsAfter || len(misfits(p, n, without[n.name])) == 0
	}
	return !fitsNow && fitsAfter
}

func (s *kstate) failedScheduling(p *kpod, msg string, at time.Time) {
	for _, e := range s.events {
		if e.ns == p.ns && e.object == p.name && e.reason == "FailedScheduling" && e.until.IsZero() {
			e.msg = constMsg(msg)
			return
		}
	}
	s.events = append(s.events, &kevent{ns: p.ns, kind: "Pod", object: p.name, typ: "Warning", reason: "FailedScheduling",
		from: "default-scheduler", first: at, every: 5 * time.Minute, series: true, msg: constMsg(msg)})
}

// bind puts p on n: it takes the lowest free healthy GPUs (and MIG
// slices), gets an address, and its container starts.
func (s *kstate) bind(p *kpod, n *knode, u *nodeUse, at time.Time) {
	s.endSeries(p.ns, "Pod", p.name, "FailedScheduling", at)
	p.node = n.name
	p.devices = freeDevices(n, u, int(p.req.ext["nvidia.com/gpu"]))
	p.migs = s.freeMIG(n, p.req.ext)
	p.ip = n.nextPodIP()
	p.started = at
	if p.run.gpuList {
		_, p.run.exit = s.seenGPUs(p)
	}
	s.event(p.ns, "Pod", p.name, "Normal", "Scheduled", "default-scheduler", "Successfully assigned "+p.ns+"/"+p.name+" to "+n.name, at)
	s.event(p.ns, "Pod", p.name, "Normal", "Pulled", "kubelet", fmt.Sprintf("Container image %q already present on machine", p.image), p.started)
	if p.run.startError != "" {
		s.event(p.ns, "Pod", p.name, "Warning", "Failed", "kubelet", "Error: "+p.run.startError, p.started)
		return
	}
	s.event(p.ns, "Pod", p.name, "Normal", "Created", "kubelet", "Created container "+p.container, p.started)
	s.event(p.ns, "Pod", p.name, "Normal", "Started", "kubelet", "Started container "+p.container, p.started)
}

// freeDevices picks n free healthy GPUs of node nd, used as u, lowest
// first.
func freeDevices(nd *knode, u *nodeUse, n int) []int {
	var out []int
	for _, g := range nd.healthy {
		if len(out) == n {
			break
		}
		if !u.devices[g] {
			out = append(out, g)
			u.devices[g] = true
		}
	}
	return out
}

// freeMIG picks free MIG instances of node nd for the profiles asked.
func (s *kstate) freeMIG(nd *knode, ext map[string]int64) []kmig {
	taken := map[kmig]bool{}
	for _, p := range s.podsOn(nd.name) {
		for _, m := range p.migs {
			taken[m] = true
		}
	}
	var out []kmig
	for _, r := range slices.Sorted(mapKeys(ext)) {
		prof, ok := strings.CutPrefix(r, "nvidia.com/mig-")
		for n := ext[r]; ok && n > 0; n-- {
			for _, m := range nd.migInst {
				if m.profile == prof && !taken[m] {
					taken[m] = true
					out = append(out, m)
					break
				}
			}
		}
	}
	return out
}
