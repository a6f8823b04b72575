package v1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every reason is declared once, with its kind, spelled CamelCase, and has
// one value; the table holds exactly the reasons of this file.
func TestReasonsAreOneVocabulary(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, 0)
	require.NoError(t, err)
	values := map[string]string{}
	camel := regexp.MustCompile(`^[A-Z][A-Za-z]+$`)
	kinds := map[string]bool{"normal": true, "warning": true, "stalling": true}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		require.Equal(t, token.VAR, gen.Tok, "reasons.go declares reasons only")
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				call, ok := vs.Values[i].(*ast.CallExpr)
				require.True(t, ok, "%s is declared with its kind", name.Name)
				kind := call.Fun.(*ast.Ident).Name
				assert.True(t, kinds[kind], "%s: %s is no kind of reason", name.Name, kind)
				require.Len(t, call.Args, 1)
				v, err := strconv.Unquote(call.Args[0].(*ast.BasicLit).Value)
				require.NoError(t, err)
				assert.True(t, strings.HasPrefix(name.Name, "Reason"), "%s", name.Name)
				assert.Regexp(t, camel, v)
				assert.Equal(t, "Reason"+v, name.Name, "a reason's name is Reason plus its value")
				if other, dup := values[v]; dup {
					t.Errorf("%s and %s both spell %q", other, name.Name, v)
				}
				values[v] = name.Name
				r, ok := ReasonOf(v)
				assert.True(t, ok, "%s is in the table", v)
				assert.Equal(t, kind != "normal", r.Warning, "%s is %s", v, kind)
				assert.Equal(t, kind == "stalling", r.Stalls, "%s is %s", v, kind)
			}
		}
	}
	assert.Len(t, reasons, len(values), "the table holds the reasons of reasons.go, no other")
	for _, r := range reasons {
		if r.Stalls {
			assert.True(t, IsWarning(r.Name), "a reason that needs a person to act is a Warning: %s", r.Name)
		}
	}
	assert.Equal(t, "Warning", EventType(ReasonNoCapacity))
	assert.Equal(t, "Normal", EventType(ReasonProvisioning))
	_, ok := ReasonOf("NotAReason")
	assert.False(t, ok)
	assert.Equal(t, "Normal", EventType("NotAReason"), "a reason from elsewhere (a Node condition's) is no Warning")
}
