package collect

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/gpulab/gpulab/probes/report"
)

// IBCounters are the port error counters the probe reads (sysfs
// ports/N/counters), the ones that say a link is sick: it went down, it
// recovered from errors, it received bad symbols or packets.
var IBCounters = []string{"link_downed", "link_error_recovery", "symbol_error", "port_rcv_errors",
	"local_link_integrity_errors", "excessive_buffer_overrun_errors", "port_xmit_discards"}

// Bounds of the RDMA read: devices and ports looked at.
const (
	maxIBDevices = 64
	maxIBPorts   = 8
)

// readIB reads the RDMA ports under dir (/sys/class/infiniband): each
// device's ports' state, physical state, rate, link layer and error
// counters. read reads one file (os.ReadFile, or the simulated machine's).
func (c *collector) readIB() {
	dir, read := c.opts.IBDir, c.sysRead()
	devices, err := os.ReadDir(dir)
	if err != nil {
		code := "UNREADABLE"
		if os.IsNotExist(err) {
			code = "NOT_PRESENT" // no RDMA driver loaded, or no adapter
		}
		c.snap.Errors = append(c.snap.Errors, report.FieldError{Field: "ib", Code: code, Message: err.Error()})
		return
	}
	st := &report.IBState{Ports: []report.IBPort{}}
	if len(devices) > maxIBDevices {
		// A port past the bound could be the one down: say so, never
		// judge what was not read.
		st.Truncated = true
		devices = devices[:maxIBDevices]
	}
	for _, d := range devices {
		ports, err := os.ReadDir(filepath.Join(dir, d.Name(), "ports"))
		if err != nil {
			st.Truncated = true
			continue
		}
		read1 := 0
		for _, p := range ports {
			n, err := strconv.Atoi(p.Name())
			if err != nil {
				continue
			}
			if read1 == maxIBPorts {
				st.Truncated = true
				break
			}
			read1++
			st.Ports = append(st.Ports, readIBPort(filepath.Join(dir, d.Name(), "ports", p.Name()), d.Name(), n, read))
		}
	}
	sort.Slice(st.Ports, func(a, b int) bool {
		if st.Ports[a].Device != st.Ports[b].Device {
			return st.Ports[a].Device < st.Ports[b].Device
		}
		return st.Ports[a].Port < st.Ports[b].Port
	})
	c.snap.IB = st
}

func (c *collector) sysRead() func(string) ([]byte, error) {
	if c.opts.ReadSys != nil {
		return c.opts.ReadSys
	}
	return readSmall
}

// maxSysFile bounds one sysfs attribute read: a page, as sysfs serves.
const maxSysFile = 4 << 10

// readSmall reads a sysfs attribute: opened without blocking (a FIFO in
// its place would hang the probe), refused unless a regular file, and
// read to its first 4 KiB.
func readSmall(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSysFile))
}

// openRegular opens path for reading without blocking (O_NONBLOCK: a FIFO
// or a device never waits for a writer) and refuses anything but a
// regular file.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s: not a regular file (%s)", path, st.Mode().Type())
		}
		return nil, err
	}
	return f, nil
}

// readIBPort reads one port: "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X
// HDR)", "InfiniBand", and its counters.
func readIBPort(dir, device string, port int, read func(string) ([]byte, error)) report.IBPort {
	p := report.IBPort{Device: device, Port: port, Counters: map[string]uint64{}}
	value := func(name string) string {
		b, err := read(filepath.Join(dir, name))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	p.State, p.PhysState = afterColon(value("state")), afterColon(value("phys_state"))
	p.LinkLayer, p.Rate = value("link_layer"), value("rate")
	if f := strings.Fields(p.Rate); len(f) > 0 {
		p.RateGbps, _ = strconv.ParseFloat(f[0], 64)
	}
	for name, v := range readIBCounters(dir, read) {
		p.Counters[name] = v
	}
	return p
}

// readIBCounters reads the port's error counters that exist.
func readIBCounters(dir string, read func(string) ([]byte, error)) map[string]uint64 {
	out := map[string]uint64{}
	for _, name := range IBCounters {
		b, err := read(filepath.Join(dir, "counters", name))
		if err != nil {
			continue
		}
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// afterColon is "ACTIVE" of "4: ACTIVE".
func afterColon(s string) string {
	if _, v, ok := strings.Cut(s, ": "); ok {
		return v
	}
	return s
}

// ibAgain reads the ports' counters again at the end of the sampling
// window: how much each rose. A port whose counters were not all read at
// both ends, or went down (cleared in the window), gets no WindowDelta:
// its rise is unknown, never zero.
func ibAgain(s *report.Snapshot, o Options) {
	if s.IB == nil {
		return
	}
	read := (&collector{opts: o}).sysRead()
	for i := range s.IB.Ports {
		p := &s.IB.Ports[i]
		now := readIBCounters(filepath.Join(o.IBDir, p.Device, "ports", strconv.Itoa(p.Port)), read)
		delta := map[string]uint64{}
		for _, name := range IBCounters {
			before, ok1 := p.Counters[name]
			v, ok2 := now[name]
			if !ok1 || !ok2 || v < before {
				delta = nil
				break
			}
			delta[name] = v - before
		}
		p.WindowDelta = delta
	}
}
