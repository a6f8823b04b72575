// Package upstream finds files of pinned upstream Go modules, such as the CRDs
// of Harvester and of the Prometheus Operator, in the Go module cache, so that
// tests check the addon against those projects' own files at the versions this
// repository pins instead of against copies. A module that is not cached yet is
// fetched through the Go module proxy with `go mod download`, outside the
// addon's module, so go.mod and go.sum are never touched.
package upstream

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Modules and files the tests use.
const (
	HarvesterModule          = "github.com/harvester/harvester"
	PrometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator"

	// harvesterCRDs is where Harvester keeps its CRDs (its harvester-crd chart).
	harvesterCRDs = "deploy/charts/harvester-crd/templates"
	// HarvesterChart is Harvester's own chart: its values, and the charts it
	// bundles (kube-vip's among them).
	HarvesterChart = "deploy/charts/harvester"
	// prometheusOperatorCRDs holds the operator's CRDs with their descriptions.
	prometheusOperatorCRDs = "example/prometheus-operator-crd-full"
)

// ErrNotPinned means the repository names no version for a module.
var ErrNotPinned = errors.New("module version not pinned")

// ModuleDir returns the folder of module@version in the module cache,
// downloading it first if needed.
func ModuleDir(module, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "upstream-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	// Outside any module, so the addon's go.mod and go.sum stay as they are.
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GO111MODULE=on")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var info struct {
		Dir   string
		Error string
	}
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w (%v) %s", module, version, err, runErr, stderr.String())
	}
	if info.Error != "" || runErr != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s %v %s", module, version, info.Error, runErr, stderr.String())
	}
	return info.Dir, nil
}

// GoModFile is what `go mod edit -json` reads from a go.mod.
type GoModFile struct {
	Module struct{ Path string }
	Go     string
	// Require lists the required modules (Path, Version).
	Require []ModuleVersion
	Replace []struct{ Old, New ModuleVersion }
}

// ModuleVersion is a module path and, where one is named, its version.
type ModuleVersion struct{ Path, Version string }

// ReadGoMod reads the go.mod at path with the go command's own parser
// (`go mod edit -json`), so the tests need no module library of their own.
func ReadGoMod(path string) (*GoModFile, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", "mod", "edit", "-json", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go mod edit -json %s: %w: %s", path, err, stderr.String())
	}
	f := &GoModFile{}
	if err := json.Unmarshal(stdout.Bytes(), f); err != nil {
		return nil, fmt.Errorf("go mod edit -json %s: %w", path, err)
	}
	return f, nil
}

// Required is the version of module f requires, or "".
func (f *GoModFile) Required(module string) string {
	for _, r := range f.Require {
		if r.Path == module {
			return r.Version
		}
	}
	return ""
}

// Replacement is the version f replaces module with, if any.
func (f *GoModFile) Replacement(module string) (string, bool) {
	for _, r := range f.Replace {
		if r.Old.Path == module {
			return r.New.Version, true
		}
	}
	return "", false
}

// GoModVersion is the version of a module required in root's go.mod.
func GoModVersion(root, module string) (string, error) {
	f, err := ReadGoMod(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	if v := f.Required(module); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%w: %s is not in go.mod", ErrNotPinned, module)
}

// Replacement is the version go.mod replaces a module with, if any.
func Replacement(root, module string) (string, bool, error) {
	f, err := ReadGoMod(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", false, err
	}
	v, ok := f.Replacement(module)
	return v, ok, nil
}

// NestedModules are the folders (relative to root) of the Go modules under
// tests/ that build the addon's packages: each go.mod whose module path is
// below the addon's. tests/harvesternodeapi's go.mod, a fence around a
// program built elsewhere, names another path and is not one of them.
func NestedModules(root string) ([]string, error) {
	addon, err := ReadGoMod(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	var dirs []string
	err = filepath.WalkDir(filepath.Join(root, "tests"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "go.mod" {
			return err
		}
		f, err := ReadGoMod(path)
		if err != nil {
			return err
		}
		if strings.HasPrefix(f.Module.Path, addon.Module.Path+"/") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			dirs = append(dirs, rel)
		}
		return nil
	})
	return dirs, err
}

// ScriptVersion reads NAME="${NAME:-version}" from scripts/versions, where the
// tools and upstream files the scripts and tests use are pinned.
func ScriptVersion(root, name string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(root, "scripts", "versions"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(name + `="\$\{` + name + `:-([^}]+)\}"`).FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf("%w: %s is not in scripts/versions", ErrNotPinned, name)
	}
	return string(m[1]), nil
}

// HarvesterCRD is the path of one of Harvester's CRD files (e.g.
// harvesterhci.io_addons.yaml) at the version go.mod pins.
func HarvesterCRD(root, file string) (string, error) {
	version, err := GoModVersion(root, HarvesterModule)
	if err != nil {
		return "", err
	}
	return moduleFile(HarvesterModule, version, filepath.Join(harvesterCRDs, file))
}

// PrometheusOperatorCRD is the path of one of the Prometheus Operator's CRD
// files (e.g. monitoring.coreos.com_servicemonitors.yaml) at the version
// scripts/versions pins.
func PrometheusOperatorCRD(root, file string) (string, error) {
	version, err := ScriptVersion(root, "PROMETHEUS_OPERATOR_VERSION")
	if err != nil {
		return "", err
	}
	return moduleFile(PrometheusOperatorModule, version, filepath.Join(prometheusOperatorCRDs, file))
}

// HarvesterFile is the path of a file of the Harvester module (e.g.
// HarvesterChart+"/values.yaml") at the version go.mod pins.
func HarvesterFile(root, file string) (string, error) {
	version, err := GoModVersion(root, HarvesterModule)
	if err != nil {
		return "", err
	}
	return moduleFile(HarvesterModule, version, file)
}

// BundledChartFile reads a file of a chart Harvester's chart bundles (e.g.
// chart "harvester-load-balancer", file
// "templates/crds/loadbalancer.harvesterhci.io_ippools.yaml").
func BundledChartFile(root, chart, file string) ([]byte, error) {
	values, err := HarvesterFile(root, HarvesterChart+"/values.yaml")
	if err != nil {
		return nil, err
	}
	tgzs, err := filepath.Glob(filepath.Join(filepath.Dir(values), "charts", chart+"-*.tgz"))
	if err != nil || len(tgzs) != 1 {
		return nil, fmt.Errorf("the Harvester chart bundles %d charts named %s: %v", len(tgzs), chart, err)
	}
	f, err := os.Open(tgzs[0])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%s has no %s", tgzs[0], file)
		}
		if err != nil {
			return nil, err
		}
		if hdr.Name == chart+"/"+file {
			return io.ReadAll(tr)
		}
	}
}

func moduleFile(module, version, file string) (string, error) {
	dir, err := ModuleDir(module, version)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, file)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s@%s has no %s: %w", module, version, file, err)
	}
	return path, nil
}
