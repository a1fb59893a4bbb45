package tui

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/gpulab/gpulab/internal/visible"
)

// The workbench measures text by grapheme clusters (lipgloss, x/ansi); a
// terminal draws it one character at a time (wcwidth: tmux, xterm, most
// others) or by clusters of its own reading. Where the two disagree, a
// line is drawn wider or narrower than it was measured, the terminal
// wraps or leaves a gap, and every line after it lands in the wrong place:
// one 👍🏽 in a host's output scrolled the tab bar off screen. uniform
// takes out what they disagree on, so that every cluster left is as wide
// for one as for the other.

// zwsp is ZERO WIDTH SPACE: no terminal draws it, and it ends a grapheme
// cluster on both sides, so that what follows is measured on its own.
const zwsp = "\u200b"

// dropped reports whether r is taken out of text before it is drawn: the
// characters that join or restyle emoji, which a cluster-counting library
// folds into one 2-column emoji and a terminal counts one by one (or not
// at all): ZERO WIDTH JOINER (👨‍👩‍👧 becomes 👨👩👧), the text and emoji
// variation selectors (❤️ is 2 columns measured, 1 drawn), the skin-tone
// modifiers (👍🏽 is 2 measured, 4 drawn), the combining keycap (1️⃣ becomes
// 1), and the soft hyphen, which wcwidth draws and clusters do not.
func dropped(r rune) bool {
	switch {
	case r == 0x200d, r == 0xfe0e, r == 0xfe0f, r == 0x20e3, r == 0xad:
		return true
	}
	return r >= 0x1f3fb && r <= 0x1f3ff
}

// unsure reports whether r can make a cluster whose width depends on who
// counts it, or moves the cursor: marks and format characters (which
// clusters fold in), the few letters that join a cluster too, Hangul
// jamo, regional indicators (a flag is a pair), the emoji modifiers, and
// tabs and other control characters. A line
// without any is drawn as measured, and uniform leaves it alone.
func unsure(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x300: // Latin, and the C1 controls
		return r >= 0x80 && r < 0xa0 || r == 0xad
	case r >= 0x2500 && r < 0x2600: // box drawing, blocks, shapes: the frame's own
		return false
	case r >= 0x1100 && r <= 0x11ff, r >= 0xa960 && r <= 0xa97f, r >= 0xd7b0 && r <= 0xd7ff,
		r >= 0x1f1e6 && r <= 0x1f1ff, r >= 0x1f3fb && r <= 0x1f3ff:
		return true
	case r == 0xd4e, r == 0xe33, r == 0xeb3, r == 0xff9e, r == 0xff9f, r == 0x111c2, r == 0x111c3,
		r == 0x1193f, r == 0x11941, r == 0x11a3a, r >= 0x11a84 && r <= 0x11a89, r == 0x11d46, r == 0x11f02:
		return true // letters that join a cluster: prepended, or spacing vowels
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc, unicode.Cf)
}

// uniform returns line, which may carry styles (ANSI escape sequences),
// as every terminal draws it as wide as the workbench measures it: the
// characters dropped() names taken out, tabs expanded to 8-column stops,
// other control characters escaped (internal/visible), and a cluster whose
// characters a terminal counts wider than the cluster (a Devanagari or
// Thai syllable with spacing vowel signs) split with zero width spaces, or,
// for what has no width of its own to agree on (a lone regional indicator),
// escaped. CJK, right-to-left scripts, combining accents and flags (a
// pair of regional indicators) are the same width either way and are
// kept. Fast for what a frame mostly holds (ASCII, box drawing).
func uniform(line string) string {
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c >= 0x20 && c < 0x7f || c == 0x1b {
			continue
		}
		r, size := utf8.DecodeRuneInString(line[i:])
		if r == utf8.RuneError && size == 1 || unsure(r) {
			return uniformSlow(line)
		}
		i += size - 1
	}
	return line
}

func uniformSlow(line string) string {
	line = dropJoined(line)
	if strings.IndexFunc(line, dropped) >= 0 {
		line = strings.Map(func(r rune) rune {
			if dropped(r) {
				return -1
			}
			return r
		}, line)
	}
	var b strings.Builder
	b.Grow(len(line) + 8)
	col := 0
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == 0x1b: // a style: kept whole, no width
			_, _, n, _ := ansi.DecodeSequence(line[i:], 0, nil)
			n = max(1, n)
			b.WriteString(line[i : i+n])
			i += n
		case c == '\t':
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col, i = col+n, i+1
		case c >= 0x20 && c < 0x7f && (i+1 == len(line) || line[i+1] < utf8.RuneSelf):
			b.WriteByte(c) // ASCII that no mark follows: a cluster of its own
			col, i = col+1, i+1
		default:
			cluster, w := ansi.FirstGraphemeCluster(line[i:], ansi.GraphemeWidth)
			if len(cluster) == 0 {
				cluster = line[i : i+1]
			}
			col += writeCluster(&b, cluster, w)
			i += len(cluster)
		}
	}
	return b.String()
}

// writeCluster writes a grapheme cluster the workbench measured w columns
// wide so that a terminal draws it as wide as it is then measured, and
// returns that width.
func writeCluster(b *strings.Builder, cluster string, w int) int {
	r, size := utf8.DecodeRuneInString(cluster)
	if r == utf8.RuneError && size == 1 || visible.Unsafe(r) {
		e := visible.String(cluster)
		b.WriteString(e)
		return ansi.StringWidth(e)
	}
	if termCells(cluster) == w {
		b.WriteString(cluster)
		return w
	}
	// Each character that takes columns of its own, with the marks after
	// it, alone between zero width spaces.
	width := 0
	for start, i := 0, 0; i < len(cluster); {
		_, n := utf8.DecodeRuneInString(cluster[i:])
		i += n
		if i < len(cluster) {
			if next, _ := utf8.DecodeRuneInString(cluster[i:]); runeCells(next) == 0 {
				continue
			}
		}
		piece := cluster[start:i]
		if start > 0 {
			b.WriteString(zwsp)
		}
		if pw := ansi.StringWidth(piece); pw == termCells(piece) {
			b.WriteString(piece)
			width += pw
		} else if r, n := utf8.DecodeRuneInString(piece); n == len(piece) && r >= 0x1f1e6 && r <= 0x1f1ff {
			// A regional indicator without its pair: its letter, as wide as
			// it was measured (an escape was wider, and the line's end was
			// cut off).
			l := string(rune('A'+r-0x1f1e6)) + strings.Repeat(" ", max(0, pw-1))
			b.WriteString(l)
			width += len(l)
		} else {
			e := escapeRunes(piece)
			b.WriteString(e)
			width += len(e)
		}
		start = i
	}
	return width
}

// dropJoined takes each ZERO WIDTH JOINER out with the character it joins:
// 👨‍👩‍👧 is measured as one 2-column emoji and is drawn as its first, 👨,
// whatever the terminal (without the joiner alone, the three would be
// drawn 6 columns wide, and the line's end cut off).
func dropJoined(line string) string {
	const zwj = "\u200d"
	if !strings.Contains(line, zwj) {
		return line
	}
	var b strings.Builder
	for i := 0; i < len(line); {
		if strings.HasPrefix(line[i:], zwj) {
			i += len(zwj)
			if i < len(line) && line[i] != 0x1b {
				_, n := utf8.DecodeRuneInString(line[i:])
				i += n
			}
			continue
		}
		b.WriteByte(line[i])
		i++
	}
	return b.String()
}

// escapeRunes is s in Go's \u escapes: what shows of a character no two
// terminals draw alike.
func escapeRunes(s string) string {
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

// termCells is how many columns a terminal that counts one character at
// a time (wcwidth) draws s in; escape sequences take none.
func termCells(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			_, _, k, _ := ansi.DecodeSequence(s[i:], 0, nil)
			i += max(1, k)
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += runeCells(r)
		i += size
	}
	return n
}

// runeCells is the width glibc's wcwidth gives r (tmux draws with it):
// none for marks and format characters, for the vowels and finals of
// Hangul jamo (they join the syllable before them) and for controls; one
// for a regional indicator and the few format characters that show (the
// Arabic number signs); otherwise the character's own width.
func runeCells(r rune) int {
	switch {
	case r < 0x20 || r >= 0x7f && r < 0xa0:
		return 0
	case r < 0x7f:
		return 1
	case r == 0xad, r >= 0x600 && r <= 0x605, r == 0x6dd, r == 0x70f, r == 0x890, r == 0x891, r == 0x8e2,
		r == 0x110bd, r == 0x110cd, r >= 0x1f1e6 && r <= 0x1f1ff:
		return 1
	case r >= 0x1160 && r <= 0x11ff, r >= 0xd7b0 && r <= 0xd7ff:
		return 0
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	var buf [utf8.UTFMax]byte
	return ansi.StringWidth(string(buf[:utf8.EncodeRune(buf[:], r)]))
}
