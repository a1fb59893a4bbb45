// Package report is the probe's wire format: one versioned JSON snapshot of
// a host's GPUs, MIG instances, links, topology, processes and faults. It is
// shared by the probe (which writes it) and gpulab (which reads it), and it
// needs no cgo, so the workbench builds without it.
//
// Optional numbers are pointers: nil means NVML did not give the value, and
// the snapshot's Errors say why (NOT_SUPPORTED, NO_PERMISSION, a symbol the
// driver lacks). A refused field is data, never a failure.
package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schema is the snapshot format's version; readers refuse newer majors.
const Schema = 1

// Probe exit codes. They are distinct so that the orchestrator can tell a
// host without NVML from a hang or a crash.
const (
	ExitOK        = 0  // a snapshot was printed
	ExitNoNVML    = 3  // libnvidia-ml could not be loaded: the snapshot says why
	ExitNVMLError = 4  // NVML loaded but failed to initialise
	ExitWatchdog  = 5  // NVML did not answer in time; nothing trustworthy printed
	ExitUsage     = 64 // bad flags
)

// Snapshot is one host's state.
type Snapshot struct {
	Schema       int       `json:"schema"`
	Host         string    `json:"host"`
	CollectedAt  time.Time `json:"collected_at"`
	ProbeVersion string    `json:"probe_version"`
	DurationMS   float64   `json:"duration_ms"`
	// Simulated marks a snapshot taken against a mock, never real hardware.
	Simulated bool `json:"simulated,omitempty"`

	NVML              NVMLState `json:"nvml"`
	DriverVersion     string    `json:"driver_version,omitempty"`
	NVMLVersion       string    `json:"nvml_version,omitempty"`
	CUDADriverVersion string    `json:"cuda_driver_version,omitempty"` // "12.4"

	GPUs      []GPU      `json:"gpus"`
	Topology  []TopoLink `json:"topology"`
	Processes []Process  `json:"processes"`
	XIDs      []XIDEvent `json:"xids"`
	// XIDHistory: the kernel log's Xid lines were read to the end
	// (--kmsg), so XIDs holds every Xid since the log began, not only
	// those of the probe's own window.
	XIDHistory bool `json:"xid_history,omitempty"`
	// WindowSeconds is how long the probe sampled the GPUs (--window);
	// 0: one reading, and no rate (GPU.Window is nil).
	WindowSeconds float64 `json:"window_seconds,omitempty"`
	// HostState is the host's side: processes stuck on the GPUs, crash
	// records from earlier boots.
	HostState HostState `json:"host_state"`
	// IB is the host's InfiniBand and RoCE ports (/sys/class/infiniband);
	// nil when they were not read (Errors say why).
	IB *IBState `json:"ib,omitempty"`
	// Fabric is the NVIDIA devices on the PCI bus and the NVSwitch
	// fabric's manager; nil when the bus was not read.
	Fabric *Fabric `json:"fabric,omitempty"`
	// Expect is what the inventory says the host has (the probe's
	// --expect), judged by the count and rate checks; nil: nothing said.
	Expect *Expect      `json:"expect,omitempty"`
	Errors []FieldError `json:"errors"`
}

// IBState is the host's RDMA ports as sysfs shows them.
type IBState struct {
	Ports []IBPort `json:"ports"`
	// Truncated: not every port was read (more devices or ports than the
	// probe reads, a device's ports unreadable): no port check is made.
	Truncated bool `json:"truncated,omitempty"`
}

// IBPort is one port of an RDMA device (mlx5_0 port 1).
type IBPort struct {
	Device    string  `json:"device"`
	Port      int     `json:"port"`
	LinkLayer string  `json:"link_layer,omitempty"` // "InfiniBand", "Ethernet" (RoCE)
	State     string  `json:"state,omitempty"`      // "ACTIVE", "DOWN", ...
	PhysState string  `json:"phys_state,omitempty"` // "LinkUp", "Polling", "Disabled", ...
	Rate      string  `json:"rate,omitempty"`       // "200 Gb/sec (4X HDR)"
	RateGbps  float64 `json:"rate_gbps,omitempty"`
	// Counters are the port's error counters since they were last
	// cleared (link_downed is 8 bits wide in the port's PMA: 255 is "at
	// least 255").
	Counters map[string]uint64 `json:"counters,omitempty"`
	// WindowDelta is how much each counter rose over the sampling window;
	// nil for one reading.
	WindowDelta map[string]uint64 `json:"window_delta,omitempty"`
}

// Fabric is what the PCI bus holds of NVIDIA's, and the NVSwitch fabric
// manager's state.
type Fabric struct {
	PCIRead    bool `json:"pci_read"`
	PCIGPUs    int  `json:"pci_gpus"`   // GPUs on the bus, as lspci lists them
	NVSwitches int  `json:"nvswitches"` // NVSwitches on the bus
	// NICs are the network controllers on the bus (PCI class 0x02:
	// Ethernet, InfiniBand), any vendor's: a fleet's hosts of one model
	// should agree (drift).
	NICs int `json:"nics"`
	// Truncated: the bus held more functions than the probe reads.
	Truncated bool `json:"truncated,omitempty"`
	// ManagerRunning: nv-fabricmanager is among the host's processes; nil
	// when /proc was not read.
	ManagerRunning *bool `json:"manager_running,omitempty"`
	// LogRead: its log (/var/log/fabricmanager.log) was read;
	// LogLastError is the last [ERROR] line in its last 64 KiB.
	LogRead      bool   `json:"log_read,omitempty"`
	LogLastError string `json:"log_last_error,omitempty"`
}

// Expect is what the inventory says a host has (expect = { ... }).
type Expect struct {
	GPUs       int `json:"gpus,omitempty"`
	IBPorts    int `json:"ib_ports,omitempty"`
	IBRateGbps int `json:"ib_rate_gbps,omitempty"`
}

// HostState is what the probe read of the host under the GPUs.
type HostState struct {
	// ProcScanned: /proc was read for stuck processes (else Errors say
	// why).
	ProcScanned bool           `json:"proc_scanned,omitempty"`
	Stuck       []StuckProcess `json:"stuck,omitempty"`
	// Truncated: /proc held more processes, or more stuck ones, than the
	// probe reads: the stuck-process and zombie checks are not made.
	Truncated bool `json:"truncated,omitempty"`
	// Pstore is nil when /sys/fs/pstore was not read (Errors say why).
	Pstore *Pstore `json:"pstore,omitempty"`
}

// StuckProcess is a process that holds the GPUs and cannot let go: in
// state D with /dev/nvidia* open (Devices), or a zombie NVML still lists.
type StuckProcess struct {
	PID     int      `json:"pid"`
	PPID    int      `json:"ppid"`
	Name    string   `json:"name"`
	State   string   `json:"state"` // "D", "Z"
	Devices []string `json:"devices,omitempty"`
	// FDsUnread: in state D, and its open files could not be read (another
	// user's process, without root): whether it holds a GPU is unknown.
	FDsUnread bool `json:"fds_unread,omitempty"`
	// WholeWindow: still in that state at the end of the sampling window.
	WholeWindow bool `json:"whole_window,omitempty"`
}

// Pstore is the kernel's crash records kept across reboots.
type Pstore struct {
	Records []PstoreRecord `json:"records"`
	More    int            `json:"more,omitempty"` // records beyond those listed
}

// PstoreRecord is one record: its file name (dmesg-efi-..., dmesg-ramoops-N)
// and the line that says what happened, when found.
type PstoreRecord struct {
	Name  string `json:"name"`
	Panic string `json:"panic,omitempty"`
}

// NVMLState says whether NVML could be used.
type NVMLState struct {
	Available bool   `json:"available"`
	Library   string `json:"library,omitempty"`
	Error     string `json:"error,omitempty"` // e.g. the dlopen error text
}

// GPU is one physical GPU.
type GPU struct {
	Index    int    `json:"index"`
	Name     string `json:"name,omitempty"`
	UUID     string `json:"uuid,omitempty"`
	Serial   string `json:"serial,omitempty"`
	PCIBusID string `json:"pci_bus_id,omitempty"`

	PCIe        PCIe         `json:"pcie"`
	Memory      *Memory      `json:"memory,omitempty"`
	Utilization *Utilization `json:"utilization,omitempty"`

	TemperatureC    *uint32  `json:"temperature_c,omitempty"`
	PowerW          *float64 `json:"power_w,omitempty"`
	PowerLimitW     *float64 `json:"power_limit_w,omitempty"`
	SMClockMHz      *uint32  `json:"sm_clock_mhz,omitempty"`
	MemoryClockMHz  *uint32  `json:"memory_clock_mhz,omitempty"`
	ThrottleReasons []string `json:"throttle_reasons,omitempty"`
	PersistenceMode *bool    `json:"persistence_mode,omitempty"`
	ComputeMode     string   `json:"compute_mode,omitempty"`
	// SlowdownC is the temperature at which the GPU slows its clocks
	// (NVML's slowdown threshold); its margin is SlowdownC - TemperatureC.
	SlowdownC *uint32 `json:"slowdown_c,omitempty"`
	// PowerDefaultLimitW is the board's default power limit: an enforced
	// limit below it is a cap someone set.
	PowerDefaultLimitW *float64 `json:"power_default_limit_w,omitempty"`
	// VBIOSVersion and InforomImage identify the GPU's firmware
	// ("92.00.36.00.04", "G506.0200.00.04"): a fleet should agree.
	VBIOSVersion string `json:"vbios_version,omitempty"`
	InforomImage string `json:"inforom_image,omitempty"`
	// RecoveryAction is what the driver says the GPU needs now (NVML's
	// GPU recovery action field, drivers 570 and newer): none,
	// gpu_reset, node_reboot, drain_p2p, drain_and_reset,
	// recover_imex_domain, bus_reset, system_reboot.
	RecoveryAction string `json:"recovery_action,omitempty"`
	// Fabric is the GPU's place in the NVLink fabric of an NVSwitch
	// system, as NVML reports it; nil when it was not read (Errors say
	// why).
	Fabric *GPUFabric `json:"fabric,omitempty"`
	// Hung names the NVML call that did not return within the probe's
	// per-call deadline; the GPU's fields after it were not read.
	Hung string `json:"hung,omitempty"`
	// Window is what the probe saw over its sampling window; nil for
	// one reading.
	Window *Window `json:"window,omitempty"`

	ECC          ECC           `json:"ecc"`
	RetiredPages *RetiredPages `json:"retired_pages,omitempty"`
	RemappedRows *RemappedRows `json:"remapped_rows,omitempty"`
	MIG          MIG           `json:"mig"`
	NVLinks      []NVLink      `json:"nvlinks,omitempty"`

	NUMANode    *int   `json:"numa_node,omitempty"`
	CPUAffinity string `json:"cpu_affinity,omitempty"` // a CPU list: "0-31,64-95"

	// Findings are problems worth a look: a downtrained PCIe link,
	// pending row remaps, uncorrected ECC errors.
	Findings []string `json:"findings,omitempty"`
}

// GPUFabric is a GPU's NVLink fabric state (nvmlDeviceGetGpuFabricInfo):
// the fabric manager registers each GPU of an NVSwitch system of Hopper
// or newer with the fabric, and CUDA fails on a GPU it has not.
type GPUFabric struct {
	// State: not_supported (the GPU has no fabric state: before Hopper,
	// or no NVSwitch fabric), not_started, in_progress, completed.
	State string `json:"state"`
	// Status is how the registration ended once completed: SUCCESS, or
	// the NVML error it ended with.
	Status   string `json:"status,omitempty"`
	CliqueID uint32 `json:"clique_id,omitempty"`
	// HealthMask is NVML's fabric health mask (nvmlDeviceGetGpuFabricInfoV,
	// drivers 550 and newer); nil where the driver does not give it.
	// FabricHealth decodes it.
	HealthMask *uint32 `json:"health_mask,omitempty"`
	// HealthSummary is NVML's own word on it: healthy, unhealthy,
	// limited_capacity; "" where not given.
	HealthSummary string `json:"health_summary,omitempty"`
}

// PCIe is the link as trained now against what the GPU and slot allow.
type PCIe struct {
	GenCurrent   *int `json:"gen_current,omitempty"`
	GenMax       *int `json:"gen_max,omitempty"`
	WidthCurrent *int `json:"width_current,omitempty"`
	WidthMax     *int `json:"width_max,omitempty"`
	// GenGPUMax is the GPU's own maximum generation; GenMax is what the
	// GPU and its slot allow together, so GenMax < GenGPUMax is the
	// slot's limit, not the GPU's fault.
	GenGPUMax *int `json:"gen_gpu_max,omitempty"`
	// Replays is the link's replay counter since the GPU's reset: a
	// replay resends a packet the other end could not read.
	Replays *uint64 `json:"replays,omitempty"`
	// Path is the PCIe bridges between the GPU and the CPU, nearest
	// first (the switch's downstream port, its upstream port, the root
	// port), as sysfs shows them; PathRead says it was read (a GPU on
	// the root complex itself has none).
	Path     []PCIeHop `json:"path,omitempty"`
	PathRead bool      `json:"path_read,omitempty"`
}

// PCIeHop is one bridge on a GPU's path and its link; nil: not read.
type PCIeHop struct {
	BDF          string `json:"bdf"`
	GenCurrent   *int   `json:"gen_current,omitempty"`
	GenMax       *int   `json:"gen_max,omitempty"`
	WidthCurrent *int   `json:"width_current,omitempty"`
	WidthMax     *int   `json:"width_max,omitempty"`
}

// Window is what the probe saw of a GPU over its sampling window
// (Snapshot.WindowSeconds): how many samples it took and in how many of
// them each condition held. A rate is counted over the samples, never
// taken from one reading.
type Window struct {
	// Samples counts the samples whose clock-event reasons were read.
	Samples int `json:"samples"`
	// PCIeSamples counts the samples whose utilisation and PCIe link
	// generation were both read (NVML gives no utilisation in MIG
	// mode); Busy counts those in which the GPU's utilisation was above
	// zero.
	PCIeSamples int `json:"pcie_samples"`
	Busy        int `json:"busy"`
	// ClockEvents counts, per clock-event reason (ThrottleReasons'
	// names), the samples in which it was active.
	ClockEvents map[string]int `json:"clock_events,omitempty"`
	// PCIeGenBelowBusy counts the busy samples in which the link ran
	// below GenMax; PCIeGenBusyMin is the lowest generation seen busy.
	PCIeGenBelowBusy int  `json:"pcie_gen_below_max_busy"`
	PCIeGenBusyMin   *int `json:"pcie_gen_busy_min,omitempty"`
	// PCIeGenBelowIdle counts the idle samples below GenMax: a link
	// shifts down when idle to save power, which is normal.
	PCIeGenBelowIdle int `json:"pcie_gen_below_max_idle"`
	// ReplaysDelta is how much the PCIe replay counter rose over the
	// window; nil when it could not be read at both ends.
	ReplaysDelta *uint64 `json:"pcie_replays_delta,omitempty"`
}

// Memory is framebuffer memory in MiB.
type Memory struct {
	TotalMiB uint64 `json:"total_mib"`
	UsedMiB  uint64 `json:"used_mib"`
	FreeMiB  uint64 `json:"free_mib"`
}

// Utilization is the percentage of time over the last sample period that a
// kernel ran (GPU) or memory was read or written (Memory). It says nothing
// about how much of the GPU the kernel used.
type Utilization struct {
	GPUPercent    uint32 `json:"gpu_percent"`
	MemoryPercent uint32 `json:"memory_percent"`
}

// ECC is the ECC mode and error counts.
type ECC struct {
	Enabled   *bool      `json:"enabled,omitempty"`
	Pending   *bool      `json:"pending,omitempty"`
	Volatile  *ECCCounts `json:"volatile,omitempty"`
	Aggregate *ECCCounts `json:"aggregate,omitempty"`
}

// ECCCounts counts corrected and uncorrected errors.
type ECCCounts struct {
	Corrected   uint64 `json:"corrected"`
	Uncorrected uint64 `json:"uncorrected"`
}

// RetiredPages is page retirement (pre-A100 GPUs).
type RetiredPages struct {
	SingleBit int  `json:"single_bit"`
	DoubleBit int  `json:"double_bit"`
	Pending   bool `json:"pending"`
}

// RemappedRows is row remapping (A100 and newer).
type RemappedRows struct {
	Corrected   int  `json:"corrected"`
	Uncorrected int  `json:"uncorrected"`
	Pending     bool `json:"pending"` // a reset is needed to apply them
	Failure     bool `json:"failure"` // remapping failed: the GPU needs service
}

// MIG is the GPU's MIG mode and its instances.
type MIG struct {
	Current      string        `json:"current,omitempty"` // "enabled", "disabled"
	Pending      string        `json:"pending,omitempty"`
	GPUInstances []GPUInstance `json:"gpu_instances,omitempty"`
}

// GPUInstance is a MIG GPU instance.
type GPUInstance struct {
	ID               int               `json:"id"`
	ProfileID        int               `json:"profile_id"`
	Profile          string            `json:"profile"` // "3g.20gb"
	PlacementStart   int               `json:"placement_start"`
	PlacementSize    int               `json:"placement_size"`
	MemoryMiB        uint64            `json:"memory_mib"`
	ComputeInstances []ComputeInstance `json:"compute_instances,omitempty"`
}

// ComputeInstance is a MIG compute instance and the MIG device it forms.
type ComputeInstance struct {
	ID             int    `json:"id"`
	ProfileID      int    `json:"profile_id"`
	Profile        string `json:"profile"` // "1c.3g.20gb"
	PlacementStart int    `json:"placement_start"`
	PlacementSize  int    `json:"placement_size"`
	DeviceUUID     string `json:"device_uuid,omitempty"` // MIG-...
}

// NVLink is one NVLink of a GPU.
type NVLink struct {
	Link           int    `json:"link"`
	Active         bool   `json:"active"`
	Version        uint32 `json:"version,omitempty"`
	RemotePCIBusID string `json:"remote_pci_bus_id,omitempty"`
}

// TopoLink is how two GPUs reach each other.
type TopoLink struct {
	A int `json:"a"`
	B int `json:"b"`
	// Level is the common ancestor as nvidia-smi topo -m names it:
	// NV# (NVLink, with the link count), PIX, PXB, PHB, NODE, SYS.
	Level string `json:"level"`
	// P2P maps a capability (read, write, nvlink, atomics) to its status
	// ("OK", "NS" not supported, ...).
	P2P map[string]string `json:"p2p,omitempty"`
}

// Process is a process using a GPU.
type Process struct {
	GPU               int    `json:"gpu"`
	PID               uint32 `json:"pid"`
	Name              string `json:"name,omitempty"`
	Type              string `json:"type"` // "compute", "graphics"
	UsedMiB           uint64 `json:"used_mib"`
	GPUInstanceID     *int   `json:"gpu_instance_id,omitempty"`
	ComputeInstanceID *int   `json:"compute_instance_id,omitempty"`
	ContainerID       string `json:"container_id,omitempty"`
	PodUID            string `json:"pod_uid,omitempty"`
}

// FieldError is a value NVML did not give: which, for which GPU, and why.
type FieldError struct {
	Field   string `json:"field"`         // "gpu[3].ecc.volatile"
	GPU     *int   `json:"gpu,omitempty"` // nil for host-wide fields
	Code    string `json:"code"`          // NOT_SUPPORTED, NO_PERMISSION, MISSING_SYMBOL, PANIC, ...
	Message string `json:"message,omitempty"`
}

// Arg is e as the probe's --expect takes it: "gpus=8,ib_ports=8,ib_rate_gbps=200",
// the keys set only.
func (e Expect) Arg() string {
	var parts []string
	for _, kv := range []struct {
		k string
		v int
	}{{"gpus", e.GPUs}, {"ib_ports", e.IBPorts}, {"ib_rate_gbps", e.IBRateGbps}} {
		if kv.v > 0 {
			parts = append(parts, kv.k+"="+strconv.Itoa(kv.v))
		}
	}
	return strings.Join(parts, ",")
}

// ParseExpect reads --expect's "gpus=8,ib_ports=8,ib_rate_gbps=200"; ""
// is nil (nothing expected).
func ParseExpect(s string) (*Expect, error) {
	if s == "" {
		return nil, nil
	}
	e := &Expect{}
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if seen[k] {
			return nil, fmt.Errorf("--expect %q: %s given twice", s, k)
		}
		seen[k] = true
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 100000 {
			return nil, fmt.Errorf("--expect %q: %q: want KEY=N with N a whole number above 0", s, kv)
		}
		switch k {
		case "gpus":
			e.GPUs = n
		case "ib_ports":
			e.IBPorts = n
		case "ib_rate_gbps":
			e.IBRateGbps = n
		default:
			return nil, fmt.Errorf("--expect %q: %q: the keys are gpus, ib_ports and ib_rate_gbps", s, k)
		}
	}
	return e, nil
}
