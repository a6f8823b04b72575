package simulatorcmd

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const seedProject = "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d"

const seedFile = `projects:
  - id: ` + seedProject + `
    tokens: [seed-token-1, seed-token-2]
    hardware_reservations:
      - plan: c3.small.x86
        metro: da
        count: 2
spot_market:
  - metro: da
    plan: c3.small.x86
    price: 0.4
    capacity: 1
`

// The command as a demo or a benchmark starts it: projects, tokens and
// reservations from a seed file and flags, served through the real SDK, and
// the faults an outside client injects through the admin API hitting the
// same API.
func TestSeedFileAndAdminAPI(t *testing.T) {
	seed := filepath.Join(t.TempDir(), "seed.yaml")
	require.NoError(t, os.WriteFile(seed, []byte(seedFile), 0o600))
	p := startSimulator(t, "--seed-file", seed, "--extra-project", "flag-token:"+seedProject,
		"--hardware-reservation", seedProject+":m3.small.x86:sv15", "--timing-scale", "0")
	ctx := context.Background()

	for _, tok := range []string{"seed-token-1", "seed-token-2", "flag-token"} {
		list, _, err := sdk(p.url, tok).HardwareReservationsApi.FindProjectHardwareReservations(ctx, seedProject).Execute()
		require.NoError(t, err, "token %s", tok)
		require.Len(t, list.HardwareReservations, 3)
		assert.Equal(t, "m3.small.x86", list.HardwareReservations[2].Plan.GetSlug())
		assert.Equal(t, "sv15", list.HardwareReservations[2].Facility.GetCode())
	}
	client := sdk(p.url, "seed-token-1")
	list, _, err := client.HardwareReservationsApi.FindProjectHardwareReservations(ctx, seedProject).Execute()
	require.NoError(t, err)
	reservation := list.HardwareReservations[0].GetId()
	one, _, err := client.HardwareReservationsApi.FindHardwareReservationById(ctx, reservation).Execute()
	require.NoError(t, err)
	assert.True(t, one.GetProvisionable())

	// A fault injected from outside refuses the next create, once.
	admin := strings.TrimSuffix(p.url, "/metal/v1") + "/_sim/faults"
	resp, err := http.Post(admin, "application/json", strings.NewReader(`{"kind":"no_capacity","operations":["createDevice"],"count":1}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	create := func(hostname string, spot bool) (*metalv1.Device, *http.Response, error) {
		in := metalv1.DeviceCreateInMetroInput{Metro: "da", Plan: "c3.small.x86", OperatingSystem: "ubuntu_22_04",
			Hostname: metalv1.PtrString(hostname), HardwareReservationId: metalv1.PtrString(reservation)}
		if spot {
			in.HardwareReservationId = nil
			in.SpotInstance, in.SpotPriceMax = metalv1.PtrBool(true), metalv1.PtrFloat32(0.5)
		}
		return client.DevicesApi.CreateDevice(ctx, seedProject).CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	}
	_, resp, err = create("refused", false)
	require.Error(t, err)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	dev, _, err := create("reserved", false)
	require.NoError(t, err, "the fault fired once only")
	assert.Equal(t, reservation, filepath.Base(dev.HardwareReservation.GetHref()))

	// The spot market of the seed file: room for one server.
	_, _, err = create("spot-1", true)
	require.NoError(t, err)
	_, resp, err = create("spot-2", true)
	require.Error(t, err)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)

	resp, err = http.Get(admin)
	require.NoError(t, err)
	defer resp.Body.Close()
	var faults struct {
		Faults []struct {
			Fired int `json:"fired"`
		} `json:"faults"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&faults))
	require.Len(t, faults.Faults, 1)
	assert.Equal(t, 1, faults.Faults[0].Fired)
	p.stop(t)
	for _, tok := range []string{"seed-token-1", "seed-token-2", "flag-token"} {
		assert.NotContains(t, p.logs(t), tok, "a token in the log")
	}
}
