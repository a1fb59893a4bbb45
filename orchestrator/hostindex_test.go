package orchestrator

import (
	"slices"
	"strings"
	"testing"

	sshconfig "github.com/kevinburke/ssh_config"
)

// The index finds exactly the blocks that matching every block finds,
// in the file's order, for literal, wildcard and negated patterns.
func TestHostIndexMatchesAsEveryBlock(t *testing.T) {
	cfg, err := sshconfig.Decode(strings.NewReader(`User top
Host dgx01 dgx02
  Port 1
Host dgx0?
  Port 2
Host !dgx02 dgx02 dgx03
  Port 3
Host !dgx01
  Port 4
Host * !dgx03
  Port 5
Host dgx01 dgx01
  Port 6
Host login.example dgx1*
  Port 7
Host dgx02
  Port 8
Host DGX01
  Port 9
`))
	if err != nil {
		t.Fatal(err)
	}
	x := indexHosts(cfg.Hosts)
	for _, alias := range []string{"dgx01", "dgx02", "dgx03", "dgx04", "dgx10", "DGX01", "login.example", "other", "", "dgx0"} {
		var want []*sshconfig.Host
		for _, h := range cfg.Hosts {
			if h.Matches(alias) {
				want = append(want, h)
			}
		}
		if got := x.matching(alias); !slices.Equal(got, want) {
			t.Errorf("%q: the index found %d blocks %v, every block %d %v", alias, len(got), got, len(want), want)
		}
	}
}
