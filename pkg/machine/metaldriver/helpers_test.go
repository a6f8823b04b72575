package metaldriver

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

const (
	token   = "driver-test-token"
	project = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
)

// world is a simulator on a fake clock behind the real SDK, and a driver on
// the same clock.
type world struct {
	t        *testing.T
	ctx      context.Context
	clock    *metalsim.FakeClock
	sim      *metalsim.Simulator
	provider metal.Provider
	client   metal.Client
	creds    metal.Credentials
	store    *memStore

	mu       sync.Mutex
	notified map[string]int
}

func newWorld(t *testing.T) *world {
	t.Helper()
	clock := metalsim.NewFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	sim := metalsim.New(metalsim.Options{Clock: clock, Seed: 3})
	sim.AddProject(token, project)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	p, err := metal.NewProvider(metal.Options{BaseURL: srv.URL, RequestsPerSecond: -1, Now: clock.Now, Timeout: 5 * time.Second})
	require.NoError(t, err)
	creds := metal.Credentials{Token: token, ProjectID: project}
	c, err := p.Client(creds)
	require.NoError(t, err)
	return &world{t: t, ctx: context.Background(), clock: clock, sim: sim, provider: p, client: c, creds: creds,
		store: &memStore{at: map[string]time.Time{}}, notified: map[string]int{}}
}

// driver is a new driver on the world's store, as after a restart.
func (w *world) driver() *Driver {
	return New(Options{Provider: w.provider, Store: w.store, Now: w.clock.Now, Notify: func(ids []string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, id := range ids {
			w.notified[id]++
		}
	}})
}

func (w *world) device(hostname string) *metal.Device {
	w.t.Helper()
	d, err := w.client.CreateDevice(w.ctx, metal.CreateDeviceRequest{
		Hostname: hostname, Plan: "c3.small.x86", Metro: "da", BillingCycle: metal.BillingHourly,
		OperatingSystem: metal.OperatingSystemCustomIPXE, IPXEScriptURL: "http://ipxe.invalid/x.ipxe",
	})
	require.NoError(w.t, err)
	got, err := w.client.GetDevice(w.ctx, d.ID)
	require.NoError(w.t, err)
	require.Equal(w.t, metal.DeviceStateActive, got.State)
	return got
}

// pollEvents runs one events poll of the project.
func (w *world) pollEvents(d *Driver) {
	d.pollEvents(w.ctx, d.project(project), w.client)
}

// deliver asks for a machine's events after cursor and returns them with
// the cursor after the last.
func (w *world) deliver(m machine.Machine, cursor string) ([]machine.Event, string) {
	w.t.Helper()
	batch, err := m.Events(w.ctx, cursor)
	require.NoError(w.t, err)
	if n := len(batch.Events); n > 0 {
		cursor = batch.Events[n-1].Cursor
	}
	return batch.Events, cursor
}

type memStore struct {
	mu    sync.Mutex
	at    map[string]time.Time
	saves int
}

func (s *memStore) Load(id string) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[id]
	return t, ok, nil
}

func (s *memStore) Save(id string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[id] = at
	s.saves++
	return nil
}
