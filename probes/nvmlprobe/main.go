// Command nvmlprobe prints one JSON snapshot of this host's GPUs as NVML
// sees them (schema: probes/report). gpulab pushes it to hosts over SSH and
// runs it; it needs nothing installed but the NVIDIA driver, and without the
// driver it says so in a clean report.
//
// Usage:
//
//	nvmlprobe [--mock dgxa100] [--kmsg] [--xid-wait 30s] [--timeout 20s]
//
// Never run it with LD_BIND_NOW set: NVML's entry points are resolved from
// the driver's library when first called, and binding them all at start-up
// fails before main runs (gpulab runs it under env -u LD_BIND_NOW).
//
// Exit status: 0 snapshot printed; 3 no libnvidia-ml (the report says why);
// 4 NVML failed to initialise; 5 NVML did not answer within --timeout
// (the watchdog); 64 bad flags.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/dl"
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/collect"
	"github.com/gpulab/gpulab/probes/report"
)

// version is set at build time (-X main.version=...).
var version = "dev"

const libName = "libnvidia-ml.so.1"

func main() {
	fs := flag.NewFlagSet("nvmlprobe", flag.ContinueOnError)
	mock := fs.String("mock", "", "collect from a simulated machine instead of NVML: dgxa100")
	kmsg := fs.Bool("kmsg", false, "read recent NVRM Xid lines from the kernel log (/dev/kmsg) when readable")
	xidWait := fs.Duration("xid-wait", 0, "listen for NVML Xid events this long after collecting")
	timeout := fs.Duration("timeout", 20*time.Second, "watchdog: give up if NVML has not answered by then (plus --xid-wait)")
	host := fs.String("host", "", "host name to report (default: os.Hostname)")
	showVersion := fs.Bool("version", false, "print the probe's version")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(report.ExitUsage)
	}
	if *showVersion {
		fmt.Println(version)
		return
	}
	if *mock != "" && *mock != "dgxa100" {
		fmt.Fprintf(os.Stderr, "nvmlprobe: --mock %q: the only simulated machine is dgxa100\n", *mock)
		os.Exit(report.ExitUsage)
	}
	watchdog := time.AfterFunc(*timeout+*xidWait, func() {
		fmt.Fprintf(os.Stderr, "nvmlprobe: NVML did not answer within %v; giving up (the driver may be hung: check dmesg for Xid errors)\n", *timeout+*xidWait)
		os.Exit(report.ExitWatchdog)
	})
	defer watchdog.Stop()
	name := *host
	if name == "" {
		name, _ = os.Hostname()
	}
	opts := collect.Options{Host: name, ProbeVersion: version}
	code := run(opts, *mock, *kmsg, *xidWait)
	watchdog.Stop()
	os.Exit(code)
}

func run(opts collect.Options, mock string, kmsg bool, xidWait time.Duration) int {
	start := time.Now()
	var lib nvml.Interface
	simulated := mock != ""
	if simulated {
		var err error
		if lib, err = simulator(mock); err != nil {
			fmt.Fprintln(os.Stderr, "nvmlprobe:", err)
			return report.ExitUsage
		}
	} else {
		// Open the library ourselves first: NVML's Init only says "library
		// not found"; dlopen says why (missing file, wrong architecture...).
		probe := dl.New(libName, dl.RTLD_LAZY|dl.RTLD_GLOBAL)
		if err := probe.Open(); err != nil {
			return emit(empty(opts, start, report.NVMLState{Library: libName, Error: err.Error()}), report.ExitNoNVML)
		}
		defer probe.Close()
		lib = nvml.New(nvml.WithLibraryPath(libName))
	}
	if r := lib.Init(); r != nvml.SUCCESS {
		state := report.NVMLState{Library: libName, Error: "nvmlInit: " + nvml.ErrorString(r)}
		code := report.ExitNVMLError
		if r == nvml.ERROR_LIBRARY_NOT_FOUND || r == nvml.ERROR_DRIVER_NOT_LOADED {
			code = report.ExitNoNVML
		}
		return emit(empty(opts, start, state), code)
	}
	defer lib.Shutdown()
	s := collect.Collect(lib, opts)
	s.Simulated = simulated
	if simulated {
		s.NVML.Library = "simulated dgxa100 (go-nvml mock)"
	} else {
		s.NVML.Library = libName
	}
	if kmsg && !simulated {
		collect.ReadKmsgXIDs(s, "/dev/kmsg")
	}
	if xidWait > 0 {
		collect.WaitXIDs(lib, s, xidWait)
	}
	s.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	return emit(s, report.ExitOK)
}

func empty(o collect.Options, start time.Time, st report.NVMLState) *report.Snapshot {
	return &report.Snapshot{Schema: report.Schema, Host: o.Host, CollectedAt: start.UTC(), ProbeVersion: o.ProbeVersion,
		DurationMS: float64(time.Since(start).Microseconds()) / 1000, NVML: st,
		GPUs: []report.GPU{}, Topology: []report.TopoLink{}, Processes: []report.Process{}, XIDs: []report.XIDEvent{}, Errors: []report.FieldError{}}
}

func emit(s *report.Snapshot, code int) int {
	out, err := json.Marshal(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nvmlprobe:", err)
		return report.ExitNVMLError
	}
	os.Stdout.Write(append(out, '\n'))
	return code
}
