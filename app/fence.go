package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
	"github.com/gpulab/gpulab/step/parse"
)

// FenceSpec is one fence (or release) of a fleet's hosts, nodes of a
// Kubernetes cluster, of a Slurm cluster, or of both.
type FenceSpec struct {
	// Kube, when set, is the Kubernetes cluster whose nodes are fenced;
	// Scontrol, when set, runs scontrol on SlurmLogin, for the Slurm
	// cluster. With both, each host is fenced in both, under one
	// record: a plan for each (fence.Plan.In).
	Kube       *cluster.Client
	Scontrol   fence.Scontrol
	SlurmLogin string
	// SlurmHas and KubeHas say which hosts are nodes of the Slurm
	// cluster and of the Kubernetes one (nil: every one); the others get
	// no plan there.
	SlurmHas, KubeHas func(host string) bool
	// Request is the fence's reason, who and when, and the taint; its
	// Record is set when the record is made.
	Request fence.Request
	// Results is the directory the records go under (RESULTS/fence/ID).
	Results string
	// Runbook gathers the evidence before the action (and checks again
	// before a release).
	Runbook runbooks.Runbook
	// Drain, when set, evicts the fenced nodes' pods.
	Drain *fence.DrainOptions
	// BugReport adds nvidia-bug-report.sh's log of each host to the
	// evidence (minutes on a real host).
	BugReport bool
	// Force releases without the checks passing (recorded).
	Force bool
	// Runbooks finds a runbook by ID: a release checks again with the
	// one its fence's record names, unless RunbookGiven (--runbook).
	Runbooks     func(id string) (runbooks.Runbook, bool)
	RunbookGiven bool
	// Simulated: the hosts or the cluster are gpulab's simulation.
	Simulated bool
}

// Fenced is a fence or release carried out: its record (nil when there
// was nothing to do: no record is made for nothing) and each node's
// result, in the fleet's order.
type Fenced struct {
	Record *fence.Record
	// Records are every record a release wrote to (its nodes' fences').
	Records []*fence.Record
	Results []fence.Result
	// Held are the nodes a release kept fenced, their checks not
	// passing yet, with why.
	Held map[string]string
	// SaveErr is the record's write failure: the action was taken (or
	// not) all the same, and this says the record is incomplete.
	SaveErr error
}

// Target is where the action is taken, as a record says it.
func (s FenceSpec) Target() string {
	var in []string
	if s.Kube != nil {
		in = append(in, "kubernetes context "+s.Kube.Context)
	}
	if s.Scontrol != nil {
		in = append(in, "slurm, scontrol on "+s.SlurmLogin)
	}
	return strings.Join(in, " and ")
}

// plan reads the nodes and plans their fence (req) or, with release,
// their release: in Kubernetes, in Slurm (the hosts that are its nodes),
// or in both (a node's two plans side by side). A host in neither is
// refused, saying so: every host has a plan.
func (s FenceSpec) plan(ctx context.Context, names []string, req fence.Request, release bool) []fence.Plan {
	var kube, slurm []fence.Plan
	inKube, inSlurm := members(names, s.Kube != nil, s.KubeHas), members(names, s.Scontrol != nil, s.SlurmHas)
	switch {
	case len(inKube) > 0 && release:
		kube = fence.Read(ctx, fence.Client(s.Kube.Kube), inKube, fence.PlanRelease)
	case len(inKube) > 0:
		kube = fence.Read(ctx, fence.Client(s.Kube.Kube), inKube, func(n *corev1.Node) fence.Plan { return fence.PlanFence(n, req) })
	}
	switch {
	case len(inSlurm) > 0 && release:
		slurm = fence.ReadSlurm(ctx, s.Scontrol, inSlurm, fence.PlanSlurmRelease)
	case len(inSlurm) > 0:
		slurm = fence.ReadSlurm(ctx, s.Scontrol, inSlurm, func(n parse.SlurmNode) fence.Plan { return fence.PlanSlurmFence(n, req) })
	}
	out := make([]fence.Plan, 0, len(kube)+len(slurm))
	for _, n := range names { // each reader keeps the names' order
		mine := len(out)
		if len(kube) > 0 && kube[0].Node == n {
			out, kube = append(out, kube[0]), kube[1:]
		}
		if len(slurm) > 0 && slurm[0].Node == n {
			out, slurm = append(out, slurm[0]), slurm[1:]
		}
		if len(out) == mine {
			out = append(out, fence.Plan{Node: n, Refused: "a node of neither the Kubernetes cluster (its [[kube]] nodes) nor the Slurm cluster ([slurm] nodes) this fence acts in: nothing to fence it in"})
		}
	}
	if !release {
		noHalfFence(out)
	}
	return out
}

// members are the names a scheduler has (has nil: every one), none
// where it is not used.
func members(names []string, used bool, has func(string) bool) []string {
	var out []string
	for _, n := range names {
		if used && (has == nil || has(n)) {
			out = append(out, n)
		}
	}
	return out
}

// KubeHas says which hosts are nodes of the [[kube]] table k, nil (every
// one) where there is no table or it names no nodes.
func KubeHas(k *inventory.KubeContext) func(string) bool {
	if k == nil || k.Nodes == "" {
		return nil
	}
	return func(h string) bool { return slices.Contains(k.NodeNames, h) }
}

// noHalfFence refuses a node's plan in one scheduler where its plan in
// the other could not be read: fenced in one alone, the node would stay
// open to the other, and look fenced. --slurm or --kubernetes fences in
// one on purpose.
func noHalfFence(plans []fence.Plan) {
	for i, p := range plans {
		for _, q := range plans {
			if q.Node == p.Node && q.In != p.In && q.Error != "" && p.Acts() {
				plans[i].Refused = fmt.Sprintf("not fenced in %s alone: its %s node could not be read (%s), and a fence in one scheduler leaves it open to the other; fence again when both answer, or in one on purpose (--%s)",
					p.In, q.In, q.Error, p.In)
				plans[i].Changes = nil
			}
		}
	}
}

// apply carries out plans, made again for req (release: for a
// release), each in its scheduler; the results are in the plans' order.
func (s FenceSpec) apply(ctx context.Context, plans []fence.Plan, req fence.Request, release bool) []fence.Result {
	out := make([]fence.Result, len(plans))
	for _, in := range []string{fence.InKubernetes, fence.InSlurm} {
		var at []int
		var these []fence.Plan
		for i, p := range plans {
			if p.In != in {
				continue
			}
			if r, ok := kubeFailed(out, p); ok && !release && p.Acts() {
				out[i] = fence.Result{Plan: p, Outcome: fence.Refused, Detail: fmt.Sprintf(
					"not drained in slurm alone: its kubernetes fence did not take (%s: %s), and a fence in one scheduler leaves it open to the other", r.Outcome, r.Detail)}
				continue
			}
			at, these = append(at, i), append(these, p)
		}
		if len(these) == 0 {
			continue
		}
		var res []fence.Result
		switch {
		case in == fence.InSlurm && release:
			res = fence.ApplySlurm(ctx, s.Scontrol, these, fence.PlanSlurmRelease)
		case in == fence.InSlurm:
			res = fence.ApplySlurm(ctx, s.Scontrol, these, func(n parse.SlurmNode) fence.Plan { return fence.PlanSlurmFence(n, req) })
		case release:
			res = fence.Apply(ctx, fence.Client(s.Kube.Kube), these, fence.PlanRelease)
		default:
			res = fence.Apply(ctx, fence.Client(s.Kube.Kube), these, func(n *corev1.Node) fence.Plan { return fence.PlanFence(n, req) })
		}
		for j, r := range res {
			out[at[j]] = r
		}
	}
	for i, r := range out {
		switch {
		case r.Outcome != "":
		case plans[i].Refused != "": // a host in neither scheduler
			out[i] = fence.Result{Plan: plans[i], Outcome: fence.Refused, Detail: plans[i].Refused}
		default: // every other plan is read in one of them: this is a bug, said as one
			out[i] = fence.Result{Plan: plans[i], Outcome: fence.Failed, Detail: fmt.Sprintf("gpulab: a plan in no scheduler it knows (%q)", plans[i].In)}
		}
	}
	return out
}

// PlanFence reads the fleet's nodes and plans their fence.
func (f *Fleet) PlanFence(ctx context.Context, s FenceSpec) []fence.Plan {
	return s.plan(ctx, f.Names(), s.Request, false)
}

// PlanRelease reads the fleet's nodes and plans their release.
func (f *Fleet) PlanRelease(ctx context.Context, s FenceSpec) []fence.Plan {
	return s.plan(ctx, f.Names(), s.Request, true)
}

// Fence carries out plans (PlanFence's, as shown to a person): where any
// node is to change, it makes the record, gathers the evidence on those
// hosts (a host that cannot be reached is evidence too), saves it, acts,
// drains when asked, and saves the record complete. A plan with nothing
// to change makes no record and changes nothing.
func (f *Fleet) Fence(ctx context.Context, s FenceSpec, plans []fence.Plan) Fenced {
	act := Changing(plans)
	if len(act) == 0 {
		return Fenced{Results: notDrained(s, s.apply(ctx, plans, s.Request, false))}
	}
	rec, err := fence.NewRecord(s.Results, act, s.Request.At)
	if err != nil { // no record, no action: the evidence must be kept
		return Fenced{Results: notDone(plans, "nothing done: "+err.Error()), SaveErr: err}
	}
	req := s.Request
	req.Record = rec.ID
	rec.Reason, rec.By, rec.At, rec.Target, rec.Simulated, rec.Plan = req.Reason, req.By, req.At, s.Target(), s.Simulated, plans
	rec.Runbook = s.Runbook.ID
	out := Fenced{Record: rec}
	keep := func(err error) {
		if err != nil && out.SaveErr == nil {
			out.SaveErr = err
		}
	}
	keep(rec.Save())
	rec.Evidence = f.evidence(ctx, rec, "evidence", f.targetsNamed(act), s.Runbook)
	keep(rec.Save())
	out.Results = notDrained(s, s.apply(ctx, plans, req, false))
	// From here the nodes name the record: a release may add to it at
	// any moment, so what the fence adds goes in under its lock.
	var drains []fence.NodeDrain
	var bug map[string]*fence.StepOutput
	ours := func(cur *fence.Record) {
		cur.Results, cur.Drain = out.Results, drains
		for i := range cur.Evidence {
			if b, ok := bug[cur.Evidence[i].Host]; ok {
				cur.Evidence[i].BugReport = b
			}
		}
	}
	keep(rec.Update(ours))
	if s.Drain != nil && s.Kube != nil {
		for _, r := range out.Results {
			if r.In == fence.InKubernetes && r.Outcome == fence.Done && ctx.Err() == nil {
				pods, err := fence.Drain(ctx, s.Kube.Kube, r.Node, *s.Drain)
				d := fence.NodeDrain{Node: r.Node, Pods: pods}
				if err != nil {
					d.Error = err.Error()
				}
				drains = append(drains, d)
				keep(rec.Update(ours))
			}
		}
	}
	if s.BugReport && ctx.Err() == nil { // after the action: a hung nvidia-smi in it must not keep the node in service
		bug = f.bugReports(ctx, rec, f.targetsNamed(act))
	}
	keep(rec.Update(func(cur *fence.Record) {
		ours(cur)
		cur.Complete, cur.Interrupted = ctx.Err() == nil, ctx.Err() != nil
	}))
	out.Record = rec
	return out
}

// notDrained says, where a drain was asked, that a node fenced already
// is not drained by this run: a drain follows only the fence it makes.
func notDrained(s FenceSpec, results []fence.Result) []fence.Result {
	if s.Drain == nil {
		return results
	}
	for i, r := range results {
		if r.In == fence.InKubernetes && r.Outcome == fence.Unchanged {
			results[i].NotDrained = "not drained: --drain drains the nodes this run fences, and this one was fenced already (kubectl drain it, or release it and fence it again with --drain)"
		}
	}
	return results
}

// kubeFailed is the Kubernetes result of p's node among those made so
// far, when p is a Slurm plan and that result is neither done nor
// unchanged.
func kubeFailed(results []fence.Result, p fence.Plan) (fence.Result, bool) {
	if p.In != fence.InSlurm {
		return fence.Result{}, false
	}
	for _, r := range results {
		if r.In == fence.InKubernetes && r.Node == p.Node && r.Outcome != fence.Done && r.Outcome != fence.Unchanged && r.Outcome != "" {
			return r, true
		}
	}
	return fence.Result{}, false
}

// Changing are the names of the nodes plans change, each once (a host
// fenced in Kubernetes and in Slurm has two plans).
func Changing(plans []fence.Plan) []string {
	var out []string
	for _, p := range plans {
		if p.Acts() && !slices.Contains(out, p.Node) {
			out = append(out, p.Node)
		}
	}
	return out
}

func notDone(plans []fence.Plan, why string) []fence.Result {
	out := make([]fence.Result, len(plans))
	for i, p := range plans {
		out[i] = fence.Result{Plan: p, Outcome: fence.Failed, Detail: why}
		if p.Error != "" {
			out[i].Detail = p.Error
		} else if p.Refused != "" {
			out[i].Outcome, out[i].Detail = fence.Refused, p.Refused
		} else if len(p.Changes) == 0 {
			out[i].Outcome, out[i].Detail = fence.Unchanged, p.Unchanged
		}
	}
	return out
}

func (f *Fleet) targetsNamed(names []string) []orchestrator.Target {
	var out []orchestrator.Target
	for _, t := range f.Targets {
		if slices.Contains(names, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// evidence runs rb on targets and keeps what each host showed in rec,
// its steps' outputs under prefix/HOST/.
func (f *Fleet) evidence(ctx context.Context, rec *fence.Record, prefix string, targets []orchestrator.Target, rb runbooks.Runbook) []fence.HostEvidence {
	outcome := f.RunRunbook(ctx, targets, rb, runbooks.RunOptions{})
	ev := make([]fence.HostEvidence, 0, len(outcome.Runs))
	for _, run := range outcome.Runs {
		h := fence.HostEvidence{Host: run.Host, Via: via(run.Via), Runbook: rb.ID, Verdicts: run.Verdicts}
		if run.Unreached() {
			h.Error = fmt.Sprintf("%s: %s", run.Class, run.Err)
		}
		for _, st := range run.Steps {
			so := fence.StepOutput{ID: st.ID, Command: st.Command, ExitCode: st.ExitCode, Problem: st.Problem}
			if st.Output != "" {
				if err := rec.AddOutput(prefix, run.Host, &so, st.Output); err != nil {
					so.Problem = strings.TrimSpace(so.Problem + "; its output not kept: " + err.Error())
				}
			}
			h.Steps = append(h.Steps, so)
		}
		ev = append(ev, h)
	}
	return ev
}

func via(v orchestrator.Via) string {
	if v.Context != "" {
		return v.Transport + " (context " + v.Context + ")"
	}
	return v.Transport
}

// Release carries out plans (PlanRelease's). Before it, the nodes'
// runbook runs again (the one that gathered their fence's evidence,
// unless one was given): a node is released only when every check that
// failed or warned at its fence passes now and none fails; where this
// machine has no evidence of its fence to compare with, only when every
// check passes (or with Force, recorded). Each release is added to its
// fence's record, under the record's lock, or kept in a record of its
// own where this machine has none.
func (f *Fleet) Release(ctx context.Context, s FenceSpec, plans []fence.Plan) Fenced {
	if len(Changing(plans)) == 0 {
		return Fenced{Results: s.apply(ctx, plans, s.Request, true)}
	}
	groups := releaseGroups(plans)
	out := Fenced{Held: map[string]string{}}
	release := slices.Clone(plans)
	for _, g := range groups {
		f.checkAgain(ctx, s, g)
		for node, why := range g.rel.Held { // a node held by one of its records is held in both schedulers
			out.Held[node] = strings.TrimPrefix(out.Held[node]+"; "+why, "; ")
		}
	}
	for i, p := range release {
		// Only what would change is held: a plan not read or refused
		// says so as it is.
		if why, held := out.Held[p.Node]; held && p.Acts() {
			release[i] = fence.Plan{Node: p.Node, In: p.In, Refused: "held: " + why, Fence: p.Fence}
		}
	}
	out.Results = s.apply(ctx, release, s.Request, true)
	for i := range out.Results {
		out.Results[i].Held = release[i].Refused != "" && plans[i].Acts()
	}
	for _, g := range groups {
		for _, r := range out.Results {
			if slices.Contains(g.plans, planKey(r.Plan)) {
				g.rel.Plan, g.rel.Results = append(g.rel.Plan, r.Plan), append(g.rel.Results, r)
			}
		}
		if g.rec == nil {
			continue
		}
		if err := g.save(); err != nil && out.SaveErr == nil {
			out.SaveErr = err
		}
		out.Records = append(out.Records, g.rec)
	}
	if len(out.Records) > 0 {
		out.Record = out.Records[0]
	}
	return out
}

// releaseGroup is the nodes to release that one record fenced: their
// plans (planKey: a node fenced in Kubernetes under one record and in
// Slurm under another is in two groups, each with its own plan).
type releaseGroup struct {
	id       string
	nodes    []string
	plans    []string
	rec      *fence.Record
	existing bool // rec is the fence's own record
	rel      fence.Release
}

// planKey is a plan's node and scheduler.
func planKey(p fence.Plan) string { return p.Node + "\x00" + p.In }

func releaseGroups(plans []fence.Plan) []*releaseGroup {
	var out []*releaseGroup
	for _, p := range plans {
		if !p.Acts() || p.Fence == nil {
			continue
		}
		i := slices.IndexFunc(out, func(g *releaseGroup) bool { return g.id == p.Fence.Record })
		if i < 0 {
			out = append(out, &releaseGroup{id: p.Fence.Record})
			i = len(out) - 1
		}
		if !slices.Contains(out[i].nodes, p.Node) {
			out[i].nodes = append(out[i].nodes, p.Node)
		}
		out[i].plans = append(out[i].plans, planKey(p))
	}
	return out
}

// checkAgain finds g's record (or makes one for the release) and, unless
// forced, runs the runbook again on g's nodes and holds those that do
// not pass.
func (f *Fleet) checkAgain(ctx context.Context, s FenceSpec, g *releaseGroup) {
	g.rel = fence.Release{By: s.Request.By, At: s.Request.At, Force: s.Force, Held: map[string]string{}}
	rec, err := fence.OpenRecord(s.Results, g.id)
	if err == nil {
		g.rec, g.existing = rec, true
	} else {
		g.rel.Note = "the fence record " + g.id + " is not usable here: " + err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			g.rel.Note = "the fence record " + g.id + " is not on this machine"
		}
		if g.rec, err = f.ownReleaseRecord(s, g); err != nil {
			for _, n := range g.nodes {
				g.rel.Held[n] = "no record of the release could be made: " + err.Error()
			}
			return
		}
	}
	if s.Force {
		return
	}
	rb := s.Runbook
	if g.existing && !s.RunbookGiven && g.rec.Runbook != "" && s.Runbooks != nil {
		if r, ok := s.Runbooks(g.rec.Runbook); ok {
			rb = r
		}
	}
	g.rel.Runbook = rb.ID
	prefix := fmt.Sprintf("release-%s-%s", s.Request.At.UTC().Format("20060102-150405"), randomSuffix())
	g.rel.Evidence = f.evidence(ctx, g.rec, prefix, f.targetsNamed(g.nodes), rb)
	before := map[string][]string{}
	if g.existing {
		for _, h := range g.rec.Evidence {
			if h.Error == "" && len(h.Verdicts) > 0 {
				before[h.Host] = h.Failing()
			}
		}
	}
	for _, h := range g.rel.Evidence {
		was, known := before[h.Host]
		if why := stillFailing(h, was, known); why != "" {
			g.rel.Held[h.Host] = why
		}
	}
}

// save adds the release to the fence's record (under its lock), or saves
// the release's own record.
func (g *releaseGroup) save() error {
	if !g.existing {
		g.rec.Releases = []fence.Release{g.rel}
		return g.rec.Save()
	}
	return g.rec.Update(func(cur *fence.Record) { cur.Releases = append(cur.Releases, g.rel) })
}

// stillFailing says why h does not pass the release's checks, "" when it
// passes: a check that failed or warned at the fence (was) that does not
// pass now, or any check that fails now; where the fence's evidence is
// not known, any check that does not pass.
func stillFailing(h fence.HostEvidence, was []string, known bool) string {
	if h.Error != "" {
		return "not checked again: " + h.Error
	}
	if len(h.Verdicts) == 0 {
		return "no check was judged again"
	}
	var why []string
	for _, v := range h.Verdicts {
		switch {
		case slices.Contains(was, v.Check) && v.Status != step.Pass:
			why = append(why, fmt.Sprintf("%s %s (it did not pass at the fence): %s", v.Check, v.Status, v.Summary))
		case v.Status == step.Fail || !known && v.Status != step.Pass && v.Status != step.Skipped:
			why = append(why, fmt.Sprintf("%s %s: %s", v.Check, v.Status, v.Summary))
		}
	}
	for _, c := range was {
		if !slices.ContainsFunc(h.Verdicts, func(v step.Verdict) bool { return v.Check == c }) {
			why = append(why, c+" not judged again")
		}
	}
	if len(why) > 0 && !known {
		return "no evidence of its fence here to compare with, so every check must pass: " + strings.Join(why, "; ")
	}
	return strings.Join(why, "; ")
}

// ownReleaseRecord is a record for a release whose fence record this
// machine does not have.
func (f *Fleet) ownReleaseRecord(s FenceSpec, g *releaseGroup) (*fence.Record, error) {
	rec, err := fence.NewRecord(s.Results, g.nodes, s.Request.At)
	if err != nil {
		return nil, err
	}
	rec.Reason = "release of " + g.id + " (" + g.rel.Note + ")"
	rec.By, rec.At, rec.Target, rec.Simulated, rec.Complete = s.Request.By, s.Request.At, s.Target(), s.Simulated, true
	return rec, nil
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Now is when an action is taken, to the second, in UTC (what the
// node's annotations and the record say).
func Now() time.Time { return time.Now().UTC().Truncate(time.Second) }

// Scontrol runs scontrol's command lines on login, over one connection
// kept for them (the fleet's pool where it has one, the workbench's);
// close ends it. What a command prints is bounded as any command's.
func (f *Fleet) Scontrol(login string) (run fence.Scontrol, close func(), err error) {
	h, ok := f.Inv.Host(login)
	if !ok {
		h = inventory.Host{Name: login, Address: login, Adhoc: true}
	}
	t, err := f.Resolver.Resolve(h)
	if err != nil {
		return nil, nil, fmt.Errorf("the Slurm login host %s: %w", login, err)
	}
	pool, close := f.Engine.Pool, func() {}
	if pool == nil {
		pool = &orchestrator.Pool{Dialer: f.Engine.Dialer}
		close = pool.Close
	}
	return func(ctx context.Context, command string) (string, error) {
		conn, err := pool.Get(ctx, t)
		if err != nil {
			return "", fmt.Errorf("the Slurm login host %s: %w", login, err)
		}
		out := conn.Run(ctx, "scontrol", command, orchestrator.RunOptions{Timeout: time.Minute, Inactivity: time.Minute, MaxOutput: 16 << 20})
		pool.Put(conn)
		if out.Class != orchestrator.OK || out.ExitCode != 0 {
			return string(out.Stdout), fmt.Errorf("on %s: %s: exit %d: %s", login, out.Class, out.ExitCode, strings.TrimSpace(string(out.Stderr)+" "+out.Err))
		}
		return string(out.Stdout), nil
	}, close, nil
}

// SlurmState reads the inventory's Slurm cluster's nodes (SlurmNodes),
// for @slurm: host expressions.
func SlurmState(ctx context.Context, inv *inventory.Inventory, r Reach) ([]inventory.SlurmNode, error) {
	nodes, err := SlurmNodes(ctx, inv, r)
	if err != nil {
		return nil, err
	}
	out := make([]inventory.SlurmNode, len(nodes))
	for i, n := range nodes {
		out[i] = inventory.SlurmNode{Name: n.Name, Partitions: n.Partitions, States: append([]string{n.State}, n.Flags...), Features: n.Features}
	}
	return out, nil
}

// SlurmFences are the Slurm cluster's nodes gpulab drained (their reason
// begins "gpulab: "), with drift: a gpulab reason whose drain was
// cleared by hand.
func SlurmFences(ctx context.Context, inv *inventory.Inventory, r Reach) ([]fence.Fenced, error) {
	nodes, err := SlurmNodes(ctx, inv, r)
	if err != nil {
		return nil, err
	}
	var out []fence.Fenced
	for _, n := range nodes {
		if f := fence.ReadSlurmFence(n); f != nil {
			out = append(out, fence.Fenced{Node: n.Name, In: fence.InSlurm, Fence: *f, Cordoned: n.Drained()})
		}
	}
	return out, nil
}

// SlurmNodes reads the inventory's Slurm cluster's nodes with scontrol
// on its login host (scontrol show node --json; the text where that
// Slurm has no --json).
func SlurmNodes(ctx context.Context, inv *inventory.Inventory, r Reach) ([]parse.SlurmNode, error) {
	login := inv.Slurm.Login
	h, ok := inv.Host(login)
	if !ok {
		h = inventory.Host{Name: login, Address: login, Adhoc: true}
	}
	f, err := NewFleet(inv, []inventory.Host{h}, r)
	if err != nil {
		return nil, err
	}
	defer f.Keys.Close()
	return f.slurmNodes(ctx)
}

// slurmNodes reads the inventory's Slurm cluster's nodes with scontrol
// on its login host, over the fleet's connections.
func (f *Fleet) slurmNodes(ctx context.Context) ([]parse.SlurmNode, error) {
	login := f.Inv.Slurm.Login
	run, done, err := f.Scontrol(login)
	if err != nil {
		return nil, err
	}
	defer done()
	var nodes []parse.SlurmNode
	if out, jerr := run(ctx, "scontrol show node --json"); jerr == nil {
		nodes, err = parse.ParseSlurmNodesJSON(out)
	} else {
		out, terr := run(ctx, "scontrol show node")
		if terr != nil {
			return nil, fmt.Errorf("the Slurm cluster's nodes: %w", terr)
		}
		nodes, err = parse.ParseScontrolShowNode(out)
	}
	if err != nil && len(nodes) == 0 {
		return nil, fmt.Errorf("the Slurm cluster's nodes, as scontrol on %s says them: %w", login, err)
	}
	return nodes, nil
}
