package parse

import (
	"regexp"
	"strconv"
	"strings"
)

func init() {
	register(Kind{Name: "nvidia-smi", Command: "nvidia-smi", Parse: func(s string) (any, error) { return ParseSMI(s) },
		Fixtures: []string{"nvidia-smi"}})
	register(Kind{Name: "nvidia-smi-L", Command: "nvidia-smi -L", Parse: func(s string) (any, error) { return ParseSMIList(s) },
		Fixtures: []string{"nvidia-smi-L"}})
}

// SMI is nvidia-smi's default table.
type SMI struct {
	NVIDIASMIVersion string       `json:"nvidia_smi_version,omitempty"`
	DriverVersion    string       `json:"driver_version"`
	CUDAVersion      string       `json:"cuda_version"`
	GPUs             []SMIGPU     `json:"gpus"`
	MIGDevices       []SMIMIG     `json:"mig_devices"`
	Processes        []SMIProcess `json:"processes"`
}

// SMIGPU is one GPU's block. Numbers are nil where the table says N/A.
type SMIGPU struct {
	Index              int     `json:"index"`
	Name               string  `json:"name"`
	Persistence        string  `json:"persistence_mode,omitempty"`
	BusID              string  `json:"bus_id"`
	DisplayActive      string  `json:"display_active,omitempty"`
	ECCUncorrected     *string `json:"ecc_uncorrected"`
	FanPercent         *int    `json:"fan_percent"`
	TemperatureC       *int    `json:"temperature_c"`
	Perf               string  `json:"perf,omitempty"`
	PowerDrawW         *int    `json:"power_draw_w"`
	PowerCapW          *int    `json:"power_cap_w"`
	MemoryUsedMiB      *int    `json:"memory_used_mib"`
	MemoryTotalMiB     *int    `json:"memory_total_mib"`
	UtilizationPercent *int    `json:"utilization_percent"`
	ComputeMode        string  `json:"compute_mode,omitempty"`
	MIGMode            *string `json:"mig_mode"`
	Line               int     `json:"line"`
}

// SMIMIG is a row of the MIG devices table.
type SMIMIG struct {
	GPU            int  `json:"gpu"`
	GI             int  `json:"gi"`
	CI             int  `json:"ci"`
	Device         int  `json:"device"`
	MemoryUsedMiB  *int `json:"memory_used_mib"`
	MemoryTotalMiB *int `json:"memory_total_mib"`
	SM             *int `json:"sm"`
}

// SMIProcess is a row of the Processes table.
type SMIProcess struct {
	GPU       int    `json:"gpu"`
	GI        *int   `json:"gi"`
	CI        *int   `json:"ci"`
	PID       int    `json:"pid"`
	Type      string `json:"type"`
	Name      string `json:"name"`
	MemoryMiB *int   `json:"memory_mib"`
}

var (
	smiHeader = regexp.MustCompile(`NVIDIA-SMI\s+(\S+)\s+Driver Version:\s+(\S+)\s+CUDA Version:\s+(\S+)`)
	mibPair   = regexp.MustCompile(`(\d+)MiB\s*/\s*(\d+)MiB`)
	watts     = regexp.MustCompile(`^(\d+|N/A)W?$`)
)

// ParseSMI reads nvidia-smi's table in its 79-, 87-, 89- and 91-column
// layouts, with or without the MIG devices and Processes tables. Cells are
// found between '|' separators, not at fixed columns.
func ParseSMI(text string) (*SMI, error) {
	s := &SMI{GPUs: []SMIGPU{}, MIGDevices: []SMIMIG{}, Processes: []SMIProcess{}}
	var problems errs
	ls := lines(text)
	section := ""    // "gpus", "mig", "procs"
	inBody := false  // past the ==== line of the current section
	blockLine := 0   // line within a GPU block
	closed := true   // the last table was closed by a border
	procGICI := true // the Processes header has GI/CI columns
	sawProcs := false
	var gpu *SMIGPU
	for i, l := range ls {
		n := i + 1
		t := strings.TrimSpace(l)
		if m := smiHeader.FindStringSubmatch(l); m != nil {
			s.NVIDIASMIVersion, s.DriverVersion, s.CUDAVersion = m[1], m[2], m[3]
			continue
		}
		switch {
		case strings.Contains(t, "Persistence-M") || (strings.Contains(t, "Bus-Id") && section != "gpus"):
			section, inBody, closed = "gpus", false, false
			continue
		case strings.Contains(t, "MIG devices:"):
			section, inBody, closed = "mig", false, false
			continue
		case strings.HasPrefix(t, "| Processes:") || t == "Processes:":
			section, inBody, closed, sawProcs = "procs", false, false, true
			continue
		case strings.HasPrefix(t, "|=") || strings.HasPrefix(t, "=") || strings.HasPrefix(t, "+="):
			inBody = true
			continue
		}
		if section == "procs" && !inBody && strings.Contains(t, "PID") {
			procGICI = strings.Contains(t, "GI") && strings.Contains(t, "CI")
		}
		if !inBody {
			continue
		}
		if strings.HasPrefix(t, "+-") || strings.HasPrefix(t, "|-") {
			// A border ends a GPU block or a table; a full-width one (no
			// inner '+') ends the table.
			blockLine, gpu, closed = 0, nil, true
			if strings.HasPrefix(t, "+-") && !strings.Contains(t[1:len(t)-1], "+") {
				inBody = false
			}
			continue
		}
		if !strings.HasPrefix(t, "|") {
			continue // blank, or not a row
		}
		cells := splitCells(t)
		switch section {
		case "gpus":
			blockLine++
			closed = false
			gpu = s.gpuLine(gpu, cells, blockLine, n, &problems)
		case "mig":
			if m := s.migLine(cells); !m {
				if strings.TrimSpace(cells[0]) != "" {
					problems.add(n, "MIG devices row not understood: %q", t)
				}
			}
		case "procs":
			s.procRow(t, cells, procGICI, n, &problems)
		}
	}
	s.complete(ls, closed, section, sawProcs, &problems)
	return s, problems.err()
}

// procRow reads a row of the Processes table.
func (s *SMI) procRow(t string, cells []string, gici bool, n int, problems *errs) {
	if strings.Contains(t, "No running processes found") {
		return
	}
	if p, ok := procLine(cells, gici); ok {
		s.Processes = append(s.Processes, p)
	} else if strings.TrimSpace(strings.Join(cells, "")) != "" {
		problems.add(n, "process row not understood: %q", t)
	}
}

// complete names an output that is not nvidia-smi's table or was cut: a
// table left open (closed is false, in section), no GPU table, or no
// Processes table after it.
func (s *SMI) complete(ls []string, closed bool, section string, sawProcs bool, problems *errs) {
	last := len(ls)
	for last > 1 && strings.TrimSpace(ls[last-1]) == "" {
		last--
	}
	switch {
	case !closed:
		problems.add(last, "the %s table has no closing border: the output is truncated", sectionName(section))
	case len(s.GPUs) == 0 && len(s.MIGDevices) == 0 && len(s.Processes) == 0 && !sawProcs:
		problems.add(0, "no GPU, MIG or process table found: not nvidia-smi output")
	case len(s.GPUs) == 0:
		problems.add(0, "no GPU table: partial output")
	case !sawProcs:
		problems.add(last, "no Processes table after the GPU table: the output is truncated")
	}
}

func sectionName(s string) string {
	return map[string]string{"gpus": "GPU", "mig": "MIG devices", "procs": "Processes", "": "GPU"}[s]
}

// splitCells returns the text between '|' separators of a table row.
func splitCells(t string) []string {
	t = strings.TrimPrefix(t, "|")
	t = strings.TrimSuffix(t, "|")
	return strings.Split(t, "|")
}

var gpuFirst = regexp.MustCompile(`^\s*(\d+)\s+(.*?)\s+(On|Off|N/A)\s*$`)

func (s *SMI) gpuLine(gpu *SMIGPU, cells []string, k, n int, problems *errs) *SMIGPU {
	if len(cells) < 3 {
		problems.add(n, "GPU table row has %d cells, want 3", len(cells))
		return gpu
	}
	c0, c1, c2 := cells[0], strings.Fields(cells[1]), strings.Fields(cells[2])
	switch k {
	case 1:
		m := gpuFirst.FindStringSubmatch(c0)
		if m == nil {
			problems.add(n, "GPU line not understood: %q", strings.TrimSpace(c0))
			return nil
		}
		idx, _ := strconv.Atoi(m[1])
		g := SMIGPU{Index: idx, Name: m[2], Persistence: m[3], Line: n}
		if len(c1) > 0 {
			g.BusID = c1[0]
		}
		if len(c1) > 1 {
			g.DisplayActive = c1[1]
		}
		g.ECCUncorrected = na(strings.Join(c2, " "))
		s.GPUs = append(s.GPUs, g)
		return &s.GPUs[len(s.GPUs)-1]
	case 2:
		if gpu == nil {
			return nil
		}
		f := strings.Fields(c0)
		// Fan Temp Perf Pwr:Usage / Cap
		if len(f) >= 3 {
			gpu.FanPercent = intNA(strings.TrimSuffix(f[0], "%"))
			gpu.TemperatureC = intNA(strings.TrimSuffix(f[1], "C"))
			gpu.Perf = f[2]
		}
		if slash := indexOf(f, "/"); slash > 0 && slash+1 < len(f) {
			gpu.PowerDrawW = intNA(strings.TrimSuffix(f[slash-1], "W"))
			gpu.PowerCapW = intNA(strings.TrimSuffix(f[slash+1], "W"))
		}
		if m := mibPair.FindStringSubmatch(cells[1]); m != nil {
			gpu.MemoryUsedMiB, gpu.MemoryTotalMiB = atoiPtr(m[1]), atoiPtr(m[2])
		}
		if len(c2) >= 1 {
			gpu.UtilizationPercent = intNA(strings.TrimSuffix(c2[0], "%"))
		}
		if len(c2) >= 2 {
			gpu.ComputeMode = c2[len(c2)-1]
		}
	case 3:
		if gpu != nil {
			gpu.MIGMode = na(strings.Join(c2, " "))
		}
	}
	return gpu
}

func (s *SMI) migLine(cells []string) bool {
	f := strings.Fields(cells[0])
	if len(f) != 4 {
		return false
	}
	var v [4]int
	for i := range 4 {
		n, err := strconv.Atoi(f[i])
		if err != nil {
			return false
		}
		v[i] = n
	}
	m := SMIMIG{GPU: v[0], GI: v[1], CI: v[2], Device: v[3]}
	if len(cells) > 1 {
		if p := mibPair.FindStringSubmatch(cells[1]); p != nil {
			m.MemoryUsedMiB, m.MemoryTotalMiB = atoiPtr(p[1]), atoiPtr(p[2])
		}
	}
	if len(cells) > 2 {
		if sm := strings.Fields(cells[2]); len(sm) > 0 {
			m.SM = intNA(sm[0])
		}
	}
	s.MIGDevices = append(s.MIGDevices, m)
	return true
}

func procLine(cells []string, gici bool) (SMIProcess, bool) {
	f := strings.Fields(strings.Join(cells, " "))
	need := 5
	if gici {
		need = 7
	}
	if len(f) < need {
		return SMIProcess{}, false
	}
	var p SMIProcess
	var err error
	if p.GPU, err = strconv.Atoi(f[0]); err != nil {
		return p, false
	}
	k := 1
	if gici {
		p.GI, p.CI = intNA(f[1]), intNA(f[2])
		k = 3
	}
	if p.PID, err = strconv.Atoi(f[k]); err != nil {
		return p, false
	}
	p.Type = f[k+1]
	last := f[len(f)-1]
	p.MemoryMiB = intNA(strings.TrimSuffix(last, "MiB"))
	p.Name = strings.Join(f[k+2:len(f)-1], " ")
	return p, true
}

func indexOf(f []string, s string) int {
	for i, v := range f {
		if v == s {
			return i
		}
	}
	return -1
}

func intNA(s string) *int {
	if s == "" || strings.EqualFold(s, "N/A") || s == "ERR!" {
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil
	}
	return &n
}

func atoiPtr(s string) *int { return intNA(s) }

// SMIList is `nvidia-smi -L`.
type SMIList struct {
	GPUs []ListGPU `json:"gpus"`
}

// ListGPU is a GPU line and its MIG devices.
type ListGPU struct {
	Index      int       `json:"index"`
	Name       string    `json:"name"`
	UUID       string    `json:"uuid"`
	MIGDevices []ListMIG `json:"mig_devices"`
}

// ListMIG is a MIG device line.
type ListMIG struct {
	Profile string `json:"profile"`
	Device  int    `json:"device"`
	UUID    string `json:"uuid"`
}

var (
	listGPU = regexp.MustCompile(`^GPU (\d+): (.+?) \(UUID: (\S+)\)\s*$`)
	listMIG = regexp.MustCompile(`^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (\S+)\)\s*$`)
)

// ParseSMIList reads `nvidia-smi -L`, MIG devices nested under their GPU.
func ParseSMIList(text string) (*SMIList, error) {
	out := &SMIList{GPUs: []ListGPU{}}
	var problems errs
	for i, l := range lines(text) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if m := listGPU.FindStringSubmatch(l); m != nil {
			idx, _ := strconv.Atoi(m[1])
			out.GPUs = append(out.GPUs, ListGPU{Index: idx, Name: m[2], UUID: m[3], MIGDevices: []ListMIG{}})
			continue
		}
		if m := listMIG.FindStringSubmatch(l); m != nil {
			if len(out.GPUs) == 0 {
				problems.add(i+1, "MIG device before any GPU line")
				continue
			}
			d, _ := strconv.Atoi(m[2])
			g := &out.GPUs[len(out.GPUs)-1]
			g.MIGDevices = append(g.MIGDevices, ListMIG{Profile: m[1], Device: d, UUID: m[3]})
			continue
		}
		problems.add(i+1, "line not understood: %q", strings.TrimSpace(l))
	}
	if len(out.GPUs) == 0 && len(problems) == 0 {
		problems.add(0, "no GPU line: not nvidia-smi -L output")
	}
	return out, problems.err()
}
