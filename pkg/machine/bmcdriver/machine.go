package bmcdriver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// Machine is one BMC for one pass of the chain. Its methods are safe for
// concurrent use.
type Machine struct {
	d *Driver
	// candidates are the endpoints to try, in order, as the caller gave
	// them: with MachineOptions.Credentials, without a username and
	// password (login fills them in).
	candidates []bmc.Endpoint
	opts       MachineOptions
	login      login

	mu sync.Mutex
	// ep is the candidate spoken to: the first, until a session opened
	// on another.
	ep     bmc.Endpoint
	link   *link
	client bmc.Client
	// cert is the certificate of the session's BMC (Redfish).
	cert *bmc.Certificate
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
	log    *LogStatus
}

var _ machine.Machine = (*Machine)(nil)

// Release ends the pass. The session stays open for IdleLogout when the
// owner's next pass comes within it (next > 0), and is logged out
// otherwise; the machine is not used after it.
func (m *Machine) Release(next time.Duration) {
	m.mu.Lock()
	l := m.link
	m.link, m.client = nil, nil
	m.mu.Unlock()
	if l != nil {
		m.d.release(l, next > 0 && next <= m.d.idle)
	}
}

// Hold keeps the owner's machines from polling before until; zero lifts
// the hold. After the pass's login was refused, the hold keeps them from
// logging in at all before until, for the credentials refused: other
// credentials (the Secret changed) try at once.
func (m *Machine) Hold(until time.Time) {
	m.mu.Lock()
	problem := m.problem
	m.mu.Unlock()
	h := hold{until: until}
	if !until.IsZero() && failure.ClassOf(problem) == failure.Unauthorized {
		// The login was refused: the credentials were read for it, so
		// this asks no one (and never under the driver's lock).
		creds, _ := m.credentials()
		h.creds, h.refusal = creds, problem
	}
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	if until.IsZero() {
		delete(m.d.holds, m.opts.Owner)
		return
	}
	m.d.holds[m.opts.Owner] = h
}

// LogStatus says whether a poll could read the BMC's event log.
type LogStatus struct {
	// Read is false when the BMC has no event log the driver can read;
	// Message then says what it has (the BMC package's own words).
	Read    bool
	Message string
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
	// Log is whether the poll read an event log, nil without a poll.
	Log *LogStatus
	// Power is the last power state read, "" when none was.
	Power machine.PowerState
	// Cursor is the poll's cursor once every event it returned was
	// forwarded: the health it read and the log's position, also when there was
	// no event to carry them. "" without a poll.
	Cursor string
	// Endpoint is the candidate that answered: the one a session opened on,
	// or that refused the credentials; its zero value when none did.
	Endpoint bmc.Endpoint
	// Certificate is what the BMC of the session presented (Redfish), nil
	// without a session or TLS.
	Certificate *bmc.Certificate
}

// Observed returns what the pass learnt.
func (m *Machine) Observed() Observation {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := Observation{Contacted: m.contacted, Problem: m.problem, Polled: m.polled, Health: m.health, Log: m.log, Cursor: m.cursor,
		Certificate: m.cert}
	if m.power != "" {
		o.Power = fromPower(m.power)
	}
	if m.contacted || failure.ClassOf(m.problem) == failure.Unauthorized {
		o.Endpoint = m.ep
		o.Endpoint.Username, o.Endpoint.Password = "", ""
	}
	return o
}

// due says whether a poll is due now, and if not, how long until it is:
// the interval after the last poll (the status's, or this process's own
// if later), and not while the owner is held.
func (m *Machine) due() (bool, time.Duration) {
	now := m.opts.Now()
	if h, held := m.held(now); held {
		return false, h.until.Sub(now)
	}
	if m.opts.PollNow {
		return true, 0
	}
	last := m.opts.LastPolled
	if own := m.d.lastPoll(m.opts.Owner); own.After(last) {
		last = own
	}
	if last.IsZero() {
		return true, 0
	}
	left := m.nextPoll(last).Sub(now)
	return left <= 0, left
}

// nextPoll is when the poll after one at last is due: an interval later,
// or with Spread, the machine's first slot half an interval or more after
// last.
func (m *Machine) nextPoll(last time.Time) time.Time {
	if !m.opts.Spread {
		return last.Add(m.opts.Interval)
	}
	return slotAfter(last.Add(m.opts.Interval/2), m.opts.Interval, phase(m.opts.Key, m.opts.Interval))
}

// session returns the pass's client: the BMC's session, opened on the first
// call unless another pass left one. The candidates are tried in order
// while nothing answers at one, or something that does not speak its
// protocol; a BMC that answered (even to refuse the credentials or the
// certificate) ends the search. While the owner is held after a refused
// login with these credentials, nothing is tried.
func (m *Machine) session(ctx context.Context) (bmc.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.client != nil {
		return m.client, nil
	}
	if m.dialErr != nil {
		return nil, m.dialErr
	}
	if _, err := m.credentials(); err != nil {
		// Not the BMC's failure: it was never asked. Said before a hold,
		// which cannot tell unreadable credentials from the ones refused.
		m.dialErr = err
		return nil, err
	}
	if h, held := m.held(m.opts.Now()); held && h.refusal != nil {
		m.dialErr = &failure.Error{Seam: bmc.Seam, Op: "Dial", Endpoint: m.withLogin(m.ep).String(), Class: failure.Unauthorized, Message: fmt.Sprintf(
			"the BMC refused these credentials; no login is tried before %s unless the credentials change",
			h.until.UTC().Format(time.RFC3339))}
		return nil, m.dialErr
	}
	order := m.order()
	var err error
	for i, cand := range order {
		ep := m.withLogin(cand)
		if m.link == nil {
			m.link = m.d.acquire(ep)
		}
		var c bmc.Client
		c, err = m.link.open(ctx, ep, fingerprint(ep), m.d.dial)
		if err == nil {
			m.ep, m.client, m.contacted = cand, c, true
			m.seeCertificate(c)
			if p, ok := c.(bmc.PassStarter); ok {
				p.NewPass()
			}
			return c, nil
		}
		if i == len(order)-1 || !tryNext(err) {
			m.ep = cand
			break
		}
		m.d.release(m.link, false)
		m.link = nil
	}
	m.dialErr = err
	m.noteLocked(err)
	return nil, err
}

// order is the candidates, the one spoken to first.
func (m *Machine) order() []bmc.Endpoint {
	out := []bmc.Endpoint{m.ep}
	for _, c := range m.candidates {
		if c.Protocol != m.ep.Protocol || c.Address() != m.ep.Address() {
			out = append(out, c)
		}
	}
	return out
}

// tryNext says whether a failed login leaves the next candidate to try:
// nothing answered, or not in the protocol spoken.
func tryNext(err error) bool {
	c := failure.ClassOf(err)
	return c == failure.Unreachable || c == failure.ProtocolMismatch
}

// seeCertificate keeps the certificate the session's BMC presented.
func (m *Machine) seeCertificate(c bmc.Client) {
	if r, ok := c.(bmc.CertificateReporter); ok {
		if cert, ok := r.PeerCertificate(); ok {
			m.cert = &cert
		}
	}
}

// note keeps the pass's first BMC failure. A session whose credentials
// the BMC refused is logged out: it cannot serve another pass; so is one
// whose BMC now presents a certificate that is not trusted (a new pass
// logs in with the certificates trusted then, one a person accepted
// among them).
func (m *Machine) note(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noteLocked(err)
	if class := failure.ClassOf(err); (class == failure.Unauthorized || class == failure.TLS) && m.client != nil {
		m.link.drop(m.client)
		m.client, m.dialErr = nil, err
	}
}

func (m *Machine) noteLocked(err error) {
	if m.problem == nil && failure.From(err, bmc.Seam) != nil {
		m.problem = err
	}
}

// Facts reads the inventory with a poll (or when none is remembered, after
// a restart) and returns the remembered facts in between.
func (m *Machine) Facts(ctx context.Context) (machine.Facts, error) {
	m.mu.Lock()
	polledNow := !m.polled.IsZero()
	m.mu.Unlock()
	f, remembered := m.d.rememberedFacts(m.factsKey())
	if due, left := m.due(); !due && !polledNow {
		if remembered {
			return f, nil
		}
		if _, held := m.held(m.opts.Now()); held {
			return machine.Facts{}, &failure.Error{Seam: machine.Seam, Op: "Facts", Class: failure.Transient,
				Message: fmt.Sprintf("the BMC failed; it is asked again in %s", left.Round(time.Second))}
		}
	}
	c, err := m.session(ctx)
	if err != nil {
		return machine.Facts{}, fromError("Facts", err, false)
	}
	inv, err := c.Inventory(ctx)
	if err != nil {
		m.note(err)
		return machine.Facts{}, fromError("Facts", err, false)
	}
	m.mu.Lock()
	ep := m.ep
	m.mu.Unlock()
	f = toFacts(inv, ep)
	m.d.remember(m.factsKey(), f)
	return f, nil
}

// PowerState asks the BMC; while a power action is under way
// (MachineOptions.PowerPace), at most once per pace.
func (m *Machine) PowerState(ctx context.Context) (machine.PowerState, error) {
	if p, ok := m.d.recentPower(m.opts.Owner, m.opts.PowerPace, m.opts.Now()); ok {
		return fromPower(p), nil
	}
	c, err := m.session(ctx)
	if err != nil {
		return machine.PowerUnknown, fromError("PowerState", err, false)
	}
	p, err := c.PowerState(ctx)
	if err != nil {
		m.note(err)
		return machine.PowerUnknown, fromError("PowerState", err, false)
	}
	m.d.notePower(m.opts.Owner, p, m.opts.Now())
	m.mu.Lock()
	m.power = p
	m.mu.Unlock()
	return fromPower(p), nil
}

// FreshPower reads the server's power at the least cost to its BMC, for a
// caller that keeps the power it shows fresh between polls: on the pass's
// session or one another pass left open (one request), else without a
// session where the BMC allows it (bmc.ReadPowerState: one request in
// basic auth to a Redfish BMC whose system is known, a session of its own
// for IPMI). The caller asks only when PowerDue says so.
func (m *Machine) FreshPower(ctx context.Context) (machine.PowerState, error) {
	m.mu.Lock()
	c := m.client
	m.mu.Unlock()
	if c != nil {
		return m.PowerState(ctx)
	}
	if _, err := m.credentials(); err != nil {
		return machine.PowerUnknown, err
	}
	m.mu.Lock()
	ep := m.withLogin(m.ep)
	m.mu.Unlock()
	l := m.d.acquire(ep)
	defer m.d.release(l, false)
	p, err := l.readPower(ctx, ep, fingerprint(ep), m.d.readPower)
	if err != nil {
		m.note(err)
		return machine.PowerUnknown, fromError("PowerState", err, false)
	}
	now := m.opts.Now()
	m.d.notePower(m.opts.Owner, p, now)
	m.mu.Lock()
	m.power, m.contacted = p, true
	m.mu.Unlock()
	return fromPower(p), nil
}

// PowerDue says whether the power was read longer than fresh ago (or not
// at all by this process), and no hold keeps the BMC from being asked;
// left is how long until it is due.
func (m *Machine) PowerDue(fresh time.Duration) (due bool, left time.Duration) {
	now := m.opts.Now()
	if h, held := m.held(now); held {
		return false, h.until.Sub(now)
	}
	at := m.d.powerReadAt(m.opts.Owner)
	if at.IsZero() {
		return true, 0
	}
	left = at.Add(fresh).Sub(now)
	return left <= 0, left
}

// Power sends one command. A failed login sent nothing; a failure during
// the command may have let it run.
func (m *Machine) Power(ctx context.Context, action machine.PowerAction) error {
	c, err := m.session(ctx)
	if err != nil {
		return notSent(err)
	}
	// Whatever comes of it, the power may change now.
	defer m.d.notePower(m.opts.Owner, "", time.Time{})
	if err := c.Power(ctx, bmc.PowerAction(action)); err != nil {
		m.note(err)
		return fromError("Power", err, true)
	}
	return nil
}

// NetworkBootOnce is BootOnce from the network.
func (m *Machine) NetworkBootOnce(ctx context.Context, fw bmc.BootFirmware) (bmc.BootFirmware, error) {
	return m.BootOnce(ctx, bmc.BootNetwork, fw)
}

// Events polls the BMC when a poll is due: its health, against the health
// the cursor remembers, and its event log after the cursor's position.
func (m *Machine) Events(ctx context.Context, cursor string) (machine.EventBatch, error) {
	if due, left := m.due(); !due {
		return machine.EventBatch{RecheckAfter: left}, nil
	}
	c, err := m.session(ctx)
	if err != nil {
		return machine.EventBatch{}, fromError("Events", err, false)
	}
	m.mu.Lock()
	protocol := m.ep.Protocol
	m.mu.Unlock()
	cur, err := decodeCursor(cursor, protocol)
	if err != nil {
		return machine.EventBatch{}, &failure.Error{Seam: machine.Seam, Op: "Events", Class: failure.Refused, Message: err.Error(), Err: err}
	}
	health, err := c.Health(ctx)
	if err != nil {
		m.note(err)
		return machine.EventBatch{}, fromError("Events", err, false)
	}
	entries, next, err := c.LogEntries(ctx, cur.Log)
	log := &LogStatus{Read: true}
	switch {
	case failure.ClassOf(err) == failure.Unsupported:
		// A BMC without an event log still has its health to report; the
		// caller says the log is missing.
		entries, next = nil, cur.Log
		log = &LogStatus{Message: failure.Message(fromError("Events", err, false))}
	case err != nil:
		m.note(err)
		return machine.EventBatch{}, fromError("Events", err, false)
	}
	power, err := c.PowerState(ctx)
	if err != nil {
		m.note(err)
		return machine.EventBatch{}, fromError("Events", err, false)
	}
	m.d.notePower(m.opts.Owner, power, m.opts.Now())
	events := healthEvents(&cur, health, m.opts.Key, m.opts.Now())
	events = append(events, logEvents(cur, entries, next)...)
	cur.Log = next
	now := m.opts.Now()
	m.d.notePoll(m.opts.Owner, now)
	m.mu.Lock()
	m.polled, m.health, m.log, m.power, m.cursor = now, &health, log, power, cur.encode()
	m.mu.Unlock()
	return machine.EventBatch{Events: events, RecheckAfter: m.nextPoll(now).Sub(now)}, nil
}

var _ machine.HealthReporter = (*Machine)(nil)

// PolledHealth is the health the pass's poll read.
func (m *Machine) PolledHealth() (machine.Health, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.health == nil {
		return machine.Health{}, false
	}
	h := toHealth(*m.health)
	h.At = m.polled
	return h, true
}

// Schedule is the owner's last complete poll (the status's, or this
// process's own if later) and its interval.
func (m *Machine) Schedule() (time.Time, time.Duration) {
	last := m.opts.LastPolled
	if own := m.d.lastPoll(m.opts.Owner); own.After(last) {
		last = own
	}
	return last, m.opts.Interval
}

// OnForget has f run when Forget is called for the machine's owner.
func (m *Machine) OnForget(f func()) {
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	m.d.forgets[m.opts.Owner] = f
}

// Link says whether the pass reached the BMC and logged in. A BMC that
// refused the credentials answered; one that could not be reached or
// spoke another protocol did not, even through a session an earlier pass
// left open.
func (m *Machine) Link() machine.Link {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := machine.Link{Tried: m.contacted || m.problem != nil, Problem: m.problem}
	switch failure.ClassOf(m.problem) {
	case failure.Unreachable, failure.ProtocolMismatch, failure.TLS:
	case failure.Unauthorized:
		l.Reachable = true
	default:
		l.Reachable, l.Authenticated = l.Tried, m.contacted
	}
	return l
}
