// Package cli is gpulab's command line: the workbench with no arguments, and
// a headless twin of every screen for scripts (text tables, or --json).
//
// Exit codes are a contract: 0 ok; 1 a check or a host failed; 2 a usage or
// configuration error (bad flag, unreadable or invalid inventory or catalog).
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/problem"
	"github.com/gpulab/gpulab/internal/suggest"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/runbooks"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
	// ExitUnknown is a runbook or lab run where nothing failed but some
	// checks or criteria could not be decided (UNKNOWN: a tool missing,
	// output gpulab could not read): not a success a script may take for
	// "fine" (--allow-unknown makes a runbook's 0).
	ExitUnknown = 3
	// ExitNotSaved is a lab that ran but whose record could not be
	// written (a full or read-only results filesystem): its verdicts were
	// printed, the error names what was not saved.
	ExitNotSaved = 4
)

// exitCodes is the top-level help's list of exit codes, as the README's
// Commands section gives them.
var exitCodes = fmt.Sprintf(`Exit codes:
  %d    ok
  %d    a check or a host failed (probe: or a host is flagged)
  %d    usage or configuration error (a bad flag, an invalid inventory, ...)
  %d    a runbook or lab found nothing wrong but some checks or criteria
       are UNKNOWN (no evidence either way; --allow-unknown makes a
       runbook's %d)
  %d    a lab ran but its record could not be saved
  %d  interrupted (Ctrl-C, SIGTERM, SIGHUP)`,
	ExitOK, ExitFailed, ExitUsage, ExitUnknown, ExitOK, ExitNotSaved, ExitInterrupted)

// Version is the build's version, set with -ldflags "-X ...cli.Version=...".
var Version = "dev"

// Env is what a command may touch of the process: streams and environment.
// Tests pass their own.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// IsTerminal reports whether stdout is a terminal (the workbench needs one).
	IsTerminal bool
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

func configErr(err error) error { return &exitError{code: ExitUsage, err: err} }

// errSilentFailure reports exit 1 after the command printed its own result.
var errSilentFailure = &exitError{code: ExitFailed, err: errors.New("")}

// errInterrupted reports exit 130 after a stop signal, the command having
// said what it stopped.
var errInterrupted = &exitError{code: ExitInterrupted, err: errors.New("")}

// options are the persistent flags.
type options struct {
	env       Env
	json      bool
	catalogs  []string
	inventory string
	noColor   bool
	runbooks  []string
	labs      []string
	// simulatedCtx: a cluster command reads the simulated fleet's cluster
	// (--context simulated), which its --json says.
	simulatedCtx bool
	// cleanups run when the command has returned, whatever it returned
	// (the node pods of --via kube).
	cleanups []func()
	// live is stderr's progress line (nil unless stderr is a terminal);
	// raw is env.Stdout through it, for the bytes printed as they came.
	live *liveLine
	raw  io.Writer
}

var quietKlog sync.Once

// Main runs gpulab with args (without the program name) and returns the exit code.
//
// What commands print goes through visible.Writer: control characters in
// names and messages from hosts, inventories and records are escaped, so
// that they cannot retitle, recolour or rewrite the terminal. The commands
// that must print bytes as they are (the output of exec's commands, the
// workbench) write to env's streams themselves.
func Main(args []string, env Env) int {
	if env.Stdout == nil {
		env.Stdout = os.Stdout
	}
	if env.Stderr == nil {
		env.Stderr = os.Stderr
	}
	// client-go logs what it also returns as an error ("Unexpected error
	// when reading response body"): gpulab says what failed, once, and
	// no klog line reaches the terminal (the workbench sends them to
	// $GPULAB_KLOG while it runs).
	quietKlog.Do(func() { cluster.RouteKlog(nil) })
	o := &options{env: env, live: newLiveLine(env)}
	o.raw = o.live.through(env.Stdout)
	stdout, stderr := visible.NewWriter(o.raw), visible.NewWriter(o.live.through(env.Stderr))
	root := newRoot(o)
	out := &countingWriter{w: stdout}
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(out)
	root.SetErr(stderr)
	err := root.Execute()
	for _, c := range o.cleanups {
		c()
	}
	defer stdout.Flush()
	defer stderr.Flush()
	if err == nil {
		return ExitOK
	}
	code := ExitUsage // cobra's own errors are flag and argument errors
	var ee *exitError
	var errno syscall.Errno
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case errors.Is(err, syscall.EPIPE):
		// Standard output closed under the command (| head): as a
		// program killed by SIGPIPE ends, without a word.
		return 128 + int(syscall.SIGPIPE)
	case errors.As(err, &errno):
		// Writing the output failed (a full disk): not the user's usage.
		code = ExitFailed
		ee = &exitError{code: code, err: err}
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(stderr, "gpulab: %s\n", indentJoined(msg))
		if out.n == 0 && (o.json || slices.Contains(args, "--json")) {
			// A script that asked for JSON gets one document whatever
			// failed, never an empty stdout: the error, its exit status,
			// and its problems, placed where they can be.
			writeJSON(out, errorDocument{Error: msg, ExitCode: code, Problems: problems(err)})
		}
	}
	if code == ExitUsage && !errors.As(err, &ee) {
		fmt.Fprintln(stderr, "Run 'gpulab --help' for usage.")
	}
	return code
}

// errorDocument is what --json prints when a command fails before it
// printed its own document.
type errorDocument struct {
	Error    string    `json:"error"`
	ExitCode int       `json:"exit_code"`
	Problems []Problem `json:"problems"`
}

// countingWriter counts what a command writes to standard output.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// indentJoined prints the lines of a joined error under the first one.
func indentJoined(msg string) string {
	return strings.ReplaceAll(msg, "\n", "\n  ")
}

func newRoot(o *options) *cobra.Command {
	wb := &workbenchOptions{options: o}
	root := &cobra.Command{
		Use:   "gpulab",
		Short: "Terminal workbench and agentless SSH lab orchestrator for GPU clusters",
		Long: `gpulab is a terminal workbench for GPU infrastructure. With no command it
opens the workbench on the Map: the control, data and workload planes and the
projects that live in them; the Matrix places every project on four decision
axes (resource unit, isolation, fragmentation source, governance).

Every screen has a command-line twin that prints the same content as a text
table, or as JSON with --json, for scripts.

` + exitCodes,
		Example: `  gpulab                                 # open the workbench
  gpulab -H 'node[001-004]' -F ~/.ssh/lab_config   # on these hosts, no inventory needed
  gpulab exec -H 'gpu[01-08]' -- nvidia-smi -L    # run on many hosts over SSH
  gpulab matrix --filter isolation=strong   # the Matrix, filtered, as text
  gpulab matrix --json | jq '.projects[].name'
  gpulab catalog show hami               # one project's card
  gpulab inventory check inventory.toml  # validate an inventory
  gpulab inventory list -H '@a100!gpu007' --inventory inventory.toml`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := wb.Validate(cmd); err != nil {
				return err
			}
			return runWorkbench(cmd, o, &wb.ssh)
		},
	}
	wb.ssh.registerWorkbench(root)
	root.Version = Version
	pf := root.PersistentFlags()
	pf.BoolVar(&o.json, "json", false, "print JSON instead of text (stable keys, for scripts)")
	pf.StringArrayVar(&o.catalogs, "catalog", nil, "add the catalog files in `DIR` (or one file) to the built-in catalog; repeatable")
	pf.StringVar(&o.inventory, "inventory", "", "inventory `FILE` (default: $GPULAB_INVENTORY, then ~/.config/gpulab/inventory.toml)")
	pf.StringArrayVar(&o.runbooks, "runbooks", nil, "add the runbook files in `DIR` (or one file) to the built-in runbooks; repeatable")
	pf.StringArrayVar(&o.labs, "labs", nil, "add the lab files in `DIR` (or one file) to the built-in labs; repeatable")
	pf.BoolVar(&o.noColor, "no-color", false, "draw without colour (also when NO_COLOR is set)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })
	root.AddCommand(newMapCmd(o), newMatrixCmd(o), newCatalogCmd(o), newInventoryCmd(o), newExecCmd(o), newPushCmd(o), newProbeCmd(o), newParseCmd(o), newRunbookCmd(o), newLabCmd(o), newResultsCmd(o), newClusterCmd(o), newSimCmd(o), newDemoCmd(o), newFenceCmd(o), newReleaseCmd(o), newVersionCmd(o), newDocsCmd(o))
	o.completeHosts(root)
	return root
}

// noSuch is the usage error for a KIND id that none of items has, with
// the near miss when there is one: `no lab "topology-sanit": did you mean
// "topology-sanity"? (gpulab lab list)`.
func noSuch[T any](kind, id string, items []T, idOf func(T) string) error {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = idOf(it)
	}
	return usageErr("no %s %q%s (gpulab %s list)", kind, id, suggest.Hint(id, ids), kind)
}

// loadRunbooks loads the built-in runbooks plus --runbooks directories.
func (o *options) loadRunbooks() ([]runbooks.Runbook, error) {
	rbs, err := runbooks.Load(o.runbooks)
	if err != nil {
		return nil, configErr(fmt.Errorf("runbooks: %w", err))
	}
	return rbs, nil
}

// loadCatalog loads the built-in catalog plus --catalog directories.
func (o *options) loadCatalog() (*landscape.Catalog, error) {
	c, err := landscape.Load(o.catalogs)
	if err != nil {
		return nil, configErr(fmt.Errorf("catalog: %w", err))
	}
	return c, nil
}

// loadInventory loads --inventory, or the first default location, or the
// built-in empty inventory when required is false and none exists. A file
// --inventory or $GPULAB_INVENTORY names that does not exist is a
// configuration error, never "none exists".
func (o *options) loadInventory(required bool) (*inventory.Inventory, error) {
	path := o.inventory
	if path == "" {
		p, err := inventory.Locate(o.getenv)
		if errors.Is(err, inventory.ErrNotFound) && !required {
			return inventory.Empty(), nil
		}
		if err != nil {
			return nil, configErr(err)
		}
		path = p
	}
	inv, err := inventory.Load(path)
	if err != nil {
		return nil, configErr(err)
	}
	return inv, nil
}

func (o *options) getenv(k string) string {
	if o.env.Getenv == nil {
		return os.Getenv(k)
	}
	return o.env.Getenv(k)
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Problem is one error as JSON: where, and what (gpulab's one error
// shape, problem.Problem).
type Problem = problem.Problem

// problems flattens joined errors into Problems.
func problems(err error) []Problem { return problem.List(err) }
