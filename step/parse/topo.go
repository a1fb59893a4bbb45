package parse

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func init() {
	register(Kind{Name: "nvidia-smi-topo", Command: "nvidia-smi topo -m", Parse: func(s string) (any, error) { return ParseTopo(s) },
		Fixtures: []string{"nvidia-smi-topo-m"}})
}

// Topo is `nvidia-smi topo -m`: how GPUs and NICs reach each other.
type Topo struct {
	GPUs []TopoGPU `json:"gpus"`
	NICs []TopoNIC `json:"nics"`
	// Links maps a row device to a column device to the code as printed:
	// X, NV#, PIX, PXB, PHB, NODE, SYS (SOC on old drivers).
	Links map[string]map[string]string `json:"links"`
	// Columns are the device columns in header order.
	Columns []string `json:"columns"`
}

// TopoGPU is a GPU row's affinity columns; nil where N/A or absent.
type TopoGPU struct {
	Name         string  `json:"name"`
	CPUAffinity  *string `json:"cpu_affinity"`
	NUMAAffinity *int    `json:"numa_affinity"`
	GPUNUMAID    *int    `json:"gpu_numa_id"`
}

// TopoNIC is a NIC column; Device is its name in the NIC Legend (NIC0 is
// mlx5_0) or the column name itself on drivers that print device names.
type TopoNIC struct {
	Name   string `json:"name"`
	Device string `json:"device"`
}

var (
	topoCode   = regexp.MustCompile(`^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$`)
	nicLegend  = regexp.MustCompile(`^\s*(NIC\d+)\s*:\s*(\S+)\s*$`)
	attrPrefix = []string{"CPU Affinity", "NUMA Affinity", "GPU NUMA ID"}
)

// ParseTopo reads `nvidia-smi topo -m` in every layout seen: tabs or spaces,
// legacy SOC, device-named NIC columns or NIC0.. with a NIC Legend, with or
// without the CPU Affinity, NUMA Affinity and GPU NUMA ID columns.
func ParseTopo(text string) (*Topo, error) {
	t := &Topo{GPUs: []TopoGPU{}, NICs: []TopoNIC{}, Links: map[string]map[string]string{}, Columns: []string{}}
	var problems errs
	ls := lines(text)
	header, attrs := topoHeader(ls, t)
	if header < 0 {
		return t, errorf(0, "no header line starting with GPU0: not nvidia-smi topo -m output")
	}
	legend := nicLegends(ls)
	for _, c := range t.Columns {
		if !strings.HasPrefix(c, "GPU") {
			t.NICs = append(t.NICs, TopoNIC{Name: c, Device: legendDevice(legend, c)})
		}
	}
	for i := header + 1; i < len(ls); i++ {
		f := strings.Fields(ls[i])
		if len(f) == 0 {
			if len(t.Links) > 0 {
				break // the blank line before the legend
			}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(ls[i]), "Legend") {
			break
		}
		t.addRow(i+1, f, attrs, legend, &problems)
	}
	// Each column the header names has its row: a matrix short of rows
	// was cut (head, a lost connection), and a mesh judged on the rows
	// read would miss the links of the rest.
	var missing []string
	for _, c := range t.Columns {
		if _, ok := t.Links[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		problems.add(0, "the header names %d devices but %d have no row (%s): the output was cut", len(t.Columns), len(missing), strings.Join(missing, ", "))
	}
	return t, problems.err()
}

// topoHeader finds the header line (GPU0 followed by a column name, not a
// link code), sets t.Columns and returns its index and the attribute
// columns; -1 when there is none.
func topoHeader(ls []string, t *Topo) (int, []string) {
	for i, l := range ls {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "GPU0" && !topoCode.MatchString(safeIndex(f, 1)) {
			var attrs []string
			t.Columns, attrs = splitHeader(l)
			return i, attrs
		}
	}
	return -1, nil
}

// nicLegends reads the NIC Legend: NIC0 is mlx5_0.
func nicLegends(ls []string) map[string]string {
	legend := map[string]string{}
	for _, l := range ls {
		if m := nicLegend.FindStringSubmatch(l); m != nil {
			legend[m[1]] = m[2]
		}
	}
	return legend
}

func legendDevice(legend map[string]string, name string) string {
	if d, ok := legend[name]; ok {
		return d
	}
	return name
}

// addRow reads one matrix row (line is its 1-based line number): its link
// codes, one per header column, then a GPU's affinity columns.
func (t *Topo) addRow(line int, f, attrs []string, legend map[string]string, problems *errs) {
	row, codes := f[0], f[1:]
	n := min(len(codes), len(t.Columns))
	links := map[string]string{}
	for j := 0; j < n; j++ {
		if !topoCode.MatchString(codes[j]) {
			problems.add(line, "row %s, column %s: %q is not a link code", row, t.Columns[j], codes[j])
			n = j
			break
		}
		links[t.Columns[j]] = codes[j]
	}
	if n < len(t.Columns) {
		// A row cut short (the output's last line cut mid-row, or a
		// line damaged in the middle): the links it lacks are not
		// missing links, they were never read. The row is not kept,
		// and ParseTopo's check names it as without a row.
		problems.add(line, "row %s has %d link codes for %d columns (truncated or reformatted)", row, n, len(t.Columns))
		return
	}
	t.Links[row] = links
	if strings.HasPrefix(row, "GPU") {
		t.GPUs = append(t.GPUs, topoGPU(row, attrs, codes[n:]))
	} else if _, ok := columnIndex(t.Columns, row); !ok {
		// A NIC row the header does not list (seen in pasted output):
		// keep it, and its device from the legend.
		t.NICs = append(t.NICs, TopoNIC{Name: row, Device: legendDevice(legend, row)})
		problems.add(line, "row %s is not among the header's columns", row)
	}
}

// topoGPU reads a GPU row's affinity columns, in the header's order.
func topoGPU(name string, attrs, vals []string) TopoGPU {
	g := TopoGPU{Name: name}
	for k, a := range attrs {
		if k >= len(vals) {
			break
		}
		switch a {
		case "CPU Affinity":
			g.CPUAffinity = na(vals[k])
		case "NUMA Affinity":
			g.NUMAAffinity = atoiNA(vals[k])
		case "GPU NUMA ID":
			g.GPUNUMAID = atoiNA(vals[k])
		}
	}
	return g
}

// splitHeader separates device columns from the trailing attribute
// columns, whose names hold spaces, in the order printed.
func splitHeader(l string) (cols, attrs []string) {
	first := len(l)
	for _, a := range attrPrefix {
		if i := strings.Index(l, a); i >= 0 {
			attrs = append(attrs, a)
			first = min(first, i)
		}
	}
	sort.Slice(attrs, func(a, b int) bool { return strings.Index(l, attrs[a]) < strings.Index(l, attrs[b]) })
	return strings.Fields(l[:first]), attrs
}

func columnIndex(cols []string, name string) (int, bool) {
	for i, c := range cols {
		if c == name {
			return i, true
		}
	}
	return -1, false
}

func safeIndex(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

func atoiNA(s string) *int {
	v := na(s)
	if v == nil {
		return nil
	}
	n, err := strconv.Atoi(*v)
	if err != nil {
		return nil
	}
	return &n
}
