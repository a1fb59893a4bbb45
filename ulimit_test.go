package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/testreq"
)

// Under an address-space limit the operator set (ulimit -v), lower than
// the fleet's own, the fleet's process starts within it: it raised the
// limit past the inherited hard one and could not start ("address
// space: operation not permitted").
func TestSimServeUnderUlimit(t *testing.T) {
	bin := gpulabBinary(t)
	sh := testreq.Tool(t, "sh", "the test sets ulimit -v in a shell")
	inv := filepath.Join(t.TempDir(), "inventory.toml")
	cmd := exec.Command(sh, "-c", `ulimit -v 3000000 && exec "$0" sim serve --hosts 2 --inventory-out "$1" 2>&1`, bin, inv)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var said []string
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("sim serve under ulimit -v 3000000 ended before it was ready:\n%s", strings.Join(said, "\n"))
			}
			if strings.HasPrefix(l, "ready: 2 SIMULATED") {
				return
			}
			said = append(said, l)
		case <-deadline:
			t.Fatalf("waited 2 minutes for sim serve under ulimit -v 3000000 to say ready:\n%s", strings.Join(said, "\n"))
		}
	}
}
