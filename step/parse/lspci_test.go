package parse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLspciAndIbvFixtures(t *testing.T) {
	tr, err := ParseLspciTree(fixture(t, "lspci-tv", "puget-wrx90-2x-rtx6000ada-cx7.txt"))
	if err != nil {
		t.Fatal(err)
	}
	byAddr := map[string]PCIDevice{}
	for _, d := range tr.Devices {
		byAddr[d.Address] = d
	}
	nvme := byAddr["0000:05:00.0"]
	if strings.Join(nvme.Bridges, ">") != "0000:00:03.1>0000:01:00.0>0000:02:00.0>0000:03:00.0>0000:04:10.0" || nvme.Kind != "storage" {
		t.Errorf("NVMe behind two switches: %+v", nvme)
	}
	if g := byAddr["0000:c2:00.0"]; g.Kind != "gpu" || strings.Join(g.Bridges, ">") != "0000:c0:03.1" {
		t.Errorf("GPU on its own root port: %+v", g)
	}
	if len(tr.Near) != 2 || len(tr.Near[0].NICs) != 0 {
		t.Errorf("GPUs on root ports share no switch with a NIC: %+v", tr.Near)
	}
	// A switch shared by a GPU and a NIC, as on HGX boards: its upstream port
	// (01:00.0) is the deepest bridge both sit under.
	hgx := "-[0000:00]-+-01.0-[01-04]----00.0-[02-04]--+-00.0-[03]----00.0  NVIDIA Corporation GA100 [A100 SXM4 80GB]\n" +
		"           |                               \\-04.0-[04]----00.0  Mellanox Technologies MT28908 Family [ConnectX-6]\n" +
		"           \\-02.0-[05]----00.0  NVIDIA Corporation GA100 [A100 SXM4 80GB]\n"
	tr, err = ParseLspciTree(hgx)
	if err != nil || len(tr.Near) != 2 || strings.Join(tr.Near[0].NICs, ",") != "0000:04:00.0" || tr.Near[0].Bridge != "0000:01:00.0" || len(tr.Near[1].NICs) != 0 {
		t.Errorf("shared switch: %v %+v", err, tr.Near)
	}
	if _, err := ParseLspciTree("           +-00.3  Orphan\n"); err == nil || !strings.Contains(err.Error(), "no parent branch") {
		t.Errorf("orphan: %v", err)
	}
	h, err := ParseIbvDevinfo(fixture(t, "ibv_devinfo", "asus-esc8000a-e12-4x-cx7-eth-portdown.txt"))
	if err != nil || len(h) != 4 || h[2].Ports[0].State != "PORT_DOWN" || h[2].Ports[0].LinkLayer != "Ethernet" || h[2].Ports[0].Active || h[0].Firmware == "" {
		t.Errorf("ibv_devinfo: %v %+v", err, h)
	}
}

// BenchmarkParseCorpus parses every fixture with its parser (target: the
// whole corpus under 50 ms).
func BenchmarkParseCorpus(b *testing.B) {
	type job struct {
		k    Kind
		text string
	}
	var jobs []job
	for _, k := range Kinds() {
		for _, dir := range k.Fixtures {
			files, _ := filepath.Glob(filepath.Join(fixtures, dir, "*"))
			for _, f := range files {
				data, _ := os.ReadFile(f)
				jobs = append(jobs, job{k, string(data)})
			}
		}
	}
	b.ReportMetric(float64(len(jobs)), "files")
	b.ResetTimer()
	for b.Loop() {
		for _, j := range jobs {
			_, _ = j.k.Parse(j.text)
		}
	}
}
