package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsBindToOptionsStructs holds the commands' shape (kubectl's): a
// flag is bound to a field of the command's options struct, made with
// &T{...} and run by its methods, never to a local variable a RunE
// closure then reads (var x string; Flags().StringVar(&x, ...)), nor to a
// field of a local struct value (var f flags; ...(&f.x)).
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
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			values := map[string]bool{} // locals declared as struct values: var f T, f := T{}
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
						if _, lit := r.(*ast.CompositeLit); lit && i < len(n.Lhs) {
							if id, ok := n.Lhs[i].(*ast.Ident); ok {
								values[id.Name] = true
							}
						}
					}
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok || !strings.HasSuffix(strings.TrimSuffix(sel.Sel.Name, "P"), "Var") || len(n.Args) == 0 {
						return true
					}
					addr, ok := n.Args[0].(*ast.UnaryExpr)
					if !ok || addr.Op != token.AND {
						return true
					}
					bound++
					at := fset.Position(n.Pos())
					switch x := addr.X.(type) {
					case *ast.Ident:
						t.Errorf("%s: %s binds a flag to the local variable %s: bind it to a field of the command's options struct", at, fn.Name.Name, x.Name)
					case *ast.SelectorExpr:
						if root, ok := rootIdent(x); ok && values[root] {
							t.Errorf("%s: %s binds a flag to a field of %s, a struct value local to it: make the options struct with &T{} and run the command by its methods", at, fn.Name.Name, root)
						}
					}
				}
				return true
			})
		}
	}
	if bound < 40 {
		t.Fatalf("only %d flags bound: the test no longer sees how cli binds them", bound)
	}
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
