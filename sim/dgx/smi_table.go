package dgx

import (
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/sim/spec"
)

// smiTable is nvidia-smi's default table in driver 535's 89-column layout,
// MIG devices table included, as recorded in
// testdata/fixtures/nvidia-smi/a30-drv535-mig-3-devices-87col.txt (same
// driver branch): every cell's width and alignment is that recording's
// (TestTableFormat renders the recording's own values and compares).
func (h *Host) smiTable(gpus []int) string {
	var b strings.Builder
	b.WriteString(h.now().Format("Mon Jan _2 15:04:05 2006") + "       \n")
	b.WriteString(smiHeader(spec.Driver, spec.CUDA))
	for _, i := range gpus {
		b.WriteString(smiGPURows(h.gpuRow(i)))
	}
	b.WriteString("\n")
	var migs []migRow
	for _, i := range gpus {
		for _, g := range h.Faults.Instances(i) {
			migs = append(migs, migRow{GPU: i, GI: g.ID, CI: 0, Dev: g.Device, Used: migUsedMiB(g.Profile),
				Total: g.Profile.MemoryMiB, BAR1: migBAR1MiB(g.Profile), SM: g.Profile.SMs,
				CE: g.Profile.CE, ENC: g.Profile.ENC, DEC: g.Profile.DEC, OFA: g.Profile.OFA, JPG: g.Profile.JPEG})
		}
	}
	if len(migs) > 0 {
		b.WriteString(smiMIGTable(migs))
		b.WriteString(strings.Repeat(" ", 89) + "\n")
	}
	b.WriteString(smiNoProcesses)
	return b.String()
}

const (
	smiBorder = "+---------------------------------------------------------------------------------------+\n"
	smiInner  = "|-----------------------------------------+----------------------+----------------------+\n"
	smiClose  = "+-----------------------------------------+----------------------+----------------------+\n"
)

const smiNoProcesses = smiBorder +
	"| Processes:                                                                            |\n" +
	"|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |\n" +
	"|        ID   ID                                                             Usage      |\n" +
	"|=======================================================================================|\n" +
	"|  No running processes found                                                           |\n" +
	smiBorder

func smiHeader(driver, cuda string) string {
	return smiBorder +
		fmt.Sprintf("| NVIDIA-SMI %-22s Driver Version: %-12s CUDA Version: %-8s |\n", driver, driver, cuda) +
		smiInner +
		"| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n" +
		"| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |\n" +
		"|                                         |                      |               MIG M. |\n" +
		"|=========================================+======================+======================|\n"
}

// gpuRow is what one GPU's block of the table shows.
type gpuRow struct {
	Index                  int
	Name, Persistence      string
	BusID, DispA, ECC      string
	Fan, Temp, Perf        string
	Power, Cap             string
	Used, Total            string
	Util, Compute, MIGMode string
}

func (h *Host) gpuRow(i int) gpuRow {
	r := gpuRow{Index: i, Name: GPUName, Persistence: "On", BusID: spec.BusID(i), DispA: "Off",
		ECC: fmt.Sprint(h.Faults.ECCFor(i).VolatileUncorrected), Fan: "N/A", Temp: fmt.Sprintf("%dC", h.Faults.Temperature(i)),
		Perf: "P0", Power: fmt.Sprintf("%dW", (spec.PowerMilliW[i]+500)/1000), Cap: fmt.Sprintf("%dW", h.Faults.PowerLimit(i)),
		Used: fmt.Sprintf("%dMiB", h.memoryUsed(i)), Total: fmt.Sprintf("%dMiB", spec.MemoryTotalMiB),
		Util: "0%", Compute: "Default", MIGMode: "Disabled"}
	if h.Faults.MIGOn(i) {
		// As recorded with MIG on: the ECC cell says On, utilization N/A.
		r.ECC, r.Util, r.MIGMode = "On", "N/A", "Enabled"
	}
	return r
}

func smiGPURows(r gpuRow) string {
	return fmt.Sprintf("|%4d  %-31s%-3s | %s %-3s | %20s |\n", r.Index, r.Name, r.Persistence, r.BusID, r.DispA, r.ECC) +
		fmt.Sprintf("| %3s   %3s    %-2s%17s / %4s |%10s / %8s |%8s%13s |\n", r.Fan, r.Temp, r.Perf, r.Power, r.Cap, r.Used, r.Total, r.Util, r.Compute) +
		fmt.Sprintf("|                                         |                      | %20s |\n", r.MIGMode) +
		smiClose
}

// migRow is a row of the MIG devices table.
type migRow struct {
	GPU, GI, CI, Dev       int
	Used, Total, BAR1      int
	SM                     int
	CE, ENC, DEC, OFA, JPG int
}

const migSep = "+------------------+--------------------------------+-----------+-----------------------+\n"

func smiMIGTable(rows []migRow) string {
	var b strings.Builder
	b.WriteString(smiBorder +
		"| MIG devices:                                                                          |\n" + migSep +
		"| GPU  GI  CI  MIG |                   Memory-Usage |        Vol|      Shared           |\n" +
		"|      ID  ID  Dev |                     BAR1-Usage | SM     Unc| CE ENC DEC OFA JPG    |\n" +
		"|                  |                                |        ECC|                       |\n" +
		"|==================+================================+===========+=======================|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %2d  %3d %3d %3d  | %18s / %8s  | %2d%7d | %2d %3d %4d %4d %4d |\n",
			r.GPU, r.GI, r.CI, r.Dev, fmt.Sprintf("%dMiB", r.Used), fmt.Sprintf("%dMiB", r.Total), r.SM, 0, r.CE, r.ENC, r.DEC, r.OFA, r.JPG)
		fmt.Fprintf(&b, "|                  | %18s / %8s  |           |                       |\n", "0MiB", fmt.Sprintf("%dMiB", r.BAR1))
		b.WriteString(migSep)
	}
	return b.String()
}
