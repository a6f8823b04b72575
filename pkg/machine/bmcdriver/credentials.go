package bmcdriver

import (
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// login is a pass's credentials, read once, when first needed.
type login struct {
	once sync.Once
	// user and pass are the credentials; creds fingerprints them with the
	// machine's first endpoint, which a hold after a refusal names.
	user  string
	pass  redact.Sensitive
	creds string
	err   error
}

// credentials reads the pass's credentials and their fingerprint:
// MachineOptions.Credentials is asked on the first call only. Its failure
// is no BMC's (nothing was sent to one): a refusal for now, which the
// caller that read them reports.
func (m *Machine) credentials() (string, error) {
	l := &m.login
	l.once.Do(func() {
		first := m.candidates[0]
		l.user, l.pass = first.Username, first.Password
		if m.opts.Credentials != nil {
			user, pass, err := m.opts.Credentials()
			if err != nil {
				l.err = &failure.Error{Seam: machine.Seam, Op: "Credentials", Class: failure.Refused,
					Message: "the BMC's credentials cannot be read: " + failure.Message(err), Err: err}
				return
			}
			l.user, l.pass = user, pass
		}
		first.Username, first.Password = l.user, l.pass
		l.creds = fingerprint(first)
	})
	return l.creds, l.err
}

// withLogin is ep with the pass's credentials, once credentials read them.
func (m *Machine) withLogin(ep bmc.Endpoint) bmc.Endpoint {
	ep.Username, ep.Password = m.login.user, m.login.pass
	return ep
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
	creds, err := m.credentials()
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
	if _, ok := m.d.rememberedFacts(m.factsKey()); ok {
		return false
	}
	_, held := m.held(m.opts.Now())
	return !held
}
