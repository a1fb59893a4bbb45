// Command nvmlprobe prints one JSON snapshot of this host's GPUs as NVML
// sees them (schema: probes/report). gpulab pushes it to hosts over SSH and
// runs it; it needs nothing installed but the NVIDIA driver, and without the
// driver it says so in a clean report.
//
// Usage:
//
//	nvmlprobe [--mock dgxa100 [--mock-faults JSON]] [--kmsg] [--xid-wait 30s] [--window 2s] [--timeout 20s] [--call-timeout 5s]
//	nvmlprobe --watch 2s [--count N]
//
// --window samples the GPUs for that long after the snapshot (clock-event
// reasons, utilisation and PCIe generation every 100ms, the PCIe replay
// counter at both ends), so that a rate is counted, never read once.
// --call-timeout bounds each NVML call: a GPU whose call does not return
// is named hung, with the call, and the probe goes on without it.
//
// --mock-faults gives the simulated machine faults, as the JSON of
// sim/spec.Faults: {"nvlink_down":[[1,6]],"ecc":{"3":{"volatile_uncorrected":2}},
// "remap_pending":[3],"xids":[{"gpu":3,"code":48,"message":"...","seconds_after_boot":90}],
// "mig":{"2":["3g.20gb","3g.20gb"]},"utilization":{"1":87},
// "processes":[{"gpu":1,"pid":4242,"name":"python","used_mib":2048,
// "cgroup":"0::/kubepods.slice/.../kubepods-pod<uid>.slice/..."}]}. Its Xids
// arrive as NVML events (--xid-wait); its processes' names and cgroups are
// read from a private directory standing for /proc, removed at exit.
//
// With --watch it prints one snapshot per line every interval (NVML is
// initialised once), until --count snapshots are out or it is killed: gpulab
// samples a host this way while a lab step runs.
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
	"os/signal"
	"syscall"
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
	mockFaults := fs.String("mock-faults", "", "with --mock, what is wrong with the simulated machine (`JSON` of sim/spec.Faults)")
	kmsg := fs.Bool("kmsg", false, "read recent NVRM Xid lines from the kernel log (/dev/kmsg) when readable")
	xidWait := fs.Duration("xid-wait", 0, "listen for NVML Xid events this long after collecting")
	timeout := fs.Duration("timeout", 20*time.Second, "watchdog: give up if NVML has not answered by then (plus --xid-wait and --window)")
	window := fs.Duration("window", 0, "sample the GPUs this long after collecting (clock events, PCIe generation and replays as rates)")
	callTimeout := fs.Duration("call-timeout", collect.DefaultCallTimeout, "give up on one NVML call after this long, naming its GPU hung")
	host := fs.String("host", "", "host name to report (default: os.Hostname)")
	expect := fs.String("expect", "", "what the host should have, as the inventory says (`gpus=8,ib_ports=8,ib_rate_gbps=200`)")
	showVersion := fs.Bool("version", false, "print the probe's version")
	watch := fs.Duration("watch", 0, "print a snapshot every `interval` (one JSON object per line) until killed or --count")
	count := fs.Int("count", 0, "with --watch, stop after this many snapshots (0: no limit)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(report.ExitUsage)
	}
	if *watch < 0 || (*watch > 0 && *watch < 100*time.Millisecond) || *count < 0 || (*count > 0 && *watch == 0) {
		fmt.Fprintln(os.Stderr, "nvmlprobe: --watch takes an interval of 100ms or more, and --count needs --watch")
		os.Exit(report.ExitUsage)
	}
	if *watch > 0 && (*xidWait > 0 || *window > 0) {
		fmt.Fprintln(os.Stderr, "nvmlprobe: --xid-wait and --window do not go with --watch")
		os.Exit(report.ExitUsage)
	}
	if !deadlines(fs, *window, callTimeout, *timeout) {
		fmt.Fprintln(os.Stderr, "nvmlprobe: --window takes 0 to 10m, and --call-timeout 100ms up to --timeout")
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
	if *mockFaults != "" && *mock == "" {
		fmt.Fprintln(os.Stderr, "nvmlprobe: --mock-faults needs --mock dgxa100")
		os.Exit(report.ExitUsage)
	}
	exp, err := report.ParseExpect(*expect)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nvmlprobe:", err)
		os.Exit(report.ExitUsage)
	}
	var mach *simulated
	if *mock != "" {
		m, err := simulator(*mock, *mockFaults)
		if err != nil {
			fmt.Fprintln(os.Stderr, "nvmlprobe:", err)
			os.Exit(report.ExitUsage)
		}
		mach = m
	}
	cleanupOnStop(mach)
	watchdog := time.AfterFunc(*timeout+*xidWait+*window, func() {
		fmt.Fprintf(os.Stderr, "nvmlprobe: NVML did not answer within %v; giving up (the driver may be hung: check dmesg for Xid errors)\n", *timeout+*xidWait+*window)
		mach.cleanup()
		os.Exit(report.ExitWatchdog)
	})
	defer watchdog.Stop()
	name := *host
	if name == "" {
		name, _ = os.Hostname()
	}
	opts := collect.Options{Host: name, ProbeVersion: version, CallTimeout: *callTimeout, PstoreDir: "/sys/fs/pstore",
		IBDir: "/sys/class/infiniband", PCIDir: "/sys/bus/pci/devices", FabricManagerLog: "/var/log/fabricmanager.log", Expect: exp}
	if mach != nil {
		opts.ProcRoot, opts.PstoreDir, opts.IBDir, opts.ReadSys = mach.procRoot, mach.pstoreDir, mach.ibDir, mach.readSys
		opts.PCIDir, opts.FabricManagerLog = mach.pciDir, mach.fmLog
	}
	w := watcher{every: *watch, count: *count, arm: func() { watchdog.Reset(*timeout) }, disarm: func() { watchdog.Stop() }}
	code := run(opts, mach, *kmsg, *xidWait, *window, w)
	watchdog.Stop()
	mach.cleanup()
	os.Exit(code)
}

// deadlines checks --window and --call-timeout against --timeout; the
// default call timeout bows to a shorter --timeout.
func deadlines(fs *flag.FlagSet, window time.Duration, callTimeout *time.Duration, timeout time.Duration) bool {
	callSet := false
	fs.Visit(func(f *flag.Flag) { callSet = callSet || f.Name == "call-timeout" })
	if !callSet {
		*callTimeout = min(*callTimeout, timeout)
	}
	return window >= 0 && window <= 10*time.Minute && *callTimeout > 0 && *callTimeout <= timeout && (!callSet || *callTimeout >= 100*time.Millisecond)
}

// cleanupOnStop removes what the simulation wrote when the probe is
// stopped (the run cancelled, a timeout), and exits as a stopped process.
func cleanupOnStop(mach *simulated) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		<-stop
		mach.cleanup()
		os.Exit(143)
	}()
}

// watcher repeats the collection every interval; the zero value collects
// once. arm starts the watchdog before each collection and disarm stops it
// after, so that it never fires while the watch sleeps.
type watcher struct {
	every       time.Duration
	count       int
	arm, disarm func()
}

// simulated is the machine --mock simulates, with its faults: its NVML,
// the directories the collector reads as /proc, /sys/fs/pstore and
// /sys/class/infiniband, how its sysfs files read (counters that rise),
// and remove, which deletes them.
type simulated struct {
	lib                        nvml.Interface
	procRoot, pstoreDir, ibDir string
	pciDir, fmLog              string
	readSys                    func(string) ([]byte, error)
	remove                     func()
}

// cleanup removes what the simulation wrote; nil (real NVML) has nothing.
// It may be called more than once.
func (m *simulated) cleanup() {
	if m != nil {
		m.remove()
	}
}

// run collects from mock's NVML, or from the driver's when mock is nil.
func run(opts collect.Options, mock *simulated, kmsg bool, xidWait, window time.Duration, w watcher) int {
	start := time.Now()
	var lib nvml.Interface
	simulated := mock != nil
	if simulated {
		lib = mock.lib
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
	var s *report.Snapshot
	defer func() {
		// A hung call may hold NVML's lock: shutting down would wait on
		// it, and the snapshot is what matters now.
		if s == nil || !collect.Hung(s) {
			lib.Shutdown()
		}
	}()
	if w.every > 0 {
		return watch(lib, opts, simulated, w)
	}
	s = collect.Collect(lib, opts)
	if window > 0 {
		collect.Sample(lib, s, opts, window, collect.DefaultSampleEvery)
	}
	s.Simulated = simulated
	if simulated {
		s.NVML.Library = "simulated dgxa100 (go-nvml mock)"
	} else {
		s.NVML.Library = libName
	}
	switch {
	case kmsg && simulated:
		// The machine's /dev/kmsg is not the simulated host's kernel log:
		// say that the history was not read rather than show none.
		s.Errors = append(s.Errors, report.FieldError{Field: "xids.kmsg", Code: "SIMULATED",
			Message: "a simulated host has no /dev/kmsg of its own; its kernel log is what dmesg prints there (the health runbook reads it)"})
	case kmsg:
		collect.ReadKmsgXIDs(s, "/dev/kmsg")
	}
	if xidWait > 0 {
		collect.WaitXIDs(lib, s, xidWait)
	}
	s.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	return emit(s, report.ExitOK)
}

// watch prints a snapshot every w.every, on a fixed schedule (a slow
// collection delays the next one, never piles them up).
func watch(lib nvml.Interface, opts collect.Options, simulated bool, w watcher) int {
	next := time.Now()
	for n := 0; w.count == 0 || n < w.count; n++ {
		if n > 0 {
			next = next.Add(w.every)
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			} else {
				next = time.Now()
			}
		}
		w.arm()
		start := time.Now()
		s := collect.Collect(lib, opts)
		s.Simulated = simulated
		s.NVML.Library = libName
		if simulated {
			s.NVML.Library = "simulated dgxa100 (go-nvml mock)"
		}
		s.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		w.disarm()
		if code := emit(s, report.ExitOK); code != report.ExitOK {
			return code
		}
	}
	return report.ExitOK
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
	if _, err := os.Stdout.Write(append(out, '\n')); err != nil {
		return report.ExitNVMLError // the reader went away (a watch ends so)
	}
	return code
}
