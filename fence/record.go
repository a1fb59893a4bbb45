package fence

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/step"
)

// RecordSchema is the version of a fence record's JSON.
const RecordSchema = 1

// MaxStepOutput bounds what a record keeps of one step's output on one
// host (the head and the tail, the middle cut and said so).
const MaxStepOutput = 1 << 20

// Record is one fence: why, by whom, the evidence that made the decision,
// the plan a person saw, what was done, and every release since. It
// lives in its own directory (record.json, record.md, and each evidence
// step's output under evidence/HOST/), which the node's annotations or
// the Slurm drain reason name by ID.
type Record struct {
	Schema int       `json:"schema"`
	ID     string    `json:"id"`
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	// Target is where the action is taken: "kubernetes context NAME",
	// "slurm on LOGIN".
	Target string `json:"target"`
	// Simulated: the fleet or the cluster was gpulab's simulation.
	Simulated bool     `json:"simulated,omitempty"`
	Hosts     []string `json:"hosts"`
	// Runbook is the runbook that gathered the evidence: a release
	// checks again with it.
	Runbook  string         `json:"runbook,omitempty"`
	Evidence []HostEvidence `json:"evidence"`
	Plan     []Plan         `json:"plan"`
	Results  []Result       `json:"results"`
	Drain    []NodeDrain    `json:"drain,omitempty"`
	Releases []Release      `json:"releases,omitempty"`
	// Complete is false until the action has ended (a record written
	// before it, and kept if gpulab is stopped mid-way, says so);
	// Interrupted says it was stopped (Ctrl-C) before its end.
	Complete    bool `json:"complete"`
	Interrupted bool `json:"interrupted,omitempty"`

	dir string
}

// HostEvidence is what a host showed when it was fenced (or released):
// a runbook's verdicts with their evidence, and each step's output.
type HostEvidence struct {
	Host    string `json:"host"`
	Via     string `json:"via,omitempty"`
	Runbook string `json:"runbook"`
	// Error says why the host gave no evidence (not reached): that is
	// evidence too, and never stops the fence.
	Error    string         `json:"error,omitempty"`
	Verdicts []step.Verdict `json:"verdicts"`
	Steps    []StepOutput   `json:"steps"`
	// BugReport is nvidia-bug-report.sh's log, where it was asked for
	// (its compressed bytes in File, or why there are none).
	BugReport *StepOutput `json:"nvidia_bug_report,omitempty"`
}

// Failing are the checks that failed or warned: what a release checks
// again.
func (h HostEvidence) Failing() []string {
	var out []string
	for _, v := range h.Verdicts {
		if v.Status == step.Fail || v.Status == step.Warn {
			out = append(out, v.Check)
		}
	}
	return out
}

// StepOutput is one evidence step on one host; its output is in File
// (relative to the record's directory).
type StepOutput struct {
	ID       string `json:"id"`
	Command  string `json:"command"`
	ExitCode int    `json:"exit_code"`
	Problem  string `json:"problem,omitempty"`
	File     string `json:"file,omitempty"`
	Bytes    int    `json:"bytes"`
	Cut      bool   `json:"cut,omitempty"`
}

// NodeDrain is a drain of one node.
type NodeDrain struct {
	Node  string       `json:"node"`
	Error string       `json:"error,omitempty"`
	Pods  []DrainedPod `json:"pods"`
}

// Release is one release of the record's nodes.
type Release struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
	// Force: released without the checks passing, as the person asked.
	Force bool `json:"force,omitempty"`
	// Runbook is the runbook run again; Note why the fence's own record
	// was not used (not on this machine, not trusted).
	Runbook  string         `json:"runbook,omitempty"`
	Note     string         `json:"note,omitempty"`
	Evidence []HostEvidence `json:"evidence,omitempty"`
	// Held are the nodes not released because their checks do not pass
	// yet, each with why.
	Held    map[string]string `json:"held,omitempty"`
	Plan    []Plan            `json:"plan"`
	Results []Result          `json:"results"`
}

// NewRecord creates the record's directory exclusively under results
// (RESULTS/fence/20261206-021400-gpu[01-02], or -2, -3... when another
// fence has that name); its name is the record's ID.
func NewRecord(results string, hosts []string, at time.Time) (*Record, error) {
	base := filepath.Join(results, "fence", at.UTC().Format("20060102-150405")+"-"+hostsPart(hosts))
	if err := fileio.MkdirTrusted(filepath.Dir(base), 0o755); err != nil {
		return nil, fmt.Errorf("the fence records' directory: %w", err)
	}
	dir, err := fileio.MkdirUnique(base, 0o755)
	if err != nil {
		return nil, fmt.Errorf("the fence record's directory: %w", err)
	}
	return &Record{Schema: RecordSchema, ID: filepath.Base(dir), At: at, Hosts: hosts, dir: dir,
		Evidence: []HostEvidence{}, Plan: []Plan{}, Results: []Result{}}, nil
}

func hostsPart(hosts []string) string {
	s := safeName(inventory.FoldNames(hosts))
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// SafeName is a host's name as a record's file names write it.
func SafeName(s string) string { return safeName(s) }

// safeName is s with only [A-Za-z0-9._,[]-] kept (others become _): a
// host name as a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._,[]-", r) {
			return r
		}
		return '_'
	}, s)
}

// Dir is the record's directory.
func (r *Record) Dir() string { return r.dir }

// ValidID says whether id can name a record: one file name, not hidden
// (an annotation or a Slurm reason, which others may write, names it).
func ValidID(id string) bool {
	return id != "" && id == filepath.Base(id) && !strings.HasPrefix(id, ".")
}

// OpenRecord reads the record ID under results.
func OpenRecord(results, id string) (*Record, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("fence record %q: not a record ID", id)
	}
	dir := filepath.Join(results, "fence", id)
	data, err := fileio.ReadTrusted(filepath.Join(dir, "record.json"), fileio.MaxRecord)
	if err != nil {
		return nil, err
	}
	r := &Record{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "record.json"), err)
	}
	r.dir = dir
	return r, nil
}

// Update changes the record as it is on disk now, under a lock, and
// saves it: two releases of the record's nodes at once both land. r
// becomes the record as saved.
func (r *Record) Update(change func(*Record)) error {
	lock, err := os.OpenFile(filepath.Join(r.dir, ".lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := fileio.Lock(lock); err != nil {
		return err
	}
	cur, err := OpenRecord(filepath.Dir(filepath.Dir(r.dir)), r.ID)
	if err != nil {
		return err
	}
	change(cur)
	if err := cur.Save(); err != nil {
		return err
	}
	*r = *cur
	return nil
}

// AddOutput keeps a step's output of one host in the record's
// directory, bounded (MaxStepOutput), and says where in s.
func (r *Record) AddOutput(prefix, host string, s *StepOutput, out string) error {
	s.Bytes = len(out)
	if len(out) > MaxStepOutput {
		half := MaxStepOutput / 2
		out = out[:half] + fmt.Sprintf("\n[... %d bytes cut by gpulab ...]\n", len(out)-2*half) + out[len(out)-half:]
		s.Cut = true
	}
	s.File = filepath.Join(prefix, safeName(host), safeName(s.ID)+".txt")
	return fileio.WriteAtomic(filepath.Join(r.dir, s.File), []byte(out))
}

// Save writes record.json and record.md, each atomically.
func (r *Record) Save() error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := fileio.WriteAtomic(filepath.Join(r.dir, "record.json"), append(data, '\n')); err != nil {
		return err
	}
	return fileio.WriteAtomic(filepath.Join(r.dir, "record.md"), []byte(r.Markdown()))
}
