package config

import (
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func validConfig() Config {
	return Config{
		Mode: ModeEquinix, Namespace: "harvester-system", SecretName: "equinix-addon", Threads: 5,
		MetalAPIURL: DefaultMetalAPIURL, HTTPAddress: ":8080", LeaderElect: true, OwnedThreads: 20,
		LeaderLockName: "harvester-equinix-addon", LogLevelName: "info", LogFormat: "text",
		MetalTimeout: 30 * time.Second, MetalRequestsPerSecond: 10, MetalBurst: 20, KubeAPIQPS: 50, KubeAPIBurst: 100,
		JoinTokenSecret: "equinix-addon", JoinTokenKey: "JOIN_TOKEN", IPXEAddress: ":8081",
		PollInterval: 15 * time.Second, OrphanSweepInterval: 10 * time.Minute, OrphanGracePeriod: 30 * time.Minute,
		CreateBackoff: time.Minute, VIPElasticIP: true, ElasticIPResync: time.Minute,
		BGPLocalASN: 65000, BGPResync: 10 * time.Minute,
	}
}

func TestNew(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*Config)
		wantErr []string
		check   func(t *testing.T, c *Config)
	}{
		{name: "defaults are valid", mutate: func(*Config) {}, check: func(t *testing.T, c *Config) {
			assert.Equal(t, logrus.InfoLevel, c.LogLevel)
			assert.Equal(t, "https://api.equinix.com/metal/v1", c.MetalAPIURL)
		}},
		{name: "debug raises the log level", mutate: func(f *Config) { f.Debug = true }, check: func(t *testing.T, c *Config) {
			assert.Equal(t, logrus.DebugLevel, c.LogLevel)
		}},
		{name: "trailing slash trimmed", mutate: func(f *Config) { f.MetalAPIURL = "http://127.0.0.1:9/metal/v1/" }, check: func(t *testing.T, c *Config) {
			assert.Equal(t, "http://127.0.0.1:9/metal/v1", c.MetalAPIURL)
		}},
		{name: "metal URL without /metal/v1", mutate: func(f *Config) { f.MetalAPIURL = "https://api.equinix.com" },
			wantErr: []string{"must end in /metal/v1"}},
		{name: "every problem reported at once", mutate: func(f *Config) { f.Threads = 0; f.Namespace = ""; f.LogLevelName = "loud" },
			wantErr: []string{"--threads", "--namespace", "--log-level"}},
		{name: "http cluster URL refused", mutate: func(f *Config) { f.ClusterURL = "http://10.0.0.1" },
			wantErr: []string{"--cluster-url"}},
		{name: "bad http address", mutate: func(f *Config) { f.HTTPAddress = "8080" },
			wantErr: []string{"--http-address"}},
		{name: "kube API limit not positive", mutate: func(f *Config) { f.KubeAPIQPS = 0 },
			wantErr: []string{"--kube-api-qps"}},
		{name: "create backoff too short", mutate: func(f *Config) { f.CreateBackoff = time.Millisecond },
			wantErr: []string{"--create-backoff"}},
		{name: "events interval too short", mutate: func(f *Config) { f.DeviceEventsInterval = time.Millisecond },
			wantErr: []string{"--device-events-interval"}},
		{name: "fencing outside the hardware mode, unbounded, without grace or own node",
			mutate:  func(f *Config) { f.Fencing = true },
			wantErr: []string{"--fencing needs --mode seeder", "--fencing-max-fenced", "--fencing-grace-period", "--node-name"}},
		{name: "fencing set up", mutate: func(f *Config) {
			f.Mode, f.Fencing, f.FencingMaxFenced, f.FencingGracePeriod, f.NodeName = ModeSeeder, true, 1, time.Minute, "hv-1"
		}},
		{name: "bmc timeout negative", mutate: func(f *Config) { f.BMCTimeout = -time.Second }, wantErr: []string{"--bmc-timeout"}},
		{name: "bmc power freshness negative", mutate: func(f *Config) { f.BMCPowerFreshness = -time.Second }, wantErr: []string{"--bmc-power-freshness"}},
		{name: "termination check negative", mutate: func(f *Config) { f.TerminationCheckInterval = -time.Second },
			wantErr: []string{"--termination-check-interval"}},
		{name: "poll interval too short", mutate: func(f *Config) { f.PollInterval = time.Millisecond },
			wantErr: []string{"--poll-interval"}},
		{name: "ElasticIP and BGP settings", mutate: func(f *Config) { f.ElasticIPResync = 0; f.BGPLocalASN = 0; f.BGPResync = time.Millisecond },
			wantErr: []string{"--elastic-ip-resync-interval", "--bgp-local-asn", "--bgp-resync-interval"}},
		{name: "seeder mode", mutate: func(f *Config) { f.Mode = ModeSeeder }, check: func(t *testing.T, c *Config) {
			assert.Empty(t, c.Warnings)
		}},
		{name: "hardware, the seeder mode's former name", mutate: func(f *Config) { f.Mode = DeprecatedModeHardware }, check: func(t *testing.T, c *Config) {
			assert.Equal(t, ModeSeeder, c.Mode, "runs the seeder mode")
			require.Len(t, c.Warnings, 1)
			assert.Contains(t, c.Warnings[0], "--mode hardware is the former name of --mode seeder")
		}},
		{name: "fencing and owned pools under the former name", mutate: func(f *Config) {
			f.Mode, f.OwnedPools, f.Fencing, f.FencingMaxFenced, f.FencingGracePeriod, f.NodeName = DeprecatedModeHardware, true, true, 1, time.Minute, "hv-1"
		}},
		{name: "unknown mode", mutate: func(f *Config) { f.Mode = "metal" }, wantErr: []string{`--mode must be equinix or seeder, got "metal"`}},
		{name: "no mode", mutate: func(f *Config) { f.Mode = "" }, wantErr: []string{"--mode"}},
		{name: "a 4-byte ASN", mutate: func(f *Config) { f.BGPLocalASN = 4200000000 }},
		{name: "an artifacts mirror", mutate: func(f *Config) { f.ArtifactsMirror = "http://mirror.example.com/harvester" }},
		{name: "owned pools without workers", mutate: func(f *Config) { f.Mode, f.OwnedPools, f.OwnedThreads = ModeSeeder, true, 0 },
			wantErr: []string{"--owned-threads"}},
		{name: "an artifacts mirror with a query", mutate: func(f *Config) { f.ArtifactsMirror = "http://mirror.example.com/?x=1" },
			wantErr: []string{"--artifacts-mirror"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig()
			tc.mutate(&cfg)
			err := cfg.Validate()
			if len(tc.wantErr) > 0 {
				require.Error(t, err)
				for _, w := range tc.wantErr {
					assert.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			if tc.check != nil {
				tc.check(t, &cfg)
			}
		})
	}
}
