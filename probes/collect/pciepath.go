package collect

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpulab/gpulab/probes/report"
)

// maxPathHops bounds the bridges read above one GPU: a real path has
// three to five (root port, a switch or two).
const maxPathHops = 8

// isBDF reports whether name is a PCI function's sysfs name:
// "0000:07:00.0" (lower-case hex; no regexp: it would cost the probe's
// size more than this does).
func isBDF(name string) bool {
	n := len(name) // "DDDD:BB:dd.f", the domain 4 hex digits or more (Intel VMD's 10000)
	if n < 12 || name[n-8] != ':' || name[n-5] != ':' || name[n-2] != '.' || name[n-1] < '0' || name[n-1] > '7' {
		return false
	}
	for i, r := range name[:n-2] {
		if i != n-8 && i != n-5 && !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// linkGens are sysfs's link speeds by PCIe generation ("16.0 GT/s PCIe").
var linkGens = map[string]int{"2.5": 1, "5.0": 2, "5": 2, "8.0": 3, "8": 3, "16.0": 4, "16": 4, "32.0": 5, "32": 5, "64.0": 6, "64": 6}

// readPCIePaths reads, for each GPU, the PCIe bridges between it and the
// CPU: /sys/bus/pci/devices/BDF is a link into /sys/devices, whose parent
// directories named as PCI functions are the bridges (the switch's
// downstream and upstream ports, the root port), each with its link's
// current and maximum speed and width.
func (c *collector) readPCIePaths() {
	read := c.sysRead()
	for i := range c.snap.GPUs {
		g := &c.snap.GPUs[i]
		bdf := sysfsBDF(g.PCIBusID)
		if bdf == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(filepath.Join(c.opts.PCIDir, bdf))
		if err != nil {
			c.fail(fmt.Sprintf("gpu[%d].pcie.path", g.Index), &g.Index, "UNREADABLE", err.Error())
			continue
		}
		path := []report.PCIeHop{}
		dir := filepath.Dir(real)
		for ; isBDF(filepath.Base(dir)) && len(path) < maxPathHops; dir = filepath.Dir(dir) {
			path = append(path, readHop(dir, read))
		}
		if isBDF(filepath.Base(dir)) { // more bridges than the probe reads: the rest unread
			c.fail(fmt.Sprintf("gpu[%d].pcie.path", g.Index), &g.Index, "TRUNCATED", fmt.Sprintf("more than %d bridges above the GPU", maxPathHops))
			continue
		}
		g.PCIe.Path, g.PCIe.PathRead = path, true
	}
}

// readHop reads one bridge's link.
func readHop(dir string, read func(string) ([]byte, error)) report.PCIeHop {
	h := report.PCIeHop{BDF: filepath.Base(dir)}
	value := func(name string) string {
		b, err := read(filepath.Join(dir, name))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	gen := func(name string) *int {
		speed, _, _ := strings.Cut(value(name), " ")
		if g, ok := linkGens[speed]; ok {
			return &g
		}
		return nil
	}
	width := func(name string) *int {
		if w, err := strconv.Atoi(value(name)); err == nil && w > 0 {
			return &w
		}
		return nil
	}
	h.GenCurrent, h.GenMax = gen("current_link_speed"), gen("max_link_speed")
	h.WidthCurrent, h.WidthMax = width("current_link_width"), width("max_link_width")
	return h
}

// sysfsBDF is NVML's bus id ("00000000:07:00.0") as sysfs names the
// function ("0000:07:00.0"); "" for one it cannot be.
func sysfsBDF(busID string) string {
	id := strings.ToLower(busID)
	if dom, rest, ok := strings.Cut(id, ":"); ok && len(dom) == 8 {
		// NVML's 8-digit domain; sysfs keeps 4 digits, more for a domain
		// above 0xffff (Intel VMD's 10000).
		dom = strings.TrimLeft(dom, "0")
		id = strings.Repeat("0", max(0, 4-len(dom))) + dom + ":" + rest
	}
	if !isBDF(id) {
		return ""
	}
	return id
}
