package inventory

import (
	"slices"
	"strings"
	"testing"
)

// @slurm: selects by what the controller says now: a partition, a state
// (base or flag, any case), a feature; every problem says what to write.
func TestSlurmSelectors(t *testing.T) {
	inv, err := Parse("inv.toml", []byte("[[host]]\nname = \"gpu[1-4]\"\n\n[slurm]\nlogin = \"login1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inv.Select("@slurm:state=drain"); err == nil || !strings.Contains(err.Error(), "state was not read") {
		t.Errorf("before the state is read: %v", err)
	}
	inv.Slurm.SetState([]SlurmNode{
		{Name: "gpu1", Partitions: []string{"gpu"}, States: []string{"IDLE"}, Features: []string{"a100"}},
		{Name: "gpu2", Partitions: []string{"gpu", "debug"}, States: []string{"MIXED", "DRAIN"}, Features: []string{"a100"}},
		{Name: "gpu3", Partitions: []string{"cpu"}, States: []string{"ALLOCATED"}},
		{Name: "gpu9", Partitions: []string{"gpu"}, States: []string{"DOWN", "DRAIN"}},
	})
	for expr, want := range map[string][]string{
		"@slurm:state=drain":          {"gpu2", "gpu9"},
		"@slurm:partition=gpu!gpu9":   {"gpu1", "gpu2"},
		"@slurm:feature=A100":         {"gpu1", "gpu2"},
		"@slurm:state=alloc":          {"gpu3"},
		"@slurm:all&gpu[1-2]":         {"gpu1", "gpu2"},
		"@slurm:partition=nosuchpart": nil,
	} {
		hosts, err := inv.Select(expr)
		if err != nil || !slices.Equal(Names(hosts), want) {
			t.Errorf("%s = %v, %v; want %v", expr, Names(hosts), err, want)
		}
	}
	for expr, want := range map[string]string{"@slurm:colour=red": `no key "colour"`, "@slurm:gpu": "want @slurm:partition=NAME"} {
		if _, err := inv.Select(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", expr, err, want)
		}
	}
	none, _ := Parse("inv.toml", []byte("[[host]]\nname = \"gpu1\"\n"))
	if _, err := none.Select("@slurm:all"); err == nil || !strings.Contains(err.Error(), "no [slurm] table") {
		t.Errorf("no [slurm]: %v", err)
	}
}
