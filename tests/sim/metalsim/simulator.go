package metalsim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// ErrNotFound is returned by Simulator methods given an unknown object ID.
var ErrNotFound = errors.New("not found")

// Options configure a Simulator.
type Options struct {
	// Clock drives every transition; nil means the real clock.
	Clock Clock
	// Timings are the durations of asynchronous work. The zero value makes
	// every step complete on the next access; see DefaultTimings.
	Timings Timings
	// Seed makes probabilistic faults and generated IDs reproducible.
	Seed int64
	// RateLimit, when positive, makes every response carry X-RateLimit-*
	// headers and answers 429 once a token made more than RateLimit
	// requests in the current RateLimitWindow (default one minute) of the
	// simulator's clock.
	RateLimit       int
	RateLimitWindow time.Duration
}

// Simulator is an in-memory Equinix Metal API. All state sits behind one
// mutex; transitions are evaluated lazily from the Clock on every access.
type Simulator struct {
	clock   Clock
	timings Timings
	rate    rateLimiter

	mu           sync.Mutex
	ids          *idSource
	faultRand    *rand.Rand
	tokens       map[string]map[string]bool
	projects     map[string]*project
	devices      map[string]*device
	ports        map[string]*port
	vlans        map[string]*vlan
	blocks       map[string]*ipBlock
	assignments  map[string]*ipAssignment
	sessions     map[string]*bgpSession
	reservations map[string]*hwReservation
	timers       timerQueue
	timerSeq     uint64
	objSeq       uint64
	alloc        allocator
	faults       []*faultEntry
	faultSeq     FaultID
	requests     []Request
	subs         map[int]func(Notification)
	subSeq       int
	pending      []Notification
	routers      *routerState
	facilityNext map[string]int
	spot         map[spotKey]*spotMarket
	// given are the blocks added by AddIPReservation, which pool blocks
	// must not overlap.
	given []*ipBlock

	delivering sync.Mutex
	handler    http.Handler
}

// New returns a Simulator with no projects; add them with AddProject.
func New(opts Options) *Simulator {
	clock := opts.Clock
	if clock == nil {
		clock = realClock{}
	}
	window := opts.RateLimitWindow
	if window <= 0 {
		window = time.Minute
	}
	s := &Simulator{
		clock:        clock,
		timings:      opts.Timings,
		rate:         rateLimiter{limit: opts.RateLimit, window: window, windows: map[string]*rateWindow{}},
		ids:          newIDSource(opts.Seed),
		faultRand:    rand.New(rand.NewPCG(uint64(opts.Seed), 0xfa17)),
		tokens:       map[string]map[string]bool{},
		projects:     map[string]*project{},
		devices:      map[string]*device{},
		ports:        map[string]*port{},
		vlans:        map[string]*vlan{},
		blocks:       map[string]*ipBlock{},
		assignments:  map[string]*ipAssignment{},
		sessions:     map[string]*bgpSession{},
		reservations: map[string]*hwReservation{},
		alloc:        newAllocator(),
		subs:         map[int]func(Notification){},
		facilityNext: map[string]int{},
		spot:         map[spotKey]*spotMarket{},
	}
	s.handler = s.routes()
	return s
}

// Handler serves the API under /metal/v1 and the metadata service under
// /metadata and /userdata.
func (s *Simulator) Handler() http.Handler { return s.handler }

// Now returns the simulator clock's time.
func (s *Simulator) Now() time.Time { return s.clock.Now() }

// AddProject lets token act on projectID, creating the project if needed.
// A token may be given several projects and a project several tokens.
func (s *Simulator) AddProject(token, projectID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.projects[projectID]; !ok {
		s.projects[projectID] = &project{
			id:        projectID,
			name:      "project-" + shortID(projectID),
			createdAt: s.clock.Now(),
			userID:    s.ids.uuid(),
		}
	}
	if s.tokens[token] == nil {
		s.tokens[token] = map[string]bool{}
	}
	s.tokens[token][projectID] = true
}

// Tick applies every transition that is due and delivers the resulting
// notifications, so observers react even when no client is polling.
func (s *Simulator) Tick() {
	s.locked(func() { s.advanceLocked(s.clock.Now()) })
	s.deliver()
}

// locked runs fn under the simulator lock.
func (s *Simulator) locked(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn()
}

// RunTicker calls Tick every interval until ctx is done. It is meant for a
// simulator on the real clock; with a FakeClock call Tick after Advance.
func (s *Simulator) RunTicker(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Tick()
		}
	}
}

// Devices returns deep copies of the project's devices with every nested
// object included, ordered by creation time.
func (s *Simulator) Devices(projectID string) []metalv1.Device {
	var views []metalv1.Device
	s.locked(func() {
		now := s.clock.Now()
		s.advanceLocked(now)
		for _, d := range s.projectDevicesLocked(projectID) {
			views = append(views, s.notificationView(d, now))
		}
	})
	var out []metalv1.Device
	for _, v := range views {
		out = append(out, deepCopy(v))
	}
	return out
}

// Device returns a deep copy of one device with every nested object
// included, and whether it exists.
func (s *Simulator) Device(id string) (metalv1.Device, bool) {
	var view metalv1.Device
	var ok bool
	s.locked(func() {
		now := s.clock.Now()
		s.advanceLocked(now)
		var d *device
		if d, ok = s.devices[id]; ok {
			view = s.notificationView(d, now)
		}
	})
	if !ok {
		return metalv1.Device{}, false
	}
	return deepCopy(view), true
}

// DeviceNetwork returns the device's network as its host sees it.
func (s *Simulator) DeviceNetwork(id string) (NetworkState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(s.clock.Now())
	d, ok := s.devices[id]
	if !ok {
		return NetworkState{}, fmt.Errorf("device %s: %w", id, ErrNotFound)
	}
	return s.networkStateLocked(d), nil
}

// DeviceEvents returns copies of the device's events, newest first.
func (s *Simulator) DeviceEvents(id string) ([]metalv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(s.clock.Now())
	d, ok := s.devices[id]
	if !ok {
		return nil, fmt.Errorf("device %s: %w", id, ErrNotFound)
	}
	out := make([]metalv1.Event, 0, len(d.events))
	for i := len(d.events) - 1; i >= 0; i-- {
		out = append(out, copyEvent(d.events[i].ev))
	}
	return out, nil
}

// AddDeviceEvent records an event on the device as if the platform had
// logged it; body may use "{{ device }}" for the hostname. A join agent uses
// it to report install outcomes.
func (s *Simulator) AddDeviceEvent(deviceID, eventType, body string) error {
	return s.AddDeviceEventWithState(deviceID, eventType, "info", body)
}

// AddMaintenanceEvent records a maintenance notice on the device, as the
// platform posted before work on a server's hardware or its switch: an
// EventMaintenance saying when it starts and what, for an alert or a
// drain to react to. It changes nothing else.
func (s *Simulator) AddMaintenanceEvent(deviceID string, start time.Time, message string) error {
	if message == "" {
		message = "hardware maintenance"
	}
	return s.AddDeviceEventWithState(deviceID, EventMaintenance, "scheduled",
		fmt.Sprintf("Maintenance of {{ device }} is scheduled for %s: %s", start.UTC().Format(time.RFC3339), message))
}

// AddDeviceEventWithState is AddDeviceEvent with the event's state.
func (s *Simulator) AddDeviceEventWithState(deviceID, eventType, state, body string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.advanceLocked(now)
	d, ok := s.devices[deviceID]
	if !ok {
		return fmt.Errorf("device %s: %w", deviceID, ErrNotFound)
	}
	s.recordEventLocked(d, now, eventType, state, body)
	return nil
}

// DeleteDeviceOutOfBand removes a device at once, as if someone deleted it
// in the portal or the platform reclaimed it: no deprovisioning state, the
// next GET answers 404.
func (s *Simulator) DeleteDeviceOutOfBand(id string) error {
	var err error
	s.locked(func() {
		now := s.clock.Now()
		s.advanceLocked(now)
		d, ok := s.devices[id]
		if !ok {
			err = fmt.Errorf("device %s: %w", id, ErrNotFound)
			return
		}
		s.removeDeviceLocked(d, now, true)
	})
	s.deliver()
	return err
}

// projectDevicesLocked lists the project's devices in creation order; the
// slice is the index itself, so callers must not keep it across changes.
func (s *Simulator) projectDevicesLocked(projectID string) []*device {
	if p, ok := s.projects[projectID]; ok {
		return p.devices.all()
	}
	return nil
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
