package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

const (
	pagesURL  = "https://harvester.github.io/harvester-equinix-addon"
	mirrorURL = "https://charts.example.com/harvester-equinix-addon"
)

var placeholder = regexp.MustCompile(`<[^<>\n]+>`)

// TestInstallPageWorksAsWritten runs every shell block of the install
// page's Equinix Metal section and then of its air-gapped section, in
// order, against a real apiserver, with the chart that scripts/package builds
// standing in for the published one: the chart repository and the air-gapped
// mirror are served from dist/ over HTTP at the addresses the pages name. The
// cluster has what a Harvester cluster brings that the pages rely on: the
// harvester-system namespace and Harvester's own Addon CRD (nothing acts on
// the Addon here). Only the docker commands are left out: the tests do not
// assume a Docker engine.
func TestInstallPageWorksAsWritten(t *testing.T) {
	c := shared.Require(t)
	helmBin := helmtest.Helm(t)
	ctx := context.Background()
	root := helmtest.Root(t)
	k8s, err := kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	_, err = helmtest.Kubectl(c, "", "create", "namespace", helmtest.Namespace)
	require.NoError(t, err)
	addonCRD, err := upstream.HarvesterCRD(root, "harvesterhci.io_addons.yaml")
	require.NoError(t, err)
	_, err = helmtest.Kubectl(c, "", "apply", "--server-side", "-f", addonCRD)
	require.NoError(t, err)
	_, err = helmtest.Kubectl(c, "", "wait", "--for=condition=Established", "crd/addons.harvesterhci.io")
	require.NoError(t, err)

	// The release: dist/ as scripts/package writes it; its charts folder is
	// the published repository, and (after the install page re-indexes it) the mirror.
	dist := t.TempDir()
	pages := t.TempDir()
	pagesServer, mirrorServer := serve(t, pages), serve(t, filepath.Join(dist, "charts"))
	out, err := pkg(t, dist, "v"+chartVersion, pagesServer)
	require.NoError(t, err, out)
	copyDir(t, filepath.Join(dist, "charts"), pages)

	rewrite := strings.NewReplacer(pagesURL, pagesServer, mirrorURL, mirrorServer, "dist/", dist+"/")
	helmHome := t.TempDir()
	env := append(helmtest.HelmEnv(helmHome),
		"KUBECONFIG="+c.Kubeconfig,
		"PATH="+cluster.DefaultBinDir()+string(os.PathListSeparator)+filepath.Dir(helmBin)+string(os.PathListSeparator)+os.Getenv("PATH"))

	blocks := append(docBlocks(t, "docs/install.md", "## Equinix Metal pools"),
		docBlocks(t, "docs/install.md", "## Air-gapped clusters")...)
	ran, skipped := 0, 0
	for _, block := range blocks {
		if strings.Contains(block, "docker ") {
			skipped++
			continue
		}
		script := placeholder.ReplaceAllString(rewrite.Replace(block), "placeholder-value")
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "install block failed:\n%s\n---\n%s", block, out)
		ran++
	}
	assert.Equal(t, 1, skipped, "one block needs Docker")
	assert.GreaterOrEqual(t, ran, 6, "fewer install blocks than expected: %q", blocks)

	// What the pages promised.
	secret, err := k8s.CoreV1().Secrets(helmtest.Namespace).Get(ctx, "equinix-addon", metav1.GetOptions{})
	require.NoError(t, err)
	for _, key := range []string{"METAL_AUTH_TOKEN", "PROJECT_ID", "JOIN_TOKEN"} {
		assert.Contains(t, secret.Data, key)
	}
	repo, err := helmtest.Kubectl(c, "", "get", "addon", helmtest.Release, "-n", helmtest.Namespace, "-o", "jsonpath={.spec.repo}@{.spec.version}")
	require.NoError(t, err)
	assert.Equal(t, pagesURL+"@"+chartVersion, repo)

	helmRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(helmBin, append(args, "--kubeconfig", c.Kubeconfig)...)
		cmd.Env = env
		out, err := helmtest.Run(cmd)
		require.NoError(t, err)
		return out
	}
	// Installed from the repository, then upgraded from the archive.
	history := helmRun("history", helmtest.Release, "-n", helmtest.Namespace, "-o", "yaml")
	assert.Equal(t, 2, strings.Count(history, "chart: harvester-equinix-addon-"+chartVersion), history)
	assert.Contains(t, history, "status: deployed")
	d, err := k8s.AppsV1().Deployments(helmtest.Namespace).Get(ctx, helmtest.Release, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "registry.example.com/harvester/harvester-equinix-addon:v"+chartVersion, d.Spec.Template.Spec.Containers[0].Image)
	pool, err := helmtest.Kubectl(c, "", "get", "instancepool", "harvester-pxe-worker", "-o", "jsonpath={.spec.count}/{.spec.plan}")
	require.NoError(t, err)
	assert.Equal(t, "1/c3.small.x86", pool)

	// The mirror the install page re-indexed serves the chart from its own address.
	helmRun("repo", "add", "mirror", mirrorServer)
	shown := helmRun("show", "chart", "mirror/"+helmtest.Chart, "--version", chartVersion)
	assert.Contains(t, shown, "appVersion: v"+chartVersion)
	mirrored := readIndex(t, filepath.Join(dist, "charts", "index.yaml")).Entries[helmtest.Chart]
	require.Len(t, mirrored, 1)
	assert.Equal(t, []string{mirrorServer + "/harvester-equinix-addon-" + chartVersion + ".tgz"}, mirrored[0].URLs)

	// Uninstalling keeps the CRDs, so no Instance (and no server record) goes with it.
	helmRun("uninstall", helmtest.Release, "-n", helmtest.Namespace)
	_, err = helmtest.Kubectl(c, "", "get", "crd", "instancepools.equinix.harvesterhci.io", "instances.equinix.harvesterhci.io")
	require.NoError(t, err)
	_, err = helmtest.Kubectl(c, "", "get", "instancepool", "harvester-pxe-worker")
	require.NoError(t, err)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), raw, 0o644))
	}
}
