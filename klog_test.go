package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// What client-go logs through klog as it also returns the error ("E1202
// ... request.go:1198] Unexpected error when reading response body")
// never reaches the terminal: gpulab says what failed, once.
func TestNoKlogLineOnTheTerminal(t *testing.T) {
	bin := gpulabBinary(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Half an answer, then the connection ends.
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"kind\":\"NodeList\",\"items\":[")
		buf.Flush()
	}))
	t.Cleanup(api.Close)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: '"+api.URL+"'}}]\n"+
		"users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "cluster", "nodes", "--kubeconfig", kc)
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		t.Fatalf("cluster nodes against half an answer succeeded:\n%s", stdout.String())
	}
	klogLine := regexp.MustCompile(`^[IWEF]\d{4} \d\d:\d\d:\d\d`)
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		if klogLine.MatchString(sc.Text()) || strings.Contains(sc.Text(), "request.go:") {
			t.Errorf("a klog line reached the terminal: %s", sc.Text())
		}
	}
	if !strings.Contains(stderr.String(), "gpulab: ") {
		t.Errorf("gpulab did not say what failed:\n%s", stderr.String())
	}
}
