package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
)

// TestPublishChart runs scripts/publish-chart, what the pipeline runs on a
// tag, against a local git remote standing in for GitHub: the first release
// starts the pages branch, a second build is added next to it with the first
// entry untouched, a rerun of a release changes nothing, and a different chart
// under a published version is refused. The branch, served over HTTP, is a
// Helm repository helm can install from.
func TestPublishChart(t *testing.T) {
	helmBin := helmtest.Helm(t)
	remote := filepath.Join(t.TempDir(), "pages.git")
	git(t, "", "init", "--quiet", "--bare", remote)
	checkout := t.TempDir()
	url := serve(t, checkout)

	publish := func(dist, version string) (string, error) {
		t.Helper()
		cmd := exec.Command(filepath.Join(helmtest.Root(t), "scripts", "publish-chart"))
		cmd.Env = append(os.Environ(), "DIST="+dist, "VERSION="+version, "CHART_REPO_URL="+url,
			"PAGES_REMOTE="+remote, "GITHUB_TOKEN=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	commits := func() int {
		t.Helper()
		out := git(t, "", "--git-dir", remote, "rev-list", "--count", "gh-pages")
		n := 0
		for _, c := range strings.TrimSpace(out) {
			n = n*10 + int(c-'0')
		}
		return n
	}

	release := t.TempDir()
	out, err := pkg(t, release, "v"+chartVersion, url)
	require.NoError(t, err, out)
	out, err = publish(release, "v"+chartVersion)
	require.NoError(t, err, out)
	assert.Contains(t, out, "gh-pages does not exist yet")
	assert.Equal(t, 1, commits())

	// The same release packaged again (a rerun of the pipeline): nothing to do.
	rerun := t.TempDir()
	out, err = pkg(t, rerun, "v"+chartVersion, url)
	require.NoError(t, err, out)
	out, err = publish(rerun, "v"+chartVersion)
	require.NoError(t, err, out)
	assert.Contains(t, out, "already published")
	assert.Equal(t, 1, commits())

	git(t, "", "clone", "--quiet", "--branch", "gh-pages", remote, checkout)
	first := readIndex(t, filepath.Join(checkout, "index.yaml")).Entries[helmtest.Chart]
	require.Len(t, first, 1)
	assert.FileExists(t, filepath.Join(checkout, ".nojekyll"))

	// A later build lands next to the release, which keeps its entry.
	dev := t.TempDir()
	out, err = pkg(t, dev, "abc1234", url)
	require.NoError(t, err, out)
	out, err = publish(dev, "abc1234")
	require.NoError(t, err, out)
	assert.Equal(t, 2, commits())
	git(t, checkout, "pull", "--quiet")
	entries := readIndex(t, filepath.Join(checkout, "index.yaml")).Entries[helmtest.Chart]
	require.Len(t, entries, 2)
	versions := map[string]int{}
	for i, e := range entries {
		versions[e.Version] = i
	}
	require.Contains(t, versions, chartVersion)
	require.Contains(t, versions, chartVersion+"-dev-abc1234")
	kept := entries[versions[chartVersion]]
	assert.Equal(t, first[0].Digest, kept.Digest)
	assert.Equal(t, first[0].Created, kept.Created)

	// A different chart under a version already out there is refused.
	tampered := t.TempDir()
	out, err = pkg(t, tampered, "v"+chartVersion, url)
	require.NoError(t, err, out)
	archive := filepath.Join(tampered, "charts", "harvester-equinix-addon-"+chartVersion+".tgz")
	work := t.TempDir()
	_, err = helmtest.Run(exec.Command("tar", "-xzf", archive, "-C", work))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(work, "harvester-equinix-addon", "README.extra"), []byte("changed\n"), 0o644))
	_, err = helmtest.Run(exec.Command("tar", "-czf", archive, "-C", work, "harvester-equinix-addon"))
	require.NoError(t, err)
	out, err = publish(tampered, "v"+chartVersion)
	require.Error(t, err)
	assert.Contains(t, out, "already published with different content")
	assert.Equal(t, 2, commits())

	// The branch is a Helm repository.
	home := t.TempDir()
	for _, args := range [][]string{
		{"repo", "add", "pages", url},
		{"pull", "pages/" + helmtest.Chart, "--version", chartVersion, "--destination", home},
	} {
		cmd := exec.Command(helmBin, args...)
		cmd.Env = helmtest.HelmEnv(home)
		_, err := helmtest.Run(cmd)
		require.NoError(t, err)
	}
	assert.FileExists(t, filepath.Join(home, "harvester-equinix-addon-"+chartVersion+".tgz"))
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := helmtest.Run(cmd)
	require.NoError(t, err)
	return out
}
