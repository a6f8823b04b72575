package bmcdriver

import (
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// login is a pass's credentials, read once, when first needed.
type login struct {
	once sync.Once
	// ep is the endpoint with its credentials, creds their fingerprint.
	ep    bmc.Endpoint
	creds string
	err   error
}

// endpoint is the BMC's endpoint with its credentials, and their
// fingerprint: MachineOptions.Credentials is asked on the first call only.
// Its failure is no BMC's (nothing was sent to one): a refusal for now,
// which the caller that read them reports.
func (m *Machine) endpoint() (bmc.Endpoint, string, error) {
	l := &m.login
	l.once.Do(func() {
		l.ep = m.ep
		if m.opts.Credentials != nil {
			user, pass, err := m.opts.Credentials()
			if err != nil {
				l.err = &failure.Error{Seam: machine.Seam, Op: "Credentials", Class: failure.Refused,
					Message: "the BMC's credentials cannot be read: " + failure.Message(err), Err: err}
				return
			}
			l.ep.Username, l.ep.Password = user, pass
		}
		l.creds = fingerprint(l.ep)
	})
	return l.ep, l.creds, l.err
}

// held is the owner's hold when it keeps this pass from the BMC at now. A
// hold for a refused login holds only for the credentials refused, which
// only reading this pass's tells; while they cannot be read, it holds.
func (m *Machine) held(now time.Time) (hold, bool) {
	h, ok := m.d.holdOf(m.opts.Owner)
	if !ok || !now.Before(h.until) {
		return hold{}, false
	}
	if h.refusal == nil {
		return h, true
	}
	_, creds, err := m.endpoint()
	return h, err != nil || creds == h.creds
}

// ReadsDue reports whether the pass's reads would ask the BMC: a poll is
// due (Events), or there are no facts to give without it (Facts, after a
// restart) and no hold keeps the BMC from being asked. A caller whose pass
// has nothing else for the BMC (no power to switch or read) need not read
// the credentials otherwise; they are read if asked for all the same.
func (m *Machine) ReadsDue() bool {
	if due, _ := m.due(); due {
		return true
	}
	if _, ok := m.d.rememberedFacts(m.factsKey); ok {
		return false
	}
	_, held := m.held(m.opts.Now())
	return !held
}
