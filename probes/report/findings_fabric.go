package report

import "fmt"

// fabricFindings are what the PCI bus and the NVSwitch fabric show:
//
//   - gpu-pci-count: more NVIDIA GPUs on the PCI bus than NVML sees (a GPU
//     the driver lost or never brought up), or fewer on the bus than the
//     inventory's expect.gpus (a GPU gone from the bus).
//   - fabric-manager: a host with NVSwitches whose nv-fabricmanager does not
//     run: CUDA on its GPUs fails ("system not yet initialized", 802).
//   - fabric-manager-log: the fabric manager's log's last [ERROR] line.
func fabricFindings(s *Snapshot) []Finding {
	f := s.Fabric
	if f == nil || !f.PCIRead {
		return nil
	}
	var out []Finding
	if GPUCountRead(s) && f.PCIGPUs > NVMLCount(s) {
		out = append(out, Finding{Check: "gpu-pci-count", Fatal: true, Action: ActionReboot,
			Message:  fmt.Sprintf("%d NVIDIA GPU(s) on the PCI bus, NVML sees %d", f.PCIGPUs, NVMLCount(s)),
			Evidence: []string{fmt.Sprintf("/sys/bus/pci/devices: %d NVIDIA 3D/VGA controller(s); nvmlDeviceGetCount: %d", f.PCIGPUs, NVMLCount(s))}})
	} else if s.Expect != nil && s.Expect.GPUs > 0 && f.PCIGPUs < s.Expect.GPUs {
		out = append(out, Finding{Check: "gpu-pci-count", Fatal: true, Action: ActionReboot,
			Message:  fmt.Sprintf("%d NVIDIA GPU(s) on the PCI bus where the inventory expects %d: a GPU is gone from the bus", f.PCIGPUs, s.Expect.GPUs),
			Evidence: []string{fmt.Sprintf("/sys/bus/pci/devices: %d NVIDIA 3D/VGA controller(s); expect.gpus = %d", f.PCIGPUs, s.Expect.GPUs)}})
	}
	if f.NVSwitches > 0 && f.ManagerRunning != nil && !*f.ManagerRunning {
		out = append(out, Finding{Check: "fabric-manager", Fatal: true, Action: ActionReboot,
			Message:  fmt.Sprintf("%d NVSwitch(es) and no nv-fabricmanager running: CUDA fails on these GPUs (system not yet initialized)", f.NVSwitches),
			Evidence: []string{fmt.Sprintf("/sys/bus/pci/devices: %d NVSwitch(es); /proc: no nv-fabricmanager process", f.NVSwitches)}})
	}
	if f.LogLastError != "" {
		out = append(out, Finding{Check: "fabric-manager-log", Action: ActionNone,
			Message:  "the fabric manager logged an error: " + f.LogLastError,
			Evidence: []string{"fabricmanager.log: " + f.LogLastError}})
	}
	return out
}

// fabricChecks are the probe checks of the PCI bus and the fabric.
var fabricChecks = []probeCheck{
	{name: "gpu-pci-count", host: true, why: fabricWhy("NVML's GPU count was not read, or the bus held more functions than the probe reads"), read: fabricRead,
		ready: func(s *Snapshot) bool {
			return s.Fabric != nil && s.Fabric.PCIRead && !s.Fabric.Truncated && GPUCountRead(s)
		}},
	{name: "fabric-manager", host: true, why: fabricWhy("/proc was not read: ", "host.processes"), read: fabricRead, ready: func(s *Snapshot) bool {
		return s.Fabric != nil && s.Fabric.PCIRead && (s.Fabric.NVSwitches == 0 || s.Fabric.ManagerRunning != nil)
	}},
	{name: "fabric-manager-log", host: true, why: fabricWhy("the fabric manager's log was not read: ", "fabric.manager_log"), read: fabricRead,
		ready: func(s *Snapshot) bool {
			return s.Fabric != nil && s.Fabric.PCIRead && (s.Fabric.NVSwitches == 0 || s.Fabric.LogRead)
		}},
}

// fabricWhy says why a fabric check's evidence is missing: the PCI bus
// not read, or detail (and the error recorded for field, when given).
func fabricWhy(detail string, field ...string) func(*Snapshot) string {
	return func(s *Snapshot) string {
		if s.Fabric == nil || !s.Fabric.PCIRead {
			return "the PCI bus (/sys/bus/pci/devices) was not read: " + fieldError(s, "pci")
		}
		if len(field) > 0 {
			return detail + fieldError(s, field[0])
		}
		return detail
	}
}

// fabricRead is what a fabric check read where it found nothing.
func fabricRead(s *Snapshot) string {
	f := s.Fabric
	msg := fmt.Sprintf("PCI bus read: %d NVIDIA GPU(s), %d NVSwitch(es), %d network controller(s); NVML counts %d GPU(s)", f.PCIGPUs, f.NVSwitches, f.NICs, NVMLCount(s))
	if f.NVSwitches > 0 && f.ManagerRunning != nil && *f.ManagerRunning {
		msg += "; nv-fabricmanager runs"
	}
	if f.NVSwitches > 0 && f.LogRead {
		msg += "; its log read"
	}
	return msg
}
