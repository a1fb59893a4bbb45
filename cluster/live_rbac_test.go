package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
)

// readerConfig is a client configuration for a ServiceAccount of the
// default namespace that may list and watch the resources given, at the
// cluster scope, and nothing else.
func readerConfig(t *testing.T, cp *kubetest.ControlPlane, name string, resources ...string) *rest.Config {
	t.Helper()
	ctx := t.Context()
	sa, err := cp.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	grant(t, cp, name, resources...)
	tr, err := cp.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &rest.Config{Host: cp.Config.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAFile: cp.Config.CAFile}}
}

// grant lets ServiceAccount default/sa list and watch resources (a
// ClusterRole and its binding, both named sa-N).
func grant(t *testing.T, cp *kubetest.ControlPlane, sa string, resources ...string) {
	t.Helper()
	ctx, rbac := t.Context(), cp.Client.RbacV1()
	name := sa + "-" + resources[0]
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"", "scheduling.k8s.io"}, Resources: resources, Verbs: []string{"get", "list", "watch"}}}}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: sa}}}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Against a real API server: a reader that may list nodes but not pods
// gets a synced view that says what is denied and what that leaves
// unknown, and the denial goes once RBAC allows the pods; a token the
// server rejects is "refused", not "unreachable": the server answers.
func TestLiveSaysWhatRBACDenies(t *testing.T) {
	cp := kubetest.Start(t)
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 8))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	opts := cluster.LiveOptions{Interval: 20 * time.Millisecond, Check: 100 * time.Millisecond}

	cfg := readerConfig(t, cp, "nodes-only", "nodes", "resourcequotas", "priorityclasses", "events")
	c, err := cluster.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := cluster.StartLive(ctx, c, opts)
	want := "cannot list pods at the cluster scope (RBAC): allocation and pending unknown"
	waitLive(t, l, "synced view denied the pods", func(o *cluster.Objects, st cluster.LiveStatus) bool {
		return st.State == cluster.Synced && st.Denies("pods") && len(o.GPUNodes()) == 1
	})
	if st := l.Status(); st.Warning != want || len(st.Denied) != 1 || len(st.Listing) != 0 || st.Knows("pods") || !st.Knows("nodes") {
		t.Errorf("warning = %q (denied %v, listing %v), want %q", st.Warning, st.Denied, st.Listing, want)
	}
	grant(t, cp, "nodes-only", "pods")
	waitLive(t, l, "the pods allowed", func(_ *cluster.Objects, st cluster.LiveStatus) bool {
		return st.State == cluster.Synced && !st.Denies("pods") && st.Warning == ""
	})

	bad := rest.CopyConfig(cfg)
	bad.BearerToken = "not-a-token"
	c, err = cluster.NewClient(bad)
	if err != nil {
		t.Fatal(err)
	}
	l = cluster.StartLive(ctx, c, opts)
	waitLive(t, l, "refused credentials", func(_ *cluster.Objects, st cluster.LiveStatus) bool { return st.State == cluster.Refused })
	if s := l.Status().String(); !strings.Contains(s, "refused: Unauthorized (the credentials)") || strings.Contains(s, "unreachable") {
		t.Errorf("status = %q, want the credentials refused", s)
	}
}
