package app

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The controller's binary is what runs in users' clusters; the simulators
// and the test harness have their own commands under tests/cmd and must not
// be linked into it, not even through a package this one imports.
func TestControllerLinksNoSimulatorOrTestCode(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	require.NoError(t, err, "go list -deps of the controller")
	notShipped := regexp.MustCompile(`^github\.com/harvester/harvester-equinix-addon/tests(/|$)`)
	var linked []string
	for _, pkg := range strings.Fields(string(out)) {
		if notShipped.MatchString(pkg) {
			linked = append(linked, pkg)
		}
	}
	assert.Empty(t, linked, "the controller links packages that must stay out of it")
	assert.Contains(t, strings.Fields(string(out)), "github.com/harvester/harvester-equinix-addon/pkg/app",
		"go list did not list the controller's own packages")
}
