package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/render"
)

// ExitInterrupted is the exit code after Ctrl-C, as shells use for SIGINT.
const ExitInterrupted = 130

// sshFlags are the connection flags shared by commands that reach hosts.
type sshFlags struct {
	hosts          string
	sshConfig      string
	knownHosts     string
	acceptNew      bool
	user           string
	port           int
	identity       string
	connectTimeout time.Duration
	timeout        time.Duration
	inactivity     time.Duration
	concurrency    int
	kube           kubeFlags // registerKube's: --via kube and its cluster

	cmd *cobra.Command // where they were registered: which were given
}

func (f *sshFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.cmd = cmd
	fl.StringVarP(&f.hosts, "hosts", "H", "", "host `EXPR`ession: node set, @group, @label=value, names from ~/.ssh/config (required)")
	fl.StringVarP(&f.sshConfig, "ssh-config", "F", "", "OpenSSH client config `FILE` (default ~/.ssh/config), like ssh -F")
	fl.StringVar(&f.knownHosts, "known-hosts", "", "known_hosts `FILE` (default ~/.ssh/known_hosts)")
	fl.BoolVar(&f.acceptNew, "accept-new-host-keys", false, "add unknown hosts' keys to known_hosts (a changed key is always refused)")
	fl.StringVarP(&f.user, "user", "l", "", "remote `USER` for every host")
	fl.IntVarP(&f.port, "port", "p", 0, "`PORT` for every host")
	fl.StringVarP(&f.identity, "identity", "i", "", "identity `FILE` offered after ssh-agent's keys")
	fl.DurationVar(&f.connectTimeout, "connect-timeout", 0, "TCP connect plus SSH handshake limit (default 10s)")
	fl.DurationVar(&f.timeout, "timeout", 0, "limit for each command (default 10m); given, it also caps a runbook's or lab's steps, which have their own")
	fl.DurationVar(&f.inactivity, "inactivity-timeout", 0, "a command silent this long is hung (default 2m); given, it also caps the steps'")
	fl.IntVar(&f.concurrency, "concurrency", 0, "hosts worked on at once, a sliding window (default 64)")
}

// registerWorkbench registers the flags the workbench takes of exec's:
// which hosts, and how to reach them (the rest comes from ssh_config and
// the inventory's defaults).
func (f *sshFlags) registerWorkbench(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.cmd = cmd
	fl.StringVarP(&f.hosts, "hosts", "H", "", "open the workbench on these hosts: a host `EXPR`ession as exec takes (no inventory needed)")
	fl.StringVarP(&f.sshConfig, "ssh-config", "F", "", "OpenSSH client config `FILE` (default ~/.ssh/config), like ssh -F")
	fl.StringVar(&f.knownHosts, "known-hosts", "", "known_hosts `FILE` (default ~/.ssh/known_hosts)")
	f.registerKube()
}

// check refuses, as a usage error, a flag given a value that the same key
// in an inventory may not have: a port outside 1-65535, a concurrency
// outside 1-inventory.MaxConcurrency, a timeout shorter than
// inventory.MinTimeout or longer than its key's maximum. A flag's zero
// value means "not given" (the inventory's value, then the default) only
// when it was not given.
func (f *sshFlags) check() error {
	given := func(name string, nonzero bool) bool {
		return nonzero || f.cmd != nil && f.cmd.Flags().Changed(name)
	}
	if given("port", f.port != 0) && (f.port < 1 || f.port > 65535) {
		return usageErr("--port %d is out of range (want 1-65535)", f.port)
	}
	if given("concurrency", f.concurrency != 0) && (f.concurrency < 1 || f.concurrency > inventory.MaxConcurrency) {
		return usageErr("--concurrency %d: want 1 to %d hosts at once", f.concurrency, inventory.MaxConcurrency)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
		max  time.Duration
	}{
		{"connect-timeout", f.connectTimeout, inventory.MaxConnectTimeout},
		{"timeout", f.timeout, inventory.MaxCommandTimeout},
		{"inactivity-timeout", f.inactivity, inventory.MaxCommandTimeout},
	} {
		if given(d.name, d.d != 0) {
			if err := inventory.InRange(d.d, inventory.MinTimeout, d.max); err != nil {
				return usageErr("--%s %v", d.name, err)
			}
		}
	}
	return nil
}

func (o *options) newRunner(f *sshFlags) (*app.Fleet, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if kube, err := f.viaKube(); err != nil {
		return nil, err
	} else if kube {
		return o.kubeRunner(f)
	}
	if f.hosts == "" {
		return nil, usageErr("-H is required: which hosts? (e.g. -H 'gpu[01-08]', -H @a100, -H '*')")
	}
	inv, err := o.loadInventory(false)
	if err != nil {
		return nil, err
	}
	return o.runnerOn(inv, f)
}

// runnerOn builds the fleet of the hosts f.hosts selects in inv, reached
// as f says.
func (o *options) runnerOn(inv *inventory.Inventory, f *sshFlags) (*app.Fleet, error) {
	if f.identity != "" {
		if err := orchestrator.CheckIdentityFile(f.identity); err != nil {
			return nil, usageErr("-i: %v (-i names a private key, as ssh -i does; an inventory is --inventory)", err)
		}
	}
	reach := o.reach(f)
	if inventory.UsesSlurm(f.hosts) && inv.Slurm != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		nodes, err := app.SlurmState(ctx, inv, reach)
		if err != nil {
			return nil, &exitError{code: ExitFailed, err: fmt.Errorf("-H %q: %w", f.hosts, err)}
		}
		inv.Slurm.SetState(nodes)
	}
	hosts, err := inv.Select(f.hosts)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if len(hosts) == 0 {
		return nil, usageErr("-H %q selects no host", f.hosts)
	}
	r, err := app.NewFleet(inv, hosts, reach)
	if err != nil {
		return nil, configErr(err)
	}
	return r, nil
}

// reach is how f says hosts are reached.
func (o *options) reach(f *sshFlags) app.Reach {
	local := o.getenv("USER")
	if local == "" {
		if u, err := user.Current(); err == nil {
			local = u.Username
		}
	}
	return app.Reach{SSHConfig: f.sshConfig, Overrides: orchestrator.Overrides{
		User: f.user, Port: f.port, IdentityFile: f.identity, KnownHosts: f.knownHosts,
		ConnectTimeout: f.connectTimeout, CommandTimeout: f.timeout, InactivityTimeout: f.inactivity,
	}, Home: o.getenv("HOME"), LocalUser: local, AgentSocket: o.getenv("SSH_AUTH_SOCK"), Passphrase: o.passphrasePrompt(),
		AcceptNew: f.acceptNew, Concurrency: f.concurrency}
}

// passphrasePrompt asks on the terminal, when there is one; the passphrase
// is read without echo and never stored.
func (o *options) passphrasePrompt() func(string) ([]byte, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil || !o.env.IsTerminal {
		if err == nil {
			tty.Close()
		}
		return nil
	}
	tty.Close()
	return func(file string) ([]byte, error) {
		t, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		defer t.Close()
		fmt.Fprintf(t, "Enter passphrase for %s: ", file)
		p, err := term.ReadPassword(int(t.Fd()))
		fmt.Fprintln(t)
		return p, err
	}
}

// interruptible returns a context cancelled by the first stop signal; a
// second one exits at once.
func interruptible(stderr io.Writer) (context.Context, func()) {
	ctx, _, stop := interruptibleCleanup(stderr, "stopping remote commands, keeping partial results (Ctrl-C again to quit now)", nil)
	return ctx, stop
}

// interruptibleCleanup returns a run context cancelled by the first stop
// signal (saying first), and, when abandonNote is set, an abandon context
// cancelled by the second (saying abandonNote): the run's cleanup stops
// and the record lists what was left. The next signal exits at once.
func interruptibleCleanup(stderr io.Writer, first string, abandonNote *string) (run, abandon context.Context, stop func()) {
	run, cancel := context.WithCancel(context.Background())
	abandon, cancelCleanup := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 3)
	// Notify first: a signal between the two is this command's or, before
	// it is counted an owner, CatchSignals' (which exits); never lost.
	signal.Notify(ch, stopSignals...)
	signalOwners.Add(1)
	go func() {
		n := 0
		for range ch {
			n++
			switch {
			case n == 1:
				fmt.Fprintln(stderr, "gpulab: interrupted: "+first)
				cancel()
			case n == 2 && abandonNote != nil:
				fmt.Fprintln(stderr, "gpulab: interrupted again: "+*abandonNote)
				cancelCleanup()
			default:
				forceExit(ExitInterrupted)
			}
		}
	}()
	return run, abandon, func() { signal.Stop(ch); close(ch); cancel(); cancelCleanup(); signalOwners.Add(-1) }
}

// execInOrder runs plan and writes each host as soon as it and the hosts
// before it are done (as JSON, or its output prefixed with its name), and
// drops its output then: memory holds the hosts still running, not every
// host's output.
func (o *options) execInOrder(ctx context.Context, w io.Writer, r *app.Fleet, plan orchestrator.Plan, start time.Time) ([]orchestrator.HostResult, error) {
	var out hostWriter
	if o.json {
		j := newExecJSON(w)
		j.simulated = r.Simulated
		out = j
	} else {
		out = &perHostWriter{w: w, raw: o.raw, prefix: len(r.Targets) > 1}
	}
	each := func(_ int, hr *orchestrator.HostResult) {
		out.host(hr)
		for i := range hr.Steps {
			hr.Steps[i].Stdout, hr.Steps[i].Stderr = nil, nil
		}
	}
	results := r.Engine.RunInOrder(ctx, plan, each)
	return results, out.finish(results, time.Since(start))
}

// execLong is gpulab exec's --help.
const execLong = `Run a command on every selected host over plain SSH (no agent installed), up to
--concurrency hosts at once, and print what came back. Identical outputs are
shown once under the hosts that gave them, folded into node-set form
(gpu[01-06,08]); hosts that differ are shown as a diff against the majority.

One COMMAND argument is a shell command line, as with ssh. Several arguments
are quoted one by one, so that each reaches the remote command as one word.

Hosts come from -H: the inventory's hosts, groups and labels, or any name
~/.ssh/config knows (HostName, Port, User, IdentityFile, ProxyJump are
honoured); no inventory is needed. Host keys are verified against
known_hosts; --accept-new-host-keys adds unknown ones, a changed key is
always refused.

With --via kube the hosts are a Kubernetes cluster's nodes, reached
through its API server with no SSH and nothing installed: gpulab puts one
short-lived privileged pod on each node (the shape of kubectl debug node
--profile=sysadmin), runs the command in it chrooted into the host's /
(mounted read-only unless --writable-host; the pod is privileged root all
the same, so read-only guards against slips, it is no sandbox), and
deletes the pod when the node is done. -H picks nodes by name, node set
or @label=value; -l (or --selector) asks the API server for the nodes
matching a label selector, as kubectl -l does (over SSH, -l is the login
user). docs/kube-transport.md has the Role it needs and the namespace
label.

Each host ends in one class: ok, exit (non-zero status), killed (by a
signal), inactive (silent past --inactivity-timeout), timeout-command,
lost (connection dropped mid-command), timeout-connect, unreachable,
refused, auth, hostkey-unknown, hostkey-changed; through Kubernetes also
forbidden (RBAC, with the permission), admission (the pod refused),
image-pull, node-not-ready, quota, pod-failed; cancelled, error.
Exit status: 0 when every host is ok, 1 when any is not, 2 for usage or
configuration errors, 130 after Ctrl-C (partial results are printed).`

// execOptions are gpulab exec's flags and command, bound by newExecCmd;
// Complete, Validate and Run are its three steps.
type execOptions struct {
	*options
	ssh          sshFlags
	fold, noFold bool
	line         string // the remote command line (Complete)
}

func newExecCmd(o *options) *cobra.Command {
	eo := &execOptions{options: o}
	cmd := &cobra.Command{
		Use:   "exec -H EXPR [flags] -- COMMAND [ARG...]",
		Short: "Run a command on many hosts over SSH and fold identical outputs",
		Long:  execLong,
		Example: `  gpulab exec -H 'gpu[01-08]' -- nvidia-smi -L
  gpulab exec -H @a100 --timeout 30s -- 'nvidia-smi --query-gpu=driver_version --format=csv,noheader'
  gpulab exec -H gpu01,gpu02 --no-fold -- uptime
  gpulab exec -H node7 -F ~/.ssh/lab_config --known-hosts ./known_hosts -- uname -r
  gpulab exec -H '*' --json -- nvidia-smi -L | jq -r '.hosts[] | select(.class != "ok") | .host'
  gpulab exec --via kube --context prod -l nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB -- nvidia-smi -L`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("exec: no command given (put it after --: gpulab exec -H gpu01 -- uptime)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			eo.Complete(args)
			if err := eo.Validate(); err != nil {
				return err
			}
			ctx, stop := interruptible(cmd.ErrOrStderr())
			defer stop()
			return eo.Run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	eo.ssh.register(cmd)
	eo.ssh.registerKube()
	cmd.Flags().BoolVar(&eo.fold, "fold", false, "fold identical outputs (default when more than one host answers)")
	cmd.Flags().BoolVar(&eo.noFold, "no-fold", false, "print each host's output, lines prefixed with the host's name")
	return cmd
}

// Complete makes the remote command line: one argument as it is (a shell
// command line, as with ssh), several quoted one by one.
func (eo *execOptions) Complete(args []string) {
	eo.line = args[0]
	if len(args) > 1 {
		eo.line = orchestrator.QuoteArgs(args)
	}
}

// Validate refuses contradictory flags.
func (eo *execOptions) Validate() error {
	if eo.fold && eo.noFold {
		return usageErr("--fold and --no-fold contradict each other")
	}
	return eo.ssh.check()
}

// Run runs the command on every selected host, prints what came back
// (folded, per host, or --json) and the summary line on stderr, and
// returns the exit status the hosts give.
func (eo *execOptions) Run(ctx context.Context, stdout, stderr io.Writer) error {
	r, err := eo.newRunner(&eo.ssh)
	if err != nil {
		return err
	}
	defer r.Keys.Close()
	start := time.Now()
	plan := r.ExecPlan(eo.line)
	var results []orchestrator.HostResult
	m := eo.startMeter("exec", r.Engine, len(r.Targets))
	defer m.end()
	if eo.json || eo.noFold || (!eo.fold && len(r.Targets) == 1) {
		results, err = eo.execInOrder(ctx, stdout, r, plan, start)
		m.end()
	} else {
		results = r.Engine.Run(ctx, plan, nil)
		m.end()
		err = printFolded(stdout, eo.raw, results)
	}
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	summary := fmt.Sprintf("%s in %.2fs", orchestrator.Summary(results), elapsed.Seconds())
	if simulatedRun(r, results...) {
		summary += ", on a " + simulatedFleet + " (gpulab sim)"
	}
	fmt.Fprintln(stderr, summary)
	return fanOutExit(ctx, results)
}

// fanOutExit maps a fan-out's outcome to the exit status.
func fanOutExit(ctx context.Context, results []orchestrator.HostResult) error {
	switch {
	case ctx.Err() != nil:
		return errInterrupted
	case orchestrator.Worst(results) != orchestrator.OK:
		return errSilentFailure
	}
	return nil
}

// hostWriter writes exec's results one host at a time, in plan order, as
// hosts finish, then what needs every host (summary, counts).
type hostWriter interface {
	host(hr *orchestrator.HostResult)
	finish(results []orchestrator.HostResult, elapsed time.Duration) error
}

// execJSON streams exec's JSON document: {"hosts": [...], "summary",
// "worst", "counts", "seconds"}. Each host is encoded when it is done, its
// output escaped as it is written: memory never holds a host's encoded
// output, which for binary is several times the output itself.
type execJSON struct {
	w         *bufio.Writer
	hosts     int
	err       error
	simulated bool // the hosts are a simulated fleet: the document says so
}

func newExecJSON(w io.Writer) *execJSON {
	j := &execJSON{w: bufio.NewWriterSize(w, 64<<10)}
	j.w.WriteString("{\n  \"hosts\": [")
	return j
}

// host writes one element of "hosts": the host's result (without the
// steps' output, which Result leaves out of its JSON) and, as "stdout" and
// "stderr", the first step's output.
func (j *execJSON) host(hr *orchestrator.HostResult) {
	if j.err != nil {
		return
	}
	head, err := json.MarshalIndent(hr, "    ", "  ")
	if err != nil {
		j.err = err
		return
	}
	if j.hosts > 0 {
		j.w.WriteByte(',')
	}
	j.hosts++
	j.w.WriteString("\n    ")
	j.w.Write(bytes.TrimSuffix(head, []byte("\n    }")))
	var stdout, stderr []byte
	if len(hr.Steps) > 0 {
		stdout, stderr = hr.Steps[0].Stdout, hr.Steps[0].Stderr
	}
	j.w.WriteString(",\n      \"stdout\": ")
	writeJSONString(j.w, stdout)
	j.w.WriteString(",\n      \"stderr\": ")
	writeJSONString(j.w, stderr)
	j.w.WriteString("\n    }")
	j.err = j.w.Flush()
}

func (j *execJSON) finish(results []orchestrator.HostResult, elapsed time.Duration) error {
	if j.err != nil {
		return j.err
	}
	if j.hosts > 0 {
		j.w.WriteString("\n  ")
	}
	counts := map[string]int{}
	for _, r := range results {
		counts[r.Class.String()]++
		j.simulated = j.simulated || r.Simulated
	}
	tail, err := json.MarshalIndent(struct {
		Summary   string         `json:"summary"`
		Worst     string         `json:"worst"`
		Counts    map[string]int `json:"counts"`
		Seconds   float64        `json:"seconds"`
		Simulated bool           `json:"simulated,omitempty"`
	}{orchestrator.Summary(results), orchestrator.Worst(results).String(), counts, elapsed.Seconds(), j.simulated || anySimulated(results)}, "", "  ")
	if err != nil {
		return err
	}
	j.w.WriteString("],")
	j.w.Write(tail[1:]) // the object's fields and its closing brace
	j.w.WriteByte('\n')
	return j.w.Flush()
}

// writeJSONString writes b as a JSON string exactly as encoding/json
// writes string(b): invalid UTF-8 becomes U+FFFD, control characters,
// HTML's <, > and &, and U+2028 and U+2029 are escaped. It writes as it
// goes: a megabyte of binary output encodes to several, and none of that
// is held anywhere but in w's buffer.
func writeJSONString(w *bufio.Writer, b []byte) {
	const hex = "0123456789abcdef"
	w.WriteByte('"')
	start := 0 // b[start:i] is waiting to be written as it is
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			w.Write(b[start:i])
			switch c {
			case '"', '\\':
				w.WriteByte('\\')
				w.WriteByte(c)
			case '\b':
				w.WriteString(`\b`)
			case '\f':
				w.WriteString(`\f`)
			case '\n':
				w.WriteString(`\n`)
			case '\r':
				w.WriteString(`\r`)
			case '\t':
				w.WriteString(`\t`)
			default:
				w.WriteString(`\u00`)
				w.WriteByte(hex[c>>4])
				w.WriteByte(hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			w.Write(b[start:i])
			w.WriteString(`\ufffd`)
		case r == '\u2028' || r == '\u2029':
			w.Write(b[start:i])
			w.WriteString(`\u202`)
			w.WriteByte(hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	w.Write(b[start:])
	w.WriteByte('"')
}

// perHostWriter prints each host's output; with prefix, every line starts
// with the host's name, as clush without -b does. The output goes to raw,
// as ssh would print it; what gpulab says goes to w.
type perHostWriter struct {
	w, raw io.Writer
	prefix bool
}

func (p *perHostWriter) host(r *orchestrator.HostResult) {
	w, pre := p.w, ""
	if p.prefix {
		pre = r.Host + ": "
	}
	if len(r.Steps) == 0 {
		fmt.Fprintf(w, "%s[%s] %s\n", pre, r.Class, r.Err)
		return
	}
	s := r.Steps[0]
	writePrefixed(p.raw, pre, s.Stdout)
	writePrefixed(p.raw, pre, s.Stderr)
	if s.Truncated {
		fmt.Fprintf(w, "%s[output truncated: %d bytes printed, %d kept]\n", pre, s.StdoutBytes+s.StderrBytes, len(s.Stdout)+len(s.Stderr))
	}
	if s.Class != orchestrator.OK {
		fmt.Fprintf(w, "%s[%s%s] %s\n", pre, s.Class, exitNote(s), s.Err)
	}
}

func (p *perHostWriter) finish([]orchestrator.HostResult, time.Duration) error { return nil }

func exitNote(s orchestrator.Result) string {
	switch {
	case s.Signal != "":
		return " SIG" + s.Signal
	case s.ExitCode > 0:
		return fmt.Sprintf(" %d", s.ExitCode)
	}
	return ""
}

// writeOutput writes a group's output, ending with a line break.
func writeOutput(w io.Writer, text string) {
	if text == "" {
		return
	}
	io.WriteString(w, text)
	if !strings.HasSuffix(text, "\n") {
		io.WriteString(w, "\n")
	}
}

// writePrefixed writes text to raw, each line after prefix, ending with a
// line break.
func writePrefixed(raw io.Writer, prefix string, text []byte) {
	if len(text) == 0 {
		return
	}
	if prefix == "" {
		raw.Write(text)
		if text[len(text)-1] != '\n' {
			io.WriteString(raw, "\n")
		}
		return
	}
	// One write for the whole text (a write a line was most of exec's
	// own CPU on a thousand hosts); the prefix is gpulab's, escaped as
	// what gpulab says is, the lines are the host's, as they came.
	pre := visible.String(prefix)
	var b bytes.Buffer
	b.Grow(len(text) + bytes.Count(text, []byte{'\n'})*len(pre) + len(pre) + 1)
	for l := range bytes.Lines(text) {
		b.WriteString(pre)
		b.Write(l)
		if l[len(l)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	raw.Write(b.Bytes())
}

// printFolded prints each group once; groups other than the majority are
// shown as a diff against it. The output goes to raw, as ssh would print
// it; what gpulab says (headers, hosts' errors) goes to w.
func printFolded(w, raw io.Writer, results []orchestrator.HostResult) error {
	groups := orchestrator.Fold(results, 0)
	majority := groups[0]
	cut := map[string]bool{} // hosts whose output was cut at the limit
	for _, r := range results {
		cut[r.Host] = len(r.Steps) > 0 && r.Steps[0].Truncated
	}
	defer func() {
		var hosts []string
		for h, c := range cut {
			if c {
				hosts = append(hosts, h)
			}
		}
		if len(hosts) > 0 {
			fmt.Fprintf(w, "[output cut at the limit on %s: the rest was not kept (--json says how much came)]\n", inventory.FoldNames(hosts))
		}
	}()
	for i, g := range groups {
		fmt.Fprintln(w, "---------------- "+render.GroupHead(g, render.GroupClass(g)).String())
		if len(g.Errors) > 0 {
			names := make([]string, 0, len(g.Errors))
			for h := range g.Errors {
				names = append(names, h)
			}
			sort.Slice(names, func(a, b int) bool { return inventory.CompareNames(names[a], names[b]) < 0 })
			for _, h := range names {
				fmt.Fprintf(w, "  %s: %s\n", h, g.Errors[h])
			}
		}
		if i > 0 && majority.Class == orchestrator.OK && (g.Stdout != "" || g.Stderr != "") && !(len(g.Errors) > 0 && g.Stdout == "") {
			fmt.Fprintf(w, "differs from %s:\n", majority.NodeSet)
			io.WriteString(raw, orchestrator.Diff(majority, g))
			continue
		}
		writeOutput(raw, g.Stdout)
		if g.Stderr != "" {
			fmt.Fprintln(w, "(stderr)")
			writeOutput(raw, g.Stderr)
		}
	}
	return nil
}
