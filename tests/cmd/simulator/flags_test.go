package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/standalone"
)

func TestSimulatorProjectsFromFlagsAndFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "seed.yaml")
	require.NoError(t, os.WriteFile(file, []byte("projects:\n  - id: p-file\n    tokens: [t-file]\n    hardware_reservations:\n      - {plan: c3.small.x86, metro: da, count: 2}\n"), 0o600))
	f := simulatorFlags{
		token: "t-flag", projectID: "p-flag", seedFile: file,
		extraProjects: *cli.NewStringSlice("t:x:p-extra"),
		reservations:  *cli.NewStringSlice("p-flag:m3.large.x86:sv16:3"),
		elasticIPs:    *cli.NewStringSlice("10.0.0.10/32@sg", "147.28.200.8/31"),
	}
	cfg, err := f.config()
	require.NoError(t, err)
	assert.Equal(t, []standalone.Project{{Token: "t-file", ID: "p-file"}, {Token: "t-flag", ID: "p-flag"}, {Token: "t:x", ID: "p-extra"}}, cfg.Projects)
	assert.Equal(t, []standalone.Reservation{
		{ProjectID: "p-file", HardwareReservation: metalsim.HardwareReservation{Plan: "c3.small.x86", Metro: "da"}, Count: 2},
		{ProjectID: "p-flag", HardwareReservation: metalsim.HardwareReservation{Plan: "m3.large.x86", Facility: "sv16"}, Count: 3},
	}, cfg.Reservations)
	assert.Equal(t, []standalone.ElasticIP{
		{IPReservationSpec: metalsim.IPReservationSpec{CIDR: "10.0.0.10/32", Metro: "sg", Type: "public_ipv4"}},
		{IPReservationSpec: metalsim.IPReservationSpec{CIDR: "147.28.200.8/31", Type: "global_ipv4"}},
	}, cfg.ElasticIPs)

	seedOnly := simulatorFlags{seedFile: file}
	cfg, err = seedOnly.config()
	require.NoError(t, err)
	assert.Len(t, cfg.Projects, 1, "a seed file alone is enough")

	for name, flags := range map[string]simulatorFlags{
		"nothing":         {},
		"token alone":     {token: "secret-tok"},
		"bad reservation": {token: "secret-tok", projectID: "p", reservations: *cli.NewStringSlice("p:c3.small.x86")},
		"missing seed":    {seedFile: filepath.Join(t.TempDir(), "none.yaml")},
		"bad extra":       {token: "secret-tok", projectID: "p", extraProjects: *cli.NewStringSlice("secret-extra")},
		"bad elastic IP":  {token: "secret-tok", projectID: "p", elasticIPs: *cli.NewStringSlice("10.0.0.10/32@")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := flags.config()
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "secret-")
		})
	}
}
