package orchestrator

import (
	"context"
	"errors"
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

// nodePodSelector selects gpulab's node pods: its managed-by label and
// both of its own (a pod some other tool labels managed-by=gpulab is
// not one).
var nodePodSelector = ManagedByLabel + "=" + ManagedBy + "," + RunLabel + "," + NodeLabel

// CleanupNodePods deletes gpulab's node pods in ns: those of run (any
// state) when run is given, and the leftovers of other runs (a run that
// crashed, or was killed before its cleanup): a pod that has ended, as
// its deadline ends it. A live pod of another run, of another operator's
// gpulab, is never touched, and no clock is read: a pod's state is the
// cluster's. It tries every pod, whatever one delete says, and returns
// how many it deleted and every error.
func CleanupNodePods(ctx context.Context, client kubernetes.Interface, ns, run string) (int, error) {
	pods := client.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: nodePodSelector})
	if err != nil {
		return 0, err
	}
	zero := int64(0)
	deleted := 0
	var errs []error
	for _, p := range list.Items {
		mine := run != "" && p.Labels[RunLabel] == labelSafe(run)
		ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if !mine && !ended || p.Spec.NodeName == "" || !p.Spec.HostPID {
			continue // not a node pod's shape: not gpulab's to remove
		}
		err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", ns, p.Name, err))
		default:
			deleted++
		}
	}
	return deleted, errors.Join(errs...)
}

// DeleteRunPods deletes every node pod of run in ns in one request (a
// forced exit has seconds), then checks none is left.
func DeleteRunPods(ctx context.Context, client kubernetes.Interface, ns, run string) error {
	zero := int64(0)
	sel := ManagedByLabel + "=" + ManagedBy + "," + RunLabel + "=" + labelSafe(run) + "," + NodeLabel
	err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		_, err = CleanupNodePods(ctx, client, ns, run) // no deletecollection: one by one
	}
	return err
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
	return nil, createRefusal(err, o.Namespace, node)
}

// createRefusal names the API server's refusal of a node pod in ns.
func createRefusal(err error, ns, node string) error {
	msg := err.Error()
	refused := func(class Class, format string, args ...any) error {
		return &KubeError{Class: class, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(msg, "violates PodSecurity"):
		return refused(Admission, "namespace %s refuses gpulab's node pod (Pod Security admission: %s): a node pod is privileged and uses the host's namespaces; "+
			"run it in a namespace labelled pod-security.kubernetes.io/enforce=privileged (kubectl label namespace NS pod-security.kubernetes.io/enforce=privileged)", ns, msg)
	case apierrors.IsForbidden(err) && strings.Contains(msg, "exceeded quota"):
		return refused(Quota, "namespace %s has no room for the node pod (ResourceQuota): %w", ns, err)
	case apierrors.IsForbidden(err) && strings.Contains(msg, "cannot create resource"):
		return refused(Forbidden, "forbidden: create pods in namespace %s (RBAC: the node transport needs create, get and delete on pods there): %w", ns, err)
	case apierrors.IsInvalid(err) && strings.Contains(msg, "privileged: Forbidden"):
		return refused(Admission, "the API server refuses privileged pods (kube-apiserver --allow-privileged=false): gpulab cannot reach node %s through it: %w", node, err)
	case strings.Contains(msg, "admission webhook") || apierrors.IsForbidden(err):
		return refused(Admission, "admission refused gpulab's node pod in namespace %s: %w", ns, err)
	}
	return fmt.Errorf("create the node pod on %s: %w", node, err)
}
