package app

import (
	"encoding/json"
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

// The addon's go.mod names directly only modules the controller links, and
// testify for the unit tests: what only the test tree needs (GoBGP for the
// BGP routers, say) lives in a module of its own under tests/, so a reader
// of go.mod, or a scanner of the image's dependencies, meets no test code.
func TestGoModRequiresOnlyWhatTheControllerLinks(t *testing.T) {
	list := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")
	list.Dir = "../.."
	out, err := list.Output()
	require.NoError(t, err, "go list -deps of the controller")
	linked := map[string]bool{"github.com/stretchr/testify": true}
	for _, m := range strings.Fields(string(out)) {
		linked[m] = true
	}
	edit := exec.Command("go", "mod", "edit", "-json")
	edit.Dir = "../.."
	raw, err := edit.Output()
	require.NoError(t, err, "go mod edit -json")
	var gomod struct {
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	require.NoError(t, json.Unmarshal(raw, &gomod))
	var unlinked []string
	for _, r := range gomod.Require {
		if !r.Indirect && !linked[r.Path] {
			unlinked = append(unlinked, r.Path)
		}
	}
	assert.Empty(t, unlinked, "go.mod requires modules the controller does not link")
	assert.NotEmpty(t, gomod.Require, "go mod edit -json read no requirement")
}
