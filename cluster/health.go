package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// HealthSignal is one thing the cluster already says about a GPU node's
// health, and who said it: a node condition (NVSentinel's Gpu*, EKS's
// AcceleratedHardwareReady, GKE's XidCriticalError, node-problem
// detector's), a taint under nvidia.com/, IBM Autopilot's gpuhealth
// label, or the device plugin holding GPUs back (allocatable below
// capacity).
type HealthSignal struct {
	// Source is who says it: NVSentinel, gpulab (through NVSentinel),
	// EKS node monitoring agent, GKE, node condition, taint, IBM
	// Autopilot, device plugin.
	Source string `json:"source"`
	// Signal is what it is: the condition's type, the taint, the label,
	// the resource.
	Signal string `json:"signal"`
	// Healthy: the signal says the node is well (a condition that clears
	// a problem); only unhealthy signals are kept on a node.
	Healthy bool   `json:"healthy"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Since is when it last changed (the condition's lastTransitionTime,
	// the taint's timeAdded); zero when the cluster does not say.
	Since time.Time `json:"since,omitzero"`
}

// String is the signal in one line: "NVSentinel: GpuXidError (Xid 79 on
// GPU 3) since 2026-12-06T09:00:00Z".
func (h HealthSignal) String() string {
	s := h.Source + ": " + h.Signal
	if why := strings.TrimSpace(h.Reason + " " + h.Message); why != "" {
		s += " (" + why + ")"
	}
	if !h.Since.IsZero() {
		s += " since " + h.Since.UTC().Format(time.RFC3339)
	}
	return s
}

// standardConditions are the kubelet's own node conditions: Ready is the
// node's STATUS, the pressures are not the GPU's.
var standardConditions = []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure,
	corev1.NodePIDPressure, corev1.NodeNetworkUnavailable}

// conditionSource is who sets a node condition, by its type, and
// whether True is its healthy state (a *Ready condition) rather than a
// problem (node-problem-detector's convention, which NVSentinel and GKE
// follow).
func conditionSource(t string) (source string, trueIsHealthy bool) {
	switch {
	case strings.HasPrefix(t, "Gpulab"):
		return "gpulab (through NVSentinel)", false
	case t == "AcceleratedHardwareReady":
		return "EKS node monitoring agent", true
	case t == "XidCriticalError":
		return "GKE", false
	case strings.HasPrefix(t, "Gpu"):
		return "NVSentinel", false
	case strings.HasSuffix(t, "Ready"):
		return "node condition", true
	}
	return "node condition", false
}

// fenceTaintAnnotation names the taint of a gpulab fence on its node,
// fenceAtAnnotation its time (fence.AnnTaint and AnnAt, which this
// package cannot import).
const (
	fenceTaintAnnotation  = "gpulab.io/fence-taint"
	fenceAtAnnotation     = "gpulab.io/fenced-at"
	fenceRecordAnnotation = "gpulab.io/fence-record"
)

// fenceTaint says whether t is the taint of the gpulab fence n's
// annotations describe: its key and effect, and its time the fence's
// (as fence.ReadFence judges it: an annotation alone would let anyone
// who may annotate the node hide another's taint from the health view).
func fenceTaint(n *corev1.Node, t corev1.Taint) bool {
	at, err := time.Parse(time.RFC3339, n.Annotations[fenceAtAnnotation])
	return err == nil && n.Annotations[fenceRecordAnnotation] != "" && t.Key+":"+string(t.Effect) == n.Annotations[fenceTaintAnnotation] &&
		t.TimeAdded != nil && t.TimeAdded.Time.Equal(at)
}

// autopilotLabel is IBM Autopilot's verdict on a node's GPUs: PASS, or
// ERR, EVICT, TESTING...
const autopilotLabel = "autopilot.ibm.com/gpuhealth"

// nodeHealth is what the cluster says is wrong with node n's GPUs (its
// Capacity and Allocatable already read into g).
func nodeHealth(n *corev1.Node, g *GPUNode) []HealthSignal {
	var out []HealthSignal
	for _, c := range n.Status.Conditions {
		if slices.Contains(standardConditions, c.Type) || c.Status == corev1.ConditionUnknown && !strings.HasPrefix(string(c.Type), "Gpu") {
			continue
		}
		source, trueIsHealthy := conditionSource(string(c.Type))
		bad := (c.Status == corev1.ConditionTrue) != trueIsHealthy || c.Status == corev1.ConditionUnknown
		if !bad {
			continue
		}
		out = append(out, HealthSignal{Source: source, Signal: fmt.Sprintf("%s=%s", c.Type, c.Status), Reason: c.Reason,
			Message: c.Message, Since: c.LastTransitionTime.Time})
	}
	for _, t := range n.Spec.Taints {
		if fenceTaint(n, t) {
			continue // a gpulab fence, for any reason (a firmware update too): the Cluster tab and fence list show it as one
		}
		if strings.HasPrefix(t.Key, "nvidia.com/") || strings.HasPrefix(t.Key, "gpulab.io/") {
			h := HealthSignal{Source: "taint", Signal: taintString(t)}
			if t.TimeAdded != nil {
				h.Since = t.TimeAdded.Time
			}
			out = append(out, h)
		}
	}
	if v, ok := n.Labels[autopilotLabel]; ok && v != "PASS" {
		out = append(out, HealthSignal{Source: "IBM Autopilot", Signal: autopilotLabel + "=" + v})
	}
	for _, res := range slices.Sorted(maps.Keys(g.Capacity)) {
		if a := g.Allocatable[res]; a < g.Capacity[res] {
			out = append(out, HealthSignal{Source: "device plugin", Signal: res,
				Message: fmt.Sprintf("allocatable %d of capacity %d: it marked %d device(s) unhealthy", a, g.Capacity[res], g.Capacity[res]-a)})
		}
	}
	return out
}
