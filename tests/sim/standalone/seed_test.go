package standalone

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

const seedYAML = `projects:
  - id: 0f0e0d0c-0b0a-4909-8807-060504030201
    tokens: [seed-token-a, seed-token-b]
    hardware_reservations:
      - plan: c3.small.x86
        metro: da
        count: 2
      - plan: m3.large.x86
        facility: sv16
        spare: true
  - id: 7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e
    tokens: [seed-token-c]
spot_market:
  - metro: da
    plan: c3.small.x86
    price: 0.31
    capacity: 4
`

// The same seed as JSON.
const seedJSON = `{"projects":[{"id":"0f0e0d0c-0b0a-4909-8807-060504030201","tokens":["seed-token-a","seed-token-b"],
"hardware_reservations":[{"plan":"c3.small.x86","metro":"da","count":2},{"plan":"m3.large.x86","facility":"sv16","spare":true}]},
{"id":"7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e","tokens":["seed-token-c"]}],
"spot_market":[{"metro":"da","plan":"c3.small.x86","price":0.31,"capacity":4}]}`

func writeSeed(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestSeedFileStartsTheSimulator(t *testing.T) {
	for name, file := range map[string]string{"seed.yaml": seedYAML, "seed.json": seedJSON} {
		t.Run(name, func(t *testing.T) {
			seed, err := ReadSeedFile(writeSeed(t, name, file))
			require.NoError(t, err)
			cfg := Config{TimingScale: 0}
			seed.AddTo(&cfg)
			r, err := ParseReservation("7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e:n3.xlarge.x86:ny:3")
			require.NoError(t, err)
			cfg.Reservations = append(cfg.Reservations, r)
			s := start(t, cfg)

			ctx := context.Background()
			for _, tok := range []string{"seed-token-a", "seed-token-b"} {
				list, _, err := sdk(s.URL, tok).HardwareReservationsApi.FindProjectHardwareReservations(ctx, projectID).Execute()
				require.NoError(t, err)
				require.Len(t, list.HardwareReservations, 3)
				assert.Equal(t, "da11", list.HardwareReservations[0].Facility.GetCode())
				assert.Equal(t, "da6", list.HardwareReservations[1].Facility.GetCode())
				assert.Equal(t, "sv16", list.HardwareReservations[2].Facility.GetCode())
				assert.True(t, list.HardwareReservations[2].GetSpare())
			}
			other, _, err := sdk(s.URL, "seed-token-c").HardwareReservationsApi.
				FindProjectHardwareReservations(ctx, "7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e").Execute()
			require.NoError(t, err)
			assert.Len(t, other.HardwareReservations, 3, "from the flag")
			assert.Equal(t, "ny5", other.HardwareReservations[0].Facility.GetCode())

			prices, _, err := sdk(s.URL, "seed-token-c").SpotMarketApi.FindMetroSpotMarketPrices(ctx).Metro("da").Plan("c3.small.x86").Execute()
			require.NoError(t, err)
			assert.InDelta(t, 0.31, prices.SpotMarketPrices.Da.AdditionalProperties["c3.small.x86"].(map[string]interface{})["price"], 1e-6)
		})
	}
}

func TestBadSeeds(t *testing.T) {
	cases := map[string]struct {
		content string
		want    string
	}{
		"unknown field":    {"projects:\n  - id: p1\n    tokens: [seed-secret-1]\n    colour: blue\n", "colour"},
		"no projects":      {"spot_market: []\n", "no projects"},
		"no id":            {"projects:\n  - tokens: [seed-secret-1]\n", "project 1 has no id"},
		"no tokens":        {"projects:\n  - id: p1\n", "project p1 has no tokens"},
		"empty token":      {"projects:\n  - id: p1\n    tokens: ['']\n", "token 1 is empty"},
		"foreign project":  {"projects:\n  - id: p1\n    tokens: [seed-secret-1]\n    hardware_reservations:\n      - {project_id: p2, plan: c3.small.x86, metro: da}\n", "names project p2"},
		"not YAML or JSON": {"projects: [\n", "seed file"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ReadSeedFile(writeSeed(t, "seed.yaml", tc.content))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "seed-secret-1")
		})
	}
	_, err := ReadSeedFile(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestSeedsTheSimulatorRefuses(t *testing.T) {
	ok := []Project{{Token: token, ID: projectID}}
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"reservation of an unserved project": {Config{Projects: ok, Reservations: []Reservation{{ProjectID: "other", HardwareReservation: metalsim.HardwareReservation{Plan: "c3.small.x86", Metro: "da"}}}}, `project "other" is not served`},
		"unknown plan":                       {Config{Projects: ok, Reservations: []Reservation{{ProjectID: projectID, HardwareReservation: metalsim.HardwareReservation{Plan: "z9.huge", Metro: "da"}}}}, `plan "z9.huge"`},
		"facility outside the metro":         {Config{Projects: ok, Reservations: []Reservation{{ProjectID: projectID, HardwareReservation: metalsim.HardwareReservation{Plan: "c3.small.x86", Metro: "da", Facility: "ny5"}}}}, `facility "ny5"`},
		"negative spot price":                {Config{Projects: ok, SpotMarket: []metalsim.SpotMarket{{Metro: "da", Plan: "c3.small.x86", Price: -1}}}, "negative"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Start(context.Background(), tc.cfg)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	for _, bad := range []string{"p1:c3.small.x86", "p1::da", "p1:c3.small.x86:da:0", "p1:c3.small.x86:da:x", "a:b:c:d:e"} {
		_, err := ParseReservation(bad)
		assert.Error(t, err, bad)
	}
	r, err := ParseReservation("p1:c3.small.x86:da11")
	require.NoError(t, err)
	assert.Equal(t, Reservation{ProjectID: "p1", HardwareReservation: metalsim.HardwareReservation{Plan: "c3.small.x86", Facility: "da11"}, Count: 1}, r)
}
