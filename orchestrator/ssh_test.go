package orchestrator_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/gpulab/gpulab/internal/heapwatch"
	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
)

// target reaches one test server with the fleet's key and known_hosts.
// target is a healthy host's: its deadlines are long, so that a busy
// machine (a handshake that waits for a key's bcrypt under -race, next to
// another test run) never turns it into a timeout; a test of a fault sets
// its own.
func target(f *sshtest.Fleet, s *sshtest.Server) orchestrator.Target {
	return orchestrator.Target{
		Name: s.Name, HostName: s.Addr, Port: s.Port, User: f.User,
		IdentityFiles: []string{f.ClientKey}, Explicit: true, KnownHosts: []string{f.KnownHosts},
		ConnectTimeout: time.Minute, CommandTimeout: 2 * time.Minute, InactivityTimeout: 2 * time.Minute,
	}
}

func targets(f *sshtest.Fleet) []orchestrator.Target {
	var ts []orchestrator.Target
	for _, s := range f.Servers {
		ts = append(ts, target(f, s))
	}
	return ts
}

func newEngine() *orchestrator.Engine {
	return &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 64}
}

func step(cmd string) []orchestrator.Step { return []orchestrator.Step{{Name: "step", Command: cmd}} }

// byPort runs a different shell snippet per server: the fault sits on one
// host while the others do the normal thing.
func byPort(cases map[*sshtest.Server]string, normal string) string {
	var b strings.Builder
	b.WriteString(`case "$SSH_CONNECTION" in `)
	for s, cmd := range cases {
		fmt.Fprintf(&b, `*" %d") %s ;; `, s.Port, cmd)
	}
	fmt.Fprintf(&b, `*) %s ;; esac`, normal)
	return b.String()
}

func assertHealthy(t *testing.T, results []orchestrator.HostResult, skip map[string]bool, want string) {
	t.Helper()
	for _, r := range results {
		if skip[r.Host] {
			continue
		}
		if r.Class != orchestrator.OK || len(r.Steps) != 1 || string(r.Steps[0].Stdout) != want {
			t.Errorf("healthy host %s: class %s, err %q, steps %+v; want ok with output %q", r.Host, r.Class, r.Err, r.Steps, want)
		}
	}
}

func TestFanOutAndOrder(t *testing.T) {
	f := sshtest.Start(t, 20, sshtest.Options{})
	e := newEngine()
	e.Concurrency = 7 // fewer slots than hosts: the window must slide
	plan := orchestrator.Plan{Targets: targets(f), Steps: []orchestrator.Step{
		{Name: "hello", Command: "echo hello"},
		{Name: "two lines", Command: "printf 'a\\nb\\n'; echo err >&2"},
	}}
	events := make(chan orchestrator.Event, 16)
	var kinds sync.Map
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for ev := range events {
			v, _ := kinds.LoadOrStore(ev.Kind, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
		}
	}()
	results := e.Run(context.Background(), plan, events)
	<-consumed
	if len(results) != 20 {
		t.Fatalf("%d results, want 20", len(results))
	}
	for i, r := range results {
		if r.Host != f.Servers[i].Name {
			t.Errorf("result %d is %s, want %s (plan order)", i, r.Host, f.Servers[i].Name)
		}
		if r.Class != orchestrator.OK || len(r.Steps) != 2 || string(r.Steps[0].Stdout) != "hello\n" ||
			string(r.Steps[1].Stdout) != "a\nb\n" || string(r.Steps[1].Stderr) != "err\n" || r.Steps[1].ExitCode != 0 {
			t.Errorf("host %s: %+v", r.Host, r)
		}
	}
	if got := orchestrator.Summary(results); got != "20 hosts: 20 ok" {
		t.Errorf("Summary = %q", got)
	}
	if v, ok := kinds.Load(orchestrator.HostDone); !ok || v.(*atomic.Int64).Load() != 20 {
		t.Errorf("HostDone events: %v", v)
	}
}

func TestConnectFaults(t *testing.T) {
	f := sshtest.Start(t, 8, sshtest.Options{})
	ts := targets(f)

	// Port closed.
	closed := orchestrator.Target{Name: "closed", HostName: "127.0.0.1", Port: sshtest.FreePort(t), User: f.User,
		IdentityFiles: []string{f.ClientKey}, Explicit: true, KnownHosts: []string{f.KnownHosts}, ConnectTimeout: 2 * time.Second}
	// TCP accepted, no SSH banner ever.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var held []net.Conn
	var heldMu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			heldMu.Lock()
			held = append(held, c)
			heldMu.Unlock()
		}
	}()
	defer func() {
		heldMu.Lock()
		for _, c := range held {
			c.Close()
		}
		heldMu.Unlock()
	}()
	silent := closed
	silent.Name, silent.Port, silent.ConnectTimeout = "silent", l.Addr().(*net.TCPAddr).Port, 1*time.Second
	// Unknown host key: a known_hosts that lists every server but h02.
	unknown := ts[1]
	unknown.KnownHosts = []string{f.KnownHostsFor(t, f.Servers[0], f.Servers[2])}
	// Changed host key: h03 gets a new key.
	f.Servers[2].Kill()
	f.Servers[2].RotateHostKey(t)
	if err := f.Servers[2].Restart(); err != nil {
		t.Fatal(err)
	}
	// Wrong client key.
	wrong := ts[3]
	wrongKey, _ := sshtest.WriteKey(t, t.TempDir())
	wrong.IdentityFiles = []string{wrongKey}

	all := append([]orchestrator.Target{closed, silent, unknown, wrong}, ts[2], ts[4], ts[5], ts[6], ts[7])
	results := newEngine().Run(context.Background(), orchestrator.Plan{Targets: all, Steps: step("echo ok")}, nil)
	want := map[string]orchestrator.Class{
		"closed": orchestrator.Refused, "silent": orchestrator.TimeoutConnect, "h02": orchestrator.HostKeyUnknown,
		"h04": orchestrator.Auth, "h03": orchestrator.HostKeyChanged,
	}
	skip := map[string]bool{}
	for _, r := range results {
		if c, ok := want[r.Host]; ok {
			skip[r.Host] = true
			if r.Class != c {
				t.Errorf("%s: class %s (%s), want %s", r.Host, r.Class, r.Err, c)
			}
		}
	}
	assertHealthy(t, results, skip, "ok\n")
	byHost := map[string]orchestrator.HostResult{}
	for _, r := range results {
		byHost[r.Host] = r
	}
	// The known_hosts in use is the test's, not ~/.ssh/known_hosts: the
	// advice names it, as ssh-keygen -R alone would edit another file.
	if msg := byHost["h03"].Err; !strings.Contains(msg, "HOST KEY CHANGED") || !strings.Contains(msg, "ssh-keygen -f "+orchestrator.Quote(ts[2].KnownHosts[0])+" -R ") {
		t.Errorf("changed key error is not loud and helpful: %q", msg)
	}
	if msg := byHost["h02"].Err; !strings.Contains(msg, "SHA256:") || !strings.Contains(msg, "--accept-new-host-keys") {
		t.Errorf("unknown key error lacks the fingerprint or how to trust it: %q", msg)
	}
	// A timeout names the limit it ran into and where it is set.
	if msg := byHost["silent"].Err; !strings.Contains(msg, "no SSH handshake within the connect timeout of 1s") || !strings.Contains(msg, "--connect-timeout") {
		t.Errorf("connect timeout error does not name the limit: %q", msg)
	}
	if got := orchestrator.Summary(results); !strings.Contains(got, "1 hostkey-changed (h03)") {
		t.Errorf("Summary = %q", got)
	}
}

func TestCommandFaults(t *testing.T) {
	f := sshtest.Start(t, 9, sshtest.Options{})
	s := f.Servers
	marker := fmt.Sprintf("%d.%d", 40+os.Getpid()%50, time.Now().Nanosecond()%1000)
	cmd := byPort(map[*sshtest.Server]string{
		s[0]: "echo partial; exit 3",
		s[1]: "sleep " + marker, // over the command timeout
		s[2]: "echo before; sleep 29.5",
		s[3]: "kill -KILL $$",
		s[4]: "for i in 1 2 3 4 5 6 7 8; do echo $i; sleep 0.25; done", // slow but alive
		s[5]: "head -c 100000000 /dev/zero",
	}, "echo ok")
	ts := targets(f)
	// Only the hosts that test a limit have a short one: on a busy
	// machine sshd can take longer than 800 ms to start "echo ok", which
	// is no hang.
	for i := range ts {
		ts[i].CommandTimeout = 30 * time.Second
		ts[i].InactivityTimeout = 30 * time.Second
	}
	ts[1].CommandTimeout = 1500 * time.Millisecond // only the command timeout applies
	ts[2].InactivityTimeout = 800 * time.Millisecond
	ts[4].InactivityTimeout = 2 * time.Second // a line every 0.25 s keeps it alive

	stopWatch := heapwatch.Start()
	results := newEngine().Run(context.Background(), orchestrator.Plan{Targets: ts, Steps: step(cmd)}, nil)
	peak := stopWatch()

	check := func(i int, class orchestrator.Class, cond func(orchestrator.Result) bool, what string) {
		t.Helper()
		r := results[i]
		if r.Class != class || len(r.Steps) != 1 || !cond(r.Steps[0]) {
			t.Errorf("%s (%s): class %s, err %q, result %+v; want %s with %s", r.Host, what, r.Class, r.Err, r.Steps, class, what)
		}
	}
	check(0, orchestrator.Exit, func(r orchestrator.Result) bool { return r.ExitCode == 3 && string(r.Stdout) == "partial\n" }, "exit 3, output kept")
	check(1, orchestrator.TimeoutCommand, func(r orchestrator.Result) bool { return true }, "stopped at the command timeout")
	check(2, orchestrator.Inactive, func(r orchestrator.Result) bool { return string(r.Stdout) == "before\n" }, "hung after printing")
	check(3, orchestrator.Killed, func(r orchestrator.Result) bool { return r.Signal == "KILL" }, "signal KILL")
	check(4, orchestrator.OK, func(r orchestrator.Result) bool { return strings.HasPrefix(string(r.Stdout), "1\n2\n") }, "slow but printing")
	check(5, orchestrator.OK, func(r orchestrator.Result) bool {
		return r.StdoutBytes == 100_000_000 && len(r.Stdout) == orchestrator.DefaultMaxOutput && r.Truncated
	}, "100 MB counted, 1 MiB kept")
	assertHealthy(t, results[6:], nil, "ok\n")
	if p := peak; p > 200<<20 {
		t.Errorf("heap in use peaked at %d MiB while a host printed 100 MB: output is not bounded", p>>20)
	}
	// The command stopped at its timeout must not live on on the host.
	if pids := waitGone(t, "^sleep "+marker); pids != "" {
		t.Errorf("the timed-out command still runs on the host: pids %s", pids)
	}
}

func TestHostLostMidCommand(t *testing.T) {
	f := sshtest.Start(t, 4, sshtest.Options{})
	victim := f.Servers[1]
	cmd := byPort(map[*sshtest.Server]string{victim: "echo running; sleep 20"}, "sleep 1; echo ok")
	events := make(chan orchestrator.Event)
	done := make(chan []orchestrator.HostResult)
	e := newEngine()
	e.StreamOutput = true
	go func() {
		done <- e.Run(context.Background(), orchestrator.Plan{Targets: targets(f), Steps: step(cmd)}, events)
	}()
	for ev := range events {
		if ev.Kind == orchestrator.StepOutput && ev.Host == victim.Name {
			victim.Kill() // the command is running: it printed
		}
	}
	results := <-done
	if r := results[1]; r.Class != orchestrator.Lost {
		t.Errorf("%s killed mid-command: class %s (%s), want lost", r.Host, r.Class, r.Err)
	}
	assertHealthy(t, results, map[string]bool{victim.Name: true}, "ok\n")
}

func TestCancelMidRun(t *testing.T) {
	// The fleet's sshd processes are waited on by goroutines in os/exec; the
	// orchestrator itself runs no local process.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), goleak.IgnoreAnyFunction("os/exec.(*Cmd).Wait"))
	f := sshtest.Start(t, 10, sshtest.Options{})
	ts := targets(f)
	extra := orchestrator.Target{Name: "never-started", HostName: "127.0.0.1", Port: f.Servers[0].Port, User: f.User,
		IdentityFiles: []string{f.ClientKey}, Explicit: true, KnownHosts: []string{f.KnownHosts}, ConnectTimeout: time.Second}
	e := newEngine()
	e.Concurrency, e.StreamOutput = 10, true
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan orchestrator.Event)
	printed := map[string]bool{}
	done := make(chan []orchestrator.HostResult)
	go func() {
		done <- e.Run(ctx, orchestrator.Plan{Targets: append(ts, extra), Steps: step("echo started; sleep 30")}, events)
	}()
	for ev := range events {
		if ev.Kind == orchestrator.StepOutput && !printed[ev.Host] {
			printed[ev.Host] = true
			if len(printed) == 10 { // every command is running
				cancel()
			}
		}
	}
	var results []orchestrator.HostResult
	select {
	case results = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of the cancel")
	}
	for _, r := range results {
		if r.Class != orchestrator.Cancelled {
			t.Errorf("%s: class %s, want cancelled", r.Host, r.Class)
		}
	}
	for _, r := range results[:10] {
		if len(r.Steps) != 1 || string(r.Steps[0].Stdout) != "started\n" {
			t.Errorf("%s: partial output lost: %+v", r.Host, r.Steps)
		}
	}
	cancel()
}

func TestJumpHostChain(t *testing.T) {
	f := sshtest.Start(t, 3, sshtest.Options{})
	noForward := sshtest.Start(t, 1, sshtest.Options{Extra: "AllowTcpForwarding no\n"})
	final := target(f, f.Servers[2])
	final.Jump = []orchestrator.Target{target(f, f.Servers[0]), target(f, f.Servers[1])}
	blocked := target(f, f.Servers[2])
	blocked.Name = "blocked"
	hop := target(noForward, noForward.Servers[0])
	blocked.Jump = []orchestrator.Target{hop}
	blocked.KnownHosts = []string{f.KnownHosts}
	hop.KnownHosts = []string{noForward.KnownHosts}
	blocked.Jump[0] = hop
	results := newEngine().Run(context.Background(), orchestrator.Plan{Targets: []orchestrator.Target{final, blocked},
		Steps: step(`echo "$SSH_CONNECTION"`)}, nil)
	if r := results[0]; r.Class != orchestrator.OK || !strings.HasSuffix(strings.TrimSpace(string(r.Steps[0].Stdout)), fmt.Sprint(f.Servers[2].Port)) {
		t.Errorf("through two jump hosts: %+v", r)
	}
	// A hop that refuses forwarding stops the chain: the route really goes through it.
	if r := results[1]; r.Class == orchestrator.OK || !strings.Contains(r.Err, "administratively prohibited") {
		t.Errorf("through a hop without forwarding: class %s (%s), want a failure naming the refusal", r.Class, r.Err)
	}
}

func TestMaxStartupsDefault(t *testing.T) {
	if testing.Short() {
		testreq.Missing(t, "-short: TestMaxStartupsDefault starts 60 sshd and runs only without -short")
	}
	f := sshtest.Start(t, 60, sshtest.Options{MaxStartups: "default"})
	results := newEngine().Run(context.Background(), orchestrator.Plan{Targets: targets(f), Steps: step("echo ok")}, nil)
	assertHealthy(t, results, nil, "ok\n")
}

func TestAcceptNewHostKeys(t *testing.T) {
	f := sshtest.Start(t, 3, sshtest.Options{})
	kh := filepath.Join(t.TempDir(), "sub", "known_hosts") // does not exist yet
	ts := targets(f)
	for i := range ts {
		ts[i].KnownHosts = []string{kh}
	}
	plan := orchestrator.Plan{Targets: ts, Steps: step("echo ok")}
	strict := newEngine().Run(context.Background(), plan, nil)
	for _, r := range strict {
		if r.Class != orchestrator.HostKeyUnknown {
			t.Errorf("%s without accept-new: %s, want hostkey-unknown", r.Host, r.Class)
		}
	}
	e := newEngine()
	e.Dialer.AcceptNew = true
	assertHealthy(t, e.Run(context.Background(), plan, nil), nil, "ok\n")
	data, err := os.ReadFile(kh)
	if err != nil || strings.Count(string(data), "\n") != 3 {
		t.Fatalf("known_hosts after accept-new: %q, %v", data, err)
	}
	assertHealthy(t, newEngine().Run(context.Background(), plan, nil), nil, "ok\n") // now known, strict mode passes
	// A changed key is refused even with accept-new.
	f.Servers[0].Kill()
	f.Servers[0].RotateHostKey(t)
	if err := f.Servers[0].Restart(); err != nil {
		t.Fatal(err)
	}
	if r := e.Run(context.Background(), plan, nil)[0]; r.Class != orchestrator.HostKeyChanged {
		t.Errorf("changed key with accept-new: %s, want hostkey-changed", r.Class)
	}
}

// A host known by its ed25519 key that also offers ECDSA and RSA host keys
// must not look changed: the client offers the algorithms on record.
func TestHostKeyAlgorithmsFromRecord(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	s := f.Servers[0]
	for _, typ := range []string{"ecdsa", "rsa"} {
		key := filepath.Join(s.Dir, "host_"+typ)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", typ, "-N", "", "-f", key).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
	}
	cfg := filepath.Join(s.Dir, "sshd_config")
	data, _ := os.ReadFile(cfg)
	// ECDSA first, so a client without HostKeyAlgorithms would likely pick it.
	extra := fmt.Sprintf("HostKey %s\nHostKey %s\n", filepath.Join(s.Dir, "host_ecdsa"), filepath.Join(s.Dir, "host_rsa"))
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(data), "HostKey ", extra+"HostKey ", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	assertHealthy(t, newEngine().Run(context.Background(), orchestrator.Plan{Targets: targets(f), Steps: step("echo ok")}, nil), nil, "ok\n")
}

func TestEncryptedKeyAskedOnce(t *testing.T) {
	f := sshtest.Start(t, 5, sshtest.Options{})
	keyFile, pub := sshtest.WriteEncryptedKey(t, t.TempDir(), "s3cret pass")
	f.Authorize(t, pub)
	var asked atomic.Int32
	e := newEngine()
	e.Dialer.Keys.Passphrase = func(file string) ([]byte, error) {
		asked.Add(1)
		if file != keyFile {
			t.Errorf("asked for %q, want %q", file, keyFile)
		}
		return []byte("s3cret pass"), nil
	}
	ts := targets(f)
	for i := range ts {
		ts[i].IdentityFiles = []string{keyFile}
	}
	assertHealthy(t, e.Run(context.Background(), orchestrator.Plan{Targets: ts, Steps: step("echo ok")}, nil), nil, "ok\n")
	if n := asked.Load(); n != 1 {
		t.Errorf("passphrase asked %d times for 5 hosts, want once", n)
	}
	// No way to ask: the key is left out, and the failed login says why.
	e2 := newEngine()
	r := e2.Run(context.Background(), orchestrator.Plan{Targets: ts[:1], Steps: step("echo ok")}, nil)[0]
	if r.Class != orchestrator.Auth || !strings.Contains(r.Err, "ssh-add") {
		t.Errorf("encrypted key without a prompt: %s %q", r.Class, r.Err)
	}
}

func TestAgentAuth(t *testing.T) {
	f := sshtest.Start(t, 3, sshtest.Options{})
	keyring := agent.NewKeyring()
	data, _ := os.ReadFile(f.ClientKey)
	raw, err := ssh.ParseRawPrivateKey(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := keyring.Add(agent.AddedKey{PrivateKey: raw}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _ = agent.ServeAgent(keyring, c); c.Close() }()
		}
	}()
	e := newEngine()
	e.Dialer.Keys.AgentSocket = sock
	defer e.Dialer.Keys.Close()
	ts := targets(f)
	for i := range ts {
		ts[i].IdentityFiles, ts[i].Explicit = []string{filepath.Join(t.TempDir(), "absent")}, false
	}
	assertHealthy(t, e.Run(context.Background(), orchestrator.Plan{Targets: ts, Steps: step("echo ok")}, nil), nil, "ok\n")
}

// Hostile strings reach the remote command as exactly one word each.
func TestQuotingHostileStrings(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	hostile := []string{"a b", "$(touch /tmp/gpulab-pwned)", "`id`", "x'y", `"; rm -rf / #`, "tab\there", "new\nline", "*", "--", "", "é ☃", `\`, "$HOME", "a;b|c&d>e<f"}
	var want strings.Builder
	for _, h := range hostile {
		want.WriteString("[" + h + "]")
	}
	cmd := "printf '[%s]' " + orchestrator.QuoteArgs(hostile)
	r := newEngine().Run(context.Background(), orchestrator.Plan{Targets: targets(f), Steps: step(cmd)}, nil)[0]
	if r.Class != orchestrator.OK || string(r.Steps[0].Stdout) != want.String() {
		t.Errorf("hostile args came back as %q, want %q", r.Steps[0].Stdout, want.String())
	}
	if _, err := os.Stat("/tmp/gpulab-pwned"); err == nil {
		os.Remove("/tmp/gpulab-pwned")
		t.Error("a quoted argument was executed by the remote shell")
	}
}

func TestResolverSSHConfig(t *testing.T) {
	f := sshtest.Start(t, 2, sshtest.Options{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	content := fmt.Sprintf("Host gpu-*\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n  ConnectTimeout 3\n\nHost via-jump\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n  ProxyJump gpu-a\n",
		f.Servers[0].Port, f.User, f.ClientKey, f.KnownHosts, f.Servers[1].Port, f.User, f.ClientKey, f.KnownHosts)
	if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	inv := inventory.Empty()
	r, err := orchestrator.NewResolver(inv, cfg, orchestrator.Overrides{}, dir, "nobody")
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.ResolveName("gpu-a")
	if err != nil {
		t.Fatal(err)
	}
	if a.Port != f.Servers[0].Port || a.ConnectTimeout != 3*time.Second || a.Sources["Port"] != cfg+":3" || a.Sources["User"] != cfg+":4" {
		t.Errorf("gpu-a resolved to %+v", a)
	}
	j, err := r.ResolveName("via-jump")
	if err != nil || len(j.Jump) != 1 || j.Jump[0].Port != f.Servers[0].Port {
		t.Fatalf("via-jump resolved to %+v, %v", j, err)
	}
	assertHealthy(t, newEngine().Run(context.Background(), orchestrator.Plan{Targets: []orchestrator.Target{a, j}, Steps: step("echo ok")}, nil), nil, "ok\n")

	// Inventory values win over ssh_config.
	invFile := filepath.Join(dir, "inv.toml")
	if err := os.WriteFile(invFile, []byte("[[host]]\nname = \"gpu-a\"\nport = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inv2, err := inventory.Load(invFile)
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := orchestrator.NewResolver(inv2, cfg, orchestrator.Overrides{}, dir, "nobody")
	a2, _ := r2.ResolveName("gpu-a")
	if a2.Port != 2 || a2.Sources["Port"] != invFile+":1:1" || a2.User != f.User {
		t.Errorf("inventory port should win, ssh_config user still apply: %+v", a2)
	}
}

// Hashed known_hosts entries (HashKnownHosts yes, ssh-keygen -H) verify too.
func TestHashedKnownHosts(t *testing.T) {
	f := sshtest.Start(t, 3, sshtest.Options{})
	hashed := f.KnownHostsFor(t, f.Servers...)
	if out, err := exec.Command("ssh-keygen", "-H", "-f", hashed).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -H: %v %s", err, out)
	}
	data, _ := os.ReadFile(hashed)
	if !strings.HasPrefix(string(data), "|1|") || strings.Contains(string(data), "127.0.0.1") {
		t.Fatalf("known_hosts is not hashed:\n%s", data)
	}
	ts := targets(f)
	for i := range ts {
		ts[i].KnownHosts = []string{hashed}
	}
	assertHealthy(t, newEngine().Run(context.Background(), orchestrator.Plan{Targets: ts, Steps: step("echo ok")}, nil), nil, "ok\n")
}

// waitGone polls pgrep until no process matches pattern, for up to 30s,
// and returns the pids still there then ("" when none).
func waitGone(t *testing.T, pattern string) string {
	t.Helper()
	testreq.Tool(t, "pgrep", "the tests check that stopped commands are gone from the host (apt-get install procps)")
	var out []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var err error
		if out, err = exec.Command("pgrep", "-f", pattern).Output(); err != nil {
			return ""
		}
	}
	return strings.TrimSpace(string(out))
}
