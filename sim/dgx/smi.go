package dgx

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpulab/gpulab/sim/spec"
)

func init() {
	tools["nvidia-smi"] = nvidiaSMI
}

// GPUName is the product name the driver gives the GPUs.
const GPUName = spec.GPUName

// Exit statuses of nvidia-smi (its manual's RETURN VALUE).
const (
	smiInvalidArg = 2
	smiNotFound   = 6
	smiGPULost    = 15 // "the GPU has fallen off the bus or has otherwise become inaccessible"
)

const smiInvalid = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"

// smiOptions are the options nvidia-smi's main mode takes, and whether
// each takes a value.
var smiOptions = map[string]bool{
	"-L": false, "--list-gpus": false, "-q": false, "--query": false, "-x": false, "--xml-format": false,
	"-i": true, "--id": true, "-d": true, "--display": true, "--format": true, "-h": false, "--help": false,
	"--version": false, "-a": false,
}

func nvidiaSMI(ctx context.Context, h *Host, t *term, args []string) int {
	if len(args) > 1 {
		switch args[1] {
		case "topo":
			return smiTopo(h, t, flags(args[2:]))
		case "nvlink":
			return smiNVLink(h, t, flags(args[2:]))
		case "mig":
			return smiMIG(h, t, flags(args[2:]))
		}
	}
	a := flags(args[1:])
	var query, apps string
	for k := 0; k < len(a); k++ {
		opt, val, hasVal := strings.Cut(a[k], "=")
		switch {
		case opt == "--query-gpu" && hasVal:
			query = val
			continue
		case opt == "--query-compute-apps" && hasVal:
			apps = val
			continue
		}
		takesVal, known := smiOptions[opt]
		if !known || hasVal && !takesVal || takesVal && !hasVal && k+1 == len(a) {
			t.print(smiInvalid)
			return smiInvalidArg
		}
		if takesVal && !hasVal {
			k++
		}
	}
	gpus, ok := h.smiSelect(a)
	if !ok {
		t.print("No devices were found\n")
		return smiNotFound
	}
	if !a.has("--version", "-h", "--help") {
		lost := h.lostOf(gpus, t)
		if len(lost) > 0 {
			gpus = slices.DeleteFunc(gpus, func(i int) bool { return slices.Contains(lost, i) })
			if code := h.smiMain(t, a, query, apps, gpus); code != 0 {
				return code
			}
			return smiGPULost
		}
	}
	return h.smiMain(t, a, query, apps, gpus)
}

// lostOf are the GPUs of gpus that fell off the bus (the gpu_lost
// knob): nvidia-smi says it cannot reach each, on stderr, shows the
// others and exits 15.
func (h *Host) lostOf(gpus []int, t *term) []int {
	var lost []int
	for _, i := range gpus {
		if slices.Contains(h.Faults.GPULost, i) {
			lost = append(lost, i)
			t.eprintf("Unable to determine the device handle for GPU%s: GPU is lost.  Reboot the system to recover this GPU\n", spec.BusID(i)[4:])
		}
	}
	return lost
}

// smiMain is nvidia-smi's main mode on gpus once they are chosen.
func (h *Host) smiMain(t *term, a flags, query, apps string, gpus []int) int {
	switch {
	case a.has("--version"):
		t.printf("NVIDIA-SMI version  : %s\nNVML version        : %s\nDRIVER version      : %s\nCUDA Version        : %s\n",
			spec.Driver, strings.TrimSuffix(spec.Driver, ".03"), spec.Driver, spec.CUDA)
		return 0
	case a.has("-h", "--help"):
		t.print("NVIDIA System Management Interface -- v" + spec.Driver + "\n\n" +
			"NVSMI provides monitoring information for Tesla and select Quadro devices.\n" +
			"The data is presented in either a plain text or an XML format, via stdout or a file.\n")
		return 0
	case query != "" || apps != "":
		return smiQueryCSV(h, t, a, query, apps, gpus)
	case a.has("-L", "--list-gpus"):
		t.print(h.smiList())
		return 0
	case a.has("-q", "--query", "-a"):
		if a.has("-x", "--xml-format") {
			t.print("nvidia-smi -q -x: XML output is not simulated on this host; use nvidia-smi -q\n")
			return 3
		}
		keep, ok := displayFilter(a)
		if !ok {
			t.print(smiInvalid)
			return smiInvalidArg
		}
		t.print(h.smiQuery(gpus, keep))
		return 0
	case a.has("-x", "--xml-format", "-d", "--display", "--format"):
		t.print(smiInvalid) // these go with -q or --query-*
		return smiInvalidArg
	}
	t.print(h.smiTable(gpus))
	return 0
}

// smiSelect reads -i: an index, a comma list, a bus id or a UUID; all
// GPUs without it. ok is false when -i names no GPU.
func (h *Host) smiSelect(a flags) (gpus []int, ok bool) {
	v, given := a.value("-i", "--id")
	if !given {
		for i := 0; i < spec.GPUs; i++ {
			gpus = append(gpus, i)
		}
		return gpus, true
	}
	for _, id := range strings.Split(v, ",") {
		found := -1
		for i := 0; i < spec.GPUs; i++ {
			if id == strconv.Itoa(i) || strings.EqualFold(id, h.uuid(i)) || strings.EqualFold(id, spec.BusID(i)) ||
				strings.EqualFold(id, spec.BusID(i)[4:]) {
				found = i
			}
		}
		if found < 0 {
			return nil, false
		}
		gpus = append(gpus, found)
	}
	return gpus, true
}

// smiList is nvidia-smi -L, MIG devices nested under their GPU as in
// testdata/fixtures/nvidia-smi-L/dgx-a100-80gb-mig-all-balanced-head10.txt.
func (h *Host) smiList() string {
	var b strings.Builder
	for i := 0; i < spec.GPUs; i++ {
		if slices.Contains(h.Faults.GPULost, i) {
			continue // nvidia-smi says it cannot reach it, on stderr
		}
		fmt.Fprintf(&b, "GPU %d: %s (UUID: %s)\n", i, GPUName, h.uuid(i))
		for _, g := range h.Faults.Instances(i) {
			fmt.Fprintf(&b, "  MIG %-12sDevice %2d: (UUID: %s)\n", g.Profile.Name, g.Device, spec.MIGUUID(h.uuid(i), g.ID, 0))
		}
	}
	return b.String()
}

// queryFields are the --query-gpu fields answered: header (with its unit
// as nvidia-smi prints it) and value (units included; nounits cuts them).
var queryFields = map[string]func(h *Host, i int) (header, value string){
	"index":          func(_ *Host, i int) (string, string) { return "index", strconv.Itoa(i) },
	"name":           func(_ *Host, i int) (string, string) { return "name", GPUName },
	"uuid":           func(h *Host, i int) (string, string) { return "uuid", h.uuid(i) },
	"serial":         func(h *Host, i int) (string, string) { return "serial", h.serial(i) },
	"pci.bus_id":     func(_ *Host, i int) (string, string) { return "pci.bus_id", spec.BusID(i) },
	"driver_version": func(_ *Host, i int) (string, string) { return "driver_version", spec.Driver },
	"memory.total": func(_ *Host, i int) (string, string) {
		return "memory.total [MiB]", fmt.Sprintf("%d MiB", spec.MemoryTotalMiB)
	},
	"memory.used": func(h *Host, i int) (string, string) {
		return "memory.used [MiB]", fmt.Sprintf("%d MiB", h.memoryUsed(i))
	},
	"memory.free": func(h *Host, i int) (string, string) {
		return "memory.free [MiB]", fmt.Sprintf("%d MiB", h.Faults.MemoryFreeMiB(i))
	},
	"utilization.gpu":    func(_ *Host, i int) (string, string) { return "utilization.gpu [%]", "0 %" },
	"utilization.memory": func(_ *Host, i int) (string, string) { return "utilization.memory [%]", "0 %" },
	"temperature.gpu": func(h *Host, i int) (string, string) {
		return "temperature.gpu", strconv.Itoa(h.Faults.Temperature(i))
	},
	"power.draw": func(_ *Host, i int) (string, string) {
		return "power.draw [W]", fmt.Sprintf("%.2f W", float64(spec.PowerMilliW[i])/1000)
	},
	"power.limit": func(h *Host, i int) (string, string) {
		return "power.limit [W]", fmt.Sprintf("%d.00 W", h.Faults.PowerLimit(i))
	},
	"persistence_mode": func(_ *Host, i int) (string, string) { return "persistence_mode", "Enabled" },
	"pstate":           func(_ *Host, i int) (string, string) { return "pstate", "P0" },
	"ecc.mode.current": func(_ *Host, i int) (string, string) { return "ecc.mode.current", "Enabled" },
	"ecc.errors.uncorrected.volatile.total": func(h *Host, i int) (string, string) {
		return "ecc.errors.uncorrected.volatile.total", strconv.FormatUint(h.Faults.ECCFor(i).VolatileUncorrected, 10)
	},
	"ecc.errors.uncorrected.aggregate.total": func(h *Host, i int) (string, string) {
		return "ecc.errors.uncorrected.aggregate.total", strconv.FormatUint(h.Faults.ECCFor(i).AggregateUncorrected, 10)
	},
	"ecc.errors.corrected.volatile.total": func(h *Host, i int) (string, string) {
		return "ecc.errors.corrected.volatile.total", strconv.FormatUint(h.Faults.ECCFor(i).VolatileCorrected, 10)
	},
	"mig.mode.current": func(h *Host, i int) (string, string) { return "mig.mode.current", enabled(h.Faults.MIGOn(i)) },
	"mig.mode.pending": func(h *Host, i int) (string, string) { return "mig.mode.pending", enabled(h.Faults.MIGOn(i)) },
	"clocks.sm":        func(_ *Host, i int) (string, string) { return "clocks.current.sm [MHz]", "210 MHz" },
	"clocks.mem":       func(_ *Host, i int) (string, string) { return "clocks.current.memory [MHz]", "1215 MHz" },
	"pcie.link.gen.current": func(h *Host, i int) (string, string) {
		return "pcie.link.gen.current", strconv.Itoa(h.Faults.LinkGen(i))
	},
	"pcie.link.width.current": func(_ *Host, i int) (string, string) {
		return "pcie.link.width.current", "16"
	},
}

func enabled(on bool) string {
	if on {
		return "Enabled"
	}
	return "Disabled"
}

// smiQueryCSV is --query-gpu=... or --query-compute-apps=... with
// --format=csv[,noheader][,nounits]. No process runs on a simulated GPU:
// the apps query prints its header at most.
func smiQueryCSV(h *Host, t *term, a flags, query, apps string, gpus []int) int {
	format, ok := a.value("--format")
	opts := map[string]bool{}
	for _, o := range strings.Split(format, ",") {
		opts[strings.TrimSpace(o)] = true
	}
	if !ok || !opts["csv"] {
		t.print("\"--format\" must be specified with \"--query-*\" options, e.g. --format=csv\n" + smiInvalid)
		return smiInvalidArg
	}
	if apps != "" {
		if !opts["noheader"] {
			t.print(strings.ReplaceAll(apps, ",", ", ") + "\n")
		}
		return 0
	}
	names := strings.Split(query, ",")
	for _, n := range names {
		if queryFields[strings.TrimSpace(n)] == nil {
			t.printf("Field \"%s\" is not a valid field to query.\n\n", strings.TrimSpace(n))
			return smiInvalidArg
		}
	}
	var rows []string
	if !opts["noheader"] {
		var hs []string
		for _, n := range names {
			hd, _ := queryFields[strings.TrimSpace(n)](h, 0)
			if opts["nounits"] {
				hd, _, _ = strings.Cut(hd, " [")
			}
			hs = append(hs, hd)
		}
		rows = append(rows, strings.Join(hs, ", "))
	}
	for _, i := range gpus {
		var vs []string
		for _, n := range names {
			_, v := queryFields[strings.TrimSpace(n)](h, i)
			if opts["nounits"] {
				v = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(v, " MiB"), " W"), " %"), " MHz")
			}
			vs = append(vs, v)
		}
		rows = append(rows, strings.Join(vs, ", "))
	}
	t.lines(rows)
	return 0
}

func (h *Host) memoryUsed(i int) int { return h.Faults.MemoryUsedMiB(i) }

func migUsedMiB(p spec.Profile) int { return spec.MIGUsedMiB(p) }
func migBAR1MiB(p spec.Profile) int { return spec.MIGBAR1MiB(p) }
