package sim

import (
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/sim/spec"
)

// Files are what WriteInventory writes: the inventory and, beside it, the
// client key, the known_hosts with every host's key, and an OpenSSH client
// config that reaches the hosts by name (ssh -F FILE dgx01).
type Files struct {
	Inventory  string `json:"inventory"`
	Key        string `json:"key"`
	KnownHosts string `json:"known_hosts"`
	SSHConfig  string `json:"ssh_config"`
}

// FilesFor names the files WriteInventory writes for an inventory path.
func FilesFor(inventory string) Files {
	return Files{Inventory: inventory, Key: inventory + ".key", KnownHosts: inventory + ".known_hosts", SSHConfig: inventory + ".ssh_config"}
}

// WriteInventory writes the fleet's inventory and the files it names,
// each created private (0600) and replaced atomically.
func (f *Fleet) WriteInventory(inventory string) (Files, error) {
	abs, err := filepath.Abs(inventory)
	if err != nil {
		return Files{}, err
	}
	files := FilesFor(abs)
	if err := checkOut(files); err != nil {
		return Files{}, err
	}
	block, err := ssh.MarshalPrivateKey(f.key, "gpulab simulated fleet")
	if err != nil {
		return Files{}, err
	}
	for _, w := range []struct{ path, data string }{
		{files.Key, string(pem.EncodeToMemory(block))},
		{files.Key + ".pub", string(ssh.MarshalAuthorizedKey(f.clientPK))},
		{files.KnownHosts, f.knownHosts()},
		{files.SSHConfig, f.sshConfig(files)},
		{files.Inventory, f.inventory(files)},
	} {
		if err := writePrivate(w.path, []byte(w.data)); err != nil {
			return Files{}, err
		}
	}
	return files, nil
}

// checkOut refuses, before anything is written, a path that holds a
// control character (it would split the ssh_config's lines) and any of the
// five files that exists and is not a regular file: a device, a directory,
// a symbolic link is never replaced.
func checkOut(files Files) error {
	if strings.ContainsFunc(files.Inventory, func(r rune) bool { return r < 0x20 || r == 0x7f || visible.Unsafe(r) }) {
		return fmt.Errorf("--inventory-out %q holds a control character: refused", files.Inventory)
	}
	// The ssh_config it writes decides what runs as the operator: a
	// directory another user can write (or rename) is refused.
	if err := fileio.CheckTrustedDir(filepath.Dir(files.Inventory)); err != nil {
		return fmt.Errorf("--inventory-out: %w; nothing written", err)
	}
	for _, p := range []string{files.Inventory, files.Key, files.Key + ".pub", files.KnownHosts, files.SSHConfig} {
		fi, err := os.Lstat(p)
		switch {
		case err == nil && !fi.Mode().IsRegular():
			return fmt.Errorf("%s exists and is not a regular file (%s): refused, nothing written", p, fi.Mode().Type())
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return err
		}
	}
	return nil
}

func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (f *Fleet) knownHosts() string {
	var b strings.Builder
	b.WriteString("# gpulab simulated fleet: one line per host ([127.0.0.1]:PORT and its name)\n")
	for _, h := range f.hosts {
		key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(h.signer.PublicKey())))
		fmt.Fprintf(&b, "[127.0.0.1]:%d,%s %s\n", portOf(h.addr), h.name, key)
	}
	return b.String()
}

func (f *Fleet) sshConfig(files Files) string {
	var b strings.Builder
	b.WriteString("# gpulab simulated fleet, for OpenSSH: ssh -F THIS_FILE dgx01 nvidia-smi\n")
	for _, h := range f.hosts {
		fmt.Fprintf(&b, "Host %s\n  HostName 127.0.0.1\n  Port %d\n", h.name, portOf(h.addr))
	}
	fmt.Fprintf(&b, "Host *\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile none\n  StrictHostKeyChecking yes\n",
		User, quoteConfig(files.Key), quoteConfig(files.KnownHosts))
	return b.String()
}

// quoteConfig quotes a path for ssh_config when it holds a space.
func quoteConfig(p string) string {
	if strings.ContainsAny(p, " \t\"") {
		return strconv.Quote(p)
	}
	return p
}

func (f *Fleet) inventory(files Files) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# A SIMULATED fleet written by gpulab sim serve: %d DGX A100 hosts that are
# not there. Every output is simulated from recorded real ones; records made
# on these hosts say "simulated": true.
simulated = true

[defaults]
user = %q
identity_file = %q
known_hosts = %q
ssh_config = %q
jump = "none"
connect_timeout = "10s"
concurrency = %d
`, len(f.hosts), User, files.Key, files.KnownHosts, files.SSHConfig, min(max(len(f.hosts), 64), 1024))
	for _, h := range f.hosts {
		fmt.Fprintf(&b, "\n[[host]]\nname = %q\naddress = \"127.0.0.1\"\nport = %d\nlabels = { gpu = \"a100-sxm4-40gb\", simulated = \"true\" }\nexpect = { gpus = %d, ib_ports = %d, ib_rate_gbps = %d }\ngroups = [\"dgx\"]\n",
			h.name, portOf(h.addr), spec.GPUs, len(spec.NICs), spec.IBRateGbps)
	}
	// Every host is a node of the simulated Slurm controller and has its
	// client: the first is where gpulab runs scontrol.
	fmt.Fprintf(&b, "\n[slurm]\nlogin = %q\nnodes = \"@dgx\"\n", f.hosts[0].name)
	return b.String()
}

// Targets resolves the inventory the files name as gpulab resolves any
// (its own ssh_config, no operator's), for tests and benchmarks that
// drive the engine directly.
func (fs Files) Targets() ([]orchestrator.Target, *inventory.Inventory, error) {
	inv, err := inventory.Load(fs.Inventory)
	if err != nil {
		return nil, nil, err
	}
	home, _ := os.UserHomeDir()
	res, err := orchestrator.NewResolver(inv, "", orchestrator.Overrides{}, home, User)
	if err != nil {
		return nil, nil, err
	}
	targets := make([]orchestrator.Target, 0, len(inv.Hosts))
	for _, h := range inv.Hosts {
		t, err := res.Resolve(h)
		if err != nil {
			return nil, nil, err
		}
		targets = append(targets, t)
	}
	return targets, inv, nil
}
