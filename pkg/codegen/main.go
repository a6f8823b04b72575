// Command codegen regenerates the typed clients, listers, controllers and fakes
// (wrangler) and the CRD manifests of the chart (controller-gen). Run it through
// `go generate ./...` from the repository root.
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	harvesterv1beta1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	controllergen "github.com/rancher/wrangler/v3/pkg/controller-gen"
	"github.com/rancher/wrangler/v3/pkg/controller-gen/args"
	"github.com/sirupsen/logrus"
	"sigs.k8s.io/yaml"
)

const (
	// equinixCRDDir holds the CRDs of the Equinix kinds, which the chart's
	// templates/crds.yaml renders in its equinix mode only.
	equinixCRDDir = "charts/harvester-equinix-addon/files/crds"
	// inventoryCRDDir is Helm's crds/ folder: Helm creates a CRD there when it
	// is absent and never updates, adopts or deletes it, so the Inventory CRD
	// survives beside a real Seeder's and two releases never fight over it.
	inventoryCRDDir = "charts/harvester-equinix-addon/crds"
	// Seeder's CRDs are there too: the AddressPool's schema is Seeder's
	// own, so either side's CRD serves the other's objects unchanged.
	// inventoryCRDFile is the Inventory CRD there; the hardware mode's
	// controller embeds a copy (inventoryCRDEmbedded) to check the live one.
	inventoryCRDFile     = "metal.harvesterhci.io_inventories.yaml"
	inventoryCRDEmbedded = "pkg/apis/metal.harvesterhci.io/v1alpha1/inventory_crd.yaml"
	// keepPolicy stops `helm uninstall` (disabling the Addon) from deleting the
	// CRDs: that would delete every Instance while no controller is left to
	// release its paid server, stranding finalizers and devices.
	keepPolicy = "helm.sh/resource-policy"
)

// sharedTypes are the types both API groups embed (a package of no group,
// whose deep copies wrangler does not write): they are generated first, so
// that the groups' deep copies find theirs.
const sharedTypes = "./pkg/apis/hardware/..."

func main() {
	os.Unsetenv("GOPATH")
	if err := generateDeepCopies(sharedTypes); err != nil {
		logrus.Fatalf("generating the deep copies of %s: %v", sharedTypes, err)
	}
	controllergen.Run(args.Options{
		OutputPackage: "github.com/harvester/harvester-equinix-addon/pkg/generated",
		Boilerplate:   "scripts/boilerplate.go.txt",
		Groups: map[string]args.Group{
			"equinix.harvesterhci.io": {
				Types:           []interface{}{"./pkg/apis/equinix.harvesterhci.io/v1"},
				GenerateTypes:   true,
				GenerateClients: true,
			},
			"metal.harvesterhci.io": {
				Types:           []interface{}{"./pkg/apis/metal.harvesterhci.io/v1alpha1"},
				GenerateTypes:   true,
				GenerateClients: true,
			},
			"harvesterhci.io": {
				Types:           []interface{}{harvesterv1beta1.Setting{}},
				GenerateClients: true,
			},
			"loadbalancer.harvesterhci.io": {
				Types:           []interface{}{"./pkg/apis/loadbalancer.harvesterhci.io/v1beta1"},
				GenerateTypes:   true,
				GenerateClients: true,
			},
		},
	})
	if err := generateCRDs("./pkg/apis/equinix.harvesterhci.io/...", equinixCRDDir, keepOnUninstall); err != nil {
		logrus.Fatalf("generating CRDs: %v", err)
	}
	if err := generateCRDs("./pkg/apis/metal.harvesterhci.io/...", inventoryCRDDir, seederSchemas); err != nil {
		logrus.Fatalf("generating CRDs: %v", err)
	}
	// The controller embeds the same Inventory CRD, to check the live one.
	if err := copyFile(filepath.Join(inventoryCRDDir, inventoryCRDFile), inventoryCRDEmbedded); err != nil {
		logrus.Fatalf("copying the Inventory CRD: %v", err)
	}
}

// generateDeepCopies writes the DeepCopy methods of the types under paths.
func generateDeepCopies(paths string) error {
	cmd := exec.Command("go", "tool", "controller-gen", "object:headerFile=scripts/boilerplate.go.txt", "paths="+paths) //nolint:gosec // G204: a fixed command
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// generateCRDs writes the CRDs of the API packages paths into dir, each
// passed through edit.
func generateCRDs(paths, dir string, edit func(crd map[string]interface{}) error) error {
	tmp, err := os.MkdirTemp("", "hea-crds")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	cmd := exec.Command("go", "tool", "controller-gen", "crd:crdVersions=v1", //nolint:gosec // G204: a fixed command; tmp is our own folder
		"paths="+paths, "output:crd:dir="+tmp)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("controller-gen: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(tmp, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: a folder of the repository
		return err
	}
	for _, f := range files {
		if err := rewrite(f, filepath.Join(dir, filepath.Base(f)), edit); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

func rewrite(src, dst string, edit func(crd map[string]interface{}) error) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var crd map[string]interface{}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return err
	}
	if err := edit(crd); err != nil {
		return err
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	header := []byte("# Code generated by pkg/codegen from pkg/apis; DO NOT EDIT.\n")
	out = append(append(header, bytes.TrimSpace(out)...), '\n')
	return os.WriteFile(dst, out, 0o644) //nolint:gosec // G306: a committed file of the repository, readable by all
}

func keepOnUninstall(crd map[string]interface{}) error {
	meta, _ := crd["metadata"].(map[string]interface{})
	if meta == nil {
		return fmt.Errorf("no metadata")
	}
	ann, _ := meta["annotations"].(map[string]interface{})
	if ann == nil {
		ann = map[string]interface{}{}
	}
	ann[keepPolicy] = "keep"
	meta["annotations"] = ann
	return nil
}

func copyFile(src, dst string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, raw, 0o644) //nolint:gosec // G306: a committed file of the repository, readable by all
}
