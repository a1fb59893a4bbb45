package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/sim"
)

// Every way a run through the API server is stopped leaves no node pod
// behind: Ctrl-C, SIGTERM and SIGHUP stop the commands, keep what they
// printed and delete the pods (exit 130); a second Ctrl-C exits at once,
// deleting the run's pods first. The test lists the pods left: none.
func TestKubeRunStoppedLeavesNoPod(t *testing.T) {
	bin := gpulabBinary(t)
	cp := kubetest.Start(t)
	f, err := sim.Start(t.Context(), sim.Config{Hosts: 3, Kubelet: &sim.KubeletConfig{ClientCA: cp.KubeletClientCA}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for _, h := range f.Hosts() {
		cp.AddNode(t, sim.NodeOf(h))
	}
	for _, tc := range []struct {
		name string
		sigs []os.Signal
	}{
		{"Ctrl-C", []os.Signal{os.Interrupt}},
		{"TERM", []os.Signal{syscall.SIGTERM}},
		{"HUP", []os.Signal{syscall.SIGHUP}},
		{"Ctrl-C twice", []os.Signal{os.Interrupt, os.Interrupt}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "exec", "--via", "kube", "--kubeconfig", cp.Kubeconfig, "-H", "*", "--", "echo started; sleep 600")
			cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitPods(t, cp, func(ps []corev1.Pod) bool {
				running := 0
				for _, p := range ps {
					if p.Status.Phase == corev1.PodRunning {
						running++
					}
				}
				return running == 3
			}, "the run's three node pods Running")
			for _, s := range tc.sigs {
				_ = cmd.Process.Signal(s)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case <-waited:
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("gpulab did not exit within a minute of %v\nstderr: %s", tc.sigs, errOut.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit %d, want 130\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
			}
			waitPods(t, cp, func(ps []corev1.Pod) bool { return len(ps) == 0 }, "no node pod left")
		})
	}
}

// waitPods waits, on a watch of the default namespace's pods, until ok
// holds for the pods listed; it fails naming what it waited for.
func waitPods(t *testing.T, cp *kubetest.ControlPlane, ok func([]corev1.Pod) bool, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pods := cp.Client.CoreV1().Pods(metav1.NamespaceDefault)
	for {
		l, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list pods, waiting for %s: %v", what, err)
		}
		if ok(l.Items) {
			return
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatalf("watch pods, waiting for %s: %v", what, err)
		}
		select {
		case <-w.ResultChan():
		case <-ctx.Done():
			w.Stop()
			var left []string
			for _, p := range l.Items {
				left = append(left, p.Name+" "+string(p.Status.Phase))
			}
			t.Fatalf("waited 2m for %s; pods: %v", what, left)
		}
		w.Stop()
	}
}
