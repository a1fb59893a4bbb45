package landscape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/internal/tomlpos"
)

func TestBuiltinCatalog(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatalf("built-in catalog does not validate: %v", err)
	}
	required := []string{
		"kube-scheduler", "kueue", "volcano", "kai-scheduler", "slurm", "quota-priority",
		"nvidia-device-plugin", "gpu-operator", "container-toolkit", "mig", "time-slicing", "mps",
		"hami", "dra", "nvidia-vgpu", "ascend-vnpu", "vllm", "pytorch-ddp", "ray", "nccl",
		"kserve", "triton", "llm-d", "leaderworkerset", "dcgm-exporter",
	}
	for _, id := range required {
		if _, ok := c.Project(id); !ok {
			t.Errorf("built-in catalog lacks %q", id)
		}
	}
	if len(c.Projects) < 24 {
		t.Errorf("built-in catalog has %d projects, want at least 24", len(c.Projects))
	}
	var planes []string
	for _, p := range c.Planes {
		planes = append(planes, p.ID)
		if len(c.InPlane(p.ID)) == 0 {
			t.Errorf("plane %q holds no project", p.ID)
		}
	}
	if got := strings.Join(planes, ","); got != "control,data,workload" {
		t.Errorf("planes = %s, want control,data,workload", got)
	}
	var axes []string
	for _, a := range c.Axes {
		axes = append(axes, a.ID)
	}
	if got := strings.Join(axes, ","); got != "resource-unit,isolation,fragmentation,governance" {
		t.Errorf("axes = %s", got)
	}
	if len(c.Dimensions) != 7 || len(c.Questions) != 6 {
		t.Errorf("%d dimensions and %d template questions, want 7 and 6", len(c.Dimensions), len(c.Questions))
	}
	hami, _ := c.Project("hami")
	if got := c.LevelNames(hami, "resource-unit"); got != "vGPU / quota" {
		t.Errorf("LevelNames(hami, resource-unit) = %q", got)
	}
	if !strings.HasPrefix(hami.Source, "builtin/catalog/data.toml:") {
		t.Errorf("hami.Source = %q, want builtin/catalog/data.toml:LINE", hami.Source)
	}
	// Links go both ways: HAMi is an alternative to the device plugin; Kueue builds on kube-scheduler.
	var seen []string
	for _, l := range c.ReferencedBy("kube-scheduler") {
		seen = append(seen, l.Kind+" "+l.To)
	}
	if !strings.Contains(strings.Join(seen, ";"), "builds on kueue") {
		t.Errorf("ReferencedBy(kube-scheduler) = %v, want kueue building on it", seen)
	}
}

func TestFilterAndSort(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var strong []string
	for _, p := range c.Projects {
		if (Filter{Axis: "isolation", Level: "strong"}).Match(p) {
			strong = append(strong, p.ID)
		}
	}
	if got := strings.Join(strong, ","); got != "slurm,nvidia-device-plugin,mig,nvidia-vgpu,ascend-vnpu" {
		t.Errorf("isolation=strong = %s", got)
	}
	if !(Filter{Plane: "control"}).Match(mustProject(t, c, "hami")) {
		t.Errorf("plane filter control should include hami, which spans it")
	}
	if (Filter{Text: "NVLINK"}).Match(mustProject(t, c, "kueue")) || !(Filter{Text: "nvlink"}).Match(mustProject(t, c, "nccl")) {
		t.Errorf("text filter is not a case-insensitive search of the summary")
	}
	ps := append([]Project(nil), c.Projects...)
	c.Sort(ps, "isolation", true)
	if ps[0].ID != "dcgm-exporter" {
		t.Errorf("sort by isolation descending starts with %q, want dcgm-exporter (verifiable)", ps[0].ID)
	}
	c.Sort(ps, "", false)
	if ps[0].ID != "kube-scheduler" || ps[len(ps)-1].ID != "leaderworkerset" {
		t.Errorf("default sort = %s..%s, want catalog order", ps[0].ID, ps[len(ps)-1].ID)
	}
}

func mustProject(t *testing.T, c *Catalog, id string) Project {
	t.Helper()
	p, ok := c.Project(id)
	if !ok {
		t.Fatalf("no project %q", id)
	}
	return p
}

const goodProject = `[[project]]
id = "my-sched"
name = "My scheduler"
plane = "control"
kind = "Scheduler"
summary = "A contributor's scheduler."
questions = ["Does it admit gangs?"]
builds_on = ["kube-scheduler"]
labs = ["pending-explained"]
[project.axis.resource-unit]
value = "abstraction"
why = "Jobs."
[project.axis.isolation]
value = "none"
why = "Placement only."
[project.axis.fragmentation]
value = "topology"
why = "Gangs."
[project.axis.governance]
value = ["explainable"]
why = "Events."
`

func TestCheckContributorFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "mine.toml", goodProject)
	c, err := Check(dir)
	if err != nil {
		t.Fatalf("Check(good file) = %v", err)
	}
	if p := mustProject(t, c, "my-sched"); p.Source != filepath.Join(dir, "mine.toml")+":1" {
		t.Errorf("Source = %q", p.Source)
	}
}

func TestCheckErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown key", strings.Replace(goodProject, "kind =", "knd =", 1),
			[]string{`bad.toml:5:1: unknown key "knd" (expected in project: alternatives, axis, builds_on, dimensions, id, kind, labs, name, plane, questions, spans, summary, url, works_with)`,
				`bad.toml:1:1: project "my-sched": kind is missing`}},
		{"missing axis", strings.Replace(goodProject, "[project.axis.isolation]\nvalue = \"none\"\nwhy = \"Placement only.\"\n", "", 1),
			[]string{`bad.toml:1:1: project "my-sched": no value on axis "isolation" (add [project.axis.isolation] with value = one of: none, soft, strong, verifiable)`}},
		{"unknown level", strings.Replace(goodProject, `value = "topology"`, `value = "topo"`, 1),
			[]string{`bad.toml:17:1: project "my-sched": axis "fragmentation" has no level "topo" (want one of: none, discrete, request-shape, topology)`}},
		{"no why", strings.Replace(goodProject, `why = "Gangs."`, `why = ""`, 1),
			[]string{`bad.toml:16:1: project "my-sched": axis "fragmentation" needs a why`}},
		{"unknown plane", strings.Replace(goodProject, `plane = "control"`, `plane = "ctrl"`, 1),
			[]string{`bad.toml:4:1: project "my-sched": unknown plane "ctrl" (want one of: control, data, workload)`}},
		{"unknown axis", goodProject + "[project.axis.cost]\nvalue = \"x\"\nwhy = \"y\"\n",
			[]string{`bad.toml:22:1: project "my-sched": unknown axis "cost"`}},
		{"dangling link", strings.Replace(goodProject, `builds_on = ["kube-scheduler"]`, `builds_on = ["kube-schedular"]`, 1),
			[]string{`bad.toml:8:14: project "my-sched": builds_on names "kube-schedular", which is not defined`}},
		{"dangling lab", strings.Replace(goodProject, `"pending-explained"`, `"no-such-lab"`, 1),
			[]string{`bad.toml:9:9: project "my-sched": labs names "no-such-lab"`}},
		{"duplicate id", strings.Replace(goodProject, `id = "my-sched"`, `id = "kueue"`, 1),
			[]string{`bad.toml:2:1: project "kueue" is already defined at builtin/catalog/control.toml:`}},
		{"bad id", strings.Replace(goodProject, `id = "my-sched"`, `id = "My Sched"`, 1),
			[]string{`bad.toml:2:1: project id "My Sched": use lower-case letters, digits and '-'`}},
		{"syntax", "[[project]\nid = 1\n", []string{"bad.toml:2:10: expected end of table array name delimiter"}},
		{"wrong type", strings.Replace(goodProject, `questions = ["Does it admit gangs?"]`, `questions = "one"`, 1),
			[]string{`bad.toml:7:1: key "project.questions": wrong type`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := write(t, dir, "bad.toml", tt.src)
			_, err := Check(path)
			if err == nil {
				t.Fatal("Check accepted a bad file")
			}
			msg := strings.ReplaceAll(err.Error(), path, "bad.toml")
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Check error =\n%s\nwant it to contain\n%s", msg, w)
				}
			}
		})
	}
	if _, err := Check(filepath.Join(t.TempDir(), "nope")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Check(missing dir) = %v, want 'does not exist'", err)
	}
	if _, err := Check(t.TempDir()); err == nil || !strings.Contains(err.Error(), "has no *.toml files") {
		t.Errorf("Check(empty dir) = %v, want 'has no *.toml files'", err)
	}
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func FuzzCatalogFile(f *testing.F) {
	f.Add(goodProject)
	f.Add("[[axis]]\nid = \"x\"\n[[axis.level]]\nid = \"y\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		c, err := build([]tomlpos.Source{{Name: "fuzz.toml", Data: []byte(src)}})
		if err == nil && (len(c.Planes) == 0 || len(c.Axes) == 0) {
			t.Fatalf("a catalog without planes or axes validated")
		}
	})
}
