package app

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The configuration page's flag table is the user's reference: every flag
// and its environment variable must be in it.
func TestConfigurationPageDocumentsEveryFlag(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err)
	page := string(raw)
	for _, f := range New().Flags {
		name := f.Names()[0]
		assert.Contains(t, page, "`--"+name+"`", "docs/configuration.md does not document --%s", name)
		if ev, ok := f.(interface{ GetEnvVars() []string }); ok {
			for _, e := range ev.GetEnvVars() {
				assert.Contains(t, page, "`"+e+"`", "docs/configuration.md does not document %s", e)
			}
		}
	}
}

func TestEveryFlagHasAnEnvVar(t *testing.T) {
	for _, f := range New().Flags {
		ev, ok := f.(interface{ GetEnvVars() []string })
		require.True(t, ok)
		assert.NotEmpty(t, ev.GetEnvVars(), "--%s has no environment variable", f.Names()[0])
		for _, e := range ev.GetEnvVars() {
			assert.Equal(t, strings.ToUpper(e), e)
		}
	}
}
