package kubetest

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"
)

// StopAPIServer stops the API server (SIGTERM, then SIGKILL after 10
// seconds) and returns once it has exited; etcd, the scheduler and kwok
// go on. StartAPIServer starts it again.
func (cp *ControlPlane) StopAPIServer(t testing.TB) {
	t.Helper()
	i := slices.IndexFunc(cp.procs, func(p *process) bool { return p.name == "kube-apiserver" })
	if i < 0 {
		t.Fatal("kubetest: StopAPIServer: the API server is not running")
	}
	p := cp.procs[i]
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	cp.stopped = p
	cp.procs = slices.Delete(cp.procs, i, i+1)
}

// StartAPIServer starts the API server StopAPIServer stopped, with the
// same port, certificates and etcd, and waits until it is ready.
func (cp *ControlPlane) StartAPIServer(t testing.TB) {
	t.Helper()
	p := cp.stopped
	if p == nil {
		t.Fatal("kubetest: StartAPIServer: StopAPIServer was not called")
	}
	if err := cp.run(p.bin, p.name, p.args...); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	cp.stopped = nil
	ctx, cancel := context.WithTimeout(t.Context(), readyTimeout)
	defer cancel()
	if err := cp.waitHTTP(ctx, "kube-apiserver", cp.apiReady); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
}
