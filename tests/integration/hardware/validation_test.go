package hardware

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// The API refuses what the power fields cannot mean, with a message naming
// the field: an unknown power state, a reboot time moved back, and a
// reboot of a server asked to be off.
func TestPowerFieldsAreValidated(t *testing.T) {
	env := newEnv(t, framework.Options{NoController: true})
	pool := framework.SeedPoolWith(t, "validate", "")
	inst := &equinixv1.Instance{
		ObjectMeta: metav1.ObjectMeta{Name: "validate-abcdefgh"},
		Spec:       equinixv1.InstanceSpec{PoolName: pool.Name, InstanceTemplate: pool.Spec.InstanceTemplate},
	}
	created, err := env.Client.EquinixV1().Instances().Create(env.Ctx, inst, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Client.EquinixV1().Instances().Delete(env.Ctx, created.Name, metav1.DeleteOptions{}) })
	assert.Equal(t, equinixv1.PowerOn, created.Spec.PowerState, "on by default")

	patch := func(spec map[string]any) error {
		raw, err := json.Marshal(map[string]any{"spec": spec})
		require.NoError(t, err)
		_, err = env.Client.EquinixV1().Instances().Patch(env.Ctx, created.Name, types.MergePatchType, raw, metav1.PatchOptions{})
		return err
	}
	now := time.Now().UTC().Truncate(time.Second)
	err = patch(map[string]any{"powerState": "standby"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "powerState")

	require.NoError(t, patch(map[string]any{"rebootRequestedAt": now.Format(time.RFC3339)}))
	require.NoError(t, patch(map[string]any{"rebootRequestedAt": now.Add(time.Minute).Format(time.RFC3339)}))
	err = patch(map[string]any{"rebootRequestedAt": now.Format(time.RFC3339)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rebootRequestedAt only moves forward")
	err = patch(map[string]any{"rebootRequestedAt": nil})
	require.Error(t, err, "removing it would make the next time look new")

	require.NoError(t, patch(map[string]any{"powerState": "off"}))
	err = patch(map[string]any{"rebootRequestedAt": now.Add(2 * time.Minute).Format(time.RFC3339)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a server switched off cannot be rebooted")
	require.NoError(t, patch(map[string]any{"powerState": "on", "rebootRequestedAt": now.Add(2 * time.Minute).Format(time.RFC3339)}))
}
