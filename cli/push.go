package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/render"
)

// writePushJSON writes a push's result: the file, what was sent, and a
// row per host.
func writePushJSON(w io.Writer, file string, size int, sum string, hosts []orchestrator.HostResult, pushes []orchestrator.PushResult, elapsed time.Duration) error {
	type row struct {
		Host string `json:"host"`
		orchestrator.Via
		orchestrator.PushResult
	}
	rows := make([]row, len(hosts))
	var sent int64
	for i, h := range hosts {
		rows[i] = row{h.Host, h.Via, pushes[i]}
		sent += pushes[i].Sent
	}
	return writeJSON(w, struct {
		File    string  `json:"file"`
		SHA256  string  `json:"sha256"`
		Bytes   int     `json:"bytes"`
		Sent    int64   `json:"sent"`
		Summary string  `json:"summary"`
		Seconds float64 `json:"seconds"`
		Hosts   []row   `json:"hosts"`
	}{file, sum, size, sent, orchestrator.Summary(hosts), elapsed.Seconds(), rows})
}

// pushLong is gpulab push's --help.
const pushLong = `Copy FILE to every selected host. By default it goes to gpulab's private
cache directory on the host, ${XDG_CACHE_HOME:-~/.cache}/gpulab (created
0700), under its own name; --dest PATH puts it elsewhere. A relative PATH
is under the remote user's home; a PATH that is a directory (or ends in /)
takes the file under its own name, as scp does. A destination that is a
symbolic link or not a regular file is refused (gpulab never writes,
compares or changes a mode through a link), and so is a PATH or a FILE
name holding a control character or a bidi/format character (U+202E and
the like). The path reported is where the bytes are.

The file is written to a temporary name in the destination directory,
flushed to disk, checked by sha256 on the host and renamed into place
atomically, so a reader never sees half a file and a failed push (disk
full, read-only filesystem, permission denied) leaves nothing behind. When
the host already has a file with the same sha256, no bytes are sent. SFTP
is used where the server offers it, a plain session otherwise.

With --via kube the hosts are a cluster's nodes, chosen with -H or -l (a
label selector there, see gpulab exec --help): --dest must be an absolute
path on the node, whose pod mounts the host's / read-write for the push.
The file goes on the exec stream, into a temporary file, and is checked,
flushed and renamed exactly as above (a node that has it already is sent
nothing); SSH's settings (--no-sftp, -i, --known-hosts) do not apply.`

// pushOptions are gpulab push's flags and file, bound by newPushCmd;
// Complete, Validate and Run are its three steps.
type pushOptions struct {
	*options
	ssh    sshFlags
	dest   string
	mode   string
	noSFTP bool

	// Complete reads these.
	file string
	data []byte
	perm os.FileMode
}

func newPushCmd(o *options) *cobra.Command {
	po := &pushOptions{options: o}
	cmd := &cobra.Command{
		Use:   "push FILE -H EXPR [--dest PATH] | push FILE --via kube (-H EXPR | -l SELECTOR) --dest /PATH",
		Short: "Copy a file to many hosts safely: private directory, checksum, atomic rename",
		Long:  pushLong,
		Example: `  gpulab push dist/nvmlprobe-linux-amd64 -H 'gpu[01-64]'
  gpulab push ./healthcheck.sh -H @a100 --dest bin/ --mode 0755
  gpulab push big.tar -H gpu01 --json
  gpulab push ./healthcheck.sh --via kube -l nvidia.com/gpu.present=true --dest /usr/local/bin/ --mode 0755`,
		Args: exactArgs(1, "the local FILE to push"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Validate before Complete, unlike kubectl's order: the name and
			// the flags are refused before a file of up to MaxPush is read.
			if err := po.Validate(args); err != nil {
				return err
			}
			if err := po.Complete(args); err != nil {
				return err
			}
			ctx, stop := interruptible(cmd.ErrOrStderr())
			defer stop()
			return po.Run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	po.ssh.register(cmd)
	po.ssh.registerKube()
	cmd.Flags().StringVar(&po.dest, "dest", "", "remote `PATH` (default: the private cache directory, under FILE's name; with --via kube an absolute path is required)")
	cmd.Flags().StringVar(&po.mode, "mode", "", "remote file `MODE` in octal (default: the local file's)")
	cmd.Flags().BoolVar(&po.noSFTP, "no-sftp", false, "upload through a plain session even where SFTP is offered")
	return cmd
}

// Validate refuses, here and once rather than by every host, the name the
// file would take on the hosts and a --dest no host may take; and the
// connection flags.
func (po *pushOptions) Validate(args []string) error {
	if err := orchestrator.CheckPushName(filepath.Base(args[0])); err != nil {
		return usageErr("push: %v (the file keeps its local name on the hosts: rename it)", err)
	}
	if err := orchestrator.CheckPushDest(po.dest); err != nil {
		return usageErr("push: --dest: %v", err)
	}
	if kube, err := po.ssh.viaKube(); err != nil || !kube {
		return cmp.Or(err, po.ssh.check())
	}
	// Through Kubernetes the file goes to the host's own path: the pod's
	// scratch goes with the pod, and no home is there to hold a cache.
	if !path.IsAbs(po.dest) {
		return usageErr("push --via kube: give --dest an absolute path on the nodes (the node pod's scratch goes with the pod, and there is no home directory to hold a cache)")
	}
	if fl := po.ssh.cmd.Flags().Lookup("writable-host"); fl != nil && fl.Changed && !po.ssh.kube.writable {
		return usageErr("push --via kube writes the host: --writable-host=false contradicts it")
	}
	po.ssh.kube.writable = true // writing the host is what push is for
	return po.ssh.check()
}

// Complete reads the file (a regular file, bounded) and its mode, or --mode.
func (po *pushOptions) Complete(args []string) error {
	data, err := fileio.ReadRegular(args[0], fileio.MaxPush)
	if err != nil {
		return usageErr("push: %v", err)
	}
	st, _ := os.Stat(args[0])
	perm := st.Mode().Perm()
	if po.mode != "" {
		var m uint32
		if _, err := fmt.Sscanf(po.mode, "%o", &m); err != nil || m > 0o7777 {
			return usageErr("--mode %q: want an octal mode such as 0755", po.mode)
		}
		perm = os.FileMode(m)
	}
	po.file, po.data, po.perm = args[0], data, perm
	return nil
}

// Run pushes the file to every selected host, prints each outcome
// (folded, or --json) and the summary on stderr, and returns the exit
// status the hosts give.
func (po *pushOptions) Run(ctx context.Context, stdout, stderr io.Writer) error {
	r, err := po.newRunner(&po.ssh)
	if err != nil {
		return err
	}
	defer r.Keys.Close()
	spec := orchestrator.PushSpec{Name: filepath.Base(po.file), Data: po.data, Mode: po.perm, Dest: po.dest, NoSFTP: po.noSFTP}
	spec.SHA256 = spec.Sum() // once, not once a host
	start := time.Now()
	m := po.startMeter("push", r.Engine, len(r.Targets))
	hosts, pushes := r.Engine.PushAll(ctx, r.Targets, spec)
	m.end()
	elapsed := time.Since(start)
	if po.json {
		err = writePushJSON(stdout, po.file, len(po.data), spec.Sum(), hosts, pushes, elapsed)
	} else {
		err = printPushes(stdout, hosts, pushes)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s in %.2fs (sha256 %s)\n", orchestrator.Summary(hosts), elapsed.Seconds(), spec.Sum()[:16])
	return fanOutExit(ctx, hosts)
}

// printPushes folds hosts with the same outcome: "gpu[01-63]  sent 2.1 MB  /root/.cache/gpulab/x".
func printPushes(w io.Writer, hosts []orchestrator.HostResult, pushes []orchestrator.PushResult) error {
	type key struct{ what, path string }
	var order []key
	groups := map[key][]string{}
	for i, h := range hosts {
		p := pushes[i]
		k := key{path: p.Path}
		switch {
		case p.Class != orchestrator.OK:
			k.what = p.Class.String() + ": " + p.Err
			k.path = ""
		case p.Skipped:
			k.what = "unchanged (same sha256, nothing sent)"
		default:
			k.what = fmt.Sprintf("sent %d bytes (%s)", p.Sent, p.Method)
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], h.Host)
	}
	t := render.Table{Columns: make([]render.Column, 3)} // no head: a line per group
	for _, k := range order {
		t.Add(inventory.FoldNames(groups[k]), k.what, k.path)
	}
	return t.WriteRows(w)
}
