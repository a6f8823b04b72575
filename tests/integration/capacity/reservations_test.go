package capacity

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// Each server lands on its own reservation of the list, in order; servers
// beyond the list go on demand.
func TestServersLandOnTheirReservations(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	ids := reservations(t, env, "c3.small.x86", 2)
	p := layer3Pool(t, "reserved", 3)
	p.Spec.HardwareReservationIDs = ids
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 3, 2*time.Minute)

	onDevice := map[string]int{}
	for _, i := range env.Instances(pool.Name) {
		got := deviceReservation(t, env, i.Status.InstanceID)
		assert.Equal(t, i.Spec.HardwareReservationID, got, "instance %s: its device is not on the reservation it names", i.Name)
		onDevice[got]++
	}
	assert.Equal(t, map[string]int{ids[0]: 1, ids[1]: 1, "": 1}, onDevice,
		"one server on each reservation and the one beyond the list on demand")
}

// next-available places every server on some reservation of the plan; with
// none left, the server waits and says why.
func TestNextAvailable(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	ids := reservations(t, env, "c3.small.x86", 2)
	p := layer3Pool(t, "next-available", 2)
	p.Spec.HardwareReservationIDs = []string{"next-available"}
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 2, 2*time.Minute)
	var got []string
	for _, i := range env.Instances(pool.Name) {
		assert.Equal(t, "next-available", i.Spec.HardwareReservationID)
		got = append(got, deviceReservation(t, env, i.Status.InstanceID))
	}
	assert.ElementsMatch(t, ids, got, "the two servers are not on the two reservations")

	env.EditPool(pool.Name, func(cur *equinixv1.InstancePool) {
		cur.Spec.Count = 3
	})
	third := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceDeviceCreated, metav1.ConditionFalse, equinixv1.ReasonReservationUnavailable)
	msg := framework.Condition(&third, equinixv1.InstanceDeviceCreated).Message
	assert.Contains(t, msg, "hardware reservation next-available cannot take this server")
	assert.Contains(t, msg, "no available hardware reservations")
	assert.True(t, env.EventRecorded(third.Name, equinixv1.ReasonReservationUnavailable), "no Warning Event on the Instance")
	env.Eventually(func() bool {
		c := poolCondition(env, pool.Name, equinixv1.PoolReady)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "1 waiting on ReservationUnavailable")
	}, time.Minute, "the pool does not say what its third server waits for")
}

// A reservation already in use, or of another plan, is refused by Equinix
// Metal: the server says so, and once the pool's list is fixed, the pool
// replaces the servers still waiting with ones on the new reservations.
func TestUnusableReservationsReportedThenFixed(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	wrongPlan := reservations(t, env, "m3.small.x86", 1)[0]
	used := reservations(t, env, "c3.small.x86", 1)[0]
	_, err := env.MetalClient(framework.MetalToken, framework.ProjectID).CreateDevice(env.Ctx, metal.CreateDeviceRequest{
		Hostname: "someone-else", Plan: "c3.small.x86", Metro: "sg", BillingCycle: "hourly",
		OperatingSystem: "custom_ipxe", IPXEScriptURL: "http://example.invalid/x.ipxe", HardwareReservationID: used,
	})
	require.NoError(t, err)

	p := layer3Pool(t, "bad-reservations", 2)
	p.Spec.HardwareReservationIDs = []string{wrongPlan, used}
	pool := env.CreatePool(p)
	messages := map[string]string{}
	env.Eventually(func() bool {
		for _, i := range env.Instances(pool.Name) {
			if c := framework.Condition(&i, equinixv1.InstanceDeviceCreated); c != nil && c.Reason == equinixv1.ReasonReservationUnavailable {
				messages[i.Spec.HardwareReservationID] = c.Message
			}
		}
		return len(messages) == 2
	}, time.Minute, "both servers should report their reservation: %v", messages)
	assert.Contains(t, messages[wrongPlan], "is for plan m3.small.x86, not c3.small.x86")
	assert.Contains(t, messages[used], "in use by someone-else")
	for _, m := range messages {
		assert.Contains(t, m, "fix the pool's hardwareReservationIDs")
	}
	for _, i := range env.Instances(pool.Name) {
		assert.Empty(t, i.Status.InstanceID, "a server got a device on an unusable reservation")
	}

	good := reservations(t, env, "c3.small.x86", 2)
	env.EditPool(pool.Name, func(cur *equinixv1.InstancePool) {
		cur.Spec.HardwareReservationIDs = good
	})
	env.WaitPoolReady(pool.Name, 2, 2*time.Minute)
	var got []string
	for _, i := range env.Instances(pool.Name) {
		got = append(got, deviceReservation(t, env, i.Status.InstanceID))
	}
	assert.ElementsMatch(t, good, got)
	assert.True(t, env.EventRecorded(pool.Name, equinixv1.ReasonReplacing))
}

// A pool whose reservations are all in use rolls out in place with maxSurge
// 0: each old server goes first and its successor takes the reservation it
// freed, so no server is ever made on demand and the pool never holds more
// than count servers.
func TestInPlaceRolloutOnReservations(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	ids := reservations(t, env, "c3.small.x86", 2)
	p := layer3Pool(t, "reserved-roll", 2)
	p.Spec.HardwareReservationIDs = ids
	surge, unavailable := intstr.FromInt32(0), intstr.FromInt32(1)
	p.Spec.Rollout = equinixv1.RolloutStrategy{MaxSurge: &surge, MaxUnavailable: &unavailable}
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 2, 2*time.Minute)
	before := map[string]bool{}
	for _, i := range env.Instances(pool.Name) {
		before[i.Name] = true
	}

	var mu sync.Mutex
	var onDemand []string
	alive := len(env.Sim.Devices(framework.ProjectID))
	maxAlive := alive
	stop := env.Sim.Subscribe(func(n metalsim.Notification) {
		mu.Lock()
		defer mu.Unlock()
		switch n.Type {
		case metalsim.DeviceCreated:
			alive++
			maxAlive = max(maxAlive, alive)
			if n.Device.HardwareReservation == nil {
				onDemand = append(onDemand, n.Hostname)
			}
		case metalsim.DeviceDeleted:
			alive--
		}
	})
	env.EditPool(pool.Name, func(cur *equinixv1.InstancePool) {
		// A new bond mode needs new servers.
		cur.Spec.ManagementBondingOptions = map[string]string{"mode": "active-backup", "miimon": "100"}
	})
	env.Eventually(func() bool {
		insts := env.Instances(pool.Name)
		for _, i := range insts {
			if before[i.Name] || i.Status.Status != equinixv1.PhaseManaged {
				return false
			}
		}
		return len(insts) == 2
	}, 3*time.Minute, "the in-place rollout did not finish")
	stop()
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, onDemand, "servers were made on demand during the rollout")
	assert.LessOrEqual(t, maxAlive, 2, "more devices than count at once")
	var got []string
	for _, i := range env.Instances(pool.Name) {
		got = append(got, deviceReservation(t, env, i.Status.InstanceID))
	}
	assert.ElementsMatch(t, ids, got)
}
