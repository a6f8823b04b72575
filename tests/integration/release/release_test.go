// Package release tests the release path: make package's chart archive and
// Helm repository index, the install commands of docs/install.md run as
// written against a real apiserver (helm from the
// repository, the Addon CR with Harvester's own CRD, the air-gapped install
// from the archive), and publishing to a pages branch.
package release

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

// chartVersion is the version Chart.yaml, the Addon examples and the
// install commands of docs/install.md name.
const chartVersion = "0.1.0"

// pkg runs scripts/package into dist with the environment a release build
// has, and returns its log.
func pkg(t *testing.T, dist, version, repoURL string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(helmtest.Root(t), "scripts", "package"))
	cmd.Env = append(os.Environ(), "DIST="+dist, "VERSION="+version, "CHART_REPO_URL="+repoURL)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// serve serves a folder over HTTP, as GitHub Pages or any web server would.
func serve(t *testing.T, dir string) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL
}

type repoIndex struct {
	Entries map[string][]struct {
		Version    string   `json:"version"`
		AppVersion string   `json:"appVersion"`
		URLs       []string `json:"urls"`
		Digest     string   `json:"digest"`
		Created    string   `json:"created"`
	} `json:"entries"`
}

func readIndex(t *testing.T, path string) repoIndex {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var idx repoIndex
	require.NoError(t, yaml.Unmarshal(raw, &idx))
	return idx
}

// TestPackageWritesChartAndIndex: what make package leaves in dist/ without a
// Docker engine, and what it says about the image.
func TestPackageWritesChartAndIndex(t *testing.T) {
	helmtest.Helm(t)
	dist := t.TempDir()
	out, err := pkg(t, dist, "v"+chartVersion, "https://charts.example.com/hea")
	require.NoError(t, err, out)
	archive := filepath.Join(dist, "charts", "harvester-equinix-addon-"+chartVersion+".tgz")
	require.FileExists(t, archive)
	idx := readIndex(t, filepath.Join(dist, "charts", "index.yaml"))
	entries := idx.Entries[helmtest.Chart]
	require.Len(t, entries, 1)
	assert.Equal(t, chartVersion, entries[0].Version)
	assert.Equal(t, "v"+chartVersion, entries[0].AppVersion, "the chart runs the image of its own release")
	assert.Equal(t, []string{"https://charts.example.com/hea/harvester-equinix-addon-" + chartVersion + ".tgz"}, entries[0].URLs)
	if _, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		assert.Contains(t, out, "no Docker engine reachable: image harvester/harvester-equinix-addon:v"+chartVersion+" NOT built")
		assert.NoFileExists(t, filepath.Join(dist, "images"))
	}

	// The archive holds the whole chart, dashboard and schema included.
	show, err := helmtest.RunHelm(t, "show", "all", archive)
	require.NoError(t, err)
	for _, want := range []string{"version: " + chartVersion, "appVersion: v" + chartVersion, "monitoring:"} {
		assert.Contains(t, show, want)
	}
	files, err := helmtest.Run(exec.Command("tar", "-tzf", archive))
	require.NoError(t, err)
	for _, want := range []string{"harvester-equinix-addon/dashboards/harvester-equinix-addon.json", "harvester-equinix-addon/values.schema.json",
		"harvester-equinix-addon/files/crds/equinix.harvesterhci.io_instancepools.yaml",
		"harvester-equinix-addon/crds/metal.harvesterhci.io_inventories.yaml"} {
		assert.Contains(t, files, want)
	}
}

// TestPackageVersions: a release tag must match Chart.yaml (what the install
// page and the Addon examples name); any other build is a development chart pointing at
// its own image.
func TestPackageVersions(t *testing.T) {
	helmtest.Helm(t)
	out, err := pkg(t, t.TempDir(), "v9.9.9", "https://charts.example.com/hea")
	require.Error(t, err)
	assert.Contains(t, out, "release v9.9.9, but charts/harvester-equinix-addon/Chart.yaml has version "+chartVersion)

	dist := t.TempDir()
	out, err = pkg(t, dist, "0123abc-dirty", "https://charts.example.com/hea")
	require.NoError(t, err, out)
	entries := readIndex(t, filepath.Join(dist, "charts", "index.yaml")).Entries[helmtest.Chart]
	require.Len(t, entries, 1)
	assert.Equal(t, chartVersion+"-dev-0123abc-dirty", entries[0].Version)
	assert.Equal(t, "0123abc-dirty", entries[0].AppVersion)
}

// docBlocks returns the ```sh blocks of a section of a markdown file (a path
// from the repository's root), in order.
func docBlocks(t *testing.T, file, heading string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(helmtest.Root(t), file))
	require.NoError(t, err)
	doc := string(raw)
	start := strings.Index(doc, heading+"\n")
	require.GreaterOrEqual(t, start, 0, "%s has no %q", file, heading)
	section := doc[start+len(heading):]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	var cur []string
	indent, in := "", false
	for _, line := range strings.Split(section, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == "```sh":
			in, cur = true, nil
			indent = line[:strings.Index(line, "```")]
		case in && trimmed == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, strings.TrimPrefix(line, indent))
		}
	}
	require.False(t, in, "unterminated code block")
	return blocks
}
