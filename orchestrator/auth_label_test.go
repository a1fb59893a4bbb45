package orchestrator

import (
	"io"
	"strings"
	"testing"
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
