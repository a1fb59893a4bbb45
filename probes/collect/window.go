package collect

import (
	"fmt"
	"math"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/report"
)

// DefaultSampleEvery is how often Sample reads the GPUs in its window.
const DefaultSampleEvery = 100 * time.Millisecond

// Sample watches the GPUs of s (a snapshot Collect just took from lib)
// for window, reading each every interval: its clock-event reasons, its
// utilisation and its PCIe link generation; then its PCIe replay counter
// again. It fills each GPU's Window and s.WindowSeconds, and the GPUs'
// findings anew. It takes at least two samples, and always as many as
// window/every (a slow machine stretches the window, never thins it), so
// a rate is a count of readings. A GPU that hung is not asked again; one
// that hangs now is marked so.
func Sample(lib nvml.Interface, s *report.Snapshot, o Options, window, every time.Duration) {
	if every <= 0 {
		every = DefaultSampleEvery
	}
	c := resume(lib, s, o)
	n := max(int(window/every), 2)
	devices := make([]nvml.Device, len(s.GPUs))
	for k := range s.GPUs {
		g := &s.GPUs[k]
		g.Window = &report.Window{ClockEvents: map[string]int{}}
		c.quietField(&g.Index, fmt.Sprintf("gpu[%d]", g.Index), "nvmlDeviceGetHandleByIndex", func() (r nvml.Return) {
			devices[k], r = lib.DeviceGetHandleByIndex(g.Index)
			return
		})
	}
	start := time.Now()
	next := start
	for k := 0; k < n; k++ {
		if k > 0 {
			next = next.Add(every)
			time.Sleep(time.Until(next))
		}
		for j := range s.GPUs {
			if devices[j] != nil {
				c.sample(&s.GPUs[j], devices[j])
			}
		}
	}
	for j := range s.GPUs {
		g := &s.GPUs[j]
		if devices[j] != nil {
			end := c.replays(g.Index, devices[j])
			if g.PCIe.Replays != nil && end != nil && *end >= *g.PCIe.Replays {
				g.Window.ReplaysDelta = ptr(*end - *g.PCIe.Replays)
			}
		}
		g.Hung = c.hung[g.Index]
		if g.Hung != "" {
			g.Window = nil // what it read before it hung is no rate
		}
		g.Findings = findings(*g)
	}
	s.WindowSeconds = math.Round(time.Since(start).Seconds()*1000) / 1000
	stuckAgain(s, c.opts.ProcRoot)
	ibAgain(s, c.opts)
}

// sample takes one reading of g into its Window.
func (c *collector) sample(g *report.GPU, d nvml.Device) {
	w := g.Window
	field := func(name string) string { return fmt.Sprintf("gpu[%d].window.%s", g.Index, name) }
	var reasons uint64
	if c.quietField(&g.Index, field("clock_events"), "nvmlDeviceGetCurrentClocksEventReasons", func() (r nvml.Return) {
		reasons, r = d.GetCurrentClocksEventReasons()
		return
	}) {
		w.Samples++
		for _, name := range throttleNames(reasons) {
			w.ClockEvents[name]++
		}
	}
	var util nvml.Utilization
	var gen int
	if !c.quietField(&g.Index, field("utilization"), "nvmlDeviceGetUtilizationRates", func() (r nvml.Return) { util, r = d.GetUtilizationRates(); return }) ||
		!c.quietField(&g.Index, field("pcie.gen_current"), "nvmlDeviceGetCurrPcieLinkGeneration", func() (r nvml.Return) { gen, r = d.GetCurrPcieLinkGeneration(); return }) {
		return
	}
	w.PCIeSamples++
	busy := util.Gpu > 0
	below := g.PCIe.GenMax != nil && gen < *g.PCIe.GenMax
	switch {
	case busy:
		w.Busy++
		if below {
			w.PCIeGenBelowBusy++
		}
		if w.PCIeGenBusyMin == nil || gen < *w.PCIeGenBusyMin {
			w.PCIeGenBusyMin = ptr(gen)
		}
	case below:
		w.PCIeGenBelowIdle++
	}
}
