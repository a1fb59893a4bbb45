package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
)

// Labels gpulab puts on every pod it creates on a node, so that its own
// can be found and removed, and nothing else.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "gpulab"
	RunLabel       = "gpulab.io/run"
	NodeLabel      = "gpulab.io/node"
)

// DefaultNodePodImage is the image of the pod gpulab runs on a node when
// the operator names none: small and public; an air-gapped site names its
// mirror. The pod needs only sh, sleep, cat and chroot (busybox has them
// all): the node's own tools are under /host.
const DefaultNodePodImage = "docker.io/library/busybox:1.37"

// NodePodOptions shape the pod gpulab runs on a node to reach it.
type NodePodOptions struct {
	Namespace string
	Image     string // DefaultNodePodImage when ""
	// RunID names the run: every pod of one run has it as RunLabel.
	RunID string
	// Deadline bounds the pod's life (activeDeadlineSeconds): a pod a
	// crashed run leaves behind ends by itself.
	Deadline time.Duration
	// WritableHost mounts the host's / read-write at /host (a lab's
	// setup); read-only otherwise.
	WritableHost bool
}

// NodePod is the pod that reaches node as `kubectl debug node
// --profile=sysadmin` does: pinned with spec.nodeName (no scheduler),
// the host's PID, network and IPC namespaces, privileged, the host's /
// at /host (read-only unless asked), every taint tolerated, never
// restarted, ended by its deadline, with no service account token, and
// labelled with gpulab and the run so that cleanup finds it.
//
// Its one writable place is an emptyDir at /gpulab (PodScratch), gone
// with the pod: what gpulab pushes (the probe) goes there, never onto the
// host. The container's shell writes its process ID into /gpulab/pid
// before it turns into sleep: commands run chrooted into /host reach the
// scratch directory through /proc/PID/root/gpulab (the host's PID
// namespace is the pod's).
func NodePod(node string, o NodePodOptions) *corev1.Pod {
	image := o.Image
	if image == "" {
		image = DefaultNodePodImage
	}
	deadline := int64(max(o.Deadline, time.Minute) / time.Second)
	zero, yes, no := int64(0), true, false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "gpulab-" + nameSafe(node) + "-",
			Namespace:    o.Namespace,
			Labels:       map[string]string{ManagedByLabel: ManagedBy, RunLabel: labelSafe(o.RunID), NodeLabel: labelSafe(node)},
		},
		Spec: corev1.PodSpec{
			NodeName:    node,
			HostPID:     true,
			HostNetwork: true,
			HostIPC:     true,
			// Every taint, NoExecute included: a node fenced or sick is the
			// one the operator most needs to reach.
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: &zero,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			DNSPolicy:                     corev1.DNSClusterFirstWithHostNet,
			Containers: []corev1.Container{{
				Name:            "gpulab",
				Image:           image,
				Command:         []string{"sh", "-c", "echo $$ >" + PodScratch + "/pid && exec sleep " + fmt.Sprint(deadline)},
				SecurityContext: &corev1.SecurityContext{Privileged: &yes},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "host", MountPath: "/host", ReadOnly: !o.WritableHost},
					{Name: "scratch", MountPath: PodScratch},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

// PodScratch is the node pod's own writable directory (an emptyDir).
const PodScratch = "/gpulab"

// leftoverGrace is how long past its deadline a node pod that has not
// ended (its node gone, its kubelet silent) is left before another run
// removes it.
const leftoverGrace = 5 * time.Minute

// CleanupNodePods deletes gpulab's node pods in ns: those of run (any
// age) when run is given, and the leftovers of other runs (a run that
// crashed, or was killed before its cleanup): a pod that has ended (its
// deadline passed) or that is leftoverGrace past its deadline at now. A
// live pod of another run, of another operator's gpulab, is never
// touched. It deletes only pods ManagedByLabel names gpulab's, and says
// how many it deleted.
func CleanupNodePods(ctx context.Context, client kubernetes.Interface, ns, run string, now time.Time) (int, error) {
	pods := client.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + ManagedBy})
	if err != nil {
		return 0, err
	}
	zero := int64(0)
	deleted := 0
	for _, p := range list.Items {
		mine := run != "" && p.Labels[RunLabel] == labelSafe(run)
		if !mine && !leftover(&p, now) {
			continue
		}
		err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return deleted, fmt.Errorf("delete pod %s/%s: %w", ns, p.Name, err)
		default:
			deleted++
		}
	}
	return deleted, nil
}

// leftover says whether p, another run's node pod, is left behind: it
// has ended, or it is leftoverGrace past its deadline.
func leftover(p *corev1.Pod, now time.Time) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	deadline := time.Hour
	if d := p.Spec.ActiveDeadlineSeconds; d != nil {
		deadline = time.Duration(*d) * time.Second
	}
	return now.Sub(p.CreationTimestamp.Time) > deadline+leftoverGrace
}

// labelSafe is s as a label value: at most 63 characters of letters,
// digits, '-', '_' and '.', starting and ending with a letter or digit.
func labelSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b[:min(len(b), validation.LabelValueMaxLength)]), "-_.")
	if out == "" {
		return "x"
	}
	return out
}

// nameSafe is s as part of a pod's name: lower-case letters, digits and
// '-', short enough to leave room for the generated suffix.
func nameSafe(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b[:min(len(b), 40)]), "-")
	if out == "" {
		return "node"
	}
	return out
}

// CreateNodePod creates o's pod on node. A refusal is a *KubeError named
// for what refused it: Pod Security admission (with the namespace label
// that allows a node pod), another admission plugin or webhook, RBAC
// (the permission missing), a quota, or the API server's own policy on
// privileged pods (--allow-privileged).
func CreateNodePod(ctx context.Context, client kubernetes.Interface, node string, o NodePodOptions) (*corev1.Pod, error) {
	p, err := client.CoreV1().Pods(o.Namespace).Create(ctx, NodePod(node, o), metav1.CreateOptions{})
	if err == nil {
		return p, nil
	}
	msg := err.Error()
	refused := func(class Class, format string, args ...any) error {
		return &KubeError{Class: class, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(msg, "violates PodSecurity"):
		return nil, refused(Admission, "namespace %s refuses gpulab's node pod (Pod Security admission: %s): a node pod is privileged and uses the host's namespaces; "+
			"run it in a namespace labelled pod-security.kubernetes.io/enforce=privileged (kubectl label namespace NS pod-security.kubernetes.io/enforce=privileged)", o.Namespace, msg)
	case apierrors.IsForbidden(err) && strings.Contains(msg, "exceeded quota"):
		return nil, refused(Quota, "namespace %s has no room for the node pod (ResourceQuota): %w", o.Namespace, err)
	case apierrors.IsForbidden(err) && strings.Contains(msg, "cannot create resource"):
		return nil, refused(Forbidden, "forbidden: create pods in namespace %s (RBAC: the node transport needs create, get and delete on pods there): %w", o.Namespace, err)
	case apierrors.IsInvalid(err) && strings.Contains(msg, "privileged: Forbidden"):
		return nil, refused(Admission, "the API server refuses privileged pods (kube-apiserver --allow-privileged=false): gpulab cannot reach node %s through it: %w", node, err)
	case strings.Contains(msg, "admission webhook") || apierrors.IsForbidden(err):
		return nil, refused(Admission, "admission refused gpulab's node pod in namespace %s: %w", o.Namespace, err)
	}
	return nil, fmt.Errorf("create the node pod on %s: %w", node, err)
}
