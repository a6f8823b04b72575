package equinixmetal

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/util/fakecache"
)

// A server whose installer runs, found with its Secret naming another
// project, reports the mismatch; once the Secret names its project again,
// the next pass that builds its client says the credentials are back, before
// any Metal call (a server whose Node registered makes none). Found by the
// fault campaign: a pool kept showing the old mismatch as its cause.
func TestProjectMismatchEndsWhenTheSecretIsBack(t *testing.T) {
	const ns, device = "harvester-system", "84f0a64e-dd86-4686-a077-25ddef3df1cf"
	secret := func(project string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "equinix-addon"},
			Data: map[string][]byte{credentials.TokenKey: []byte("token"), credentials.ProjectKey: []byte(project)}}
	}
	secrets := fakecache.NewStore[*corev1.Secret, *corev1.SecretList]("secrets")
	_, err := secrets.Create(secret("project-b"))
	require.NoError(t, err)
	h := &harness{Provider: Provider{ctx: context.Background(),
		credentials: credentials.NewResolver(secrets.Cache(), ns, "equinix-addon"),
		metal:       metal.ProviderFunc(func(metal.Credentials) (metal.Client, error) { return nil, nil })},
		recorder: record.NewFakeRecorder(10)}
	inst := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "pool-abcdefgh"}}
	inst.Status.ProjectID, inst.Status.InstanceID = "project-a", device

	r := h.newRun(inst)
	c, err := r.metalClient()
	require.NoError(t, err)
	assert.Nil(t, c, "no client of another project")
	mismatch := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceCredentialsReady)
	require.NotNil(t, mismatch)
	assert.Equal(t, equinixv1.ReasonProjectMismatch, mismatch.Reason)

	_, err = secrets.Update(secret("project-a"))
	require.NoError(t, err)
	r = h.newRun(r.Obj)
	_, err = r.metalClient()
	require.NoError(t, err)
	assert.True(t, conditions.IsTrue(r.Obj.Status.Conditions, equinixv1.InstanceCredentialsReady),
		"the mismatch outlived the Secret's fix: %+v", conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceCredentialsReady))
}
