package tui

import (
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/inventory"
)

// masker hides host names and addresses in what the workbench draws (a
// presenter's --mask): the i-th host of the fleet reads host-i, a node set
// of them reads as the node set of their masked names (dgx[01-04] →
// host-[1-4]), and an address, with or without its port, reads "masked".
// The root model masks every frame before fitting it to the terminal, so
// that no view can forget a name; views that wrap text mask it before
// wrapping, so that no name is split where the mask cannot see it.
type masker struct {
	addrs *regexp.Regexp // the hosts' addresses, each with an optional :port
	names *regexp.Regexp // the hosts' names and node sets of them
	index map[string]int // name → 1-based position in the fleet
}

// lead is what may come before a name or address: the start of a line, a
// character that is not part of a word, or the end of a colour escape
// (whose final m would hide a word boundary). It is kept as it is.
const lead = `(^|[^A-Za-z0-9_]|\x1b\[[0-9;:]*m)`

// newMasker builds a masker for hosts (in fleet order); nil when there is
// nothing to hide.
func newMasker(hosts []app.FleetHost) *masker {
	m := &masker{index: map[string]int{}}
	addrSet := map[string]bool{}
	for _, h := range hosts {
		// Host names are case-insensitive (DNS): DGX01 on screen is dgx01.
		if n := strings.ToLower(h.Name); n != "" && m.index[n] == 0 {
			m.index[n] = len(m.index) + 1
		}
		if a := hostOf(h.Address); a != "" {
			addrSet[a] = true
		}
	}
	var addrs, names []string
	for a := range addrSet {
		// Bare or bracketed ([addr]:port, as known_hosts and IPv6 write it).
		q := regexp.QuoteMeta(a)
		addrs = append(addrs, q+tail(a)+`(?::\d+)?`, `\[`+q+`\](?::\d+)?`)
	}
	// A name with a number at its end also stands for the node sets that
	// fold it with its siblings (prefix[01-04,07]), and for what is left of
	// one a view cut or wrapped (prefix[01-, prefix0…).
	seen := map[string]bool{}
	for n := range m.index {
		pattern := regexp.QuoteMeta(n) + tail(n)
		if p := strings.TrimRight(n, "0123456789"); p != n && p != "" {
			pattern = regexp.QuoteMeta(p) + `(?:\d+\b|\[[0-9,\-]*\]?)` // one for all of a prefix
		}
		if !seen[pattern] {
			seen[pattern] = true
			names = append(names, pattern)
		}
	}
	if len(addrs) > 0 {
		m.addrs = regexp.MustCompile(`(?mi)` + lead + alternation(addrs))
	}
	if len(names) > 0 {
		m.names = regexp.MustCompile(`(?mi)` + lead + alternation(names))
	}
	if m.addrs == nil && m.names == nil {
		return nil
	}
	return m
}

// hostOf is the host part of an address ("127.0.0.1:2201" → "127.0.0.1").
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
}

// tail is the word boundary a literal needs after it: none when it ends
// in a character that cannot continue a word.
func tail(literal string) string {
	if b := literal[len(literal)-1]; b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' {
		return `\b`
	}
	return ""
}

// alternation joins patterns longest first, so that the longest name wins,
// in one group: the text to mask.
func alternation(patterns []string) string {
	sort.Slice(patterns, func(i, j int) bool {
		if len(patterns[i]) != len(patterns[j]) {
			return len(patterns[i]) > len(patterns[j])
		}
		return patterns[i] < patterns[j]
	})
	return "(" + strings.Join(patterns, "|") + ")"
}

// apply masks s; a nil masker returns s.
func (m *masker) apply(s string) string {
	if m == nil {
		return s
	}
	if m.addrs != nil {
		s = replaceAligned(s, m.addrs, func(string) string { return "masked" })
	}
	if m.names != nil {
		s = replaceAligned(s, m.names, m.name)
	}
	return s
}

// lines masks each of ls (a nil masker returns ls). A pane that cuts its
// lines to its width, from a column when it is shifted sideways, masks
// them first: a name cut at either edge is one the mask cannot see.
func (m *masker) lines(ls []string) []string {
	if m == nil {
		return ls
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = m.apply(l)
	}
	return out
}

// name masks one name or node set.
func (m *masker) name(match string) string {
	names := []string{match}
	if strings.Contains(match, "[") {
		expanded, err := inventory.ExpandPattern(match)
		if err != nil {
			return "host-?"
		}
		names = expanded
	}
	out := make([]string, len(names))
	for i, n := range names {
		if k := m.index[strings.ToLower(n)]; k > 0 {
			out[i] = "host-" + strconv.Itoa(k)
		} else {
			out[i] = "host-?" // a sibling the fleet does not have, or a cut name
		}
	}
	return inventory.FoldNames(out)
}

// replaceAligned replaces re's second group in each line of s. A
// replacement of another width would shift the columns after it: the
// difference is given back at the next column gap (two spaces or more) of
// the line, which loses spaces (keeping one) or gains them.
func replaceAligned(s string, re *regexp.Regexp, with func(string) string) string {
	if !re.MatchString(s) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		locs := re.FindAllStringSubmatchIndex(l, -1)
		if locs == nil {
			continue
		}
		var b strings.Builder
		debt, last := 0, 0
		for _, loc := range locs {
			start, end := loc[4], loc[5]
			b.WriteString(settle(l[last:start], &debt))
			r := with(l[start:end])
			debt += len(r) - (end - start)
			b.WriteString(r)
			last = end
		}
		b.WriteString(settle(l[last:], &debt))
		lines[i] = b.String()
	}
	return strings.Join(lines, "\n")
}

// settle gives back what a line grew by (debt > 0) or shrank by (debt < 0)
// at seg's first column gap, as far as the gap allows.
func settle(seg string, debt *int) string {
	if *debt == 0 {
		return seg
	}
	i := strings.Index(seg, "  ")
	if i < 0 {
		return seg
	}
	if *debt < 0 {
		pad := strings.Repeat(" ", -*debt)
		*debt = 0
		return seg[:i] + pad + seg[i:]
	}
	n := 0
	for i+n < len(seg) && seg[i+n] == ' ' {
		n++
	}
	take := min(*debt, n-1)
	*debt -= take
	return seg[:i] + seg[i+take:]
}
