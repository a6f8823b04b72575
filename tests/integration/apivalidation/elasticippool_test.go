package apivalidation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// An ElasticIPPool's block is reserved once: its metro and size are fixed,
// the size is one Equinix Metal reserves, and kubectl shows the block.
func TestElasticIPPoolSpecValidated(t *testing.T) {
	ctx, client := setup(t)
	pools := client.EquinixV1().ElasticIPPools()
	for _, bad := range []equinixv1.ElasticIPPoolSpec{
		{Metro: "sg", Quantity: 3},
		{Metro: "Singapore", Quantity: 1},
		{Metro: "", Quantity: 2},
	} {
		_, err := pools.Create(ctx, &equinixv1.ElasticIPPool{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: bad}, metav1.CreateOptions{})
		assert.Error(t, err, "%+v", bad)
	}
	created, err := pools.Create(ctx, &equinixv1.ElasticIPPool{ObjectMeta: metav1.ObjectMeta{Name: "columns-eippool"},
		Spec: equinixv1.ElasticIPPoolSpec{Metro: "sg", Quantity: 8}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pools.Delete(ctx, created.Name, metav1.DeleteOptions{}) })

	changed := created.DeepCopy()
	changed.Spec.Quantity = 16
	_, err = pools.Update(ctx, changed, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "metro and quantity are fixed")
	changed = created.DeepCopy()
	changed.Spec.Selector = &equinixv1.ElasticIPPoolSelector{Priority: 1}
	_, err = pools.Update(ctx, changed, metav1.UpdateOptions{})
	require.NoError(t, err, "the selector may change")

	created.Status = equinixv1.ElasticIPPoolStatus{Status: equinixv1.ElasticIPPoolPhaseReady, CIDR: "147.75.200.8/29", Services: 3}
	created.ResourceVersion = ""
	latest, err := pools.Get(ctx, created.Name, metav1.GetOptions{})
	require.NoError(t, err)
	latest.Status = created.Status
	_, err = pools.UpdateStatus(ctx, latest, metav1.UpdateOptions{})
	require.NoError(t, err)
	rows := kubectlGet(t, "eippool", created.Name)
	require.Len(t, rows, 2)
	assert.Equal(t, []string{"NAME", "METRO", "BLOCK", "SERVICES", "STATUS", "AGE"}, rows[0])
	assert.Equal(t, []string{created.Name, "sg", "147.75.200.8/29", "3", equinixv1.ElasticIPPoolPhaseReady}, rows[1][:5])
}
