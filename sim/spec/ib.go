package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// IBPort is what is wrong with one of the host's RDMA ports (NICs, by
// device name: "mlx5_2"); the zero value is an HDR port up at 200 Gb/s
// with clean counters.
type IBPort struct {
	// Down: the port is DOWN, its physical link Polling (no cable, a dead
	// transceiver, the switch port off).
	Down bool `json:"down,omitempty"`
	// RateGbps is the rate the port trained at (IBRateGbps when 0): 100
	// is an HDR port that came up at 2X.
	RateGbps int `json:"rate_gbps,omitempty"`
	// LinkDowned is the link_downed counter at the first reading (how
	// often the link went down since the counters were cleared; 255 is
	// the 8-bit counter saturated); Flaps is how much it rises at each
	// later reading (a link flapping now).
	LinkDowned uint64 `json:"link_downed,omitempty"`
	Flaps      uint64 `json:"flaps,omitempty"`
	// SymbolErrors rises by this much at each reading after the first.
	SymbolErrors uint64 `json:"symbol_errors,omitempty"`
}

// IBRateGbps is the rate of the simulated ConnectX-6 HDR ports.
const IBRateGbps = 200

// ibRates are the rates an HDR port trains at, by its width.
var ibRates = map[int]string{200: "200 Gb/sec (4X HDR)", 100: "100 Gb/sec (2X HDR)", 50: "50 Gb/sec (1X HDR)"}

// validateIB reports the first IB knob no DGX A100 port can show.
func (f Faults) validateIB() error {
	for name, p := range f.IB {
		if !slices.ContainsFunc(NICs[:], func(n NIC) bool { return n.Name == name }) {
			return fmt.Errorf("ib: %q: the simulated HCAs are mlx5_0 to mlx5_%d", name, len(NICs)-1)
		}
		if _, ok := ibRates[p.RateGbps]; p.RateGbps != 0 && !ok {
			return fmt.Errorf("ib: %s: rate_gbps %d: an HDR port trains at 50, 100 or 200", name, p.RateGbps)
		}
		if p.LinkDowned > 255 {
			return fmt.Errorf("ib: %s: link_downed %d: the counter is 8 bits wide (255 at most)", name, p.LinkDowned)
		}
	}
	return nil
}

// IBPortOf is the knob of device's port (the healthy zero value when
// none).
func (f Faults) IBPortOf(device string) IBPort { return f.IB[device] }

// ibFiles are one port's sysfs files as the kernel writes them.
func ibFiles(p IBPort) map[string]string {
	state, phys := "4: ACTIVE", "5: LinkUp"
	if p.Down {
		state, phys = "1: DOWN", "2: Polling"
	}
	rate := ibRates[IBRateGbps]
	if p.RateGbps != 0 {
		rate = ibRates[p.RateGbps]
	}
	files := map[string]string{"state": state, "phys_state": phys, "rate": rate, "link_layer": "InfiniBand",
		"counters/link_downed": strconv.FormatUint(p.LinkDowned, 10)}
	for _, c := range []string{"link_error_recovery", "symbol_error", "port_rcv_errors", "local_link_integrity_errors",
		"excessive_buffer_overrun_errors", "port_xmit_discards"} {
		files["counters/"+c] = "0"
	}
	return files
}

// WriteIB writes the host's RDMA devices under dir as
// /sys/class/infiniband shows them: DEVICE/ports/1/{state, phys_state,
// rate, link_layer, counters/...}, in the layout of
// testdata/fixtures/sysfs-infiniband/.
func (f Faults) WriteIB(dir string) error {
	for _, n := range NICs {
		port := filepath.Join(dir, n.Name, "ports", "1")
		if err := os.MkdirAll(filepath.Join(port, "counters"), 0o700); err != nil {
			return err
		}
		for name, text := range ibFiles(f.IBPortOf(n.Name)) {
			if err := os.WriteFile(filepath.Join(port, name), []byte(text+"\n"), 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// SysReader reads the simulated machine's sysfs files: as written, but a
// port's counter rises by its knob's rate (Flaps, SymbolErrors) each time
// it is read again, as a sick link's does between two readings.
func (f Faults) SysReader() func(string) ([]byte, error) {
	var mu sync.Mutex
	reads := map[string]uint64{}
	return func(path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return b, err
		}
		dir, counter := filepath.Split(path)
		if filepath.Base(filepath.Clean(dir)) != "counters" {
			return b, nil
		}
		device := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Clean(dir)))))
		p := f.IBPortOf(device)
		rise := map[string]uint64{"link_downed": p.Flaps, "symbol_error": p.SymbolErrors}[counter]
		mu.Lock()
		n := reads[path]
		reads[path]++
		mu.Unlock()
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || rise == 0 {
			return b, nil
		}
		v += rise * n
		if counter == "link_downed" {
			v = min(v, 255)
		}
		return []byte(strconv.FormatUint(v, 10) + "\n"), nil
	}
}
