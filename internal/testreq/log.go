package testreq

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// SkipLog names the file, when set, that every loud skip is appended to,
// one line each ("TEST<tab>REASON<tab>MESSAGE"), so that `make test` can end
// with a line counting them by reason: a skip that only -v shows is a skip
// nobody sees.
const SkipLog = "GPULAB_SKIP_LOG"

// logSkip appends the skip to $GPULAB_SKIP_LOG. Lines are short and
// written with one O_APPEND write, so packages tested at once do not mix
// them. A failure to log never fails the test.
func logSkip(t testing.TB, msg string) {
	path := os.Getenv(SkipLog)
	switch t.(type) {
	case *testing.T, *testing.B, *testing.F: // a real skip, not a test of Missing through a wrapper
	default:
		return
	}
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	flat := strings.Join(strings.Fields(msg), " ")
	_, _ = fmt.Fprintf(f, "%s\t%s\t%s\n", t.Name(), reason(flat), flat)
}

// reason is what a skip's message needs, for counting skips alike: its
// words up to the first colon ("kube test control plane", "tmux is not
// installed").
func reason(msg string) string {
	if r, _, ok := strings.Cut(msg, ":"); ok {
		return r
	}
	return msg
}
