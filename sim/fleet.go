// Package sim is a simulated DGX A100 fleet for demos and tests, with no
// hardware: every host is a real SSH server (golang.org/x/crypto/ssh) on
// its own loopback port with its own host key, commands run in a POSIX
// shell interpreter written in Go (mvdan.cc/sh/v3) over the host's private
// tree, GPU and cluster tools answer from recorded real outputs with the
// sick host's faults applied (sim/dgx), and the probe gpulab pushes is the
// only real process, started only when its sha256 is that of the simulator
// build gpulab embeds. Everything it shows is simulated, and says so.
package sim

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/bundle"
	"github.com/gpulab/gpulab/sim/dgx"
	"github.com/gpulab/gpulab/sim/spec"
)

// Fault is what a host does with connections.
type Fault int

const (
	Healthy Fault = iota // answers
	Drop                 // refuses connections
	Hang                 // accepts them and never answers
	Die                  // logs in; each connection is cut as its first command starts
	Deny                 // answers, and accepts no key (every login fails)
	Stall                // logs in; every command it is given hangs, silent, until it is stopped
)

// String is the fault's flag name ("" for a healthy host).
func (f Fault) String() string {
	names := [...]string{"", "drop", "hang", "die", "deny", "stall"}
	if int(f) < len(names) {
		return names[f]
	}
	return fmt.Sprintf("fault(%d)", int(f))
}

// Config says what fleet to simulate.
type Config struct {
	Hosts   int           // how many hosts (default 4)
	Seed    int64         // picks the sick host and its faults
	Latency time.Duration // added before every packet each host sends
	Drop    []string      // hosts that refuse connections
	Hang    []string      // hosts that accept and never answer
	// Die are hosts that log in and whose connection is cut, as a power
	// cut would, as soon as a command starts on it: a host lost
	// mid-command, every time.
	Die []string
	// Deny are hosts that accept no key: every login fails (auth).
	Deny []string
	// Stall are hosts that log in and whose every command hangs, printing
	// nothing, until the client stops it: a hung nvidia-smi, a D-state
	// process (timeout-command, or inactive).
	Stall []string
	// Faults replace the named hosts' simulated faults (the seed's for
	// the others): each is the JSON of spec.Faults, as the probe's
	// --mock-faults takes it, and must pass its Validate.
	Faults map[string]spec.Faults
	// Dir holds the hosts' trees; default a new temporary directory,
	// removed by Close.
	Dir string
	// Kubelet, when set, gives every host a kubelet endpoint (Start
	// only, not Spawn): see KubeletConfig.
	Kubelet *KubeletConfig
}

// Fleet is a running simulated fleet.
type Fleet struct {
	cfg        Config
	dir        string
	empty      string // an empty directory: a host's root if its tree cannot be made
	tmp        string // the fleet's private directory for the simulator probe
	scratch    string // TMPDIR of the real probe processes (probeScratch)
	ownDir     bool
	hosts      []*host
	key        ed25519.PrivateKey
	clientPK   ssh.PublicKey
	probeOnce  sync.Once
	probeSum   string // the simulator probe's sha256 (probe), "" if none is embedded
	probePath  string // the embedded simulator probe, written once into tmp, shared by every host (sealedProbe)
	memOnce    sync.Once
	memErr     error
	gzOnce     sync.Once // gz: the simulator probe as pushed (gunzip)
	gz         []byte
	dataOnce   sync.Once // data: gz decompressed, once (gunzip)
	data       []byte
	dataErr    error
	glibc      string // what getconf GNU_LIBC_VERSION says (probe)
	sick       int
	probeSlots chan struct{} // one per real probe process running (maxProbes)
	given      *given        // keys and sockets from the parent (Spawn)
	watch      watchdog      // stops every command when the heap runs past maxHeap
	disk       disk          // the hosts' disk together
	cluster    *dgx.Cluster  // every host's kubectl talks to it
	slurm      *dgx.Slurm    // every host's scontrol and sinfo talk to it
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	closed     sync.Once
}

// HostName is the name of the i-th host (0-based) of a fleet of n.
func HostName(i, n int) string {
	return fmt.Sprintf("dgx%0*d", max(2, len(strconv.Itoa(n))), i+1)
}

// Start brings the fleet up in this process: every host listens (or
// refuses, for Drop) before Start returns. gpulab demo and sim serve run
// it in a child process of its own instead (Spawn).
func Start(ctx context.Context, cfg Config) (*Fleet, error) {
	return start(ctx, cfg, nil)
}

// given is what a child's fleet takes from its parent (Spawn): the keys
// and the sockets, so that a fleet started again keeps its hosts'
// addresses and keys.
type given struct {
	client ed25519.PrivateKey
	hosts  []ed25519.PrivateKey
	socks  []*os.File // a listening socket, or a Drop host's bound one
}

func start(ctx context.Context, cfg Config, g *given) (*Fleet, error) {
	cfg, err := cfg.check()
	if err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, dir: cfg.Dir, given: g}
	if f.dir == "" {
		d, err := PrivateDir(simDirPrefix)
		if err != nil {
			return nil, err
		}
		f.dir, f.ownDir = d, true
	}
	f.empty = filepath.Join(f.dir, ".empty")
	if err := os.Mkdir(f.empty, 0o500); err != nil {
		return nil, err
	}
	// The simulator probe is kept under the fleet's own directory,
	// removed with it.
	f.tmp = filepath.Join(f.dir, ".tmp")
	if err := os.Mkdir(f.tmp, 0o700); err != nil {
		return nil, err
	}
	f.scratch = probeScratch(f.tmp)
	f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := f.start(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// check is cfg with its defaults, or why it is no fleet.
func (cfg Config) check() (Config, error) {
	if cfg.Hosts == 0 {
		cfg.Hosts = 4
	}
	if cfg.Hosts < 1 || cfg.Hosts > MaxHosts {
		return cfg, fmt.Errorf("sim: --hosts %d: between 1 and %d", cfg.Hosts, MaxHosts)
	}
	names := map[string]bool{}
	for i := 0; i < cfg.Hosts; i++ {
		names[HostName(i, cfg.Hosts)] = true
	}
	for n, f := range cfg.Faults {
		if !names[n] {
			return cfg, fmt.Errorf("sim: --faults: no host %q in this fleet (hosts are %s to %s)", n, HostName(0, cfg.Hosts), HostName(cfg.Hosts-1, cfg.Hosts))
		}
		if err := f.Validate(); err != nil {
			return cfg, fmt.Errorf("sim: --faults: host %q: %w", n, err)
		}
	}
	for _, n := range slices.Concat(cfg.Drop, cfg.Hang, cfg.Die, cfg.Deny, cfg.Stall) {
		if !names[n] {
			return cfg, fmt.Errorf("sim: no host %q in this fleet (hosts are %s to %s)", n, HostName(0, cfg.Hosts), HostName(cfg.Hosts-1, cfg.Hosts))
		}
		var flags []string
		for _, g := range []struct {
			flag  string
			hosts []string
		}{{"--drop", cfg.Drop}, {"--hang", cfg.Hang}, {"--die", cfg.Die}, {"--deny", cfg.Deny}, {"--stall", cfg.Stall}} {
			if slices.Contains(g.hosts, n) {
				flags = append(flags, g.flag)
			}
		}
		if len(flags) > 1 {
			return cfg, fmt.Errorf("sim: %s is given %s: a host refuses connections, never answers, dies under its commands, refuses every key or hangs in every command; one of them", n, strings.Join(flags, " and "))
		}
	}
	return cfg, nil
}

// modeOf is what the configuration makes host name do.
func (cfg Config) modeOf(name string) Fault {
	switch {
	case slices.Contains(cfg.Drop, name):
		return Drop
	case slices.Contains(cfg.Hang, name):
		return Hang
	case slices.Contains(cfg.Die, name):
		return Die
	case slices.Contains(cfg.Deny, name):
		return Deny
	case slices.Contains(cfg.Stall, name):
		return Stall
	}
	return Healthy
}

// simDirPrefix names the directories of fleets (in TMPDIR) gpulab made.
const simDirPrefix = "gpulab-sim-"

// PrivateDir makes a directory in TMPDIR named prefix+random, 0700, that
// says whose it is (.pid); first it removes those of the same prefix that
// a gpulab killed before it could remove them left behind (a crashed sim
// serve or demo leaves its hosts' trees).
func PrivateDir(prefix string) (string, error) {
	return privateDirIn(os.TempDir(), prefix)
}

// scratchDirPrefix names the probe processes' directories in memory.
const scratchDirPrefix = "gpulab-sim-scratch-"

// probeScratch is where the real probe processes write the simulated
// machine's /proc, pstore and sysfs they read (their TMPDIR): where the
// user has not set TMPDIR, a private directory in memory (/dev/shm, when
// it is a tmpfs with room), else fallback. Each run writes and removes
// some 600 small files: on the disk's filesystem that was two thirds of
// a probe's CPU when 16 ran at once (190 ms a run against 67 ms in
// memory).
func probeScratch(fallback string) string {
	base := memScratchBase()
	if base == "" || os.Getenv("TMPDIR") != "" {
		return fallback
	}
	d, err := privateDirIn(base, scratchDirPrefix)
	if err != nil {
		return fallback
	}
	return d
}

func privateDirIn(base, prefix string) (string, error) {
	removeCrashedTrees(base, prefix)
	d, err := os.MkdirTemp(base, prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(d, ".pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		os.RemoveAll(d)
		return "", err
	}
	return d, nil
}

// removeCrashedTrees removes the directories prefix* in tmp that are the
// user's own and whose .pid names a process that is gone.
func removeCrashedTrees(tmp, prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, prefix+"*"))
	for _, d := range dirs {
		st, err := os.Lstat(d)
		if err != nil || !st.IsDir() {
			continue
		}
		if s, ok := st.Sys().(*syscall.Stat_t); !ok || int(s.Uid) != os.Geteuid() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(d, ".pid"))
		if err != nil {
			continue // not one of ours, or one starting now
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

func (f *Fleet) start() error {
	priv := ed25519.PrivateKey(nil)
	if f.given != nil {
		priv = f.given.client
	} else if _, k, err := ed25519.GenerateKey(rand.Reader); err != nil {
		return err
	} else {
		priv = k
	}
	f.key = priv
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return err
	}
	f.clientPK = signer.PublicKey()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.watch.run(f.ctx, watchEvery)
	}()
	f.probeSlots = make(chan struct{}, maxProbes)
	f.disk.limit = fleetDisk(f.cfg.Hosts)
	f.disk.trees = func() []*vfs {
		trees := make([]*vfs, len(f.hosts))
		for i, h := range f.hosts {
			trees[i] = h.fs
		}
		return trees
	}
	sick, faults, js := plan(f.cfg.Seed, f.cfg.Hosts, f.cfg.Faults)
	f.sick = sick
	f.cluster = newCluster(f.cfg.Hosts, faults)
	f.slurm = newSlurm(f.cfg.Hosts)
	for i := 0; i < f.cfg.Hosts; i++ {
		h, err := f.newHost(i, faults[i], js[i])
		if err != nil {
			return err
		}
		f.hosts = append(f.hosts, h)
	}
	if f.cfg.Kubelet != nil && f.given == nil {
		return f.startKubelets()
	}
	return nil
}

func (f *Fleet) newHost(i int, faults spec.Faults, faultsJSON []byte) (*host, error) {
	name := HostName(i, f.cfg.Hosts)
	h := &host{name: name, index: i, fleet: f, faults: faultsJSON, sick: i == f.sick, mode: f.cfg.modeOf(name), conns: map[net.Conn]struct{}{}}
	h.fs = newVFS(filepath.Join(f.dir, name), name, f.empty)
	h.fs.fleet = &f.disk
	h.machine = newMachine(name, i, faults, f.cluster, f.slurm)
	var hk ed25519.PrivateKey
	if f.given != nil {
		hk = f.given.hosts[i]
	} else if _, k, err := ed25519.GenerateKey(rand.Reader); err != nil {
		return nil, err
	} else {
		hk = k
	}
	var err error
	if h.signer, err = ssh.NewSignerFromKey(hk); err != nil {
		return nil, err
	}
	h.config = &ssh.ServerConfig{
		PublicKeyCallback: func(c ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if h.mode != Deny && c.User() == User && k.Type() == f.clientPK.Type() && string(k.Marshal()) == string(f.clientPK.Marshal()) {
				return nil, nil
			}
			return nil, fmt.Errorf("sim: %s: key not authorised for %q", name, c.User())
		},
		MaxAuthTries:  32,
		ServerVersion: orchestrator.SimulatedServerVersion,
	}
	h.config.AddHostKey(h.signer)
	if f.given != nil {
		return h, h.take(f.given.socks[i])
	}
	if h.mode == Drop {
		// A socket bound but not listening: the port refuses connections
		// and stays the host's (no other listener can take it).
		fd, port, err := reservePort()
		if err != nil {
			return nil, err
		}
		h.addr, h.reserved = net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), fd
		return h, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h.addr = ln.Addr().String()
	h.ln = ln
	h.listen()
	return h, nil
}

// take makes sock, a socket from the parent, the host's: a Drop host
// keeps it bound (it refuses connections), the others accept on it.
func (h *host) take(sock *os.File) error {
	if h.mode == Drop {
		fd, err := syscall.Dup(int(sock.Fd()))
		if err != nil {
			return err
		}
		syscall.CloseOnExec(fd)
		sa, err := syscall.Getsockname(fd)
		if err != nil {
			syscall.Close(fd)
			return err
		}
		in4, ok := sa.(*syscall.SockaddrInet4)
		if !ok {
			syscall.Close(fd)
			return fmt.Errorf("sim: %s: the socket from the parent is not IPv4", h.name)
		}
		h.addr, h.reserved = net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port)), fd
		return nil
	}
	ln, err := net.FileListener(sock) // a copy: the parent's stays open
	if err != nil {
		return fmt.Errorf("sim: %s: the socket from the parent: %w", h.name, err)
	}
	h.addr, h.ln = ln.Addr().String(), ln
	h.listen()
	return nil
}

func (h *host) listen() {
	h.fleet.wg.Add(1)
	go h.serve(h.ln)
}

// Kill cuts a host off mid-run, as a power cut would: its connections
// close and it refuses new ones.
func (f *Fleet) Kill(name string) error {
	for _, h := range f.hosts {
		if h.name == name {
			h.kill()
			return nil
		}
	}
	return fmt.Errorf("sim: no host %q", name)
}

// Close stops every host and removes their trees.
func (f *Fleet) Close() error {
	var err error
	f.closed.Do(func() {
		f.cancel()
		for _, h := range f.hosts {
			h.kill()
		}
		f.wg.Wait()
		for _, h := range f.hosts {
			if h.fs != nil {
				err = errors.Join(err, h.fs.close())
			}
		}
		if f.ownDir {
			err = errors.Join(err, os.RemoveAll(f.dir))
		} else {
			for _, h := range f.hosts {
				err = errors.Join(err, os.RemoveAll(h.fs.dir))
			}
			err = errors.Join(err, os.Remove(f.empty), os.RemoveAll(f.tmp))
		}
		if f.scratch != f.tmp {
			err = errors.Join(err, os.RemoveAll(f.scratch))
		}
	})
	return err
}

// Host describes one simulated host.
type Host struct {
	Name    string `json:"name"`
	Address string `json:"address"` // 127.0.0.1
	Port    int    `json:"port"`
	HostKey string `json:"host_key"` // authorized_keys format
	Sick    bool   `json:"sick"`
	Fault   string `json:"fault,omitempty"` // "drop", "hang", "die", "deny", "stall"
	Faults  string `json:"faults,omitempty"`
	// KubeletPort is the host's kubelet endpoint (Config.Kubelet), 0
	// without one.
	KubeletPort int `json:"kubelet_port,omitempty"`
}

// Hosts lists the fleet's hosts in order.
func (f *Fleet) Hosts() []Host {
	out := make([]Host, len(f.hosts))
	for i, h := range f.hosts {
		out[i] = Host{Name: h.name, Address: "127.0.0.1", Port: portOf(h.addr), HostKey: string(ssh.MarshalAuthorizedKey(h.signer.PublicKey())),
			Sick: h.sick, Fault: h.mode.String(), Faults: string(h.faults)}
		if h.kubelet != nil {
			out[i].KubeletPort = h.kubelet.port
		}
	}
	return out
}

// ProbeSum is the sha256 of the simulator probe the hosts will run (empty
// when this gpulab embeds none).
func (f *Fleet) ProbeSum() string {
	sum, _ := f.probe()
	return sum
}

// probe reads the embedded simulator probe once, when a host first needs
// it (not at start: unpacking and hashing it is most of a small fleet's
// start-up): its sha256, and the glibc the hosts report, at least as new as
// the one the probe was built against, since it really runs on this
// machine.
func (f *Fleet) probe() (sum, libc string) {
	f.probeOnce.Do(func() {
		f.glibc = glibc
		data, _, err := bundle.Probe(runtime.GOARCH, true)
		if err != nil {
			return
		}
		s := sha256.Sum256(data)
		f.probeSum = hex.EncodeToString(s[:])
		if need, err := bundle.NeedsGlibc(data); err == nil && need != "" && bundle.CheckLibc(bundle.ParseLibc("glibc "+glibc), need) != nil {
			f.glibc = need
		}
	})
	return f.probeSum, f.glibc
}

// reservePort binds a TCP socket to a free loopback port without listening
// on it: connections to it are refused.
func reservePort() (int, int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return -1, 0, err
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return -1, 0, err
	}
	return fd, sa.(*syscall.SockaddrInet4).Port, nil
}
