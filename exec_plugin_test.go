package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/testreq"
)

// pluginLine is what the test's exec credential plugin writes to its
// stderr, as aws, gke-gcloud-auth-plugin and kubelogin write notices.
var pluginLine = regexp.MustCompile(`PLUGIN-STDERR-LINE`)

// TestExecPluginStderrStaysOffTheScreen: a [[kube]] context whose user
// runs an exec credential plugin that writes to stderr (client-go runs
// it with the process's stderr) writes nothing on the workbench's
// screen; what it wrote is in a log the workbench names on exit.
func TestExecPluginStderrStaysOffTheScreen(t *testing.T) {
	tmux := testreq.Tool(t, "tmux", "the exec plugin test drives the workbench in it (apt-get install tmux)")
	bin := gpulabBinary(t)
	home := t.TempDir()
	ran := filepath.Join(home, "plugin-ran")
	plugin := filepath.Join(home, "plugin.sh")
	writeFile(t, plugin, fmt.Sprintf(`#!/bin/sh
echo "PLUGIN-STDERR-LINE: opening a browser to log in" >&2
touch %q
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"2000-01-01T00:00:00Z"}}'
`, ran), 0o755)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused: the plugin runs before each request all the same
	kubeconfig := filepath.Join(home, "kubeconfig")
	writeFile(t, kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never}}}]
contexts: [{name: plug, context: {cluster: c, user: u}}]
current-context: plug
`, addr, plugin), 0o600)
	writeFile(t, filepath.Join(home, ".config", "gpulab", "inventory.toml"), fmt.Sprintf("[[kube]]\nname = \"plug\"\nkubeconfig = %q\ncontext = \"plug\"\n", kubeconfig), 0o600)
	s := newTmux(t, tmux, 120, 40, fmt.Sprintf("unset GPULAB_INVENTORY GPULAB_KLOG XDG_CACHE_HOME XDG_CONFIG_HOME; NO_COLOR=1 HOME=%s %s", home, bin))
	screenWait(t, s, pluginLine, "[Map]")
	s.keys("7")
	screenWait(t, s, pluginLine, "Cluster context plug", "unreachable")
	deadline := time.Now().Add(time.Minute)
	for _, err := os.Stat(ran); err != nil; _, err = os.Stat(ran) {
		if time.Now().After(deadline) {
			t.Fatal("the exec plugin never ran")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// It runs again with every request (its credential has expired):
	// the screen stays clean across refreshes.
	screenWait(t, s, pluginLine, "Cluster context plug")
	s.keys("q")
	screen := strings.ReplaceAll(screenWait(t, s, nil, "EXIT=0"), "\n", "") // the path may wrap
	m := regexp.MustCompile(`is in (` + regexp.QuoteMeta(filepath.Join(home, ".cache", "gpulab")) + `/\S+\.log)`).FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("the log is not named:\n%s", screen)
	}
	if b, err := os.ReadFile(m[1]); err != nil || !pluginLine.Match(b) {
		t.Errorf("the log %s lacks the plugin's line (%v):\n%s", m[1], err, b)
	}
}

func writeFile(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}
