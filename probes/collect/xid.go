package collect

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/report"
)

// WaitXIDs listens for NVML Xid events for d and appends them to s. It
// returns early only if NVML refuses to set the listening up (recorded).
func WaitXIDs(lib nvml.Interface, s *report.Snapshot, d time.Duration) {
	c := resume(lib, s, Options{})
	var set nvml.EventSet
	if !c.call("xid_events", nil, "nvmlEventSetCreate", func() (r nvml.Return) { set, r = lib.EventSetCreate(); return }) {
		return
	}
	defer c.quietCall(func() nvml.Return { return set.Free() })
	byHandle := map[int]nvml.Device{}
	registered := 0
	for k, g := range s.GPUs {
		// k is the GPU's place in s.GPUs, g.Index NVML's index of it (a
		// GPU whose handle was refused is not in s.GPUs).
		var dev nvml.Device
		idx := g.Index
		if !c.quietCall(func() (r nvml.Return) { dev, r = lib.DeviceGetHandleByIndex(idx); return }) {
			continue
		}
		if c.call(fmt.Sprintf("gpu[%d].xid_events", idx), &idx, "nvmlDeviceRegisterEvents", func() nvml.Return {
			return dev.RegisterEvents(nvml.EventTypeXidCriticalError, set)
		}) {
			byHandle[k] = dev
			registered++
		}
	}
	if registered == 0 {
		return
	}
	deadline := time.Now().Add(d)
	for {
		ms, ok := waitMS(time.Until(deadline))
		if !ok {
			return
		}
		var ev nvml.EventData
		ret := nvml.SUCCESS
		ok = c.quietCall(func() nvml.Return { ev, ret = set.Wait(ms); return ret })
		if !ok {
			if ret == nvml.ERROR_TIMEOUT {
				continue
			}
			if ret != nvml.SUCCESS {
				c.fail("xid_events.wait", nil, returnCode(ret), nvml.ErrorString(ret))
			}
			return
		}
		if ev.EventType != nvml.EventTypeXidCriticalError {
			continue
		}
		x := report.XIDEvent{Code: int(ev.EventData), Time: time.Now().UTC(), Source: "nvml-event"}
		for k, dev := range byHandle {
			if dev == ev.Device {
				g := s.GPUs[k].Index
				x.GPU, x.PCIBusID = &g, s.GPUs[k].PCIBusID
			}
		}
		s.XIDs = append(s.XIDs, x)
	}
}

// ReadKmsgXIDs reads what the kernel log buffer holds now (/dev/kmsg,
// without blocking) and appends its Xid lines to s, attributed to GPUs by
// PCI bus id. An unreadable log (no permission) is recorded, not fatal.
func ReadKmsgXIDs(s *report.Snapshot, path string) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		code := "UNREADABLE"
		if errors.Is(err, os.ErrPermission) {
			code = "NO_PERMISSION"
		}
		s.Errors = append(s.Errors, report.FieldError{Field: "xids.kmsg", Code: code, Message: err.Error()})
		return
	}
	defer f.Close()
	var b strings.Builder
	buf := make([]byte, 8192) // /dev/kmsg returns one record per read
	for b.Len() < 16<<20 {
		n, err := f.Read(buf)
		if n > 0 {
			for _, line := range strings.Split(strings.TrimRight(string(buf[:n]), "\n"), "\n") {
				b.WriteString(withoutKmsgPrefix(line)) // "prio,seq,usec,flags;message"
				b.WriteByte('\n')
			}
		}
		if err != nil {
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, io.EOF) {
				break
			}
			if errors.Is(err, syscall.EPIPE) { // records overwritten while reading: go on
				continue
			}
			s.Errors = append(s.Errors, report.FieldError{Field: "xids.kmsg", Code: "READ_ERROR", Message: err.Error()})
			break
		}
	}
	events, unread := report.ParseKmsgXIDs(b.String())
	if len(unread) > 0 {
		s.Errors = append(s.Errors, report.FieldError{Field: "xids.kmsg", Code: "PARSE_ERROR",
			Message: fmt.Sprintf("%d Xid or SXid line(s) not read, the first: %.200q", len(unread), unread[0])})
	}
	s.XIDHistory = report.KmsgUnread(s) == nil && b.Len() < 16<<20
	for _, x := range events {
		if x.SXid {
			s.XIDs = append(s.XIDs, x)
			continue
		}
		for _, g := range s.GPUs {
			if report.SamePCI(g.PCIBusID, x.PCIBusID) {
				idx := g.Index
				x.GPU = &idx
			}
		}
		s.XIDs = append(s.XIDs, x)
	}
}

// withoutKmsgPrefix drops a /dev/kmsg record's "prio,seq,usec,flags;"
// (three numbers, then anything but ";", then ";") from line.
func withoutKmsgPrefix(line string) string {
	head, msg, ok := strings.Cut(line, ";")
	if !ok {
		return line
	}
	f := strings.SplitN(head, ",", 4)
	if len(f) < 4 {
		return line
	}
	for _, n := range f[:3] {
		if n == "" || strings.Trim(n, "0123456789") != "" {
			return line
		}
	}
	return msg
}

// waitMS is how long one NVML event wait may block, in the milliseconds
// nvmlEventSetWait takes, with left until the deadline: at most a second,
// at least one; false once the deadline has passed. The time left is read
// once, by the caller, so that the check and the wait agree (read twice, a
// busy machine passed the deadline between them, and a negative wait
// became a uint32 of 49 days).
func waitMS(left time.Duration) (uint32, bool) {
	if left <= 0 {
		return 0, false
	}
	return uint32(max(min(left, time.Second).Milliseconds(), 1)), true
}
