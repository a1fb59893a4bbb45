package problem

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestPlaceString(t *testing.T) {
	for _, c := range []struct {
		p    Place
		want string
	}{
		{Place{}, ""},
		{Place{Line: 4}, "line 4"},
		{Place{File: "a.toml"}, "a.toml"},
		{Place{File: "a.toml", Line: 3}, "a.toml:3"},
		{Place{File: "a.toml", Line: 3, Column: 7}, "a.toml:3:7"},
		{Place{Host: "dgx01"}, "dgx01"},
		{Place{Host: "dgx01", Line: 2}, "dgx01: line 2"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}

type hostErr struct{ host string }

func (e hostErr) Error() string { return "dial " + e.host + ": refused" }
func (e hostErr) Where() Place  { return Place{Host: e.host} }

// List places every error it can, looks through joins and through
// wrappers that only add a prefix, and keeps a wrapper that says more.
func TestList(t *testing.T) {
	limit := errors.New("limit")
	err := errors.Join(
		&Error{Place: Place{File: "inv.toml", Line: 2, Column: 1}, Msg: "unknown key"},
		fmt.Errorf("catalog: %w", &Error{Place: Place{File: "c.toml"}, Msg: "too big", Err: limit}),
		hostErr{"dgx02"},
		errors.New("plain"),
		fmt.Errorf("reading x: %w, then gave up", errors.New("eof")),
	)
	want := []Problem{
		{Place{File: "inv.toml", Line: 2, Column: 1}, "unknown key"},
		{Place{File: "c.toml"}, "too big"},
		{Place{Host: "dgx02"}, "dial dgx02: refused"},
		{Place{}, "plain"},
		{Place{}, "reading x: eof, then gave up"},
	}
	if got := List(err); !reflect.DeepEqual(got, want) {
		t.Errorf("List:\n got %+v\nwant %+v", got, want)
	}
	if !errors.Is(err, limit) {
		t.Error("an *Error's cause is lost")
	}
	if got := List(nil); got != nil {
		t.Errorf("List(nil) = %v", got)
	}
}

// Join keeps the first max problems and counts the others in a last one,
// placed in their file when they share it; a count joined again is
// carried on, not counted as one problem.
func TestJoin(t *testing.T) {
	var errs []error
	for i := 1; i <= 5; i++ {
		errs = append(errs, &Error{Place: Place{File: "a.toml", Line: i}, Msg: "bad"})
	}
	got := List(Join(2, errs...))
	if len(got) != 3 || got[2].Message != "and 3 more problems" || got[2].File != "a.toml" {
		t.Fatalf("Join(2, 5 problems) = %+v", got)
	}
	again := List(Join(2, Join(2, errs...), errors.New("elsewhere")))
	if len(again) != 3 || again[2].Message != "and 4 more problems" || again[2].File != "" {
		t.Errorf("joined again = %+v, want the 3 carried and 1 more, in no one file", again)
	}
	if Join(3, nil, nil) != nil {
		t.Error("Join of nils is not nil")
	}
}

// Sorted orders problems by file, line and column, the unplaced first,
// each file's count of problems left out after its problems.
func TestSorted(t *testing.T) {
	err := errors.Join(
		&Error{Place: Place{File: "b.toml", Line: 2}, Msg: "b2"},
		&Error{Place: Place{File: "a.toml", Line: 8, Column: 1}, Msg: "a8"},
		&Error{Place: Place{File: "a.toml"}, Msg: "and 3 more problems", More: 3},
		errors.New("plain"),
		&Error{Place: Place{File: "a.toml", Line: 2, Column: 9}, Msg: "a2:9"},
		&Error{Place: Place{File: "a.toml", Line: 2, Column: 3}, Msg: "a2:3"},
	)
	var got []string
	for _, p := range List(Sorted(err)) {
		got = append(got, p.Message)
	}
	if want := []string{"plain", "a2:3", "a2:9", "a8", "and 3 more problems", "b2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Sorted: %q, want %q", got, want)
	}
}
