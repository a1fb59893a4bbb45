package parse

import (
	"regexp"
	"strconv"
	"strings"
)

func init() {
	register(Kind{Name: "nvidia-smi-dmon", Command: "nvidia-smi dmon", Parse: func(s string) (any, error) { return ParseDmon(s) },
		Fixtures: []string{"nvidia-smi-dmon"}})
	register(Kind{Name: "nvidia-smi-nvlink-status", Command: "nvidia-smi nvlink --status", Parse: func(s string) (any, error) { return ParseNVLinkStatus(s) },
		Fixtures: []string{"nvidia-smi-nvlink-status"}})
	register(Kind{Name: "nvidia-smi-nvlink-errors", Command: "nvidia-smi nvlink -e", Parse: func(s string) (any, error) { return ParseNVLinkErrors(s) },
		Fixtures: []string{"nvidia-smi-nvlink-e"}})
	register(Kind{Name: "nvidia-smi-topo-p2p", Command: "nvidia-smi topo -p2p r (or w, n, a)", Parse: func(s string) (any, error) { return ParseTopoP2P(s) },
		Fixtures: []string{"nvidia-smi-topo-p2p"}})
}

// Dmon is `nvidia-smi dmon`: samples with the columns it was asked for.
type Dmon struct {
	Columns []string            `json:"columns"`
	Units   []string            `json:"units"`
	Samples []map[string]string `json:"samples"`
}

// ParseDmon reads dmon's two header lines (names, units) and its samples,
// whatever -s and -o chose; repeated headers are skipped.
func ParseDmon(text string) (*Dmon, error) {
	d := &Dmon{Columns: []string{}, Units: []string{}, Samples: []map[string]string{}}
	var problems errs
	for i, l := range lines(text) {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "#") {
			f := strings.Fields(strings.TrimPrefix(t, "#"))
			switch {
			case len(d.Columns) == 0:
				d.Columns = f
			case len(d.Units) == 0:
				d.Units = f
			}
			continue
		}
		if len(d.Columns) == 0 {
			problems.add(i+1, "sample before the header")
			continue
		}
		f := strings.Fields(t)
		if len(f) != len(d.Columns) {
			problems.add(i+1, "%d values for %d columns", len(f), len(d.Columns))
			continue
		}
		s := map[string]string{}
		for k, c := range d.Columns {
			s[c] = f[k]
		}
		d.Samples = append(d.Samples, s)
	}
	if len(d.Columns) == 0 {
		problems.add(0, "no '# gpu ...' header: not nvidia-smi dmon output")
	}
	return d, problems.err()
}

// NVLinkGPU is a GPU's links from `nvidia-smi nvlink --status` or `-e`.
type NVLinkGPU struct {
	Index int          `json:"index"`
	Name  string       `json:"name"`
	UUID  string       `json:"uuid"`
	Links []NVLinkLine `json:"links"`
	// Elided is set when the output was shortened ("[...]" lines).
	Elided bool `json:"elided,omitempty"`
}

// NVLinkLine is one link: its speed (--status) or error counters (-e).
type NVLinkLine struct {
	Link     int               `json:"link"`
	GBps     *float64          `json:"gbps,omitempty"`
	Inactive bool              `json:"inactive,omitempty"`
	Counters map[string]uint64 `json:"counters,omitempty"`
}

var (
	nvlGPU    = regexp.MustCompile(`^GPU (\d+): (.+?) \(UUID: ([^)]*)\)\s*$`)
	nvlSpeed  = regexp.MustCompile(`^Link (\d+): (?:([\d.]+) GB/s|<inactive>|(.+))\s*$`)
	nvlErrors = regexp.MustCompile(`^Link (\d+): ([A-Za-z ]+?): (\d+)\s*$`)
)

// ParseNVLinkStatus reads `nvidia-smi nvlink --status`.
func ParseNVLinkStatus(text string) ([]NVLinkGPU, error) {
	return parseNVLink(text, false)
}

// ParseNVLinkErrors reads `nvidia-smi nvlink -e`.
func ParseNVLinkErrors(text string) ([]NVLinkGPU, error) {
	return parseNVLink(text, true)
}

func parseNVLink(text string, counters bool) ([]NVLinkGPU, error) {
	out := []NVLinkGPU{}
	var problems errs
	for i, l := range lines(text) {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if m := nvlGPU.FindStringSubmatch(t); m != nil {
			idx, _ := strconv.Atoi(m[1])
			out = append(out, NVLinkGPU{Index: idx, Name: m[2], UUID: m[3], Links: []NVLinkLine{}})
			continue
		}
		if len(out) == 0 {
			problems.add(i+1, "line before any GPU line: %q", t)
			continue
		}
		g := &out[len(out)-1]
		if t == "[...]" {
			g.Elided = true
			continue
		}
		if counters {
			m := nvlErrors.FindStringSubmatch(t)
			if m == nil {
				problems.add(i+1, "line not understood: %q", t)
				continue
			}
			n, _ := strconv.Atoi(m[1])
			v, _ := strconv.ParseUint(m[3], 10, 64)
			if len(g.Links) == 0 || g.Links[len(g.Links)-1].Link != n {
				g.Links = append(g.Links, NVLinkLine{Link: n, Counters: map[string]uint64{}})
			}
			g.Links[len(g.Links)-1].Counters[m[2]] = v
			continue
		}
		m := nvlSpeed.FindStringSubmatch(t)
		if m == nil {
			problems.add(i+1, "line not understood: %q", t)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		ln := NVLinkLine{Link: n}
		switch {
		case m[2] != "":
			v, _ := strconv.ParseFloat(m[2], 64)
			ln.GBps = &v
		case m[3] != "":
			problems.add(i+1, "link %d: %q is not a speed", n, m[3])
		default:
			ln.Inactive = true
		}
		g.Links = append(g.Links, ln)
	}
	if len(out) == 0 && len(problems) == 0 {
		problems.add(0, "no GPU line: not nvidia-smi nvlink output")
	}
	return out, problems.err()
}

// P2P is `nvidia-smi topo -p2p X`: a GPU×GPU matrix of status codes.
type P2P struct {
	Columns []string                     `json:"columns"`
	Status  map[string]map[string]string `json:"status"`
}

var p2pCode = regexp.MustCompile(`^(X|OK|CNS|GNS|TNS|NS|DR|U)$`)

// ParseTopoP2P reads the peer-to-peer status matrix.
func ParseTopoP2P(text string) (*P2P, error) {
	p := &P2P{Columns: []string{}, Status: map[string]map[string]string{}}
	var problems errs
	for i, l := range lines(text) {
		f := strings.Fields(l)
		if len(f) == 0 {
			if len(p.Status) > 0 {
				break // legend follows
			}
			continue
		}
		if len(p.Columns) == 0 {
			if f[0] != "GPU0" {
				return p, errorf(i+1, "first line is not a GPU header: %q", strings.TrimSpace(l))
			}
			p.Columns = f
			continue
		}
		row := map[string]string{}
		for k, c := range f[1:] {
			if k >= len(p.Columns) {
				problems.add(i+1, "row %s has more values than columns", f[0])
				break
			}
			if !p2pCode.MatchString(c) {
				problems.add(i+1, "row %s: %q is not a P2P status code", f[0], c)
				continue
			}
			row[p.Columns[k]] = c
		}
		p.Status[f[0]] = row
	}
	if len(p.Columns) == 0 {
		problems.add(0, "empty input: not nvidia-smi topo -p2p output")
	}
	return p, problems.err()
}
