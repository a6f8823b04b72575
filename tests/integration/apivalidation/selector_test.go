package apivalidation

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// selectorCases are matchExpressions that select no server, with what the
// apiserver must answer, and ones a pool may use.
var (
	refusedSelectors = map[string]struct {
		expressions []metav1.LabelSelectorRequirement
		want        string
	}{
		"an operator of no selector": {
			expressions: []metav1.LabelSelectorRequirement{{Key: "rack", Operator: "Near", Values: []string{"a"}}},
			want:        "spec.servers.selector.matchExpressions: Invalid value: each operator must be In, NotIn, Exists or DoesNotExist",
		},
		"an operator in the wrong case, beside a good one": {
			expressions: []metav1.LabelSelectorRequirement{
				{Key: "rack", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}},
				{Key: "gen", Operator: "exists"},
			},
			want: "spec.servers.selector.matchExpressions: Invalid value: each operator must be In, NotIn, Exists or DoesNotExist",
		},
		"In without values": {
			expressions: []metav1.LabelSelectorRequirement{{Key: "rack", Operator: metav1.LabelSelectorOpIn}},
			want:        "spec.servers.selector.matchExpressions: Invalid value: In and NotIn need at least one value",
		},
		"NotIn with an empty list": {
			expressions: []metav1.LabelSelectorRequirement{{Key: "broken", Operator: metav1.LabelSelectorOpNotIn, Values: []string{}}},
			want:        "spec.servers.selector.matchExpressions: Invalid value: In and NotIn need at least one value",
		},
		"Exists with values": {
			expressions: []metav1.LabelSelectorRequirement{{Key: "rack", Operator: metav1.LabelSelectorOpExists, Values: []string{"a"}}},
			want:        "spec.servers.selector.matchExpressions: Invalid value: Exists and DoesNotExist take no values",
		},
		"DoesNotExist with values": {
			expressions: []metav1.LabelSelectorRequirement{{Key: "broken", Operator: metav1.LabelSelectorOpDoesNotExist, Values: []string{"yes"}}},
			want:        "spec.servers.selector.matchExpressions: Invalid value: Exists and DoesNotExist take no values",
		},
	}
	acceptedSelector = []metav1.LabelSelectorRequirement{
		{Key: "row", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
		{Key: "gen", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"1"}},
		{Key: "bmc", Operator: metav1.LabelSelectorOpExists},
		{Key: "broken", Operator: metav1.LabelSelectorOpDoesNotExist, Values: []string{}},
	}
)

// A selector the controller could only refuse at claim time is refused by
// the apiserver, naming the field and the expression: in a pool, and in an
// Instance, whose template is the pool's.
func TestOwnedSelectorExpressionsValidated(t *testing.T) {
	ctx, client := setup(t)
	withExpressions := func(name string, exprs []metav1.LabelSelectorRequirement) *equinixv1.InstancePool {
		pool := parsePool(t, ownedPool)
		pool.Name = name
		pool.Spec.Servers.Selector.MatchExpressions = exprs
		return pool
	}
	asInstance := func(pool *equinixv1.InstancePool) *equinixv1.Instance {
		return &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: pool.Name + "-abcdefgh"},
			Spec: equinixv1.InstanceSpec{PoolName: pool.Name, InstanceTemplate: pool.Spec.InstanceTemplate}}
	}
	i := 0
	for name, tc := range refusedSelectors {
		i++
		pool := withExpressions(fmt.Sprintf("refused-selector-%d", i), tc.expressions)
		t.Run(name, func(t *testing.T) {
			_, err := client.EquinixV1().InstancePools().Create(ctx, pool, metav1.CreateOptions{})
			require.Error(t, err, "InstancePool")
			assert.Contains(t, err.Error(), tc.want, "InstancePool")
			_, err = client.EquinixV1().Instances().Create(ctx, asInstance(pool), metav1.CreateOptions{})
			require.Error(t, err, "Instance")
			assert.Contains(t, err.Error(), tc.want, "Instance")
		})
	}

	t.Run("each operator as a selector uses it", func(t *testing.T) {
		pool, err := client.EquinixV1().InstancePools().Create(ctx, withExpressions("good-selector", acceptedSelector), metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = client.EquinixV1().InstancePools().Delete(ctx, pool.Name, metav1.DeleteOptions{}) })
		sel, err := metav1.LabelSelectorAsSelector(&pool.Spec.Servers.Selector)
		require.NoError(t, err, "what the apiserver accepts, the claim can select with")
		assert.Equal(t, "bmc,!broken,gen notin (1),rack=a,row in (a,b)", sel.String())
		inst, err := client.EquinixV1().Instances().Create(ctx, asInstance(pool), metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = client.EquinixV1().Instances().Delete(ctx, inst.Name, metav1.DeleteOptions{}) })
	})

	t.Run("an update is checked as a create is", func(t *testing.T) {
		pool, err := client.EquinixV1().InstancePools().Create(ctx, withExpressions("edited-selector", nil), metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = client.EquinixV1().InstancePools().Delete(ctx, pool.Name, metav1.DeleteOptions{}) })
		pool.Spec.Servers.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "rack", Operator: "Near", Values: []string{"a"}}}
		_, err = client.EquinixV1().InstancePools().Update(ctx, pool, metav1.UpdateOptions{})
		require.Error(t, err)
		assert.True(t, strings.Contains(err.Error(), "spec.servers.selector.matchExpressions: Invalid value: each operator must be In, NotIn, Exists or DoesNotExist"), err.Error())
	})
}
