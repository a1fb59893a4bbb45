package dgx

import (
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/sim/spec"
)

// Cluster is the simulated Kubernetes cluster a fleet's hosts belong to:
// every host is a node, and every host's kubectl talks to this one
// cluster (its control plane is hosted off the fleet, as a managed one
// is, so the nodes are exactly the hosts). NewCluster builds it from the
// hosts' names and faults:
//
//   - Kubernetes v1.31 (kubectl v1.32.4 on the hosts, within the
//     supported skew), containerd, flannel, the NVIDIA GPU Operator with
//     the driver and toolkit pre-installed (DGX OS) and the mixed MIG
//     strategy, and Kueue v0.8;
//   - every node Ready; a healthy host advertises nvidia.com/gpu: 8; the
//     sick host advertises its MIG slices as nvidia.com/mig-<profile>,
//     only its GPUs out of MIG mode as nvidia.com/gpu, and the GPUs its
//     Xids hit (48 and 63, 79) as capacity but not allocatable, as the
//     device plugin marks them unhealthy;
//   - training, inference and notebook pods hold 2 to 6 GPUs of every
//     node, so that free GPUs are fragmented;
//   - a Job in namespace research asks for 8 GPUs on one pod, and stays
//     Pending: no node has 8 free (FailedScheduling, every 5 minutes);
//   - namespace ml-team has a ResourceQuota on requests.nvidia.com/gpu
//     two short of what it uses, and a Job there asks for 4: the quota
//     admission refuses its pod, so it has none (FailedCreate on the Job);
//   - Kueue: ClusterQueues team-a and team-b of 16 GPUs each in one
//     cohort, idle, with a LocalQueue in each team's namespace.
//
// Pods created through kubectl are scheduled, admitted and run as far as
// a simulation can honestly do it: see kubectl_mutate.go. The zero
// Cluster is not usable; a Cluster is safe for concurrent use.
type Cluster struct {
	// Now reads the cluster's clock (ages, event times); nil means
	// time.Now.
	Now func() time.Time

	names  []string
	faults []spec.Faults
	epoch  time.Time // when the cluster's story was set: every timestamp counts from it

	once    sync.Once
	mu      sync.Mutex
	st      *kstate
	changes chan struct{} // Changes: kubectl changed the cluster
}

// NewCluster returns the cluster of a fleet: names[i] is host i, with
// faults[i]. Its state is made on first use, so that a large fleet that
// never runs kubectl pays nothing for it.
func NewCluster(names []string, faults []spec.Faults) *Cluster {
	if len(faults) != len(names) {
		panic(fmt.Sprintf("sim/dgx: NewCluster: %d names, %d faults", len(names), len(faults)))
	}
	return &Cluster{names: slices.Clone(names), faults: slices.Clone(faults), epoch: time.Now().Truncate(time.Second),
		changes: make(chan struct{}, 1)}
}

func (c *Cluster) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// state locks the cluster and returns its state, made on first use; the
// caller unlocks c.mu.
func (c *Cluster) state() *kstate {
	c.once.Do(func() { c.st = buildState(c.names, c.faults, c.epoch) })
	c.mu.Lock()
	c.st.now = c.now()
	return c.st
}

// kstate is the cluster's objects.
type kstate struct {
	epoch      time.Time
	now        time.Time // the clock, read when the state was locked
	nodes      []*knode
	node       map[string]*knode
	namespaces []knamespace
	pods       []*kpod
	jobs       []*kjob
	events     []*kevent
	quotas     []*kquota
	prios      []kpriority
	crds       []kcrd
	cqs        []*kclusterQueue
	lqs        []klocalQueue
	byNode     map[string][]*kpod // while set (indexPods), the pods on each node
}

type knamespace struct {
	name    string
	created time.Time
}

// knode is a node: a host.
type knode struct {
	name     string
	index    int
	ip       string
	podCIDR  string
	created  time.Time
	boot     time.Time
	labels   map[string]string
	gpuCap   int   // whole GPUs the device plugin advertises
	healthy  []int // those it offers (allocatable), by index
	mig      map[string]int
	migInst  []kmig
	faults   spec.Faults
	podCount int // pod IPs handed out
	// What clients wrote (WriteNode): the cordon, the taints (but the
	// cordon's own, which is shown while cordoned), the annotations and
	// who wrote which field; version counts the writes.
	unschedulable bool
	taints        []corev1.Taint
	annotations   map[string]string
	managed       []metav1.ManagedFieldsEntry
	version       int
}

// kres is what a container asks for: CPU in millicores, memory in
// bytes, extended resources (GPUs, MIG slices) in units.
type kres struct {
	cpu, mem int64
	ext      map[string]int64
}

// kenv is a container's environment variable.
type kenv struct{ name, value string }

// kpod is a pod of one container.
type kpod struct {
	ns, name, uid string
	ownerKind     string // "Job", "ReplicaSet", "DaemonSet", "StatefulSet", "" for a bare pod
	ownerName     string
	labels        map[string]string
	priorityClass string
	priority      int
	container     string
	image         string
	command       []string
	env           []kenv
	req, lim      kres
	restartPolicy string
	created       time.Time
	node          string // "" while Pending
	hostNetwork   bool
	ip            string
	started       time.Time
	restarts      int
	lastRestart   time.Time
	devices       []int    // whole GPUs it holds, by host index
	migs          []kmig   // MIG instances it holds
	run           kprogram // what its container does once started
}

// kprogram is what a container's command does in the simulation.
type kprogram struct {
	// ends says the program exits, lasts after it started (otherwise it
	// runs until the pod is deleted), with status exit.
	ends  bool
	lasts time.Duration
	exit  int
	// startError is the runtime's error when the container cannot start
	// (its program is not in the image).
	startError string
	logs       string
	gpuList    bool // nvidia-smi -L: its output is the GPUs the container sees
}

// kmig is a MIG instance of a node: where it is, and its profile.
type kmig struct {
	gpu, gi int
	profile string
}

// kjob is a batch/v1 Job.
type kjob struct {
	ns, name, uid string
	labels        map[string]string
	parallelism   int
	suspend       bool
	created       time.Time
	template      *kpod // the pod template: ns, labels, container, resources
	queue         string
	workload      string // its Kueue Workload, when it has one
	admitted      bool
	made          int // pods created so far: names the next one
}

// kevent is an event. A repeating one (every > 0) is recorded again
// each period from first until until (zero: on and on), as the
// scheduler retries an unschedulable pod: its count and last time follow
// the clock. A retrying one is the Job controller's failed creations
// (see refusedByQuota).
type kevent struct {
	ns, kind, object  string
	typ, reason, from string
	msg               func(attempt int) string
	first             time.Time
	every             time.Duration
	until             time.Time
	series            bool // recorded through events.k8s.io (the scheduler): describe counts its series
	retries           bool
}

// constMsg is an event message that does not change between attempts.
func constMsg(m string) func(int) string { return func(int) string { return m } }

// kquota is a ResourceQuota on requests.nvidia.com/gpu.
type kquota struct {
	ns, name string
	hard     int64
	created  time.Time
}

// kpriority is a PriorityClass.
type kpriority struct {
	name          string
	value         int
	globalDefault bool
	policy        string
	created       time.Time
}

// kcrd is a CustomResourceDefinition: plural.group.
type kcrd struct {
	plural, group string
	created       time.Time
}

func (c kcrd) name() string { return c.plural + "." + c.group }

// kclusterQueue is a Kueue ClusterQueue with a nominal quota of GPUs.
type kclusterQueue struct {
	name, cohort string
	nominal      int64
	created      time.Time
}

// klocalQueue is a Kueue LocalQueue.
type klocalQueue struct {
	ns, name, clusterQueue string
}
