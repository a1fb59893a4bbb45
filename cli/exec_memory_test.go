package cli

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/sshtest"
)

// TestWriteJSONString: the streamed encoding is byte for byte what
// encoding/json writes, for text, HTML, every control character, line
// separators, and binary.
func TestWriteJSONString(t *testing.T) {
	random := make([]byte, 1<<20)
	rand.Read(random)
	var controls []byte
	for c := range 0x100 {
		controls = append(controls, byte(c), 'x')
	}
	inputs := map[string][]byte{
		"empty":      nil,
		"text":       []byte("driver 550.54.15\n\t\"quoted\" \\ <b>&</b> \u2028 \x1b[31m\x7f"),
		"random":     random,
		"controls":   controls,
		"truncated":  []byte("x\xe2\x82\xe2\x82\xac\xff\xed\xa0\x80\xf4\x90\x80\x80 \u2029"),
		"long valid": []byte(strings.Repeat("日本語 text\n", 10000)),
	}
	for name, in := range inputs {
		var got bytes.Buffer
		w := bufio.NewWriter(&got)
		writeJSONString(w, in)
		w.Flush()
		want, _ := json.Marshal(string(in))
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("writeJSONString(%s) differs from json.Marshal: %d bytes vs %d", name, got.Len(), len(want))
		}
	}
}

// BenchmarkExecBinaryOutput runs gpulab exec (in process) on real sshd
// hosts that each print 1.5 MB of binary, past the 1 MiB a result keeps,
// in each output mode. It reports the bytes allocated per host and the
// peak of the live heap per host (sampled every millisecond while exec
// runs, over the heap before it started).
func BenchmarkExecBinaryOutput(b *testing.B) {
	const hosts = 8
	f := sshtest.Start(b, hosts, sshtest.Options{})
	cfg := sshConfigFor(b, f, f.KnownHosts)
	env := map[string]string{"HOME": b.TempDir()}
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"folded", nil},
		{"no-fold", []string{"--no-fold"}},
		{"json", []string{"--json"}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			args := append(append([]string{"exec", "-H", fmt.Sprintf("gpu[01-%02d]", hosts), "-F", cfg}, mode.args...), "--", "head -c 1500000 /dev/urandom")
			var allocated, peak uint64
			for b.Loop() {
				runtime.GC()
				before := heapObjects()
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				stop := samplePeak(before)
				var errOut strings.Builder
				code := Main(args, Env{Stdout: io.Discard, Stderr: &errOut, Getenv: func(k string) string { return env[k] }})
				peak = max(peak, stop())
				runtime.ReadMemStats(&ms1)
				allocated += ms1.TotalAlloc - ms0.TotalAlloc
				if code != 0 {
					b.Fatalf("gpulab exec: exit %d\n%s", code, errOut.String())
				}
			}
			b.ReportMetric(float64(allocated)/float64(b.N)/hosts/(1<<20), "alloc-MiB/host")
			b.ReportMetric(float64(peak)/hosts/(1<<20), "peak-heap-MiB/host")
		})
	}
}

// heapObjects is the bytes of heap objects now, live or not yet swept.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// samplePeak samples the heap until the returned function is called, which
// returns the highest heap seen above base.
func samplePeak(base uint64) func() uint64 {
	done := make(chan struct{})
	result := make(chan uint64)
	go func() {
		var peak uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if h := heapObjects(); h > base {
				peak = max(peak, h-base)
			}
			select {
			case <-done:
				result <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-result }
}
