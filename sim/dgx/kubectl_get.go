package dgx

import (
	"fmt"
	"slices"
	"strings"
)

// kubectl get, describe and api-resources. The tables' columns are the
// API server's (v1.31) for each type, printed by kubectl's table
// printer: the get-events recording
// (recorded/kubectl-get-events/...) is one; no recording of get nodes,
// get pods, get resourcequota, get priorityclass or get crd exists, so
// those follow kubectl's documented columns.

// kubeKind is a resource type kubectl get knows.
type kubeKind struct {
	plural, singular, group string
	namespaced              bool
	aliases                 []string
	header, wide            []string // nil header: no table (-o name and jsonpath only)
	items                   func(s *kstate) []kubeItem
}

// kubeItem is one object: its table cells, the fields and labels
// selectors read, and the object a template walks.
type kubeItem struct {
	ns, name    string
	cells, wide []string
	fields      map[string]string
	labels      map[string]string
	obj         func() map[string]any
}

var kubeKinds []*kubeKind

func init() {
	kubeKinds = []*kubeKind{
		{plural: "nodes", singular: "node", aliases: []string{"no"}, header: []string{"NAME", "STATUS", "ROLES", "AGE", "VERSION"},
			wide: []string{"INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"}, items: (*kstate).nodeItems},
		{plural: "pods", singular: "pod", namespaced: true, aliases: []string{"po"}, header: []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
			wide: []string{"IP", "NODE", "NOMINATED NODE", "READINESS GATES"}, items: (*kstate).podItems},
		{plural: "events", singular: "event", namespaced: true, aliases: []string{"ev"}, header: []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"},
			items: (*kstate).eventItems},
		{plural: "resourcequotas", singular: "resourcequota", namespaced: true, aliases: []string{"quota"}, header: []string{"NAME", "AGE", "REQUEST", "LIMIT"},
			items: (*kstate).quotaItems},
		{plural: "priorityclasses", singular: "priorityclass", group: "scheduling.k8s.io", aliases: []string{"pc"},
			header: []string{"NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"}, items: (*kstate).priorityItems},
		{plural: "customresourcedefinitions", singular: "customresourcedefinition", group: "apiextensions.k8s.io", aliases: []string{"crd", "crds"},
			header: []string{"NAME", "CREATED AT"}, items: (*kstate).crdItems},
		{plural: "namespaces", singular: "namespace", aliases: []string{"ns"}, header: []string{"NAME", "STATUS", "AGE"}, items: (*kstate).namespaceItems},
		{plural: "jobs", singular: "job", group: "batch", namespaced: true, items: (*kstate).jobItems},
		{plural: "clusterqueues", singular: "clusterqueue", group: kueueGroup, aliases: []string{"cq"}, items: (*kstate).clusterQueueItems},
		{plural: "localqueues", singular: "localqueue", group: kueueGroup, namespaced: true, aliases: []string{"queue", "queues", "lq"}, items: (*kstate).localQueueItems},
		{plural: "workloads", singular: "workload", group: kueueGroup, namespaced: true, aliases: []string{"wl"}, items: (*kstate).workloadItems},
	}
}

// findKind resolves a type as typed ("pods", "po", "pod", "jobs.batch").
func findKind(name string) *kubeKind {
	name = strings.ToLower(name)
	for _, k := range kubeKinds {
		for _, n := range append([]string{k.plural, k.singular}, k.aliases...) {
			if name == n || k.group != "" && name == n+"."+k.group {
				return k
			}
		}
	}
	return nil
}

// qualified is the type's name with its group, as -o name prints it.
func (k *kubeKind) qualified() string {
	if k.group == "" {
		return k.singular
	}
	return k.singular + "." + k.group
}

// resourceArgs reads "TYPE [NAME...]" or "TYPE/NAME...": the type and
// the names, or kubectl's error.
func (k *kubeRun) resourceArgs() (*kubeKind, []string, int) {
	args := k.inv.args
	if len(args) == 0 {
		return nil, nil, k.fail("You must specify the type of resource to %s. Use \"kubectl api-resources\" for a complete list of supported resources.\n\n"+
			"error: Required resource not specified.\nUse \"kubectl explain <resource>\" for a detailed description of that resource (e.g. kubectl explain pods).\n"+
			"See 'kubectl %s -h' for help and examples", k.inv.verb, k.inv.verb)
	}
	typ, names := args[0], args[1:]
	if t, _, ok := strings.Cut(args[0], "/"); ok {
		typ, names = t, nil
		for _, a := range args {
			at, an, ok := strings.Cut(a, "/")
			switch {
			case !ok:
				return nil, nil, k.fail("error: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'kubectl get resource/<resource_name>' instead of 'kubectl get resource resource/<resource_name>'")
			case !strings.EqualFold(at, t):
				return nil, nil, k.fail("error: the SIMULATED cluster takes one resource type at a time, not %q and %q", t, at)
			}
			names = append(names, an)
		}
	}
	if strings.Contains(typ, ",") {
		return nil, nil, k.fail("error: the SIMULATED cluster lists one resource type at a time, not %q", typ)
	}
	kind := findKind(typ)
	if kind == nil {
		s := k.h.Cluster.state()
		crd := s.crdOf(typ)
		k.h.Cluster.mu.Unlock()
		if crd != "" {
			return nil, nil, k.fail("error: the SIMULATED cluster serves no %s objects (the CRD is installed; nothing reads it here)", crd)
		}
		return nil, nil, k.fail("error: the server doesn't have a resource type %q", typ)
	}
	return kind, names, 0
}

// selected lists the items of kind the command names and selects, and
// prints a NotFound error for each name that is not there.
func (k *kubeRun) selected(s *kstate, kind *kubeKind, names []string) ([]kubeItem, int) {
	ns, all := k.namespace(), k.inv.bool("all-namespaces")
	var in []kubeItem
	for _, it := range kind.items(s) {
		if !kind.namespaced || all || it.ns == ns {
			in = append(in, it)
		}
	}
	code := 0
	if len(names) > 0 {
		var out []kubeItem
		for _, n := range names {
			found := false
			for _, it := range in {
				if it.name == n {
					out, found = append(out, it), true
					break
				}
			}
			if !found && !k.inv.bool("ignore-not-found") {
				k.t.eprint(notFound(kind.qualifiedPlural(), n) + "\n")
				code = 1
			}
		}
		in = out
	}
	out, err := k.filter(kind, in)
	if err != "" {
		return nil, k.fail("%s", err)
	}
	if by := k.inv.flags["sort-by"]; by != "" {
		path, perr := parsePath(strings.Trim(by, "{}"))
		if perr != nil {
			return nil, k.fail("error: couldn't parse sort-by field %q: %v", by, perr)
		}
		key := func(it kubeItem) string { return jpText(evalPath(it.obj(), path)) }
		sortBy(out, key)
	}
	return out, code
}

// qualifiedPlural is the plural with its group, as NotFound names it.
func (k *kubeKind) qualifiedPlural() string {
	if k.group == "" {
		return k.plural
	}
	return k.plural + "." + k.group
}

// filter applies --field-selector and --selector.
func (k *kubeRun) filter(kind *kubeKind, in []kubeItem) ([]kubeItem, string) {
	fs, err := parseSelector(k.inv.flags["field-selector"])
	if err != "" {
		return nil, "error: " + err
	}
	ls, err := parseSelector(k.inv.flags["selector"])
	if err != "" {
		return nil, "error: " + err
	}
	for _, term := range fs {
		if !slices.Contains(kind.fieldLabels(), term.key) {
			return nil, fmt.Sprintf("Error from server (BadRequest): Unable to find %q that match label selector %q, field selector %q: field label not supported: %s",
				kind.gvr(), k.inv.flags["selector"], k.inv.flags["field-selector"], term.key)
		}
	}
	var out []kubeItem
	for _, it := range in {
		if fs.matches(it.fields) && ls.matches(it.labels) {
			out = append(out, it)
		}
	}
	return out, ""
}

// fieldLabels are the fields a field selector may name for the type.
func (k *kubeKind) fieldLabels() []string {
	common := []string{"metadata.name", "metadata.namespace"}
	switch k.plural {
	case "pods":
		return append(common, "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
			"status.phase", "status.podIP", "status.nominatedNodeName")
	case "events":
		return append(common, "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
			"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type")
	case "nodes":
		return append(common, "spec.unschedulable")
	case "namespaces":
		return append(common, "status.phase")
	}
	return common
}

// gvr is the type as the API's errors name it: "/v1, Resource=pods".
func (k *kubeKind) gvr() string {
	gv := "/v1"
	switch k.group {
	case "batch":
		gv = "batch/v1"
	case "scheduling.k8s.io", "apiextensions.k8s.io":
		gv = k.group + "/v1"
	case kueueGroup:
		gv = kueueGroup + "/v1beta1"
	}
	return gv + ", Resource=" + k.plural
}

// selector is a parsed field or label selector: "a=b,c!=d,e".
type selector []struct {
	key, op, value string
}

func parseSelector(s string) (selector, string) {
	var sel selector
	if strings.TrimSpace(s) == "" {
		return nil, ""
	}
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		var key, op, value string
		switch {
		case strings.Contains(term, "!="):
			key, value, _ = strings.Cut(term, "!=")
			op = "!="
		case strings.Contains(term, "=="):
			key, value, _ = strings.Cut(term, "==")
			op = "="
		case strings.Contains(term, "="):
			key, value, _ = strings.Cut(term, "=")
			op = "="
		case strings.HasPrefix(term, "!"):
			key, op = term[1:], "!"
		default:
			key, op = term, "exists"
		}
		if key == "" {
			return nil, fmt.Sprintf("invalid selector: %q", s)
		}
		sel = append(sel, struct{ key, op, value string }{strings.TrimSpace(key), op, strings.TrimSpace(value)})
	}
	return sel, ""
}

// matches reports whether fields match every term.
func (sel selector) matches(fields map[string]string) bool {
	for _, t := range sel {
		v, has := fields[t.key]
		switch {
		case t.op == "=" && (!has || v != t.value), t.op == "!=" && has && v == t.value,
			t.op == "exists" && !has, t.op == "!" && has:
			return false
		}
	}
	return true
}

func (k *kubeRun) get() int {
	kind, names, code := k.resourceArgs()
	if kind == nil {
		return code
	}
	if k.inv.bool("watch") {
		return k.fail("error: the SIMULATED cluster does not watch: its objects change only through kubectl")
	}
	out := k.inv.flags["output"]
	if strings.HasPrefix(out, "jsonpath") {
		return k.getJSONPath(kind, names, out)
	}
	switch out {
	case "", "wide", "name":
	case "json", "yaml":
		return k.fail("error: the SIMULATED cluster does not print objects as %s: use -o jsonpath", out)
	default:
		return k.fail("error: unable to match a printer suitable for the output format %q, allowed formats are: custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml", out)
	}
	if out == "wide" && kind.plural == "events" {
		return k.fail("error: the SIMULATED cluster prints events only as a table, not -o wide")
	}
	if out != "name" && kind.header == nil {
		return k.fail("error: the SIMULATED cluster prints %s only with -o name or -o jsonpath", kind.plural)
	}
	s := k.h.Cluster.state()
	defer k.h.Cluster.mu.Unlock()
	items, code := k.selected(s, kind, names)
	if out == "name" {
		for _, it := range items {
			k.t.print(kind.qualified() + "/" + it.name + "\n")
		}
		return code
	}
	k.t.print(k.table(kind, items, out == "wide"))
	if len(items) == 0 && len(names) == 0 && !k.inv.bool("ignore-not-found") {
		if kind.namespaced && !k.inv.bool("all-namespaces") {
			k.t.eprint("No resources found in " + k.namespace() + " namespace.\n")
		} else {
			k.t.eprint("No resources found\n")
		}
	}
	return code
}

// table prints items as kubectl's table printer does.
func (k *kubeRun) table(kind *kubeKind, items []kubeItem, wide bool) string {
	withNS := kind.namespaced && k.inv.bool("all-namespaces")
	header := kind.header
	if wide {
		header = append(append([]string{}, header...), kind.wide...)
	}
	if withNS {
		header = append([]string{"NAMESPACE"}, header...)
	}
	var rows [][]string
	for _, it := range items {
		row := it.cells
		if wide {
			row = append(append([]string{}, row...), it.wide...)
		}
		if withNS {
			row = append([]string{it.ns}, row...)
		}
		rows = append(rows, row)
	}
	if k.inv.bool("no-headers") {
		text := printTable(header, rows)
		_, rest, _ := strings.Cut(text, "\n")
		return rest
	}
	return printTable(header, rows)
}

// getJSONPath is get -o jsonpath=TEMPLATE: over the list, or the object
// when one is named.
func (k *kubeRun) getJSONPath(kind *kubeKind, names []string, out string) int {
	tmpl, ok := strings.CutPrefix(out, "jsonpath=")
	if !ok {
		return k.fail("error: template format specified but no template given")
	}
	nodes, err := parseJSONPath(tmpl)
	if err != nil {
		return k.fail("error: error parsing jsonpath %s, %v", tmpl, err)
	}
	s := k.h.Cluster.state()
	items, code := k.selected(s, kind, names)
	var data any
	if len(names) == 1 && len(items) == 1 {
		data = items[0].obj()
	} else {
		var list []any
		for _, it := range items {
			list = append(list, it.obj())
		}
		data = map[string]any{"apiVersion": "v1", "kind": "List", "items": list, "metadata": map[string]any{"resourceVersion": ""}}
	}
	k.h.Cluster.mu.Unlock()
	if len(names) > 0 && len(items) == 0 {
		return code
	}
	text, err := executeJSONPath(nodes, data)
	if err != nil {
		return k.fail("error: error executing jsonpath %q: %v", tmpl, err)
	}
	k.t.print(text)
	return code
}
