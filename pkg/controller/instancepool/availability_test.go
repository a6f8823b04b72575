package instancepool

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
)

// A joined layer-2 server is available only once its ports were converted
// to the pool's type after the join; other types need no such step.
func TestAvailabilityWaitsForTheJoinedNetwork(t *testing.T) {
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n"}}}
	server := func(want, have string, converged bool) *equinixv1.Instance {
		i := &equinixv1.Instance{}
		i.Spec.NetworkingConfiguration.Type = want
		i.Status.Status, i.Status.NodeName, i.Status.NetworkType = equinixv1.PhaseManaged, "n", have
		status := metav1.ConditionFalse
		if converged {
			status = metav1.ConditionTrue
		}
		conditions.Set(&i.Status.Conditions, 1, equinixv1.InstanceNetworkConfigured, status, equinixv1.ReasonConverged, "")
		return i
	}
	available := availability(nodes)
	assert.False(t, available(server(equinixv1.NetworkTypeLayer2Individual, equinixv1.NetworkTypeHybridBonded, true)), "still in its install network")
	assert.False(t, available(server(equinixv1.NetworkTypeLayer2Individual, equinixv1.NetworkTypeLayer2Individual, false)), "converting")
	assert.True(t, available(server(equinixv1.NetworkTypeLayer2Individual, equinixv1.NetworkTypeLayer2Individual, true)))
	assert.True(t, available(server(equinixv1.NetworkTypeHybrid, "", false)), "hybrid converges before the install")
}
