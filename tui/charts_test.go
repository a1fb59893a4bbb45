package tui

import "testing"

func TestSparkline(t *testing.T) {
	for _, tc := range []struct {
		values []float64
		width  int
		want   string
	}{
		{[]float64{0, 50, 100}, 10, "▁▅█"},
		{[]float64{0, 14, 29, 43, 57, 71, 86, 100}, 8, "▁▂▃▄▅▆▇█"},
		{[]float64{100, 0, 100}, 2, "▁█"}, // the latest width of them
		{[]float64{-5, 250}, 4, "▁█"},     // clamped
	} {
		if got := sparkline(tc.values, tc.width); got != tc.want {
			t.Errorf("sparkline(%v, %d) = %q, want %q", tc.values, tc.width, got, tc.want)
		}
	}
}

func TestHBar(t *testing.T) {
	for _, tc := range []struct {
		x, top float64
		width  int
		want   string
	}{
		{10, 10, 4, "████"},
		{5, 10, 4, "██"},
		{1, 10, 4, "▍"}, // 3.2 eighths of a cell
		{0, 10, 4, ""},
		{20, 10, 4, "████"}, // never past the width
		{1, 0, 4, ""},
	} {
		if got := hbar(tc.x, tc.top, tc.width); got != tc.want {
			t.Errorf("hbar(%v, %v, %d) = %q, want %q", tc.x, tc.top, tc.width, got, tc.want)
		}
	}
}
