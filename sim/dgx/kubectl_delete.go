package dgx

import (
	"strings"
	"time"
)

// delete is kubectl delete pod|job NAME...: at once (no grace period),
// a Job with its pods; the controllers then replace what they own.
func (k *kubeRun) delete() int {
	kind, names, code := k.resourceArgs()
	if kind == nil {
		return code
	}
	if kind.plural != "pods" && kind.plural != "jobs" {
		return k.fail("error: the SIMULATED cluster deletes pods and jobs, not %s", kind.plural)
	}
	if len(names) == 0 {
		return k.fail("error: resource(s) were provided, but no name was specified")
	}
	s := k.h.Cluster.state()
	defer k.h.Cluster.mu.Unlock()
	ns := k.namespace()
	for _, n := range names {
		var gone bool
		if kind.plural == "pods" {
			gone = s.deletePod(ns, n, s.now)
		} else {
			gone = s.deleteJob(ns, n, s.now)
		}
		switch {
		case gone:
			k.t.printf("%s %q deleted\n", kind.qualified(), n)
		case !k.inv.bool("ignore-not-found"):
			k.t.eprint(notFound(kind.qualifiedPlural(), n) + "\n")
			code = 1
		}
	}
	s.reconcile(s.now)
	return code
}

// deletePod removes a pod; a ReplicaSet, StatefulSet or DaemonSet makes
// a new one. It reports whether the pod was there.
func (s *kstate) deletePod(ns, name string, at time.Time) bool {
	for i, p := range s.pods {
		if p.ns != ns || p.name != name {
			continue
		}
		s.pods = append(s.pods[:i:i], s.pods[i+1:]...)
		s.endSeries(ns, "Pod", name, "FailedScheduling", at)
		s.replace(p, at)
		return true
	}
	return false
}

// replace is a controller's new pod for one deleted.
func (s *kstate) replace(old *kpod, at time.Time) {
	p := *old
	p.uid, p.created, p.restarts, p.lastRestart = "", at, 0, time.Time{}
	p.devices, p.migs, p.ip, p.started = nil, nil, "", time.Time{}
	switch old.ownerKind {
	case "ReplicaSet", "DaemonSet":
		p.name = old.ownerName + "-" + nameSuffix(5, old.ownerName, old.name, at.String())
	case "StatefulSet":
	default:
		return
	}
	if old.ownerKind != "DaemonSet" {
		p.node = ""
	}
	s.addPod(&p, at)
}

// deleteJob removes a Job, its pods and its Workload (which frees its
// ClusterQueue's quota). Its events stay, as they do.
func (s *kstate) deleteJob(ns, name string, at time.Time) bool {
	for i, j := range s.jobs {
		if j.ns != ns || j.name != name {
			continue
		}
		s.jobs = append(s.jobs[:i:i], s.jobs[i+1:]...)
		s.endSeries(ns, "Job", name, "FailedCreate", at)
		for _, p := range s.jobPods(j) {
			s.deletePod(ns, p.name, at)
		}
		return true
	}
	return false
}

// wait is kubectl wait --for=delete|condition=C|jsonpath={...}=V
// TYPE/NAME --timeout=D. A condition the cluster will meet before the
// deadline (a program that ends) is waited for in real time; one it
// will not meet times out after a few paces of the host, not the whole
// timeout: the simulation knows it never comes.
func (k *kubeRun) wait() int {
	cond := k.inv.flags["for"]
	if cond == "" {
		return k.fail("error: --for must be specified")
	}
	timeout := 30 * time.Second
	if t, ok := k.inv.flags["timeout"]; ok {
		d, err := time.ParseDuration(t)
		if err != nil {
			return k.fail("error: invalid argument %q for \"--timeout\" flag: time: invalid duration %q", t, t)
		}
		timeout = d
	}
	kind, names, code := k.resourceArgs()
	if kind == nil {
		return code
	}
	if kind.plural != "pods" && kind.plural != "jobs" || len(names) != 1 {
		return k.fail("error: the SIMULATED cluster waits for one pod or job at a time")
	}
	check, err := waitCondition(cond)
	if err != "" {
		return k.fail("%s", err)
	}
	return k.waitFor(kind, names[0], check, timeout)
}

// waitCheck evaluates a condition on an object (nil: it does not
// exist); done says whether the object will change no more.
type waitCheck func(s *kstate, obj map[string]any) bool

func waitCondition(cond string) (waitCheck, string) {
	switch {
	case cond == "delete":
		return func(_ *kstate, obj map[string]any) bool { return obj == nil }, ""
	case strings.HasPrefix(cond, "condition="):
		c, want, _ := strings.Cut(strings.TrimPrefix(cond, "condition="), "=")
		if want == "" {
			want = "true"
		}
		return func(_ *kstate, obj map[string]any) bool {
			for _, v := range evalPath(obj, conditionsPath) {
				m, _ := v.(map[string]any)
				if strings.EqualFold(jpText(m["type"]), c) && strings.EqualFold(jpText(m["status"]), want) {
					return true
				}
			}
			return false
		}, ""
	case strings.HasPrefix(cond, "jsonpath="):
		expr := strings.TrimPrefix(cond, "jsonpath=")
		end := closingBrace(expr, 0)
		if !strings.HasPrefix(expr, "{") || end < 0 {
			return nil, "error: unrecognized condition: \"" + cond + "\""
		}
		want, hasValue := strings.CutPrefix(expr[end+1:], "=")
		path, err := parsePath(strings.TrimSpace(expr[1:end]))
		if err != nil {
			return nil, "error: " + err.Error()
		}
		return func(_ *kstate, obj map[string]any) bool {
			got := evalPath(obj, path)
			return len(got) == 1 && (!hasValue || jpText(got[0]) == want)
		}, ""
	}
	return nil, "error: unrecognized condition: \"" + cond + "\""
}

func (k *kubeRun) waitFor(kind *kubeKind, name string, check waitCheck, timeout time.Duration) int {
	ns := k.namespace()
	start := time.Now()
	for {
		s := k.h.Cluster.state()
		obj, next := s.waitObject(kind, ns, name)
		met := check(s, obj)
		now := s.now
		k.h.Cluster.mu.Unlock()
		switch {
		case obj == nil && !met:
			return k.fail("%s", notFound(kind.qualifiedPlural(), name))
		case met:
			k.t.printf("%s/%s condition met\n", kind.qualified(), name)
			return 0
		}
		// Go on while a change is due before the deadline; past a few
		// paces, only for such a change.
		elapsed := time.Since(start)
		due := !next.IsZero() && next.Sub(now) < timeout-elapsed
		if elapsed >= timeout || !due && elapsed >= 25*k.h.pace() {
			return k.fail("error: timed out waiting for the condition on %s/%s", kind.qualifiedPlural(), name)
		}
		if !k.h.wait(k.ctx, 1) {
			return ExitCancelled
		}
	}
}

// waitObject is the object wait watches, and when it next changes on
// its own (zero: never).
func (s *kstate) waitObject(kind *kubeKind, ns, name string) (map[string]any, time.Time) {
	if kind.plural == "jobs" {
		for _, j := range s.jobs {
			if j.ns == ns && j.name == name {
				return s.jobObject(j), time.Time{}
			}
		}
		return nil, time.Time{}
	}
	p := s.findPod(ns, name)
	if p == nil {
		return nil, time.Time{}
	}
	var next time.Time
	if end := p.started.Add(p.run.lasts); p.node != "" && p.run.ends && s.now.Before(end) {
		next = end
	}
	return s.podObject(p), next
}
