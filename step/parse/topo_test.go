package parse

import (
	"strings"
	"testing"
)

func TestTopoFixtures(t *testing.T) {
	tests := []struct {
		file       string
		gpus, nics int
		check      func(*Topo) string
		wantErr    string
	}{
		{"hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt", 8, 1, func(tp *Topo) string {
			g := tp.GPUs[4]
			if *g.CPUAffinity != "112-127" || *g.NUMAAffinity != 7 || tp.Links["GPU2"]["mlx5_0"] != "PXB" || tp.Links["GPU0"]["GPU7"] != "NV12" {
				return "GPU4 affinity, NUMA 7, GPU2-mlx5_0 PXB, NV12"
			}
			return ""
		}, ""},
		{"tesla-p4-1gpu-numa-affinity-na-tabs.txt", 1, 0, func(tp *Topo) string {
			g := tp.GPUs[0]
			if *g.CPUAffinity != "0-7" || g.NUMAAffinity != nil || g.GPUNUMAID != nil {
				return "N/A NUMA as null, CPU 0-7"
			}
			return ""
		}, ""},
		{"8x-p40-pcie-SOC-mlx5-legacy-tabs.txt", 8, 1, func(tp *Topo) string {
			if tp.Links["GPU0"]["mlx5_0"] != "SOC" || tp.NICs[0].Device != "mlx5_0" || *tp.GPUs[7].CPUAffinity != "0-13" || tp.GPUs[0].NUMAAffinity != nil {
				return "legacy SOC, device-named NIC, CPU Affinity only"
			}
			return ""
		}, ""},
		{"a10-4gpu-pcie-SYS-2nic.txt", 4, 2, func(tp *Topo) string {
			if tp.NICs[1].Name != "NIC1" || !strings.HasPrefix(tp.NICs[1].Device, "mlx5") || tp.Links["NIC1"]["NIC0"] != "PIX" || *tp.GPUs[3].NUMAAffinity != 0 {
				return "NIC legend, NIC rows, NUMA 0"
			}
			return ""
		}, ""},
		{"v100-sxm2-8gpu-hybrid-cube-mesh-nv1-nv2-mlx5-drv440.txt", 8, 1, func(tp *Topo) string {
			nv1, nv2, sys := 0, 0, 0
			for _, c := range tp.Links["GPU0"] {
				switch c {
				case "NV1":
					nv1++
				case "NV2":
					nv2++
				case "SYS":
					sys++
				}
			}
			if nv1+nv2 != 4 || sys < 3 {
				return "hybrid cube mesh: GPU0 has 4 NVLink peers and SYS to the rest"
			}
			return ""
		}, ""},
		{"a100-8gpu-nv12-17nic-mlx5-bond.txt", 8, 17, func(tp *Topo) string {
			if tp.NICs[16].Device != "mlx5_bond_0" || tp.Links["GPU0"]["NIC0"] != "PXB" || *tp.GPUs[0].CPUAffinity != "0-103" || tp.GPUs[0].GPUNUMAID != nil {
				return "17 NICs (NIC16 = mlx5_bond_0 from the legend), CPU 0-103, GPU NUMA ID N/A"
			}
			return ""
		}, ""},
	}
	for _, tt := range tests {
		tp, err := ParseTopo(fixture(t, "nvidia-smi-topo-m", tt.file))
		if len(tp.GPUs) != tt.gpus || len(tp.NICs) != tt.nics {
			t.Errorf("%s: %d GPUs, %d NICs; want %d, %d", tt.file, len(tp.GPUs), len(tp.NICs), tt.gpus, tt.nics)
			continue
		}
		if msg := tt.check(tp); msg != "" {
			t.Errorf("%s: want %s; got %+v", tt.file, msg, tp)
		}
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tt.file, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want %q", tt.file, err, tt.wantErr)
		}
	}
}

func TestTopoDamaged(t *testing.T) {
	full := fixture(t, "nvidia-smi-topo-m", "hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt")
	ls := strings.Split(full, "\n")
	cut := strings.Join(ls[:4], "\n") + "\nGPU3    NV12    NV12" // truncated mid-row
	tp, err := ParseTopo(cut)
	if err == nil || !strings.Contains(err.Error(), "line 5: row GPU3 has 2 link codes for 9 columns") {
		t.Errorf("truncated row: %v", err)
	}
	// The rows before the damage are kept; the last line, cut mid-row, is
	// not read as a GPU with two links (its missing links were never
	// printed, not down), and the rows it lacks are said.
	if len(tp.GPUs) != 3 || tp.Links["GPU1"]["GPU2"] != "NV12" || tp.Links["GPU3"] != nil || !strings.Contains(err.Error(), "have no row (GPU3") {
		t.Errorf("rows before the damage are kept, the cut one is not read: %+v, %v", tp.GPUs, err)
	}
	if _, err := ParseTopo("hello\nworld\n"); err == nil || !strings.Contains(err.Error(), "no header line") {
		t.Errorf("garbage: %v", err)
	}
	if _, err := ParseTopo(strings.Replace(full, "NV12", "NV1Z", 1)); err == nil || !strings.Contains(err.Error(), `"NV1Z" is not a link code`) {
		t.Errorf("bad code: %v", err)
	}
}

func FuzzTopo(f *testing.F) {
	f.Add("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\nGPU1\tNV4\t X \t0-7\n")
	f.Add("GPU0 GPU1\nGPU0 X SYS\n\nNIC Legend:\n  NIC0: mlx5_0\n")
	f.Fuzz(func(t *testing.T, s string) {
		tp, _ := ParseTopo(s)
		if tp == nil {
			t.Fatal("nil result")
		}
	})
}
