package kubetest

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Quota creates a ResourceQuota and sets its status as the quota
// controller would (there is no controller manager): the API server's
// quota admission refuses every pod of the namespace while a quota's
// status is unknown, and counts what it admits from there on.
func (cp *ControlPlane) Quota(t testing.TB, ns, name string, hard corev1.ResourceList) {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	quotas := cp.Client.CoreV1().ResourceQuotas(ns)
	created, err := quotas.Create(t.Context(), q, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create quota %s/%s: %v", ns, name, err)
	}
	used := corev1.ResourceList{}
	for r, h := range hard {
		zero := h.DeepCopy()
		zero.Set(0)
		used[r] = zero
	}
	created.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	if _, err := quotas.UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set the status of quota %s/%s: %v", ns, name, err)
	}
}

// JobRefused creates a suspended Job and the event its controller records
// when the API server refuses to create its pod (there is no controller
// manager here): FailedCreate, "Error creating: " and the API server's
// refusal, as the Job controller writes it.
func (cp *ControlPlane) JobRefused(t testing.TB, ns, name string, refusal error) {
	t.Helper()
	suspend := true
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{Suspend: &suspend,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "cuda"}}}}}}
	j, err := cp.Client.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create job %s/%s: %v", ns, name, err)
	}
	now := metav1.Now()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name + ".refused"},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: ns, Name: name, UID: j.UID, APIVersion: "batch/v1"},
		Reason:         "FailedCreate", Message: "Error creating: " + refusal.Error(), Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: "job-controller"}, FirstTimestamp: now, LastTimestamp: now, Count: 3}
	if _, err := cp.Client.CoreV1().Events(ns).Create(t.Context(), ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the FailedCreate event of job %s/%s: %v", ns, name, err)
	}
}
