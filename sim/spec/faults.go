package spec

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Faults is what is wrong with one simulated DGX A100. The zero value is a
// healthy machine. It is what `nvmlprobe --mock-faults` takes as JSON.
type Faults struct {
	// Machine names the simulated machine: its GPUs' serials and UUIDs
	// are derived from it (Serial, UUID), so that each host of a fleet
	// has GPUs of its own. Empty: the recorded machine's.
	Machine string `json:"machine,omitempty"`
	// NVLinkDown lists GPU index pairs whose NVLink is down: `nvidia-smi
	// topo -m` shows the pair's PCIe path (SYS across NUMA nodes) instead
	// of NV#, and each GPU of a pair loses the links LinksDown names.
	NVLinkDown [][2]int `json:"nvlink_down,omitempty"`
	// ECC holds error counts per GPU index.
	ECC map[int]ECCCounts `json:"ecc,omitempty"`
	// RemapPending lists GPUs with a row remap pending (a reset applies it).
	RemapPending []int `json:"remap_pending,omitempty"`
	// XIDs are the Xid events in the kernel log since boot. An NVLink5
	// Xid (144-150) states its unit, link and interrupt info in its
	// message: "RLW_REMAP Fatal XC0 i0 Link 02 (0x00000004 0x00000040 ...)".
	XIDs []XID `json:"xids,omitempty"`
	// SXids are the NVSwitches' SXid events in the kernel log since boot,
	// each printed as the switch prints it: its line, then its
	// "Severity" and "Data" detail lines.
	SXids []SXID `json:"sxids,omitempty"`
	// KernelLog adds lines of the host's own to the kernel log: an OOM
	// kill, a hung task, an EDAC or machine-check line, as the kernel
	// prints them.
	KernelLog []KernelLine `json:"kernel_log,omitempty"`
	// Pstore holds the kernel's crash records kept from earlier boots,
	// by file name as /sys/fs/pstore lists them ("dmesg-efi-...",
	// "dmesg-ramoops-0"): what the record says.
	Pstore map[string]string `json:"pstore,omitempty"`
	// IB is what is wrong with the host's RDMA ports, by device name
	// ("mlx5_2"): down, a lower rate, flaps, symbol errors (IBPort).
	IB map[string]IBPort `json:"ib,omitempty"`
	// FabricManager is what is wrong with the NVSwitch fabric manager:
	// stopped, or lines in its log.
	FabricManager FabricManager `json:"fabric_manager,omitzero"`
	// NVLinkFabric is a GPU's NVLink fabric state, by GPU index:
	// not_started, in_progress, or failed (registration completed with
	// an error). NVML reports a fabric state on NVSwitch systems of
	// Hopper and newer; the recorded A100s answer it NOT_SUPPORTED
	// ("State : N/A"), so a host with this knob answers as those systems
	// do: every GPU it does not name is completed.
	NVLinkFabric map[int]string `json:"nvlink_fabric,omitempty"`
	// MIG turns MIG mode on for a GPU and creates these GPU instance
	// profiles on it ("3g.20gb", "1g.5gb"...), each with one compute
	// instance spanning it, placed as the driver would (see PlaceMIG).
	MIG map[int][]string `json:"mig,omitempty"`
	// Processes run on the GPUs: NVML lists them, each with the memory it
	// uses (added to its GPU's), and /proc shows their names and cgroups
	// (the probe reads them from a tree WriteProc writes).
	Processes []Process `json:"processes,omitempty"`
	// Utilization is a GPU's utilisation in percent, by GPU index; a GPU
	// not named is idle (0%).
	Utilization map[int]uint32 `json:"utilization,omitempty"`

	// PCIeGen is the PCIe generation a GPU's link trains at (the
	// recording's 4 when not named): a GPU named here and busy
	// (Utilization) runs below its generation under load; idle, it is
	// the power-saving down-shift every GPU does.
	PCIeGen map[int]int `json:"pcie_gen,omitempty"`
	// PCIeBridgeWidth is the width the PCIe switch's downstream port
	// above a GPU trains at (x16 when not named): a bridge on the GPU's
	// path narrower than its maximum, which NVML's view of the GPU's own
	// link does not show.
	PCIeBridgeWidth map[int]int `json:"pcie_bridge_width,omitempty"`
	// PCIeReplays: a GPU's PCIe replay counter rises by this much from
	// one reading to the next (a link that resends packets).
	PCIeReplays map[int]uint64 `json:"pcie_replays,omitempty"`
	// Throttle names the clock-event reasons active on a GPU in every
	// reading (a throttle storm): any of ThrottleReasons.
	Throttle map[int][]string `json:"throttle,omitempty"`
	// TemperatureC is a GPU's temperature in °C (the recording's when not
	// named); its slowdown temperature is SlowdownC.
	TemperatureC map[int]int `json:"temperature_c,omitempty"`
	// PowerLimitW is a GPU's enforced power limit, capped below the
	// default PowerLimitW.
	PowerLimitW map[int]int `json:"power_limit_w,omitempty"`
	// RecoveryAction is what the driver says a GPU needs: gpu_reset or
	// drain_and_reset (what nvidia-smi -q's GPU Reset Status can say).
	RecoveryAction map[int]string `json:"recovery_action,omitempty"`
	// VBIOS is the machine's GPUs' VBIOS version (VBIOSVersion when
	// empty): a host of a fleet that differs.
	VBIOS string `json:"vbios,omitempty"`
	// GPULost lists GPUs that fell off the bus: the driver still counts
	// them, and NVML answers GPU_IS_LOST for their handles
	// (nvidia-smi: "Unable to determine the device handle for GPU...:
	// GPU is lost").
	GPULost []int `json:"gpu_lost,omitempty"`
	// NVMLHang names, for a GPU, the NVML call that never returns on it
	// (one of HangCalls): the probe must name it and go on.
	NVMLHang map[int]string `json:"nvml_hang,omitempty"`
}

var vbiosForm = regexp.MustCompile(`^[0-9A-Fa-f]{2}(\.[0-9A-Fa-f]{2}){1,7}$`)

// ThrottleReasons are the clock-event reasons a fault can hold active,
// by the probe's names for them.
var ThrottleReasons = []string{"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown", "sw_power_cap"}

// FabricStates are the fabric states NVLinkFabric can name.
var FabricStates = []string{"not_started", "in_progress", "failed"}

// HangCalls are the NVML calls NVMLHang can name.
var HangCalls = []string{"nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature", "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetHandleByIndex"}

// RecoveryActions are the recovery actions RecoveryAction can name.
var RecoveryActions = []string{"gpu_reset", "drain_and_reset"}

// ECCCounts are a GPU's DRAM ECC error counters: volatile (since the
// driver loaded) and aggregate (over the GPU's life).
type ECCCounts struct {
	VolatileUncorrected  uint64 `json:"volatile_uncorrected,omitempty"`
	AggregateUncorrected uint64 `json:"aggregate_uncorrected,omitempty"`
	VolatileCorrected    uint64 `json:"volatile_corrected,omitempty"`
	AggregateCorrected   uint64 `json:"aggregate_corrected,omitempty"`
}

// XID is one Xid event of the kernel log.
type XID struct {
	GPU  int `json:"gpu"`
	Code int `json:"code"`
	// Message is the driver's text after "Xid (PCI:...): CODE, ".
	Message string `json:"message"`
	// SecondsAfterBoot places the line in the log (dmesg's timestamp).
	SecondsAfterBoot float64 `json:"seconds_after_boot"`
}

// SXID is one NVSwitch SXid event of the kernel log.
type SXID struct {
	Switch int `json:"switch"` // 0-5
	Code   int `json:"code"`
	// Message is the switch's text after "SXid (PCI:...): CODE, ":
	// "Fatal, Link 28 sourcetrack timeout error (First)".
	Message          string  `json:"message"`
	SecondsAfterBoot float64 `json:"seconds_after_boot"`
}

// KernelLine is one line of the kernel log.
type KernelLine struct {
	SecondsAfterBoot float64 `json:"seconds_after_boot"`
	// Level is the line's syslog level as dmesg --decode names it (err,
	// warn, info...; "" is info).
	Level string `json:"level,omitempty"`
	Text  string `json:"text"`
}

// kernelLevels are the levels dmesg --decode prints.
var kernelLevels = []string{"", "emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"}

// Validate reports the first thing in f that no DGX A100 can show: a GPU
// index out of range, a pair of one GPU, an unknown MIG profile or a MIG
// layout that does not fit, a process without a PID or in a MIG instance
// its GPU lacks, a utilisation over 100%.
func (f Faults) Validate() error {
	gpu := func(what string, i int) error {
		if i < 0 || i >= GPUs {
			return fmt.Errorf("%s: GPU %d: a DGX A100 has GPUs 0-%d", what, i, GPUs-1)
		}
		return nil
	}
	for _, p := range f.NVLinkDown {
		if err := firstErr(gpu("nvlink_down", p[0]), gpu("nvlink_down", p[1])); err != nil {
			return err
		}
		if p[0] == p[1] {
			return fmt.Errorf("nvlink_down: pair [%d,%d] is one GPU", p[0], p[1])
		}
	}
	for i := range f.ECC {
		if err := gpu("ecc", i); err != nil {
			return err
		}
	}
	for _, i := range f.RemapPending {
		if err := gpu("remap_pending", i); err != nil {
			return err
		}
	}
	if err := f.validateEvents(gpu); err != nil {
		return err
	}
	for i, l := range f.KernelLog {
		switch {
		case l.SecondsAfterBoot < 0:
			return fmt.Errorf("kernel_log[%d]: at %vs: want a time after boot", i, l.SecondsAfterBoot)
		case strings.TrimSpace(l.Text) == "" || strings.ContainsAny(l.Text, "\r\n"):
			return fmt.Errorf("kernel_log[%d]: want one line of text", i)
		case !slices.Contains(kernelLevels, l.Level):
			return fmt.Errorf("kernel_log[%d]: level %q: want one of %s", i, l.Level, strings.Join(kernelLevels[1:], ", "))
		}
	}
	if err := errors.Join(f.validateIB(), f.validateFabricManager()); err != nil {
		return err
	}
	for name, text := range f.Pstore {
		if name == "" || len(name) > 64 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" || name[0] == '.' {
			return fmt.Errorf("pstore: record %q: want a file name of letters, digits, '.', '_' and '-' (64 at most)", name)
		}
		if len(text) > 64<<10 {
			return fmt.Errorf("pstore: record %q: %d bytes: 64 KiB at most", name, len(text))
		}
	}
	for i, profiles := range f.MIG {
		if err := gpu("mig", i); err != nil {
			return err
		}
		if _, err := PlaceMIG(profiles); err != nil {
			return fmt.Errorf("mig: GPU %d: %w", i, err)
		}
	}
	if err := f.validateState(gpu); err != nil {
		return err
	}
	return f.validateProcesses()
}

// validatePCIe checks the knobs of a GPU's PCIe link and path.
func (f Faults) validatePCIe(gpu func(string, int) error) error {
	for i, g := range f.PCIeGen {
		if err := gpu("pcie_gen", i); err != nil {
			return err
		}
		if g < 1 || g > PCIeGen {
			return fmt.Errorf("pcie_gen: GPU %d: generation %d: an A100's link trains at 1-%d", i, g, PCIeGen)
		}
	}
	for i, w := range f.PCIeBridgeWidth {
		if err := gpu("pcie_bridge_width", i); err != nil {
			return err
		}
		if !slices.Contains([]int{1, 2, 4, 8}, w) {
			return fmt.Errorf("pcie_bridge_width: GPU %d: x%d: a x16 port trains at x1, x2, x4 or x8 when it trains narrower", i, w)
		}
	}
	for i, n := range f.PCIeReplays {
		if err := gpu("pcie_replays", i); err != nil {
			return err
		}
		if n > 1<<20 {
			return fmt.Errorf("pcie_replays: GPU %d: %d a reading: NVML's replay counter is 32 bits; 1048576 a reading at most", i, n)
		}
	}
	return nil
}

// validateEvents checks the Xid and SXid events of the kernel log.
func (f Faults) validateEvents(gpu func(string, int) error) error {
	for _, x := range f.XIDs {
		if err := gpu("xids", x.GPU); err != nil {
			return err
		}
		if x.Code <= 0 || x.SecondsAfterBoot < 0 {
			return fmt.Errorf("xids: Xid %d at %vs: want a positive code and a time after boot", x.Code, x.SecondsAfterBoot)
		}
		if !oneLine(x.Message) {
			return fmt.Errorf("xids[%d]: want one line of text (no control characters) as its message", slices.Index(f.XIDs, x))
		}
	}
	for _, x := range f.SXids {
		if x.Switch < 0 || x.Switch >= Switches {
			return fmt.Errorf("sxids: NVSwitch %d: a DGX A100 has NVSwitches 0-%d", x.Switch, Switches-1)
		}
		if x.Code <= 0 || x.SecondsAfterBoot < 0 {
			return fmt.Errorf("sxids: SXid %d at %vs: want a positive code and a time after boot", x.Code, x.SecondsAfterBoot)
		}
		if !oneLine(x.Message) {
			return fmt.Errorf("sxids[%d]: want one line of text (no control characters) as its message", slices.Index(f.SXids, x))
		}
	}
	return nil
}

// validateState checks the knobs of a GPU's state: PCIe, clocks,
// temperature, power, recovery, hangs.
func (f Faults) validateState(gpu func(string, int) error) error {
	if err := f.validatePCIe(gpu); err != nil {
		return err
	}
	for i, rs := range f.Throttle {
		if err := gpu("throttle", i); err != nil {
			return err
		}
		for _, r := range rs {
			if !slices.Contains(ThrottleReasons, r) {
				return fmt.Errorf("throttle: GPU %d: %q: the reasons are %s", i, r, strings.Join(ThrottleReasons, ", "))
			}
		}
	}
	for i, c := range f.TemperatureC {
		if err := gpu("temperature_c", i); err != nil {
			return err
		}
		if c < 0 || c > ShutdownC {
			return fmt.Errorf("temperature_c: GPU %d: %d °C: an A100 shuts down at %d °C", i, c, ShutdownC)
		}
	}
	for i, w := range f.PowerLimitW {
		if err := gpu("power_limit_w", i); err != nil {
			return err
		}
		if w < MinPowerLimitW || w > PowerLimitW {
			return fmt.Errorf("power_limit_w: GPU %d: %d W: an A100-SXM4-40GB's limit is %d-%d W", i, w, MinPowerLimitW, PowerLimitW)
		}
	}
	for i, a := range f.RecoveryAction {
		if err := gpu("recovery_action", i); err != nil {
			return err
		}
		if !slices.Contains(RecoveryActions, a) {
			return fmt.Errorf("recovery_action: GPU %d: %q: the simulated driver can ask for %s", i, a, strings.Join(RecoveryActions, ", "))
		}
	}
	for i, st := range f.NVLinkFabric {
		if err := gpu("nvlink_fabric", i); err != nil {
			return err
		}
		if !slices.Contains(FabricStates, st) {
			return fmt.Errorf("nvlink_fabric: GPU %d: %q: the states are %s", i, st, strings.Join(FabricStates, ", "))
		}
	}
	if f.VBIOS != "" && !vbiosForm.MatchString(f.VBIOS) {
		return fmt.Errorf("vbios: %q: a VBIOS version is dotted hex, as 92.00.36.00.04", f.VBIOS)
	}
	for _, i := range f.GPULost {
		if err := gpu("gpu_lost", i); err != nil {
			return err
		}
	}
	for i, call := range f.NVMLHang {
		if err := gpu("nvml_hang", i); err != nil {
			return err
		}
		if !slices.Contains(HangCalls, call) {
			return fmt.Errorf("nvml_hang: GPU %d: %q: the calls that can hang are %s", i, call, strings.Join(HangCalls, ", "))
		}
	}
	return nil
}

// Temperature is gpu's temperature in °C.
func (f Faults) Temperature(gpu int) int {
	if c, ok := f.TemperatureC[gpu]; ok {
		return c
	}
	return TemperatureC[gpu]
}

// PowerLimit is gpu's enforced power limit in W.
func (f Faults) PowerLimit(gpu int) int {
	if w, ok := f.PowerLimitW[gpu]; ok {
		return w
	}
	return PowerLimitW
}

// LinkGen is the generation gpu's PCIe link runs at.
func (f Faults) LinkGen(gpu int) int {
	if g, ok := f.PCIeGen[gpu]; ok {
		return g
	}
	return PCIeGen
}

// FabricState is gpu's NVLink fabric state: "" (none: the recorded
// A100s'), completed, or what NVLinkFabric names.
func (f Faults) FabricState(gpu int) string {
	if len(f.NVLinkFabric) == 0 {
		return ""
	}
	if st, ok := f.NVLinkFabric[gpu]; ok {
		return st
	}
	return "completed"
}

// VBIOSOf is the machine's VBIOS version.
func (f Faults) VBIOSOf() string {
	if f.VBIOS != "" {
		return f.VBIOS
	}
	return VBIOSVersion
}

// oneLine reports whether s holds no line break or other control
// character: a knob's text printed into a simulated log is one line of it.
func oneLine(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// PairDown reports whether the NVLink between GPUs a and b is down.
func (f Faults) PairDown(a, b int) bool {
	for _, p := range f.NVLinkDown {
		if p == [2]int{a, b} || p == [2]int{b, a} {
			return true
		}
	}
	return false
}

// LinksDown lists the links of gpu that are down, ascending. On an
// NVSwitch system every link carries traffic to every peer, so no link
// "belongs" to a pair; the simulation takes, for each pair (a, b) that is
// down, the two links of each GPU that go to NVSwitch (a+b) mod 6 (links
// s and s+6). Both GPUs of the pair lose them, so both show them inactive
// and both have fewer active links to their other peers.
func (f Faults) LinksDown(gpu int) []int {
	down := map[int]bool{}
	for _, p := range f.NVLinkDown {
		if p[0] != gpu && p[1] != gpu {
			continue
		}
		s := (p[0] + p[1]) % Switches
		down[s], down[s+Switches] = true, true
	}
	var out []int
	for l := range down {
		out = append(out, l)
	}
	sort.Ints(out)
	return out
}

// LinkUp reports whether a link of gpu is up.
func (f Faults) LinkUp(gpu, link int) bool {
	for _, l := range f.LinksDown(gpu) {
		if l == link {
			return false
		}
	}
	return true
}

// ActiveLinks counts gpu's links that are up.
func (f Faults) ActiveLinks(gpu int) int { return LinksPerGPU - len(f.LinksDown(gpu)) }

// ECCFor returns gpu's ECC counters (zero when none are set).
func (f Faults) ECCFor(gpu int) ECCCounts { return f.ECC[gpu] }

// Pending reports whether gpu has a row remap pending.
func (f Faults) Pending(gpu int) bool {
	for _, g := range f.RemapPending {
		if g == gpu {
			return true
		}
	}
	return false
}

// RemappedRows are gpu's remapped-row counters as NVML reports them: a
// pending remap counts one row, remapped for an uncorrectable error when
// the GPU has any, for correctable errors otherwise (the shape of
// testdata/fixtures/nvidia-smi-q/a100-sxm4-80gb-drv510-ecc-remap-excerpt.txt).
func (f Faults) RemappedRows(gpu int) (correctable, uncorrectable int, pending bool) {
	if !f.Pending(gpu) {
		return 0, 0, false
	}
	if e := f.ECC[gpu]; e.VolatileUncorrected > 0 || e.AggregateUncorrected > 0 {
		return 0, 1, true
	}
	return 1, 0, true
}

// MIGOn reports whether gpu runs in MIG mode.
func (f Faults) MIGOn(gpu int) bool {
	_, ok := f.MIG[gpu]
	return ok
}

// Instances is gpu's MIG layout (nil when MIG is off or the layout does
// not fit: Validate says why).
func (f Faults) Instances(gpu int) []GPUInstance {
	gis, _ := PlaceMIG(f.MIG[gpu])
	return gis
}
