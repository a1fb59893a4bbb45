package inventory

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestExpandPattern(t *testing.T) {
	tests := []struct {
		in   string
		want string // names joined by spaces
	}{
		{"gpu01", "gpu01"},
		{"gpu[01-04,07]", "gpu01 gpu02 gpu03 gpu04 gpu07"},
		{"gpu[8-11]", "gpu8 gpu9 gpu10 gpu11"},
		{"gpu[08-11]", "gpu08 gpu09 gpu10 gpu11"},
		{"gpu[098-100]", "gpu098 gpu099 gpu100"},
		{"gpu[98-100]", "gpu98 gpu99 gpu100"},
		{"n[1-9/4]", "n1 n5 n9"},
		{"r[1-2]-g[1-2]", "r1-g1 r1-g2 r2-g1 r2-g2"},
		{"dgx-a100-[1,3].lab", "dgx-a100-1.lab dgx-a100-3.lab"},
		{"[1-2]x", "1x 2x"},
	}
	for _, tt := range tests {
		got, err := ExpandPattern(tt.in)
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("ExpandPattern(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	n, err := ExpandPattern("gpu[001-128]")
	if err != nil || len(n) != 128 || n[0] != "gpu001" || n[127] != "gpu128" {
		t.Errorf("ExpandPattern(gpu[001-128]) = %d names (%v), want gpu001..gpu128", len(n), err)
	}
}

func TestExpandPatternErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty name"},
		{"gpu[01-04", `node set "gpu[01-04": column 4: '[' is never closed`},
		{"gpu01]", "column 6: ']' without '['"},
		{"gpu[]", "column 5: empty range []"},
		{"gpu[4-1]", `range "4-1": 4 is greater than 1`},
		{"gpu[a-b]", `range "a-b": "a" is not a number`},
		{"gpu[01-9]", `range "01-9": 01 and 9 are padded differently`},
		{"gpu[1-9/0]", "step must be a positive number"},
		{"gpu 01", `column 4: ' ' cannot appear in a host name`},
		{"gpu[1-100000000]", `node set "gpu[1-100000000]" expands to 100000000 names, more than 65536`},
		{"r[1-2000]-g[1-2000]", "expands to 4000000 names, more than 65536"},
		{"-gpu[1-2]", `node set "-gpu[1-2]": column 1: a host name cannot start with '-'`},
		// Columns count characters, and the character is shown whole, or
		// escaped when it would not show (bidi, control); a byte that is
		// not UTF-8 is named as a byte.
		{"日本語ホスト名前長い", `node set "日本語ホスト名前長い": column 1: '日' cannot appear in a host name`},
		{"gpu\u202e01", `node set "gpu\u202e01": column 4: '\u202e' cannot appear in a host name`},
		{"gpü01", `column 3: 'ü' cannot appear in a host name`},
		{"gpu\x1b01", `column 4: '\x1b' cannot appear in a host name`},
		{"gpu\xe201", `column 4: byte 0xe2 (not UTF-8) cannot appear in a host name`},
	}
	for _, tt := range tests {
		_, err := ExpandPattern(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ExpandPattern(%q) error = %v, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

// TestNodeSetSize: a node set is weighed from its ranges, never expanded:
// sizes far beyond any memory are exact, products and sums that overflow
// a uint64 saturate, and ExpandPattern refuses them with the size.
func TestNodeSetSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
	}{
		{"gpu01", 1},
		{"gpu[01-04,07]", 5},
		{"n[1-9/4]", 3},
		{"n[1-10/4]", 3},
		{"r[1-2]-g[1-2]", 4},
		{"gpu[1,1]", 2}, // as ExpandPattern: both spellings
		{"a[0-999]b[0-999]", 1_000_000},
		{"n[0-999999999999999999]", 1_000_000_000_000_000_000},
		{"a[0-999999999]b[0-999999999]", 1_000_000_000_000_000_000},
		{"a[0-999999999]b[0-999999999]c[0-99]", math.MaxUint64},
		{"a[0-999999999999999999,0-999999999999999999,0-999999999999999999,0-999999999999999999]", 4_000_000_000_000_000_000},
		{"a[" + strings.Repeat("0-999999999999999999,", 19) + "0-999999999999999999]", math.MaxUint64},
	}
	for _, tt := range tests {
		got, err := NodeSetSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NodeSetSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	if _, err := NodeSetSize("gpu[01-04"); err == nil || !strings.Contains(err.Error(), "'[' is never closed") {
		t.Errorf("NodeSetSize(gpu[01-04) error = %v, want ExpandPattern's", err)
	}
	// Sizes no expansion could count are in the errors: the refusal comes
	// before anything is expanded.
	for in, want := range map[string]string{
		"n[0-999999999999999999]":                "expands to 1000000000000000000 names, more than 65536",
		"a[0-999999999]b[0-999999999]c[0-99]":    "expands to more than 18446744073709551614 names, more than 65536",
		fmt.Sprintf("n[1-%d]", MaxNodeSetSize+1): fmt.Sprintf("expands to %d names, more than %d", MaxNodeSetSize+1, MaxNodeSetSize),
	} {
		if _, err := ExpandPattern(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ExpandPattern(%q) error = %v, want %q", in, err, want)
		}
	}
	if names, err := ExpandPattern(fmt.Sprintf("n[1-%d]", MaxNodeSetSize)); err != nil || len(names) != MaxNodeSetSize || names[MaxNodeSetSize-1] != fmt.Sprintf("n%d", MaxNodeSetSize) {
		t.Errorf("ExpandPattern(n[1-%d]) = %d names, %v; want all of them", MaxNodeSetSize, len(names), err)
	}
}

func TestFoldNames(t *testing.T) {
	tests := []struct {
		in   string // names separated by spaces
		want string
	}{
		{"gpu01 gpu02 gpu03 gpu04 gpu05 gpu06 gpu08", "gpu[01-06,08]"},
		{"gpu07", "gpu07"},
		{"gpu2 gpu10 gpu1 gpu3", "gpu[1-3,10]"},
		{"gpu9 gpu10 gpu11", "gpu[9-11]"},
		{"gpu09 gpu10 gpu11", "gpu[09-11]"},
		{"gpu1 gpu01", "gpu[1,01]"},
		{"login bastion gpu1", "bastion,gpu1,login"},
		{"r1-g1 r1-g2 r2-g1 r2-g2", "r[1-2]-g[1-2]"},
		{"r1-g1 r1-g2 r2-g1", "r1-g[1-2],r2-g1"},
		{"a1 b1 a2", "a[1-2],b1"},
		{"gpu01 gpu01", "gpu01"},
	}
	for _, tt := range tests {
		if got := FoldNames(strings.Fields(tt.in)); got != tt.want {
			t.Errorf("FoldNames(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// expandFolded expands a folded list (comma-separated patterns, commas inside
// brackets belonging to the pattern).
func expandFolded(t *testing.T, folded string) []string {
	t.Helper()
	var out []string
	for _, p := range splitTop(folded) {
		names, err := ExpandPattern(p)
		if err != nil {
			t.Fatalf("expand %q (from fold %q): %v", p, folded, err)
		}
		out = append(out, names...)
	}
	return out
}

func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func TestFoldExpandRoundTrip(t *testing.T) {
	for _, p := range []string{"gpu[001-128]", "gpu[01-04,07,09-12]", "rack[1-4]-gpu[01-08]", "n[1-99/7]", "gpu[95-105]"} {
		names, err := ExpandPattern(p)
		if err != nil {
			t.Fatal(err)
		}
		folded := FoldNames(names)
		back := expandFolded(t, folded)
		if !sameSet(back, names) {
			t.Errorf("ExpandPattern(FoldNames(ExpandPattern(%q))) via %q lost or added names", p, folded)
		}
	}
	if got := FoldNames(mustExpand(t, "rack[1-4]-gpu[01-08]")); got != "rack[1-4]-gpu[01-08]" {
		t.Errorf("FoldNames(expand(rack[1-4]-gpu[01-08])) = %q, want it unchanged", got)
	}
}

func mustExpand(t *testing.T, p string) []string {
	t.Helper()
	n, err := ExpandPattern(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func TestCompareNames(t *testing.T) {
	names := []string{"gpu10", "gpu9", "gpu010", "a", "gpu1", "rack2-gpu1", "rack1-gpu9"}
	slices.SortFunc(names, CompareNames)
	want := "a gpu1 gpu9 gpu10 gpu010 rack1-gpu9 rack2-gpu1"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("sorted = %q, want %q", got, want)
	}
}

// FuzzFoldExpand checks both directions: any list of host names folds to a
// node set that expands back to exactly that set, and any pattern that
// expands folds back to one that expands to the same names.
func FuzzFoldExpand(f *testing.F) {
	f.Add("gpu01 gpu02 gpu07 rack1-g1 rack2-g1 gpu1 gpu010", "gpu[01-04,07]")
	f.Add("a9 a10 a099 a100", "r[1-3]-g[08-10/2]")
	f.Fuzz(func(t *testing.T, list, pattern string) {
		var names []string
		for _, n := range strings.Fields(list) {
			if strings.IndexFunc(n, func(r rune) bool { return r > 127 || !validNameByte(byte(r)) }) >= 0 || n[0] == '-' {
				continue
			}
			names = append(names, n)
		}
		if len(names) > 0 {
			folded := FoldNames(names)
			if back := expandFolded(t, folded); !sameSet(back, names) {
				t.Fatalf("FoldNames(%q) = %q, which expands to %q", names, folded, back)
			}
		}
		expanded, err := ExpandPattern(pattern)
		if err != nil || len(expanded) > 5000 {
			return
		}
		folded := FoldNames(expanded)
		if back := expandFolded(t, folded); !sameSet(back, expanded) {
			t.Fatalf("FoldNames(ExpandPattern(%q)) = %q, which expands to %q", pattern, folded, back)
		}
	})
}
