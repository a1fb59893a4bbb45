//go:build bench

package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// cpuShares is where a run's CPU time went, all on this machine: gpulab's
// own, the test process's (the simulated fleet, its SSH servers and
// kubelet endpoints run in it), the simulated hosts' probe processes
// (its reaped children other than gpulab), and the control plane (etcd,
// the API server, kwok: its children still running).
type cpuShares struct {
	gpulab, sim, probes, control time.Duration
}

func (c cpuShares) total() time.Duration { return c.gpulab + c.sim + c.probes + c.control }

func (c cpuShares) String() string {
	return fmt.Sprintf("CPU %.1f s: gpulab %.1f s, simulated hosts %.1f s + their probe processes %.1f s, control plane %.1f s",
		c.total().Seconds(), c.gpulab.Seconds(), c.sim.Seconds(), c.probes.Seconds(), c.control.Seconds())
}

// cpuClock reads the three clocks cpuShares splits.
type cpuClock struct{ self, children, control time.Duration }

func readCPU() cpuClock {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return cpuClock{self: tv(self), children: tv(kids), control: liveChildrenCPU()}
}

// liveChildrenCPU sums utime and stime of this process's children that
// are still running (the control plane's processes), from /proc.
func liveChildrenCPU() time.Duration {
	me := os.Getpid()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15): comm may hold spaces.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != me {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// since is what the run between before and now cost, gpulab's own CPU
// (its ProcessState) taken out of the reaped children's.
func (before cpuClock) since(gpulab time.Duration) cpuShares {
	now := readCPU()
	return cpuShares{
		gpulab:  gpulab,
		sim:     now.self - before.self,
		probes:  max(0, now.children-before.children-gpulab),
		control: now.control - before.control,
	}
}

// peakRSS follows the started command c's own peak resident set (VmHWM,
// read every 20 ms while it runs) until stop, which returns it in MiB.
// The rusage of a child that Go started reads, after its exec, the peak
// of the parent it was forked from when that is larger (the kernel keeps
// the old address space's high-water mark): the test process's, not the
// command's.
func peakRSS(c *exec.Cmd) (stop func() float64) {
	var hwm atomic.Int64
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if kb := readHWM(c.Process.Pid); kb > hwm.Load() {
				hwm.Store(kb)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() float64 {
		close(done)
		<-polled
		return float64(hwm.Load()) / 1024
	}
}
