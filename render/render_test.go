package render

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
)

func TestLines(t *testing.T) {
	for _, c := range []struct {
		name string
		line Line
		want string
	}{
		{"one host", GroupHead(orchestrator.Group{NodeSet: "gpu04", Hosts: []string{"gpu04"}, Class: orchestrator.OK}, "ok"), "gpu04 (1 host): ok"},
		{"exit status", GroupHead(orchestrator.Group{NodeSet: "gpu[01-02]", Hosts: []string{"gpu01", "gpu02"}, Class: orchestrator.Exit, ExitCode: 4},
			GroupClass(orchestrator.Group{Class: orchestrator.Exit, ExitCode: 4})), "gpu[01-02] (2 hosts): exit (status 4)"},
		{"signal", Line{{Text: GroupClass(orchestrator.Group{Class: orchestrator.Exit, Signal: "KILL"})}}, "exit (SIGKILL)"},
		{"verdict", Verdict(runbooks.FoldedGroup{Hosts: "gpu[01-07]", Status: step.Pass, Summary: "8 GPUs, NV12 full mesh"}), "PASS    gpu[01-07]: 8 GPUs, NV12 full mesh"},
		{"unknown lines up", Verdict(runbooks.FoldedGroup{Hosts: "gpu05", Status: step.Unknown, Summary: "no evidence"}), "UNKNOWN gpu05: no evidence"},
		{"score", Score(labs.ScoreGroup{Score: labs.Score{ID: "mesh", Impact: "critical", Status: step.Fail, Summary: "6 pairs"}, Hosts: "gpu02"}), "FAIL    mesh (critical) gpu02: 6 pairs"},
		{"counterexample", Score(labs.ScoreGroup{Score: labs.Score{ID: "pcie", Impact: "major", Counter: true, Status: step.Pass, Summary: "x"}, Hosts: "all"}), "PASS    pcie (major, counterexample) all: x"},
		{"no weight", Score(labs.ScoreGroup{Score: labs.Score{ID: "pcie", Status: labs.Pending, Summary: "waiting"}, Hosts: "all"}), "PENDING pcie all: waiting"},
	} {
		if got := c.line.String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// A status span carries its status for the workbench to colour, and the
// hosts are their own span for the SIM badge to follow.
func TestSpansSayWhatTheyAre(t *testing.T) {
	l := Verdict(runbooks.FoldedGroup{Hosts: "gpu05", Status: step.Fail, Summary: "SYS"})
	if l[0].Kind != Status || l[0].Status != step.Fail {
		t.Errorf("first span %+v, want the FAIL status", l[0])
	}
	if l[2].Kind != Hosts || l[2].Text != "gpu05" {
		t.Errorf("third span %+v, want the hosts", l[2])
	}
}

// A cordoned node that is also NotReady says both, as kubectl does; the
// workbench once wrote "Cordoned" alone and hid the NotReady.
func TestNodeStatusIsKubectls(t *testing.T) {
	for _, c := range []struct {
		ready, cordoned bool
		want            string
	}{
		{true, false, "Ready"},
		{false, false, "NotReady"},
		{true, true, "Ready,SchedulingDisabled"},
		{false, true, "NotReady,SchedulingDisabled"},
	} {
		if got := NodeStatus(cluster.GPUNode{Ready: c.ready, Unschedulable: c.cordoned}); got != c.want {
			t.Errorf("ready %v, cordoned %v: %q, want %q", c.ready, c.cordoned, got, c.want)
		}
	}
}

// A resource the kubelet holds back (capacity, nothing allocatable) is a
// row of its own in both front ends, with its capacity: gpulab cluster
// nodes showed only allocatable resources, and hid a GPU lost to the
// node while the Cluster tab showed it.
func TestNodeTableShowsCapacity(t *testing.T) {
	n := cluster.GPUNode{Name: "dgx01", Ready: true, Unschedulable: true,
		Capacity:    map[string]int64{"nvidia.com/gpu": 7, "nvidia.com/mig-1g.10gb": 2},
		Allocatable: map[string]int64{"nvidia.com/gpu": 5, "example.com/only-allocatable": 1},
		Allocated:   map[string]int64{"nvidia.com/gpu": 4}}
	if got := NodeResources(n); !reflect.DeepEqual(got, []string{"example.com/only-allocatable", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"}) {
		t.Errorf("NodeResources = %q", got)
	}
	var b strings.Builder
	NodeTable([]cluster.GPUNode{n}, false).WriteText(&b)
	want := "" +
		"NODE   STATUS                    GPU HEALTH  RESOURCE                      ALLOCATED  ALLOCATABLE  CAPACITY  FREE  TAINTS\n" +
		"dgx01  Ready,SchedulingDisabled  no signal   example.com/only-allocatable  0          1            0         1\n" +
		"                                             nvidia.com/gpu                4          5            7         1\n" +
		"                                             nvidia.com/mig-1g.10gb        0          0            2         0\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// The GPU table's cells are worded once: the hardware table is the live
// table's columns that do not change from second to second, in order,
// with memory as its total and ECC as its mode.
func TestGPUTables(t *testing.T) {
	on, ue, n := true, uint64(3), 1
	s := &report.Snapshot{GPUs: []report.GPU{{Index: 2, Name: "NVIDIA A100-SXM4-40GB", PCIBusID: "00000000:47:00.0",
		Memory: &report.Memory{TotalMiB: 40960, UsedMiB: 4}, ECC: report.ECC{Enabled: &on, Volatile: &report.ECCCounts{Uncorrected: ue, Corrected: 1}},
		MIG:      report.MIG{Current: "enabled", GPUInstances: []report.GPUInstance{{Profile: "1g.5gb"}, {Profile: "1g.5gb"}, {Profile: "3g.20gb"}}},
		NUMANode: &n, Findings: []string{"3 uncorrectable ECC errors"}}}}
	var live, hw strings.Builder
	GPUTable(s).WriteText(&live)
	GPUHardwareTable(s, nil).WriteText(&hw)
	wantLive := "" +
		"GPU  NAME                   BUS               MEMORY       UTIL  TEMP  POWER  ECC           MIG               NUMA  NVLINK  FINDINGS\n" +
		"2    NVIDIA A100-SXM4-40GB  00000000:47:00.0  4/40960 MiB     -     -      -  on 3 UE 1 CE  1g.5gb×2,3g.20gb  1     -       3 uncorrectable ECC errors\n"
	wantHW := "" +
		"GPU  NAME                   BUS               MEMORY     ECC  MIG               NUMA  NVLINK  FINDINGS\n" +
		"2    NVIDIA A100-SXM4-40GB  00000000:47:00.0  40960 MiB  on   1g.5gb×2,3g.20gb  1     -       3 uncorrectable ECC errors\n"
	if live.String() != wantLive || hw.String() != wantHW {
		t.Errorf("live:\n%s\nwant\n%s\nhardware:\n%s\nwant\n%s", live.String(), wantLive, hw.String(), wantHW)
	}
}
