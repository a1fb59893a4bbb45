package dgx

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpulab/gpulab/sim/spec"
)

func init() {
	tools["dcgmi"] = dcgmi
}

// DCGMVersion is the DCGM the hosts run: the newest whose dcgmi diag
// layout is recorded (testdata/fixtures/workloads/dcgmi-diag/
// dcgm4.4.2-r2-i0-1xA10G-pass.txt).
const DCGMVersion = "4.4.2"

func dcgmi(ctx context.Context, h *Host, t *term, args []string) int {
	if len(args) < 2 {
		return t.fail(1, "Usage: dcgmi <subsystem> [options]\n")
	}
	switch args[1] {
	case "--version", "-v":
		t.print("\ndcgmi  version: " + DCGMVersion + "\n\n")
		return 0
	case "discovery":
		if len(args) == 3 && (args[2] == "-l" || args[2] == "--list") {
			t.print(h.dcgmDiscovery())
			return 0
		}
	case "diag":
		return dcgmDiag(ctx, h, t, flags(args[2:]))
	}
	return t.fail(1, fmt.Sprintf("ERROR: the simulated dcgmi answers --version, discovery -l and diag -r N, not %q\n", strings.Join(args[1:], " ")))
}

// dcgmDiscovery is dcgmi discovery -l as DCGM prints it on a DGX A100:
// the layout and the six NvSwitch ids of a DGX A100's listing in a public
// DCGM set-up note (code-index file 50017790420), with this host's GPUs.
func (h *Host) dcgmDiscovery() string {
	border := "+--------+----------------------------------------------------------------------+\n"
	var b strings.Builder
	fmt.Fprintf(&b, "%d GPUs found.\n%s| GPU ID | Device Information                                                   |\n%s", spec.GPUs, border, border)
	for g := 0; g < spec.GPUs; g++ {
		fmt.Fprintf(&b, "| %-6d | %-68s |\n|        | %-68s |\n|        | %-68s |\n%s", g, "Name: "+GPUName,
			"PCI Bus ID: "+spec.BusID(g), "Device UUID: "+h.uuid(g), border)
	}
	b.WriteString("6 NvSwitches found.\n+-----------+\n| Switch ID |\n+-----------+\n")
	for _, id := range []int{11, 10, 13, 9, 12, 8} {
		fmt.Fprintf(&b, "| %-9d |\n", id)
	}
	b.WriteString("+-----------+\n")
	return b.String()
}

// dcgmTest is one test of the diag table.
type dcgmTest struct {
	name, result string
	warnings     []string
	gpus         []string // "Pass", "Fail", "Skip" per GPU, in order
}

// dcgmSection is a section of the table and its tests.
type dcgmSection struct {
	name  string
	tests []dcgmTest
}

// dcgmDiag runs dcgmi diag -r 1|2|3 (--run): level 1 the software
// (deployment) checks, 2 adds memory and pcie, 3 the stress tests. The
// sick GPU fails software (its pending row remap: DCGM's
// DCGM_FR_PENDING_ROW_REMAP message) and memory (its double-bit errors:
// DCGM_FR_VOLATILE_DBE_DETECTED), messages from DCGM's dcgm_errors.h; a
// GPU in MIG mode is skipped. The table appears when the run ends, after
// 10, 30 or 60 paces.
func dcgmDiag(ctx context.Context, h *Host, t *term, a flags) int {
	lvl, ok := a.value("-r", "--run")
	level, err := strconv.Atoi(lvl)
	if !ok || err != nil || level < 1 || level > 4 {
		return t.fail(1, "Error: -r/--run needs a level (1, 2, 3 or 4) or a test name; the simulated dcgmi runs levels\n")
	}
	if !h.wait(ctx, []int{0, 10, 30, 60, 90}[level]) {
		return ExitCancelled
	}
	gpuTest := func(name string, bad func(g int) string) dcgmTest {
		tt := dcgmTest{name: name, result: "Pass"}
		for g := 0; g < spec.GPUs; g++ {
			r := "Pass"
			switch msg := bad(g); {
			case h.Faults.MIGOn(g):
				r = "Skip"
			case msg != "":
				r, tt.result = "Fail", "Fail"
				tt.warnings = append(tt.warnings, msg)
			}
			tt.gpus = append(tt.gpus, r)
		}
		return tt
	}
	none := func(int) string { return "" }
	sections := []dcgmSection{{"Deployment", []dcgmTest{gpuTest("software", func(g int) string {
		if h.Faults.Pending(g) {
			return fmt.Sprintf("GPU %d had memory errors and row remappings are pending", g)
		}
		return ""
	})}}}
	if level >= 2 {
		sections = append(sections,
			dcgmSection{"Hardware", []dcgmTest{gpuTest("memory", func(g int) string {
				if n := h.Faults.ECCFor(g).VolatileUncorrected; n > 0 {
					return fmt.Sprintf("Detected %d volatile double-bit ECC error(s) in GPU %d.", n, g)
				}
				return ""
			})}},
			dcgmSection{"Integration", []dcgmTest{gpuTest("pcie", none)}})
	}
	if level >= 3 {
		sections = append(sections, dcgmSection{"Stress", []dcgmTest{gpuTest("memory_bandwidth", none),
			gpuTest("targeted_stress", none), gpuTest("targeted_power", none)}})
	}
	ids := strings.Repeat("20b0, ", spec.GPUs)
	t.print("Successfully ran diagnostic for group.\n" + dcgmTable(DCGMVersion, spec.Driver, ids[:len(ids)-2], sections))
	return 0
}

// dcgmTable is dcgmi diag's table in DCGM 4.4's layout (testdata/fixtures/
// workloads/dcgmi-diag/dcgm4.4.1-r2-8xB200-slurm-pcie-fail-warning.txt):
// a Warning wrapped every 45 characters, mid-word, per-GPU results below.
func dcgmTable(version, driver, ids string, sections []dcgmSection) string {
	row := func(l, r string) string { return fmt.Sprintf("| %-25s | %-46s |\n", l, r) }
	head := func(name, edge string) string {
		left := "-----  " + name + "  "
		return edge + left + strings.Repeat("-", 27-len(left)) + "+" + strings.Repeat("-", 48) + edge + "\n"
	}
	border := "+---------------------------+------------------------------------------------+\n"
	var b strings.Builder
	b.WriteString(border + row("Diagnostic", "Result") + "+===========================+================================================+\n")
	b.WriteString(head("Metadata", "|") + row("DCGM Version", version) + row("Driver Version Detected", driver) + row("GPU Device IDs Detected", ids))
	for k, s := range sections {
		edge := "+"
		if k == 0 {
			edge = "|"
		}
		b.WriteString(head(s.name, edge))
		for _, tt := range s.tests {
			b.WriteString(row(tt.name, tt.result))
			for _, w := range tt.warnings {
				for i := 0; i < len(w); i += 45 {
					label := ""
					if i == 0 {
						label = "Warning"
					}
					b.WriteString(row(label, w[i:min(i+45, len(w))]))
				}
			}
			for g, r := range tt.gpus {
				b.WriteString(row("", fmt.Sprintf("GPU%d: %s", g, r)))
			}
		}
	}
	b.WriteString(border)
	return b.String()
}
