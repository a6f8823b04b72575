package instancepool

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
)

// A joined layer-2 server is available only once its ports were converted
// to the pool's type after the join; other types need no such step.
func TestAvailabilityWaitsForTheJoinedNetwork(t *testing.T) {
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n"}}}
	server := func(want, have string, converged bool) *v1.Instance {
		i := &v1.Instance{}
		i.Spec.NetworkingConfiguration.Type = want
		i.Status.Status, i.Status.NodeName, i.Status.NetworkType = v1.PhaseManaged, "n", have
		status := metav1.ConditionFalse
		if converged {
			status = metav1.ConditionTrue
		}
		conditions.Set(&i.Status.Conditions, 1, v1.InstanceNetworkConfigured, status, v1.ReasonConverged, "")
		return i
	}
	available := availability(nodes)
	assert.False(t, available(server(v1.NetworkTypeLayer2Individual, v1.NetworkTypeHybridBonded, true)), "still in its install network")
	assert.False(t, available(server(v1.NetworkTypeLayer2Individual, v1.NetworkTypeLayer2Individual, false)), "converting")
	assert.True(t, available(server(v1.NetworkTypeLayer2Individual, v1.NetworkTypeLayer2Individual, true)))
	assert.True(t, available(server(v1.NetworkTypeHybrid, "", false)), "hybrid converges before the install")
}
