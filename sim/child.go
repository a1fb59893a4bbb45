package sim

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/sim/dgx"
)

// ChildEnv, set to 1, makes a gpulab (or a test binary whose TestMain
// asks IsChild) the fleet's child process: it runs RunChild and nothing
// else. Spawn sets it; nothing else should.
const ChildEnv = "GPULAB_SIM_CHILD"

// IsChild says whether this process was started by Spawn to run a fleet.
func IsChild() bool { return os.Getenv(ChildEnv) == "1" }

// Child is a simulated fleet running in a child process of its own, under
// hard limits (limits.go): whatever a simulated command does, the worst
// is that the child ends; the process that spawned it (the workbench)
// goes on, says why (Err) and can start it again (Restart) on the same
// ports with the same keys, so that its inventory stays right. The
// parent holds the hosts' sockets: connections made while the child is
// down wait in the listen queue.
type Child struct {
	desc    *Fleet // the hosts as the parent knows them: names, addresses, keys; none serves here
	keys    *given // what every child gets
	argv    []string
	dir     string
	ownDir  bool
	changes chan struct{}

	mu     sync.Mutex
	run    *childRun
	gen    int
	closed bool
}

// childRun is one child process.
type childRun struct {
	cmd    *exec.Cmd
	dir    string
	inMu   sync.Mutex
	in     io.WriteCloser
	done   chan struct{} // closed when the process has ended; err says why
	err    error
	stderr *tail

	pmu     sync.Mutex
	next    int
	pending map[int]chan childMsg
}

// childMsg is one line between parent and child, either way.
type childMsg struct {
	ID   int    `json:"id,omitempty"`
	Op   string `json:"op"` // ready, error, changed, kill, kube
	Host string `json:"host,omitempty"`
	Err  string `json:"err,omitempty"`
	// Refusal is the simulated cluster's refusal an Err is: "conflict",
	// "notfound".
	Refusal string          `json:"refusal,omitempty"`
	Kube    json.RawMessage `json:"kube,omitempty"`
}

// childInit is the child's first line of input.
type childInit struct {
	Config   Config
	Client   []byte   // the client key's seed
	HostKeys [][]byte // each host's key's seed
}

// maxChildLine bounds a line from the child (a cluster of 10,000 nodes is
// about 30 MB of JSON).
const maxChildLine = 256 << 20

// Spawn starts the fleet cfg describes in a child process, running this
// program's own executable with ChildEnv set, and returns once every host
// listens. Its methods are Fleet's that the workbench uses.
func Spawn(ctx context.Context, cfg Config) (*Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sim: the simulated fleet runs in a child process of this program, which cannot find its own executable: %w", err)
	}
	cfg, err = cfg.check()
	if err != nil {
		return nil, err
	}
	c := &Child{argv: []string{exe}, dir: cfg.Dir, changes: make(chan struct{}, 1)}
	if c.dir == "" {
		if c.dir, err = PrivateDir(simDirPrefix); err != nil {
			return nil, err
		}
		c.ownDir = true
	}
	if err := c.describe(cfg); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// describe makes the fleet's keys and sockets, which every child of this
// fleet takes over.
func (c *Child) describe(cfg Config) error {
	d := &Fleet{cfg: cfg}
	g := &given{}
	var err error
	if _, g.client, err = ed25519.GenerateKey(rand.Reader); err != nil {
		return err
	}
	d.key = g.client
	signer, err := ssh.NewSignerFromKey(g.client)
	if err != nil {
		return err
	}
	d.clientPK = signer.PublicKey()
	sick, _, js := plan(cfg.Seed, cfg.Hosts, cfg.Faults)
	d.sick = sick
	c.desc, c.keys = d, g
	for i := range cfg.Hosts {
		name := HostName(i, cfg.Hosts)
		h := &host{name: name, index: i, fleet: d, faults: js[i], sick: i == sick, mode: cfg.modeOf(name)}
		_, hk, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return err
		}
		if h.signer, err = ssh.NewSignerFromKey(hk); err != nil {
			return err
		}
		var sock *os.File
		if h.mode == Drop {
			fd, port, err := reservePort()
			if err != nil {
				return err
			}
			sock = os.NewFile(uintptr(fd), name)
			h.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		} else {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			h.addr = ln.Addr().String()
			sock, err = ln.(*net.TCPListener).File()
			ln.Close() // the copy keeps listening
			if err != nil {
				return err
			}
		}
		g.hosts = append(g.hosts, hk)
		g.socks = append(g.socks, sock)
		d.hosts = append(d.hosts, h)
	}
	return nil
}

// start runs a new child and waits for its hosts to listen.
func (c *Child) start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("sim: the simulated fleet is closed")
	}
	c.gen++
	r := &childRun{dir: filepath.Join(c.dir, fmt.Sprintf("run-%d", c.gen)), done: make(chan struct{}), stderr: &tail{max: 16 << 10}, pending: map[int]chan childMsg{}}
	if err := os.Mkdir(r.dir, 0o700); err != nil {
		return err
	}
	cfg := c.desc.cfg
	cfg.Dir = r.dir
	init := childInit{Config: cfg, Client: c.keys.client.Seed()}
	for _, k := range c.keys.hosts {
		init.HostKeys = append(init.HostKeys, k.Seed())
	}
	line, err := json.Marshal(init)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	cmd.ExtraFiles = c.keys.socks
	cmd.Stderr = r.stderr
	// Its own process group: a terminal's ctrl+c reaches the workbench,
	// which closes the fleet, not the fleet first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if r.in, err = cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sim: start the simulated fleet's process: %w", err)
	}
	r.cmd = cmd
	ready := make(chan error, 1)
	go r.read(out, ready, c.changes)
	if _, err := r.in.Write(append(line, '\n')); err != nil {
		_ = cmd.Process.Kill()
	}
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		_ = cmd.Process.Kill()
		<-r.done
		os.RemoveAll(r.dir)
		return err
	}
	c.run = r
	notify(c.changes) // a cluster that starts again starts afresh
	return nil
}

// read takes the child's lines until it ends; then it waits for the
// process and says why it ended.
func (r *childRun) read(out io.Reader, ready chan<- error, changes chan struct{}) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), maxChildLine)
	started := false
	for sc.Scan() {
		var m childMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Op == "ready" && !started:
			started = true
			ready <- nil
		case m.Op == "error" && !started:
			started = true
			ready <- fmt.Errorf("sim: %s", m.Err)
		case m.Op == "changed":
			notify(changes)
		case m.ID != 0:
			r.pmu.Lock()
			ch := r.pending[m.ID]
			delete(r.pending, m.ID)
			r.pmu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
	_, _ = io.Copy(io.Discard, out)
	werr := r.cmd.Wait()
	r.err = stoppedBecause(werr, r.stderr.String())
	if !started {
		ready <- r.err
	}
	close(r.done)
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// stoppedBecause says in a line why the child ended, from its exit and
// the end of its standard error (the Go runtime's own words when a hard
// limit ended it).
func stoppedBecause(err error, stderr string) error {
	last := "" // the runtime's first "fatal error:", "panic:" or "SIGxxx:" line, else the last line
	first := func(l string) bool {
		return strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "SIG") && strings.Contains(l, ":")
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l = strings.TrimSpace(l); l != "" && !first(last) {
			last = l
		}
	}
	why := ""
	switch {
	case strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") || strings.Contains(stderr, "newosproc"):
		why = fmt.Sprintf("it ran out of memory (the fleet may map %d MiB)", addressSpace()>>20)
	case strings.Contains(stderr, "stack exceeds"):
		why = fmt.Sprintf("a command's stack passed %d MiB", childMaxStack>>20)
	case strings.Contains(stderr, "pthread_create failed"):
		why = fmt.Sprintf("it could not start a thread within the %d MiB it may map", addressSpace()>>20)
	case strings.Contains(stderr, "thread limit") || strings.Contains(stderr, "thread exhaustion"):
		why = fmt.Sprintf("it passed %d threads", childMaxThreads)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if why == "" {
				why = "killed by " + unix.SignalName(ws.Signal())
				if ws.Signal() == syscall.SIGKILL {
					why += " (the kernel's OOM killer, or a person)"
				}
			}
			return errors.New(why)
		}
	}
	switch {
	case why != "":
	case err != nil && last != "":
		why = fmt.Sprintf("%v: %s", err, last)
	case err != nil:
		why = err.Error()
	default:
		why = "it exited"
	}
	return errors.New(why)
}

// tail keeps the first and the last max bytes written to it: the Go
// runtime's "fatal error:" comes first, before every goroutine's stack.
type tail struct {
	mu   sync.Mutex
	max  int
	head []byte
	b    []byte
	cut  bool
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := t.max - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head, p = append(t.head, p[:k]...), p[k:]
	}
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b, t.cut = append([]byte(nil), t.b[len(t.b)-t.max:]...), true
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	sep := ""
	if t.cut {
		sep = "\n...\n"
	}
	return string(t.head) + sep + string(t.b)
}

// current is the running child, or why there is none.
func (c *Child) current() (*childRun, error) {
	c.mu.Lock()
	r, closed := c.run, c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return nil, errors.New("sim: the simulated fleet is closed")
	case r == nil:
		return nil, errors.New("sim: the simulated fleet is not running")
	}
	select {
	case <-r.done:
		return nil, fmt.Errorf("the simulated fleet stopped: %w", r.err)
	default:
	}
	return r, nil
}

// ask sends the child a request and waits for its answer.
func (c *Child) ask(op, hostName string) (childMsg, error) {
	return c.request(childMsg{Op: op, Host: hostName})
}

// request sends the child m (its ID set here) and waits for the answer;
// a refusal of the simulated cluster comes back as its own error
// (dgx.ErrConflict, dgx.ErrNotFound), as the child said it.
func (c *Child) request(m childMsg) (childMsg, error) {
	op := m.Op
	r, err := c.current()
	if err != nil {
		return childMsg{}, err
	}
	ch := make(chan childMsg, 1)
	r.pmu.Lock()
	r.next++
	id := r.next
	r.pending[id] = ch
	r.pmu.Unlock()
	defer func() {
		r.pmu.Lock()
		delete(r.pending, id)
		r.pmu.Unlock()
	}()
	m.ID = id
	line, _ := json.Marshal(m)
	r.inMu.Lock()
	_, err = r.in.Write(append(line, '\n'))
	r.inMu.Unlock()
	if err != nil {
		return childMsg{}, fmt.Errorf("sim: the simulated fleet's process: %w", err)
	}
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	select {
	case m := <-ch:
		switch {
		case m.Err == "":
			return m, nil
		case m.Refusal == "conflict":
			return m, fmt.Errorf("%s: %w", m.Err, dgx.ErrConflict)
		case m.Refusal == "notfound":
			return m, fmt.Errorf("%s: %w", m.Err, dgx.ErrNotFound)
		}
		return m, errors.New(m.Err)
	case <-r.done:
		return childMsg{}, fmt.Errorf("the simulated fleet stopped: %w", r.err)
	case <-t.C:
		return childMsg{}, fmt.Errorf("sim: the simulated fleet's process did not answer %s in a minute", op)
	}
}

// Hosts lists the fleet's hosts in order.
func (c *Child) Hosts() []Host { return c.desc.Hosts() }

// WriteInventory writes the fleet's inventory and the files it names
// (Fleet.WriteInventory): they stay right when the fleet starts again.
func (c *Child) WriteInventory(inventory string) (Files, error) {
	return c.desc.WriteInventory(inventory)
}

// ProbeSum is the sha256 of the simulator probe the hosts will run.
func (c *Child) ProbeSum() string { return c.desc.ProbeSum() }

// Kill cuts a host off mid-run, as a power cut would.
func (c *Child) Kill(name string) error {
	_, err := c.ask("kill", name)
	return err
}

// Stopped is closed when the running child ends (at once when none
// runs); Err then says why.
func (c *Child) Stopped() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return c.run.done
}

// Err says why the fleet's process stopped, nil while it runs.
func (c *Child) Err() error {
	_, err := c.current()
	return err
}

// Restart starts the fleet again after its process stopped: the same
// hosts on the same ports with the same keys, their trees fresh (a host
// started again is a host rebooted with its disk wiped).
func (c *Child) Restart(ctx context.Context) error {
	c.mu.Lock()
	old := c.run
	c.mu.Unlock()
	if old != nil {
		select {
		case <-old.done:
		default:
			return errors.New("sim: the simulated fleet is running")
		}
		os.RemoveAll(old.dir)
	}
	return c.start(ctx)
}

// Close stops the child (it closes its hosts and removes their trees
// when its standard input ends; it is killed if it has not in 10 s) and
// removes the fleet's directory if Spawn made it.
func (c *Child) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	r := c.run
	c.mu.Unlock()
	if r != nil {
		r.inMu.Lock()
		r.in.Close()
		r.inMu.Unlock()
		t := time.NewTimer(10 * time.Second)
		select {
		case <-r.done:
		case <-t.C:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		t.Stop()
		os.RemoveAll(r.dir)
	}
	if c.keys != nil {
		for _, s := range c.keys.socks {
			s.Close()
		}
	}
	if c.ownDir {
		return os.RemoveAll(c.dir)
	}
	return nil
}

// KubeClient is the fleet's simulated cluster as client-go sees it
// (MirrorCluster), read from the child; while the child is down it keeps
// what it last read, and a child started again starts it afresh.
func (c *Child) KubeClient(ctx context.Context) (*cluster.Client, error) {
	return MirrorCluster(ctx, childKube{c}, KubeResync)
}

type childKube struct{ c *Child }

func (k childKube) KubeObjects() (*dgx.KubeObjects, error) {
	m, err := k.c.ask("kube", "")
	if err != nil {
		return nil, err
	}
	ko := &dgx.KubeObjects{}
	if err := json.Unmarshal(m.Kube, ko); err != nil {
		return nil, fmt.Errorf("sim: the simulated cluster from the fleet's process: %w", err)
	}
	return ko, nil
}

func (k childKube) Changes() <-chan struct{} { return k.c.changes }

func (k childKube) WriteNode(w dgx.NodeWrite) error {
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	_, err = k.c.request(childMsg{Op: "node", Kube: b})
	return err
}

func (k childKube) EvictPod(ns, name string) error {
	b, err := json.Marshal([2]string{ns, name})
	if err != nil {
		return err
	}
	_, err = k.c.request(childMsg{Op: "evict", Kube: b})
	return err
}

// RunChild is the fleet's child process (see Spawn): it reads its
// configuration, keys and sockets, puts itself under the hard limits,
// serves the fleet and answers its parent until its standard input ends,
// then closes the fleet. It returns the exit status.
func RunChild() int {
	os.Unsetenv(ChildEnv) // not passed on (the probe processes get an environment of their own anyway)
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		fmt.Fprintf(os.Stderr, "gpulab: %s=1 is set, and this process was not started by gpulab to run a simulated fleet (its input is a terminal): unset it\n", ChildEnv)
		return 2
	}
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	var out sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	send := func(m childMsg) {
		out.Lock()
		defer out.Unlock()
		_ = enc.Encode(m)
	}
	init, err := readInit(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpulab: %s=1 is set, and this process was not started by gpulab to run a simulated fleet (%v)\n", ChildEnv, err)
		return 2
	}
	g := &given{client: ed25519.NewKeyFromSeed(init.Client)}
	for i, seed := range init.HostKeys {
		g.hosts = append(g.hosts, ed25519.NewKeyFromSeed(seed))
		g.socks = append(g.socks, os.NewFile(uintptr(3+i), "host socket"))
	}
	if err := childLimits(init.Config.Hosts); err != nil {
		send(childMsg{Op: "error", Err: "hard limits: " + err.Error()})
		return 1
	}
	f, err := start(context.Background(), init.Config, g)
	if err != nil {
		send(childMsg{Op: "error", Err: err.Error()})
		return 1
	}
	for _, s := range g.socks {
		s.Close() // each host holds its own copy
	}
	defer f.Close()
	go func() {
		for {
			select {
			case <-f.ctx.Done():
				return
			case <-f.cluster.Changes():
				send(childMsg{Op: "changed"})
			}
		}
	}()
	send(childMsg{Op: "ready"})
	for {
		line, err := readLine(in, 1<<20)
		if err != nil {
			return 0 // the parent closed the fleet, or is gone
		}
		var m childMsg
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		send(f.answer(m))
	}
}

// answer is the child's reply to a request of its parent.
func (f *Fleet) answer(m childMsg) childMsg {
	reply := childMsg{ID: m.ID, Op: m.Op}
	switch m.Op {
	case "kill":
		if err := f.Kill(m.Host); err != nil {
			reply.Err = err.Error()
		}
	case "kube":
		ko, err := f.cluster.KubeObjects()
		if err == nil {
			reply.Kube, err = json.Marshal(ko)
		}
		if err != nil {
			reply.Err = err.Error()
		}
	case "node", "evict":
		reply.Err, reply.Refusal = f.write(m)
	default:
		reply.Err = "no such request: " + m.Op
	}
	return reply
}

// write is a write to the simulated cluster (a node's update, an
// eviction): the error it ends with, and which refusal it is.
func (f *Fleet) write(m childMsg) (string, string) {
	var err error
	if m.Op == "node" {
		var w dgx.NodeWrite
		if err = json.Unmarshal(m.Kube, &w); err == nil {
			err = f.cluster.WriteNode(w)
		}
	} else {
		var pod [2]string
		if err = json.Unmarshal(m.Kube, &pod); err == nil {
			err = f.cluster.EvictPod(pod[0], pod[1])
		}
	}
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, dgx.ErrConflict):
		return err.Error(), "conflict"
	case errors.Is(err, dgx.ErrNotFound):
		return err.Error(), "notfound"
	}
	return err.Error(), ""
}

// readInit reads the parent's first line: the fleet's configuration and
// keys.
func readInit(in *bufio.Reader) (childInit, error) {
	var init childInit
	line, err := readLine(in, 64<<20)
	if err == nil {
		err = json.Unmarshal(line, &init)
	}
	if err == nil && (init.Config.Hosts < 1 || len(init.HostKeys) != init.Config.Hosts || len(init.Client) != ed25519.SeedSize) {
		err = errors.New("no fleet in its first line")
	}
	for _, k := range init.HostKeys {
		if err == nil && len(k) != ed25519.SeedSize {
			err = errors.New("a host key of the wrong size")
		}
	}
	return init, err
}

// readLine reads one line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("a line over %d bytes", max)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, err
		}
		return line, nil
	}
}

// childLimits puts this process under the fleet's hard limits: address
// space (not under the race detector, whose shadow memory is terabytes
// of it), threads, a goroutine's stack, open files, no core dumps, and a
// lower CPU priority than the workbench's.
func childLimits(hosts int) error {
	budget := addressSpace()
	if !raceEnabled {
		// On top of what the process has mapped now: the Go runtime
		// reserves about a GiB of address space at start.
		vm, err := vmSize()
		if err != nil {
			return err
		}
		as := vm + budget
		// Within what the operator allows already (ulimit -v), which
		// only root could raise.
		var was syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_AS, &was); err == nil && was.Max < as {
			if was.Max < vm+minAddressSpace {
				return fmt.Errorf("address space: the fleet's process may map %d MiB (ulimit -v), and mapped %d MiB as it started: it needs %d MiB more at least; raise ulimit -v, or leave it unlimited (%s lowers gpulab's own limit, %d MiB)",
					was.Max>>20, vm>>20, minAddressSpace>>20, MemoryEnv, childAddressSpace>>20)
			}
			as, budget = was.Max, was.Max-vm
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
			return fmt.Errorf("address space: %w", err)
		}
	}
	maxHeap = min(maxHeap, budget/4) // the watchdog stops commands well before
	var nofile syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err == nil {
		want := min(nofile.Max, uint64(4096+64*hosts))
		nofile.Cur, nofile.Max = want, want
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
			return fmt.Errorf("open files: %w", err)
		}
	}
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, 0, 10)
	debug.SetMaxThreads(childMaxThreads)
	debug.SetMaxStack(childMaxStack)
	return nil
}

// minAddressSpace is the least the fleet's process starts with beyond what
// it mapped at its start (GPULAB_SIM_MEMORY_MIB's floor too).
const minAddressSpace = 256 << 20

// MemoryEnv, set to a number of MiB, lowers the fleet's address space
// limit (childAddressSpace) for a machine with less to spare; it never
// raises it.
const MemoryEnv = "GPULAB_SIM_MEMORY_MIB"

// addressSpace is the child's address space limit.
func addressSpace() uint64 {
	if mib, err := strconv.ParseUint(os.Getenv(MemoryEnv), 10, 32); err == nil && mib<<20 >= minAddressSpace {
		return min(childAddressSpace, mib<<20)
	}
	return childAddressSpace
}

// vmSize is this process's mapped address space, from /proc/self/status.
func vmSize() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmSize in /proc/self/status")
}
