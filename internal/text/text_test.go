package text

import (
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 hosts", 1: "1 host", 2: "2 hosts"} {
		if got := Plural(n, "host", "hosts"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCutCountsCells(t *testing.T) {
	for _, c := range []struct {
		s    string
		w    int
		want string
	}{
		{"dgx01", 10, "dgx01"},
		{"dgx01", 5, "dgx01"},
		{"dgx-long-name", 6, "dgx-l…"},
		{"GPU0–GPU4 链路", 12, "GPU0–GPU4 …"}, // a wide character is two cells: not split
		{"ééééé", 3, "éé…"},
		{"x", 0, ""},
	} {
		got := Cut(c.s, c.w)
		if got != c.want || !utf8.ValidString(got) || ansi.StringWidth(got) > c.w {
			t.Errorf("Cut(%q, %d) = %q (%d cells), want %q", c.s, c.w, got, ansi.StringWidth(got), c.want)
		}
	}
}
