package report

import (
	"fmt"
	"strconv"
	"strings"
)

// Finding is one thing a snapshot shows wrong, in a shape other tools
// read: a stable check name, whether the GPU (or node) should take no new
// work, the entities it concerns, its evidence and one recommended action.
// Findings are computed from a snapshot in one place (Findings); the
// phrases the probe flags a host with (Flags) are their messages.
type Finding struct {
	// Check is the check's stable name ("nvlink-down", "xid"); docs/probe.md
	// lists them.
	Check string `json:"check"`
	// Fatal: the GPU, or the node, should take no new work until the
	// action is done.
	Fatal bool `json:"fatal"`
	// Unknown: the check could not be made (its evidence is missing); the
	// finding says why, and the host is not known healthy.
	Unknown bool `json:"unknown,omitempty"`
	// Message is the phrase the probe flags the host with.
	Message string `json:"message"`
	// Action is what to do, one of the Action values.
	Action Action `json:"action"`
	// Codes are the error codes the finding answers to: the Xid, or
	// DCGM's failure code where one means the same (DCGM_FR_NVLINK_DOWN),
	// so that rules written against DCGM's codes match.
	Codes    []string `json:"codes,omitempty"`
	Entities []Entity `json:"entities,omitempty"`
	// Evidence is what was read, one line each.
	Evidence []string `json:"evidence,omitempty"`
}

// Entity is what a finding concerns, typed as NVSentinel types them:
// GPU (the index), GPU_UUID, PCI (the bus id), NVLINK (a link number).
type Entity struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// Action is a finding's recommended action. The values map one to one
// onto NVSentinel's RecommendedAction (NVSentinelAction) and onto gpud's
// repair actions many to one (GpudAction); docs/probe.md has the table.
type Action string

const (
	ActionNone           Action = "none"            // nothing to do now
	ActionCheckApp       Action = "check-app"       // the application, not the GPU
	ActionResetGPU       Action = "reset-gpu"       // drain the GPU's work and reset it
	ActionRestartVM      Action = "restart-vm"      // restart the virtual machine
	ActionReboot         Action = "reboot"          // drain the node and reboot it
	ActionRunDiagnostics Action = "run-diagnostics" // field diagnostics (dcgmi diag -r 3, fieldiag)
	ActionContactSupport Action = "contact-support" // nvidia-bug-report.sh, then the vendor: hardware service
	ActionUnknown        Action = "unknown"         // the evidence names no action gpulab can stand behind
)

// Actions lists every Action, mildest first.
var Actions = []Action{ActionNone, ActionCheckApp, ActionResetGPU, ActionRestartVM, ActionReboot, ActionRunDiagnostics, ActionContactSupport, ActionUnknown}

// NVSentinelAction is a's name in NVSentinel's RecommendedAction enum.
func (a Action) NVSentinelAction() string {
	switch a {
	case ActionNone:
		return "NONE"
	case ActionCheckApp:
		return "RESTART_APP"
	case ActionResetGPU:
		return "COMPONENT_RESET"
	case ActionRestartVM:
		return "RESTART_VM"
	case ActionReboot:
		return "RESTART_BM"
	case ActionRunDiagnostics:
		return "RUN_FIELDDIAG"
	case ActionContactSupport:
		return "CONTACT_SUPPORT"
	}
	return "UNKNOWN"
}

// GpudAction is a's nearest repair action of gpud's (its API's
// RepairActionType); "" for unknown, which gpud has no name for.
func (a Action) GpudAction() string {
	switch a {
	case ActionNone:
		return "IGNORE_NO_ACTION_REQUIRED"
	case ActionCheckApp:
		return "CHECK_USER_APP_AND_GPU"
	case ActionResetGPU, ActionRestartVM, ActionReboot:
		return "REBOOT_SYSTEM"
	case ActionRunDiagnostics, ActionContactSupport:
		return "HARDWARE_INSPECTION"
	}
	return ""
}

// xidAction is the action for NVIDIA's immediate resolution bucket of an
// Xid.
func xidAction(immediate string) Action {
	switch immediate {
	case "IGNORE":
		return ActionNone
	case "RESTART_APP", "CHECK_UVM", "WORKFLOW_XID_45":
		return ActionCheckApp
	case "RESET_GPU", "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR":
		// NVIDIA's ECC and NVLink workflows start with the GPU's reset.
		return ActionResetGPU
	case "RESTART_VM":
		return ActionRestartVM
	case "RESTART_BM":
		return ActionReboot
	case "CONTACT_SUPPORT", "CHECK_MECHANICALS", "UPDATE_SWFW":
		return ActionContactSupport
	}
	return ActionUnknown // XID_154 (the recovery action it names), or none given
}

// gpuEntities are the entities that name g.
func gpuEntities(g GPU) []Entity {
	out := []Entity{{"GPU", strconv.Itoa(g.Index)}}
	if g.UUID != "" {
		out = append(out, Entity{"GPU_UUID", g.UUID})
	}
	if g.PCIBusID != "" {
		out = append(out, Entity{"PCI", g.PCIBusID})
	}
	return out
}

// GPUFindings are what one GPU's own counters show wrong: a downtrained
// PCIe link, row remaps failed or pending, uncorrected ECC errors since
// the driver loaded, page retirement pending, then what stateFindings
// reads (a hung NVML call, the driver's recovery action, the sampling
// window's rates, the thermal margin and the power cap). Their messages
// are the GPU's Findings in the snapshot.
func GPUFindings(g GPU) []Finding {
	var out []Finding
	add := func(f Finding) {
		f.Entities = gpuEntities(g)
		out = append(out, f)
	}
	p := g.PCIe
	if p.GenCurrent != nil && p.GenMax != nil && p.WidthCurrent != nil && p.WidthMax != nil && *p.WidthCurrent < *p.WidthMax {
		add(Finding{Check: "pcie-width", Action: ActionContactSupport, Codes: []string{"DCGM_FR_PCIE_WIDTH"},
			Message:  fmt.Sprintf("PCIe link downtrained: x%d of x%d", *p.WidthCurrent, *p.WidthMax),
			Evidence: []string{fmt.Sprintf("pcie.width_current %d, pcie.width_max %d", *p.WidthCurrent, *p.WidthMax)}})
	}
	if f, ok := pciePathFinding(g); ok {
		add(f)
	}
	if rr := g.RemappedRows; rr != nil {
		ev := []string{fmt.Sprintf("remapped_rows: correctable %d, uncorrectable %d, pending %v, failure %v", rr.Corrected, rr.Uncorrected, rr.Pending, rr.Failure)}
		if rr.Failure {
			add(Finding{Check: "row-remap-failed", Fatal: true, Action: ActionContactSupport, Codes: []string{"DCGM_FR_ROW_REMAP_FAILURE"},
				Message: "row remapping failed: the GPU needs service", Evidence: ev})
		}
		if rr.Pending {
			add(Finding{Check: "row-remap-pending", Fatal: true, Action: ActionResetGPU, Codes: []string{"DCGM_FR_PENDING_ROW_REMAP"},
				Message: "row remaps pending: reset the GPU to apply them", Evidence: ev})
		}
	}
	if e := g.ECC.Volatile; e != nil && e.Uncorrected > 0 {
		add(Finding{Check: "ecc-uncorrected", Fatal: true, Action: ActionResetGPU, Codes: []string{"DCGM_FR_VOLATILE_DBE_DETECTED"},
			Message:  fmt.Sprintf("%d uncorrected ECC errors since the driver loaded", e.Uncorrected),
			Evidence: []string{fmt.Sprintf("ecc.volatile: corrected %d, uncorrected %d", e.Corrected, e.Uncorrected)}})
	}
	if rp := g.RetiredPages; rp != nil && rp.Pending {
		add(Finding{Check: "page-retirement-pending", Fatal: true, Action: ActionResetGPU, Codes: []string{"DCGM_FR_PENDING_PAGE_RETIREMENTS"},
			Message:  "page retirement pending: reset the GPU to apply it",
			Evidence: []string{fmt.Sprintf("retired_pages: single-bit %d, double-bit %d, pending true", rp.SingleBit, rp.DoubleBit)}})
	}
	for _, f := range stateFindings(g) {
		add(f)
	}
	return out
}

// Findings are what s shows wrong, host-wide first: NVLinks down, NVML
// answering with no GPU, then each GPU's findings (GPUFindings), the Xids
// (an Xid 63 whose GPU's row-remap state was read, or an Xid 64 whose
// GPU's state shows the failed remap, is that state's, and is left out), and the kernel's Xid history when it was asked for and
// not read (Unknown). A host with none is healthy as far as the probe can
// tell.
func Findings(s *Snapshot) []Finding {
	if s == nil {
		return nil
	}
	var out []Finding
	for _, d := range nvlinkPairsDown(s) {
		f := Finding{Check: "nvlink-down", Fatal: true, Action: ActionResetGPU, Codes: []string{"DCGM_FR_NVLINK_DOWN"},
			Message:  d.String(),
			Evidence: []string{fmt.Sprintf("topology GPU%d–GPU%d %s where the other GPUs' pairs are NVLinked", d.A, d.B, d.Level)}}
		for _, i := range []int{d.A, d.B} {
			if g, ok := gpuByIndex(s, i); ok {
				f.Entities = append(f.Entities, gpuEntities(g)...)
			} else {
				f.Entities = append(f.Entities, Entity{"GPU", strconv.Itoa(i)})
			}
		}
		out = append(out, f)
	}
	if e := HungHost(s); e != nil {
		// NVML stopped answering for the whole host: nothing after the
		// hung call was read, and no GPU can be called missing.
		out = append(out, Finding{Check: "nvml-hung", Fatal: true, Action: ActionReboot,
			Message:  "NVML hung: " + e.Message,
			Evidence: []string{e.Field + ": " + e.Code + ": " + e.Message}})
	}
	if s.NVML.Available && len(s.GPUs) == 0 && GPUCountRead(s) {
		// The driver answers and counts no device: on a GPU node every
		// GPU is gone (off the bus, or never enumerated).
		out = append(out, Finding{Check: "gpu-missing", Fatal: true, Action: ActionReboot,
			Message:  "NVML answers but sees no GPU (nvidia-smi -L; the kernel log for Xid 79 or a GPU that fell off the bus)",
			Evidence: []string{"nvmlDeviceGetCount: 0"}})
	}
	out = append(out, nvmlSaysFindings(s)...)
	out = append(out, unreadGPUFindings(s)...)
	for _, g := range s.GPUs {
		for _, f := range GPUFindings(g) {
			f.Message = fmt.Sprintf("GPU%d: %s", g.Index, f.Message)
			out = append(out, f)
		}
	}
	out = append(out, gpuCountFinding(s)...)
	out = append(out, hostFindings(s)...)
	out = append(out, ibFindings(s)...)
	out = append(out, fabricFindings(s)...)
	for _, x := range s.XIDs {
		if r := remapRead(s, x); r != nil && (x.Code == 63 || x.Code == 64 && r.Failure) {
			// The row remap an Xid 63 announces is its GPU's row-remap
			// finding, or none; the failed remap of an Xid 64 is that
			// finding when the state shows it (else the Xid stands).
			continue
		}
		out = append(out, xidFinding(s, x))
	}
	if e := KmsgUnread(s); e != nil && e.Code != "SIMULATED" {
		// Asked for the kernel's Xid history (--kmsg) and not given it:
		// "no Xid" would be a reading nobody made.
		out = append(out, Finding{Check: "xid-history", Unknown: true, Action: ActionNone,
			Message:  fmt.Sprintf("Xid history not read (/dev/kmsg: %s: %s)", e.Code, e.Message),
			Evidence: []string{e.Field + ": " + e.Code + ": " + e.Message}})
	}
	return out
}

// HungHost is the error of a host-wide NVML call that did not return
// (nothing more was asked of NVML after it); nil if none hung.
func HungHost(s *Snapshot) *FieldError {
	for i, e := range s.Errors {
		if e.Code == "HUNG" && e.GPU == nil {
			return &s.Errors[i]
		}
	}
	return nil
}

// unreadGPUFindings are the GPUs NVML counted and gave no handle for: a
// hung handle is nvml-hung, any other refusal but GPU_IS_LOST and
// RESET_REQUIRED (nvmlSaysFindings' own) is gpu-unreadable: the GPU is
// there and NVML cannot use it (INSUFFICIENT_POWER: its power cables;
// IRQ_ISSUE: its interrupts; NO_PERMISSION: the probe may not open it,
// and its health is unknown).
func unreadGPUFindings(s *Snapshot) []Finding {
	var out []Finding
	for _, e := range UnreadGPUs(s) {
		where := Entity{"GPU", strconv.Itoa(*e.GPU)}
		ev := []string{e.Field + " (nvmlDeviceGetHandleByIndex): " + e.Code + ": " + e.Message}
		switch e.Code {
		case "GPU_IS_LOST", "RESET_REQUIRED":
			continue
		case "HUNG":
			// The GPU's handle never came: the GPU hung before anything
			// of it was read.
			out = append(out, Finding{Check: "nvml-hung", Fatal: true, Action: ActionReboot, Entities: []Entity{where},
				Message: fmt.Sprintf("GPU%d: NVML hung: %s", *e.GPU, e.Message), Evidence: ev})
		case "NO_PERMISSION":
			out = append(out, Finding{Check: "gpu-unreadable", Unknown: true, Action: ActionNone, Entities: []Entity{where},
				Message: fmt.Sprintf("GPU%d could not be opened (NO_PERMISSION): its health is unknown (run the probe as root, or check /dev/nvidia%d's permissions)", *e.GPU, *e.GPU), Evidence: ev})
		default:
			f := Finding{Check: "gpu-unreadable", Fatal: true, Action: ActionReboot, Entities: []Entity{where}, Codes: []string{"NVML_ERROR_" + e.Code},
				Message: fmt.Sprintf("GPU%d: NVML cannot use it (%s): drain the node and reboot it", *e.GPU, e.Code), Evidence: ev}
			if e.Code == "INSUFFICIENT_POWER" {
				f.Action, f.Message = ActionContactSupport, fmt.Sprintf("GPU%d: NVML cannot use it (INSUFFICIENT_POWER): its power cables are not attached or deliver too little", *e.GPU)
			}
			out = append(out, f)
		}
	}
	return out
}

// NVMLCount is how many GPUs NVML counted (nvmlDeviceGetCount): those
// read and those whose handle it refused.
func NVMLCount(s *Snapshot) int { return len(s.GPUs) + len(UnreadGPUs(s)) }

// UnreadGPUs are the errors of the GPUs NVML counted and gave no handle
// for (nvmlDeviceGetHandleByIndex refused, lost or hung): their GPUs are
// not in s.GPUs, and no check of every GPU is made while one is.
func UnreadGPUs(s *Snapshot) []FieldError {
	var out []FieldError
	for _, e := range s.Errors {
		if e.GPU != nil && e.Field == fmt.Sprintf("gpu[%d]", *e.GPU) {
			out = append(out, e)
		}
	}
	return out
}

// GPUCountRead reports whether NVML's device count was read: a count of
// zero means no GPU only then.
func GPUCountRead(s *Snapshot) bool {
	if HungHost(s) != nil {
		return false
	}
	for _, e := range s.Errors {
		if e.Field == "device_count" {
			return false
		}
	}
	return true
}

// nvmlSaysFindings are what NVML's own returns say a GPU needs, read as
// a snapshot (a fault that happened while nothing watched is still
// found): GPU_IS_LOST (the GPU stopped answering: the node's reboot) and
// RESET_REQUIRED (the GPU's reset), once a GPU, named with the calls that
// returned it.
func nvmlSaysFindings(s *Snapshot) []Finding {
	type said struct {
		gpu   *int
		code  string
		calls []string
	}
	var order []*said
	byKey := map[string]*said{}
	for _, e := range s.Errors {
		if e.Code != "GPU_IS_LOST" && e.Code != "RESET_REQUIRED" {
			continue
		}
		key := e.Code + "/-"
		if e.GPU != nil {
			key = e.Code + "/" + strconv.Itoa(*e.GPU)
		}
		if byKey[key] == nil {
			byKey[key] = &said{gpu: e.GPU, code: e.Code}
			order = append(order, byKey[key])
		}
		byKey[key].calls = append(byKey[key].calls, e.Field)
	}
	var out []Finding
	for _, w := range order {
		f := Finding{Check: "gpu-lost", Fatal: true, Action: ActionReboot, Codes: []string{"NVML_ERROR_GPU_IS_LOST"},
			Message: "the GPU is lost: NVML returns GPU_IS_LOST (it fell off the bus or hung): drain the node and reboot it"}
		if w.code == "RESET_REQUIRED" {
			f = Finding{Check: "reset-required", Fatal: true, Action: ActionResetGPU, Codes: []string{"NVML_ERROR_RESET_REQUIRED"},
				Message: "the GPU needs a reset: NVML returns RESET_REQUIRED"}
		}
		where := "a GPU"
		if w.gpu != nil {
			where = fmt.Sprintf("GPU%d", *w.gpu)
			if g, ok := gpuByIndex(s, *w.gpu); ok {
				f.Entities = gpuEntities(g)
			} else {
				f.Entities = []Entity{{"GPU", strconv.Itoa(*w.gpu)}}
			}
		}
		f.Message = where + ": " + f.Message
		for _, c := range w.calls {
			f.Evidence = append(f.Evidence, c+": "+w.code)
		}
		out = append(out, f)
	}
	return out
}

// xidFinding is the finding an Xid event makes: fatal when it points at
// the hardware, with NVIDIA's action for it, unknown for a code the
// catalog does not hold.
func xidFinding(s *Snapshot, x XIDEvent) Finding {
	where := x.PCIBusID
	var entities []Entity
	if x.GPU != nil {
		where = fmt.Sprintf("GPU%d", *x.GPU)
	}
	for _, g := range s.GPUs {
		if x.GPU != nil && g.Index == *x.GPU || x.GPU == nil && SamePCI(g.PCIBusID, x.PCIBusID) {
			entities = gpuEntities(g)
		}
	}
	if entities == nil && x.PCIBusID != "" {
		entities = []Entity{{"PCI", x.PCIBusID}}
	}
	if x.NVLink != nil && x.NVLink.Link != nil {
		entities = append(entities, Entity{"NVLINK", strconv.Itoa(*x.NVLink.Link)})
	}
	action := ActionUnknown
	if x.Known {
		action = xidAction(x.Immediate)
		if x.Immediate == "" && x.Hardware {
			action = ActionResetGPU // gpulab's own table: a hardware code NVIDIA's catalog gives no bucket
		} else if x.Immediate == "" {
			action = ActionCheckApp
		}
	}
	kind, code := "Xid", strconv.Itoa(x.Code)
	if x.SXid {
		kind, code, where = "SXid", "SXID_"+code, "NVSwitch "+x.PCIBusID
	}
	ev := fmt.Sprintf("%s %d (%s)", kind, x.Code, x.Source)
	if x.Message != "" {
		ev += ": " + x.Message
	}
	return Finding{Check: "xid", Fatal: x.Hardware, Action: action, Codes: []string{code},
		Message: fmt.Sprintf("%s %d on %s", kind, x.Code, where), Entities: entities, Evidence: []string{ev}}
}

// pairDown is a GPU pair whose NVLink is down, and how the two reach
// each other instead.
type pairDown struct {
	A, B  int
	Level string
}

// nvlinkPairsDown are the GPU pairs whose NVLink is down: in a mesh where
// the GPUs have NVLink peers, the pairs between GPUs with fewer peers than
// the most any GPU has, which are not NVLinked (as the topology runbook
// judges it).
func nvlinkPairsDown(s *Snapshot) []pairDown {
	peers := map[int]int{}
	maxPeers := 0
	for _, l := range s.Topology {
		if strings.HasPrefix(l.Level, "NV") {
			peers[l.A]++
			peers[l.B]++
			maxPeers = max(maxPeers, peers[l.A], peers[l.B])
		}
	}
	if maxPeers == 0 {
		return nil // no NVLink at all: nothing is down
	}
	var out []pairDown
	for _, l := range s.Topology {
		if !strings.HasPrefix(l.Level, "NV") && peers[l.A] < maxPeers && peers[l.B] < maxPeers {
			out = append(out, pairDown{min(l.A, l.B), max(l.A, l.B), l.Level})
		}
	}
	return out
}

// String is how the probe flags the pair: "NVLink GPU0–GPU4 down (SYS)".
func (d pairDown) String() string {
	return fmt.Sprintf("NVLink GPU%d–GPU%d down (%s)", d.A, d.B, d.Level)
}

func gpuByIndex(s *Snapshot, i int) (GPU, bool) {
	for _, g := range s.GPUs {
		if g.Index == i {
			return g, true
		}
	}
	return GPU{}, false
}
