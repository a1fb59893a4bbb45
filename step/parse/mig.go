package parse

import (
	"regexp"
	"strconv"
	"strings"
)

func init() {
	register(Kind{Name: "nvidia-smi-mig-lgip", Command: "nvidia-smi mig -lgip", Parse: func(s string) (any, error) { return ParseMIGProfiles(s) },
		Fixtures: []string{"nvidia-smi-mig-lgip"}})
	register(Kind{Name: "nvidia-smi-mig-lgipp", Command: "nvidia-smi mig -lgipp", Parse: func(s string) (any, error) { return ParseMIGPlacements(s) },
		Fixtures: []string{"nvidia-smi-mig-lgipp"}})
	register(Kind{Name: "nvidia-smi-mig-lgi", Command: "nvidia-smi mig -lgi", Parse: func(s string) (any, error) { return ParseMIGInstances(s, false) },
		Fixtures: []string{"nvidia-smi-mig-lgi"}})
	register(Kind{Name: "nvidia-smi-mig-lci", Command: "nvidia-smi mig -lci", Parse: func(s string) (any, error) { return ParseMIGInstances(s, true) },
		Fixtures: []string{"nvidia-smi-mig-lci"}})
	register(Kind{Name: "nvidia-smi-mig-lcip", Command: "nvidia-smi mig -lcip", Parse: func(s string) (any, error) { return ParseMIGCIProfiles(s) },
		Fixtures: []string{"nvidia-smi-mig-lcip"}})
}

// MIGTable is what a `nvidia-smi mig -l...` listing holds. Message carries
// the one-line answers ("No MIG-enabled devices found.").
type MIGTable[T any] struct {
	Rows    []T    `json:"rows"`
	Message string `json:"message,omitempty"`
}

// MIGProfile is a GPU instance profile (-lgip).
type MIGProfile struct {
	GPU       int      `json:"gpu"`
	Name      string   `json:"name"` // "1g.10gb+me"
	ID        int      `json:"id"`
	Free      int      `json:"free"`
	Total     int      `json:"total"`
	MemoryGiB *float64 `json:"memory_gib"`
	P2P       string   `json:"p2p"`
	SM        *int     `json:"sm"`
	Line      int      `json:"line"`
}

// MIGPlacement is a profile's possible placements (-lgipp).
type MIGPlacement struct {
	GPU       int   `json:"gpu"`
	ProfileID int   `json:"profile_id"`
	Starts    []int `json:"starts"`
	Size      int   `json:"size"`
}

// MIGInstance is a GPU instance (-lgi) or compute instance (-lci).
type MIGInstance struct {
	GPU            int    `json:"gpu"`
	GPUInstanceID  *int   `json:"gpu_instance_id,omitempty"` // -lci only
	Name           string `json:"name"`
	ProfileID      int    `json:"profile_id"`
	InstanceID     int    `json:"instance_id"`
	PlacementStart int    `json:"placement_start"`
	PlacementSize  int    `json:"placement_size"`
}

// MIGCIProfile is a compute instance profile (-lcip).
type MIGCIProfile struct {
	GPU           int    `json:"gpu"`
	GPUInstanceID int    `json:"gpu_instance_id"`
	Name          string `json:"name"`
	ProfileID     int    `json:"profile_id"`
	Default       bool   `json:"default"` // marked '*'
	Free          int    `json:"free"`
	Total         int    `json:"total"`
	SM            *int   `json:"sm"`
}

var (
	// migMessage is nvidia-smi's answer without a table: "No GPU
	// instances found: Not Found", "No MIG-enabled devices found.". A
	// shell's "rdma: command not found" is not one.
	migMessage  = regexp.MustCompile(`^(No .*|.*: Not Found)$`)
	freeTotal   = regexp.MustCompile(`^(\d+)/(\d+)$`)
	startSize   = regexp.MustCompile(`^(\d+):(\d+)$`)
	placementRE = regexp.MustCompile(`^GPU\s+(\d+)\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,]*)\}:(\d+)\s*$`)
)

// migRows yields the first line of each table row (the line after a
// border or the ==== line), as tokens, with the message of a table-less
// answer.
func migRows(text string, each func(f []string, line int) bool) (message string, problems errs) {
	inBody, first := false, false
	for i, l := range lines(text) {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "|=") || strings.HasPrefix(t, "+="):
			inBody, first = true, true
			continue
		case strings.HasPrefix(t, "+-") || strings.HasPrefix(t, "|-"):
			first = true
			continue
		case strings.HasPrefix(t, "#"):
			continue
		case !strings.HasPrefix(t, "|"):
			if migMessage.MatchString(t) {
				message = t
				continue
			}
			problems.add(i+1, "line not understood: %q", t)
			continue
		}
		if !inBody || !first {
			continue // header rows, and second rows of a record
		}
		first = false
		f := strings.Fields(strings.Trim(t, "|"))
		if len(f) == 0 {
			continue
		}
		if !each(f, i+1) {
			problems.add(i+1, "row not understood: %q", t)
		}
	}
	return message, problems
}

// ParseMIGProfiles reads `nvidia-smi mig -lgip`.
func ParseMIGProfiles(text string) (*MIGTable[MIGProfile], error) {
	out := &MIGTable[MIGProfile]{Rows: []MIGProfile{}}
	msg, problems := migRows(text, func(f []string, line int) bool {
		// GPU MIG NAME ID FREE/TOTAL MEM P2P SM ...
		if len(f) < 7 || f[1] != "MIG" {
			return false
		}
		p := MIGProfile{Name: f[2], P2P: f[6], Line: line}
		var err1, err2 error
		p.GPU, err1 = strconv.Atoi(f[0])
		p.ID, err2 = strconv.Atoi(f[3])
		m := freeTotal.FindStringSubmatch(f[4])
		if err1 != nil || err2 != nil || m == nil {
			return false
		}
		p.Free, _ = strconv.Atoi(m[1])
		p.Total, _ = strconv.Atoi(m[2])
		if v, err := strconv.ParseFloat(f[5], 64); err == nil {
			p.MemoryGiB = &v
		}
		if len(f) > 7 {
			p.SM = intNA(f[7])
		}
		out.Rows = append(out.Rows, p)
		return true
	})
	out.Message = msg
	return out, emptyMIG(len(out.Rows), msg, problems).err()
}

// emptyMIG adds an error when neither rows nor a message were found.
func emptyMIG(rows int, msg string, problems errs) errs {
	if rows == 0 && msg == "" && len(problems) == 0 {
		problems.add(0, "no table rows and no message: not nvidia-smi mig output")
	}
	return problems
}

// ParseMIGPlacements reads `nvidia-smi mig -lgipp`.
func ParseMIGPlacements(text string) ([]MIGPlacement, error) {
	out := []MIGPlacement{}
	var problems errs
	for i, l := range lines(text) {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		m := placementRE.FindStringSubmatch(t)
		if m == nil {
			problems.add(i+1, "line not understood: %q", t)
			continue
		}
		p := MIGPlacement{Starts: []int{}}
		p.GPU, _ = strconv.Atoi(m[1])
		p.ProfileID, _ = strconv.Atoi(m[2])
		p.Size, _ = strconv.Atoi(m[4])
		for _, s := range strings.Split(m[3], ",") {
			if n, err := strconv.Atoi(s); err == nil {
				p.Starts = append(p.Starts, n)
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 && len(problems) == 0 {
		problems.add(0, "no placement lines: not nvidia-smi mig -lgipp output")
	}
	return out, problems.err()
}

// ParseMIGInstances reads `nvidia-smi mig -lgi` or, with compute set,
// `nvidia-smi mig -lci`.
func ParseMIGInstances(text string, compute bool) (*MIGTable[MIGInstance], error) {
	out := &MIGTable[MIGInstance]{Rows: []MIGInstance{}}
	msg, problems := migRows(text, func(f []string, _ int) bool {
		var r MIGInstance
		k := 1
		gpu, err := strconv.Atoi(f[0])
		if err != nil {
			return false
		}
		r.GPU = gpu
		if compute {
			if len(f) < 2 {
				return false
			}
			gi, err := strconv.Atoi(f[1])
			if err != nil {
				return false
			}
			r.GPUInstanceID = &gi
			k = 2
		}
		if len(f) < k+5 || f[k] != "MIG" {
			return false
		}
		r.Name = f[k+1]
		var e1, e2 error
		r.ProfileID, e1 = strconv.Atoi(f[k+2])
		r.InstanceID, e2 = strconv.Atoi(f[k+3])
		m := startSize.FindStringSubmatch(f[k+4])
		if e1 != nil || e2 != nil || m == nil {
			return false
		}
		r.PlacementStart, _ = strconv.Atoi(m[1])
		r.PlacementSize, _ = strconv.Atoi(m[2])
		out.Rows = append(out.Rows, r)
		return true
	})
	out.Message = msg
	return out, emptyMIG(len(out.Rows), msg, problems).err()
}

// ParseMIGCIProfiles reads `nvidia-smi mig -lcip`.
func ParseMIGCIProfiles(text string) (*MIGTable[MIGCIProfile], error) {
	out := &MIGTable[MIGCIProfile]{Rows: []MIGCIProfile{}}
	msg, problems := migRows(text, func(f []string, _ int) bool {
		// GPU GI MIG NAME PROFILE[*] FREE/TOTAL SM ...
		if len(f) < 6 || f[2] != "MIG" {
			return false
		}
		r := MIGCIProfile{Name: f[3]}
		var e1, e2, e3 error
		r.GPU, e1 = strconv.Atoi(f[0])
		r.GPUInstanceID, e2 = strconv.Atoi(f[1])
		id := f[4]
		r.Default = strings.HasSuffix(id, "*")
		r.ProfileID, e3 = strconv.Atoi(strings.TrimSuffix(id, "*"))
		m := freeTotal.FindStringSubmatch(f[5])
		if e1 != nil || e2 != nil || e3 != nil || m == nil {
			return false
		}
		r.Free, _ = strconv.Atoi(m[1])
		r.Total, _ = strconv.Atoi(m[2])
		if len(f) > 6 {
			r.SM = intNA(f[6])
		}
		out.Rows = append(out.Rows, r)
		return true
	})
	out.Message = msg
	return out, emptyMIG(len(out.Rows), msg, problems).err()
}
