package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// InstallCRDs creates (or updates) every CRD in the YAML files of dir and waits
// until each is Established.
func InstallCRDs(ctx context.Context, cfg *rest.Config, dirs ...string) error {
	client, err := apiextclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var files []string
	for _, dir := range dirs {
		f, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return err
		}
		files = append(files, f...)
	}
	sort.Strings(files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := applyCRD(ctx, client, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

func applyCRD(ctx context.Context, client apiextclient.Interface, crd *apiextv1.CustomResourceDefinition) error {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	existing, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		crd.ResourceVersion = existing.ResourceVersion
		if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// addonModule is the module path of the addon's go.mod, at the repository root.
const addonModule = "github.com/harvester/harvester-equinix-addon"

// RepoRoot finds the repository root from a test's working directory: the
// folder whose go.mod is the addon's. The modules nested under tests/ (their
// own go.mod) are passed by, so their tests find the same root.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isAddonModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above %s", addonModule, dir)
		}
		dir = parent
	}
}

// isAddonModule: does the go.mod at path declare the addon's module?
func isAddonModule(path string) bool {
	raw, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == addonModule
		}
	}
	return false
}

// AddonCRDDir is the only copy of the CRDs of the addon's Equinix kinds,
// which the chart renders in its equinix mode.
func AddonCRDDir(root string) string {
	return filepath.Join(root, "charts", "harvester-equinix-addon", "files", "crds")
}

// InventoryCRDDir is the chart's crds/ folder, with the Inventory CRD
// (metal.harvesterhci.io, Seeder's kind) Helm creates when it is absent.
func InventoryCRDDir(root string) string {
	return filepath.Join(root, "charts", "harvester-equinix-addon", "crds")
}

// HarvesterCRDDir holds the CRDs of the Harvester kinds the addon reads or
// writes (settings.harvesterhci.io, harvester-load-balancer's
// ippools.loadbalancer.harvesterhci.io), standing in for a Harvester
// cluster's own.
func HarvesterCRDDir(root string) string {
	return filepath.Join(root, "tests", "cluster", "testdata", "harvester-crds")
}
