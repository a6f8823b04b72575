package metalsim

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prices reads a spot report back through the SDK model's own JSON into
// location -> plan -> price.
func prices(t *testing.T, report any) map[string]map[string]float64 {
	t.Helper()
	b, err := json.Marshal(report)
	require.NoError(t, err)
	var raw map[string]map[string]struct {
		Price float64 `json:"price"`
	}
	require.NoError(t, json.Unmarshal(b, &raw))
	out := map[string]map[string]float64{}
	for loc, plans := range raw {
		out[loc] = map[string]float64{}
		for plan, p := range plans {
			out[loc][plan] = p.Price
		}
	}
	return out
}

func TestSpotPriceReports(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.sim.SetSpotMarket(SpotMarket{Metro: "dc", Plan: "c3.small.x86", Price: 0.41}))
	sm := e.client.SpotMarketApi

	metros, resp, err := sm.FindMetroSpotMarketPrices(e.ctx).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotNil(t, metros.SpotMarketPrices.Da, "metros the model names are its fields")
	got := prices(t, metros.SpotMarketPrices)
	assert.Len(t, got, len(catalogMetros))
	assert.InDelta(t, 0.22, got["da"]["c3.small.x86"], 1e-9, "30%% of the on-demand rate, in cents")
	assert.InDelta(t, 0.41, got["dc"]["c3.small.x86"], 1e-9, "metros it does not name are additional properties")
	assert.InDelta(t, 0.93, got["ny"]["m3.large.x86"], 1e-9)

	one, _, err := sm.FindMetroSpotMarketPrices(e.ctx).Metro("dc").Plan("c3.small.x86").Execute()
	require.NoError(t, err)
	assert.Equal(t, map[string]map[string]float64{"dc": {"c3.small.x86": 0.41}}, prices(t, one.SpotMarketPrices))
}

func TestSpotCreatesFollowTheMarket(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	one := 1
	require.NoError(t, e.sim.SetSpotMarket(SpotMarket{Metro: "da", Plan: "c3.small.x86", Price: 0.7, Capacity: &one}))

	low := spotInput("spot-low")
	low.SpotPriceMax = ptr(float32(0.5))
	_, resp, err := e.createIn(low)
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "spot_price_max of 0.50 is below the current spot market price of 0.70")

	at := spotInput("spot-1")
	at.SpotPriceMax = ptr(float32(0.7))
	d := e.createActive("spot-1", func(in *metalv1.DeviceCreateInMetroInput) { *in = at })
	assert.True(t, d.GetSpotInstance())
	_, resp, err = e.createIn(spotInput("spot-2"))
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "Spot market capacity for plan c3.small.x86 in metro da is exhausted")
	e.create(ipxeInput("on-demand"))

	_, err = e.client.DevicesApi.DeleteDevice(e.ctx, d.GetId()).Execute()
	require.NoError(t, err)
	e.clock.Advance(tm.Deprovision)
	e.create(spotInput("spot-2"))
}
