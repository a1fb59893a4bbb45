package fence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpulab/gpulab/internal/visible"
)

// What gpulab writes on a node it fences. The taint's key and effect
// can be chosen (Request.TaintKey, Request.Effect); the annotations say
// which were used, so that a release removes exactly that taint.
const (
	// TaintKey is the default taint's key; its value is the reason, cut
	// to a label value (Slug), and its effect NoSchedule.
	TaintKey = "gpulab.io/fenced"
	// AnnRecord names the fence record (Record.ID): the mark of a
	// gpulab fence. A node without it was not fenced by gpulab.
	AnnRecord   = "gpulab.io/fence-record"
	AnnBy       = "gpulab.io/fenced-by"    // user@host
	AnnAt       = "gpulab.io/fenced-at"    // RFC 3339, UTC
	AnnReason   = "gpulab.io/fence-reason" // the reason, whole
	AnnTaint    = "gpulab.io/fence-taint"  // KEY:EFFECT of the taint gpulab added
	AnnCordoned = "gpulab.io/fence-cordoned"
	// FieldManager is the name gpulab's writes carry in the node's
	// managedFields, as kubectl's carry kubectl-cordon or kubectl-taint.
	FieldManager = "gpulab"
)

var fenceAnnotations = []string{AnnRecord, AnnBy, AnnAt, AnnReason, AnnTaint, AnnCordoned}

// CheckReason refuses a reason that cannot go whole into the record,
// the node's annotation or the Slurm reason: empty, over 1024 bytes, or
// with a control character, a bidi override or a line separator (each
// changes what a terminal shows without showing itself).
func CheckReason(r string) error {
	switch {
	case strings.TrimSpace(r) == "":
		return errors.New("say why the node is fenced (e.g. \"XID 79: GPU fell off the bus\")")
	case len(r) > 1024:
		return fmt.Errorf("%d bytes: say it in at most 1024 (the evidence goes in the record)", len(r))
	case strings.IndexFunc(r, func(c rune) bool { return unicode.IsControl(c) || visible.Unsafe(c) }) >= 0:
		return errors.New("it has a control character (or a bidi override, a line separator): one line of plain text, please")
	}
	return nil
}

// Request is one fence: why, by whom, under which record.
type Request struct {
	Reason string
	Record string // the fence record's ID
	By     string // user@host
	At     time.Time
	// TaintKey and Effect are the taint added (default TaintKey,
	// NoSchedule; NoExecute also evicts what does not tolerate it).
	TaintKey string
	Effect   corev1.TaintEffect
}

func (r Request) taint() corev1.Taint {
	key, effect := r.TaintKey, r.Effect
	if key == "" {
		key = TaintKey
	}
	if effect == "" {
		effect = corev1.TaintEffectNoSchedule
	}
	at := metav1.NewTime(r.At.UTC().Truncate(time.Second))
	return corev1.Taint{Key: key, Value: Slug(r.Reason), Effect: effect, TimeAdded: &at}
}

// Op is one kind of change to a node.
type Op string

const (
	OpCordon     Op = "cordon"
	OpTaint      Op = "taint"
	OpAnnotate   Op = "annotate"
	OpUncordon   Op = "uncordon"
	OpUntaint    Op = "untaint"
	OpUnannotate Op = "unannotate"
)

// Change is one change a plan makes to a node, as a person reads it.
type Change struct {
	Op   Op     `json:"op"`
	What string `json:"what"`
}

// Fence is gpulab's fence as a node's annotations record it.
type Fence struct {
	Record string    `json:"record"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
	Taint  string    `json:"taint"` // KEY:EFFECT
	// Cordoned: gpulab cordoned the node (it was schedulable); a release
	// uncordons only then.
	Cordoned bool `json:"cordoned"`
	// Drift is what was undone since, not by gpulab: the node uncordoned
	// or the taint removed by hand.
	Drift []string `json:"drift,omitempty"`
}

// Plan is what fencing or releasing one node would do. Exactly one of
// Changes, Unchanged and Refused says it.
type Plan struct {
	Node string `json:"node"`
	// In is the scheduler the plan acts in: InKubernetes or InSlurm (a
	// host that is a node of both has a plan in each).
	In      string   `json:"in"`
	Changes []Change `json:"changes,omitempty"`
	// Unchanged says why there is nothing to do (already fenced by
	// gpulab; not fenced at all).
	Unchanged string `json:"unchanged,omitempty"`
	// Refused says why gpulab will not act on the node.
	Refused string `json:"refused,omitempty"`
	// Error says why the node could not be read (the API server or the
	// login host did not answer): nothing is known of it.
	Error string `json:"error,omitempty"`
	// Left is what stays as it is, with who set it: another actor's
	// cordon or taints.
	Left []string `json:"left,omitempty"`
	// Fence is gpulab's fence found on the node, if any.
	Fence *Fence `json:"fence,omitempty"`

	verb string       // "fence" or "release"
	node *corev1.Node // as read (Kubernetes)
	want *corev1.Node // with the changes (Kubernetes)
	// command is the scontrol line that makes the changes (Slurm), and
	// record the fence record it names.
	command, record string
}

// Acts says whether carrying p out changes its node: it has changes,
// and is not refused.
func (p Plan) Acts() bool { return len(p.Changes) > 0 && p.Refused == "" }

// The schedulers a plan acts in (Plan.In).
const (
	InKubernetes = "kubernetes"
	InSlurm      = "slurm"
)

// ReadFence is gpulab's fence on n, or nil.
func ReadFence(n *corev1.Node) *Fence {
	a := n.Annotations
	if a[AnnRecord] == "" {
		return nil
	}
	f := &Fence{Record: a[AnnRecord], By: a[AnnBy], Reason: a[AnnReason], Taint: a[AnnTaint], Cordoned: a[AnnCordoned] == "true"}
	f.At, _ = time.Parse(time.RFC3339, a[AnnAt])
	switch {
	case f.Cordoned && !n.Spec.Unschedulable:
		f.Drift = append(f.Drift, "uncordoned since, not by gpulab")
	case f.Cordoned && !ownCordon(n):
		f.Drift = append(f.Drift, "cordoned again since, "+by(fieldOwner(n, "f:spec", "f:unschedulable")))
	}
	if key, effect, ok := splitTaint(f.Taint); ok && taintIndex(n, key, effect) < 0 {
		f.Drift = append(f.Drift, "taint "+f.Taint+" removed since, not by gpulab")
	} else if ok && !ownTaint(n.Spec.Taints[taintIndex(n, key, effect)], f) {
		f.Drift = append(f.Drift, "taint "+f.Taint+" is not the one gpulab added (its value or time differ)")
	}
	return f
}

// ownCordon says whether gpulab set n's cordon, as its managedFields say.
func ownCordon(n *corev1.Node) bool {
	m, _ := fieldOwner(n, "f:spec", "f:unschedulable")
	return m == FieldManager
}

// ownTaint says whether t is the taint gpulab added for fence f: its
// value the reason's slug and its time the fence's (kubectl taint sets
// no time). Annotations alone are not proof: whoever may annotate the
// node could name another's taint in them.
func ownTaint(t corev1.Taint, f *Fence) bool {
	return t.Value == Slug(f.Reason) && t.TimeAdded != nil && t.TimeAdded.Time.Equal(f.At)
}

func splitTaint(s string) (key string, effect corev1.TaintEffect, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return "", "", false
	}
	return s[:i], corev1.TaintEffect(s[i+1:]), true
}

func taintIndex(n *corev1.Node, key string, effect corev1.TaintEffect) int {
	return slices.IndexFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
}

// PlanFence plans fencing node n for req.
func PlanFence(n *corev1.Node, req Request) Plan {
	p := Plan{Node: n.Name, verb: "fence", node: n, Fence: ReadFence(n)}
	if f := p.Fence; f != nil {
		if len(f.Drift) > 0 {
			p.Refused = fmt.Sprintf("fenced by gpulab (record %s, by %s), partly undone since: %s; release it (gpulab release) before fencing it again",
				f.Record, f.By, strings.Join(f.Drift, "; "))
		} else {
			p.Unchanged = fmt.Sprintf("already fenced by gpulab: record %s, by %s at %s: %s", f.Record, f.By, f.At.Format(time.RFC3339), f.Reason)
		}
		return p
	}
	t := req.taint()
	want := n.DeepCopy()
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	cordoned := !n.Spec.Unschedulable
	if cordoned {
		want.Spec.Unschedulable = true
		p.Changes = append(p.Changes, Change{OpCordon, "spec.unschedulable: false → true (no new pod is scheduled here)"})
	} else {
		p.Left = append(p.Left, "cordoned already, "+by(fieldOwner(n, "f:spec", "f:unschedulable"))+" (a release leaves it cordoned)")
	}
	if i := taintIndex(n, t.Key, t.Effect); i >= 0 {
		p.Refused = fmt.Sprintf("taint %s:%s is there already, %s, without a gpulab fence record: choose another key (--taint)",
			t.Key, t.Effect, by(taintOwner(n, n.Spec.Taints[i])))
		p.Changes = nil
		return p
	}
	want.Spec.Taints = append(want.Spec.Taints, t)
	p.Changes = append(p.Changes, Change{OpTaint, "add taint " + taintString(t)})
	p.Left = append(p.Left, othersTaints(n, "")...)
	for k, v := range map[string]string{AnnRecord: req.Record, AnnBy: req.By, AnnAt: req.At.UTC().Format(time.RFC3339),
		AnnReason: req.Reason, AnnTaint: t.Key + ":" + string(t.Effect), AnnCordoned: strconv.FormatBool(cordoned)} {
		want.Annotations[k] = v
	}
	p.Changes = append(p.Changes, Change{OpAnnotate, "annotate " + AnnRecord + " (the fence record), who, when and why"})
	p.want = want
	return p
}

// PlanRelease plans releasing node n: only what gpulab did, as its
// annotations record it. A node gpulab did not fence is refused when
// another actor fenced it (saying who), and unchanged otherwise.
func PlanRelease(n *corev1.Node) Plan {
	p := Plan{Node: n.Name, verb: "release", node: n, Fence: ReadFence(n)}
	f := p.Fence
	if f == nil {
		others := othersFence(n)
		if len(others) == 0 {
			p.Unchanged = "not fenced: nothing to release"
			return p
		}
		p.Refused = "not fenced by gpulab (no " + AnnRecord + " annotation): " + strings.Join(others, "; ") + "; gpulab releases only its own fences"
		return p
	}
	want := n.DeepCopy()
	mine := ""
	if key, effect, ok := splitTaint(f.Taint); ok {
		if i := taintIndex(n, key, effect); i >= 0 && !ownTaint(n.Spec.Taints[i], f) {
			// The annotations name a taint that is not the one gpulab
			// added: neither is removed, so that the fence stays
			// readable and the taint is not left looking like another's.
			p.Refused = fmt.Sprintf("taint %s is there, but its value or time is not what gpulab's fence (record %s) set, %s: left as it is, and the fence with it; remove them by hand if they are gpulab's",
				taintString(n.Spec.Taints[i]), f.Record, by(taintOwner(n, n.Spec.Taints[i])))
			return p
		}
		if i := taintIndex(n, key, effect); i >= 0 {
			want.Spec.Taints = slices.Delete(want.Spec.Taints, i, i+1)
			p.Changes = append(p.Changes, Change{OpUntaint, "remove taint " + taintString(n.Spec.Taints[i])})
			mine = f.Taint
		}
	}
	p.Left = append(p.Left, othersTaints(n, mine)...)
	switch {
	case f.Cordoned && n.Spec.Unschedulable && ownCordon(n):
		want.Spec.Unschedulable = false
		p.Changes = append(p.Changes, Change{OpUncordon, "spec.unschedulable: true → false"})
	case n.Spec.Unschedulable && f.Cordoned:
		p.Left = append(p.Left, "cordoned again since gpulab's fence, "+by(fieldOwner(n, "f:spec", "f:unschedulable"))+": left cordoned")
	case n.Spec.Unschedulable:
		p.Left = append(p.Left, "cordoned before gpulab's fence, "+by(fieldOwner(n, "f:spec", "f:unschedulable"))+": left cordoned")
	}
	for _, k := range fenceAnnotations {
		delete(want.Annotations, k)
	}
	p.Changes = append(p.Changes, Change{OpUnannotate, "remove the " + AnnRecord + "=" + f.Record + " annotations"})
	p.want = want
	return p
}

// othersFence is what keeps n off the scheduler that gpulab did not do:
// a cordon and NoSchedule or NoExecute taints, each with who set it.
func othersFence(n *corev1.Node) []string {
	var out []string
	if n.Spec.Unschedulable {
		out = append(out, "cordoned "+by(fieldOwner(n, "f:spec", "f:unschedulable")))
	}
	return append(out, othersTaints(n, "")...)
}

// othersTaints are n's taints that keep pods off, but the one named
// mine (KEY:EFFECT), each with who added it.
func othersTaints(n *corev1.Node, mine string) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule || t.Key+":"+string(t.Effect) == mine {
			continue
		}
		if t.Key == corev1.TaintNodeUnschedulable { // the cordon's own taint, said by the cordon
			continue
		}
		out = append(out, "taint "+taintString(t)+" "+by(taintOwner(n, t)))
	}
	return out
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// by says who set a field: "by kubectl-cordon at 2026-12-06T18:01:02Z",
// or that the node's managedFields do not say.
func by(manager string, at time.Time) string {
	if manager == "" {
		return "by an actor the node's managedFields do not name"
	}
	if at.IsZero() {
		return "by " + manager
	}
	return "by " + manager + " at " + at.UTC().Format(time.RFC3339)
}

// Nodes is the part of client-go's node client that fencing uses.
type Nodes interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error)
	Update(ctx context.Context, node *corev1.Node, opts metav1.UpdateOptions) (*corev1.Node, error)
}

// Outcome is how an action on one node ended.
type Outcome string

const (
	Done      Outcome = "done"      // the plan's changes were made
	Unchanged Outcome = "unchanged" // there was nothing to do
	Refused   Outcome = "refused"   // gpulab would not act (Plan.Refused)
	Changed   Outcome = "changed"   // the node changed since the plan; nothing done
	Failed    Outcome = "failed"    // the API server refused or did not answer
)

// Result is one node's plan and how carrying it out went.
type Result struct {
	Plan
	Outcome Outcome `json:"outcome"`
	// Detail says what happened: the error, or what changed since the
	// plan (another gpulab process fenced it first, by whom).
	Detail string `json:"detail,omitempty"`
	// NotDrained says why a drain asked for was not made on the node.
	NotDrained string `json:"not_drained,omitempty"`
	// Held: a release kept the node fenced, its checks not passing yet
	// (Outcome Refused, Detail why).
	Held bool `json:"held,omitempty"`
}

// Read reads each named node and plans for it with plan. A node that
// cannot be read is refused, saying why.
func Read(ctx context.Context, nodes Nodes, names []string, plan func(*corev1.Node) Plan) []Plan {
	out := make([]Plan, 0, len(names))
	for _, name := range names {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, Plan{Node: name, Refused: readError(name, err)})
			continue
		case err != nil:
			out = append(out, Plan{Node: name, Error: readError(name, err)})
			continue
		}
		out = append(out, plan(n))
	}
	for i := range out {
		out[i].In = InKubernetes
	}
	return out
}

func readError(name string, err error) string {
	if apierrors.IsNotFound(err) {
		return "no node " + name + " in the cluster"
	}
	return "could not read node " + name + ": " + err.Error()
}

// Apply carries out each plan: replan makes it again from the node it
// read, with the request as carried out (the record's ID), and the node
// is updated from that version (its resourceVersion), so that a node changed since is not
// overwritten: it is read again and planned again with replan, and
// updated only when the new plan makes the same changes (a status
// heartbeat changes the version, not the plan). Otherwise nothing is
// done and the result says what changed: another gpulab process that
// fenced the node first is named.
func Apply(ctx context.Context, nodes Nodes, plans []Plan, replan func(*corev1.Node) Plan) []Result {
	out := make([]Result, 0, len(plans))
	for _, p := range plans {
		out = append(out, applyOne(ctx, nodes, p, replan))
	}
	return out
}

func applyOne(ctx context.Context, nodes Nodes, p Plan, replan func(*corev1.Node) Plan) Result {
	switch {
	case p.Error != "":
		return Result{Plan: p, Outcome: Failed, Detail: p.Error}
	case p.Refused != "":
		return Result{Plan: p, Outcome: Refused, Detail: p.Refused}
	case p.want == nil:
		return Result{Plan: p, Outcome: Unchanged, Detail: p.Unchanged}
	}
	const attempts = 5
	// Planned again from the node as the person saw it, with the request
	// as carried out (its record's ID): the same changes.
	cur := replan(p.node)
	if !sameChanges(cur, p) {
		return Result{Plan: p, Outcome: Changed, Detail: changedSince(p, cur)}
	}
	for i := 0; ; i++ {
		_, err := nodes.Update(ctx, cur.want, metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			return Result{Plan: p, Outcome: Done}
		}
		if !apierrors.IsConflict(err) || i == attempts {
			return Result{Plan: p, Outcome: Failed, Detail: err.Error()}
		}
		n, gerr := nodes.Get(ctx, p.Node, metav1.GetOptions{})
		if gerr != nil {
			return Result{Plan: p, Outcome: Failed, Detail: readError(p.Node, gerr)}
		}
		cur = replan(n)
		if !sameChanges(cur, p) {
			return Result{Plan: p, Outcome: Changed, Detail: changedSince(p, cur)}
		}
	}
}

func sameChanges(a, b Plan) bool {
	return a.want != nil && b.want != nil && slices.Equal(a.Changes, b.Changes)
}

// changedSince says how the node changed between plan p and now.
func changedSince(p, now Plan) string {
	f := now.Fence
	switch {
	case p.verb == "fence" && f != nil:
		return fmt.Sprintf("fenced meanwhile by %s (record %s at %s): nothing done", f.By, f.Record, f.At.Format(time.RFC3339))
	case p.verb == "release" && f == nil:
		return "released meanwhile (its gpulab fence is gone): nothing done"
	case now.Refused != "":
		return "the node changed since the plan: " + now.Refused + ": nothing done"
	case now.Unchanged != "":
		return "the node changed since the plan: " + now.Unchanged + ": nothing done"
	}
	var ops []string
	for _, c := range now.Changes {
		ops = append(ops, c.What)
	}
	return "the node changed since the plan, which would now be: " + strings.Join(ops, "; ") + ": nothing done, plan again"
}

// Client is what the Kubernetes actions need of client-go.
func Client(cs kubernetes.Interface) Nodes { return cs.CoreV1().Nodes() }
