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

// Every reason is declared once, spelled CamelCase, and has one value; the
// warnings are reasons of this file.
func TestReasonsAreOneVocabulary(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, 0)
	require.NoError(t, err)
	values := map[string]string{}
	camel := regexp.MustCompile(`^[A-Z][A-Za-z]+$`)
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit := vs.Values[i].(*ast.BasicLit)
				v, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				assert.True(t, strings.HasPrefix(name.Name, "Reason"), "%s", name.Name)
				assert.Regexp(t, camel, v)
				assert.Equal(t, "Reason"+v, name.Name, "a reason's name is Reason plus its value")
				if other, dup := values[v]; dup {
					t.Errorf("%s and %s both spell %q", other, name.Name, v)
				}
				values[v] = name.Name
			}
		}
	}
	for w := range warnings {
		assert.Contains(t, values, w, "warning %q is not a declared reason", w)
	}
	for s := range stalling {
		assert.Contains(t, values, s, "stalling reason %q is not a declared reason", s)
		assert.True(t, IsWarning(s), "a reason that needs a person to act is a Warning: %s", s)
	}
	assert.Equal(t, "Warning", EventType(ReasonNoCapacity))
	assert.Equal(t, "Normal", EventType(ReasonProvisioning))
}
