package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	cells "github.com/gpulab/gpulab/internal/text"
)

// The record renderer: goldmark parses the Markdown (CommonMark and GFM
// tables), and the blocks a lab record holds are drawn here with
// lipgloss: headings, paragraphs, lists, block quotes, code and tables
// sized to their content. A renderer such as glamour would do it too, but
// it doubled the binary (52 to 105 MB: its templates keep every method of
// client-go's types alive) and added 12 ms to start-up.
var (
	mdParser    = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough)).Parser()
	mdH1        = lipgloss.NewStyle().Bold(true).Underline(true)
	mdH2        = lipgloss.NewStyle().Bold(true)
	mdStrong    = lipgloss.NewStyle().Bold(true)
	mdEmph      = lipgloss.NewStyle().Italic(true)
	mdCode      = lipgloss.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "#5A3E9B", Dark: "#C5A3FF"})
	mdFaint     = lipgloss.NewStyle().Faint(true)
	mdTableHead = lipgloss.NewStyle().Bold(true)
)

// renderMarkdown draws a Markdown document (a lab record) formatted for a
// width: headings, lists, emphasis and tables as a terminal shows them.
// No Markdown marker is left (no **, no #, no pipes).
func renderMarkdown(md string, width int) []string {
	if len(md) > maxRendered { // rendering is on the UI's loop: a huge record is shown as it is
		return plainLines(md, width)
	}
	src := []byte(expandTabs(md, 4))
	r := &mdRenderer{src: src, width: max(20, width-2)}
	r.blocks(mdParser.Parse(text.NewReader(src)), "")
	for len(r.out) > 0 && strings.TrimSpace(r.out[len(r.out)-1]) == "" {
		r.out = r.out[:len(r.out)-1]
	}
	return r.out
}

// expandTabs replaces each tab with the spaces to the next multiple of
// stop columns: a tab that reached the terminal would move its cursor to
// the terminal's own tab stop and misplace the rest of the frame.
// CommonMark reads a tab as spaces to a stop of 4 where indentation
// matters, so expanding with 4 keeps the document's structure.
func expandTabs(s string, stop int) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		switch r {
		case '\t':
			n := stop - col%stop
			b.WriteString(strings.Repeat(" ", n))
			col += n
		case '\n':
			b.WriteRune(r)
			col = 0
		default:
			b.WriteRune(r)
			col += ansi.StringWidth(string(r))
		}
	}
	return b.String()
}

// maxRendered is the largest record rendered (a record of 8 hosts is some
// 20 KiB).
const maxRendered = 1 << 20

// plainLines is text wrapped to width, as it is.
func plainLines(text string, width int) []string {
	var lines []string
	for _, l := range strings.Split(expandTabs(text, 8), "\n") {
		lines = append(lines, wrap(l, width)...)
	}
	return lines
}

// maxNest is how deep lists and quotes indent: deeper ones stay at that
// depth, so that a hostile record's 200 levels do not push the text out of
// the pane.
const maxNest = 24

func nest(prefix string) string {
	if ansi.StringWidth(prefix) > maxNest {
		return cells.Clip(prefix, maxNest)
	}
	return prefix
}

type mdRenderer struct {
	src   []byte
	width int
	out   []string
}

func (r *mdRenderer) blank() {
	if len(r.out) > 0 && r.out[len(r.out)-1] != "" {
		r.out = append(r.out, "")
	}
}

// para wraps styled text to the width left by prefix, the first line
// with first instead of prefix (a list bullet).
func (r *mdRenderer) para(s, first, prefix string) {
	w := max(10, r.width-ansi.StringWidth(prefix))
	for i, l := range strings.Split(ansi.Wordwrap(s, w, ""), "\n") { // at spaces only: a path or a flag is never split
		l = ansi.Hardwrap(l, w, true)
		for j, part := range strings.Split(l, "\n") {
			p := prefix
			if i == 0 && j == 0 {
				p = first
			}
			r.out = append(r.out, p+part)
		}
	}
}

// blocks draws a node's block children, each line after prefix.
func (r *mdRenderer) blocks(n ast.Node, prefix string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.block(c, prefix)
	}
}

func (r *mdRenderer) block(n ast.Node, prefix string) {
	switch b := n.(type) {
	case *ast.Heading:
		r.blank()
		t := r.inline(b)
		// Never upper-cased: ids and host names keep their case, and an
		// escaped control character its (\x1b, not \X1B).
		switch b.Level {
		case 1:
			r.para(mdH1.Render(t), prefix, prefix)
			r.out = append(r.out, prefix+mdFaint.Render(strings.Repeat("═", min(ansi.StringWidth(t), r.width))))
		case 2:
			r.para(mdH2.Render(t), prefix, prefix)
			r.out = append(r.out, prefix+mdFaint.Render(strings.Repeat("─", min(ansi.StringWidth(t), r.width))))
		default:
			r.para(mdH2.Render("▸ "+t), prefix, prefix)
		}
		r.out = append(r.out, "")
	case *ast.Paragraph, *ast.TextBlock:
		r.para(r.inline(b), prefix, prefix)
		if _, tight := n.(*ast.TextBlock); !tight {
			r.out = append(r.out, prefix)
		}
	case *ast.List:
		r.list(b, nest(prefix))
		r.blank()
	case *ast.Blockquote:
		r.blocks(b, nest(prefix)+"│ ")
		r.blank()
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			l := strings.TrimRight(string(seg.Value(r.src)), "\n")
			r.out = append(r.out, prefix+"    "+mdCode.Render(cells.Cut(ansi.Strip(l), r.width-4-ansi.StringWidth(prefix))))
		}
		r.blank()
	case *east.Table:
		r.table(b, prefix)
		r.blank()
	case *ast.ThematicBreak:
		r.out = append(r.out, prefix+mdFaint.Render(strings.Repeat("─", min(r.width, 40))), "")
	case *ast.HTMLBlock:
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			r.para(ansi.Strip(strings.TrimRight(string(seg.Value(r.src)), "\n")), prefix, prefix)
		}
	default:
		r.blocks(n, prefix)
	}
}

// list draws a list's items: bullets or numbers, text under the first
// line's text.
func (r *mdRenderer) list(l *ast.List, prefix string) {
	i := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		mark := "• "
		if l.IsOrdered() {
			mark = strings.Repeat(" ", max(0, 2-len(strconv.Itoa(i)))) + strconv.Itoa(i) + ". "
			i++
		}
		indent := prefix + strings.Repeat(" ", ansi.StringWidth(mark))
		first := true
		for c := item.FirstChild(); c != nil; c = c.NextSibling() {
			switch c.(type) {
			case *ast.Paragraph, *ast.TextBlock:
				p := indent
				if first {
					p = prefix + mark
				}
				r.para(r.inline(c), p, indent)
			default:
				if first {
					r.out = append(r.out, prefix+mark)
				}
				r.block(c, indent)
			}
			first = false
		}
	}
}

// inline renders a block's inline content: emphasis, code, links (their
// text and address) and images (their title and file), styled.
func (r *mdRenderer) inline(n ast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b.WriteString(r.inlineNode(c))
	}
	return b.String()
}

func (r *mdRenderer) inlineNode(n ast.Node) string {
	switch v := n.(type) {
	case *ast.Text:
		s := string(v.Segment.Value(r.src))
		if v.SoftLineBreak() {
			s += " "
		}
		if v.HardLineBreak() {
			s += "\n"
		}
		return s
	case *ast.String:
		return string(v.Value)
	case *ast.CodeSpan:
		return mdCode.Render(r.plain(v))
	case *ast.Emphasis:
		if v.Level >= 2 {
			return mdStrong.Render(r.inline(v))
		}
		return mdEmph.Render(r.inline(v))
	case *east.Strikethrough:
		return lipgloss.NewStyle().Strikethrough(true).Render(r.inline(v))
	case *ast.Link:
		return r.inline(v) + mdFaint.Render(" ("+string(v.Destination)+")")
	case *ast.AutoLink:
		return string(v.URL(r.src))
	case *ast.Image:
		return mdFaint.Render("[picture: "+r.plain(v)+"] ") + string(v.Destination)
	case *ast.RawHTML:
		var b strings.Builder
		for i := 0; i < v.Segments.Len(); i++ {
			seg := v.Segments.At(i)
			b.Write(seg.Value(r.src))
		}
		return b.String()
	}
	return r.inline(n)
}

// plain is a node's text without styles.
func (r *mdRenderer) plain(n ast.Node) string {
	return ansi.Strip(r.inline(n))
}
