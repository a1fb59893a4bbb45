package parse

import (
	"encoding/xml"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func init() {
	register(Kind{Name: "nvidia-smi-q", Command: "nvidia-smi -q", Parse: func(s string) (any, error) { return ParseQuery(s) },
		Fixtures: []string{"nvidia-smi-q"}})
	register(Kind{Name: "nvidia-smi-q-xml", Command: "nvidia-smi -q -x", Parse: func(s string) (any, error) { return ParseQueryXML(s) },
		Fixtures: []string{"nvidia-smi-q-x"}})
}

// Query is `nvidia-smi -q` or `-q -x`: the facts both forms carry, in one
// shape, so that the two can be compared (and the probe checked against
// them) field by field.
type Query struct {
	DriverVersion string     `json:"driver_version"`
	CUDAVersion   string     `json:"cuda_version"`
	AttachedGPUs  *int       `json:"attached_gpus"`
	GPUs          []QueryGPU `json:"gpus"`
	// Elided is set when the output was shortened ("[...]").
	Elided bool `json:"elided,omitempty"`
}

// QueryGPU is one GPU's section. Absent or N/A values are nil.
type QueryGPU struct {
	BusID          string         `json:"bus_id"`
	ProductName    string         `json:"product_name,omitempty"`
	UUID           string         `json:"uuid,omitempty"`
	Serial         *string        `json:"serial"`
	Persistence    *string        `json:"persistence_mode"`
	MIGCurrent     *string        `json:"mig_current"`
	MIGPending     *string        `json:"mig_pending"`
	PCIeGenCurrent *int           `json:"pcie_gen_current"`
	PCIeGenMax     *int           `json:"pcie_gen_max"`
	WidthCurrent   *int           `json:"pcie_width_current"`
	WidthMax       *int           `json:"pcie_width_max"`
	MemoryTotalMiB *int           `json:"memory_total_mib"`
	MemoryUsedMiB  *int           `json:"memory_used_mib"`
	TemperatureC   *int           `json:"temperature_c"`
	PowerDrawW     *float64       `json:"power_draw_w"`
	PowerLimitW    *float64       `json:"power_limit_w"`
	ECCCurrent     *string        `json:"ecc_current"`
	RemappedRows   *QueryRemap    `json:"remapped_rows"`
	Processes      []QueryProcess `json:"processes"`
	// Fields holds every key of the section as printed, by path
	// ("ECC Errors/Volatile/DRAM Uncorrectable"), for checks this type does
	// not name.
	Fields map[string]string `json:"fields,omitempty"`
}

// QueryRemap is the Remapped Rows block.
type QueryRemap struct {
	Correctable   *int  `json:"correctable"`
	Uncorrectable *int  `json:"uncorrectable"`
	Pending       *bool `json:"pending"`
	Failure       *bool `json:"failure"`
}

// QueryProcess is one process of a GPU.
type QueryProcess struct {
	PID       *int   `json:"pid"`
	Type      string `json:"type,omitempty"`
	Name      string `json:"name,omitempty"`
	MemoryMiB *int   `json:"memory_mib"`
}

var (
	qKV      = regexp.MustCompile(`^(\s*)([^:]+?)\s*:\s*(.*?)\s*$`)
	qSection = regexp.MustCompile(`^(\s*)(\S.*?)\s*$`)
	qGPU     = regexp.MustCompile(`^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f])\s*$`)
	numPart  = regexp.MustCompile(`^-?[\d.]+`)
)

// ParseQuery reads `nvidia-smi -q`: top-level versions, then one section
// per GPU whose nested keys are read by indentation.
func ParseQuery(text string) (*Query, error) {
	r := &queryReader{q: &Query{GPUs: []QueryGPU{}}}
	for i, l := range lines(text) {
		r.line(i+1, l)
	}
	r.flush()
	r.check()
	return r.q, r.problems.err()
}

// queryReader is ParseQuery's state between lines.
type queryReader struct {
	q        *Query
	problems errs
	g        *QueryGPU           // the GPU section being read
	stack    []string            // section path by indent level
	procs    []map[string]string // the current GPU's processes, as read
	order    [][]string          // each GPU's keys, in the order printed
}

func (r *queryReader) line(n int, l string) {
	t := strings.TrimSpace(l)
	if t == "" || strings.HasPrefix(t, "====") {
		return
	}
	if t == "[...]" {
		r.q.Elided = true
		return
	}
	if m := qGPU.FindStringSubmatch(l); m != nil {
		r.flush()
		r.q.GPUs = append(r.q.GPUs, QueryGPU{BusID: m[1], Processes: []QueryProcess{}, Fields: map[string]string{}})
		r.g = &r.q.GPUs[len(r.q.GPUs)-1]
		r.order = append(r.order, nil)
		r.stack = nil
		return
	}
	if r.g == nil {
		r.top(n, l, t)
		return
	}
	level := (len(l) - len(strings.TrimLeft(l, " \t"))) / 4
	if level < 1 {
		r.problems.add(n, "line not indented under its GPU: %q", t)
		return
	}
	if len(r.stack) > level-1 {
		r.stack = r.stack[:level-1]
	}
	if m := qKV.FindStringSubmatch(l); m != nil && strings.Contains(t, ":") {
		r.field(m[2], m[3])
		return
	}
	if m := qSection.FindStringSubmatch(l); m != nil {
		for len(r.stack) < level-1 {
			r.stack = append(r.stack, "?")
		}
		r.stack = append(r.stack[:level-1], m[2])
	}
}

// top reads a line before any GPU section: the versions.
func (r *queryReader) top(n int, l, t string) {
	m := qKV.FindStringSubmatch(l)
	if m == nil {
		r.problems.add(n, "line before any GPU section not understood: %q", t)
		return
	}
	switch m[2] {
	case "Driver Version":
		r.q.DriverVersion = m[3]
	case "CUDA Version":
		r.q.CUDAVersion = m[3]
	case "Attached GPUs":
		r.q.AttachedGPUs = intNA(m[3])
	}
}

// field keeps a key of the current GPU under its section path; under
// Processes, a GPU instance ID or a second Process ID starts a process.
func (r *queryReader) field(name, value string) {
	key := strings.Join(append(append([]string{}, r.stack...), name), "/")
	r.g.Fields[key] = value
	r.order[len(r.order)-1] = append(r.order[len(r.order)-1], key)
	if len(r.stack) == 0 || r.stack[0] != "Processes" {
		return
	}
	if name == "GPU instance ID" || (name == "Process ID" && (len(r.procs) == 0 || r.procs[len(r.procs)-1]["Process ID"] != "")) {
		r.procs = append(r.procs, map[string]string{})
	}
	if len(r.procs) > 0 {
		r.procs[len(r.procs)-1][name] = value
	}
}

// flush ends the current GPU's section.
func (r *queryReader) flush() {
	if r.g == nil {
		return
	}
	for _, p := range r.procs {
		r.g.Processes = append(r.g.Processes, processFrom(p))
	}
	r.procs = nil
	fill(r.g)
}

// check names an output that is not nvidia-smi -q or was cut.
func (r *queryReader) check() {
	q := r.q
	if len(q.GPUs) == 0 && q.DriverVersion == "" {
		r.problems.add(0, "no GPU section and no driver version: not nvidia-smi -q output")
	}
	if q.AttachedGPUs != nil && *q.AttachedGPUs != len(q.GPUs) && !q.Elided {
		r.problems.add(0, "%d GPUs attached but %d sections: the output is truncated", *q.AttachedGPUs, len(q.GPUs))
	}
	if !q.Elided {
		if missing := cutTail(q.GPUs, r.order); len(missing) > 0 {
			last := q.GPUs[len(q.GPUs)-1]
			r.problems.add(0, "GPU %s's section ends before %d fields every other GPU prints (from %s on): the output was cut", last.BusID, len(missing), missing[0])
		}
	}
}

// cutTail is what the last GPU's section lacks at its end that every
// other GPU's prints, in the order printed: an output cut inside its last
// section (the ECC counters of GPU 8 never printed) whose counts would
// otherwise read as all there. A gap in the middle is a GPU that prints
// differently, not a cut; the process list differs from GPU to GPU and is
// not compared.
func cutTail(gpus []QueryGPU, order [][]string) []string {
	if len(gpus) < 2 {
		return nil
	}
	last := gpus[len(gpus)-1].Fields
	var tail []string
	for _, k := range order[0] {
		lacks := func(g QueryGPU) bool { _, ok := g.Fields[k]; return !ok }
		if strings.HasPrefix(k, "Processes") || slices.ContainsFunc(gpus[1:len(gpus)-1], lacks) {
			continue // not printed by every other GPU
		}
		if _, ok := last[k]; ok {
			tail = tail[:0] // present after a gap: the gap was no cut
			continue
		}
		tail = append(tail, k)
	}
	return tail
}

func processFrom(p map[string]string) QueryProcess {
	return QueryProcess{PID: intNA(p["Process ID"]), Type: p["Type"], Name: p["Name"], MemoryMiB: intNA(firstNum(p["Used GPU Memory"]))}
}

// fill sets the typed fields from the section's keys.
func fill(g *QueryGPU) {
	f := g.Fields
	get := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := f[k]; ok {
				return v
			}
		}
		return ""
	}
	g.ProductName = get("Product Name")
	g.UUID = get("GPU UUID")
	g.Serial = na(get("Serial Number"))
	g.Persistence = na(get("Persistence Mode"))
	g.MIGCurrent, g.MIGPending = na(get("MIG Mode/Current")), na(get("MIG Mode/Pending"))
	g.PCIeGenCurrent = intNA(get("PCI/GPU Link Info/PCIe Generation/Current"))
	g.PCIeGenMax = intNA(get("PCI/GPU Link Info/PCIe Generation/Max"))
	g.WidthCurrent = intNA(strings.TrimSuffix(get("PCI/GPU Link Info/Link Width/Current"), "x"))
	g.WidthMax = intNA(strings.TrimSuffix(get("PCI/GPU Link Info/Link Width/Max"), "x"))
	g.MemoryTotalMiB = intNA(firstNum(get("FB Memory Usage/Total")))
	g.MemoryUsedMiB = intNA(firstNum(get("FB Memory Usage/Used")))
	g.TemperatureC = intNA(firstNum(get("Temperature/GPU Current Temp")))
	g.PowerDrawW = floatNA(firstNum(get("GPU Power Readings/Power Draw", "Power Readings/Power Draw", "GPU Power Readings/Average Power Draw")))
	g.PowerLimitW = floatNA(firstNum(get("GPU Power Readings/Current Power Limit", "Power Readings/Power Limit", "Power Readings/Enforced Power Limit")))
	g.ECCCurrent = na(get("ECC Mode/Current"))
	if _, ok := f["Remapped Rows/Pending"]; ok {
		g.RemappedRows = &QueryRemap{Correctable: intNA(get("Remapped Rows/Correctable Error")), Uncorrectable: intNA(get("Remapped Rows/Uncorrectable Error")),
			Pending: yesNo(get("Remapped Rows/Pending")), Failure: yesNo(get("Remapped Rows/Remapping Failure Occurred"))}
	}
}

func firstNum(s string) string {
	return numPart.FindString(strings.TrimSpace(s))
}

func floatNA(s string) *float64 {
	if s == "" {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil
	}
	return &v
}

func yesNo(s string) *bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "yes":
		b := true
		return &b
	case "no":
		b := false
		return &b
	}
	return nil
}

// xmlLog is the part of nvidia-smi -q -x that Query carries.
type xmlLog struct {
	DriverVersion string   `xml:"driver_version"`
	CUDAVersion   string   `xml:"cuda_version"`
	AttachedGPUs  string   `xml:"attached_gpus"`
	GPUs          []xmlGPU `xml:"gpu"`
}

type xmlGPU struct {
	ID          string `xml:"id,attr"`
	ProductName string `xml:"product_name"`
	UUID        string `xml:"uuid"`
	Serial      string `xml:"serial"`
	Persistence string `xml:"persistence_mode"`
	MIG         struct {
		Current string `xml:"current_mig"`
		Pending string `xml:"pending_mig"`
	} `xml:"mig_mode"`
	PCI struct {
		BusID string `xml:"pci_bus_id"`
		Link  struct {
			Gen struct {
				Max     string `xml:"max_link_gen"`
				Current string `xml:"current_link_gen"`
			} `xml:"pcie_gen"`
			Width struct {
				Max     string `xml:"max_link_width"`
				Current string `xml:"current_link_width"`
			} `xml:"link_widths"`
		} `xml:"pci_gpu_link_info"`
	} `xml:"pci"`
	FB struct {
		Total string `xml:"total"`
		Used  string `xml:"used"`
	} `xml:"fb_memory_usage"`
	Temp struct {
		GPU string `xml:"gpu_temp"`
	} `xml:"temperature"`
	Power    xmlPower `xml:"power_readings"`
	GPUPower xmlPower `xml:"gpu_power_readings"`
	ECC      struct {
		Current string `xml:"current_ecc"`
	} `xml:"ecc_mode"`
	Remap *struct {
		Correctable   string `xml:"remapped_row_corr"`
		Uncorrectable string `xml:"remapped_row_unc"`
		Pending       string `xml:"remapped_row_pending"`
		Failure       string `xml:"remapped_row_failure"`
	} `xml:"remapped_rows"`
	Processes []struct {
		PID  string `xml:"pid"`
		Type string `xml:"type"`
		Name string `xml:"process_name"`
		Mem  string `xml:"used_memory"`
	} `xml:"processes>process_info"`
}

type xmlPower struct {
	Draw      string `xml:"power_draw"`
	AvgDraw   string `xml:"average_power_draw"`
	Limit     string `xml:"power_limit"`
	CurLimit  string `xml:"current_power_limit"`
	Enforced  string `xml:"enforced_power_limit"`
	StateText string `xml:"power_state"`
}

// ParseQueryXML reads `nvidia-smi -q -x` (DTD v10 to v13).
func ParseQueryXML(text string) (*Query, error) {
	q := &Query{GPUs: []QueryGPU{}}
	var log xmlLog
	dec := xml.NewDecoder(strings.NewReader(text))
	dec.Strict = false
	if err := dec.Decode(&log); err != nil {
		line := 0
		var se *xml.SyntaxError
		if ok := asSyntax(err, &se); ok {
			line = se.Line
		}
		return q, errorf(line, "not nvidia-smi -q -x XML: %v", err)
	}
	q.DriverVersion, q.CUDAVersion, q.AttachedGPUs = log.DriverVersion, log.CUDAVersion, intNA(log.AttachedGPUs)
	for _, x := range log.GPUs {
		g := QueryGPU{BusID: x.ID, ProductName: x.ProductName, UUID: x.UUID, Serial: na(x.Serial), Persistence: na(x.Persistence),
			MIGCurrent: na(x.MIG.Current), MIGPending: na(x.MIG.Pending),
			PCIeGenCurrent: intNA(x.PCI.Link.Gen.Current), PCIeGenMax: intNA(x.PCI.Link.Gen.Max),
			WidthCurrent: intNA(strings.TrimSuffix(x.PCI.Link.Width.Current, "x")), WidthMax: intNA(strings.TrimSuffix(x.PCI.Link.Width.Max, "x")),
			MemoryTotalMiB: intNA(firstNum(x.FB.Total)), MemoryUsedMiB: intNA(firstNum(x.FB.Used)),
			TemperatureC: intNA(firstNum(x.Temp.GPU)), ECCCurrent: na(x.ECC.Current), Processes: []QueryProcess{}}
		if g.BusID == "" {
			g.BusID = x.PCI.BusID
		}
		for _, p := range []xmlPower{x.GPUPower, x.Power} {
			if g.PowerDrawW == nil {
				g.PowerDrawW = floatNA(firstNum(firstOf(p.Draw, p.AvgDraw)))
			}
			if g.PowerLimitW == nil {
				g.PowerLimitW = floatNA(firstNum(firstOf(p.CurLimit, p.Limit, p.Enforced)))
			}
		}
		if r := x.Remap; r != nil && r.Pending != "" && !strings.EqualFold(r.Pending, "N/A") {
			g.RemappedRows = &QueryRemap{Correctable: intNA(r.Correctable), Uncorrectable: intNA(r.Uncorrectable), Pending: yesNo(r.Pending), Failure: yesNo(r.Failure)}
		}
		for _, p := range x.Processes {
			g.Processes = append(g.Processes, QueryProcess{PID: intNA(p.PID), Type: p.Type, Name: p.Name, MemoryMiB: intNA(firstNum(p.Mem))})
		}
		q.GPUs = append(q.GPUs, g)
	}
	var problems errs
	if len(q.GPUs) == 0 {
		problems.add(0, "no <gpu> element")
	}
	return q, problems.err()
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" && !strings.EqualFold(v, "N/A") {
			return v
		}
	}
	return ""
}

func asSyntax(err error, target **xml.SyntaxError) bool {
	se, ok := err.(*xml.SyntaxError)
	if ok {
		*target = se
	}
	return ok
}
