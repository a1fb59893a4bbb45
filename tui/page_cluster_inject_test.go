package tui

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/cluster"
)

// hostile is what a cluster's user can put in a name or a message: an
// OSC that retitles the terminal, a CSI that clears it, a colour, C1's
// CSI, BEL and a bidi override.
const hostile = "\x1b]0;PWNED-TITLE\x07\x1b[41mREDBG\x1b[0m\x1b[2J\x1b[H\u009b31m\u202eevil"

// hostileFixture is clusterFixture with control characters in every
// field the tab draws: node, pod, namespace, quota and resource names,
// taints, the scheduler's reason and message, the quota refusal.
func hostileFixture() *cluster.Objects {
	o := clusterFixture()
	o.Nodes[0].Name = "dgx01" + hostile
	o.Nodes[0].Spec.Taints = []corev1.Taint{{Key: "k" + hostile, Value: "v" + hostile, Effect: corev1.TaintEffectNoSchedule}}
	o.Nodes[2].Status.Capacity["nvidia.com/mig-1g"+hostile] = resource.MustParse("1")
	o.Pods[0].Spec.NodeName = o.Nodes[0].Name
	p := o.Pods[4]
	p.Namespace, p.Name = "research"+hostile, "llm"+hostile
	p.Status.Conditions[0].Reason = "Unschedulable" + hostile
	p.Status.Conditions[0].Message = "0/3 nodes" + hostile
	e := o.Events[0]
	e.Namespace, e.Message = p.Namespace, "0/3 nodes are available: "+hostile
	e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.InvolvedObject.UID = p.Namespace, p.Name, p.UID
	f := o.Events[1]
	f.InvolvedObject.Name = "eval-sweep" + hostile
	f.Message = `Error creating: pods "eval-sweep-7qv2n" is forbidden: exceeded quota: gpu-quota` + hostile + `, requested: requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=10, limited: requests.nvidia.com/gpu=12`
	o.ResourceQuotas[0].Name = "gpu-quota" + hostile
	o.ResourceQuotas = append(o.ResourceQuotas, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ml" + hostile, Name: "q" + hostile},
		Status: corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{"requests.nvidia.com/gpu" + corev1.ResourceName(hostile): resource.MustParse("2")}}})
	return o
}

// injected reports the first control character in s: under the plain
// profile (TestMain's) lipgloss writes none, so any is the cluster's.
func injected(s string) (rune, bool) {
	for _, r := range s {
		if r == 0x1b || r == 0x07 || r >= 0x80 && r <= 0x9f || r == 0x202e || r < 0x20 && r != '\n' {
			return r, true
		}
	}
	return 0, false
}

// Nothing the cluster says reaches the terminal as a control character:
// not in the waiting list's rows (no selection needed), not in the
// selected pod's why and evidence, not in the node and quota lists, the
// status line (a warning, an error) or the context's name.
func TestClusterViewEscapesWhatTheClusterSays(t *testing.T) {
	live := newFakeLive(hostileFixture())
	live.status.Warning = "pods is forbidden" + hostile
	sources := []ClusterSource{{Name: "prod" + hostile, Live: live}, {Name: "broken" + hostile, Err: "kubeconfig" + hostile}}
	lost := newFakeLive(hostileFixture())
	lost.status = cluster.LiveStatus{State: cluster.Lost, Server: "h:6443", Err: "dial" + hostile, Warning: "w" + hostile}
	sources = append(sources, ClusterSource{Name: "lost", Live: lost})
	m := newClusterModel(t, 160, 60, sources...)
	for _, keys := range [][]string{nil, {"down"}, {"down", "down"}, {"right"}, {"right", "down"}, {"c"}, {"c", "c"}} {
		mm, _ := press(t, m, keys...)
		view := mm.View()
		if r, bad := injected(view); bad {
			t.Errorf("%v: the view holds %U from the cluster:\n%q", keys, r, view)
		}
		for _, want := range []string{`\x1b]0;PWNED-TITLE\a`} {
			if !strings.Contains(view, want) {
				t.Errorf("%v: the view does not show %q escaped:\n%s", keys, want, view)
			}
		}
	}
}
