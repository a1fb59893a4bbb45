package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFlagsBindToOptionsStructs holds the commands' shape (kubectl's): a
// flag is bound to a field of the command's options struct, made with
// &T{...} and run by its methods. It fails on every other way to reach a
// flag's value from a closure: a local variable (var x string;
// Flags().StringVar(&x, ...)); a field of a local struct value (var f T,
// f := T{}, f := mk(), or through p := &f); a pflag.Value wrapping such a
// place (Flags().Var(v{&x}, ...)); the pointer Flags().String() returns;
// and reading a flag back by name (Flags().GetString("n")).
func TestFlagsBindToOptionsStructs(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	bound := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
				bound += checkFlagBinds(t, fset, fn)
			}
		}
	}
	if bound < 40 {
		t.Fatalf("only %d flags bound: the test no longer sees how cli binds them", bound)
	}
}

// flagTypes are the pflag.FlagSet methods that make a flag and return a
// pointer to its value (String, BoolP, DurationSlice...).
var flagTypes = regexp.MustCompile(`^(String|Bool|Int|Int8|Int16|Int32|Int64|Uint|Uint8|Uint16|Uint32|Uint64|Float32|Float64|Duration|IP|IPMask|IPNet|Count|BytesHex|BytesBase64)(Slice|Array|ToString|ToInt|ToInt64)?P?$|^StringTo`)

// checkFlagBinds reports each flag fn binds outside an options struct made
// with &T{}, and returns how many it binds.
func checkFlagBinds(t *testing.T, fset *token.FileSet, fn *ast.FuncDecl) int {
	t.Helper()
	bound := 0
	// values are the locals that hold a struct value, or point at one: var
	// f T; f := T{}; f := mk(); p := &f.
	values := map[string]bool{}
	isFlags := func(e ast.Expr) bool { // cmd.Flags(), c.PersistentFlags()
		c, ok := e.(*ast.CallExpr)
		if !ok {
			return false
		}
		sel, ok := c.Fun.(*ast.SelectorExpr)
		return ok && strings.HasSuffix(sel.Sel.Name, "Flags")
	}
	local := func(e ast.Expr) (string, bool) { // a local, or a field of a local value
		switch x := e.(type) {
		case *ast.Ident:
			return x.Name, x.Obj != nil && x.Obj.Kind == ast.Var && !isParam(fn, x.Name)
		case *ast.SelectorExpr:
			if root, ok := rootIdent(x); ok && values[root] {
				return root, true
			}
		}
		return "", false
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.DeclStmt:
			if g, ok := n.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, s := range g.Specs {
					for _, name := range s.(*ast.ValueSpec).Names {
						values[name.Name] = true
					}
				}
			}
		case *ast.AssignStmt:
			for i, r := range n.Rhs {
				id, ok := n.Lhs[min(i, len(n.Lhs)-1)].(*ast.Ident)
				if !ok {
					continue
				}
				switch r := r.(type) {
				case *ast.CompositeLit:
					values[id.Name] = true
				case *ast.CallExpr:
					if sel, ok := r.Fun.(*ast.SelectorExpr); ok && isFlags(sel.X) && flagTypes.MatchString(sel.Sel.Name) {
						t.Errorf("%s: %s keeps the pointer Flags().%s returns in %s: bind the flag to a field of the command's options struct", fset.Position(r.Pos()), fn.Name.Name, sel.Sel.Name, id.Name)
					} else if !isConstructor(r) {
						values[id.Name] = true // what a call returns may be a struct value
					}
				case *ast.UnaryExpr:
					if root, ok := rootIdent(r.X); ok && r.Op == token.AND && values[root] {
						values[id.Name] = true
					}
				}
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || len(n.Args) == 0 {
				return true
			}
			name := sel.Sel.Name
			if isFlags(sel.X) && strings.HasPrefix(name, "Get") {
				t.Errorf("%s: %s reads the flag %s back by name (%s): read the options struct's field", fset.Position(n.Pos()), fn.Name.Name, exprText(n.Args[0]), name)
				return true
			}
			switch {
			case name == "Var" || name == "VarP" || name == "VarPF":
				// A pflag.Value: whatever place it wraps must not be a local.
				bound++
				ast.Inspect(n.Args[0], func(m ast.Node) bool {
					if u, ok := m.(*ast.UnaryExpr); ok && u.Op == token.AND {
						if root, bad := local(u.X); bad {
							t.Errorf("%s: %s binds a flag (a pflag.Value) to %s, local to it: bind it to a field of the command's options struct", fset.Position(n.Pos()), fn.Name.Name, root)
						}
					}
					return true
				})
			case strings.HasSuffix(strings.TrimSuffix(name, "P"), "Var"):
				addr, ok := n.Args[0].(*ast.UnaryExpr)
				if !ok || addr.Op != token.AND {
					return true
				}
				bound++
				if root, bad := local(addr.X); bad {
					t.Errorf("%s: %s binds a flag to %s, local to it: make the options struct with &T{} and run the command by its methods", fset.Position(n.Pos()), fn.Name.Name, root)
				}
			}
		}
		return true
	})
	return bound
}

// isParam reports whether name is one of fn's parameters (an options
// struct passed in is a pointer the caller made).
func isParam(fn *ast.FuncDecl, name string) bool {
	for _, f := range fn.Type.Params.List {
		for _, n := range f.Names {
			if n.Name == name {
				return true
			}
		}
	}
	return false
}

// isConstructor reports whether c makes a pointer by gpulab's naming
// (newX(...), &T{} returned by New...) or new(T).
func isConstructor(c *ast.CallExpr) bool {
	var name string
	switch f := c.Fun.(type) {
	case *ast.Ident:
		name = f.Name
	case *ast.SelectorExpr:
		name = f.Sel.Name
	}
	return name == "new" || strings.HasPrefix(name, "new") || strings.HasPrefix(name, "New")
}

func exprText(e ast.Expr) string {
	if l, ok := e.(*ast.BasicLit); ok {
		return l.Value
	}
	return "?"
}

func rootIdent(e ast.Expr) (string, bool) {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return x.Name, true
		case *ast.SelectorExpr:
			e = x.X
		default:
			return "", false
		}
	}
}
