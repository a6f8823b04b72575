package bmcdriver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	hw "github.com/harvester/harvester-equinix-addon/pkg/hardware"
)

// Machine is one BMC for one pass of the chain. Its methods are safe for
// concurrent use.
type Machine struct {
	d        *Driver
	ep       bmc.Endpoint
	opts     MachineOptions
	factsKey string

	mu     sync.Mutex
	client bmc.Client
	// dialErr is the first failed login of the pass: later calls fail
	// with it at once rather than wait for the same timeout again.
	dialErr error
	// contacted is set once the BMC took the credentials.
	contacted bool
	// problem is the pass's first failure of a call to the BMC.
	problem error
	polled  time.Time
	health  *bmc.Health
	power   bmc.PowerState
	// cursor is the poll's cursor past everything it returned.
	cursor string
}

var _ hw.Machine = (*Machine)(nil)

// Close logs out. The machine is not used after it.
func (m *Machine) Close() error {
	m.mu.Lock()
	c := m.client
	m.client = nil
	m.mu.Unlock()
	if c == nil {
		return nil
	}
	return fromError("Close", c.Close(), false)
}

// Observation is what a pass learnt of the BMC, besides what the chain
// asked for.
type Observation struct {
	// Contacted: the BMC answered and took the credentials.
	Contacted bool
	// Problem is the pass's first failure to reach, log in to or read the
	// BMC (a *bmc.Error), or nil.
	Problem error
	// Polled is when a poll (health and event log) was read in full; zero
	// when none was due or it failed.
	Polled time.Time
	// Health is the poll's health reading, nil without a poll.
	Health *bmc.Health
	// Power is the last power state read, "" when none was.
	Power hw.PowerState
	// Cursor is the poll's cursor once every event it returned was handed
	// on: the health it read and the log's position, also when there was
	// no event to carry them. "" without a poll.
	Cursor string
}

// Observed returns what the pass learnt.
func (m *Machine) Observed() Observation {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := Observation{Contacted: m.contacted, Problem: m.problem, Polled: m.polled, Health: m.health, Cursor: m.cursor}
	if m.power != "" {
		o.Power = fromPower(m.power)
	}
	return o
}

// due says whether a poll is due now, and if not, how long until it is:
// the interval after the last poll, and not while the owner is held.
func (m *Machine) due() (bool, time.Duration) {
	now := m.opts.Now()
	if until := m.d.heldUntil(m.opts.Owner); now.Before(until) {
		return false, until.Sub(now)
	}
	if m.opts.LastPolled.IsZero() {
		return true, 0
	}
	left := m.opts.LastPolled.Add(m.opts.Interval).Sub(now)
	return left <= 0, left
}

// session returns the pass's client, logging in on the first call.
func (m *Machine) session(ctx context.Context) (bmc.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.client != nil {
		return m.client, nil
	}
	if m.dialErr != nil {
		return nil, m.dialErr
	}
	c, err := m.d.dial(ctx, m.ep)
	if err != nil {
		m.dialErr = err
		m.noteLocked(err)
		return nil, err
	}
	m.client, m.contacted = c, true
	return c, nil
}

// note keeps the pass's first BMC failure.
func (m *Machine) note(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noteLocked(err)
}

func (m *Machine) noteLocked(err error) {
	if m.problem == nil && bmc.ClassOf(err) != "" {
		m.problem = err
	}
}

// Facts reads the inventory with a poll (or when none is remembered, after
// a restart) and returns the remembered facts in between.
func (m *Machine) Facts(ctx context.Context) (hw.Facts, error) {
	m.mu.Lock()
	polledNow := !m.polled.IsZero()
	m.mu.Unlock()
	f, remembered := m.d.rememberedFacts(m.factsKey)
	if due, left := m.due(); !due && !polledNow {
		if remembered {
			return f, nil
		}
		if m.opts.Now().Before(m.d.heldUntil(m.opts.Owner)) {
			return hw.Facts{}, &hw.Error{Op: "Facts", Class: hw.ClassUnavailable,
				Message: fmt.Sprintf("the BMC failed; it is asked again in %s", left.Round(time.Second))}
		}
	}
	c, err := m.session(ctx)
	if err != nil {
		return hw.Facts{}, fromError("Facts", err, false)
	}
	inv, err := c.Inventory(ctx)
	if err != nil {
		m.note(err)
		return hw.Facts{}, fromError("Facts", err, false)
	}
	f = toFacts(inv, m.ep)
	m.d.remember(m.factsKey, f)
	return f, nil
}

// PowerState asks the BMC.
func (m *Machine) PowerState(ctx context.Context) (hw.PowerState, error) {
	c, err := m.session(ctx)
	if err != nil {
		return hw.PowerUnknown, fromError("PowerState", err, false)
	}
	p, err := c.PowerState(ctx)
	if err != nil {
		m.note(err)
		return hw.PowerUnknown, fromError("PowerState", err, false)
	}
	m.mu.Lock()
	m.power = p
	m.mu.Unlock()
	return fromPower(p), nil
}

// Power sends one command. A failed login sent nothing; a failure during
// the command may have let it run.
func (m *Machine) Power(ctx context.Context, action hw.PowerAction) error {
	c, err := m.session(ctx)
	if err != nil {
		return notSent(err)
	}
	if err := c.Power(ctx, bmc.PowerAction(action)); err != nil {
		m.note(err)
		return fromError("Power", err, true)
	}
	return nil
}

// Events polls the BMC when a poll is due: its health, against the health
// the cursor remembers, and its event log after the cursor's position.
func (m *Machine) Events(ctx context.Context, cursor string) (hw.EventBatch, error) {
	if due, left := m.due(); !due {
		return hw.EventBatch{RecheckAfter: left}, nil
	}
	cur, err := decodeCursor(cursor, m.ep.Protocol)
	if err != nil {
		return hw.EventBatch{}, &hw.Error{Op: "Events", Class: hw.ClassRefused, Message: err.Error(), Err: err}
	}
	c, err := m.session(ctx)
	if err != nil {
		return hw.EventBatch{}, fromError("Events", err, false)
	}
	health, err := c.Health(ctx)
	if err != nil {
		m.note(err)
		return hw.EventBatch{}, fromError("Events", err, false)
	}
	entries, next, err := c.LogEntries(ctx, cur.Log)
	switch {
	case bmc.ClassOf(err) == bmc.Unsupported:
		// A BMC without an event log still has its health to report.
		entries, next = nil, cur.Log
	case err != nil:
		m.note(err)
		return hw.EventBatch{}, fromError("Events", err, false)
	}
	power, err := c.PowerState(ctx)
	if err != nil {
		m.note(err)
		return hw.EventBatch{}, fromError("Events", err, false)
	}
	events := healthEvents(&cur, health, m.opts.Key, m.opts.Now())
	events = append(events, logEvents(cur, entries, next)...)
	cur.Log = next
	m.mu.Lock()
	m.polled, m.health, m.power, m.cursor = m.opts.Now(), &health, power, cur.encode()
	m.mu.Unlock()
	return hw.EventBatch{Events: events, RecheckAfter: m.opts.Interval}, nil
}
