package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/sim"
)

// Every way a run through the API server is stopped leaves no node pod
// behind: Ctrl-C, SIGTERM and SIGHUP stop the commands, keep what they
// printed and delete the pods (exit 130); a second Ctrl-C exits at once,
// deleting the run's pods first. The test lists the pods left: none.
func TestKubeRunStoppedLeavesNoPod(t *testing.T) {
	bin := gpulabBinary(t)
	cp := kubeSimCluster(t, 3)
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
			cp.WaitPods(t, metav1.NamespaceDefault, func(ps []corev1.Pod) bool {
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
			cp.WaitPods(t, metav1.NamespaceDefault, func(ps []corev1.Pod) bool { return len(ps) == 0 }, "no node pod left")
		})
	}
}

// The workbench on a cluster's nodes, with no inventory and no SSH: the
// Fleet tab lists the nodes and runs a command on each through the API
// server, the Runbooks tab runs a runbook there; on quit no node pod is
// left (the workbench keeps its pods between commands while it runs).
func TestWorkbenchThroughKubeInTmux(t *testing.T) {
	tmux := testreq.Tool(t, "tmux", "the smoke test drives the workbench in it (apt-get install tmux)")
	bin := gpulabBinary(t)
	cp := kubeSimCluster(t, 3)
	dir := t.TempDir()
	s := newTmux(t, tmux, 120, 30, "HOME="+dir+" "+bin+" --via kube --kubeconfig "+cp.Kubeconfig)
	s.waitFor("CONTROL PLANE")
	s.keys("3")
	s.waitFor("3 hosts: dgx[01-03]. Press : to run a command")
	s.keys(":")
	s.run("send-keys", "-t", "smoke", "-l", "nvidia-smi -L | head -1")
	s.keys("Enter")
	s.waitFor("3/3  3 ok")
	s.waitFor("GPU 0: NVIDIA A100")
	s.keys("4")
	s.waitFor("▶ ")
	s.keys("Enter")
	s.waitFor("done 3/3")
	s.keys("Escape")
	s.waitFor("▶ ")
	s.keys("q")
	s.waitFor("EXIT=0")
	cp.WaitPods(t, metav1.NamespaceDefault, func(ps []corev1.Pod) bool { return len(ps) == 0 }, "no node pod left after the workbench quit")
}

// kubeSimCluster is a real API server whose nodes are the hosts of a
// simulated fleet of n, each node's kubelet endpoint its host.
func kubeSimCluster(t *testing.T, n int) *kubetest.ControlPlane {
	t.Helper()
	cp := kubetest.Start(t)
	f, err := sim.Start(t.Context(), sim.Config{Hosts: n, Kubelet: &sim.KubeletConfig{ClientCA: cp.KubeletClientCA}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for _, h := range f.Hosts() {
		cp.AddNode(t, sim.NodeOf(h))
	}
	return cp
}
