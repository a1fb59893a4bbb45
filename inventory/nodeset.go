package inventory

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxNodeSetSize bounds how many names one node set may expand to, so that a
// typo such as gpu[1-100000000] is an error instead of an out-of-memory crash.
// It is MaxHosts: a node set never names more hosts than an inventory, or a
// host expression, may hold.
const MaxNodeSetSize = MaxHosts

// maxDigits is the longest run of digits treated as a number; longer runs
// are plain text (they do not fit a uint64 comfortably).
const maxDigits = 18

// nodeRange is one range of a range set as written: lo-hi/step, numbers
// zero-padded to width (0 when natural).
type nodeRange struct {
	lo, hi, step uint64
	width        int
}

// count is how many numbers the range yields, at least 1.
func (r nodeRange) count() uint64 { return (r.hi-r.lo)/r.step + 1 }

// nodeSegment is a run of plain text (ranges nil) or a bracketed range set.
type nodeSegment struct {
	text   string
	ranges []nodeRange
}

// parseNodeSet checks a pattern and cuts it into text and range sets,
// expanding nothing.
func parseNodeSet(pattern string) ([]nodeSegment, error) {
	if pattern == "" {
		return nil, fmt.Errorf("node set: empty name")
	}
	if pattern[0] == '-' {
		return nil, fmt.Errorf("node set %q: column 1: a host name cannot start with '-' (OpenSSH refuses it too)", pattern)
	}
	var segs []nodeSegment
	i := 0
	for i < len(pattern) {
		c := pattern[i]
		switch c {
		case '[':
			end := strings.IndexByte(pattern[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("node set %q: column %d: '[' is never closed", pattern, column(pattern, i))
			}
			ranges, err := parseRangeSet(pattern[i+1 : i+end])
			if err != nil {
				return nil, fmt.Errorf("node set %q: column %d: %w", pattern, column(pattern, i+1), err)
			}
			segs = append(segs, nodeSegment{ranges: ranges})
			i += end + 1
		case ']':
			return nil, fmt.Errorf("node set %q: column %d: ']' without '['", pattern, column(pattern, i))
		default:
			if !validNameByte(c) {
				return nil, fmt.Errorf("node set %q: column %d: %s cannot appear in a host name", pattern, column(pattern, i), runeText(pattern[i:]))
			}
			j := i
			for j < len(pattern) && pattern[j] != '[' && pattern[j] != ']' && validNameByte(pattern[j]) {
				j++
			}
			segs = append(segs, nodeSegment{text: pattern[i:j]})
			i = j
		}
	}
	return segs, nil
}

// nodeSetSize is how many names segs expand to, math.MaxUint64 when that
// many or more.
func nodeSetSize(segs []nodeSegment) uint64 {
	size := uint64(1)
	for _, s := range segs {
		if s.ranges == nil {
			continue
		}
		hi, lo := bits.Mul64(size, rangeSetSize(s.ranges))
		if hi != 0 {
			return math.MaxUint64
		}
		size = lo
	}
	return size
}

// rangeSetSize is how many numbers ranges yield, math.MaxUint64 when that
// many or more.
func rangeSetSize(ranges []nodeRange) uint64 {
	var n uint64
	for _, r := range ranges {
		sum, carry := bits.Add64(n, r.count(), 0)
		if carry != 0 {
			return math.MaxUint64
		}
		n = sum
	}
	return n
}

// NodeSetSize returns how many names pattern expands to, computed from its
// ranges without expanding them, so that a pattern can be weighed before
// it costs memory: "gpu[01-04,07]" is 5, "r[1-1000]-g[1-1000]" a million.
// A size that does not fit a uint64 is math.MaxUint64. The errors are
// ExpandPattern's.
func NodeSetSize(pattern string) (uint64, error) {
	segs, err := parseNodeSet(pattern)
	if err != nil {
		return 0, err
	}
	return nodeSetSize(segs), nil
}

// sizeText writes a size from NodeSetSize, saturated ones as such.
func sizeText(n uint64) string {
	if n == math.MaxUint64 {
		return "more than 18446744073709551614"
	}
	return strconv.FormatUint(n, 10)
}

// ExpandPattern expands one node-set pattern in ClusterShell syntax into
// names, in the order the ranges give: "gpu[01-03,07]" is gpu01, gpu02,
// gpu03, gpu07; "r[1-2]-g[1-2]" is r1-g1, r1-g2, r2-g1, r2-g2; a range may
// have a step ("[1-9/2]"). Zero padding is kept: "[08-10]" gives 08, 09, 10.
// A pattern without brackets is a single name. Operators (",", "!", "&", "^")
// and groups belong to expressions, see Inventory.Select.
//
// A pattern that would expand to more than MaxNodeSetSize names is refused
// before anything is expanded, with its size in the error.
func ExpandPattern(pattern string) ([]string, error) {
	segs, err := parseNodeSet(pattern)
	if err != nil {
		return nil, err
	}
	size := nodeSetSize(segs)
	if size > MaxNodeSetSize {
		return nil, fmt.Errorf("node set %q expands to %s names, more than %d", pattern, sizeText(size), MaxNodeSetSize)
	}
	// Each range set yields at most size numbers: sizes multiply, and
	// none is 0.
	values := make([][]string, len(segs))
	length := 0
	for k, s := range segs {
		if s.ranges == nil {
			length += len(s.text)
			continue
		}
		values[k] = expandRanges(s.ranges)
		length += len(values[k][len(values[k])-1])
	}
	names := make([]string, 0, size)
	at := make([]int, len(segs)) // the value taken from each range set
	var b strings.Builder
	for {
		b.Grow(length)
		for k, s := range segs {
			if s.ranges == nil {
				b.WriteString(s.text)
			} else {
				b.WriteString(values[k][at[k]])
			}
		}
		names = append(names, b.String())
		b.Reset()
		k := len(segs) - 1
		for ; k >= 0; k-- {
			if values[k] == nil {
				continue
			}
			if at[k]++; at[k] < len(values[k]) {
				break
			}
			at[k] = 0
		}
		if k < 0 {
			return names, nil
		}
	}
}

// column is the 1-based column, in characters, of byte offset i of s.
func column(s string, i int) int { return utf8.RuneCountInString(s[:i]) + 1 }

// runeText shows the character at the start of s as a message quotes
// it: '日', escaped when it would not show as itself ('\u202e', '\x1b'),
// or the byte when s does not start with UTF-8.
func runeText(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("byte %#x (not UTF-8)", s[0])
	}
	return strconv.QuoteRune(r)
}

func validNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == ':' || c == '%'
}

// parseRangeSet reads the inside of brackets: "01-04,07,10-20/5".
func parseRangeSet(s string) ([]nodeRange, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty range []")
	}
	var out []nodeRange
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := uint64(1)
		if hasStep {
			n, err := strconv.ParseUint(stepText, 10, 32)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("range %q: step must be a positive number", part)
			}
			step = n
		}
		loText, hiText, isRange := strings.Cut(rng, "-")
		if !isRange {
			hiText = loText
		}
		lo, err := parseNum(loText)
		if err != nil {
			return nil, fmt.Errorf("range %q: %w", part, err)
		}
		hi, err := parseNum(hiText)
		if err != nil {
			return nil, fmt.Errorf("range %q: %w", part, err)
		}
		if hi < lo {
			return nil, fmt.Errorf("range %q: %s is greater than %s", part, loText, hiText)
		}
		width := padWidth(loText)
		if width > 0 && formatNum(hi, width) != hiText {
			return nil, fmt.Errorf("range %q: %s and %s are padded differently", part, loText, hiText)
		}
		out = append(out, nodeRange{lo: lo, hi: hi, step: step, width: width})
	}
	return out, nil
}

// expandRanges writes the numbers of a range set; the caller has bounded
// their count.
func expandRanges(ranges []nodeRange) []string {
	out := make([]string, 0, rangeSetSize(ranges))
	for _, r := range ranges {
		for v := r.lo; v <= r.hi; v += r.step {
			out = append(out, formatNum(v, r.width))
			if r.hi-v < r.step {
				break
			}
		}
	}
	return out
}

// expandRangeSet expands the inside of brackets, at most MaxNodeSetSize
// numbers.
func expandRangeSet(s string) ([]string, error) {
	ranges, err := parseRangeSet(s)
	if err != nil {
		return nil, err
	}
	if n := rangeSetSize(ranges); n > MaxNodeSetSize {
		return nil, fmt.Errorf("range set %q: %s numbers, more than %d", s, sizeText(n), MaxNodeSetSize)
	}
	return expandRanges(ranges), nil
}

func parseNum(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("missing number")
	}
	if len(s) > maxDigits {
		return 0, fmt.Errorf("number %q has more than %d digits", s, maxDigits)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a number", s)
		}
	}
	return strconv.ParseUint(s, 10, 64)
}

// padWidth is the zero-padded width of a number as written, 0 when natural.
func padWidth(s string) int {
	if len(s) > 1 && s[0] == '0' {
		return len(s)
	}
	return 0
}

func formatNum(v uint64, width int) string {
	s := strconv.FormatUint(v, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

// splitName cuts a name into text and number runs: "rack2-gpu07" is
// texts ["rack", "-gpu", ""] and nums ["2", "07"].
func splitName(name string) (texts, nums []string) {
	text := strings.Builder{}
	for i := 0; i < len(name); {
		if name[i] < '0' || name[i] > '9' {
			text.WriteByte(name[i])
			i++
			continue
		}
		j := i
		for j < len(name) && name[j] >= '0' && name[j] <= '9' {
			j++
		}
		if j-i > maxDigits {
			text.WriteString(name[i:j])
		} else {
			texts = append(texts, text.String())
			text.Reset()
			nums = append(nums, name[i:j])
		}
		i = j
	}
	return append(texts, text.String()), nums
}

// CompareNames orders host names naturally: gpu2 before gpu10, rack1-gpu9
// before rack2-gpu1; among equal numbers the shorter spelling comes first.
func CompareNames(a, b string) int {
	at, an := splitName(a)
	bt, bn := splitName(b)
	for i := 0; ; i++ {
		if i >= len(at) || i >= len(bt) {
			return len(at) - len(bt)
		}
		if c := strings.Compare(at[i], bt[i]); c != 0 {
			return c
		}
		if i >= len(an) || i >= len(bn) {
			if c := len(an) - len(bn); c != 0 {
				return c
			}
			continue
		}
		av, _ := strconv.ParseUint(an[i], 10, 64)
		bv, _ := strconv.ParseUint(bn[i], 10, 64)
		switch {
		case av < bv:
			return -1
		case av > bv:
			return 1
		}
		if c := len(an[i]) - len(bn[i]); c != 0 {
			return c
		}
	}
}

// FoldNames folds a list of host names into the shortest usual node-set
// form, the inverse of expansion: gpu01..gpu06 and gpu08 fold to
// "gpu[01-06,08]", and several numeric positions fold too
// ("rack[1-2]-gpu[01-08]"). Duplicates are dropped; the result expands to
// exactly the set of names given. Names holding characters that have a
// meaning in node sets are returned as they are.
func FoldNames(names []string) string {
	type group struct {
		texts []string
		rows  [][]string // numeric fields per name
	}
	groups := map[string]*group{}
	var keys []string
	seen := map[string]bool{}
	var plain []string
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		texts, nums := splitName(n)
		if len(nums) == 0 || strings.ContainsAny(n, "[],!&^@ ") {
			plain = append(plain, n)
			continue
		}
		k := strings.Join(texts, "\x00")
		g := groups[k]
		if g == nil {
			g = &group{texts: texts}
			groups[k] = g
			keys = append(keys, k)
		}
		g.rows = append(g.rows, nums)
	}
	out := plain
	for _, k := range keys {
		g := groups[k]
		for _, fields := range foldRows(g.rows) {
			var b strings.Builder
			for i, t := range g.texts {
				b.WriteString(t)
				if i < len(fields) {
					f := fields[i]
					if strings.ContainsAny(f, ",-") {
						f = "[" + f + "]"
					}
					b.WriteString(f)
				}
			}
			out = append(out, b.String())
		}
	}
	slices.SortFunc(out, CompareNames)
	return strings.Join(out, ",")
}

// foldRows folds rows of numeric fields, last field first: rows that agree on
// every other field have their last field merged into a range set, then rows
// that agree on everything but the field before it are merged, and so on.
func foldRows(rows [][]string) [][]string {
	dims := len(rows[0])
	for d := dims - 1; d >= 0; d-- {
		type bucket struct {
			key    []string
			values []string
		}
		var order []string
		buckets := map[string]*bucket{}
		for _, r := range rows {
			key := slices.Concat(r[:d], r[d+1:])
			k := strings.Join(key, "\x00")
			b := buckets[k]
			if b == nil {
				b = &bucket{key: key}
				buckets[k] = b
				order = append(order, k)
			}
			b.values = append(b.values, r[d])
		}
		next := make([][]string, 0, len(order))
		for _, k := range order {
			b := buckets[k]
			row := slices.Concat(b.key[:d], []string{foldRangeSet(b.values)}, b.key[d:])
			next = append(next, row)
		}
		rows = next
	}
	return rows
}

// foldRangeSet folds numbers as written ("01", "02", "07") into "01-02,07".
// A value that is already a folded range set is split first.
func foldRangeSet(values []string) string {
	type num struct {
		v uint64
		s string
	}
	var nums []num
	seen := map[string]bool{}
	for _, val := range values {
		items, err := expandRangeSet(val)
		if err != nil {
			items = []string{val}
		}
		for _, s := range items {
			if seen[s] {
				continue
			}
			seen[s] = true
			v, _ := strconv.ParseUint(s, 10, 64)
			nums = append(nums, num{v, s})
		}
	}
	slices.SortFunc(nums, func(a, b num) int {
		if a.v != b.v {
			if a.v < b.v {
				return -1
			}
			return 1
		}
		return len(a.s) - len(b.s)
	})
	var parts []string
	for i := 0; i < len(nums); {
		lo, width := nums[i], padWidth(nums[i].s)
		hi := lo
		j := i + 1
		for j < len(nums) && nums[j].v == hi.v+1 && formatNum(nums[j].v, width) == nums[j].s {
			hi = nums[j]
			j++
		}
		if hi.v == lo.v {
			parts = append(parts, lo.s)
		} else {
			parts = append(parts, lo.s+"-"+hi.s)
		}
		// Values equal to one already placed but spelled differently
		// (1 and 01) start their own range on the next pass.
		i = j
	}
	return strings.Join(parts, ",")
}
