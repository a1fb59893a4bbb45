package parse

import (
	"strings"
	"testing"
)

func TestSMIFixtures(t *testing.T) {
	s, err := ParseSMI(fixture(t, "nvidia-smi", "2x-rtx3090-nvlink-drv560-vllm-processes.txt"))
	if err != nil || s.DriverVersion != "560.35.05" || s.CUDAVersion != "12.6" || len(s.GPUs) != 2 {
		t.Fatalf("rtx3090: %v %+v", err, s)
	}
	g := s.GPUs[1]
	if g.BusID != "00000000:0A:00.0" || *g.MemoryUsedMiB != 22943 || *g.MemoryTotalMiB != 24576 || *g.PowerCapW != 350 || g.MIGMode != nil || g.ECCUncorrected != nil {
		t.Errorf("GPU 1 = %+v", g)
	}
	if len(s.Processes) != 2 || s.Processes[1].PID != 2922 || s.Processes[1].Name != "VLLM::Worker_TP1" || *s.Processes[1].MemoryMiB != 22934 || s.Processes[1].GI != nil {
		t.Errorf("processes = %+v", s.Processes)
	}

	s, err = ParseSMI(fixture(t, "nvidia-smi", "genkai-h100-mig-1slice-singularity-drv580.txt"))
	if err != nil || *s.GPUs[0].MIGMode != "Enabled" || s.GPUs[0].MemoryUsedMiB != nil || s.GPUs[0].UtilizationPercent != nil || len(s.MIGDevices) != 1 || s.MIGDevices[0].GI != 8 {
		t.Errorf("h100 MIG: %v %+v", err, s)
	}
	s, err = ParseSMI(fixture(t, "nvidia-smi", "vgpu-h100l-1-12c-mig-backed-drv580-grid.txt"))
	if err != nil || s.GPUs[0].PowerDrawW != nil || s.GPUs[0].PowerCapW != nil || s.GPUs[0].TemperatureC != nil || s.GPUs[0].Perf != "P0" {
		t.Errorf("vGPU N/A cells: %v %+v", err, s.GPUs[0])
	}
	// Damaged inputs: what was read is kept, the error names the line.
	s, err = ParseSMI(fixture(t, "nvidia-smi", "a100-80gb-pcie-drv550-1gpu-truncated.txt"))
	if len(s.GPUs) != 1 || *s.GPUs[0].MemoryTotalMiB != 81920 || err == nil || !strings.Contains(err.Error(), "line 11: the GPU table has no closing border") {
		t.Errorf("truncated: %v %+v", err, s.GPUs)
	}
	s, err = ParseSMI(fixture(t, "nvidia-smi", "a100-40gb-mig-devices-2x-3g20gb-partial.txt"))
	if len(s.MIGDevices) != 2 || err == nil || !strings.Contains(err.Error(), "no GPU table") {
		t.Errorf("partial: %v %+v", err, s)
	}
	if _, err := ParseSMI("hello"); err == nil || !strings.Contains(err.Error(), "not nvidia-smi output") {
		t.Errorf("garbage: %v", err)
	}
}

func TestSMIListFixtures(t *testing.T) {
	l, err := ParseSMIList(fixture(t, "nvidia-smi-L", "dgx-a100-80gb-mig-all-balanced-head10.txt"))
	if err != nil || len(l.GPUs) != 2 || len(l.GPUs[0].MIGDevices) != 4 || l.GPUs[0].MIGDevices[0].Profile != "3g.40gb" || l.GPUs[1].UUID != "GPU-938c4705-98bf-1735-e98b-c2a5872a8022" {
		t.Errorf("balanced: %v %+v", err, l)
	}
	l, err = ParseSMIList(fixture(t, "nvidia-smi-L", "a100-80gb-pcie-mig-7x-1g10gb-dra-kind.txt"))
	if err != nil || len(l.GPUs[0].MIGDevices) != 7 || l.GPUs[0].MIGDevices[6].Device != 6 || l.GPUs[0].Name != "NVIDIA A100 80GB PCIe" {
		t.Errorf("7x 1g.10gb: %v %+v", err, l)
	}
	if _, err := ParseSMIList("GPU 0: A100 (UUID: GPU-1)\ngarbage here\n"); err == nil || !strings.Contains(err.Error(), `line 2: line not understood: "garbage here"`) {
		t.Errorf("garbage line: %v", err)
	}
}

func FuzzSMI(f *testing.F) {
	f.Add("| NVIDIA-SMI 1 Driver Version: 2 CUDA Version: 3 |\n| GPU Persistence-M | Bus-Id |\n|===|\n|   0  X  Off | 0:0 Off | N/A |\n| 0% 1C P0 1W / 2W | 1MiB / 2MiB | 0% Default |\n+-+-+\n")
	f.Fuzz(func(t *testing.T, s string) {
		if v, _ := ParseSMI(s); v == nil {
			t.Fatal("nil")
		}
	})
}

func FuzzSMIList(f *testing.F) {
	f.Add("GPU 0: A (UUID: GPU-1)\n  MIG 1g.5gb     Device  0: (UUID: MIG-1)\n")
	f.Fuzz(func(t *testing.T, s string) {
		if v, _ := ParseSMIList(s); v == nil {
			t.Fatal("nil")
		}
	})
}
