package app

import (
	"cmp"
	"context"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
)

// Fleet is the selected hosts and what reaching them takes.
type Fleet struct {
	Engine *orchestrator.Engine
	// Targets are every selected host, in selection order, resolved or
	// not (Target.Unresolved): the engine gives each exactly one result.
	Targets  []orchestrator.Target
	Keys     *orchestrator.Keyring
	Resolver *orchestrator.Resolver
	// Simulated: the inventory is a simulated fleet (gpulab sim): the
	// probe pushed is the simulator build, and what is made says so.
	Simulated bool
	Inv       *inventory.Inventory
}

// Reach says how a fleet's hosts are reached: the ssh flags' values and
// what the process's environment gives.
type Reach struct {
	// SSHConfig is -F ("": ~/.ssh/config, as ssh reads it).
	SSHConfig string
	Overrides orchestrator.Overrides
	// Home and LocalUser are $HOME and the local login, for ssh_config's
	// ~ and %u.
	Home, LocalUser string
	// AgentSocket is $SSH_AUTH_SOCK; Passphrase asks for an encrypted
	// key's passphrase (nil: such a key is skipped).
	AgentSocket string
	Passphrase  func(string) ([]byte, error)
	// AcceptNew records an unknown host key (accept-new), never a changed one.
	AcceptNew bool
	// Concurrency is how many hosts are reached at once (0: the
	// inventory's default).
	Concurrency int
}

// NewFleet resolves hosts, selected from inv, as r says; its error is the
// ssh_config's (a configuration error, naming the file and line).
func NewFleet(inv *inventory.Inventory, hosts []inventory.Host, r Reach) (*Fleet, error) {
	res, err := orchestrator.NewResolver(inv, r.SSHConfig, r.Overrides, r.Home, r.LocalUser)
	if err != nil {
		return nil, err
	}
	f := &Fleet{Simulated: inv.Simulated, Inv: inv, Resolver: res,
		Keys: &orchestrator.Keyring{AgentSocket: r.AgentSocket, Passphrase: r.Passphrase}}
	f.Targets = res.Targets(hosts)
	f.Engine = &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: f.Keys, AcceptNew: r.AcceptNew},
		Concurrency: cmp.Or(r.Concurrency, inv.Defaults.Concurrency)}
	return f, nil
}

// Names are the targets' names, in order.
func (f *Fleet) Names() []string {
	names := make([]string, len(f.Targets))
	for i, t := range f.Targets {
		names[i] = t.Name
	}
	return names
}

// Chosen are the targets at the given indices, in their order; an index
// out of range is left out.
func (f *Fleet) Chosen(hosts []int) []orchestrator.Target {
	var targets []orchestrator.Target
	for _, h := range hosts {
		if h >= 0 && h < len(f.Targets) {
			targets = append(targets, f.Targets[h])
		}
	}
	return targets
}

// Exec runs command on every host: one result each, in order (a host
// that could not be resolved ends at once with its error); progress goes
// to events, closed at the end (nil: none).
func (f *Fleet) Exec(ctx context.Context, command string, events chan<- orchestrator.Event) []orchestrator.HostResult {
	return f.Engine.Run(ctx, f.ExecPlan(command), events)
}

// Pool keeps the fleet's connections open between runs, as the workbench
// does (keepalive, closed after 10 minutes unused): the second command on
// the same hosts pays no handshake. Encrypted keys then go through
// ssh-agent only (the terminal is the workbench's), and a running
// command's output streams. The returned function closes the connections
// and the keys.
func (f *Fleet) Pool() (close func()) {
	f.Keys.Passphrase = nil
	f.Engine.StreamOutput = true
	f.Engine.Pool = &orchestrator.Pool{Dialer: f.Engine.Dialer}
	return func() { f.Engine.Pool.Close(); f.Keys.Close() }
}
