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
	v := map[string]string{"host": "gpu\x1b]0;pwned\a\x7f\u009b[31m"}
	doc, _ := json.MarshalIndent(v, "", "  ")
	var out strings.Builder
	n, err := NewWriter(&out).Write(doc)
	if err != nil || n != len(doc) {
		t.Fatalf("Write = %d, %v; want %d", n, err, len(doc))
	}
	if strings.ContainsAny(out.String(), "\x1b\a\x7f\u009b") {
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
