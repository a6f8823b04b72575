package apivalidation

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// A pool without rollout settings keeps the rollout it always had: one
// server of the new template added before an old one goes.
func TestRolloutDefaultsKeepSurgeOne(t *testing.T) {
	ctx, client := setup(t)
	pool := parsePool(t, seedSample)
	pool.Name = "rollout-defaults"
	created, err := client.EquinixV1().InstancePools().Create(ctx, pool, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.EquinixV1().InstancePools().Delete(ctx, created.Name, metav1.DeleteOptions{}) })
	require.NotNil(t, created.Spec.Rollout.MaxSurge)
	require.NotNil(t, created.Spec.Rollout.MaxUnavailable)
	assert.Equal(t, intstr.FromInt32(1), *created.Spec.Rollout.MaxSurge)
	assert.Equal(t, intstr.FromInt32(0), *created.Spec.Rollout.MaxUnavailable)
}

func TestRolloutBoundsValidated(t *testing.T) {
	ctx, client := setup(t)
	num, pct := intstr.FromInt32, intstr.FromString
	cases := []struct {
		name               string
		surge, unavailable *intstr.IntOrString
		// want is empty for a spec the apiserver accepts; else every
		// string must appear in its answer.
		want []string
	}{
		{name: "in place", surge: ptr(num(0)), unavailable: ptr(num(1))},
		{name: "percentages", surge: ptr(pct("25%")), unavailable: ptr(pct("10%"))},
		{name: "surge over 100%", surge: ptr(pct("200%")), unavailable: ptr(num(0))},
		{name: "both zero", surge: ptr(num(0)), unavailable: ptr(num(0)),
			want: []string{"spec.rollout", "cannot both be 0", "maxSurge: 0 and maxUnavailable: 1"}},
		{name: "both zero as percentages", surge: ptr(pct("0%")), unavailable: ptr(pct("0%")),
			want: []string{"spec.rollout", "cannot both be 0"}},
		{name: "surge 0 with the default unavailable", surge: ptr(num(0)),
			want: []string{"spec.rollout", "cannot both be 0"}},
		{name: "negative surge", surge: ptr(num(-1)),
			want: []string{"spec.rollout.maxSurge", "a number of servers"}},
		{name: "surge not a percentage", surge: ptr(pct("a lot")),
			want: []string{"spec.rollout.maxSurge", "a percentage of count"}},
		{name: "unavailable over 100%", unavailable: ptr(pct("101%")),
			want: []string{"spec.rollout.maxUnavailable", "from 0% to 100%"}},
		{name: "unavailable as a fraction", unavailable: ptr(pct("0.5")),
			want: []string{"spec.rollout.maxUnavailable"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := parsePool(t, seedSample)
			pool.Name = fmt.Sprintf("rollout-%d", i)
			pool.Spec.Rollout = equinixv1.RolloutStrategy{MaxSurge: tc.surge, MaxUnavailable: tc.unavailable}
			created, err := client.EquinixV1().InstancePools().Create(ctx, pool, metav1.CreateOptions{})
			if len(tc.want) == 0 {
				require.NoError(t, err)
				_ = client.EquinixV1().InstancePools().Delete(ctx, created.Name, metav1.DeleteOptions{})
				return
			}
			require.Error(t, err, "the apiserver accepted a bad spec")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
