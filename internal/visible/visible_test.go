package visible

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestStringAndText(t *testing.T) {
	for _, tc := range []struct{ in, name, text string }{
		{"gpu01", "gpu01", "gpu01"},
		{"日本語 ✓ é", "日本語 ✓ é", "日本語 ✓ é"},
		{"gpu\x1b]0;pwned\a\x1b[31m", `gpu\x1b]0;pwned\a\x1b[31m`, `gpu\x1b]0;pwned\a\x1b[31m`},
		{"a\nb\tc\r", `a\nb\tc\r`, "a\nb\tc\\r"},
		{"\x00\x08\x0b\x0c\x7f", `\x00\b\v\f\u007f`, `\x00\b\v\f\u007f`},
		{"csi \u009b31m, nel \u0085", `csi \u009b31m, nel \u0085`, `csi \u009b31m, nel \u0085`},
		{"bad \xff\x9b utf-8 \xe2\x82", `bad \xff\x9b utf-8 \xe2\x82`, `bad \xff\x9b utf-8 \xe2\x82`},
		{`back\slash "quotes"`, `back\slash "quotes"`, `back\slash "quotes"`},
		{"gpu01\u202e10upg", `gpu01\u202e10upg`, `gpu01\u202e10upg`},
		{"\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069", `\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069`, `\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069`},
		{"ok\u2028fake line\u2029\u200e\u200f\u061c mid\ufeffbom", `ok\u2028fake line\u2029\u200e\u200f\u061c mid\ufeffbom`, `ok\u2028fake line\u2029\u200e\u200f\u061c mid\ufeffbom`},
		{"zwj 👩\u200d💻 arabic \u0627\u0644", "zwj 👩\u200d💻 arabic \u0627\u0644", "zwj 👩\u200d💻 arabic \u0627\u0644"},
	} {
		if got := String(tc.in); got != tc.name {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.name)
		}
		if got := Text(tc.in); got != tc.text {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
}

// TestWriterKeepsJSON: JSON may hold DEL and C1 controls raw; escaped, it
// is still JSON, with the same value.
func TestWriterKeepsJSON(t *testing.T) {
	v := map[string]string{"host": "gpu\x1b]0;pwned\a\x7f\u009b[31m\u202e\u2066\u200f\u061c\ufeff"}
	doc, _ := json.MarshalIndent(v, "", "  ")
	var out strings.Builder
	n, err := NewWriter(&out).Write(doc)
	if err != nil || n != len(doc) {
		t.Fatalf("Write = %d, %v; want %d", n, err, len(doc))
	}
	if strings.ContainsAny(out.String(), "\x1b\a\x7f\u009b\u202e\u2066\u200f\u061c\ufeff") {
		t.Errorf("Writer let a control character through: %q", out.String())
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(out.String()), &back); err != nil || back["host"] != v["host"] {
		t.Errorf("escaped JSON %s reads back as %q, %v; want %q", out.String(), back["host"], err, v["host"])
	}
}

// TestWriterJoinsSplitCharacters: a character cut between two writes is
// written whole; a start that nothing completes is escaped by Flush.
func TestWriterJoinsSplitCharacters(t *testing.T) {
	var out strings.Builder
	w := NewWriter(&out)
	for _, p := range []string{"price: \xe2", "\x82", "\xac 12 \xf0\x9f", "\x98\x80 ok \xe2\x82"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := `price: € 12 😀 ok \xe2\x82`; out.String() != want {
		t.Errorf("written in pieces: %q, want %q", out.String(), want)
	}
}

func TestUnsafe(t *testing.T) {
	for _, r := range []rune{0, '\n', '\t', 0x1b, 0x7f, 0x85, 0x9b, 0x9f, 0x61c, 0x200e, 0x200f, 0x2028, 0x2029,
		0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0xfeff} {
		if !Unsafe(r) {
			t.Errorf("Unsafe(%U) = false", r)
		}
	}
	for _, r := range []rune{' ', 'a', '~', 0xa0, 0xe9, 0x627, 0x61b, 0x61d, 0x200b, 0x200d, 0x2027, 0x202f, 0x2065, 0x206a, 0xfeff - 1, 0xfffd, 0x1f600} {
		if Unsafe(r) {
			t.Errorf("Unsafe(%U) = true", r)
		}
	}
}
