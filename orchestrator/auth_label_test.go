package orchestrator

import (
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

type commentSigner struct{ comment string }

func (s commentSigner) PublicKey() ssh.PublicKey { return &agent.Key{Comment: s.comment} }
func (commentSigner) Sign(io.Reader, []byte) (*ssh.Signature, error) {
	return nil, io.EOF
}

// A long agent key comment is cut between characters, never through one:
// the log line it lands in stays valid UTF-8.
func TestAgentLabelCutsWholeCharacters(t *testing.T) {
	c := strings.Repeat("a", 63) + "é@build-host" // é straddles byte 64
	got := agentLabel(commentSigner{c})
	if !utf8.ValidString(got) || got != "agent: "+strings.Repeat("a", 63)+"…" {
		t.Errorf("agentLabel = %q", got)
	}
	if got := agentLabel(commentSigner{"ops@laptop"}); got != "agent: ops@laptop" {
		t.Errorf("short comment: %q", got)
	}
}

// --timeout and --inactivity-timeout from the command line cap every
// command that has a limit of its own; a limit from the inventory or the
// defaults caps nothing, and a command with no limit (a sampling
// session) keeps none.
func TestCappedByTheOperatorsFlags(t *testing.T) {
	step := RunOptions{Timeout: 30 * time.Minute, Inactivity: 30 * time.Minute}
	flagged := Target{CommandTimeout: 5 * time.Second, InactivityTimeout: 3 * time.Second,
		Sources: map[string]string{"CommandTimeout": "flag", "InactivityTimeout": "flag"}}
	if got := flagged.Capped(step); got.Timeout != 5*time.Second || got.Inactivity != 3*time.Second {
		t.Errorf("capped by the flags: %v, %v", got.Timeout, got.Inactivity)
	}
	if got := flagged.Capped(RunOptions{}); got.Timeout != 0 || got.Inactivity != 0 {
		t.Errorf("a command with no limit got %v, %v", got.Timeout, got.Inactivity)
	}
	if got := flagged.Capped(RunOptions{Timeout: time.Second}); got.Timeout != time.Second {
		t.Errorf("a shorter limit of its own became %v", got.Timeout)
	}
	inventory := Target{CommandTimeout: 10 * time.Minute, Sources: map[string]string{"CommandTimeout": "inventory.toml [defaults]"}}
	if got := inventory.Capped(step); got.Timeout != 30*time.Minute {
		t.Errorf("the inventory's timeout capped a step: %v", got.Timeout)
	}
}
