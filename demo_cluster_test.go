package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// klogLine is a line klog would write into the terminal ("E1130
// 19:22:05.123456 …"): none may ever show on the workbench's screen.
var klogLine = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ `)

// TestDemoClusterTabInTmux: the demo's Cluster tab, through the real
// binary, shows the simulated cluster live (SIMULATED): its GPU nodes,
// the pod pending for fragmentation explained, the Job its quota refuses
// explained when selected; pods made with kubectl on the simulated hosts
// (the Fleet's :) arrive in the tab as watch events; klog writes nothing
// on the screen; NO_COLOR leaves no colour, the words SIMULATED stay.
func TestDemoClusterTabInTmux(t *testing.T) {
	bin := gpulabBinary(t)
	s, _ := demoTmux(t, bin, 160, 48, "NO_COLOR=1 ", "demo")
	screenWait(t, s, klogLine, "gpulab  SIMULATED ", "[Map]")
	s.keys("7")
	screen := screenWait(t, s, klogLine, "Cluster context simulated  SIMULATED", "GPU nodes (4)", "dgx04 Ready",
		"▶ research/llm-finetune-8gpu-", "fragmentation", "ml-team/eval-sweep", "held by ResourceQuota gpu-quota", "ml-team/gpu-quota")
	m := regexp.MustCompile(`(\d+) pods · 2 waiting`).FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("no pod count on the Cluster tab:\n%s", screen)
	}
	pods, _ := strconv.Atoi(m[1])
	if esc := s.run("capture-pane", "-e", "-p", "-t", "smoke"); strings.Contains(esc, "\x1b[38") || strings.Contains(esc, "\x1b[48") || strings.Contains(esc, "\x1b[7m") {
		t.Errorf("NO_COLOR is set but the Cluster tab has colour escapes:\n%q", esc)
	}
	s.keys("Down")
	screenWait(t, s, klogLine, "▶ ml-team/eval-sweep", "why: ml-team/eval-sweep", "quota gpu-quota refuses them")

	s.keys("3", ":")
	s.run("send-keys", "-t", "smoke", "-l", "kubectl run smoke-$(hostname) --image=busybox --restart=Never")
	s.keys("Enter")
	screenWait(t, s, klogLine, "4/4  4 ok")
	s.keys("7")
	screenWait(t, s, klogLine, strconv.Itoa(pods+4)+" pods · 2 waiting")
	s.keys("q")
	screenWait(t, s, nil, "EXIT=0")
}
