// Package bmcdriver serves the hardware chain's Machines from baseboard
// management controllers, through pkg/bmc (Redfish and IPMI): the driver of
// nodes the addon did not provision.
//
// A BMC is read per machine, at that machine's own interval: Events reads
// its health and its system event log only when a poll is due (the last
// poll's time is the caller's to keep, in a status, so restarts keep the
// pace) and otherwise says when to ask again (EventBatch.RecheckAfter).
// Facts come from the BMC's inventory, read with a poll and remembered in
// between. PowerState and Power always ask the BMC: a power request does
// not wait for the next poll.
//
// # Sessions
//
// BMCs serve a handful of sessions (iDRACs refuse a login past their limit)
// and count every login, so the driver keeps at most one session per BMC
// address and shares it between passes: a Machine lives for one pass of
// the chain, logs in on its first call (or takes the session a pass before
// it left), and lets go of it on Release. The session is kept for
// IdleLogout when the owner's next pass comes before then (a power action
// followed, a short poll interval) and logged out at once otherwise, and in
// any case once it sat unused for IdleLogout. Opening and closing take the
// link's lock, so two goroutines never open two sessions to one BMC. A
// session the BMC dropped is reopened once by pkg/bmc.
//
// # Holds
//
// A BMC that failed is not polled again before its owner's retry time
// (Hold). One that refused the credentials sees no login at all before it,
// whatever asks (a poll, a power request, a change of the node), unless the
// credentials change: the hold belongs to the credentials refused.
//
// # Credentials
//
// A caller may give the credentials lazily (MachineOptions.Credentials):
// they are read the first time the pass needs them, to log in or to tell
// whether a refusal's hold still holds, and not at all by a pass that asks
// the BMC nothing. ReadsDue tells a caller beforehand whether the pass's
// reads will.
package bmcdriver

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// IdleLogout is how long a session no pass uses is kept. It outlasts the
// pace of a power action's rechecks, and stays under the inactivity
// timeouts BMCs apply to sessions (a minute for IPMI, minutes for Redfish).
const IdleLogout = 30 * time.Second

// DialFunc connects to a BMC; bmc.Dial unless a test says otherwise.
type DialFunc func(ctx context.Context, ep bmc.Endpoint) (bmc.Client, error)

// ReadPowerFunc reads a BMC's power without a session where it can;
// bmc.ReadPowerState unless a test says otherwise.
type ReadPowerFunc func(ctx context.Context, ep bmc.Endpoint) (bmc.PowerState, bmc.Memo, error)

// Options configure a Driver.
type Options struct {
	// Dial connects to a BMC (bmc.Dial when nil).
	Dial DialFunc
	// ReadPower reads a BMC's power at the least cost (bmc.ReadPowerState
	// when nil).
	ReadPower ReadPowerFunc
	// IdleLogout is how long an unused session is kept (IdleLogout when
	// zero; negative logs out at the end of every pass).
	IdleLogout time.Duration
}

// Driver hands out Machines, keeps one session per BMC, remembers each
// machine's last facts and polls, and holds back a BMC that failed until
// its owner's retry time.
type Driver struct {
	dial      DialFunc
	readPower ReadPowerFunc
	idle      time.Duration

	mu    sync.Mutex
	facts map[string]machine.Facts
	holds map[string]hold
	// polled is when this process last polled each owner: a pass that
	// starts from a copy of the status older than its own last write must
	// not poll again.
	polled map[string]time.Time
	// powerReads are each owner's last power reading, for the checks of a
	// power action under way (MachineOptions.PowerPace).
	powerReads map[string]powerRead
	links      map[string]*link
	// forgets run when their owner is forgotten (Machine.OnForget).
	forgets map[string]func()
}

type powerRead struct {
	at    time.Time
	state bmc.PowerState
}

// hold keeps an owner's machines from polling before until. A hold for a
// refused login (refusal set) keeps them from logging in at all, as long
// as the credentials are the ones refused.
type hold struct {
	until   time.Time
	creds   string
	refusal error
}

// New returns a driver.
func New(o Options) *Driver {
	if o.Dial == nil {
		o.Dial = bmc.Dial
	}
	if o.IdleLogout == 0 {
		o.IdleLogout = IdleLogout
	}
	if o.ReadPower == nil {
		o.ReadPower = bmc.ReadPowerState
	}
	return &Driver{dial: o.Dial, readPower: o.ReadPower, idle: o.IdleLogout, facts: map[string]machine.Facts{}, holds: map[string]hold{}, forgets: map[string]func(){},
		polled: map[string]time.Time{}, powerReads: map[string]powerRead{}, links: map[string]*link{}}
}

// MachineOptions say which machine and how often to poll it.
type MachineOptions struct {
	// Owner names the machine's owner (its object's name), for Forget and
	// the holds.
	Owner string
	// Key identifies the machine across passes (its owner's UID): the facts
	// remembered and the health events' IDs belong to it.
	Key string
	// Interval is the time between two polls.
	Interval time.Duration
	// LastPolled is when the machine was last polled; zero when never.
	LastPolled time.Time
	// Spread puts the machine's polls on slots of its own, one interval
	// apart at a phase its Key gives (see slotAfter), rather than an
	// interval after the last poll: a fleet whose objects came at once
	// (created together, or all seen by a controller that started) is then
	// polled evenly over the interval instead of in that one burst, again
	// at every interval. The first poll is at once all the same.
	Spread bool
	// PowerPace, when set, says a power action is under way and its effect
	// is checked at most that often: a pass that comes sooner (the chain's
	// own status write, a change of the node) takes the last reading rather
	// than ask the BMC again.
	PowerPace time.Duration
	// PollNow has this pass poll whatever the schedule says (a hold after a
	// failure still counts): a node that was just bound to the machine gets
	// its health at once rather than an interval later.
	PollNow bool
	// Credentials, when set, gives the endpoint's username and password the
	// first time the pass needs them: to log in, or to tell whether a hold
	// on refused credentials still holds. A pass that never asks the BMC
	// anything then never reads them (the caller's Secret). Its error
	// fails the call that needed them, as a login never tried.
	Credentials func() (username string, password redact.Sensitive, err error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Fallbacks are the endpoints tried, in order, when nothing answers
	// at the machine's own, or not in its protocol (an address whose
	// protocol the caller does not know: Redfish, then IPMI).
	// Observation.Endpoint says which answered.
	Fallbacks []bmc.Endpoint
}

// Machine returns the machine behind ep for one pass of the chain; Release
// it at the end of the pass. With o.Credentials, ep needs none of its own.
func (d *Driver) Machine(ep bmc.Endpoint, o MachineOptions) *Machine {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Machine{d: d, ep: ep, candidates: append([]bmc.Endpoint{ep}, o.Fallbacks...), opts: o}
}

// factsKey names the facts remembered of the machine behind the endpoint
// spoken to.
func (m *Machine) factsKey() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.opts.Owner + "|" + m.opts.Key + "|" + string(m.ep.Protocol) + "|" + m.ep.Address()
}

// Forget drops what the driver remembers of an owner that is gone.
func (d *Driver) Forget(owner string) {
	d.mu.Lock()
	f := d.forgets[owner]
	delete(d.forgets, owner)
	d.forget(owner)
	d.mu.Unlock()
	if f != nil {
		f()
	}
}

func (d *Driver) forget(owner string) {
	delete(d.holds, owner)
	delete(d.polled, owner)
	delete(d.powerReads, owner)
	for k := range d.facts {
		if strings.HasPrefix(k, owner+"|") {
			delete(d.facts, k)
		}
	}
}

// holdOf is the owner's hold, whatever credentials it was set for.
func (d *Driver) holdOf(owner string) (hold, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.holds[owner]
	return h, ok
}

func (d *Driver) lastPoll(owner string) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.polled[owner]
}

func (d *Driver) notePoll(owner string, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.polled[owner] = at
}

// recentPower is the owner's last power reading when it is younger than
// pace.
func (d *Driver) recentPower(owner string, pace time.Duration, now time.Time) (bmc.PowerState, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.powerReads[owner]
	if !ok || pace <= 0 || now.Sub(r.at) >= pace {
		return "", false
	}
	return r.state, true
}

// notePower keeps a power reading; an empty state forgets the last one (a
// command was sent: the next check reads the BMC).
func (d *Driver) notePower(owner string, p bmc.PowerState, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p == "" {
		delete(d.powerReads, owner)
		return
	}
	d.powerReads[owner] = powerRead{at: at, state: p}
}

// powerReadAt is when the owner's power was last read; zero when never
// in this process, or a command was sent since.
func (d *Driver) powerReadAt(owner string) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.powerReads[owner].at
}

func (d *Driver) rememberedFacts(key string) (machine.Facts, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.facts[key]
	return f, ok
}

func (d *Driver) remember(key string, f machine.Facts) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.facts[key] = f
}
