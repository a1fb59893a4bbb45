package fence

import (
	"encoding/json"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// fieldOwner is the manager that last set the field at path (FieldsV1
// keys: "f:spec", "f:unschedulable") in n's managedFields, as the API
// server records it for every write (kubectl cordon writes as
// kubectl-cordon, NVSentinel's quarantine as its own name), and when.
// Status writes are not looked at: a cordon or a taint is spec.
func fieldOwner(n *corev1.Node, path ...string) (string, time.Time) {
	return owner(n, func(fields map[string]any) bool {
		_, ok := walk(fields, path...)
		return ok
	})
}

// taintOwner is the manager that added taint t (its key and effect).
// A node's taints are an atomic list: the API server records only who
// wrote the list last. That is who added t unless it is gpulab, which
// writes only its own taint: then another's taint was there before, and
// its author is no longer recorded ("").
func taintOwner(n *corev1.Node, t corev1.Taint) (string, time.Time) {
	m, at := owner(n, func(fields map[string]any) bool {
		taints, ok := walk(fields, "f:spec", "f:taints")
		if !ok {
			return false
		}
		items, _ := taints.(map[string]any)
		if len(items) == 0 { // atomic: the whole list
			return true
		}
		for k := range items {
			var id struct{ Key, Effect string }
			if raw, ok := strings.CutPrefix(k, "k:"); ok && json.Unmarshal([]byte(raw), &id) == nil && id.Key == t.Key && id.Effect == string(t.Effect) {
				return true
			}
		}
		return false
	})
	if m == FieldManager {
		return "", time.Time{}
	}
	return m, at
}

func owner(n *corev1.Node, owns func(map[string]any) bool) (string, time.Time) {
	for _, e := range n.ManagedFields {
		if e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if json.Unmarshal(e.FieldsV1.Raw, &fields) != nil || !owns(fields) {
			continue
		}
		var at time.Time
		if e.Time != nil {
			at = e.Time.Time
		}
		return e.Manager, at
	}
	return "", time.Time{}
}

func walk(m map[string]any, path ...string) (any, bool) {
	var cur any = m
	for _, k := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// Slug is reason as a label value (the taint's value): at most 63
// characters of [a-z0-9._-], beginning and ending alphanumeric, "fenced"
// when nothing is left. The whole reason is in the AnnReason annotation.
func Slug(reason string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(reason) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_'
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 63 {
			break
		}
	}
	s := b.String()
	if len(s) > 63 {
		s = s[:63]
	}
	s = strings.TrimRight(s, "-._")
	if s == "" {
		return "fenced"
	}
	return s
}
