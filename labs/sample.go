package labs

import (
	"fmt"
	"time"

	"github.com/gpulab/gpulab/probes/report"
)

// Sample is one probe snapshot taken while a step ran, cut down to what
// moves over time: per-GPU utilisation, memory, power, temperature and
// clocks, and the processes on the GPUs. A step's metrics read them as
// `samples` (a list, oldest first); a field NVML did not give is absent,
// so an expression reading it is UNKNOWN with the reason, never zero.
type Sample struct {
	T         float64         `json:"t"` // seconds since the step started
	At        time.Time       `json:"at"`
	GPUs      []SampleGPU     `json:"gpus"`
	Processes []SampleProcess `json:"processes"`
}

// SampleGPU is one GPU in a sample.
type SampleGPU struct {
	Index       int      `json:"index"`
	UtilPct     *uint32  `json:"util_pct,omitempty"`
	MemUtilPct  *uint32  `json:"mem_util_pct,omitempty"`
	MemUsedMiB  *uint64  `json:"mem_used_mib,omitempty"`
	MemTotalMiB *uint64  `json:"mem_total_mib,omitempty"`
	PowerW      *float64 `json:"power_w,omitempty"`
	TempC       *uint32  `json:"temp_c,omitempty"`
	SMClockMHz  *uint32  `json:"sm_clock_mhz,omitempty"`
	Throttle    []string `json:"throttle,omitempty"`
}

// SampleProcess is a process using a GPU in a sample.
type SampleProcess struct {
	GPU           int    `json:"gpu"`
	PID           uint32 `json:"pid"`
	Name          string `json:"name,omitempty"`
	UsedMiB       uint64 `json:"used_mib"`
	GPUInstanceID *int   `json:"gpu_instance_id,omitempty"`
}

// sampleOf cuts a snapshot down to a Sample, timed from start.
func sampleOf(s *report.Snapshot, start time.Time) Sample {
	out := Sample{T: s.CollectedAt.Sub(start).Seconds(), At: s.CollectedAt, GPUs: []SampleGPU{}, Processes: []SampleProcess{}}
	if out.T < 0 { // the host's clock is behind ours
		out.T = 0
	}
	for _, g := range s.GPUs {
		sg := SampleGPU{Index: g.Index, PowerW: g.PowerW, TempC: g.TemperatureC, SMClockMHz: g.SMClockMHz, Throttle: g.ThrottleReasons}
		if u := g.Utilization; u != nil {
			sg.UtilPct, sg.MemUtilPct = &u.GPUPercent, &u.MemoryPercent
		}
		if m := g.Memory; m != nil {
			sg.MemUsedMiB, sg.MemTotalMiB = &m.UsedMiB, &m.TotalMiB
		}
		out.GPUs = append(out.GPUs, sg)
	}
	for _, p := range s.Processes {
		out.Processes = append(out.Processes, SampleProcess{GPU: p.GPU, PID: p.PID, Name: p.Name, UsedMiB: p.UsedMiB, GPUInstanceID: p.GPUInstanceID})
	}
	return out
}

// summarizeSamples says in one phrase what the samples saw: how many, the
// busiest GPU's median utilisation (nearest rank) and the peak memory in
// use on the host.
func summarizeSamples(samples []Sample) string {
	var busiest []float64
	var peak uint64
	for _, s := range samples {
		var util float64 = -1
		var mem uint64
		for _, g := range s.GPUs {
			if g.UtilPct != nil {
				util = max(util, float64(*g.UtilPct))
			}
			if g.MemUsedMiB != nil {
				mem += *g.MemUsedMiB
			}
		}
		if util >= 0 {
			busiest = append(busiest, util)
		}
		peak = max(peak, mem)
	}
	out := fmt.Sprintf("%d probe samples", len(samples))
	if p50, err := Percentile(busiest, 50); err == nil {
		out += fmt.Sprintf(", busiest GPU %.0f%% (median)", p50)
	}
	return out + fmt.Sprintf(", peak %.1f GiB in use", float64(peak)/1024)
}
