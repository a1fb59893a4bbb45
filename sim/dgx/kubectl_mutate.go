package dgx

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The labs' mutating verbs: run, create -f -, delete, wait, logs, exec.
// The simulation decides at once what a pod's container does, from its
// command (sleep, echo, true, false, nvidia-smi -L; no command: the
// image's server, which runs until deleted) and what the NVIDIA runtime
// gives it: the GPUs the device plugin allocated; every GPU of the node
// when an NVIDIA image's NVIDIA_VISIBLE_DEVICES=all reaches a container
// that asked for none (the leak the pod-cannot-see-gpu lab shows); no
// driver files at all for NVIDIA_VISIBLE_DEVICES=void or a plain image,
// so nvidia-smi is not there to start. Any other program is refused:
// the simulation cannot run it. Deletion is immediate (no grace period
// to wait for).

// podSpec is the part of a pod spec (from --overrides or a manifest) the
// simulation reads.
type podSpec struct {
	PriorityClassName string          `json:"priorityClassName" yaml:"priorityClassName"`
	RestartPolicy     string          `json:"restartPolicy" yaml:"restartPolicy"`
	Containers        []containerSpec `json:"containers" yaml:"containers"`
}

type containerSpec struct {
	Name    string   `json:"name" yaml:"name"`
	Image   string   `json:"image" yaml:"image"`
	Command []string `json:"command" yaml:"command"`
	Args    []string `json:"args" yaml:"args"`
	Env     []struct {
		Name  string `json:"name" yaml:"name"`
		Value string `json:"value" yaml:"value"`
	} `json:"env" yaml:"env"`
	Resources struct {
		Limits   map[string]any `json:"limits" yaml:"limits"`
		Requests map[string]any `json:"requests" yaml:"requests"`
	} `json:"resources" yaml:"resources"`
}

// manifest is a Pod or a Job as kubectl create reads it.
type manifest struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		podSpec     `yaml:",inline"`
		Parallelism *int  `yaml:"parallelism"`
		Suspend     *bool `yaml:"suspend"`
		Template    struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// parseQuantity reads a resource amount: CPU in millicores ("500m",
// "2"), anything else in units or bytes ("64Gi", "1G", "8").
func parseQuantity(name string, v any) (int64, error) {
	s := strings.TrimSpace(fmt.Sprint(v))
	if name == "cpu" {
		if m, ok := strings.CutSuffix(s, "m"); ok {
			return strconv.ParseInt(m, 10, 64)
		}
		f, err := strconv.ParseFloat(s, 64)
		return int64(f * 1000), err
	}
	for suffix, mult := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			x, err := strconv.ParseInt(n, 10, 64)
			return x * mult, err
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// resources reads a container's limits or requests.
func resources(m map[string]any) (kres, error) {
	r := kres{ext: map[string]int64{}}
	for name, v := range m {
		q, err := parseQuantity(name, v)
		if err != nil {
			return r, fmt.Errorf("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
		}
		switch name {
		case "cpu":
			r.cpu = q
		case "memory":
			r.mem = q
		default:
			r.ext[name] = q
		}
	}
	return r, nil
}

// applySpec fills a pod from a pod spec's first container.
func applySpec(p *kpod, spec podSpec) error {
	if spec.PriorityClassName != "" {
		p.priorityClass = spec.PriorityClassName
	}
	if spec.RestartPolicy != "" {
		p.restartPolicy = spec.RestartPolicy
	}
	if len(spec.Containers) == 0 {
		return nil
	}
	c := spec.Containers[0]
	if c.Name != "" {
		p.container = c.Name
	}
	if c.Image != "" {
		p.image = c.Image
	}
	if len(c.Command)+len(c.Args) > 0 {
		p.command = append(append([]string{}, c.Command...), c.Args...)
	}
	for _, e := range c.Env {
		p.env = append(p.env, kenv{e.Name, e.Value})
	}
	lim, err := resources(c.Resources.Limits)
	if err != nil {
		return err
	}
	req, err := resources(c.Resources.Requests)
	if err != nil {
		return err
	}
	for r, v := range lim.ext {
		if _, ok := req.ext[r]; !ok {
			req.ext[r] = v // an extended resource's request defaults to its limit
		}
	}
	if req.cpu == 0 {
		req.cpu = lim.cpu
	}
	if req.mem == 0 {
		req.mem = lim.mem
	}
	p.lim, p.req = lim, req
	return nil
}

// runPod is kubectl run NAME --image=IMAGE [--restart] [--env]...
// [--labels] [--overrides=JSON] [--command] -- ARGS.
func (k *kubeRun) runPod() int {
	if len(k.inv.args) == 0 {
		return k.fail("error: NAME is required for run\nSee 'kubectl run -h' for help and examples")
	}
	if k.inv.bool("stdin") || k.inv.bool("tty") || k.inv.bool("rm") {
		return k.fail("error: the SIMULATED cluster does not attach to pods: run without -i, -t and --rm, then read kubectl logs")
	}
	image := k.inv.flags["image"]
	if image == "" {
		return k.fail("error: required flag(s) \"image\" not set")
	}
	name := k.inv.args[0]
	p := &kpod{ns: k.namespace(), name: name, container: name, image: image, restartPolicy: "Always", labels: map[string]string{"run": name}}
	if r := k.inv.flags["restart"]; r != "" {
		p.restartPolicy = r
	}
	p.command = k.inv.dash
	for _, e := range k.inv.multi["env"] {
		n, v, _ := strings.Cut(e, "=")
		p.env = append(p.env, kenv{n, v})
	}
	if l := k.inv.flags["labels"]; l != "" {
		p.labels = map[string]string{}
		for _, kv := range strings.Split(l, ",") {
			n, v, _ := strings.Cut(kv, "=")
			p.labels[n] = v
		}
	}
	if o := k.inv.flags["overrides"]; o != "" {
		var ov struct {
			Spec podSpec `json:"spec"`
		}
		if err := json.Unmarshal([]byte(o), &ov); err != nil {
			return k.fail("error: Invalid JSON Patch")
		}
		if err := applySpec(p, ov.Spec); err != nil {
			return k.fail("Error from server (BadRequest): %v", err)
		}
	}
	return k.createPod(p, "pod/"+name+" created")
}

// createPod admits a new pod (namespace, name, priority, what its
// container runs) and lets the scheduler place it.
func (k *kubeRun) createPod(p *kpod, done string) int {
	s := k.h.Cluster.state()
	defer k.h.Cluster.mu.Unlock()
	if !s.hasNamespace(p.ns) {
		return k.fail("Error from server (NotFound): namespaces %q not found", p.ns)
	}
	if s.findPod(p.ns, p.name) != nil {
		return k.fail("Error from server (AlreadyExists): pods %q already exists", p.name)
	}
	if msg := s.admitPod(p); msg != "" {
		return k.fail("%s", msg)
	}
	if q := s.quotaFor(p.ns); q != nil && s.quotaUsed(q)+p.req.ext["nvidia.com/gpu"] > q.hard {
		return k.fail("Error from server (Forbidden): pods %q is forbidden: exceeded quota: %s, requested: requests.nvidia.com/gpu=%d, used: requests.nvidia.com/gpu=%d, limited: requests.nvidia.com/gpu=%d",
			p.name, q.name, p.req.ext["nvidia.com/gpu"], s.quotaUsed(q), q.hard)
	}
	p.created = s.now
	s.addPod(p, time.Time{})
	s.reconcile(s.now)
	k.t.print(done + "\n")
	return 0
}

// admitPod checks what the API server and the simulation must before
// a pod exists: its priority class, and that the simulation can run its
// container; it fills the pod's priority and program. It returns the
// refusal, "" when the pod may be created.
func (s *kstate) admitPod(p *kpod) string {
	if p.priorityClass == "" {
		p.priorityClass = "training"
	}
	found := false
	for _, pc := range s.prios {
		found = found || pc.name == p.priorityClass
	}
	if !found {
		return fmt.Sprintf("Error from server (Forbidden): pods %q is forbidden: no PriorityClass with name %s was found", p.name, p.priorityClass)
	}
	p.priority = s.priorityOf(p.priorityClass)
	prog, refusal := s.program(p)
	if refusal != "" {
		return "error: " + refusal
	}
	p.run = prog
	if s.wouldPreempt(p) {
		return fmt.Sprintf("error: the SIMULATED cluster does not preempt: pod %q (priority %d) fits only by evicting lower-priority pods", p.name, p.priority)
	}
	return ""
}

// create is kubectl create -f -: Jobs and Pods from YAML on standard
// input.
func (k *kubeRun) create() int {
	file := k.inv.flags["filename"]
	if file == "" {
		return k.fail("error: must specify one of -f and -k\n\nerror: unknown command %q\nSee 'kubectl create -h' for help and examples", strings.Join(k.inv.args, " "))
	}
	if file != "-" {
		return k.fail("error: the SIMULATED kubectl reads manifests from standard input only (-f -), not %q", file)
	}
	var in io.Reader = strings.NewReader("")
	if k.t.in != nil {
		in = k.t.in
	}
	dec := yaml.NewDecoder(in)
	code := 0
	for {
		var m manifest
		err := dec.Decode(&m)
		if err == io.EOF {
			break
		}
		if err != nil {
			return k.fail("error: error parsing STDIN: error converting YAML to JSON: %v", err)
		}
		if c := k.createObject(&m); c != 0 {
			code = c
		}
	}
	return code
}

func (k *kubeRun) createObject(m *manifest) int {
	ns := m.Metadata.Namespace
	if ns == "" {
		ns = k.namespace()
	}
	switch {
	case m.Kind == "Pod" && m.APIVersion == "v1":
		p := &kpod{ns: ns, name: m.Metadata.Name, restartPolicy: "Always", labels: m.Metadata.Labels}
		if err := applySpec(p, m.Spec.podSpec); err != nil {
			return k.fail("Error from server (BadRequest): error when creating \"STDIN\": %v", err)
		}
		return k.createPod(p, "pod/"+p.name+" created")
	case m.Kind == "Job" && m.APIVersion == "batch/v1":
		return k.createJob(ns, m)
	case m.Kind == "":
		return k.fail("error: error validating \"STDIN\": error validating data: kind not set; if you choose to ignore these errors, turn validation off with --validate=false")
	}
	return k.fail("error: the SIMULATED cluster creates Pods and Jobs only, not %s %s", m.APIVersion, m.Kind)
}

func (k *kubeRun) createJob(ns string, m *manifest) int {
	j := &kjob{ns: ns, name: m.Metadata.Name, labels: m.Metadata.Labels, parallelism: 1}
	if m.Spec.Parallelism != nil {
		j.parallelism = *m.Spec.Parallelism
	}
	if m.Spec.Suspend != nil {
		j.suspend = *m.Spec.Suspend
	}
	t := &kpod{ns: ns, restartPolicy: "Never"}
	if err := applySpec(t, m.Spec.Template.Spec); err != nil {
		return k.fail("Error from server (BadRequest): error when creating \"STDIN\": %v", err)
	}
	j.template = t
	s := k.h.Cluster.state()
	defer k.h.Cluster.mu.Unlock()
	if !s.hasNamespace(ns) {
		return k.fail("Error from server (NotFound): error when creating \"STDIN\": namespaces %q not found", ns)
	}
	for _, o := range s.jobs {
		if o.ns == ns && o.name == j.name {
			return k.fail("Error from server (AlreadyExists): error when creating \"STDIN\": jobs.batch %q already exists", j.name)
		}
	}
	t.name = j.name
	if msg := s.admitPod(t); msg != "" {
		return k.fail("%s", msg)
	}
	j.created = s.now
	s.addJob(j)
	s.reconcile(s.now)
	k.t.print("job.batch/" + j.name + " created\n")
	return 0
}
