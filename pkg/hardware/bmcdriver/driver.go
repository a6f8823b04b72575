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
// A Machine lives for one pass of the chain: it logs in on its first call
// and logs out on Close, so no session is held between polls that are
// minutes apart (BMCs serve few sessions, and expire idle ones).
package bmcdriver

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	hw "github.com/harvester/harvester-equinix-addon/pkg/hardware"
)

// DialFunc connects to a BMC; bmc.Dial unless a test says otherwise.
type DialFunc func(ctx context.Context, ep bmc.Endpoint) (bmc.Client, error)

// Driver hands out Machines, remembers each machine's last facts, and
// holds back a BMC that failed until its owner's retry time.
type Driver struct {
	dial DialFunc

	mu    sync.Mutex
	facts map[string]hw.Facts
	held  map[string]time.Time
}

// New returns a driver that dials BMCs with dial (bmc.Dial when nil).
func New(dial DialFunc) *Driver {
	if dial == nil {
		dial = bmc.Dial
	}
	return &Driver{dial: dial, facts: map[string]hw.Facts{}, held: map[string]time.Time{}}
}

// MachineOptions say which machine and how often to poll it.
type MachineOptions struct {
	// Owner names the machine's owner (its object's name), for Forget and
	// HoldUntil.
	Owner string
	// Key identifies the machine across passes (its owner's UID): the facts
	// remembered and the health events' IDs belong to it.
	Key string
	// Interval is the time between two polls.
	Interval time.Duration
	// LastPolled is when the machine was last polled; zero when never.
	LastPolled time.Time
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Machine returns the machine behind ep for one pass of the chain; Close
// it at the end of the pass.
func (d *Driver) Machine(ep bmc.Endpoint, o MachineOptions) *Machine {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Machine{d: d, ep: ep, opts: o, factsKey: o.Owner + "|" + o.Key + "|" + string(ep.Protocol) + "|" + ep.Address()}
}

// Forget drops what the driver remembers of an owner that is gone.
func (d *Driver) Forget(owner string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.held, owner)
	for k := range d.facts {
		if strings.HasPrefix(k, owner+"|") {
			delete(d.facts, k)
		}
	}
}

// HoldUntil keeps the owner's machines from polling or logging in before
// t (zero: no longer), whatever brings their owner back before: a BMC that
// refuses the credentials must not see a login per change of the node.
// It lives in memory; a restart tries once at once.
func (d *Driver) HoldUntil(owner string, t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t.IsZero() {
		delete(d.held, owner)
		return
	}
	d.held[owner] = t
}

func (d *Driver) heldUntil(owner string) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.held[owner]
}

func (d *Driver) rememberedFacts(key string) (hw.Facts, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.facts[key]
	return f, ok
}

func (d *Driver) remember(key string, f hw.Facts) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.facts[key] = f
}
