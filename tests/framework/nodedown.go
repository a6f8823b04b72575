package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

// What Harvester's own node-down handling reads, as a Harvester cluster
// holds it: its Setting vm-force-reset-policy and its Upgrade kind
// (tests/nodedown runs the handler itself).

// InstallHarvesterUpgradeCRD installs Harvester's own Upgrade CRD (from its
// module): fencing, and Harvester's handler, stand back while an Upgrade
// is under way.
func InstallHarvesterUpgradeCRD(ctx context.Context, c *cluster.Cluster) error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	path, err := upstream.HarvesterCRD(root, "harvesterhci.io_upgrades.yaml")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "harvester-upgrade-crd-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(path)), raw, 0o600); err != nil {
		return err
	}
	return cluster.InstallCRDs(ctx, c.RESTConfig, dir)
}

// NodeDownPolicy is the vm-force-reset-policy value as Harvester's UI
// writes it (whole seconds).
type NodeDownPolicy struct {
	Enable             bool  `json:"enable"`
	Period             int64 `json:"period"`
	VMMigrationTimeout int64 `json:"vmMigrationTimeout"`
}

// SetNodeDownPolicy writes the Setting's value as a person does in the UI,
// creating the Setting where no Harvester made it; created says it did.
func SetNodeDownPolicy(ctx context.Context, client versioned.Interface, p NodeDownPolicy) (created bool, err error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return false, err
	}
	settings := client.HarvesterhciV1beta1().Settings()
	for range 10 {
		s, err := settings.Get(ctx, harvester.VMForceResetPolicySettingName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s = &harvesterv1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: harvester.VMForceResetPolicySettingName}, Value: string(raw)}
			if _, err = settings.Create(ctx, s, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
				continue
			}
			return err == nil, err
		}
		if err != nil {
			return false, err
		}
		s.Value = string(raw)
		if _, err = settings.Update(ctx, s, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
			continue
		}
		return false, err
	}
	return false, fmt.Errorf("setting %s: conflicts all along", harvester.VMForceResetPolicySettingName)
}

// UseNodeDownPolicy sets the policy for the test and puts the Setting back
// as it was when the test ends (deleting it where it made it).
func (e *Env) UseNodeDownPolicy(p NodeDownPolicy) {
	t := e.T
	t.Helper()
	ctx := context.Background()
	settings := e.Client.HarvesterhciV1beta1().Settings()
	old, err := settings.Get(ctx, harvester.VMForceResetPolicySettingName, metav1.GetOptions{})
	if err != nil {
		require.True(t, apierrors.IsNotFound(err), "reading setting %s: %v", harvester.VMForceResetPolicySettingName, err)
		old = nil
	}
	created, err := SetNodeDownPolicy(ctx, e.Client, p)
	require.NoError(t, err)
	t.Cleanup(func() {
		if created {
			_ = settings.Delete(ctx, harvester.VMForceResetPolicySettingName, metav1.DeleteOptions{})
			return
		}
		if old == nil {
			return
		}
		if cur, err := settings.Get(ctx, old.Name, metav1.GetOptions{}); err == nil {
			cur.Value = old.Value
			_, _ = settings.Update(ctx, cur, metav1.UpdateOptions{})
		}
	})
}

// InstallHarvesterUpgradeCRD is InstallHarvesterUpgradeCRD for the test.
func (e *Env) InstallHarvesterUpgradeCRD() {
	e.T.Helper()
	require.NoError(e.T, InstallHarvesterUpgradeCRD(e.Ctx, e.Cluster))
}
