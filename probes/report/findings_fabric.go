package report

import (
	"fmt"
	"strings"
)

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
	if GPUCountRead(s) && f.PCIGPUs > len(s.GPUs) {
		out = append(out, Finding{Check: "gpu-pci-count", Fatal: true, Action: ActionReboot,
			Message:  fmt.Sprintf("%d NVIDIA GPU(s) on the PCI bus, NVML sees %d", f.PCIGPUs, len(s.GPUs)),
			Evidence: []string{fmt.Sprintf("/sys/bus/pci/devices: %d NVIDIA 3D/VGA controller(s); nvmlDeviceGetCount: %d", f.PCIGPUs, len(s.GPUs))}})
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
	{"gpu-pci-count", func(s *Snapshot) bool { return s.Fabric != nil && s.Fabric.PCIRead && GPUCountRead(s) }},
	{"fabric-manager", func(s *Snapshot) bool {
		return s.Fabric != nil && s.Fabric.PCIRead && (s.Fabric.NVSwitches == 0 || s.Fabric.ManagerRunning != nil)
	}},
	{"fabric-manager-log", func(s *Snapshot) bool {
		return s.Fabric != nil && s.Fabric.PCIRead && (s.Fabric.NVSwitches == 0 || s.Fabric.LogRead)
	}},
}

// whyFabricNotMade says why a fabric check's evidence is missing; "" for
// a check that is not one.
func whyFabricNotMade(s *Snapshot, check string) string {
	switch check {
	case "gpu-pci-count", "fabric-manager", "fabric-manager-log":
	default:
		return ""
	}
	switch {
	case s.Fabric == nil || !s.Fabric.PCIRead:
		return "the PCI bus (/sys/bus/pci/devices) was not read: " + fieldError(s, "pci")
	case check == "fabric-manager":
		return "/proc was not read: " + fieldError(s, "host.processes")
	case check == "fabric-manager-log":
		return "the fabric manager's log was not read: " + fieldError(s, "fabric.manager_log")
	}
	return "NVML's GPU count was not read"
}

// PassEvidence says what was read for check where it found nothing: the
// evidence of its PASS ("4 RDMA port(s) read, every one ACTIVE/LinkUp").
func PassEvidence(s *Snapshot, check string) string {
	window := ""
	if s.WindowSeconds > 0 {
		window = fmt.Sprintf(", sampled for %gs", s.WindowSeconds)
	}
	switch check {
	case "stuck-process", "zombie-gpu-process":
		return fmt.Sprintf("/proc read: %d process(es) in state D or Z held on to nothing of the GPUs%s", len(s.HostState.Stuck), window)
	case "pstore-crash":
		return "/sys/fs/pstore read: no crash record"
	case "gpu-count":
		return fmt.Sprintf("NVML counts %d GPU(s); the inventory expects %d", len(s.GPUs), s.Expect.GPUs)
	case "gpu-pci-count", "fabric-manager", "fabric-manager-log":
		f := s.Fabric
		msg := fmt.Sprintf("PCI bus read: %d NVIDIA GPU(s), %d NVSwitch(es); NVML counts %d GPU(s)", f.PCIGPUs, f.NVSwitches, len(s.GPUs))
		if f.NVSwitches > 0 {
			msg += "; nv-fabricmanager runs; its log read"
		}
		return msg
	}
	if strings.HasPrefix(check, "ib-") {
		return fmt.Sprintf("/sys/class/infiniband read: %d RDMA port(s)%s", len(s.IB.Ports), window)
	}
	return fmt.Sprintf("%d GPU(s) read%s", len(s.GPUs), window)
}

// HostLevel reports whether check judges the host (its processes, crash
// records, RDMA ports, PCI bus, fabric) rather than each GPU.
func HostLevel(check string) bool {
	switch check {
	case "stuck-process", "zombie-gpu-process", "pstore-crash", "gpu-count", "gpu-pci-count", "fabric-manager", "fabric-manager-log":
		return true
	}
	return strings.HasPrefix(check, "ib-")
}
