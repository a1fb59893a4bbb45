package dgx

import (
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/sim/spec"
)

// Answers of nvidia-smi mig without a table. The first is the one the
// INDEX of testdata/fixtures names for nvidia-smi-mig-lgip/
// a100-pcie-40gb-mig-disabled-nodevices.txt (the file itself is mangled);
// the second is recorded in nvidia-smi-mig-lgi/a30-no-gpu-instances-found.txt.
const (
	migNone      = "No MIG-enabled devices found.\n"
	migNoGIFound = "No GPU instances found: Not Found\n"
)

// smiMIG is nvidia-smi mig -lgi, -lgip, -lci, -lcip (with -i GPUs).
func smiMIG(h *Host, t *term, a flags) int {
	gpus, ok := h.smiSelect(a)
	if !ok {
		t.print("No devices were found\n")
		return smiNotFound
	}
	var on []int
	for _, g := range gpus {
		if h.Faults.MIGOn(g) {
			on = append(on, g)
		}
	}
	var render func(*Host, []int) string
	switch {
	case a.has("-lgi", "--list-gpu-instances"):
		render = (*Host).migListGI
	case a.has("-lgip", "--list-gpu-instance-profiles"):
		render = (*Host).migListGIP
	case a.has("-lci", "--list-compute-instances"):
		render = (*Host).migListCI
	case a.has("-lcip", "--list-compute-instance-profiles"):
		render = (*Host).migListCIP
	default:
		t.print(smiInvalid)
		return smiInvalidArg
	}
	if len(on) == 0 {
		t.print(migNone)
		return smiNotFound
	}
	out := render(h, on)
	if out == "" {
		t.print(migNoGIFound)
		return smiNotFound
	}
	t.print(out)
	return 0
}

// migTable frames rows as nvidia-smi mig does: a border, the heading, a
// ==== line, each record followed by a border.
func migTable(heading []string, records []string) string {
	if len(records) == 0 {
		return ""
	}
	width := len(heading[0])
	border := "+" + strings.Repeat("-", width-2) + "+\n"
	var b strings.Builder
	b.WriteString(border)
	for _, h := range heading {
		b.WriteString(h + "\n")
	}
	b.WriteString("|" + strings.Repeat("=", width-2) + "|\n")
	for _, r := range records {
		b.WriteString(r + border)
	}
	return b.String()
}

// migListGI is -lgi in driver 535's layout, as recorded in
// testdata/fixtures/nvidia-smi-mig-lgi/a30-drv535-3-instances-1g-1g-2g.txt.
func (h *Host) migListGI(gpus []int) string {
	var recs []string
	for _, g := range gpus {
		for _, gi := range h.Faults.Instances(g) {
			recs = append(recs, lgiRow(g, "MIG "+gi.Profile.Name, gi.Profile.ID, gi.ID, gi.Start, gi.Size))
		}
	}
	return migTable([]string{
		"| GPU instances:                                        |",
		"| GPU   Name             Profile  Instance   Placement  |",
		"|                          ID       ID       Start:Size |"}, recs)
}

func lgiRow(gpu int, name string, profile, id, start, size int) string {
	return fmt.Sprintf("|%4d  %-16s%6d%9d%11d:%-6d|\n", gpu, name, profile, id, start, size)
}

// migListGIP is -lgip, as recorded for this GPU in
// testdata/fixtures/nvidia-smi-mig-lgip/a100-40gb-drv450-all-free.txt
// (the H100 recording of a newer driver has the same layout). Free counts
// what the GPU instances already made leave room for.
func (h *Host) migListGIP(gpus []int) string {
	var recs []string
	for _, g := range gpus {
		for _, p := range spec.Profiles {
			recs = append(recs, lgipRows(g, p, freeInstances(h.Faults.MIG[g], p)))
		}
	}
	return migTable([]string{
		"| GPU instance profiles:                                                      |",
		"| GPU   Name             ID    Instances   Memory     P2P    SM    DEC   ENC  |",
		"|                              Free/Total   GiB              CE    JPEG  OFA  |"}, recs)
}

func lgipRows(gpu int, p spec.Profile, free int) string {
	mem := fmt.Sprintf("%.2f", float64(p.MemoryMiB)/1024)
	return fmt.Sprintf("|%4d  %-16s%4d%6d/%-9d%-11s%-7s%2d%6d%6d   |\n", gpu, "MIG "+p.Name, p.ID, free, p.Count, mem, "No", p.SMs, p.DEC, p.ENC) +
		fmt.Sprintf("|%62d%6d%6d   |\n", p.CE, p.JPEG, p.OFA)
}

// freeInstances is how many more instances of p fit beside the layout.
func freeInstances(layout []string, p spec.Profile) int {
	n := 0
	for n < p.Count {
		next := append(append([]string{}, layout...), p.Name)
		for k := 0; k < n; k++ {
			next = append(next, p.Name)
		}
		if _, err := spec.PlaceMIG(next); err != nil {
			break
		}
		n++
	}
	return n
}

// migListCI is -lci, as recorded in
// testdata/fixtures/nvidia-smi-mig-lci/a100-40gb-3ci-1g-2g-3g.txt: one
// compute instance spanning each GPU instance.
func (h *Host) migListCI(gpus []int) string {
	var recs []string
	for _, g := range gpus {
		for _, gi := range h.Faults.Instances(g) {
			recs = append(recs, lciRow(g, gi.ID, "MIG "+gi.Profile.Name, gi.Profile.CIIndex, 0, 0, gi.Profile.Slices))
		}
	}
	return migTable([]string{
		"| Compute instances:                                                 |",
		"| GPU     GPU       Name             Profile   Instance   Placement  |",
		"|       Instance                       ID        ID       Start:Size |",
		"|         ID                                                         |"}, recs)
}

func lciRow(gpu, gi int, name string, profile, id, start, size int) string {
	return fmt.Sprintf("|%4d%7d       %-16s%6d%10d%11d:%-6d|\n", gpu, gi, name, profile, id, start, size)
}

// ciProfile is a compute instance profile of a GPU instance.
type ciProfile struct {
	name              string
	id, slices, total int
}

// ciProfiles are the compute instance profiles a GPU instance of p
// offers: one per slice count that divides into it (A100 offers 1, 2, 3,
// 4 and 7 slices), named "Nc.<GI>" below the full size.
func ciProfiles(p spec.Profile) []ciProfile {
	var out []ciProfile
	for id, k := range []int{1, 2, 3, 4, 7} {
		if k > p.Slices || (p.Slices == 4 && k == 3) {
			continue
		}
		name := p.Name
		if k < p.Slices {
			name = fmt.Sprintf("%dc.%s", k, p.Name)
		}
		out = append(out, ciProfile{name: name, id: id, slices: k, total: p.Slices / k})
	}
	return out
}

// migListCIP is -lcip in driver 535's layout, as recorded in
// testdata/fixtures/nvidia-smi-mig-lcip/a30-drv535-gi2-1c.2g.12gb-and-2g.12gb.txt:
// the full-size profile is the default ('*'); the compute instance that
// spans each GPU instance leaves no room (Free 0).
func (h *Host) migListCIP(gpus []int) string {
	var recs []string
	for _, g := range gpus {
		for _, gi := range h.Faults.Instances(g) {
			p := gi.Profile
			for _, c := range ciProfiles(p) {
				recs = append(recs, lcipRows(g, gi.ID, "MIG "+c.name, c.id, c.slices == p.Slices, 0, c.total, 14*c.slices, p.DEC, p.ENC, p.OFA, p.CE, p.JPEG))
			}
		}
	}
	return migTable([]string{
		"| Compute instance profiles:                                                           |",
		"| GPU     GPU       Name             Profile  Instances   Exclusive       Shared       |",
		"|       Instance                       ID     Free/Total     SM       DEC   ENC   OFA  |",
		"|         ID                                                          CE    JPEG       |"}, recs)
}

func lcipRows(gpu, gi int, name string, id int, def bool, free, total, sm, dec, enc, ofa, ce, jpeg int) string {
	mark := " "
	if def {
		mark = "*"
	}
	return fmt.Sprintf("|%4d%7d       %-16s%6d%s%6d/%-12d%2d%9d%6d%6d   |\n", gpu, gi, name, id, mark, free, total, sm, dec, enc, ofa) +
		fmt.Sprintf("|%71d%6d         |\n", ce, jpeg)
}
