package collect

import (
	"bytes"
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
// class 0x0300 or 0x0302 (a GPU), 0x0680 (an NVSwitch).
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
			break
		}
		dev := filepath.Join(c.opts.PCIDir, e.Name())
		vendor, _ := read(filepath.Join(dev, "vendor"))
		if strings.TrimSpace(string(vendor)) != "0x10de" {
			continue
		}
		class, _ := read(filepath.Join(dev, "class"))
		switch cl := strings.TrimSpace(string(class)); {
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
	file, err := os.Open(c.opts.FabricManagerLog)
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
	if f := c.snap.Fabric; f != nil && c.snap.HostState.ProcScanned {
		f.ManagerRunning = &managerSeen
	}
	if f := c.snap.Fabric; f != nil && f.NVSwitches > 0 && c.opts.FabricManagerLog != "" {
		c.readFabricManagerLog()
	}
}
