// Package capacity proves, on the real apiserver and the simulator behind
// the real SDK, that pools place their servers on hardware reservations and
// on the spot market as asked, and say clearly when they cannot.
package capacity

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

// layer3Pool is the seed's pool (c3.small.x86 in SG) on layer 3.
func layer3Pool(t *testing.T, name string, count int32) *equinixv1.InstancePool {
	p := framework.ParsePool(t, framework.SeedSample, name)
	p.Spec.Count = count
	p.Spec.NetworkingConfiguration = equinixv1.NetworkingConfiguration{Type: equinixv1.NetworkTypeLayer3}
	return p
}

// reservations adds n reservations of plan in SG to the test project.
func reservations(t *testing.T, env *framework.Env, plan string, n int) []string {
	t.Helper()
	ids, err := env.Sim.AddHardwareReservations(framework.ProjectID, metalsim.HardwareReservation{Plan: plan, Metro: "sg"}, n)
	require.NoError(t, err)
	return ids
}

// deviceReservation is the reservation a device was placed on, "" for on
// demand.
func deviceReservation(t *testing.T, env *framework.Env, deviceID string) string {
	t.Helper()
	dev, ok := env.Sim.Device(deviceID)
	require.True(t, ok, "device %s is gone", deviceID)
	if dev.HardwareReservation == nil {
		return ""
	}
	return lastSegment(dev.HardwareReservation.GetHref())
}

func lastSegment(href string) string {
	for i := len(href) - 1; i >= 0; i-- {
		if href[i] == '/' {
			return href[i+1:]
		}
	}
	return href
}

// waitInstanceCondition waits until an Instance of the pool has the
// condition with that status and reason, and returns it.
func waitInstanceCondition(t *testing.T, env *framework.Env, pool, condType string, status metav1.ConditionStatus, reason string) equinixv1.Instance {
	t.Helper()
	var found equinixv1.Instance
	ok := func() bool {
		for _, i := range env.Instances(pool) {
			if c := conditions.Get(i.Status.Conditions, condType); c != nil && c.Status == status && c.Reason == reason {
				found = i
				return true
			}
		}
		return false
	}
	env.Eventually(ok, time.Minute, "no Instance of pool %s has %s=%s (%s)", pool, condType, status, reason)
	return found
}

func poolCondition(env *framework.Env, pool, condType string) *metav1.Condition {
	p := env.Pool(pool)
	if p == nil {
		return nil
	}
	return conditions.Get(p.Status.Conditions, condType)
}
