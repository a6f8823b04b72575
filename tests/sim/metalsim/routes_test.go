package metalsim

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sdkService matches the SDK's service fields (c.api.DevicesApi, ...).
var sdkService = regexp.MustCompile(`^[A-Z][A-Za-z]*Api$`)

// clientOperations are the operationIds of the SDK methods the addon's
// client (pkg/metal, outside its tests) calls: every selector
// <something>.<Service>Api.<Method>, with the method's first letter
// lowered, which is the operationId behind it (DevicesApi.CreateDevice is
// createDevice).
func clientOperations(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "pkg", "metal", "*.go"))
	require.NoError(t, err)
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if service, ok := sel.X.(*ast.SelectorExpr); ok && sdkService.MatchString(service.Sel.Name) {
				name := []rune(sel.Sel.Name)
				name[0] = unicode.ToLower(name[0])
				seen[string(name)] = true
			}
			return true
		})
	}
	require.NotEmpty(t, seen, "no SDK call found in pkg/metal")
	out := make([]string, 0, len(seen))
	for op := range seen {
		out = append(out, op)
	}
	slices.Sort(out)
	return out
}

// The simulator serves the Metal API the addon's client calls, and no more:
// a route nothing calls is behaviour no test checks against the real
// service, and a call without a route would only ever meet the catch-all
// 404. (The metadata service and the admin API under /_sim are not the
// Metal API and are not listed here.)
func TestRoutesAreTheClientsOperations(t *testing.T) {
	var served []string
	for _, rt := range apiRoutes {
		served = append(served, rt.op)
	}
	slices.Sort(served)
	assert.Equal(t, clientOperations(t), served)
}
