package orchestrator

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$(x)", "'$(x)'"},
		{"/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi"},
		{"--query-gpu=name,uuid", "--query-gpu=name,uuid"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := QuoteArgs([]string{"nvidia-smi", "topo", "-m"}); got != "nvidia-smi topo -m" {
		t.Errorf("QuoteArgs = %q", got)
	}
}

func TestSummaryAndWorst(t *testing.T) {
	rs := []HostResult{{Host: "gpu01"}, {Host: "gpu02"}, {Host: "gpu03", Class: Auth}, {Host: "gpu04", Class: Exit}, {Host: "gpu05", Class: Exit}}
	if got, want := Summary(rs), "5 hosts: 2 ok, 2 exit (gpu[04-05]), 1 auth (gpu03)"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if Worst(rs) != Auth || Worst(nil) != OK {
		t.Errorf("Worst = %s", Worst(rs))
	}
	if b, _ := Auth.MarshalText(); string(b) != "auth" {
		t.Errorf("Auth.MarshalText = %q", b)
	}
}

func TestFold(t *testing.T) {
	out := func(host, stdout string, code int) HostResult {
		c := OK
		if code != 0 {
			c = Exit
		}
		return HostResult{Host: host, Class: c, Steps: []Result{{Stdout: []byte(stdout), ExitCode: code, Class: c}}}
	}
	rs := []HostResult{
		out("gpu01", "550.54.15\nA100\n", 0), out("gpu02", "550.54.15\nA100\n", 0), out("gpu03", "535.104.05\nA100\n", 0),
		out("gpu04", "550.54.15\nA100\n", 0), {Host: "gpu05", Class: Auth, Err: "dial 10.0.0.5:22: unable to authenticate"},
		{Host: "gpu06", Class: Auth, Err: "dial 10.0.0.6:22: unable to authenticate"}, out("gpu07", "550.54.15\nA100\n", 0),
	}
	g := Fold(rs, 0)
	if len(g) != 3 || g[0].NodeSet != "gpu[01-02,04,07]" || g[1].NodeSet != "gpu[05-06]" || g[2].NodeSet != "gpu03" {
		t.Fatalf("Fold = %+v", g)
	}
	if g[1].Class != Auth || len(g[1].Errors) != 2 {
		t.Errorf("connection failures grouped as %+v", g[1])
	}
	d := Diff(g[0], g[2])
	for _, want := range []string{"--- gpu[01-02,04,07]", "+++ gpu03", "-550.54.15", "+535.104.05"} {
		if !strings.Contains(d, want) {
			t.Errorf("Diff lacks %q:\n%s", want, d)
		}
	}
}

// TestDiffOfBinaryOutput: outputs that are not UTF-8 text are said to
// differ, with their sizes, instead of diffed line by line (the diff
// library's offsets break on invalid UTF-8, and it exits the process).
func TestDiffOfBinaryOutput(t *testing.T) {
	a := Group{NodeSet: "gpu[01-02]", Stdout: "ok\n\xff\xfe\x9b[31m binary", Stderr: "same"}
	b := Group{NodeSet: "gpu03", Stdout: "ok\n\xfe\xff\xc3 other binary\n", Stderr: "same"}
	want := "binary standard output differs: gpu[01-02] printed 17 bytes, gpu03 20 bytes\n"
	if got := Diff(a, b); got != want {
		t.Errorf("Diff(binary) = %q, want %q", got, want)
	}
	b.Stdout, b.Stderr = a.Stdout, "text\n"
	a.Stderr = "\xff\xfe"
	want = "binary standard error differs: gpu[01-02] printed 2 bytes, gpu03 5 bytes\n"
	if got := Diff(a, b); got != want {
		t.Errorf("Diff(binary stderr) = %q, want %q", got, want)
	}
}

// TestCaptureAllocates: keeping the first MiB of 1.5 MB of output, in the
// 32 KiB pieces SSH delivers, allocates at most twice the MiB kept.
func TestCaptureAllocates(t *testing.T) {
	var activity atomic.Int64
	c := &capture{limit: DefaultMaxOutput, activity: &activity}
	piece := make([]byte, 32<<10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 1500000 / len(piece) {
		c.Write(piece)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*DefaultMaxOutput+64<<10 {
		t.Errorf("capturing 1.5 MB allocated %d bytes, want at most twice the %d kept", got, DefaultMaxOutput)
	}
	if len(c.buf) != DefaultMaxOutput || c.total != int64(1500000/len(piece)*len(piece)) {
		t.Errorf("capture kept %d of %d bytes", len(c.buf), c.total)
	}
}

// TestPushFailureKeepsBothApart: a failed push step's standard error and
// its own error are joined with "; " (they ran together:
// "…was stoppedkilled by signal TERM").
func TestPushFailureKeepsBothApart(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want string
	}{
		{Result{Stderr: []byte("gpulab sim: dgx01: stopped\n"), Err: "killed by signal TERM"}, "gpulab sim: dgx01: stopped; killed by signal TERM"},
		{Result{Stderr: []byte("  \n"), Err: "killed by signal TERM"}, "killed by signal TERM"},
		{Result{Stderr: []byte("checksum mismatch\n")}, "checksum mismatch"},
	} {
		if got := failure(tc.r); got != tc.want {
			t.Errorf("failure(%q, %q) = %q, want %q", tc.r.Stderr, tc.r.Err, got, tc.want)
		}
	}
}

// A target that could not be resolved is never dialled, and still gets its
// one result, in its place: the engine returns exactly one result per
// target, in target order, whatever happened to each.
func TestUnresolvedTargetAnswersInPlace(t *testing.T) {
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	refused := func(name string) Target {
		// A port nobody listens on: bind one, then close it.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		return Target{Name: name, HostName: "127.0.0.1", Port: port, ConnectTimeout: 5 * time.Second, KnownHosts: []string{kh}}
	}
	targets := []Target{refused("a"), {Name: "b", Unresolved: "ssh_config:3: IdentitiesOnly \"perhaps\": want yes or no"}, refused("c")}
	e := &Engine{Dialer: &Dialer{Keys: &Keyring{}}}
	var events []Event
	ch := make(chan Event, 16)
	done := make(chan []HostResult)
	go func() {
		done <- e.Run(context.Background(), Plan{Targets: targets, Steps: []Step{{Name: "x", Command: "true"}}}, ch)
	}()
	for ev := range ch {
		events = append(events, ev)
	}
	results := <-done
	if len(results) != 3 {
		t.Fatalf("%d results for 3 targets", len(results))
	}
	for i, want := range []struct {
		host  string
		class Class
	}{{"a", Refused}, {"b", Error}, {"c", Refused}} {
		if r := results[i]; r.Host != want.host || r.Class != want.class || r.Err == "" {
			t.Errorf("result %d: %s %s (%q), want %s %s with its error", i, r.Host, r.Class, r.Err, want.host, want.class)
		}
	}
	if !strings.Contains(results[1].Err, "IdentitiesOnly") || results[1].Address != "" {
		t.Errorf("the unresolved host's result %+v: want its reason and no address", results[1])
	}
	dones := 0
	for _, ev := range events {
		if ev.Host == "b" && ev.Kind != HostDone {
			t.Errorf("the unresolved host got a %v event: it is never dialled", ev.Kind)
		}
		if ev.Kind == HostDone {
			dones++
		}
	}
	if dones != 3 {
		t.Errorf("%d HostDone events, want one per target", dones)
	}
	if _, err := e.Dialer.Dial(context.Background(), targets[1]); err == nil {
		t.Error("Dial of an unresolved target succeeded")
	}
}
