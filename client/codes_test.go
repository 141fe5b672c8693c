package client

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/anteroom/anteroom/web/kit"
)

// TestCodesAreTheNodes reads every Err* constant of errors.go and requires
// its value to be a code of the node's error table (web/kit), so a typo or
// a code the node no longer answers fails here.
func TestCodesAreTheNodes(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	known := kit.Codes()
	found := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || len(n.Name) < 4 || n.Name[:3] != "Err" {
					continue
				}
				code, _ := strconv.Unquote(lit.Value)
				found++
				if !slices.Contains(known, code) {
					t.Errorf("%s = %q is not a code of the node's error table %v", n.Name, code, known)
				}
			}
		}
	}
	if found < 20 {
		t.Errorf("found %d codes in errors.go, want the constants read", found)
	}
}
