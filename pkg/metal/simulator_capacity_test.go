package metal_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

func TestSimHardwareReservations(t *testing.T) {
	e := newSimEnv(t, metalsim.DefaultTimings())
	ids, err := e.sim.AddHardwareReservations(simProject, metalsim.HardwareReservation{Plan: "c3.small.x86", Metro: "da"}, 130)
	require.NoError(t, err)
	large, err := e.sim.AddHardwareReservations(simProject, metalsim.HardwareReservation{Plan: "m3.large.x86", Facility: "sv16"}, 1)
	require.NoError(t, err)
	req := deviceRequest("reserved-1", "cluster:test")
	req.HardwareReservationID = ids[0]
	d, err := e.client.CreateDevice(e.ctx, req)
	require.NoError(t, err)
	assert.Equal(t, ids[0], d.HardwareReservationID)

	e.sim.ResetRequests()
	all, err := e.client.ListHardwareReservations(e.ctx)
	require.NoError(t, err)
	require.Len(t, all, 131)
	var pages []string
	for _, r := range e.sim.RequestsFor(metalsim.OpFindProjectHardwareReservations) {
		q, err := url.ParseQuery(r.Query)
		require.NoError(t, err)
		assert.Equal(t, "100", q.Get("per_page"))
		pages = append(pages, q.Get("page"))
	}
	assert.Equal(t, []string{"1", "2"}, pages)

	first := all[0]
	assert.Equal(t, ids[0], first.ID)
	assert.Equal(t, ids[0][:8], first.ShortID)
	assert.Equal(t, "c3.small.x86", first.Plan)
	require.NotNil(t, first.PlanDetails)
	assert.Equal(t, "32GB", first.PlanDetails.Memory)
	assert.Equal(t, "da11", first.Facility)
	assert.Equal(t, "da", first.Metro)
	assert.Equal(t, d.ID, first.DeviceID)
	assert.False(t, first.Provisionable)
	assert.Len(t, first.SwitchUUID, 8)
	assert.True(t, all[1].Provisionable)
	assert.Empty(t, all[1].DeviceID)
	assert.Equal(t, "da6", all[1].Facility)
	last := all[130]
	assert.Equal(t, large[0], last.ID)
	assert.Equal(t, "sv16", last.Facility)
	assert.Equal(t, "sv", last.Metro)

	got, err := e.client.GetHardwareReservation(e.ctx, ids[1])
	require.NoError(t, err)
	assert.Equal(t, all[1], *got)
	_, err = e.client.GetHardwareReservation(e.ctx, "00000000-0000-4000-8000-000000000000")
	assert.True(t, metal.IsNotFound(err), "%v", err)
	e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultForbidden, Operations: []string{metalsim.OpFindHardwareReservationByID}, Count: 1})
	_, err = e.client.GetHardwareReservation(e.ctx, ids[1])
	assert.Equal(t, failure.Forbidden, failure.ClassOf(err), "%v", err)
	_, err = e.client.GetHardwareReservation(e.ctx, "")
	assert.Equal(t, failure.Invalid, failure.ClassOf(err))
}

// How the controllers will see refused creates on reservations and on the
// spot market.
func TestSimCapacityRefusalsAreClassified(t *testing.T) {
	e := newSimEnv(t, metalsim.DefaultTimings())
	tm := metalsim.DefaultTimings()
	ids, err := e.sim.AddHardwareReservations(simProject, metalsim.HardwareReservation{Plan: "c3.small.x86", Metro: "da"}, 1)
	require.NoError(t, err)
	create := func(mutate func(*metal.CreateDeviceRequest)) (*metal.Device, error) {
		req := deviceRequest("node", "cluster:test")
		mutate(&req)
		return e.client.CreateDevice(e.ctx, req)
	}
	onReservation := func(r *metal.CreateDeviceRequest) { r.HardwareReservationID = ids[0] }
	nextAvailable := func(r *metal.CreateDeviceRequest) { r.HardwareReservationID = "next-available" }

	d, err := create(onReservation)
	require.NoError(t, err)
	_, err = create(onReservation)
	assert.Equal(t, failure.Invalid, failure.ClassOf(err), "in use: %v", err)
	_, err = create(nextAvailable)
	assert.Equal(t, failure.NoCapacity, failure.ClassOf(err), "none left: %v", err)

	e.clock.Advance(tm.Queue + tm.IPXEBoot)
	require.NoError(t, e.client.DeleteDevice(e.ctx, d.ID, false))
	e.clock.Advance(tm.Deprovision)
	_, err = create(onReservation)
	assert.Equal(t, failure.Busy, failure.ClassOf(err), "released minutes ago: %v", err)
	e.clock.Advance(tm.ReservationRelease)
	_, err = create(nextAvailable)
	require.NoError(t, err)

	zero := 0
	require.NoError(t, e.sim.SetSpotMarket(metalsim.SpotMarket{Metro: "ny", Plan: "c3.small.x86", Price: 0.3, Capacity: &zero}))
	spot := func(bid float64) func(*metal.CreateDeviceRequest) {
		return func(r *metal.CreateDeviceRequest) { r.Metro, r.SpotInstance, r.SpotPriceMax = "ny", true, bid }
	}
	_, err = create(spot(0.1))
	assert.Equal(t, failure.Invalid, failure.ClassOf(err), "bid below the market: %v", err)
	_, err = create(spot(0.5))
	assert.Equal(t, failure.NoCapacity, failure.ClassOf(err), "no spot capacity: %v", err)
}

func TestSimSpotPrices(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	require.NoError(t, e.sim.SetSpotMarket(metalsim.SpotMarket{Metro: "sy", Plan: "n3.xlarge.x86", Price: 1.25}))
	prices, err := e.client.ListSpotPrices(e.ctx)
	require.NoError(t, err)
	byKey := map[string]float64{}
	for _, p := range prices {
		byKey[p.Metro+"/"+p.Plan] = p.Price
	}
	assert.Len(t, byKey, len(prices), "one price per metro and plan")
	assert.InDelta(t, 1.25, byKey["sy/n3.xlarge.x86"], 1e-9, "a metro the SDK's model does not name")
	assert.InDelta(t, 0.22, byKey["da/c3.small.x86"], 1e-9, "one it names")
	assert.Equal(t, "am", prices[0].Metro, "sorted by metro, then plan")

	e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultServerError, Operations: []string{metalsim.OpFindMetroSpotMarketPrices}, Count: 1})
	_, err = e.client.ListSpotPrices(e.ctx)
	assert.True(t, metal.IsTransient(err), "%v", err)
}

func TestSimDeviceTerminationTime(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	at := e.clock.Now().Add(time.Hour).Truncate(time.Second)
	req := deviceRequest("spot-1", "cluster:test")
	req.SpotInstance, req.SpotPriceMax, req.TerminationTime = true, 1, &at
	d, err := e.client.CreateDevice(e.ctx, req)
	require.NoError(t, err)
	assert.True(t, d.Spot)
	assert.True(t, at.Equal(d.TerminationTime), "%s", d.TerminationTime)
	events, err := e.client.ListDeviceEvents(e.ctx, d.ID)
	require.NoError(t, err)
	var notices []metal.Event
	for _, ev := range events {
		if ev.Type == metalsim.EventTerminationNotice {
			notices = append(notices, ev)
		}
	}
	require.Len(t, notices, 1)
	assert.Equal(t, d.ID, notices[0].DeviceID)
	assert.Contains(t, notices[0].Interpolated, "spot-1 will be terminated at "+at.UTC().Format(time.RFC3339))
}
