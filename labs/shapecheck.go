package labs

import (
	"fmt"
	"reflect"
	"strings"

	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"

	"github.com/gpulab/gpulab/internal/suggest"
	"github.com/gpulab/gpulab/step/parse"
)

// sampleShape is what samples holds: the probe's samples of a sampling
// step, as the expression reads them.
var sampleShape = &parse.Shape{Type: "list", Elem: parse.ShapeOfType(reflect.TypeFor[Sample]())}

// checkShape is what checks holds for each check: its status and summary.
var checkShape = &parse.Shape{Type: "object", Fields: []parse.Field{
	{Key: "status", Shape: &parse.Shape{Type: "string"}},
	{Key: "summary", Shape: &parse.Shape{Type: "string"}},
}}

// checksShape is what checks holds on a step whose output the rules
// named judge: a check by each name.
func checksShape(rules []string) *parse.Shape {
	s := &parse.Shape{Type: "object"}
	for _, r := range rules {
		s.Fields = append(s.Fields, parse.Field{Key: r, Shape: checkShape})
	}
	return s
}

// readShapes holds the keys an expression reads (out.gpus[0].uuid,
// samples, checks['x'].status) to the shapes of the variables it reads:
// out as the step's parser writes it (nil: no parser, not checked),
// checks by the rules that judge that parser's output. A
// key that cannot be there is found at lab check, not at run time as an
// UNKNOWN "no such key". Each problem names the key and the keys there
// are.
func readShapes(p *program, out *parse.Shape, rules []string) []shapeProblem {
	vars := map[string]*parse.Shape{"samples": sampleShape, "checks": checksShape(rules)}
	if out != nil {
		vars["out"] = out
	}
	w := &shapeWalk{}
	w.expr(p.ast.Expr(), vars)
	return w.problems
}

type shapeWalk struct {
	problems []shapeProblem
	// roots are the loop variables by the variable they range over
	// (s in samples.map(s, ...) is samples').
	roots map[string]string
}

// shapeProblem is a key that cannot be there, and the variable (out,
// samples, checks) it was read from.
type shapeProblem struct {
	root, msg string
}

// rootOf is the variable an expression reads from: out for out.gpus[0],
// samples for a loop's s over samples.
func (w *shapeWalk) rootOf(e celast.Expr) string {
	for {
		switch e.Kind() {
		case celast.IdentKind:
			if r, ok := w.roots[e.AsIdent()]; ok {
				return r
			}
			return e.AsIdent()
		case celast.SelectKind:
			e = e.AsSelect().Operand()
		case celast.CallKind:
			c := e.AsCall()
			switch {
			case c.IsMemberFunction():
				e = c.Target()
			case len(c.Args()) > 0:
				e = c.Args()[0]
			default:
				return ""
			}
		default:
			return ""
		}
	}
}

// expr walks e and returns the shape of its value, nil when it is not
// known (a literal, a function's result, a variable not checked).
func (w *shapeWalk) expr(e celast.Expr, vars map[string]*parse.Shape) *parse.Shape {
	switch e.Kind() {
	case celast.IdentKind:
		return vars[e.AsIdent()]
	case celast.SelectKind:
		sel := e.AsSelect()
		return w.key(w.expr(sel.Operand(), vars), sel.Operand(), sel.FieldName(), false)
	case celast.CallKind:
		return w.call(e.AsCall(), vars)
	case celast.ComprehensionKind:
		w.comprehension(e.AsComprehension(), vars)
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.expr(el, vars)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			w.expr(en.AsMapEntry().Key(), vars)
			w.expr(en.AsMapEntry().Value(), vars)
		}
	}
	return nil
}

func (w *shapeWalk) call(c celast.CallExpr, vars map[string]*parse.Shape) *parse.Shape {
	args := c.Args()
	switch fn := c.FunctionName(); {
	case (fn == "_[_]" || fn == "_[?_]") && len(args) == 2:
		s := w.expr(args[0], vars)
		w.expr(args[1], vars)
		switch {
		case s == nil:
			return nil
		case s.Type == "list" || s.Type == "map":
			return s.Elem
		case s.Type == "object":
			if name, ok := stringLiteral(args[1]); ok {
				return w.key(s, args[0], name, true)
			}
		}
		return nil
	case fn == "_?._" && len(args) == 2:
		name, _ := stringLiteral(args[1])
		return w.key(w.expr(args[0], vars), args[0], name, false)
	}
	if c.IsMemberFunction() {
		w.expr(c.Target(), vars)
	}
	for _, a := range args {
		w.expr(a, vars)
	}
	return nil
}

// comprehension walks a macro's loop (all, exists, map, filter) with its
// variables bound to what they range over: g in out.gpus.all(g, g.uuid
// != "") is one of out.gpus.
func (w *shapeWalk) comprehension(c celast.ComprehensionExpr, vars map[string]*parse.Shape) {
	r := w.expr(c.IterRange(), vars)
	w.expr(c.AccuInit(), vars)
	inner := make(map[string]*parse.Shape, len(vars)+2)
	for k, v := range vars {
		inner[k] = v
	}
	var first, second *parse.Shape
	if r != nil {
		switch r.Type {
		case "list":
			first, second = r.Elem, r.Elem
			if c.HasIterVar2() {
				first = &parse.Shape{Type: "number"} // the index
			}
		case "map":
			first, second = &parse.Shape{Type: "string"}, r.Elem
		}
	}
	inner[c.IterVar()] = first
	if c.HasIterVar2() {
		inner[c.IterVar2()] = second
	}
	if w.roots == nil {
		w.roots = map[string]string{}
	}
	root := w.rootOf(c.IterRange())
	w.roots[c.IterVar()] = root
	if c.HasIterVar2() {
		w.roots[c.IterVar2()] = root
	}
	inner[c.AccuVar()] = nil
	w.expr(c.LoopCondition(), inner)
	w.expr(c.LoopStep(), inner)
	w.expr(c.Result(), inner)
}

// key is what s holds under name, reading from the expression from; a
// key s cannot hold is a problem.
func (w *shapeWalk) key(s *parse.Shape, from celast.Expr, name string, bracket bool) *parse.Shape {
	if s == nil || name == "" {
		return nil
	}
	at := exprText(from)
	written := at + "." + name // as the author wrote it: out.gpus, checks["nvlink-mesh"]
	if bracket {
		written = fmt.Sprintf("%s[%q]", at, name)
	}
	root := w.rootOf(from)
	switch s.Type {
	case "object":
		if f, ok := s.Field(name); ok {
			return f.Shape
		}
		keys := s.Keys()
		w.problems = append(w.problems, shapeProblem{root, fmt.Sprintf("%s: %s has no key %q%s (its keys: %s)",
			written, at, name, suggest.Hint(name, keys), strings.Join(keys, ", "))})
	case "map":
		return s.Elem
	case "list":
		if _, ok := s.Elem.Field(name); s.Elem.Type == "object" && !ok {
			// Its items lack the key too: suggesting out[0].KEY would send
			// the author to a second round; say what the items hold.
			keys := s.Elem.Keys()
			w.problems = append(w.problems, shapeProblem{root, fmt.Sprintf("%s.%s: %s is a %s, and its items have no key %q%s either (their keys: %s)",
				at, name, at, s.Word(), name, suggest.Hint(name, keys), strings.Join(keys, ", "))})
			break
		}
		w.problems = append(w.problems, shapeProblem{root, fmt.Sprintf("%s.%s: %s is a %s, with no keys of its own: take one of them (%s[0].%s) or each (%s.all(x, x.%s ...))",
			at, name, at, s.Word(), at, name, at, name)})
	case "any":
	default:
		w.problems = append(w.problems, shapeProblem{root, fmt.Sprintf("%s.%s: %s is a %s, with no keys", at, name, at, s.Word())})
	}
	return nil
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// exprText writes the part of an expression that leads to a key, as the
// author wrote it: out.gpus[0], g (a loop's variable).
func exprText(e celast.Expr) string {
	switch e.Kind() {
	case celast.IdentKind:
		return e.AsIdent()
	case celast.SelectKind:
		return exprText(e.AsSelect().Operand()) + "." + e.AsSelect().FieldName()
	case celast.CallKind:
		c := e.AsCall()
		if (c.FunctionName() == "_[_]" || c.FunctionName() == "_[?_]") && len(c.Args()) == 2 {
			idx := "…"
			if c.Args()[1].Kind() == celast.LiteralKind {
				idx = fmt.Sprint(c.Args()[1].AsLiteral().Value())
				if s, ok := stringLiteral(c.Args()[1]); ok {
					idx = fmt.Sprintf("%q", s)
				}
			}
			return exprText(c.Args()[0]) + "[" + idx + "]"
		}
	}
	return "(…)"
}
