package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/render"
)

// printReconcile prints reconcile's text output: a table per node, the
// idle pods, the processes without an allocation, stranded MIG, the hosts
// that map to no node, a table per namespace and a one-line summary.
func printReconcile(w io.Writer, out reconcileOutput, mock bool) error {
	switch {
	case mock:
		fmt.Fprintln(w, "SIMULATED GPUs (--mock): the probe ran against simulated DGX A100s; the cluster is real")
	case out.Simulated:
		fmt.Fprintln(w, simulatedFleet)
	}
	t := out.Totals
	fmt.Fprintf(w, "cluster %s: %s, %d probed\n\n", visible.String(out.Context), text.Plural(t.Nodes, "node", "nodes"), t.Probed)
	nodes := render.NewTable("NODE", "HOST", "GPUS", "IN-USE", "ALLOCATED", "ALLOC-BUSY", "ALLOC-IDLE", "STARTING", "UNALLOCATED", "MIG-STRANDED")
	notProbed := map[string][]string{}
	var reasons []string
	for _, n := range out.Nodes {
		if !n.Probed {
			if _, ok := notProbed[n.NotProbed]; !ok {
				reasons = append(reasons, n.NotProbed)
			}
			notProbed[n.NotProbed] = append(notProbed[n.NotProbed], n.Node)
			continue
		}
		u := n.Usage
		nodes.Add(visible.String(n.Node), visible.String(n.Host), fmt.Sprint(n.GPUs), fmt.Sprint(len(n.BusyGPUs)),
			devicesText(u.Allocated), devicesText(u.Busy), devicesText(u.Idle), devicesText(u.Starting), fmt.Sprint(n.Unallocated), fmt.Sprint(n.StrandedMIG))
	}
	if err := nodes.WriteText(w); err != nil {
		return err
	}
	for _, why := range reasons {
		fmt.Fprintf(w, "not probed: %s (%s)\n", visible.String(inventory.FoldNames(notProbed[why])), visible.String(why))
	}
	printReconcileFindings(w, out)
	fmt.Fprintln(w)
	spaces := render.NewTable("NAMESPACE", "PODS", "ALLOCATED", "BUSY", "IDLE", "STARTING", "UNKNOWN")
	for _, n := range out.Namespaces {
		u := n.Usage
		spaces.Add(visible.String(n.Namespace), fmt.Sprint(n.Pods), devicesText(u.Allocated), devicesText(u.Busy),
			devicesText(u.Idle), devicesText(u.Starting), devicesText(u.Unknown))
	}
	if err := spaces.WriteText(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", visible.String(reconcileSummary(out.Reconciliation)+hostsNotProbed(out.Hosts)))
	return nil
}

// hostsNotProbed ends the summary with the selected hosts whose probe did
// not answer and that map to no node (those on a node are in "N nodes not
// probed"), by class: "; 2 selected hosts on no node not probed: 1
// refused (dgx09), 1 error (dgx10)". Every selected host is counted.
func hostsNotProbed(hosts []reconcileHost) string {
	var failed []orchestrator.HostResult
	for _, h := range hosts {
		if h.Class != orchestrator.OK.String() && h.Node == "" {
			var c orchestrator.Class
			if c.UnmarshalText([]byte(h.Class)) != nil {
				c = orchestrator.Error
			}
			failed = append(failed, orchestrator.HostResult{Host: h.Host, Class: c})
		}
	}
	if len(failed) == 0 {
		return ""
	}
	_, classes, _ := strings.Cut(orchestrator.Summary(failed), ": ")
	return fmt.Sprintf("; %s on no node not probed: %s", text.Plural(len(failed), "selected host", "selected hosts"), classes)
}

// printReconcileFindings lists what is wrong or unmapped, one line each.
func printReconcileFindings(w io.Writer, out reconcileOutput) {
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", visible.String(l))
		}
	}
	var idle, unalloc, stranded, unmapped []string
	for _, p := range out.Pods {
		if p.State == cluster.PodIdle {
			idle = append(idle, fmt.Sprintf("%s/%s on %s holds %s: %s", p.Namespace, p.Name, p.Node, heldText(p.Held), p.Reason))
		}
	}
	for _, u := range out.Unallocated {
		unalloc = append(unalloc, fmt.Sprintf("host %s (node %s) %s: PID %d %s, %d MiB: %s", u.Host, u.Node, gpuText(u.ProcessUse), u.PID, u.Name, u.UsedMiB, u.Reason))
	}
	for _, s := range out.StrandedMIG {
		if s.Profile == "" {
			stranded = append(stranded, fmt.Sprintf("%s: GPU %s in MIG mode with no instance: nothing can run on it", s.Node, joinInts(s.GPUs)))
			continue
		}
		stranded = append(stranded, fmt.Sprintf("%s: %d of %d %s instances (GPU %s) beyond what the node advertises (%s: %d), nothing runs in them",
			s.Node, s.Stranded, s.Instances, s.Profile, joinInts(s.GPUs), s.Resource, s.Advertised))
	}
	for _, h := range out.Hosts {
		if h.Unmapped != "" {
			line := h.Host + ": " + h.Unmapped
			if h.Class != "ok" { // and its probe did not answer either: say how it ended
				line += "; its probe: " + h.Class + ": " + h.Error
			}
			unmapped = append(unmapped, line)
		}
	}
	section("Allocated and idle", idle)
	section("Used without allocation", unalloc)
	section("Stranded MIG", stranded)
	section("Hosts that map to no node", unmapped)
}

// reconcileSummary is the one-line summary: "12 GPUs allocated, 3 idle
// (ns/pod ...), 1 used without allocation (host gpu-b GPU 3, PID 4242
// python)".
func reconcileSummary(r cluster.Reconciliation) string {
	t := r.Totals
	s := devicesText(t.Usage.Allocated) + " allocated"
	if t.Usage.Allocated.MIGSlices == 0 {
		s = text.Plural(int(t.Usage.Allocated.GPUs), "GPU", "GPUs") + " allocated"
	}
	var idle []string
	for _, p := range r.Pods {
		if p.State == cluster.PodIdle {
			idle = append(idle, p.Namespace+"/"+p.Name)
		}
	}
	s += fmt.Sprintf(", %s idle", devicesText(t.Usage.Idle))
	if len(idle) > 0 {
		s += " (" + firstOf(idle, 5) + ")"
	}
	var used []string
	for _, u := range r.Unallocated {
		used = append(used, fmt.Sprintf("host %s %s, PID %d %s", u.Host, gpuText(u.ProcessUse), u.PID, u.Name))
	}
	s += fmt.Sprintf(", %d used without allocation", t.UnallocatedGPUs)
	if len(used) > 0 {
		s += " (" + strings.ReplaceAll(firstOf(used, 5), ", host", "; host") + ")"
	}
	if t.StrandedMIG > 0 {
		s += fmt.Sprintf(", %d MIG instances stranded", t.StrandedMIG)
	}
	if t.NotProbed > 0 {
		s += ", " + text.Plural(t.NotProbed, "node", "nodes") + " not probed"
	}
	return s
}

// devicesText is "2", "1 MIG" or "2+1 MIG".
func devicesText(d cluster.Devices) string {
	switch {
	case d.MIGSlices == 0:
		return fmt.Sprint(d.GPUs)
	case d.GPUs == 0:
		return fmt.Sprintf("%d MIG", d.MIGSlices)
	}
	return fmt.Sprintf("%d+%d MIG", d.GPUs, d.MIGSlices)
}

// heldText is "1 GPU", "2 GPUs", "1 MIG slice" or "2 GPUs and 1 MIG slice".
func heldText(d cluster.Devices) string {
	var parts []string
	if d.GPUs > 0 {
		parts = append(parts, text.Plural(int(d.GPUs), "GPU", "GPUs"))
	}
	if d.MIGSlices > 0 {
		parts = append(parts, text.Plural(int(d.MIGSlices), "MIG slice", "MIG slices"))
	}
	return strings.Join(parts, " and ")
}

func gpuText(p cluster.ProcessUse) string {
	if p.GPUInstance != nil {
		return fmt.Sprintf("GPU %d (MIG instance %d)", p.GPU, *p.GPUInstance)
	}
	return fmt.Sprintf("GPU %d", p.GPU)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// firstOf joins the first n items, and says how many more there are.
func firstOf(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(slices.Clip(items[:n]), ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}
