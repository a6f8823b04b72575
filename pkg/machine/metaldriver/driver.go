// Package metaldriver implements the hardware seam for the servers the
// addon provisions on Equinix Metal, through the pkg/metal seam. The Metal
// API is their management controller: a device's plan says what the
// hardware is, the project's event log says what happened to it, and device
// actions switch it on, off or reboot it.
//
// Events are read once per project and interval (one paginated project
// event list, never a call per device), kept per device until the
// machine's owner has forwarded them, and announced through
// Options.Notify. How far each project's log has been read is kept in a
// LogPositionStore, so that a restarted controller (or a new leader) reads
// on from there. Projects with spot servers are asked, with one filtered
// device list per TerminationInterval, which devices the platform is to
// take back.
package metaldriver

import (
	"context"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Defaults of Options.
const (
	DefaultEventsInterval      = 5 * time.Minute
	DefaultTerminationInterval = time.Minute
	// initialLookback bounds the first read of a project whose log was never
	// read before (a first install, an upgrade): its last hour, not its
	// whole history.
	initialLookback = time.Hour
	// skew is read again at every poll: the API may list an event a little
	// after the time it carries.
	skew = time.Minute
	// rescan is how often the list of projects is looked at again.
	rescan = 10 * time.Second
	// maxBuffered bounds the events kept for one device.
	maxBuffered = 500
)

// LogPositionStore keeps, per project, the time up to which the project's
// event log has been read and every event of a known device forwarded.
type LogPositionStore interface {
	Load(projectID string) (at time.Time, found bool, err error)
	Save(projectID string, at time.Time) error
}

// Options configure a Driver. Zero durations pick the defaults; a negative
// one turns that poll off.
type Options struct {
	Provider            metal.Provider
	EventsInterval      time.Duration
	TerminationInterval time.Duration
	// Plans is the plans list the facts are read from, shared with the
	// controller's other readers; nil makes one of the driver's own.
	Plans *metal.PlanCatalog
	// Store keeps the projects' log positions; nil keeps them in memory only.
	Store LogPositionStore
	// Notify is called with the IDs of the devices that have news: new
	// events, or a new termination time. It must not block.
	Notify func(deviceIDs []string)
	// Now is the driver's clock (time.Now when nil).
	Now func() time.Time
}

// Project is one Metal project whose devices are machines of the chain.
type Project struct {
	Credentials metal.Credentials
	// WatchTerminations asks for the project's devices with a termination
	// time every TerminationInterval: it has spot servers.
	WatchTerminations bool
}

// Device names one device of a project: its ID and the plan it was created
// with.
type Device struct {
	ID   string
	Plan string
}

// Driver serves the machines of every project.
type Driver struct {
	opts Options
	// wake brings the Run loop forward: a project appeared, or a
	// termination notice asks for a termination list at once.
	wake chan struct{}

	mu       sync.Mutex
	projects map[string]*projectState
}

// New returns a Driver; Run polls for it.
func New(opts Options) *Driver {
	if opts.EventsInterval == 0 {
		opts.EventsInterval = DefaultEventsInterval
	}
	if opts.TerminationInterval == 0 {
		opts.TerminationInterval = DefaultTerminationInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Plans == nil {
		opts.Plans = metal.NewPlanCatalog(metal.DefaultPlanCatalogTTL, opts.Now)
	}
	if opts.Notify == nil {
		opts.Notify = func([]string) {}
	}
	return &Driver{
		opts:     opts,
		wake:     make(chan struct{}, 1),
		projects: map[string]*projectState{},
	}
}

// Machine returns the machine of one device, reached with creds.
func (d *Driver) Machine(creds metal.Credentials, dev Device) machine.Machine {
	return &deviceMachine{d: d, creds: creds, dev: dev}
}

// Run polls the projects until ctx ends. projects is asked for the current
// list at every pass; a project no longer in it is forgotten.
func (d *Driver) Run(ctx context.Context, projects func() []Project) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-d.wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
		timer.Reset(d.pass(ctx, projects()))
	}
}

// pass polls every project that is due and returns how long to wait for the
// next one.
func (d *Driver) pass(ctx context.Context, list []Project) time.Duration {
	next := rescan
	keep := map[string]bool{}
	for _, p := range list {
		id := p.Credentials.ProjectID
		keep[id] = true
		ps := d.project(id)
		client, err := d.opts.Provider.Client(p.Credentials)
		if err != nil {
			logrus.Debugf("hardware events of project %s: no client: %v", id, err)
			continue
		}
		if d.opts.EventsInterval > 0 {
			if wait := ps.due(d.opts.Now(), &ps.nextEvents); wait <= 0 {
				d.pollEvents(ctx, ps, client)
				ps.schedule(&ps.nextEvents, d.opts.Now().Add(d.opts.EventsInterval))
			} else {
				next = min(next, wait)
			}
		}
		watch := p.WatchTerminations && d.opts.TerminationInterval > 0
		wait := ps.due(d.opts.Now(), &ps.nextTerminations)
		if ps.takeTerminationAsk() || (watch && wait <= 0) {
			d.pollTerminations(ctx, ps, client)
			if watch {
				ps.schedule(&ps.nextTerminations, d.opts.Now().Add(d.opts.TerminationInterval))
			}
		} else if watch {
			next = min(next, wait)
		}
	}
	d.forget(keep)
	return max(next, 10*time.Millisecond)
}

// project returns the state of a project, creating it. A project first
// met through one of its machines brings the next pass forward, so that a
// new server's events do not wait for the next look at the project list.
func (d *Driver) project(id string) *projectState {
	d.mu.Lock()
	ps, ok := d.projects[id]
	if !ok {
		ps = newProjectState(id)
		d.projects[id] = ps
	}
	d.mu.Unlock()
	if !ok {
		d.wakeRun()
	}
	return ps
}

func (d *Driver) forget(keep map[string]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id := range d.projects {
		if !keep[id] {
			delete(d.projects, id)
		}
	}
}

// wakeRun has Run poll at once, unless it was asked to already.
func (d *Driver) wakeRun() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// holdFor is how long events nobody has asked for hold the log position back:
// long enough for a new device's Instance to record its ID and ask.
func (d *Driver) holdFor() time.Duration {
	return max(3*d.opts.EventsInterval, 15*time.Minute)
}
