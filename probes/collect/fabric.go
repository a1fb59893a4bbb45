package collect

import (
	"fmt"

	"bytes"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpulab/gpulab/probes/report"
)

// FabricManagerComm is the fabric manager daemon's process name as
// /proc/PID/stat holds it: nv-fabricmanager cut to the kernel's 15
// characters (TASK_COMM_LEN less its NUL).
const FabricManagerComm = "nv-fabricmanage"

// fmLogTail is how much of the fabric manager's log is read, from its end.
const fmLogTail = 64 << 10

// readPCI counts the NVIDIA GPUs and NVSwitches on the PCI bus, as lspci
// lists them, from sysfs (dir: /sys/bus/pci/devices): vendor 0x10de,
// class 0x0300 or 0x0302 (a GPU), 0x0680 (an NVSwitch); and the network
// controllers (class 0x02), any vendor's.
func (c *collector) readPCI() {
	entries, err := os.ReadDir(c.opts.PCIDir)
	if err != nil {
		c.snap.Errors = append(c.snap.Errors, report.FieldError{Field: "pci", Code: "UNREADABLE", Message: err.Error()})
		return
	}
	f := &report.Fabric{PCIRead: true}
	read := c.sysRead()
	for i, e := range entries {
		if i == maxProcs {
			f.Truncated = true // a GPU past the bound would go uncounted
			break
		}
		dev := filepath.Join(c.opts.PCIDir, e.Name())
		class, _ := read(filepath.Join(dev, "class"))
		cl := strings.TrimSpace(string(class))
		if strings.HasPrefix(cl, "0x02") {
			f.NICs++
		}
		vendor, _ := read(filepath.Join(dev, "vendor"))
		if strings.TrimSpace(string(vendor)) != "0x10de" {
			continue
		}
		switch {
		case strings.HasPrefix(cl, "0x0300"), strings.HasPrefix(cl, "0x0302"):
			f.PCIGPUs++
		case strings.HasPrefix(cl, "0x0680"):
			f.NVSwitches++
		}
	}
	c.snap.Fabric = f
}

// readFabricManagerLog reads the last [ERROR] line of the fabric
// manager's log (the last 64 KiB of it).
func (c *collector) readFabricManagerLog() {
	f := c.snap.Fabric
	file, err := openRegular(c.opts.FabricManagerLog)
	if err != nil {
		c.snap.Errors = append(c.snap.Errors, report.FieldError{Field: "fabric.manager_log", Code: "UNREADABLE", Message: err.Error()})
		return
	}
	defer file.Close()
	if st, err := file.Stat(); err == nil && st.Size() > fmLogTail {
		file.Seek(st.Size()-fmLogTail, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(file, fmLogTail))
	f.LogRead = true
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(l, []byte("] [ERROR] ")) {
			f.LogLastError = strings.TrimSpace(string(l))
		}
	}
}

// fabricScan reads the PCI bus and, on a host with NVSwitches, the
// fabric manager's log; whether its daemon runs is the /proc scan's.
func (c *collector) fabricScan(managerSeen bool) {
	if c.opts.PCIDir == "" {
		return
	}
	c.readPCI()
	if c.snap.Fabric != nil {
		c.readPCIePaths()
	}
	if f := c.snap.Fabric; f != nil && c.snap.HostState.ProcScanned {
		f.ManagerRunning = &managerSeen
	}
	if f := c.snap.Fabric; f != nil && f.NVSwitches > 0 && c.opts.FabricManagerLog != "" {
		c.readFabricManagerLog()
	}
}

// fabricStates name NVML's GPU fabric states as the snapshot does.
var fabricStates = map[uint8]string{
	nvml.GPU_FABRIC_STATE_NOT_SUPPORTED: "not_supported", nvml.GPU_FABRIC_STATE_NOT_STARTED: "not_started",
	nvml.GPU_FABRIC_STATE_IN_PROGRESS: "in_progress", nvml.GPU_FABRIC_STATE_COMPLETED: "completed",
}

// fabricSummaries name NVML's fabric health summaries; not supported is "".
var fabricSummaries = map[uint8]string{
	nvml.GPU_FABRIC_HEALTH_SUMMARY_HEALTHY: "healthy", nvml.GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY: "unhealthy",
	nvml.GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY: "limited_capacity",
}

// gpuFabric reads the GPU's NVLink fabric state
// (nvmlDeviceGetGpuFabricInfo: state and the registration's status;
// NOT_SUPPORTED is a GPU with no fabric state, not an error) and, where
// the loaded library says it exports nvmlDeviceGetGpuFabricInfoV, its
// health mask and summary (version 3; version 2, with no summary, on a
// driver that refuses 3). go-nvml calls the versioned function through
// a handler no mock can answer, so a library that cannot say what it
// exports is not asked for the mask (the simulated one says it does not
// export it).
func (c *collector) gpuFabric(g *report.GPU, d nvml.Device, f func(string) string) {
	var info nvml.GpuFabricInfo
	var ret nvml.Return
	if !c.call(f("fabric"), &g.Index, "nvmlDeviceGetGpuFabricInfo", func() nvml.Return {
		if info, ret = d.GetGpuFabricInfo(); ret == nvml.ERROR_NOT_SUPPORTED {
			return nvml.SUCCESS
		}
		return ret
	}) {
		return
	}
	fb := &report.GPUFabric{State: fabricStates[info.State]}
	g.Fabric = fb
	if ret == nvml.ERROR_NOT_SUPPORTED || info.State == nvml.GPU_FABRIC_STATE_NOT_SUPPORTED {
		fb.State = "not_supported"
		return
	}
	if fb.State == "" {
		fb.State = fmt.Sprintf("unknown(%d)", info.State)
	}
	fb.CliqueID = info.CliqueId
	if fb.State == "completed" {
		fb.Status = "SUCCESS"
		if r := nvml.Return(info.Status); r != nvml.SUCCESS {
			fb.Status = returnCode(r)
		}
	}
	if !c.exported("nvmlDeviceGetGpuFabricInfoV") {
		return
	}
	var v3 nvml.GpuFabricInfo_v3
	if c.call(f("fabric.health"), &g.Index, "nvmlDeviceGetGpuFabricInfoV", func() (r nvml.Return) {
		h := d.GetGpuFabricInfoV()
		if v3, r = h.V3(); r == nvml.ERROR_ARGUMENT_VERSION_MISMATCH {
			var v2 nvml.GpuFabricInfo_v2
			v2, r = h.V2()
			v3 = nvml.GpuFabricInfo_v3{HealthMask: v2.HealthMask}
		}
		return r
	}) {
		fb.HealthMask = ptr(v3.HealthMask)
		fb.HealthSummary = fabricSummaries[v3.HealthSummary]
	}
}

// exported reports whether the loaded library says it exports symbol;
// false where it cannot say (a mock).
func (c *collector) exported(symbol string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	ext := c.lib.Extensions()
	return ext != nil && ext.LookupSymbol(symbol) == nil
}
