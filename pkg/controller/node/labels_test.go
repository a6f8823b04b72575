package node

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

func server(facility string) *equinixv1.Instance {
	i := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "pool-abcdefgh"}}
	i.Spec.PoolName, i.Spec.Plan, i.Spec.Metro, i.Spec.BillingCycle = "pool", "c3.small.x86", "DA", "hourly"
	i.Status.InstanceID, i.Status.Facility = "0b3a5f4e-7c1d-4e2b-9a8f-6d5c4b3a2f10", facility
	return i
}

func TestNodePatch(t *testing.T) {
	providerID := equinixv1.ProviderIDPrefix + "0b3a5f4e-7c1d-4e2b-9a8f-6d5c4b3a2f10"
	cases := []struct {
		name     string
		node     corev1.Node
		facility string
		want     string // the merge patch, or "" for none
	}{
		{
			name: "a fresh node gets every label, the annotations and the provider ID", facility: "da11",
			want: `{"metadata":{"labels":{"equinix.harvesterhci.io/device-id":"0b3a5f4e-7c1d-4e2b-9a8f-6d5c4b3a2f10","equinix.harvesterhci.io/pool":"pool",` +
				`"node.kubernetes.io/instance-type":"c3.small.x86","topology.kubernetes.io/region":"da","topology.kubernetes.io/zone":"da11"},` +
				`"annotations":{"equinix.harvesterhci.io/billing-cycle":"hourly","equinix.harvesterhci.io/metro":"da","equinix.harvesterhci.io/plan":"c3.small.x86",` +
				`"equinix.harvesterhci.io/provider-id":"` + providerID + `"}},"spec":{"providerID":"` + providerID + `"}}`,
		},
		{
			name: "a provider ID the kubelet set is never replaced", facility: "da11",
			node: decorated(corev1.NodeSpec{ProviderID: "rke2://pool-abcdefgh"}, "da11"),
		},
		{
			name: "no zone before the facility is known", facility: "",
			node: decorated(corev1.NodeSpec{ProviderID: providerID}, ""),
		},
		{
			name: "the zone once it is known", facility: "da11",
			node: decorated(corev1.NodeSpec{ProviderID: providerID}, ""),
			want: `{"metadata":{"labels":{"topology.kubernetes.io/zone":"da11"}}}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			labels, annotations := metadata(server(tc.facility))
			p := missing(&tc.node, labels, annotations, providerID)
			if tc.want == "" {
				assert.Nil(t, p)
				return
			}
			require.NotNil(t, p)
			raw, err := json.Marshal(p)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(raw))
		})
	}
}

// decorated is a Node that already carries what the handler sets, with its
// own spec.
func decorated(spec corev1.NodeSpec, facility string) corev1.Node {
	labels, annotations := metadata(server(facility))
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}, Spec: spec}
}

func TestNodePatchCarriesTheFacts(t *testing.T) {
	providerID := equinixv1.ProviderIDPrefix + "0b3a5f4e-7c1d-4e2b-9a8f-6d5c4b3a2f10"
	node := decorated(corev1.NodeSpec{ProviderID: providerID}, "")
	labels, annotations := metadata(server("da11"))
	p := missing(&node, labels, annotations, providerID)
	require.NotNil(t, p)
	model := "c3.small.x86"
	p.add(map[string]*string{equinixv1.LabelModel: &model}, map[string]*string{equinixv1.AnnotationBIOS: nil})
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"labels":{"topology.kubernetes.io/zone":"da11","`+equinixv1.LabelModel+`":"c3.small.x86"},`+
		`"annotations":{"`+equinixv1.AnnotationBIOS+`":null}}}`, string(raw))
}
