package remote

import (
	"strings"
	"testing"
)

// Snapshots arrive in chunks that split lines anywhere; each whole line is
// decoded once, and a line that is not a snapshot is counted, not kept.
func TestWatchFeedSplitsLines(t *testing.T) {
	w := &Watch{}
	line := `{"schema":1,"host":"gpu01","nvml":{"available":true},"gpus":[]}` + "\n"
	stream := line + "Segmentation fault\n" + line + line
	var got int
	for i := 0; i < len(stream); i += 7 {
		got += len(w.feed([]byte(stream[i:min(i+7, len(stream))])))
	}
	if got != 3 || len(w.snaps) != 3 || w.bad != 1 || w.snaps[2].Host != "gpu01" {
		t.Fatalf("decoded %d (kept %d), %d bad lines", got, len(w.snaps), w.bad)
	}
}

func TestDecodeRefusesWhatItCannotRead(t *testing.T) {
	for in, want := range map[string]string{
		`{"schema":2}`:            "snapshot schema 2 is newer than this gpulab understands (1)",
		`{"host":"x"}`:            "not a probe snapshot: no schema field",
		`nvmlprobe: bad flag -x`:  "not a probe snapshot: invalid character",
		`{"schema":1,"gpus":[]} `: "",
	} {
		_, err := Decode([]byte(in))
		if (want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("Decode(%s) = %v, want %q", in, err, want)
		}
	}
}
