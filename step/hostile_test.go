package step_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
)

// hostileValues try to change a command's structure in every context a
// parameter can sit in: a heredoc (newline + EOF), single and double
// quotes, command substitution, backquotes, separators, JSON and YAML.
// Each one, if it ran, would create marker.
func hostileValues(marker string) []string {
	return []string{
		"busybox:1.36\nEOF\ntouch " + marker + " #",
		"x'; touch " + marker + "; echo '",
		`x"; touch ` + marker + `; echo "`,
		"$(touch " + marker + ")",
		"`touch " + marker + "`",
		"x; touch " + marker,
		"x && touch " + marker,
		"x | touch " + marker,
		"x\ntouch " + marker,
		`x","command":["touch","` + marker + `"],"y":"`,
		"x\n  command: [touch, " + marker + "]",
		"x'\"'\"'$(touch " + marker + ")'\"'\"'",
		"${IFS}touch${IFS}" + marker,
		"x}}{{touch " + marker + "}}",
	}
}

// validValue is a harmless value of p's type.
func validValue(p step.Param) string {
	if p.Pattern != "" {
		return "MIG-0"
	}
	return cmp.Or(map[string]string{"url": "http://127.0.0.1:9", "int": "1", "number": "1", "name": "ns", "image": "busybox:1.36"}[p.Type], "x")
}

type paramCommand struct {
	where   string // "lab hami-sharing step pod"
	command string
	params  []step.Param
}

// everyCommand lists each command of every built-in lab and runbook.
func everyCommand(t *testing.T) []paramCommand {
	ls, err := labs.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	rbs, err := runbooks.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []paramCommand
	for _, l := range ls {
		for i, p := range l.Prerequisites {
			out = append(out, paramCommand{fmt.Sprintf("lab %s prerequisite %d", l.ID, i+1), p.Command, l.Params})
		}
		for _, s := range l.Steps {
			out = append(out, paramCommand{fmt.Sprintf("lab %s step %s", l.ID, s.ID), s.Command, l.Params})
			if s.Solve != "" {
				out = append(out, paramCommand{fmt.Sprintf("lab %s step %s solve", l.ID, s.ID), s.Solve, l.Params})
			}
		}
	}
	for _, rb := range rbs {
		for _, s := range rb.Steps {
			out = append(out, paramCommand{fmt.Sprintf("runbook %s step %s", rb.ID, s.ID), s.Command, rb.Params})
		}
	}
	return out
}

// Every parameter of every built-in lab and runbook, given each hostile
// value, either is refused before anything runs (by --set's check, and
// again when the command is put together, for values that never went
// through --set, as the workbench's fields) or reaches the command as data:
// each command that takes it runs on a real sshd host, whose GPU and
// cluster tools are stand-ins that print their arguments, and the marker
// the value would create never appears.
func TestHostileParameterValues(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pwned")
	stubs := t.TempDir()
	for _, tool := range []string{"nvidia-smi", "kubectl", "docker", "dcgmi", "all_reduce_perf", "vllm", "python3", "curl", "numactl", "gpu_burn", "nvidia-ctk", "helm", "sleep", "lspci", "ibstat", "ibv_devinfo", "ip", "journalctl", "dmesg"} {
		script := "#!/bin/sh\nfor a; do printf '[%s]' \"$a\"; done; echo\n"
		if err := os.WriteFile(filepath.Join(stubs, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := sshtest.Start(t, 1, sshtest.Options{Env: map[string]string{"PATH": stubs + ":/usr/bin:/bin"}})
	s := f.Servers[0]
	tg := orchestrator.Target{Name: "h01", HostName: s.Addr, Port: s.Port, User: f.User, IdentityFiles: []string{f.ClientKey}, Explicit: true,
		KnownHosts: []string{f.KnownHosts}, ConnectTimeout: 10 * time.Second, CommandTimeout: 60 * time.Second, InactivityTimeout: 60 * time.Second}

	var steps []orchestrator.Step
	var wants []string
	refusedBind, refusedExpand, ran := 0, 0, 0
	for _, c := range everyCommand(t) {
		used := map[string]bool{}
		for _, n := range step.Placeholders(c.command) {
			used[n] = true
		}
		for _, p := range c.params {
			if !used[p.Name] {
				continue
			}
			for _, h := range hostileValues(marker) {
				set := []string{p.Name + "=" + h}
				values := map[string]string{}
				for _, o := range c.params {
					values[o.Name] = validValue(o)
					if o.Name != p.Name {
						set = append(set, o.Name+"="+values[o.Name])
					}
				}
				if _, err := step.BindParams(c.where, c.params, set); err == nil {
					// Accepted by --set: it must sit where quoting holds.
					if p.Token || strings.ContainsFunc(h, func(r rune) bool { return r < ' ' }) {
						t.Errorf("%s: --set %s=%q was accepted", c.where, p.Name, h)
					}
				} else {
					refusedBind++
				}
				values[p.Name] = h // as if it had never been checked
				line, missing, err := step.Expand(c.command, values)
				if err != nil {
					refusedExpand++
					continue
				}
				if len(missing) > 0 {
					t.Fatalf("%s: missing %v with every value set", c.where, missing)
				}
				steps = append(steps, orchestrator.Step{Name: fmt.Sprintf("%s %s=%q", c.where, p.Name, h), Command: line, Timeout: 30 * time.Second, ContinueOnError: true})
				wants = append(wants, h)
				ran++
			}
		}
	}
	if ran == 0 || refusedExpand == 0 || refusedBind == 0 {
		t.Fatalf("the test should both run commands with hostile values as data and see values refused: ran %d, refused by --set %d, by Expand %d", ran, refusedBind, refusedExpand)
	}
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 1}
	res := e.Run(context.Background(), orchestrator.Plan{Targets: []orchestrator.Target{tg}, Steps: steps}, nil)[0]
	if len(res.Steps) != len(steps) {
		t.Fatalf("%d of %d commands ran: %s %s", len(res.Steps), len(steps), res.Class, res.Err)
	}
	if _, err := os.Stat(marker); err == nil {
		for i, sr := range res.Steps {
			t.Logf("%s\n  ran: %s\n  out: %s", steps[i].Name, steps[i].Command, sr.Stdout)
		}
		t.Fatal("a hostile parameter value ran a command on the host")
	}
	// Where a stand-in printed its arguments, the value came through whole.
	whole := 0
	for i, sr := range res.Steps {
		if strings.Contains(string(sr.Stdout), "]") && strings.Contains(string(sr.Stdout), wants[i]) {
			whole++
		}
	}
	if whole == 0 {
		t.Error("no stand-in tool printed a hostile value as one argument")
	}
	t.Logf("%d commands ran with hostile values as data (%d printed whole); %d refused by --set, %d when put together", ran, whole, refusedBind, refusedExpand)
}
