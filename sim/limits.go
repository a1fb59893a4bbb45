package sim

import "time"

// The bounds of a simulated fleet, in one place. The fleet runs commands
// that arrive over SSH (from labs, from a presenter's fingers, from anyone
// holding the fleet's key); each bound below makes the worst such a
// command can do end its own session, its own host, or at worst the
// fleet's own process (gpulab demo and the workbench run the fleet in a
// child process under the hard limits at the end of this list: see
// Spawn), never the operator's machine or the workbench. Tests lower
// the variables to reach them quickly.

// MaxHosts bounds one fleet (file descriptors and memory).
const MaxHosts = 10000

// hostDisk is a simulated host's disk: writes past it fail with "No space
// left on device", so that a loop writing to a file cannot fill the
// operator's disk. No file on a host is larger (a write or a truncate past
// it fails with "File too large").
var hostDisk int64 = 256 << 20

// entryCost is what a file, directory or link costs on a simulated disk
// beside its bytes (a block): a loop making empty files runs out too.
const entryCost = 4096

// maxInput bounds what a tool that must hold its whole input (sort, tail,
// tr, wc) keeps, and what one command substitution collects from the
// host's tools: `seq 1 1e12 | sort` and x=$(seq 1 1e12) stop there.
var maxInput int64 = 16 << 20

// maxScript bounds the script a shell without a terminal reads from its
// standard input (`ssh -T host < script`): `< /dev/zero` stops there.
var maxScript int64 = 4 << 20

// maxProbe bounds the file read to be checked (the probe is ~5 MB).
const maxProbe = 64 << 20

// maxHeap is how much heap and goroutine stack the fleet's process may
// hold before the simulation stops every command it runs (the watchdog,
// which looks every watchEvery): a=$a$a in a loop keeps what it makes in
// memory, a fork bomb inside eval in goroutines. In a child process it
// is at most a quarter of the address space.
var maxHeap uint64 = 1 << 30

const watchEvery = 50 * time.Millisecond

// maxEnv and maxEnvBytes bound the environment one session's env requests
// add (sshd's AcceptEnv names; 10,000 requests of 200 kB held 1.6 GB).
var (
	maxEnv      = 64
	maxEnvBytes = 64 << 10
)

// maxJobs bounds the background jobs (cmd &) one session runs at once:
// f() { f & f & wait; }; f stops there.
var maxJobs int64 = 256

// maxFuncNest is bash's FUNCNEST for a simulated shell: f() { f; }; f
// ends its command, not the fleet (a goroutine's stack is not the heap).
var maxFuncNest = 1000

// handshakeTimeout is sshd's LoginGraceTime (shorter): a connection that
// has not logged in by then is closed.
var handshakeTimeout = 30 * time.Second

// maxStartups, startupsStart and startupsRate are sshd's MaxStartups
// (start:rate:full, its default 10:30:100) for one host: past start
// connections that have not logged in yet, a new one is closed at once
// with a probability of rate percent, rising to all at maxStartups, so
// that idle connections from anyone on the machine can neither use up
// the fleet's file descriptors nor shut every other client out at once
// (a hard cap of 32 did: 40 idle connections blocked a host).
var (
	maxStartups   = 100
	startupsStart = 10
	startupsRate  = 30
)

// acceptBackoff is the longest wait between accept's retries after an
// error such as EMFILE: a host's serve loop waits and accepts again.
const acceptBackoff = time.Second

// maxProbesPerHost and maxProbes bound the real probe processes: one
// host runs this many at once (more fail as fork does, "Resource
// temporarily unavailable"), the fleet this many (more wait their turn).
var (
	maxProbesPerHost = 4
	maxProbes        = 16
)

// The hard limits of the fleet's child process (Spawn): the address
// space it may map beyond what it had at start (MemoryEnv lowers it), its
// threads, a goroutine's stack; open files are 4,096 and 64 a host. Past
// one, the child ends, the workbench says "the simulated fleet stopped"
// and why, and can start it again.
var (
	childAddressSpace uint64 = 8 << 30
	childMaxThreads          = 2048
	childMaxStack            = 256 << 20
)
