package chart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	policyv1 "k8s.io/api/policy/v1"
)

// TestDisruptionBudget: a warm standby is only worth something if a node drain
// cannot take both replicas at once; a single replica gets no budget, which
// would block every drain of its node.
func TestDisruptionBudget(t *testing.T) {
	m, _ := render(t)
	assert.Nil(t, m.find("PodDisruptionBudget", releaseName), "one replica: no budget")
	m, _ = render(t, "--set", "replicas=0")
	assert.Nil(t, m.find("PodDisruptionBudget", releaseName))

	for _, replicas := range []string{"2", "3"} {
		m, _ = render(t, "--set", "replicas="+replicas)
		pdb := typed[policyv1.PodDisruptionBudget](t, m.find("PodDisruptionBudget", releaseName))
		require.NotNil(t, pdb.Spec.MaxUnavailable)
		assert.Equal(t, 1, pdb.Spec.MaxUnavailable.IntValue())
		assert.Nil(t, pdb.Spec.MinAvailable)
		assert.Equal(t, releaseNamespace, pdb.Namespace)
		d := deployment(t, m)
		assert.Equal(t, d.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels, "the budget covers exactly the controller's pods")
	}
}
