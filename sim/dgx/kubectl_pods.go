package dgx

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpulab/gpulab/sim/spec"
)

// program decides what a pod's container does (see kubectl_mutate.go),
// or says why the simulation cannot run it.
func (s *kstate) program(p *kpod) (kprogram, string) {
	cmd := p.command
	if len(cmd) == 0 {
		return kprogram{}, "" // the image's own program: a server, until deleted
	}
	base := cmd[0][strings.LastIndex(cmd[0], "/")+1:]
	switch base {
	case "sleep":
		if len(cmd) == 2 && cmd[1] == "infinity" {
			return kprogram{}, ""
		}
		if d, ok := sleepDuration(cmd[1:]); ok {
			return kprogram{lasts: d, ends: true}, ""
		}
		return kprogram{ends: true, exit: 1, logs: "sleep: invalid time interval\n"}, ""
	case "echo":
		return kprogram{ends: true, logs: strings.Join(cmd[1:], " ") + "\n"}, ""
	case "true":
		return kprogram{ends: true}, ""
	case "false":
		return kprogram{ends: true, exit: 1}, ""
	case "nvidia-smi":
		if len(cmd) != 2 || cmd[1] != "-L" && cmd[1] != "--list-gpus" {
			return kprogram{}, fmt.Sprintf("the SIMULATED cluster runs nvidia-smi in containers as nvidia-smi -L only, not %q", strings.Join(cmd, " "))
		}
		if !driverInjected(p) {
			return kprogram{startError: notInPath("nvidia-smi")}, ""
		}
		return kprogram{ends: true, gpuList: true}, ""
	}
	return kprogram{}, fmt.Sprintf("the SIMULATED cluster cannot run %q in a container: it runs sleep, echo, true, false and nvidia-smi -L", base)
}

// notInPath is the runtime's error for a program the image lacks.
func notInPath(prog string) string {
	return fmt.Sprintf("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: %q: executable file not found in $PATH: unknown", prog)
}

func sleepDuration(args []string) (time.Duration, bool) {
	var total time.Duration
	for _, a := range args {
		d, ok := SleepArg(a)
		if !ok {
			return 0, false
		}
		total += d
	}
	return total, len(args) > 0
}

// SleepArg reads one of sleep's (and timeout's) operands, NUMBER[smhd],
// as GNU coreutils does: a fraction is fine, a negative is not.
func SleepArg(s string) (time.Duration, bool) {
	unit := time.Second
	switch {
	case strings.HasSuffix(s, "s"):
		s = s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		s, unit = s[:len(s)-1], time.Minute
	case strings.HasSuffix(s, "h"):
		s, unit = s[:len(s)-1], time.Hour
	case strings.HasSuffix(s, "d"):
		s, unit = s[:len(s)-1], 24*time.Hour
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return time.Duration(f * float64(unit)), true
}

// visibleDevices is NVIDIA_VISIBLE_DEVICES as the container gets it:
// its own, or its image's (NVIDIA's images set "all"), "" if neither.
func visibleDevices(p *kpod) string {
	for _, e := range p.env {
		if e.name == "NVIDIA_VISIBLE_DEVICES" {
			return e.value
		}
	}
	if strings.Contains(p.image, "nvidia/") || strings.HasPrefix(p.image, "nvcr.io/nvidia") {
		return "all"
	}
	return ""
}

// driverInjected reports whether the NVIDIA runtime (the nodes'
// default) mounts the driver's files into the container: for GPUs the
// device plugin allocated, and for any NVIDIA_VISIBLE_DEVICES but void.
func driverInjected(p *kpod) bool {
	if len(p.req.ext) > 0 {
		return true
	}
	v := visibleDevices(p)
	return v != "" && v != "void"
}

// seenGPUs is nvidia-smi -L in the container: the GPUs it holds, or
// every GPU of the node when NVIDIA_VISIBLE_DEVICES=all reaches a
// container that asked for none; "No devices were found" otherwise.
func (s *kstate) seenGPUs(p *kpod) (string, int) {
	devices := p.devices
	if len(p.req.ext) == 0 && visibleDevices(p) == "all" {
		return (&Host{Faults: s.node[p.node].faults}).smiList(), 0
	}
	node := &Host{} // the node's machine, whose GPUs the pod holds
	if n := s.node[p.node]; n != nil {
		node.Faults = n.faults
	}
	var b strings.Builder
	for k, g := range devices {
		fmt.Fprintf(&b, "GPU %d: %s (UUID: %s)\n", k, GPUName, node.uuid(g))
	}
	for k, m := range p.migs {
		fmt.Fprintf(&b, "GPU %d: %s (UUID: %s)\n", len(devices)+k, GPUName, node.uuid(m.gpu))
		fmt.Fprintf(&b, "  MIG %-12sDevice %2d: (UUID: %s)\n", m.profile, 0, spec.MIGUUID(node.uuid(m.gpu), m.gi, 0))
	}
	if b.Len() == 0 {
		return "No devices were found\n", smiNotFound
	}
	return b.String(), 0
}

// podArg reads "NAME" or "pod/NAME" (or "job/NAME": its first pod).
func (k *kubeRun) podArg(s *kstate) (*kpod, int) {
	if len(k.inv.args) == 0 {
		return nil, k.fail("error: expected POD or TYPE/NAME is a required argument for the %s command\nSee 'kubectl %s -h' for help and examples", k.inv.verb, k.inv.verb)
	}
	arg, ns := k.inv.args[0], k.namespace()
	typ, name, typed := strings.Cut(arg, "/")
	if !typed {
		typ, name = "pod", arg
	}
	switch kind := findKind(typ); {
	case kind != nil && kind.plural == "pods":
		if p := s.findPod(ns, name); p != nil {
			return p, 0
		}
		return nil, k.fail("%s", notFound("pods", name))
	case kind != nil && kind.plural == "jobs":
		for _, j := range s.jobs {
			if j.ns == ns && j.name == name {
				if pods := s.jobPods(j); len(pods) > 0 {
					return pods[0], 0
				}
				return nil, k.fail("error: timed out waiting for the condition")
			}
		}
		return nil, k.fail("%s", notFound("jobs.batch", name))
	}
	return nil, k.fail("error: the SIMULATED cluster %s pods and jobs, not %q", map[string]string{"logs": "reads logs of", "exec": "runs commands in"}[k.inv.verb], typ)
}

// logs is kubectl logs POD: what the container printed; -f follows a
// running container until it ends (or the command is stopped).
func (k *kubeRun) logs() int {
	s := k.h.Cluster.state()
	p, code := k.podArg(s)
	if p == nil {
		k.h.Cluster.mu.Unlock()
		return code
	}
	text, fail := s.podLogs(p, k.inv.bool("previous"))
	st, now := p.state(s.now), s.now
	end := p.started.Add(p.run.lasts)
	k.h.Cluster.mu.Unlock()
	if fail != "" {
		return k.fail("%s", fail)
	}
	if n, err := strconv.Atoi(k.inv.flags["tail"]); err == nil && n >= 0 {
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		text = strings.Join(lines[max(0, len(lines)-n):], "")
	}
	k.t.print(text)
	if !k.inv.bool("follow") || st.phase != "Running" {
		return 0
	}
	if !p.run.ends {
		<-k.ctx.Done()
		return ExitCancelled
	}
	timer := time.NewTimer(end.Sub(now))
	defer timer.Stop()
	select {
	case <-k.ctx.Done():
		return ExitCancelled
	case <-timer.C:
		return 0
	}
}

// podLogs is what kubectl logs prints of p, or the API server's error.
func (s *kstate) podLogs(p *kpod, previous bool) (string, string) {
	st := p.state(s.now)
	switch {
	case p.node == "":
		return "", fmt.Sprintf("Error from server (BadRequest): container %q in pod %q is waiting to start: ContainerCreating", p.container, p.name)
	case previous && p.restarts == 0:
		return "", fmt.Sprintf("Error from server (BadRequest): previous terminated container %q in pod %q not found", p.container, p.name)
	case previous:
		return "", ""
	case st.reason == "StartError":
		// The container never started: the kubelet has no log file to read.
		path := fmt.Sprintf("/var/log/pods/%s_%s_%s/%s/0.log", p.ns, p.name, p.uid, p.container)
		return fmt.Sprintf("failed to try resolving symlinks in path %q: lstat %s: no such file or directory", path, path), ""
	case p.run.gpuList:
		out, _ := s.seenGPUs(p)
		return out, ""
	}
	return p.run.logs, ""
}

// exec is kubectl exec POD -- COMMAND: the simulated programs only.
func (k *kubeRun) exec() int {
	s := k.h.Cluster.state()
	p, code := k.podArg(s)
	if p == nil {
		k.h.Cluster.mu.Unlock()
		return code
	}
	st := p.state(s.now)
	probe := &kpod{command: k.inv.dash, env: p.env, image: p.image, req: p.req, devices: p.devices, migs: p.migs, node: p.node}
	prog, refusal := s.program(probe)
	var out string
	exit := prog.exit
	if prog.gpuList && refusal == "" {
		out, exit = s.seenGPUs(probe)
	}
	k.h.Cluster.mu.Unlock()
	switch {
	case len(k.inv.dash) == 0:
		return k.fail("error: you must specify at least one command for the container")
	case p.node == "":
		return k.fail("Error from server (BadRequest): pod %s does not have a host assigned", p.name)
	case st.phase == "Succeeded" || st.phase == "Failed":
		return k.fail("error: cannot exec into a container in a completed pod; current phase is %s", st.phase)
	case refusal != "":
		return k.fail("error: %s", refusal)
	case prog.startError != "":
		k.t.print("OCI runtime exec failed: exec failed: unable to start container process: exec: \"" + k.inv.dash[0] + "\": executable file not found in $PATH: unknown\n")
		return k.fail("command terminated with exit code 126")
	}
	k.t.print(out + prog.logs)
	if exit != 0 {
		return k.t.fail(exit, fmt.Sprintf("command terminated with exit code %d\n", exit))
	}
	return 0
}
