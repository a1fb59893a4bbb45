package parse

import (
	"strings"
	"testing"
)

func TestQueryFixtures(t *testing.T) {
	q, err := ParseQuery(fixture(t, "nvidia-smi-q", "a100-sxm4-40gb-8gpu-drv535-full-a.txt"))
	if err != nil || len(q.GPUs) != 8 || *q.AttachedGPUs != 8 || q.CUDAVersion != "12.2" {
		t.Fatalf("full -q: %v %d GPUs", err, len(q.GPUs))
	}
	g := q.GPUs[0]
	if *g.PowerDrawW != 52.12 || *g.WidthMax != 16 || *g.MemoryTotalMiB != 40960 || g.Fields["ECC Errors/Volatile/DRAM Uncorrectable"] == "" && g.Fields["ECC Errors/Volatile/Double Bit/Device Memory"] == "" {
		t.Errorf("gpu 0 = %+v", g)
	}
	q, err = ParseQuery(fixture(t, "nvidia-smi-q", "a100-sxm4-80gb-drv510-ecc-remap-excerpt.txt"))
	if err != nil || !q.Elided || !*q.GPUs[0].RemappedRows.Pending || *q.GPUs[0].RemappedRows.Correctable != 1 || q.GPUs[0].Fields["ECC Errors/Volatile/DRAM Correctable"] != "177" {
		t.Errorf("excerpt: %v %+v", err, q.GPUs)
	}
	x, err := ParseQueryXML(fixture(t, "nvidia-smi-q-x", "a10g-drv515-v11dtd.xml.txt"))
	if err != nil || *x.GPUs[0].PCIeGenCurrent != 1 || *x.GPUs[0].WidthCurrent != 8 || len(x.GPUs[0].Processes) != 1 || *x.GPUs[0].Processes[0].PID != 725 {
		t.Errorf("xml a10g: %v %+v", err, x.GPUs)
	}
	if _, err := ParseQueryXML("<nvidia_smi_log><gpu id='1'>"); err == nil || !strings.Contains(err.Error(), "not nvidia-smi -q -x XML") {
		t.Errorf("truncated xml: %v", err)
	}
	cut := strings.Join(strings.Split(fixture(t, "nvidia-smi-q", "a100-sxm4-40gb-8gpu-drv535-full-a.txt"), "\n")[:400], "\n")
	if q, err := ParseQuery(cut); err == nil || !strings.Contains(err.Error(), "8 GPUs attached but 3 sections: the output is truncated") || len(q.GPUs) != 3 {
		t.Errorf("truncated -q: %v", err)
	}
}
